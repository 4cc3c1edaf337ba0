//! The event log contract, and the subscription built on it.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::{FusedStream, Stream};

use crate::{Cursor, LogError, Topic};

/// One published message and its place in the topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Where the event sits in its topic; poll after it to read what came next.
    pub cursor: Cursor,
    /// The message exactly as published.
    pub payload: Bytes,
}

/// An ordered, retained log of messages per [`Topic`], shared by every worker of a server.
///
/// It is a log, not a queue: reading consumes nothing, and any number of readers each keep
/// their own place with a [`Cursor`]. The usual way to wait for a reply that another worker may
/// receive:
///
/// 1. take [`position`](Self::position) *before* the question goes out;
/// 2. send the question;
/// 3. [`poll`](Self::poll) after that cursor. A reply published between 1 and 3 is delivered,
///    because it sits after the cursor.
///
/// Cursors are checked on every use. A cursor this log did not issue for the topic gives
/// [`LogError::UnknownCursor`]; one whose following events fell out of retention gives
/// [`LogError::CursorExpired`]. Neither silently restarts from the beginning.
///
/// The trait is object safe (methods return boxed futures): servers hold an
/// `Arc<dyn EventLog>`. For a stream that keeps its own place, see [`Subscription`].
pub trait EventLog: Send + Sync {
    /// Appends `message` to `topic` and returns its cursor. Events of one topic are delivered
    /// in the order their publishes completed.
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Cursor, LogError>>;

    /// Appends `message` to `topic` only when the topic exists: it was published to and has
    /// not been deleted or expired since. Returns the new event's cursor, or `None` (and
    /// stores nothing) when the topic does not exist.
    ///
    /// This is how a reply from a peer reaches a waiting reader without letting the peer
    /// create topics: the reader opens the topic with an ordinary [`publish`](Self::publish)
    /// (a marker it polls after), and the peer's reply goes through `publish_existing`, so a
    /// reply that nobody waits for costs nothing.
    fn publish_existing<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Option<Cursor>, LogError>>;

    /// The cursor of the newest event of `topic`, or the topic's start cursor when nothing was
    /// published to it (yet). Polling after it returns only events published later.
    fn position<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<Cursor, LogError>>;

    /// The events of `topic` strictly after `after`, oldest first, at most the configured batch
    /// size ([`HubConfig::max_batch`](crate::HubConfig::max_batch)).
    ///
    /// When there are none yet, waits up to `timeout` for one and returns an empty list when
    /// the time is up. `Duration::ZERO` only checks. A publish wakes the waiting poll
    /// directly; nothing polls on a timer.
    fn poll<'a>(
        &'a self,
        topic: &'a Topic,
        after: Cursor,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Vec<Event>, LogError>>;

    /// Forgets `topic` and its events. Afterwards the topic reads as never published: its start
    /// cursor is valid again, every other cursor into it is unknown. Deleting a topic that does
    /// not exist succeeds.
    fn delete<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<(), LogError>>;
}

/// A reader of one topic that keeps its own place, as a [`Stream`] of events.
///
/// Built with [`Subscription::start`]. Each poll of the underlying log waits up to
/// [`poll_timeout`](Self::poll_timeout) and is then simply repeated, so the stream only ends
/// after an error: it yields the error, then `None`. To go on after an error (for example once
/// the backend is reachable again), start a new subscription from [`cursor`](Self::cursor):
/// nothing yielded is delivered twice and nothing published is skipped.
pub struct Subscription {
    log: Arc<dyn EventLog>,
    topic: Topic,
    /// The cursor of the last event handed out (or the starting cursor).
    delivered: Cursor,
    /// The cursor of the last event fetched, the tail of `pending`.
    fetched: Cursor,
    pending: VecDeque<Event>,
    poll_timeout: Duration,
    in_flight: Option<BoxFuture<'static, Result<Vec<Event>, LogError>>>,
    finished: bool,
}

impl Subscription {
    /// Starts reading `topic` after `after`, or after its current
    /// [`position`](EventLog::position) when `after` is `None`.
    ///
    /// A given cursor is checked now, so an unknown or expired one (say, a stale
    /// `Last-Event-ID`) is an error here rather than on the first read.
    pub async fn start(
        log: Arc<dyn EventLog>,
        topic: Topic,
        after: Option<Cursor>,
    ) -> Result<Self, LogError> {
        let (start, pending) = match after {
            None => (log.position(&topic).await?, Vec::new()),
            Some(cursor) => (cursor, log.poll(&topic, cursor, Duration::ZERO).await?),
        };
        let fetched = pending.last().map_or(start, |event| event.cursor);
        Ok(Self {
            log,
            topic,
            delivered: start,
            fetched,
            pending: pending.into(),
            poll_timeout: Duration::from_secs(30),
            in_flight: None,
            finished: false,
        })
    }

    /// How long each poll of the log waits before it is repeated; this bounds how long a
    /// dropped backend connection can go unnoticed while the topic is quiet. Values below 1 ms
    /// count as 1 ms.
    ///
    /// Default is `30 s`.
    pub fn poll_timeout(mut self, timeout: Duration) -> Self {
        self.poll_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The cursor of the last event this subscription handed out, or the one it started from.
    pub fn cursor(&self) -> Cursor {
        self.delivered
    }

    /// The topic being read.
    pub fn topic(&self) -> &Topic {
        &self.topic
    }
}

impl Stream for Subscription {
    type Item = Result<Event, LogError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.pending.pop_front() {
                this.delivered = event.cursor;
                return Poll::Ready(Some(Ok(event)));
            }
            if this.finished {
                return Poll::Ready(None);
            }
            let in_flight = this.in_flight.get_or_insert_with(|| {
                let log = Arc::clone(&this.log);
                let topic = this.topic.clone();
                let after = this.fetched;
                let timeout = this.poll_timeout;
                Box::pin(async move { log.poll(&topic, after, timeout).await })
            });
            let Poll::Ready(result) = in_flight.as_mut().poll(cx) else {
                return Poll::Pending;
            };
            this.in_flight = None;
            match result {
                Ok(events) => {
                    if let Some(last) = events.last() {
                        this.fetched = last.cursor;
                    }
                    this.pending.extend(events);
                }
                Err(err) => {
                    this.finished = true;
                    return Poll::Ready(Some(Err(err)));
                }
            }
        }
    }
}

impl FusedStream for Subscription {
    fn is_terminated(&self) -> bool {
        self.finished && self.pending.is_empty()
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("topic", &self.topic)
            .field("cursor", &self.delivered)
            .field("pending", &self.pending.len())
            .field("poll_timeout", &self.poll_timeout)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}
