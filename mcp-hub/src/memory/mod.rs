//! The in-memory backend: one process, no background task, no I/O.

mod log;
mod store;

use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;

use crate::{
    Cursor, Event, EventLog, HubConfig, Key, LogError, Record, StateStore, StoreError, Topic,
};

/// The hub of a single process: an [`EventLog`] and a [`StateStore`] in memory.
///
/// This is the default backend. It needs no background task and no feature, and costs a few
/// hundred nanoseconds per operation:
///
/// - **Event log.** Topics are locked one at a time and never across an `.await`; a waiting
///   [`poll`](EventLog::poll) is woken by the publish itself (`tokio::sync::Notify`), never by
///   a timer. Cursors are `<epoch>-<sequence>`: the epoch is drawn at random when the hub is
///   built, so a cursor from another hub or an earlier process is
///   [`UnknownCursor`](LogError::UnknownCursor). Retention (see
///   [`RetentionConfig`](crate::RetentionConfig)) is exact: count on publish, age on publish
///   and on read. A topic lives until [`delete`](EventLog::delete)d; an empty topic costs about
///   a hundred bytes.
/// - **State store.** Records sit in 32 shards, each behind its own lock; `get` takes a read
///   lock and returns the value as a cheap [`Bytes`] clone. Expiry is lazy, with no background
///   task: an expired record is absent for every operation, a write to its key removes it, and a
///   shard drops all its expired records whenever it has doubled in size since its last such
///   sweep, so memory stays within about twice the live records.
///
/// Time is read from `tokio::time::Instant`, so tests can drive TTLs and retention with Tokio's
/// paused clock. Waiting in `poll` needs a Tokio runtime with the time driver.
///
/// Share one hub between tasks through an `Arc`: `Arc<MemoryHub>` converts to both
/// `Arc<dyn EventLog>` and `Arc<dyn StateStore>`.
pub struct MemoryHub {
    log: log::MemoryLog,
    store: store::MemoryStore,
}

impl MemoryHub {
    /// An empty hub with `config`.
    pub fn new(config: HubConfig) -> Self {
        Self {
            log: log::MemoryLog::new(&config),
            store: store::MemoryStore::new(),
        }
    }
}

impl Default for MemoryHub {
    fn default() -> Self {
        Self::new(HubConfig::default())
    }
}

impl fmt::Debug for MemoryHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryHub")
            .field("log", &self.log)
            .field("store", &self.store)
            .finish()
    }
}

impl EventLog for MemoryHub {
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Cursor, LogError>> {
        Box::pin(async move { Ok(self.log.publish(topic, message)) })
    }

    fn publish_existing<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Option<Cursor>, LogError>> {
        Box::pin(async move { Ok(self.log.publish_existing(topic, message)) })
    }

    fn position<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<Cursor, LogError>> {
        Box::pin(async move { Ok(self.log.position(topic)) })
    }

    fn poll<'a>(
        &'a self,
        topic: &'a Topic,
        after: Cursor,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Vec<Event>, LogError>> {
        Box::pin(self.log.poll(topic, after, timeout))
    }

    fn delete<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<(), LogError>> {
        Box::pin(async move {
            self.log.delete(topic);
            Ok(())
        })
    }
}

impl StateStore for MemoryHub {
    fn create<'a>(
        &'a self,
        key: &'a Key,
        value: Bytes,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move { self.store.create(key, value, ttl) })
    }

    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        Box::pin(async move { Ok(self.store.get(key)) })
    }

    fn save<'a>(
        &'a self,
        key: &'a Key,
        value: Bytes,
        expected_version: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move { self.store.save(key, value, expected_version, ttl) })
    }

    fn touch<'a>(&'a self, key: &'a Key, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.store.touch(key, ttl) })
    }

    fn delete<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { Ok(self.store.delete(key)) })
    }
}

/// Locks ignoring poison: no code path panics while holding one of the hub's locks, and the
/// data stays consistent between statements even if one did.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
