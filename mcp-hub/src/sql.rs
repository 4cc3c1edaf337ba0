//! What the SQL backends (PostgreSQL, SQLite) share: the waiting-poll registry, cursor checks
//! against a topic row, and table-prefix validation.
//!
//! Both backends store a topic as one row (`generation`, `last_seq`, `evicted_seq`) and its
//! events as rows numbered `1, 2, 3, …` per topic. Cursors are `<generation>-<seq>`: the
//! generation is drawn at random when the topic is created, so a cursor from a deleted
//! incarnation of the topic, or from another deployment, is told apart from ours. `0-0` is the
//! start of every topic. The events retained are exactly those numbered in
//! `(evicted_seq, last_seq]`, so a cursor is classified without reading any event.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

use crate::{BackendError, Cursor, LogError};

/// The start cursor of every topic.
pub(crate) const START: Cursor = Cursor::from_parts(0, 0);

/// The longest TTL or age stored: 100 years, so no clock arithmetic overflows.
const FAR_MILLIS: u64 = 100 * 365 * 24 * 3600 * 1000;

/// A duration as whole milliseconds for the database, rounded up, at least 1, at most 100 years.
pub(crate) fn millis(duration: Duration) -> i64 {
    i64::try_from(crate::store::ttl_millis(duration).min(FAR_MILLIS)).unwrap_or(i64::MAX)
}

/// A topic's row, as far as cursors are concerned.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TopicRow {
    pub(crate) generation: i64,
    pub(crate) last_seq: i64,
    pub(crate) evicted_seq: i64,
}

/// The sequence number after which to read for `after`, or why `after` cannot be read from.
/// `topic` is `None` when the topic does not exist.
pub(crate) fn read_from(after: Cursor, topic: Option<TopicRow>) -> Result<i64, LogError> {
    let unknown = || LogError::UnknownCursor { cursor: after };
    let Some(topic) = topic else {
        return if after == START {
            Ok(0)
        } else {
            Err(unknown())
        };
    };
    let seq = if after == START {
        0
    } else {
        let generation = u64::try_from(topic.generation).map_err(|_| unknown())?;
        if after.high() != generation {
            return Err(unknown());
        }
        i64::try_from(after.low()).map_err(|_| unknown())?
    };
    if seq > topic.last_seq {
        return Err(unknown());
    }
    if seq < topic.evicted_seq {
        return Err(LogError::CursorExpired { cursor: after });
    }
    Ok(seq)
}

/// The cursor of event `seq` of a topic of generation `generation`.
pub(crate) fn cursor(generation: i64, seq: i64) -> Result<Cursor, BackendError> {
    match (u64::try_from(generation), u64::try_from(seq)) {
        (Ok(high), Ok(low)) => Ok(Cursor::from_parts(high, low)),
        _ => Err(BackendError::unexpected(
            "a topic row holds a negative generation or sequence",
        )),
    }
}

/// A fresh topic generation: random, positive, never 0.
pub(crate) fn new_generation() -> i64 {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    hasher.write_u128(nanos);
    // 62 bits: positive as an i64, and never 0.
    i64::try_from(hasher.finish() >> 2).unwrap_or(1).max(1)
}

/// A table prefix is a plain lower-case SQL identifier, so it can be spliced into statements.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), BackendError> {
    let mut chars = prefix.chars();
    let valid = prefix.len() <= 40
        && chars
            .next()
            .is_some_and(|first| first.is_ascii_lowercase() || first == '_')
        && chars.all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_');
    if valid {
        Ok(())
    } else {
        Err(BackendError::unexpected(format!(
            "table prefix {prefix:?} is not 1 to 40 of [a-z0-9_] starting with a letter or _"
        )))
    }
}

/// The polls waiting on each topic of one hub, woken by whatever learns of a publish: the
/// publish itself, a PostgreSQL notification, or the SQLite change watcher.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    topics: Mutex<HashMap<String, (Arc<Notify>, usize)>>,
}

impl Waiters {
    /// Registers a waiting poll on `topic` until the returned guard is dropped.
    pub(crate) fn watch(self: &Arc<Self>, topic: &str) -> Watching {
        let mut topics = self.topics.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = topics
            .entry(topic.to_owned())
            .or_insert_with(|| (Arc::new(Notify::new()), 0));
        entry.1 += 1;
        Watching {
            waiters: Arc::clone(self),
            topic: topic.to_owned(),
            notify: Arc::clone(&entry.0),
        }
    }

    /// Wakes the polls waiting on `topic`.
    pub(crate) fn wake(&self, topic: &str) {
        let topics = self.topics.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((notify, _)) = topics.get(topic) {
            notify.notify_waiters();
        }
    }

    /// Wakes every waiting poll, so each reads its topic again.
    pub(crate) fn wake_all(&self) {
        let topics = self.topics.lock().unwrap_or_else(PoisonError::into_inner);
        for (notify, _) in topics.values() {
            notify.notify_waiters();
        }
    }

    /// Whether any poll waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.topics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }
}

/// A waiting poll's registration; dropping it unregisters.
#[derive(Debug)]
pub(crate) struct Watching {
    waiters: Arc<Waiters>,
    topic: String,
    notify: Arc<Notify>,
}

impl Watching {
    /// Woken by the next [`Waiters::wake`] of this topic or [`Waiters::wake_all`].
    pub(crate) fn notify(&self) -> &Notify {
        &self.notify
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut topics = self
            .waiters
            .topics
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = topics.get_mut(&self.topic) {
            entry.1 = entry.1.saturating_sub(1);
            if entry.1 == 0 {
                topics.remove(&self.topic);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(generation: i64, evicted_seq: i64, last_seq: i64) -> Option<TopicRow> {
        Some(TopicRow {
            generation,
            last_seq,
            evicted_seq,
        })
    }

    #[test]
    fn cursors_are_classified_by_the_topic_row() {
        let c = |high, low| Cursor::from_parts(high, low);
        assert_eq!(read_from(START, None).ok(), Some(0));
        assert!(matches!(
            read_from(c(7, 1), None),
            Err(LogError::UnknownCursor { .. })
        ));
        assert_eq!(read_from(START, row(7, 0, 5)).ok(), Some(0));
        assert!(matches!(
            read_from(START, row(7, 2, 5)),
            Err(LogError::CursorExpired { .. })
        ));
        assert_eq!(read_from(c(7, 2), row(7, 2, 5)).ok(), Some(2));
        assert_eq!(read_from(c(7, 5), row(7, 2, 5)).ok(), Some(5));
        assert!(matches!(
            read_from(c(7, 1), row(7, 2, 5)),
            Err(LogError::CursorExpired { .. })
        ));
        assert!(matches!(
            read_from(c(7, 6), row(7, 2, 5)),
            Err(LogError::UnknownCursor { .. })
        ));
        assert!(matches!(
            read_from(c(8, 3), row(7, 2, 5)),
            Err(LogError::UnknownCursor { .. })
        ));
        assert!(matches!(
            read_from(c(u64::MAX, 3), row(7, 2, 5)),
            Err(LogError::UnknownCursor { .. })
        ));
    }

    #[test]
    fn prefixes_are_plain_identifiers() {
        for good in ["mcp", "_x", "a1_b"] {
            assert!(check_prefix(good).is_ok(), "{good}");
        }
        for bad in ["", "1a", "A", "a-b", "a;drop", "a b", &"x".repeat(41)] {
            assert!(check_prefix(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn generations_are_positive_and_distinct() {
        let all: std::collections::HashSet<i64> = (0..100).map(|_| new_generation()).collect();
        assert_eq!(all.len(), 100);
        assert!(all.iter().all(|g| *g > 0));
    }
}
