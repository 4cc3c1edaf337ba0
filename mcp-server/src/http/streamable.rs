//! Streamable HTTP: POST, GET and DELETE on one path.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt as _;
use futures::stream::{self, BoxStream};
use http::{HeaderValue, Response, StatusCode};
use mcp_adapters::{Adapter, AdapterSet, Failure, FailureKind};
use mcp_hub::Cursor;
use mcp_wire::jsonrpc;
use mcp_wire::names::headers as header_names;

use crate::dispatch::{Outgoing, Reply};
use crate::http::body::{self, HttpBody, SseStream};
use crate::http::resume;
use crate::http::{
    Accepts, Head, ReadableBody, Shared, bodiless_failure, failure_response, posted_json,
    read_body, refusal_response, session_header, sse_response, status_only,
};
use crate::session::{self, Bound, Inbound, Named, Prepared, SessionError};

/// `POST`: one message or batch in, JSON or SSE out.
///
/// Two steps, each its own future, so a request's future holds the larger of the two rather
/// than both side by side: reading and preparing the body, then serving it.
///
/// Both are `async` blocks rather than `async fn`s, which keep their arguments twice.
#[allow(
    clippy::manual_async_fn,
    reason = "an `async fn` keeps its arguments twice in its future"
)]
pub(crate) fn post<'a>(
    shared: &'a Arc<Shared>,
    parts: &'a Head,
    body: impl ReadableBody,
) -> impl Future<Output = Response<HttpBody>> + 'a {
    async move {
        // Taken out of the `match` before serving: a scrutinee lives to the end of its
        // `match`, and would sit in the future beside the serving step.
        let (prepared, accepts) = match receive(shared, parts, body).await {
            Ok(received) => received,
            Err(response) => return response,
        };
        respond(shared, prepared, accepts).await
    }
}

/// Checks the request's head, reads and decodes its body, and prepares it in its session;
/// the response when it is refused.
#[allow(
    clippy::manual_async_fn,
    reason = "an `async fn` keeps its arguments twice in its future"
)]
// Inlined into `post`: the future it returns is then built in place, not copied into
// `post`'s state (likewise `respond` and `session::prepare`): 0.1-0.2k instructions per call.
#[inline(always)]
fn receive<'a>(
    shared: &'a Arc<Shared>,
    parts: &'a Head,
    body: impl ReadableBody,
) -> impl Future<Output = Result<(Prepared, Accepts), Response<HttpBody>>> + 'a {
    async move {
        let set = posted_json(shared.streamable.as_ref(), &parts.headers).map_err(|r| *r)?;
        let render = set.newest();
        let accepts = Accepts::of(&parts.headers);
        if !accepts.json && !accepts.sse {
            return Err(failure_response(
                render,
                None,
                &Failure::new(
                    FailureKind::NotAcceptable,
                    "Accept must allow application/json or text/event-stream",
                ),
            ));
        }
        let decoded = match read_body(shared, &parts.headers, body).await {
            Ok(bytes) => jsonrpc::decode(&bytes),
            Err(err) => return Err(shared.body_failure(err)),
        };
        let inbound = Inbound {
            set,
            decoded,
            headers: &parts.headers,
            named: Named::Header,
            caller: shared.caller_of(parts),
            can_push: accepts.sse,
            path: parts.uri.path(),
        };
        let mut prepared = session::prepare(shared.pipeline(), inbound)
            .await
            .map_err(|refusal| refusal_response(&refusal))?;
        if prepared.bound.is_initialize() {
            // The session it mints is counted for the client's address.
            prepared.bound.peer = shared.peer_of(parts);
        }
        Ok((prepared, accepts))
    }
}

/// Serves a prepared body: the response as JSON, or the stream of what the call sends.
#[inline(always)]
fn respond(
    shared: &Arc<Shared>,
    prepared: Prepared,
    accepts: Accepts,
) -> impl Future<Output = Response<HttpBody>> + '_ {
    use futures::FutureExt as _;
    use futures::future::{Either, ready};
    // Run before the future is built: it holds the reply and the session once, not the
    // prepared body besides.
    let (mut reply, bound) = prepared.run();
    let stream_first = accepts.sse && (shared.config.prefer_sse || !accepts.json);
    // Most calls end in their first poll: a JSON answer that stores nothing is written
    // without the serving future (building and moving it is most of what it would cost).
    let first = match reply.next().now_or_never() {
        Some(None) => return Either::Left(ready(status_only(StatusCode::ACCEPTED))),
        Some(Some(first)) if first.is_response() && !stream_first && !bound.stores(&first) => {
            return Either::Left(ready(json_answer(first, None)));
        }
        taken => taken.flatten(),
    };
    Either::Right(async move {
        let Some(first) = (match first {
            Some(first) => Some(first),
            None => reply.next().await,
        }) else {
            return status_only(StatusCode::ACCEPTED);
        };
        let mut minted = None;
        if first.is_response() {
            match bound.settle(&shared.sessions, &first).await {
                Ok(id) => minted = id,
                Err(refusal) => return refusal_response(&refusal),
            }
            if !stream_first {
                return json_answer(first, minted.as_deref());
            }
        } else if !accepts.sse {
            // Nothing but the result can travel in a JSON body: wait for it.
            let mut last = None;
            while let Some(item) = reply.next().await {
                if item.is_response() {
                    last = Some(item);
                }
            }
            let Some(last) = last else {
                return status_only(StatusCode::ACCEPTED);
            };
            let minted = match bound.settle(&shared.sessions, &last).await {
                Ok(minted) => minted,
                Err(refusal) => return refusal_response(&refusal),
            };
            return json_answer(last, minted.as_deref());
        }
        let source = call_stream(shared, bound, first, reply);
        let stream =
            SseStream::new(source, shared.config.keep_alive).counted(&shared.server, "post");
        let mut response = sse_response(HttpBody::sse(stream));
        add_session_header(&mut response, minted.as_deref());
        response
    })
}

/// The events of a call answered as SSE: the priming event (SSE polling), what the call sends,
/// its response. On revisions where closing the stream does not cancel, the call runs on in
/// its own task when the client goes away; where such streams also resume, and the call
/// outlives its first message, every event goes through the hub first (`resume.rs`).
fn call_stream(
    shared: &Arc<Shared>,
    bound: Bound,
    first: Outgoing,
    reply: Reply,
) -> BoxStream<'static, Bytes> {
    let adapter = bound.adapter;
    let features = adapter.features();
    let detached = !features.stream_close_cancels;
    // Only a call that outlives its first message is logged: a short call's stream (its
    // result first) costs the hub nothing.
    let resumable = detached
        && features.sse_resumable
        && !first.is_response()
        && shared.config.resumable_post_streams;
    let session = bound.session_id().filter(|_| resumable).cloned();
    let call_id = session.as_ref().and_then(|_| bound.call_id.clone());
    // A session is minted only with the response's headers: after the first event, a
    // response is settled but mints nothing.
    let settled = first.is_response() || bound.is_initialize();
    let rest = stream::unfold(
        (reply, shared.clone(), bound, settled),
        |(mut reply, shared, bound, settled)| async move {
            let item = reply.next().await?;
            let mut json = None;
            if item.is_response() && !settled {
                // A change the store did not take is not reported as done: the client gets
                // the store failure (503's JSON-RPC error, with the request's id) instead.
                if let Err(refusal) = bound.settle(&shared.sessions, &item).await {
                    json = Some(refusal.encode().to_bytes());
                }
            }
            let json = json.unwrap_or_else(|| item.to_bytes());
            Some((json, (reply, shared, bound, true)))
        },
    );
    if let Some(session) = session {
        return resume::detached(
            shared,
            adapter,
            session,
            call_id,
            first.to_bytes(),
            rest.boxed(),
        );
    }
    // A POST stream that does not resume: the priming id only tells the client so.
    let priming = features
        .sse_polling
        .then(|| body::priming("0", shared.config.sse_retry_ms));
    let head = stream::iter(priming.into_iter().chain([frame(&first)]));
    let rest = rest.map(|json| body::event(None, None, &json));
    if !detached {
        return head.chain(rest).boxed();
    }
    let guard = shared.calls.start();
    let mut cancelling = shared.cancelling.subscribe();
    // Disconnecting is not cancelling on this revision: the call runs to its end (or to the
    // shutdown deadline) whatever the client does.
    // Bounded: a client that reads slowly holds the call back (its progress coalesces, its
    // questions wait) instead of this task buffering what the client has not read.
    let (tx, rx) = tokio::sync::mpsc::channel(shared.server.settings().max_queued);
    let mut rest = rest.boxed();
    tokio::spawn(async move {
        let _guard = guard;
        // Set once the client is gone: the call runs on, its messages go nowhere.
        let mut tx = Some(tx);
        loop {
            let bytes = tokio::select! {
                next = rest.next() => match next {
                    Some(bytes) => bytes,
                    None => break,
                },
                _ = cancelling.wait_for(|c| *c) => break,
            };
            let Some(open) = &tx else { continue };
            tokio::select! {
                sent = open.send(bytes) => if sent.is_err() { tx = None },
                _ = cancelling.wait_for(|c| *c) => break,
            }
        }
    });
    head.chain(stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (b, rx))
    }))
    .boxed()
}

fn frame(item: &Outgoing) -> Bytes {
    body::event(None, None, &item.to_bytes())
}

/// A response item as a JSON body with its status, naming the session it minted.
fn json_answer(item: Outgoing, minted: Option<&str>) -> Response<HttpBody> {
    let status = item.status().unwrap_or(StatusCode::OK);
    let mut response = crate::http::json_response(status, item.into_bytes());
    add_session_header(&mut response, minted);
    response
}

fn add_session_header(response: &mut Response<HttpBody>, id: Option<&str>) {
    if let Some(value) = id.and_then(|id| HeaderValue::from_str(id).ok()) {
        response
            .headers_mut()
            .insert(session::SESSION_ID_HEADER, value);
    }
}

/// `GET`: the session's standalone SSE stream.
pub(crate) async fn get(shared: &Arc<Shared>, parts: &Head) -> Response<HttpBody> {
    let Some(set) = &shared.streamable else {
        return status_only(StatusCode::NOT_FOUND);
    };
    if !set.adapters().iter().any(|a| a.features().has_get_stream) {
        return allow_post_only();
    }
    let render = session_render(set, &parts.headers);
    if !Accepts::of(&parts.headers).sse {
        return bodiless_failure(
            render,
            &Failure::new(
                FailureKind::NotAcceptable,
                "the GET stream is text/event-stream",
            ),
        );
    }
    let Some(id) = session_header(&parts.headers) else {
        // A revision without a GET stream named by its header: 405, as its spec asks.
        let named = parts
            .headers
            .get(header_names::PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| set.by_version(v));
        if named.is_some_and(|a| !a.features().has_get_stream) {
            return allow_post_only();
        }
        return bodiless_failure(
            render,
            &Failure::new(
                FailureKind::SessionRequired,
                "the GET stream needs the Mcp-Session-Id header that initialize returned",
            ),
        );
    };
    let owner = crate::auth::owner_of(&parts.facts);
    // The session is busy (never evicted) while its stream is open.
    let (loaded, hold) =
        match session::load_own_held(&shared.sessions, id, owner.as_deref(), false).await {
            Ok(loaded) => loaded,
            Err(err) => return bodiless_store_failure(shared, parts, render, &err),
        };
    let adapter = loaded
        .record
        .version
        .as_deref()
        .and_then(|v| set.by_version(v))
        .unwrap_or(render);
    if !adapter.features().has_get_stream {
        return allow_post_only();
    }
    let Some(slot) = shared.streams.take(id) else {
        let failure = shared.streams.full();
        shared.refused(
            crate::refusal::Reason::MaxStreamsPerSession,
            parts,
            format_args!("{}", failure.message),
        );
        return bodiless_failure(adapter, &failure);
    };
    // The server's notifications (`Notifier`, runtime registry changes): list changes the
    // capabilities announce, and updates of the URIs the session subscribed to, read from its
    // record at each update so a subscription made on any worker takes effect. The SSE id is
    // the hub cursor; `Last-Event-ID` resumes on any worker within retention.
    let server = shared.server.clone();
    let namespace = shared.sessions.namespace().clone();
    let last_event_id = parts
        .headers
        .get("last-event-id")
        .filter(|_| adapter.features().sse_resumable);
    let last_text = last_event_id.and_then(|v| v.to_str().ok());
    if let Some((token, after)) = last_text.and_then(session::resume::parse_id) {
        // The id of an event of a call's POST stream: replay and follow that call.
        let hub = shared.call_hub();
        return match session::resume::follow(&hub, adapter, id, token, after).await {
            Ok(source) => {
                let source = source
                    .map(move |frame| {
                        let _held = &slot;
                        body::event(None, frame.id.as_deref(), &frame.json)
                    })
                    .boxed();
                let stream = SseStream::new(source, shared.config.keep_alive)
                    .until_closing(shared.closing.subscribe())
                    .counted(&shared.server, "get");
                sse_response(HttpBody::sse(stream))
            }
            Err(why) => bodiless_failure(adapter, &why.failure()),
        };
    }
    let after = last_text.and_then(|v| v.parse::<Cursor>().ok());
    if let Some(after) = after {
        tracing::debug!(after = %after, "GET stream resumed after Last-Event-ID");
    }
    // A `Last-Event-ID` the log can no longer serve (its events fell out of retention, it is
    // from another log, or it is no cursor at all) is never skipped silently: the stream
    // starts from now, led by one notification of every kind this session could have missed.
    let resync = |why: &dyn std::fmt::Display| {
        tracing::info!(
            reason = %why,
            "a resumed stream's events are no longer retained; the client is told to re-read"
        );
        session::changes::missed(&server, adapter, &loaded.record)
            .iter()
            .map(|message| body::event(None, None, message))
            .collect::<Vec<_>>()
    };
    let mut missed = Vec::new();
    let changes = match server.changes(&namespace, after).await {
        Ok(changes) => {
            if last_event_id.is_some() && after.is_none() {
                missed = resync(&"the Last-Event-ID is not an event id of this server");
            }
            changes
        }
        Err(lost) => match server.changes(&namespace, None).await {
            Ok(changes) => {
                missed = resync(&lost);
                changes
            }
            Err(err) => {
                shared.refused_failure(
                    crate::refusal::Reason::Unavailable,
                    parts,
                    format_args!("the event log failed: {err}"),
                );
                return bodiless_failure(
                    adapter,
                    &Failure::unavailable("the event log is unavailable"),
                );
            }
        },
    };
    let priming = adapter
        .features()
        .sse_polling
        .then(|| body::priming(&changes.cursor().to_string(), shared.config.sse_retry_ms));
    let events = session::changes::wanted(
        server,
        shared.sessions.clone(),
        id.to_owned(),
        Some(adapter),
        set.clone(),
        changes,
    )
    .map(|(cursor, message)| body::event(None, Some(&cursor.to_string()), &message));
    let source = stream::iter(priming.into_iter().chain(missed))
        .chain(events)
        // The stream holds its slot among the session's GET streams, and keeps the session
        // busy, until it ends.
        .map(move |frame| {
            let _held = (&slot, &hold);
            frame
        })
        .boxed();
    let stream = SseStream::new(source, shared.config.keep_alive)
        .until_closing(shared.closing.subscribe())
        .counted(&shared.server, "get");
    sse_response(HttpBody::sse(stream))
}

/// The adapter that renders failures of a `GET` or `DELETE`: the served revision its
/// `MCP-Protocol-Version` names if it has sessions, else the newest served one with sessions (404 for a lost
/// session is theirs).
fn session_render(set: &AdapterSet, headers: &http::HeaderMap) -> Adapter {
    headers
        .get(header_names::PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| set.by_version(v))
        .filter(Adapter::has_sessions)
        .or_else(|| set.adapters().iter().copied().find(Adapter::has_sessions))
        .unwrap_or_else(|| set.newest())
}

/// A session store failure of a request without a JSON-RPC message (`GET`, `DELETE`).
fn bodiless_store_failure(
    shared: &Shared,
    parts: &Head,
    adapter: Adapter,
    err: &SessionError,
) -> Response<HttpBody> {
    if !err.is_expected() {
        shared.refused_failure(
            crate::refusal::Reason::Unavailable,
            parts,
            format_args!("the session store failed: {err}"),
        );
    }
    bodiless_failure(adapter, &err.failure())
}

fn allow_post_only() -> Response<HttpBody> {
    let mut response = status_only(StatusCode::METHOD_NOT_ALLOWED);
    response
        .headers_mut()
        .insert(http::header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// `DELETE`: ends the session.
pub(crate) async fn delete(shared: &Arc<Shared>, parts: &Head) -> Response<HttpBody> {
    let Some(set) = &shared.streamable else {
        return status_only(StatusCode::NOT_FOUND);
    };
    if !set.adapters().iter().any(Adapter::has_sessions) {
        return allow_post_only();
    }
    let render = session_render(set, &parts.headers);
    let Some(id) = session_header(&parts.headers) else {
        return bodiless_failure(
            render,
            &Failure::new(
                FailureKind::SessionRequired,
                "DELETE needs the Mcp-Session-Id header of the session to end",
            ),
        );
    };
    let owner = crate::auth::owner_of(&parts.facts);
    if owner.is_some() {
        // Only the session's principal may end it; to anyone else it does not exist.
        match shared.sessions.load(id).await {
            Ok(loaded) if loaded.record.owner.as_deref() == owner.as_deref() => {}
            Ok(_) | Err(SessionError::NotFound) => {
                return bodiless_failure(render, &Failure::session_not_found());
            }
            Err(err) => return bodiless_store_failure(shared, parts, render, &err),
        }
    }
    match shared.sessions.delete(id).await {
        Ok(true) => {
            shared.cancels.forget(id);
            let topic = shared.sessions.stream_topic(id);
            let _ = shared.server.settings().log.delete(&topic).await;
            status_only(StatusCode::NO_CONTENT)
        }
        Ok(false) => bodiless_failure(render, &Failure::session_not_found()),
        Err(err) => bodiless_store_failure(shared, parts, render, &err),
    }
}
