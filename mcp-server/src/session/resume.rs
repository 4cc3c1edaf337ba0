//! The hub's side of POST streams that resume on any worker: a call's log and lease, and
//! following a call from a `Last-Event-ID`. The HTTP transport frames what these produce
//! (`http/resume.rs` drives a call's stream, `http/streamable.rs` serves the `GET`).
//!
//! On the revisions whose SSE streams resume (`sse_resumable`) and where closing a stream does
//! not cancel its call (`!stream_close_cancels`), a call answered as SSE that outlives its
//! first reply item runs detached, and every event of its stream goes through the hub's event
//! log first, on a topic of its own: `mcp-call/<session>/<token>`, where the token is 128
//! random bits. The event's SSE id is `<token>/<cursor>`, which no hub cursor (`<n>-<n>`) can
//! be mistaken for. A `GET` of the same session with that `Last-Event-ID`, on any worker of
//! the hub, replays the events after it and follows the call until its end.
//!
//! The call also has a record in the state store under the same name (`mcp-call/…`): the
//! request's id and whether the call ended. While the call runs, its worker holds the record
//! as a lease, renewed every third of [`HttpConfig::post_stream_lease`]; once the call ends,
//! the record says so and lives on for the session's TTL. A follower that waits half a lease
//! without an event reads the record: gone means the worker stopped without ending the call,
//! and the follower ends with the revision's internal error for that request.
//!
//! Both names hold the session id, and the `GET` is served only to the session's principal
//! (`session::load_own`), so one session cannot read another's call.
//!
//! [`HttpConfig::post_stream_lease`]: crate::http::HttpConfig::post_stream_lease

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use futures::stream::{self, BoxStream};
use mcp_adapters::{Adapter, Failure};
use mcp_hub::{Cursor, EventLog, Key, LogError, Namespace, StateStore, StoreError, Topic};
use mcp_wire::jsonrpc::Id;
use serde_json::Value;

/// A message of the call (progress, log, question, response).
pub(crate) const TAG_MESSAGE: u8 = b'm';
/// The call's reply ended: nothing follows.
const TAG_END: u8 = b'z';

/// Where the calls of sessions log their streams: the hub, the sessions' namespace and the
/// lease's settings.
pub(crate) struct CallHub {
    pub(crate) namespace: Namespace,
    pub(crate) log: Arc<dyn EventLog>,
    pub(crate) store: Arc<dyn StateStore>,
    /// How long the running worker holds a call (renewed every third of it).
    pub(crate) lease: Duration,
    /// How long an ended call's record stays (the session's TTL).
    pub(crate) done_ttl: Duration,
}

/// One event of a call's stream: its SSE id (none when the log did not take it) and its JSON.
pub(crate) struct Frame {
    pub(crate) id: Option<String>,
    pub(crate) json: Bytes,
}
/// Hex digits of a call's token (128 bits).
const TOKEN_LEN: usize = 32;

/// The topic and record key of call `token` of session `session`.
fn names(namespace: &Namespace, session: &str, token: &str) -> (Topic, Key) {
    let mut name = String::with_capacity(9 + session.len() + 1 + token.len());
    name.push_str("mcp-call/");
    name.push_str(session);
    name.push('/');
    name.push_str(token);
    (namespace.topic(&name), namespace.key(&name))
}

/// The token and cursor of a POST-stream event id (`<token>/<cursor>`), or `None` when `text`
/// is not one (a GET-stream cursor, or anything else).
pub(crate) fn parse_id(text: &str) -> Option<(&str, Cursor)> {
    let (token, cursor) = text.split_once('/')?;
    let token_ok = token.len() == TOKEN_LEN
        && token
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !token_ok {
        return None;
    }
    Some((token, cursor.parse().ok()?))
}

fn event_id(token: &str, cursor: Cursor) -> String {
    format!("{token}/{cursor}")
}

fn record_value(id: Option<&Id>, done: bool) -> Bytes {
    let id = id
        .and_then(|id| serde_json::to_value(id).ok())
        .unwrap_or(Value::Null);
    Bytes::from(serde_json::json!({ "id": id, "done": done }).to_string())
}

/// What a call's record says: the request's id, and whether the call ended.
fn read_record(value: &[u8]) -> (Option<Id>, bool) {
    let Ok(value) = serde_json::from_slice::<Value>(value) else {
        return (None, false);
    };
    let id = serde_json::from_value::<Id>(value["id"].clone()).ok();
    (id, value["done"] == Value::Bool(true))
}

/// A call's place in the hub, held by the worker that runs it.
pub(crate) struct CallLog {
    token: String,
    topic: Topic,
    key: Key,
    id: Option<Id>,
    log: Arc<dyn EventLog>,
    store: Arc<dyn StateStore>,
    lease: Duration,
    done_ttl: Duration,
}

impl CallLog {
    /// The call's names in the hub (no I/O yet); `None` without randomness for its token.
    pub(crate) fn new(hub: &CallHub, session: &str, id: Option<Id>) -> Option<Self> {
        let mut bytes = [0u8; TOKEN_LEN / 2];
        if let Err(err) = getrandom::fill(&mut bytes) {
            tracing::warn!(%err, "no randomness for a call's token; its stream cannot resume");
            return None;
        }
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let (topic, key) = names(&hub.namespace, session, &token);
        Some(Self {
            token,
            topic,
            key,
            id,
            log: hub.log.clone(),
            store: hub.store.clone(),
            lease: hub.lease,
            done_ttl: hub.done_ttl,
        })
    }

    /// Takes the call's lease (its record); `false` when the store refuses (the stream then
    /// goes on without ids, as it would without a hub).
    pub(crate) async fn open(&self) -> bool {
        let value = record_value(self.id.as_ref(), false);
        match self.store.create(&self.key, value, self.lease).await {
            Ok(_) => true,
            Err(err) => {
                tracing::warn!(%err, "could not record a call in the hub; its stream cannot resume");
                false
            }
        }
    }

    /// The id of the priming event: the topic's position before anything is logged on it (a
    /// read, not a write), after which every event of the call comes.
    pub(crate) async fn start(&self) -> Option<String> {
        match self.log.position(&self.topic).await {
            Ok(cursor) => Some(event_id(&self.token, cursor)),
            Err(err) => {
                tracing::warn!(%err, "event log failure; a call's stream cannot resume");
                None
            }
        }
    }

    /// Appends one event; its SSE id, or `None` when the log failed (the event then goes out
    /// without an id, so a client never resumes after an event the log does not hold).
    pub(crate) async fn publish(&self, tag: u8, json: &[u8]) -> Option<String> {
        let mut payload = Vec::with_capacity(1 + json.len());
        payload.push(tag);
        payload.extend_from_slice(json);
        match self.log.publish(&self.topic, Bytes::from(payload)).await {
            Ok(cursor) => Some(event_id(&self.token, cursor)),
            Err(err) => {
                tracing::warn!(%err, "could not log a call's event; it goes out without an id");
                None
            }
        }
    }

    pub(crate) async fn renew(&self) {
        if let Err(err) = self.store.touch(&self.key, self.lease).await {
            tracing::warn!(%err, "could not renew a call's lease");
        }
    }

    /// The call's reply ended: the end marker, then the record says so (kept for the session's
    /// TTL, so a late follower that still finds the events ends cleanly).
    pub(crate) async fn finish(&self) {
        self.publish(TAG_END, b"").await;
        let done = record_value(self.id.as_ref(), true);
        match self.store.save(&self.key, done, 1, self.done_ttl).await {
            Ok(_) => {}
            Err(StoreError::NotFound) => {
                // The lease lapsed (a stalled hub): followers already ended with an error.
                tracing::warn!("a call's lease lapsed before the call ended");
            }
            Err(err) => tracing::warn!(%err, "could not mark a call as ended"),
        }
    }
}

/// Why a `GET` naming a call's event cannot follow it.
pub(crate) enum NotFollowed {
    /// No call of this session has that token (another session's, or one whose record
    /// expired): 400.
    Unknown,
    /// The hub failed: 503.
    Unavailable,
}

impl NotFollowed {
    pub(crate) fn failure(&self) -> Failure {
        match self {
            Self::Unknown => Failure::invalid_request(
                "the Last-Event-ID names no call of this session (or one that ended long ago)",
            ),
            Self::Unavailable => Failure::unavailable("the event log is unavailable"),
        }
    }
}

/// A follower of one call: replays the events after a cursor, then follows the call.
struct Follow {
    log: Arc<dyn EventLog>,
    store: Arc<dyn StateStore>,
    topic: Topic,
    key: Key,
    token: String,
    after: Cursor,
    pending: VecDeque<mcp_hub::Event>,
    wait: Duration,
    adapter: Adapter,
    id: Option<Id>,
    ended: bool,
}

impl Follow {
    /// The last event of a stream that cannot go on: the revision's internal error for the
    /// call's request.
    fn fail(&mut self, why: &str) -> Frame {
        self.ended = true;
        tracing::info!(reason = why, "a resumed POST stream ends with an error");
        let error = self
            .adapter
            .encode_failure(self.id.clone(), &Failure::internal(why))
            .to_bytes();
        Frame {
            id: None,
            json: Bytes::from(error),
        }
    }

    async fn next(mut self) -> Option<(Frame, Self)> {
        if self.ended {
            return None;
        }
        loop {
            while let Some(event) = self.pending.pop_front() {
                self.after = event.cursor;
                match event.payload.split_first() {
                    Some((&TAG_MESSAGE, _)) => {
                        let frame = Frame {
                            id: Some(event_id(&self.token, event.cursor)),
                            json: event.payload.slice(1..),
                        };
                        return Some((frame, self));
                    }
                    Some((&TAG_END, _)) => return None,
                    _ => {}
                }
            }
            match self.log.poll(&self.topic, self.after, self.wait).await {
                Ok(events) if !events.is_empty() => {
                    self.pending.extend(events);
                    continue;
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!(%err, "event log failure while following a call");
                    let bytes = self.fail("the event log failed while the call was followed");
                    return Some((bytes, self));
                }
            }
            // Quiet for half a lease: is the call still held by a worker?
            match self.store.get(&self.key).await {
                Ok(Some(record)) if !read_record(&record.value).1 => {}
                Ok(Some(_)) => {
                    // Ended: its end marker is logged before the record says so.
                    match self.log.poll(&self.topic, self.after, Duration::ZERO).await {
                        Ok(events) if !events.is_empty() => self.pending.extend(events),
                        _ => {
                            let bytes = self
                                .fail("the call ended, but its last events are no longer retained");
                            return Some((bytes, self));
                        }
                    }
                }
                Ok(None) => {
                    let bytes = self.fail("the worker running the call stopped before its result");
                    return Some((bytes, self));
                }
                Err(err) => {
                    tracing::warn!(%err, "state store failure while following a call");
                }
            }
        }
    }
}

/// The events of call `token` of `session` after `after`, then the live call until it ends:
/// what a `GET` whose `Last-Event-ID` is a POST-stream event id carries.
pub(crate) async fn follow(
    hub: &CallHub,
    adapter: Adapter,
    session: &str,
    token: &str,
    after: Cursor,
) -> Result<BoxStream<'static, Frame>, NotFollowed> {
    let (topic, key) = names(&hub.namespace, session, token);
    let store = hub.store.clone();
    let log = hub.log.clone();
    let id = match store.get(&key).await {
        Ok(Some(record)) => read_record(&record.value).0,
        Ok(None) => return Err(NotFollowed::Unknown),
        Err(err) => {
            tracing::error!(%err, "state store failure");
            return Err(NotFollowed::Unavailable);
        }
    };
    let mut follow = Follow {
        log,
        store,
        topic,
        key,
        token: token.to_owned(),
        after,
        pending: VecDeque::new(),
        wait: (hub.lease / 2).max(Duration::from_millis(10)),
        adapter,
        id,
        ended: false,
    };
    tracing::debug!(after = %after, "a POST stream resumed after Last-Event-ID");
    // The cursor is checked now: one the log no longer serves ends the stream with an error
    // for the call, rather than a silent gap.
    match follow.log.poll(&follow.topic, after, Duration::ZERO).await {
        Ok(events) => follow.pending.extend(events),
        Err(LogError::UnknownCursor { .. } | LogError::CursorExpired { .. }) => {
            let last =
                follow.fail("the call's events after this Last-Event-ID are no longer retained");
            return Ok(stream::iter([last]).boxed());
        }
        Err(err) => {
            tracing::error!(%err, "event log failure");
            return Err(NotFollowed::Unavailable);
        }
    }
    Ok(stream::unfold(follow, Follow::next).boxed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_stream_ids_are_told_from_cursors() {
        let token = "0123456789abcdef0123456789abcdef";
        let id = event_id(token, "7-42".parse().unwrap());
        assert_eq!(parse_id(&id), Some((token, "7-42".parse().unwrap())));
        for text in [
            "7-42",
            "0",
            "",
            "/7-42",
            "0123456789ABCDEF0123456789abcdef/7-42",
            "0123456789abcdef0123456789abcde/7-42",
            "0123456789abcdef0123456789abcdef/7",
            "0123456789abcdef0123456789abcdef/7-42/1",
        ] {
            assert_eq!(parse_id(text), None, "{text:?}");
        }
    }

    #[test]
    fn records_round_trip() {
        let value = record_value(Some(&Id::String("a".into())), true);
        assert_eq!(read_record(&value), (Some(Id::String("a".into())), true));
        assert_eq!(read_record(&record_value(None, false)), (None, false));
        assert_eq!(read_record(b"not json"), (None, false));
    }
}
