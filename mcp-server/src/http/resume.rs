//! POST streams that resume on any worker.
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
use tokio::sync::{mpsc, watch};

use crate::http::Shared;
use crate::http::body;

/// A message of the call (progress, log, question, response).
const TAG_MESSAGE: u8 = b'm';
/// The call's reply ended: nothing follows.
const TAG_END: u8 = b'z';
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
struct CallLog {
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
    fn new(shared: &Shared, session: &str, id: Option<Id>) -> Option<Self> {
        let mut bytes = [0u8; TOKEN_LEN / 2];
        if let Err(err) = getrandom::fill(&mut bytes) {
            tracing::warn!(%err, "no randomness for a call's token; its stream cannot resume");
            return None;
        }
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let (topic, key) = names(shared.sessions.namespace(), session, &token);
        Some(Self {
            token,
            topic,
            key,
            id,
            log: shared.server.settings().log.clone(),
            store: shared.server.settings().states.store().clone(),
            lease: shared.config.post_stream_lease,
            done_ttl: shared.config.session_ttl,
        })
    }

    /// Takes the call's lease (its record); `false` when the store refuses (the stream then
    /// goes on without ids, as it would without a hub).
    async fn open(&self) -> bool {
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
    async fn start(&self) -> Option<String> {
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
    async fn publish(&self, tag: u8, json: &[u8]) -> Option<String> {
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

    async fn renew(&self) {
        if let Err(err) = self.store.touch(&self.key, self.lease).await {
            tracing::warn!(%err, "could not renew a call's lease");
        }
    }

    /// The call's reply ended: the end marker, then the record says so (kept for the session's
    /// TTL, so a late follower that still finds the events ends cleanly).
    async fn finish(&self) {
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

/// Resolves once the endpoint cancels its calls (no borrow of the signal outlives it).
async fn cancelled(cancelling: &mut watch::Receiver<bool>) {
    let _ = cancelling.wait_for(|c| *c).await;
}

/// The live side of a resumable call's stream, driven by its own task: what goes to the
/// client that posted, while it listens.
struct Driver {
    out: Option<mpsc::Sender<Bytes>>,
    call: Option<CallLog>,
    renew: tokio::time::Interval,
    cancelling: watch::Receiver<bool>,
}

impl Driver {
    /// Sends `bytes` to the client if it still listens, renewing the lease while a slow
    /// client holds the call back. `false` when the endpoint cancels its calls.
    async fn deliver(&mut self, bytes: Bytes) -> bool {
        let Self {
            out,
            call,
            renew,
            cancelling,
        } = self;
        loop {
            let Some(tx) = out.as_ref() else { return true };
            tokio::select! {
                sent = tx.send(bytes.clone()) => {
                    if sent.is_err() {
                        *out = None;
                    }
                    return true;
                }
                _ = renew.tick() => {
                    if let Some(call) = call.as_ref() {
                        call.renew().await;
                    }
                }
                () = cancelled(cancelling) => return false,
            }
        }
    }

    /// Logs one message of the call and sends it with its id.
    async fn message(&mut self, json: &[u8]) -> bool {
        let id = match &self.call {
            Some(call) => call.publish(TAG_MESSAGE, json).await,
            None => None,
        };
        self.deliver(body::event(None, id.as_deref(), json)).await
    }
}

/// The stream of a call whose reply is SSE and outlives its first item, on a revision whose
/// POST streams resume: the call runs in its own task and logs every event (see the module
/// documentation). `first` is the first message, `rest` the JSON of the others.
pub(crate) fn detached(
    shared: &Arc<Shared>,
    adapter: Adapter,
    session: Arc<str>,
    call_id: Option<Id>,
    first: Vec<u8>,
    mut rest: BoxStream<'static, Vec<u8>>,
) -> BoxStream<'static, Bytes> {
    let (tx, rx) = mpsc::channel(shared.server.settings().max_queued);
    let guard = shared.call_guard();
    let shared = shared.clone();
    tokio::spawn(async move {
        let _guard = guard;
        let polling = adapter.features().sse_polling;
        let call = CallLog::new(&shared, &session, call_id.clone());
        // The priming id first (a read), then the lease and the first event written at once:
        // what the client waits for costs one read and one write's time.
        let (call, priming_id, first_id) = match call {
            Some(call) => {
                let start = if polling {
                    call.start().await
                } else {
                    Some(String::new())
                };
                let (opened, first_id) =
                    futures::join!(call.open(), call.publish(TAG_MESSAGE, &first));
                match (opened, start) {
                    (true, Some(start)) => (Some(call), Some(start), first_id),
                    _ => (None, None, None),
                }
            }
            None => (None, None, None),
        };
        let lease = shared.config.post_stream_lease;
        let mut renew = tokio::time::interval((lease / 3).max(Duration::from_millis(1)));
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is now, and the lease was just taken.
        renew.tick().await;
        // Closing the POST stream early only makes sense where the client is told it may poll.
        let poll_after = shared
            .config
            .post_stream_poll_after
            .filter(|_| polling && call.is_some());
        let mut driver = Driver {
            out: Some(tx),
            call,
            renew,
            cancelling: shared.cancelling.subscribe(),
        };
        let mut live = true;
        if polling {
            let id = priming_id.as_deref().unwrap_or("0");
            live = driver
                .deliver(body::priming(id, shared.config.sse_retry_ms))
                .await;
        }
        let close_at = poll_after.map(|after| tokio::time::Instant::now() + after);
        if poll_after == Some(Duration::ZERO) {
            // The client reads the rest with GET.
            driver.out = None;
        }
        live = live
            && driver
                .deliver(body::event(None, first_id.as_deref(), &first))
                .await;
        drop(first);
        let close = async move {
            match close_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(close);
        let mut closed = poll_after.is_none();
        while live {
            tokio::select! {
                next = rest.next() => match next {
                    Some(json) => live = driver.message(&json).await,
                    None => break,
                },
                _ = driver.renew.tick() => {
                    if let Some(call) = &driver.call {
                        call.renew().await;
                    }
                }
                () = &mut close, if !closed => {
                    closed = true;
                    tracing::debug!("a long POST stream is closed; the client resumes with GET");
                    driver.out = None;
                }
                () = cancelled(&mut driver.cancelling) => live = false,
            }
        }
        if !live {
            // The shutdown deadline passed: the call is cancelled, and whoever follows it is
            // told so rather than left waiting.
            drop(rest);
            let failure = Failure::internal("the server shut down before the call ended");
            let error = adapter.encode_failure(call_id, &failure).to_bytes();
            let id = match &driver.call {
                Some(call) => call.publish(TAG_MESSAGE, &error).await,
                None => None,
            };
            if let Some(tx) = &driver.out {
                let _ = tx.try_send(body::event(None, id.as_deref(), &error));
            }
        }
        // The client's stream ends with the reply, not after the bookkeeping below.
        driver.out = None;
        if let Some(call) = &driver.call {
            call.finish().await;
        }
    });
    stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) }).boxed()
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
    fn fail(&mut self, why: &str) -> Bytes {
        self.ended = true;
        tracing::info!(reason = why, "a resumed POST stream ends with an error");
        let error = self
            .adapter
            .encode_failure(self.id.clone(), &Failure::internal(why))
            .to_bytes();
        body::event(None, None, &error)
    }

    async fn next(mut self) -> Option<(Bytes, Self)> {
        if self.ended {
            return None;
        }
        loop {
            while let Some(event) = self.pending.pop_front() {
                self.after = event.cursor;
                match event.payload.split_first() {
                    Some((&TAG_MESSAGE, json)) => {
                        let id = event_id(&self.token, event.cursor);
                        let bytes = body::event(None, Some(&id), json);
                        return Some((bytes, self));
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
/// the body of a `GET` whose `Last-Event-ID` is a POST-stream event id.
pub(crate) async fn follow(
    shared: &Shared,
    adapter: Adapter,
    session: &str,
    token: &str,
    after: Cursor,
) -> Result<BoxStream<'static, Bytes>, NotFollowed> {
    let (topic, key) = names(shared.sessions.namespace(), session, token);
    let store = shared.server.settings().states.store().clone();
    let log = shared.server.settings().log.clone();
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
        wait: (shared.config.post_stream_lease / 2).max(Duration::from_millis(10)),
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
