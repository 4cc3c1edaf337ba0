//! Configuration shared by every backend.

use std::time::Duration;

/// How much of each topic the event log keeps.
///
/// Retention is per topic. An event that falls out of it is gone for every reader, and a cursor
/// that pointed before it gives [`LogError::CursorExpired`](crate::LogError::CursorExpired).
///
/// | Setting | Default | Memory backend | Redis backend |
/// | --- | --- | --- | --- |
/// | [`max_events`](Self::max_events) | 1000 | exact, applied on publish | `XADD MAXLEN ~`: at least this many are kept, and up to one stream node (100 entries by default) more |
/// | [`max_age`](Self::max_age) | 1 hour | applied on publish and on read | `XTRIM MINID ~` on publish (approximate, like `MAXLEN ~`), and the whole topic expires after this long without a publish |
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionConfig {
    pub(crate) max_events: usize,
    pub(crate) max_age: Option<Duration>,
}

impl RetentionConfig {
    /// The defaults: 1000 events and one hour per topic.
    pub fn new() -> Self {
        Self {
            max_events: 1000,
            max_age: Some(Duration::from_secs(3600)),
        }
    }

    /// The most events kept per topic; older ones are dropped first. Values below 1 count as 1.
    ///
    /// Default is `1000`.
    pub fn max_events(mut self, max_events: usize) -> Self {
        self.max_events = max_events.max(1);
        self
    }

    /// How long an event is kept; `None` keeps events until count retention or `delete` drops
    /// them. On Redis a topic without a publish for this long expires as a whole.
    ///
    /// Default is `Some(1 hour)`.
    pub fn max_age(mut self, max_age: Option<Duration>) -> Self {
        self.max_age = max_age;
        self
    }
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// Settings every hub backend understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubConfig {
    pub(crate) retention: RetentionConfig,
    pub(crate) max_batch: usize,
}

impl HubConfig {
    /// The defaults: [`RetentionConfig::new`] and batches of at most 1000 events.
    pub fn new() -> Self {
        Self {
            retention: RetentionConfig::new(),
            max_batch: 1000,
        }
    }

    /// How much of each topic is kept.
    ///
    /// Default is [`RetentionConfig::new`]: 1000 events, one hour.
    pub fn retention(mut self, retention: RetentionConfig) -> Self {
        self.retention = retention;
        self
    }

    /// The most events one `poll` returns; a reader that is further behind polls again from the
    /// last cursor it got. Values below 1 count as 1.
    ///
    /// Default is `1000`.
    pub fn max_batch(mut self, max_batch: usize) -> Self {
        self.max_batch = max_batch.max(1);
        self
    }
}

impl Default for HubConfig {
    fn default() -> Self {
        Self::new()
    }
}
