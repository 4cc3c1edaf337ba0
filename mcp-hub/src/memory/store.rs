//! The in-memory state store.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::BuildHasher;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::{read, write};
use crate::store::ttl_millis;
use crate::{Key, Record, StoreError};

/// How many independently locked parts the records are spread over.
const SHARDS: usize = 32;
/// A shard smaller than this is never swept.
const MIN_SWEEP: usize = 64;

pub(super) struct MemoryStore {
    shards: Box<[RwLock<Shard>]>,
    hasher: RandomState,
}

struct Shard {
    records: HashMap<Arc<str>, Slot>,
    /// Sweep expired records when the shard reaches this many.
    sweep_at: usize,
}

struct Slot {
    value: Bytes,
    version: u64,
    expires: Instant,
}

impl Slot {
    fn is_live(&self, now: Instant) -> bool {
        self.expires > now
    }
}

impl MemoryStore {
    pub(super) fn new() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| {
                    RwLock::new(Shard {
                        records: HashMap::new(),
                        sweep_at: MIN_SWEEP,
                    })
                })
                .collect(),
            hasher: RandomState::new(),
        }
    }

    pub(super) fn create(&self, key: &Key, value: Bytes, ttl: Duration) -> Result<u64, StoreError> {
        let now = Instant::now();
        let mut shard = write(self.shard(key));
        if shard
            .records
            .get(key.as_str())
            .is_some_and(|slot| slot.is_live(now))
        {
            return Err(StoreError::AlreadyExists);
        }
        shard.records.insert(
            Arc::clone(key.shared()),
            Slot {
                value,
                version: 1,
                expires: expiry(now, ttl),
            },
        );
        shard.sweep_if_grown(now);
        Ok(1)
    }

    pub(super) fn get(&self, key: &Key) -> Option<Record> {
        let now = Instant::now();
        let shard = read(self.shard(key));
        shard
            .records
            .get(key.as_str())
            .filter(|slot| slot.is_live(now))
            .map(|slot| Record {
                value: slot.value.clone(),
                version: slot.version,
            })
    }

    pub(super) fn save(
        &self,
        key: &Key,
        value: Bytes,
        expected_version: u64,
        ttl: Duration,
    ) -> Result<u64, StoreError> {
        let now = Instant::now();
        let mut shard = write(self.shard(key));
        let slot = shard.live_mut(key, now).ok_or(StoreError::NotFound)?;
        if slot.version != expected_version {
            return Err(StoreError::VersionConflict {
                expected: expected_version,
                actual: slot.version,
            });
        }
        slot.value = value;
        slot.version += 1;
        slot.expires = expiry(now, ttl);
        Ok(slot.version)
    }

    pub(super) fn touch(&self, key: &Key, ttl: Duration) -> Result<(), StoreError> {
        let now = Instant::now();
        let mut shard = write(self.shard(key));
        let slot = shard.live_mut(key, now).ok_or(StoreError::NotFound)?;
        slot.expires = expiry(now, ttl);
        Ok(())
    }

    pub(super) fn delete(&self, key: &Key) -> bool {
        let now = Instant::now();
        write(self.shard(key))
            .records
            .remove(key.as_str())
            .is_some_and(|slot| slot.is_live(now))
    }

    fn shard(&self, key: &Key) -> &RwLock<Shard> {
        // The low bits of a SipHash are as good as any; the cast only drops high bits.
        let index = (self.hasher.hash_one(key.as_str()) as usize) % SHARDS;
        &self.shards[index]
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let records: usize = self
            .shards
            .iter()
            .map(|shard| read(shard).records.len())
            .sum();
        f.debug_struct("MemoryStore")
            .field("shards", &SHARDS)
            .field("records", &records)
            .finish()
    }
}

impl Shard {
    /// The live record under `key`; an expired one is removed on the way.
    fn live_mut(&mut self, key: &Key, now: Instant) -> Option<&mut Slot> {
        if self
            .records
            .get(key.as_str())
            .is_some_and(|slot| !slot.is_live(now))
        {
            self.records.remove(key.as_str());
        }
        self.records.get_mut(key.as_str())
    }

    /// Drops every expired record once the shard has doubled since the last sweep: amortised
    /// O(1) per insert, and at most about twice the live records stay in memory.
    fn sweep_if_grown(&mut self, now: Instant) {
        if self.records.len() < self.sweep_at {
            return;
        }
        self.records.retain(|_, slot| slot.is_live(now));
        self.sweep_at = (self.records.len() * 2).max(MIN_SWEEP);
    }
}

/// `now + ttl`, with the TTL rounded like every backend rounds it, saturating far in the future.
fn expiry(now: Instant, ttl: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    let ttl = Duration::from_millis(ttl_millis(ttl)).min(FAR);
    now.checked_add(ttl).unwrap_or(now + FAR)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Namespace;

    #[tokio::test(start_paused = true)]
    async fn sweep_keeps_memory_within_twice_the_live_records() {
        let store = MemoryStore::new();
        let ns = Namespace::root();
        for round in 0..50 {
            for i in 0..200 {
                let key = ns.key(&format!("{round}/{i}"));
                store
                    .create(&key, Bytes::new(), Duration::from_secs(1))
                    .unwrap();
            }
            tokio::time::advance(Duration::from_secs(2)).await;
        }
        let held: usize = store.shards.iter().map(|s| read(s).records.len()).sum();
        // 200 live at most at any time; every shard sweeps by the time it doubles.
        assert!(held <= 2 * 200 + SHARDS * MIN_SWEEP, "{held} records held");
    }
}
