//! HTTP+SSE, the transport of 2024-11-05: `GET /sse` opens the stream and names the POST URI
//! in an `endpoint` event; every POST there gets 202 and its answers travel on the stream,
//! through the hub (a per-stream topic), so the POST may land on any worker.
//!
//! The worker that holds a stream also registers a local channel for it
//! ([`LocalStreams`](crate::session::streams::LocalStreams)).
//! A POST that lands on that worker sends what it produces straight into the channel, without
//! a round trip through the event log; a POST on another worker (or one whose stream has just
//! gone) publishes to the topic as before, and the stream reads both. Every message of one
//! POST takes the same path, so the order within a call holds.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt as _;
use futures::stream::{self};
use http::{Response, StatusCode};
use mcp_adapters::{Adapter, AdapterSet, Failure, FailureKind};
use mcp_hub::Subscription;
use mcp_wire::jsonrpc;
use tokio::sync::{mpsc, watch};

use crate::http::body::{self, HttpBody, SseStream};
use crate::http::{
    Accepts, Head, ReadableBody, Shared, failure_response, posted_json, read_body,
    refusal_response, sse_response, status_only,
};
use crate::session::cancel::DetachedCall;
use crate::session::streams::{Delivery, StreamSession};
use crate::session::{self, Bound, Inbound, Named, Refused, SessionError, SessionRecord};
use crate::{Outgoing, Reply};

/// The revision an HTTP+SSE session speaks before `initialize` says otherwise: the served one
/// whose own transport this is, else the oldest served.
fn default_adapter(set: &AdapterSet) -> Adapter {
    set.adapters()
        .iter()
        .copied()
        .find(|a| a.features().http_sse)
        .unwrap_or_else(|| set.adapters()[set.adapters().len() - 1])
}

/// `GET /sse`: mints the session, opens its stream, names the POST URI.
pub(crate) async fn open(shared: &Arc<Shared>, parts: &Head) -> Response<HttpBody> {
    let Some(set) = &shared.legacy else {
        return status_only(StatusCode::NOT_FOUND);
    };
    if !Accepts::of(&parts.headers).sse {
        return failure_response(
            set.newest(),
            None,
            &Failure::new(
                FailureKind::NotAcceptable,
                "the stream is text/event-stream",
            ),
        );
    }
    let record = SessionRecord {
        sse: true,
        owner: crate::auth::owner_of(&parts.facts)
            .as_deref()
            .map(str::to_owned),
        ..SessionRecord::default()
    };
    // Busy from the start: the session is in use as long as its stream is open.
    let (id, hold) = match shared
        .sessions
        .create_held(&record, shared.peer_of(parts))
        .await
    {
        Ok(minted) => minted,
        Err(err) => {
            if !err.is_expected() {
                shared.refused_failure(
                    crate::refusal::Reason::Unavailable,
                    parts,
                    format_args!("the session store failed: {err}"),
                );
            }
            let mut response = failure_response(set.newest(), None, &err.failure());
            crate::http::with_retry_after(&mut response, err.retry_after());
            return response;
        }
    };
    let log = shared.server.settings().log.clone();
    // Subscribe before the client can know the endpoint: nothing published for it is missed.
    let subscription = match Subscription::start(log, shared.sessions.stream_topic(&id), None).await
    {
        Ok(subscription) => subscription,
        Err(err) => {
            shared.refused_failure(
                crate::refusal::Reason::Unavailable,
                parts,
                format_args!("the event log failed: {err}"),
            );
            let _ = shared.sessions.delete(&id).await;
            return failure_response(
                set.newest(),
                None,
                &Failure::unavailable("the event log is unavailable"),
            );
        }
    };
    // The server's notifications (list changes, updates of subscribed URIs) travel on this
    // stream too: it is the only one the transport has. Taken from now, before the endpoint is
    // known to the client.
    let changes = match shared
        .server
        .changes(shared.sessions.namespace(), None)
        .await
    {
        Ok(changes) => Some(changes),
        Err(err) => {
            tracing::warn!(%err, "HTTP+SSE stream opened without server notifications");
            None
        }
    };
    let id_for_changes = id.clone();
    let endpoint = format!("{}?session_id={id}", shared.config.message_path);
    let head = mcp_wire::sse::Event::new(endpoint)
        .with_event("endpoint")
        .map(|e| Bytes::from(e.to_bytes()))
        .unwrap_or_default();
    // The record lives as long as the stream (renewed while it is open, deleted when the
    // client goes away).
    let (session, mut local) = StreamSession::open(
        &shared.sessions,
        &shared.cancels,
        &shared.server.settings().log,
        &shared.local_streams,
        id,
        hold,
        shared.config.sessions.ttl / 4,
    );
    // The sources, each polled only when it woke (`select_all`; a `select` would poll the idle
    // ones, such as the hub subscription and the change feed, at every event). An event is
    // `Some(frame)`; `None` ends the stream.
    let message = |payload: Bytes| body::event(Some("message"), None, &payload);
    // What the hub brings, then `None` once the subscription fails: the stream ends there, as
    // it did before the local channel was merged in.
    let hub = subscription
        .take_while(|event| std::future::ready(event.is_ok()))
        .filter_map(move |event| std::future::ready(event.ok().map(|e| Some(message(e.payload)))))
        .chain(stream::iter([None]))
        .boxed();
    // The local channel closes only when a client that does not read its stream let the
    // backlog fill up (`session::streams::LOCAL_BACKLOG`): the stream ends there too, once
    // drained.
    let local = stream::poll_fn(move |cx| local.poll_recv(cx))
        .map(move |payload| Some(message(payload)))
        .chain(stream::iter([None]))
        .boxed();
    let mut sources = vec![hub, local];
    if let Some(changes) = changes {
        // Server notifications; when their feed ends, the stream goes on without them.
        // Nothing is sent before `initialize` chose the session's revision.
        let wanted = session::changes::wanted(
            shared.server.clone(),
            shared.sessions.clone(),
            id_for_changes,
            None,
            set.clone(),
            changes,
        );
        sources.push(
            wanted
                .map(move |(_, json)| Some(message(json.into())))
                .boxed(),
        );
    }
    let events = stream::select_all(sources)
        .take_while(|frame| std::future::ready(frame.is_some()))
        .filter_map(move |frame| {
            // The stream owns its session: it ends when the client goes away.
            let _owned = &session;
            std::future::ready(frame)
        });
    let source = stream::iter([head]).chain(events).boxed();
    let stream = SseStream::new(source, shared.config.keep_alive)
        .until_closing(shared.closing.subscribe())
        .counted(&shared.server, "sse");
    sse_response(HttpBody::sse(stream))
}

/// `POST /messages?session_id=...`: 202, and the answers go to the stream (straight when this
/// worker holds it, else through the hub). What the message produces without waiting (most
/// calls: their whole reply) is sent before the 202; a task serves the rest, so a call that
/// waits (for a question's answer, a slow handler) never holds the POST open.
pub(crate) async fn post(
    shared: &Arc<Shared>,
    parts: &Head,
    body: impl ReadableBody,
) -> Response<HttpBody> {
    let set = match posted_json(shared.legacy.as_ref(), &parts.headers) {
        Ok(set) => set,
        Err(response) => return *response,
    };
    let render = set.newest();
    let Some(id) = parts.uri.query().and_then(session_of) else {
        return failure_response(
            render,
            None,
            &Failure::new(
                FailureKind::SessionRequired,
                "the message URI names no session_id",
            ),
        );
    };
    let caller = shared.caller_of(parts);
    let loaded = match session::load_own(&shared.sessions, id, caller.owner.as_deref(), true).await
    {
        Ok(loaded) => loaded,
        Err(SessionError::NotFound) => {
            return failure_response(render, None, &Failure::session_not_found());
        }
        Err(err) => {
            shared.refused_failure(
                crate::refusal::Reason::Unavailable,
                parts,
                format_args!("the session store failed: {err}"),
            );
            return failure_response(
                render,
                None,
                &Failure::unavailable("the session store is unavailable"),
            );
        }
    };
    let bytes = match read_body(shared, &parts.headers, body).await {
        Ok(bytes) => bytes,
        Err(err) => return shared.body_failure(err),
    };
    let id = loaded.id.clone();
    let inbound = Inbound {
        set,
        decoded: jsonrpc::decode(&bytes),
        headers: &[] as &[(&str, &str)],
        named: Named::Loaded {
            loaded,
            fallback: default_adapter(set),
        },
        caller,
        can_push: true,
        path: parts.uri.path(),
    };
    drop(bytes);
    let prepared = match session::prepare(shared.pipeline(), inbound).await {
        // A call the token lacks a scope for is refused before the message is accepted: its
        // 403 challenge names the scopes and this endpoint's metadata, so the client can step
        // up (the stream would carry no challenge).
        Err(refusal) if matches!(refusal.why, Refused::Scope(_)) => {
            return refusal_response(&refusal);
        }
        // So is a call over a rate limit: its 429 and `Retry-After` tell an HTTP client to
        // wait before it posts again (the JSON-RPC error is the body).
        Err(refusal) if matches!(&refusal.why, Refused::Failure(f) if f.kind == FailureKind::RateLimited) =>
        {
            return refusal_response(&refusal);
        }
        prepared => prepared,
    };
    match prepared {
        Ok(prepared) => {
            let (mut reply, bound) = prepared.run();
            // Served here while nothing waits: most calls end in their first poll, and then
            // no task is made for them (a task and its box cost two allocations glibc serves
            // from its slow path when many messages are in flight).
            let mut delivery = delivery_of(shared, &id, None);
            let Some(pending) = serve_ready(&mut delivery, &mut reply, &bound) else {
                return status_only(StatusCode::ACCEPTED);
            };
            let local = delivery.local.take();
            // Boxed before it is spawned: tokio moves a task's future (and its output) through
            // its stages by value, five copies per message; a box is moved as a pointer. The
            // task holds the reply and its session, not the prepared message besides.
            let serving = serve_message(
                shared.clone(),
                id,
                Rest {
                    pending,
                    local,
                    reply,
                    bound,
                },
                shared.calls.start(),
                shared.cancelling.subscribe(),
            );
            tokio::spawn(Box::pin(serving));
        }
        Err(refusal) => {
            let mut delivery = delivery_of(shared, &id, None);
            if let Err(bytes) = delivery.send_local(refusal.encode().to_bytes().into()) {
                let shared = shared.clone();
                let guard = shared.calls.start();
                tokio::spawn(async move {
                    let _guard = guard;
                    delivery_of(&shared, &id, None).send(bytes).await;
                });
            }
        }
    }
    status_only(StatusCode::ACCEPTED)
}

/// Where the messages of one POST to session `id` go (see [`Delivery`]).
fn delivery_of<'a>(
    shared: &'a Shared,
    id: &'a str,
    local: Option<Option<mpsc::Sender<Bytes>>>,
) -> Delivery<'a> {
    let log = &*shared.server.settings().log;
    Delivery::new(&shared.local_streams, &shared.sessions, log, id, local)
}

/// What [`serve_ready`] left to the task: the reply's next item is not ready, or the item it
/// took needs the store to settle, or the message it made needs the hub to travel.
enum Pending {
    Reply,
    Settle(Outgoing),
    Send(Bytes),
}

/// Takes the reply's items while they are ready and sends them into this worker's stream of
/// the session. `None` when the reply ended so; else what is left to a task, which then takes
/// the same path ([`Delivery`]) so the order within the call holds.
fn serve_ready(delivery: &mut Delivery<'_>, reply: &mut Reply, bound: &Bound) -> Option<Pending> {
    use futures::FutureExt as _;
    loop {
        let item = match reply.next().now_or_never() {
            None => return Some(Pending::Reply),
            Some(None) => return None,
            Some(Some(item)) => item,
        };
        if item.is_response() && bound.stores(&item) {
            return Some(Pending::Settle(item));
        }
        if let Err(bytes) = delivery.send_local(item.into_bytes().into()) {
            return Some(Pending::Send(bytes));
        }
    }
}

/// A posted message's reply as its task takes it over from [`serve_ready`].
struct Rest {
    pending: Pending,
    local: Option<mpsc::Sender<Bytes>>,
    reply: Reply,
    bound: Bound,
}

/// Serves the rest of one posted message and sends what it produces to the stream: through
/// its local channel when this worker holds it, else through its topic. The session is
/// settled (after `initialize`, `logging/setLevel`) before the response goes out, so the
/// client's next message, on any worker, sees it; other refusals travel on the stream too.
/// Stops when the endpoint shuts down (`cancelling`).
///
/// A function returning an `async` block that uses its captures in place (a moved argument
/// would sit in the future twice), and whose serving part borrows them.
#[allow(
    clippy::manual_async_fn,
    reason = "an `async fn` keeps its arguments twice in its future"
)]
fn serve_message(
    shared: Arc<Shared>,
    id: Arc<str>,
    rest: Rest,
    guard: DetachedCall,
    mut cancelling: watch::Receiver<bool>,
) -> impl Future<Output = ()> + Send + 'static {
    async move {
        let Rest {
            pending,
            local,
            mut reply,
            bound,
        } = rest;
        let serving = async {
            let mut delivery = delivery_of(&shared, &id, Some(local));
            let first = match pending {
                Pending::Reply => None,
                Pending::Settle(item) => Some(item),
                Pending::Send(bytes) => {
                    delivery.send(bytes).await;
                    None
                }
            };
            let mut items = stream::iter(first).chain(&mut reply);
            while let Some(item) = items.next().await {
                if item.is_response()
                    && let Err(refusal) = bound.settle(&shared.sessions, &item).await
                {
                    // A change the store did not take is not reported as done: the client
                    // gets the store failure, with the request's id, instead.
                    delivery.send(refusal.encode().to_bytes().into()).await;
                    continue;
                }
                delivery.send(item.into_bytes().into()).await;
            }
        };
        tokio::select! {
            () = serving => {}
            _ = cancelling.wait_for(|c| *c) => {}
        }
        drop(guard);
    }
}

/// The `session_id` of a query string.
fn session_of(query: &str) -> Option<&str> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("session_id="))
        .filter(|id| !id.is_empty())
}
