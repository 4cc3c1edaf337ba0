//! The hub's failure domains: the event log, the state store, and the backend beneath both.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use crate::Cursor;

/// Why an [`EventLog`](crate::EventLog) operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// The cursor was not issued for this topic by this log: it comes from another log instance
    /// or another process, points past the end of the topic, or names a topic that was deleted.
    /// Reading never silently restarts from the beginning.
    #[error("cursor {cursor} was not issued for this topic by this event log")]
    UnknownCursor {
        /// The cursor that was rejected.
        cursor: Cursor,
    },
    /// Events after the cursor have been dropped by retention, so reading on from it would skip
    /// some. The reader must start again from [`EventLog::position`](crate::EventLog::position)
    /// and treat the gap as lost.
    #[error("events after cursor {cursor} have been dropped by retention")]
    CursorExpired {
        /// The cursor that was rejected.
        cursor: Cursor,
    },
    /// The backend could not be reached or did not answer.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Why a [`StateStore`](crate::StateStore) operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// `create` found a live record under the key.
    #[error("a live record already exists under this key")]
    AlreadyExists,
    /// There is no live record under the key: it was never created, was deleted, or expired.
    #[error("no live record under this key")]
    NotFound,
    /// `save` expected another version: someone saved in between. Read again and retry.
    #[error("record version is {actual}, not the expected {expected}")]
    VersionConflict {
        /// The version the caller based its change on.
        expected: u64,
        /// The version the record has now.
        actual: u64,
    },
    /// The backend could not be reached, did not answer, or holds something unreadable.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// A failure of the storage beneath the hub: unreachable, too slow, or answering nonsense.
///
/// Callers usually retry later: the backend reconnects by itself. The `Display` text is for
/// people and is not specified; classify with the `is_*` methods.
#[derive(Clone, thiserror::Error)]
#[error("hub backend: {what}")]
pub struct BackendError {
    kind: BackendErrorKind,
    what: String,
    #[source]
    source: Option<Arc<dyn StdError + Send + Sync>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    not(feature = "redis"),
    allow(dead_code, reason = "raised by the Redis backend")
)]
pub(crate) enum BackendErrorKind {
    /// The connection is down or could not be made.
    Connection,
    /// No answer within the configured time.
    Timeout,
    /// An answer that the hub did not write (a foreign key, a protocol surprise).
    Unexpected,
}

#[cfg_attr(
    not(feature = "redis"),
    allow(dead_code, reason = "raised by the Redis backend")
)]
impl BackendError {
    pub(crate) fn new(kind: BackendErrorKind, what: impl Into<String>) -> Self {
        Self {
            kind,
            what: what.into(),
            source: None,
        }
    }

    pub(crate) fn with_source(
        kind: BackendErrorKind,
        what: impl Into<String>,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind,
            what: what.into(),
            source: Some(Arc::new(source)),
        }
    }

    /// The backend could not be reached, or the connection broke: for stores and logs
    /// written outside this crate (and test doubles), classified like the built-in ones.
    ///
    /// ```
    /// let err = mcp_hub::BackendError::connection("the database is down");
    /// assert!(err.is_connection());
    /// ```
    pub fn connection(what: impl Into<String>) -> Self {
        Self::new(BackendErrorKind::Connection, what)
    }

    /// The backend did not answer in time.
    pub fn timeout(what: impl Into<String>) -> Self {
        Self::new(BackendErrorKind::Timeout, what)
    }

    /// The backend answered something the hub did not write.
    pub fn unexpected(what: impl Into<String>) -> Self {
        Self::new(BackendErrorKind::Unexpected, what)
    }

    /// True when the backend could not be reached, or the connection broke.
    pub fn is_connection(&self) -> bool {
        self.kind == BackendErrorKind::Connection
    }

    /// True when the backend did not answer in time.
    pub fn is_timeout(&self) -> bool {
        self.kind == BackendErrorKind::Timeout
    }

    /// True when the backend answered with something the hub did not expect, such as a key
    /// written by another program.
    pub fn is_unexpected(&self) -> bool {
        self.kind == BackendErrorKind::Unexpected
    }
}

impl fmt::Debug for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendError")
            .field("kind", &self.kind)
            .field("what", &self.what)
            .field("source", &self.source)
            .finish()
    }
}
