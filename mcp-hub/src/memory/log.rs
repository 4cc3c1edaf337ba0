//! The in-memory event log.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::{lock, read, write};
use crate::{Cursor, Event, HubConfig, LogError, Topic};

pub(super) struct MemoryLog {
    /// Identifies this log instance; the first part of every cursor it issues.
    epoch: u64,
    /// The last sequence number issued, across all topics. Sequence 0 is every topic's start.
    last_seq: AtomicU64,
    topics: RwLock<HashMap<Arc<str>, Arc<TopicLog>>>,
    /// When idle topics are next looked for, and how many topics the last look left.
    sweep: Mutex<Sweep>,
    max_events: usize,
    max_age: Option<Duration>,
    max_batch: usize,
}

struct TopicLog {
    state: Mutex<TopicState>,
    /// Woken after every publish and on delete.
    notify: Notify,
}

#[derive(Default)]
struct TopicState {
    /// Retained events, oldest first, with strictly increasing sequence numbers.
    entries: VecDeque<Entry>,
    /// The sequence number of the newest event dropped by retention; 0 if none was.
    evicted: u64,
    /// The sequence number of the newest event published; 0 if none was.
    last: u64,
    /// Set when the topic is removed from the map; a holder of the `Arc` must look again.
    deleted: bool,
    /// When the topic was made or last published to.
    active: Option<Instant>,
}

/// The idle-topic sweep's schedule. A topic without a publish for the age limit, that nobody
/// waits on, is removed as a whole, as Redis expires a stream without a publish: the map only
/// holds topics that are in use. The sweep runs when a topic is created and either a quarter
/// of the age limit has passed since the last one or the map has doubled since, so its cost is
/// amortised O(1) per created topic.
struct Sweep {
    next: Instant,
    left: usize,
}

struct Entry {
    seq: u64,
    at: Instant,
    payload: Bytes,
}

/// Why a cursor cannot be read from, before it is turned into a [`LogError`].
enum Fault {
    Unknown,
    Expired,
}

impl MemoryLog {
    pub(super) fn new(config: &HubConfig) -> Self {
        Self {
            epoch: new_epoch(),
            last_seq: AtomicU64::new(0),
            topics: RwLock::new(HashMap::new()),
            sweep: Mutex::new(Sweep {
                next: Instant::now(),
                left: 0,
            }),
            max_events: config.retention.max_events,
            max_age: config.retention.max_age,
            max_batch: config.max_batch,
        }
    }

    pub(super) fn publish(&self, topic: &Topic, message: Bytes) -> Cursor {
        self.append(topic, message, true)
            .unwrap_or_else(|| Cursor::from_parts(self.epoch, 0))
    }

    /// [`publish`](Self::publish) when the topic was published to (and not deleted or
    /// expired since), else `None`.
    pub(super) fn publish_existing(&self, topic: &Topic, message: Bytes) -> Option<Cursor> {
        self.append(topic, message, false)
    }

    fn append(&self, topic: &Topic, message: Bytes, create: bool) -> Option<Cursor> {
        loop {
            let log = if create {
                self.topic_or_create(topic)
            } else {
                self.topic(topic)?
            };
            let seq = {
                let mut state = lock(&log.state);
                if state.deleted {
                    continue;
                }
                if !create && state.last == 0 {
                    // Only waited on (a poll made it), never published to.
                    return None;
                }
                // Taken under the topic lock, so the topic's sequence numbers only grow.
                let seq = self.last_seq.fetch_add(1, Ordering::Relaxed) + 1;
                let now = Instant::now();
                state.active = Some(now);
                state.entries.push_back(Entry {
                    seq,
                    at: now,
                    payload: message,
                });
                state.last = seq;
                state.retain(now, self.max_events, self.max_age);
                seq
            };
            log.notify.notify_waiters();
            return Some(Cursor::from_parts(self.epoch, seq));
        }
    }

    pub(super) fn position(&self, topic: &Topic) -> Cursor {
        let last = self.topic(topic).map_or(0, |log| {
            let state = lock(&log.state);
            if state.deleted { 0 } else { state.last }
        });
        Cursor::from_parts(self.epoch, last)
    }

    pub(super) async fn poll(
        &self,
        topic: &Topic,
        after: Cursor,
        timeout: Duration,
    ) -> Result<Vec<Event>, LogError> {
        if after.high() != self.epoch {
            return Err(LogError::UnknownCursor { cursor: after });
        }
        let deadline = Instant::now().checked_add(timeout);
        loop {
            let log = if timeout.is_zero() {
                match self.topic(topic) {
                    Some(log) => log,
                    None => return self.read_absent(after).map(|()| Vec::new()),
                }
            } else {
                self.topic_or_create(topic)
            };
            // Registered before the check, so a publish right after the check still wakes us.
            let mut notified = pin!(log.notify.notified());
            notified.as_mut().enable();
            {
                let mut state = lock(&log.state);
                if state.deleted {
                    continue;
                }
                let events = state
                    .read(self.epoch, after.low(), self.max_batch, self.max_age)
                    .map_err(|fault| fault.into_error(after))?;
                if !events.is_empty() {
                    return Ok(events);
                }
            }
            match deadline {
                Some(deadline) => {
                    if Instant::now() >= deadline
                        || tokio::time::timeout_at(deadline, notified).await.is_err()
                    {
                        return Ok(Vec::new());
                    }
                }
                None => notified.await,
            }
        }
    }

    pub(super) fn delete(&self, topic: &Topic) {
        let removed = write(&self.topics).remove(topic.as_str());
        if let Some(log) = removed {
            {
                let mut state = lock(&log.state);
                state.deleted = true;
                state.entries = VecDeque::new();
            }
            log.notify.notify_waiters();
        }
    }

    /// A cursor against a topic that does not exist: only the start is valid.
    fn read_absent(&self, after: Cursor) -> Result<(), LogError> {
        if after.low() == 0 {
            Ok(())
        } else {
            Err(LogError::UnknownCursor { cursor: after })
        }
    }

    fn topic(&self, topic: &Topic) -> Option<Arc<TopicLog>> {
        read(&self.topics).get(topic.as_str()).cloned()
    }

    fn topic_or_create(&self, topic: &Topic) -> Arc<TopicLog> {
        if let Some(log) = self.topic(topic) {
            return log;
        }
        let mut topics = write(&self.topics);
        let now = Instant::now();
        self.sweep_idle(&mut topics, now);
        Arc::clone(topics.entry(Arc::clone(topic.shared())).or_insert_with(|| {
            Arc::new(TopicLog {
                state: Mutex::new(TopicState {
                    active: Some(now),
                    ..TopicState::default()
                }),
                notify: Notify::new(),
            })
        }))
    }

    /// Removes the topics idle for the age limit that nobody holds, when a sweep is due (see
    /// [`Sweep`]).
    fn sweep_idle(&self, topics: &mut HashMap<Arc<str>, Arc<TopicLog>>, now: Instant) {
        let Some(max_age) = self.max_age else { return };
        let mut sweep = lock(&self.sweep);
        if now < sweep.next && topics.len() < (2 * sweep.left).max(1024) {
            return;
        }
        topics.retain(|_, log| {
            // Held elsewhere: a reader waits on it, or a publish is under way.
            if Arc::strong_count(log) > 1 {
                return true;
            }
            let mut state = lock(&log.state);
            let idle = state
                .active
                .is_none_or(|at| now.saturating_duration_since(at) >= max_age);
            if idle {
                state.deleted = true;
                state.entries = VecDeque::new();
            }
            !idle
        });
        sweep.next = now + (max_age / 4).max(Duration::from_secs(1));
        sweep.left = topics.len();
    }

    /// How many topics the log holds (for tests of the idle sweep).
    #[cfg(test)]
    fn topic_count(&self) -> usize {
        read(&self.topics).len()
    }
}

impl fmt::Debug for MemoryLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryLog")
            .field("epoch", &self.epoch)
            .field("topics", &read(&self.topics).len())
            .field("max_events", &self.max_events)
            .field("max_age", &self.max_age)
            .field("max_batch", &self.max_batch)
            .finish()
    }
}

impl TopicState {
    /// Drops events beyond the count limit and older than the age limit.
    fn retain(&mut self, now: Instant, max_events: usize, max_age: Option<Duration>) {
        while self.entries.len() > max_events {
            self.evict_front();
        }
        self.expire(now, max_age);
    }

    fn expire(&mut self, now: Instant, max_age: Option<Duration>) {
        let Some(max_age) = max_age else { return };
        while self
            .entries
            .front()
            .is_some_and(|entry| now.saturating_duration_since(entry.at) >= max_age)
        {
            self.evict_front();
        }
    }

    fn evict_front(&mut self) {
        if let Some(entry) = self.entries.pop_front() {
            self.evicted = entry.seq;
        }
    }

    /// The events after sequence `after`, or why there can be none.
    fn read(
        &mut self,
        epoch: u64,
        after: u64,
        max_batch: usize,
        max_age: Option<Duration>,
    ) -> Result<Vec<Event>, Fault> {
        self.expire(Instant::now(), max_age);
        if after == self.last {
            return Ok(Vec::new());
        }
        if after > self.last {
            return Err(Fault::Unknown);
        }
        let start = if after == self.evicted {
            0
        } else if after < self.evicted {
            return Err(Fault::Expired);
        } else {
            match self.entries.binary_search_by_key(&after, |entry| entry.seq) {
                Ok(index) => index + 1,
                // Inside the retained range but not an event of this topic.
                Err(_) => return Err(Fault::Unknown),
            }
        };
        Ok(self
            .entries
            .range(start..)
            .take(max_batch)
            .map(|entry| Event {
                cursor: Cursor::from_parts(epoch, entry.seq),
                payload: entry.payload.clone(),
            })
            .collect())
    }
}

impl Fault {
    fn into_error(self, cursor: Cursor) -> LogError {
        match self {
            Self::Unknown => LogError::UnknownCursor { cursor },
            Self::Expired => LogError::CursorExpired { cursor },
        }
    }
}

/// A fresh epoch: random per process (std's hasher keys come from the OS), distinct per log
/// within a process, never 0.
fn new_epoch() -> u64 {
    static INSTANCES: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(INSTANCES.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    hasher.write_u128(nanos);
    hasher.finish().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(evicted: u64, seqs: &[u64]) -> TopicState {
        let at = Instant::now();
        TopicState {
            entries: seqs
                .iter()
                .map(|&seq| Entry {
                    seq,
                    at,
                    payload: Bytes::new(),
                })
                .collect(),
            evicted,
            last: seqs.last().copied().unwrap_or(evicted),
            deleted: false,
            active: Some(at),
        }
    }

    fn aged(max_age: u64) -> MemoryLog {
        let retention = crate::RetentionConfig::new().max_age(Some(Duration::from_secs(max_age)));
        MemoryLog::new(&HubConfig::new().retention(retention))
    }

    #[tokio::test(start_paused = true)]
    async fn topics_idle_for_the_age_limit_are_removed_unless_someone_waits() {
        let log = aged(60);
        let topic = |name: &str| crate::Namespace::root().topic(name);
        log.publish(&topic("old"), Bytes::from_static(b"1"));
        let waited = topic("waited");
        let start = log.position(&waited);
        let waiting = {
            let log = &log;
            let waited = waited.clone();
            async move { log.poll(&waited, start, Duration::from_secs(600)).await }
        };
        let mut waiting = Box::pin(waiting);
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        tokio::time::advance(Duration::from_secs(30)).await;
        log.publish(&topic("recent"), Bytes::from_static(b"2"));
        assert_eq!(log.topic_count(), 3);
        tokio::time::advance(Duration::from_secs(31)).await;
        // Creating a topic sweeps: "old" is gone, "recent" is not yet idle, "waited" is held.
        log.publish(&topic("new"), Bytes::from_static(b"3"));
        assert_eq!(log.topic_count(), 3);
        assert_eq!(
            log.publish_existing(&topic("old"), Bytes::from_static(b"x")),
            None
        );
        assert!(
            log.publish_existing(&topic("recent"), Bytes::from_static(b"x"))
                .is_some()
        );
        // The waiter still gets what is published to its topic.
        log.publish(&waited, Bytes::from_static(b"4"));
        assert_eq!(waiting.await.unwrap().len(), 1);
    }

    #[test]
    fn a_reply_never_creates_a_topic() {
        let log = aged(60);
        let topic = crate::Namespace::root().topic("ask/none");
        assert_eq!(log.publish_existing(&topic, Bytes::from_static(b"r")), None);
        assert_eq!(log.topic_count(), 0);
        let marker = log.publish(&topic, Bytes::from_static(b"asked"));
        let reply = log.publish_existing(&topic, Bytes::from_static(b"r"));
        assert!(reply.is_some_and(|cursor| cursor.low() > marker.low()));
    }

    /// `Ok(n)`: n events returned; `Err(true)`: expired; `Err(false)`: unknown.
    fn outcome(state: &mut TopicState, after: u64) -> Result<usize, bool> {
        match state.read(1, after, usize::MAX, None) {
            Ok(events) => Ok(events.len()),
            Err(Fault::Expired) => Err(true),
            Err(Fault::Unknown) => Err(false),
        }
    }

    #[test]
    fn cursor_classification() {
        // (evicted, retained sequence numbers, cursor, outcome)
        type Case = (u64, &'static [u64], u64, Result<usize, bool>);
        let table: &[Case] = &[
            (0, &[], 0, Ok(0)),
            (0, &[], 1, Err(false)),
            (0, &[3, 5, 9], 0, Ok(3)),
            (0, &[3, 5, 9], 3, Ok(2)),
            (0, &[3, 5, 9], 5, Ok(1)),
            (0, &[3, 5, 9], 9, Ok(0)),
            (0, &[3, 5, 9], 4, Err(false)),
            (0, &[3, 5, 9], 10, Err(false)),
            (2, &[3, 5, 9], 2, Ok(3)),
            (2, &[3, 5, 9], 1, Err(true)),
            (2, &[3, 5, 9], 0, Err(true)),
            (7, &[], 7, Ok(0)),
            (7, &[], 6, Err(true)),
            (7, &[], 8, Err(false)),
        ];
        for (evicted, seqs, after, expected) in table {
            let mut topic = state(*evicted, seqs);
            assert_eq!(
                outcome(&mut topic, *after),
                *expected,
                "evicted {evicted}, retained {seqs:?}, after {after}"
            );
        }
    }

    #[test]
    fn epochs_differ_between_instances() {
        let epochs: std::collections::HashSet<u64> = (0..100).map(|_| new_epoch()).collect();
        assert_eq!(epochs.len(), 100);
        assert!(!epochs.contains(&0));
    }
}
