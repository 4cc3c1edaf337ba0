//! HTTP+SSE, the transport of 2024-11-05: `GET /sse` opens the stream and names the POST URI
//! in an `endpoint` event; every POST there gets 202 and its answers travel on the stream,
//! through the hub (a per-stream topic), so the POST may land on any worker.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt as _;
use futures::stream::{self};
use http::request::Parts;
use http::{Response, StatusCode};
use mcp_adapters::{Adapter, AdapterSet, Failure, FailureKind};
use mcp_hub::{Subscription, Topic};
use mcp_wire::jsonrpc;

use crate::dispatch::{Context, Outgoing};
use crate::http::body::{self, HttpBody, SseStream};
use crate::http::cancel;
use crate::http::session::{Loaded, SessionError, SessionRecord};
use crate::http::{
    Accepts, BodyError, Shared, failure_response, first_id, is_json, sse_response, status_only,
};

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
pub(crate) async fn open(shared: &Arc<Shared>, parts: &Parts) -> Response<HttpBody> {
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
        ..SessionRecord::default()
    };
    let id = match shared.sessions.create(&record).await {
        Ok(id) => id,
        Err(err) => {
            tracing::error!(%err, "session store failure");
            return failure_response(
                set.newest(),
                None,
                &Failure::internal("the session store is unavailable"),
            );
        }
    };
    let topic = shared.sessions.stream_topic(&id);
    let log = shared.server.registry.log.clone();
    // Subscribe before the client can know the endpoint: nothing published for it is missed.
    let subscription = match Subscription::start(log, topic.clone(), None).await {
        Ok(subscription) => subscription,
        Err(err) => {
            tracing::error!(%err, "event log failure");
            let _ = shared.sessions.delete(&id).await;
            return failure_response(
                set.newest(),
                None,
                &Failure::internal("the event log is unavailable"),
            );
        }
    };
    // The server's notifications (list changes, updates of subscribed URIs) travel on this
    // stream too: it is the only one the transport has. Taken from now, before the endpoint is
    // known to the client.
    let changes = match shared
        .server
        .snapshot()
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
    // The record lives as long as the stream: renew it while the stream is open, even when
    // no POST comes for longer than the TTL.
    let renew = {
        let shared = shared.clone();
        let id = id.clone();
        tokio::spawn(async move {
            let period = shared.config.session_ttl / 4;
            loop {
                tokio::time::sleep(period).await;
                match shared.sessions.renew(&id).await {
                    Err(SessionError::NotFound) => return,
                    Err(err) => tracing::warn!(%err, "could not renew an HTTP+SSE session"),
                    Ok(()) => {}
                }
            }
        })
    };
    let cleanup = Cleanup {
        shared: shared.clone(),
        id,
        topic,
        renew,
    };
    let events = subscription
        .take_while(|event| std::future::ready(event.is_ok()))
        .filter_map(move |event| {
            // The stream owns the cleanup: it runs when the client goes away.
            let _owned = &cleanup;
            let framed = event
                .ok()
                .map(|event| body::event(Some("message"), None, &event.payload));
            std::future::ready(framed)
        });
    let source = match changes {
        Some(changes) => {
            let notifications =
                session_notifications(shared.clone(), set.clone(), id_for_changes, changes);
            stream::iter([head])
                .chain(stream::select(events, notifications))
                .boxed()
        }
        None => stream::iter([head]).chain(events).boxed(),
    };
    let stream =
        SseStream::new(source, shared.config.keep_alive).until_closing(shared.closing.subscribe());
    sse_response(HttpBody::sse(stream))
}

/// The notifications an HTTP+SSE session wants, rendered by the revision its `initialize`
/// chose: the list changes its capabilities announce and updates of the URIs it subscribed to,
/// both read from the session record at each change so a subscription made on any worker
/// counts. Nothing is sent before `initialize`.
fn session_notifications(
    shared: Arc<Shared>,
    set: AdapterSet,
    id: String,
    changes: crate::notify::ChangeStream,
) -> impl futures::Stream<Item = Bytes> + Send + 'static {
    changes
        .take_while(|item| std::future::ready(item.is_ok()))
        .filter_map(move |item| {
            let shared = shared.clone();
            let set = set.clone();
            let id = id.clone();
            async move {
                let (_, change) = item.ok()?;
                let loaded = shared.sessions.load(&id).await.ok()?;
                let adapter = loaded
                    .record
                    .version
                    .as_deref()
                    .and_then(|v| set.by_version(v))?;
                let filter = shared
                    .server
                    .session_filter(adapter, loaded.record.subscriptions.iter().cloned());
                if !filter.matches(&change) {
                    return None;
                }
                let message = serde_json::to_vec(&change.to_message(adapter, None)).ok()?;
                Some(body::event(Some("message"), None, &message))
            }
        })
}

/// Forgets an HTTP+SSE session and its topic when its stream ends.
struct Cleanup {
    shared: Arc<Shared>,
    id: String,
    topic: Topic,
    renew: tokio::task::JoinHandle<()>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.renew.abort();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let shared = self.shared.clone();
        let id = std::mem::take(&mut self.id);
        let topic = self.topic.clone();
        runtime.spawn(async move {
            shared.cancels.forget(&id);
            let _ = shared.sessions.delete(&id).await;
            let _ = shared.server.registry.log.delete(&topic).await;
        });
    }
}

/// `POST /messages?session_id=...`: 202, and the answers go to the stream through the hub.
pub(crate) async fn post(
    shared: &Arc<Shared>,
    parts: &Parts,
    body: impl Future<Output = Result<Bytes, BodyError>>,
) -> Response<HttpBody> {
    let Some(set) = &shared.legacy else {
        return status_only(StatusCode::NOT_FOUND);
    };
    let render = set.newest();
    if !is_json(&parts.headers) {
        return failure_response(
            render,
            None,
            &Failure::new(
                FailureKind::UnsupportedMediaType,
                "Content-Type must be application/json",
            ),
        );
    }
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
    let loaded = match shared.sessions.load(id).await {
        Ok(loaded) if loaded.record.sse => loaded,
        Ok(_) | Err(SessionError::NotFound) => {
            return failure_response(render, None, &Failure::session_not_found());
        }
        Err(err) => {
            tracing::error!(%err, "session store failure");
            return failure_response(
                render,
                None,
                &Failure::internal("the session store is unavailable"),
            );
        }
    };
    let bytes = match body.await {
        Ok(bytes) => bytes,
        Err(err) => return shared.body_failure(err),
    };
    let guard = shared.call_guard();
    let shared = shared.clone();
    let set = set.clone();
    let id = id.to_owned();
    let mut cancelling = shared.cancelling.subscribe();
    tokio::spawn(async move {
        let _guard = guard;
        tokio::select! {
            () = serve_message(&shared, &set, id, loaded, &bytes) => {}
            _ = cancelling.wait_for(|c| *c) => {}
        }
    });
    status_only(StatusCode::ACCEPTED)
}

/// Serves one posted message and publishes what it produces to the stream's topic. The
/// session record is saved (after `initialize`, `logging/setLevel`) before the response goes
/// out, so the client's next message, on any worker, sees it.
async fn serve_message(
    shared: &Arc<Shared>,
    set: &AdapterSet,
    id: String,
    loaded: Loaded,
    bytes: &[u8],
) {
    let topic = shared.sessions.stream_topic(&id);
    let log = &shared.server.registry.log;
    let publish = |bytes: Vec<u8>| async {
        if let Err(err) = log.publish(&topic, Bytes::from(bytes)).await {
            tracing::warn!(%err, "could not publish to an HTTP+SSE stream");
        }
    };
    let decoded = jsonrpc::decode(bytes);
    let stored = loaded
        .record
        .version
        .clone()
        .unwrap_or_else(|| default_adapter(set).version().to_owned());
    let adapter = match set.select_http(&decoded, &[] as &[(&str, &str)], None, Some(&stored)) {
        Ok(selected) => selected.adapter,
        Err(rejected) => {
            let encoded = rejected
                .adapter
                .encode_failure(first_id(&decoded), &rejected.failure);
            publish(encoded.to_bytes()).await;
            return;
        }
    };
    let cancelled = cancel::cancelled_ids(&decoded);
    if !cancelled.is_empty() {
        // A call of this session runs for an earlier message, here or on another worker.
        let cancel_topic = shared.sessions.cancel_topic(&id);
        shared
            .cancels
            .cancel(log, &cancel_topic, &id, &cancelled)
            .await;
    }
    let items = adapter.decode(decoded);
    let snapshot = loaded.record.snapshot(shared.server.revisions());
    // Replies to questions pushed in this session are accepted only from this session.
    let ctx = Context::for_session(snapshot, true, shared.sessions.namespace().clone())
        .with_session(id.clone());
    // While the call runs, a `notifications/cancelled` of its session reaches it (a body
    // without a request has nothing to cancel).
    let _registered = if cancel::has_request(&items) {
        let cancel_topic = shared.sessions.cancel_topic(&id);
        Some(shared.cancels.register(log, cancel_topic, &id, &ctx).await)
    } else {
        None
    };
    let mut reply = shared.server.handle_decoded(adapter, items, &ctx);
    while let Some(item) = reply.next().await {
        if item.is_response() {
            save(shared, &id, &loaded, &ctx, &item).await;
        }
        publish(item.to_bytes()).await;
    }
}

async fn save(shared: &Arc<Shared>, id: &str, loaded: &Loaded, ctx: &Context, response: &Outgoing) {
    if matches!(response, Outgoing::Response(e) if e.message.get("error").is_some()) {
        return;
    }
    if !ctx.inspect_session(|now| loaded.record.would_change(&now)) {
        return;
    }
    let result = shared
        .sessions
        .update(id, loaded.clone(), |record| {
            ctx.inspect_session(|now| record.absorb(&now))
        })
        .await;
    if let Err(err) = result {
        tracing::warn!(%err, "could not save an HTTP+SSE session change");
    }
}

/// The `session_id` of a query string.
fn session_of(query: &str) -> Option<&str> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("session_id="))
        .filter(|id| !id.is_empty())
}
