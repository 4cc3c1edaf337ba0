//! Streamable HTTP: POST, GET and DELETE on one path.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt as _;
use futures::stream::{self, BoxStream};
use http::request::Parts;
use http::{HeaderValue, Response, StatusCode};
use mcp_adapters::{
    Adapter, AdapterSet, Failure, FailureKind, Selected, SelectedBy, SelectionInput,
};
use mcp_hub::Cursor;
use mcp_wire::jsonrpc::{self, Decoded};
use mcp_wire::names::headers as header_names;

use crate::dispatch::{Context, Outgoing, Reply};
use crate::http::body::{self, HttpBody, SseStream};
use crate::http::cancel::{self, Registered};
use crate::http::session::{Loaded, SessionError, SessionRecord};
use crate::http::{
    Accepts, BodyError, SESSION_HEADER, Shared, bodiless_failure, failure_response, first_id,
    is_json, session_header, sse_response, status_only,
};
use crate::notify::Change;

/// The session a request runs in.
struct Bound {
    adapter: Adapter,
    /// The stored session, for requests of a session.
    session: Option<Loaded>,
    /// The request is `initialize`: a session is minted if it succeeds.
    initialize: bool,
    /// The id of an `initialize` request, for the failure when its session cannot be stored.
    id: Option<jsonrpc::Id>,
    /// The request's principal, as session records keep it.
    owner: Option<String>,
}

/// `POST`: one message or batch in, JSON or SSE out.
pub(crate) async fn post(
    shared: &Arc<Shared>,
    parts: &Parts,
    body: impl Future<Output = Result<Bytes, BodyError>>,
) -> Response<HttpBody> {
    let Some(set) = &shared.streamable else {
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
    let accepts = Accepts::of(&parts.headers);
    if !accepts.json && !accepts.sse {
        return failure_response(
            render,
            None,
            &Failure::new(
                FailureKind::NotAcceptable,
                "Accept must allow application/json or text/event-stream",
            ),
        );
    }
    let bytes = match body.await {
        Ok(bytes) => bytes,
        Err(err) => return shared.body_failure(err),
    };
    let decoded = jsonrpc::decode(&bytes);
    drop(bytes);
    let bound = match bind(shared, set, parts, &decoded).await {
        Ok(bound) => bound,
        Err(response) => return response,
    };
    if let Some(Loaded { id, .. }) = &bound.session {
        // A call of this session runs in an earlier request, here or on another worker.
        let cancelled = cancel::cancelled_ids(&decoded);
        if !cancelled.is_empty() {
            let topic = shared.sessions.cancel_topic(id);
            let log = &shared.server.settings().log;
            shared.cancels.cancel(log, &topic, id, &cancelled).await;
        }
    }
    let adapter = bound.adapter;
    // The registry as it is now: the header checks agree with what the call is served from.
    let server = shared.server.served();
    let items = adapter.decode_http(decoded, &parts.headers, server.registry.view(adapter));
    let snapshot = bound
        .session
        .as_ref()
        .map(|loaded| loaded.record.load(shared.server.revisions()))
        .unwrap_or_default();
    let mut ctx = Context::for_session(snapshot, accepts.sse, shared.sessions.namespace().clone());
    if let Some(principal) = crate::auth::of_request(parts) {
        // Every call of this request acts for the token's principal.
        let hide = shared.config.auth.as_ref().is_some_and(|a| a.hides_tools());
        let binding = crate::auth::binding_of(parts, principal);
        ctx = ctx.with_auth_binding(principal.clone(), binding, hide);
        if let Some((id, refusal)) =
            shared.missing_scope_in(&server, parts.uri.path(), &items, principal)
        {
            return crate::http::auth_refusal(adapter, id, false, &refusal);
        }
    }
    if let Some(Loaded { id, .. }) = &bound.session {
        // Replies to questions pushed in this session are accepted only from this session.
        ctx = ctx.with_shared_session(id.clone());
    }
    // While the call runs, a `notifications/cancelled` of its session reaches it (a body
    // without a request has nothing to cancel).
    let registered = match &bound.session {
        Some(Loaded { id, .. }) if cancel::has_request(&items) => {
            let topic = || shared.sessions.cancel_topic(id);
            let log = &shared.server.settings().log;
            let (count, first) = cancel::requests(&items);
            match shared.cancels.register(log, topic, id, &ctx, count).await {
                Ok(registered) => Some(registered),
                Err(busy) => return failure_response(adapter, first, &busy.failure()),
            }
        }
        _ => None,
    };
    let mut reply = server.handle(
        crate::Input::Decoded {
            adapter,
            body: items,
        },
        &ctx,
    );
    let stream_first = accepts.sse && (shared.config.prefer_sse || !accepts.json);
    let Some(first) = reply.next().await else {
        return status_only(StatusCode::ACCEPTED);
    };
    let mut minted = None;
    if first.is_response() {
        match settle(shared, &bound, &ctx, &first).await {
            Ok(id) => minted = id,
            Err(response) => return response,
        }
        if !stream_first {
            let status = first.status().unwrap_or(StatusCode::OK);
            let mut response = crate::http::json_response(status, first.into_bytes());
            add_session_header(&mut response, minted.as_deref());
            return response;
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
        if let Err(response) = settle(shared, &bound, &ctx, &last).await {
            return response;
        }
        let status = last.status().unwrap_or(StatusCode::OK);
        return crate::http::json_response(status, last.into_bytes());
    }
    let source = call_stream(shared, adapter, bound, ctx, first, reply, registered);
    let stream = SseStream::new(source, shared.config.keep_alive).counted(&shared.server, "post");
    let mut response = sse_response(HttpBody::sse(stream));
    add_session_header(&mut response, minted.as_deref());
    response
}

/// The events of a call answered as SSE: the priming event (SSE polling), what the call sends,
/// its response. On revisions where closing the stream does not cancel, the call runs on in
/// its own task when the client goes away.
fn call_stream(
    shared: &Arc<Shared>,
    adapter: Adapter,
    bound: Bound,
    ctx: Context,
    first: Outgoing,
    reply: Reply,
    registered: Option<Registered>,
) -> BoxStream<'static, Bytes> {
    // POST streams are not resumable here; the priming id only tells the client so.
    let priming = adapter
        .features()
        .sse_polling
        .then(|| body::priming("0", shared.config.sse_retry_ms));
    let head = stream::iter(priming.into_iter().chain([frame(&first)]));
    let settled = first.is_response();
    let detached = !adapter.features().stream_close_cancels;
    let guard = detached.then(|| shared.call_guard());
    let mut cancelling = shared.cancelling.subscribe();
    let rest = stream::unfold(
        (reply, shared.clone(), bound, ctx, settled, registered),
        |(mut reply, shared, bound, ctx, settled, registered)| async move {
            let item = reply.next().await?;
            let mut bytes = None;
            if item.is_response() && !settled {
                // A change the store did not take is not reported as done: the client gets
                // the store failure (503's JSON-RPC error, with the request's id) instead.
                if let Err(failed) = save(&shared, &bound, &ctx, &item).await {
                    bytes = Some(body::event(None, None, &failed.encode().to_bytes()));
                }
            }
            let bytes = bytes.unwrap_or_else(|| frame(&item));
            Some((bytes, (reply, shared, bound, ctx, true, registered)))
        },
    );
    if !detached {
        return head.chain(rest).boxed();
    }
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

/// Saves what the call changed in the session, or mints the session of a successful
/// `initialize`. Returns the new session id.
async fn settle(
    shared: &Arc<Shared>,
    bound: &Bound,
    ctx: &Context,
    response: &Outgoing,
) -> Result<Option<String>, Response<HttpBody>> {
    if !bound.initialize && bound.session.is_none() {
        // Stateless (2026-07-28): nothing to save.
        return Ok(None);
    }
    let succeeded = matches!(response, Outgoing::Response(e) if !e.is_error());
    if bound.initialize {
        let mut record = SessionRecord {
            owner: bound.owner.clone(),
            ..SessionRecord::default()
        };
        let with_sessions = ctx.inspect_session(|now| {
            record.absorb(now);
            now.adapter.is_some_and(|a| a.has_sessions())
        });
        if !succeeded || !with_sessions {
            return Ok(None);
        }
        return match shared.sessions.create(&record).await {
            Ok(id) => Ok(Some(id)),
            Err(err) => Err(store_failure(bound.adapter, bound.id.clone(), &err)),
        };
    }
    save(shared, bound, ctx, response)
        .await
        .map_err(|failed| failed.response())?;
    Ok(None)
}

/// A session change the store did not take, as the revision renders it.
struct SaveFailed {
    adapter: Adapter,
    id: Option<jsonrpc::Id>,
    failure: Failure,
}

impl SaveFailed {
    fn encode(&self) -> mcp_adapters::Encoded {
        self.adapter.encode_failure(self.id.clone(), &self.failure)
    }

    fn response(&self) -> Response<HttpBody> {
        failure_response(self.adapter, self.id.clone(), &self.failure)
    }
}

/// Saves what the request changed in its session (nothing to do when it changed nothing). A
/// failure is the request's answer: the change (a subscription, a log level) is not stored,
/// so the client must not take it as done.
async fn save(
    shared: &Arc<Shared>,
    bound: &Bound,
    ctx: &Context,
    response: &Outgoing,
) -> Result<(), SaveFailed> {
    let Some(loaded) = &bound.session else {
        return Ok(());
    };
    match shared.sessions.save_changes(&loaded.id, loaded, ctx).await {
        Ok(_) => Ok(()),
        Err(err) => {
            tracing::error!(%err, "could not save a session change");
            Err(SaveFailed {
                adapter: bound.adapter,
                id: crate::http::response_id(response),
                failure: err.failure(),
            })
        }
    }
}

/// The session store failed: 503 (the client may retry), with the request's id when it has
/// one.
fn store_failure(
    adapter: Adapter,
    id: Option<jsonrpc::Id>,
    err: &SessionError,
) -> Response<HttpBody> {
    if !matches!(err, SessionError::Full(_) | SessionError::PrincipalFull(_)) {
        tracing::error!(%err, "session store failure");
    }
    failure_response(adapter, id, &err.failure())
}

fn add_session_header(response: &mut Response<HttpBody>, id: Option<&str>) {
    if let Some(value) = id.and_then(|id| HeaderValue::from_str(id).ok()) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
}

/// Picks the adapter and the session of a POST: at most one store read, none on revisions
/// without sessions.
async fn bind(
    shared: &Arc<Shared>,
    set: &AdapterSet,
    parts: &Parts,
    decoded: &Decoded,
) -> Result<Bound, Response<HttpBody>> {
    let reject = |rejected: mcp_adapters::Rejected| {
        failure_response(rejected.adapter, first_id(decoded), &rejected.failure)
    };
    let owner = crate::auth::owner_of(parts);
    let mut selected: Selected = set
        .select_http(decoded, &parts.headers, None, None)
        .map_err(reject)?;
    if selected.by != SelectedBy::Initialize && is_initialize(decoded) {
        // `initialize` never needs a session, whatever headers a client sends with it (some
        // send `MCP-Protocol-Version` on every request): its own protocolVersion negotiates.
        selected = set
            .select(&SelectionInput::from_body(decoded))
            .map_err(reject)?;
    }
    if selected.by == SelectedBy::Initialize {
        return Ok(Bound {
            adapter: selected.adapter,
            session: None,
            initialize: true,
            id: first_id(decoded),
            owner,
        });
    }
    if !selected.adapter.has_sessions() {
        // 2026-07-28: an Mcp-Session-Id header is ignored.
        return Ok(Bound {
            adapter: selected.adapter,
            session: None,
            initialize: false,
            id: None,
            owner,
        });
    }
    let Some(id) = session_header(&parts.headers) else {
        return Err(failure_response(
            selected.adapter,
            first_id(decoded),
            &Failure::new(
                FailureKind::SessionRequired,
                "this request needs the Mcp-Session-Id header that initialize returned",
            ),
        ));
    };
    let loaded = match shared.sessions.load(id).await {
        // Another principal's session is as good as none.
        Ok(loaded) if !loaded.record.sse && loaded.record.owner == owner => loaded,
        Ok(_) | Err(SessionError::NotFound) => {
            return Err(failure_response(
                selected.adapter,
                first_id(decoded),
                &Failure::session_not_found(),
            ));
        }
        Err(err) => return Err(store_failure(selected.adapter, first_id(decoded), &err)),
    };
    // The session speaks the revision it negotiated, and only that one.
    let adapter = set
        .confirm_session(selected, loaded.record.version.as_deref())
        .map_err(reject)?;
    Ok(Bound {
        adapter,
        session: Some(loaded),
        initialize: false,
        id: None,
        owner,
    })
}

/// The body is one `initialize` request.
fn is_initialize(decoded: &Decoded) -> bool {
    matches!(decoded, Decoded::Single(Ok(message)) if message.method().is_some_and(mcp_adapters::starts_session))
}

/// `GET`: the session's standalone SSE stream.
pub(crate) async fn get(shared: &Arc<Shared>, parts: &Parts) -> Response<HttpBody> {
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
    let owner = crate::auth::owner_of(parts);
    let loaded = match shared.sessions.load(id).await {
        Ok(loaded) if !loaded.record.sse && loaded.record.owner == owner => loaded,
        Ok(_) | Err(SessionError::NotFound) => {
            return bodiless_failure(render, &Failure::session_not_found());
        }
        Err(err) => return bodiless_store_failure(render, &err),
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
        return bodiless_failure(adapter, &shared.streams.full());
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
    let after = last_event_id
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<Cursor>().ok());
    if let Some(after) = after {
        tracing::debug!(after = %after, "GET stream resumed after Last-Event-ID");
    }
    let lists = server.session_filter(adapter, std::iter::empty::<String>());
    // A `Last-Event-ID` the log can no longer serve (its events fell out of retention, it is
    // from another log, or it is no cursor at all) is never skipped silently: the stream
    // starts from now, led by one notification of every kind this session could have missed
    // (each list it is told changes, each resource it subscribed to). Every event of this
    // stream says "re-read this", so re-reading everything is exactly what was lost.
    let resync = |why: &dyn std::fmt::Display| {
        tracing::info!(
            reason = %why,
            "a resumed stream's events are no longer retained; the client is told to re-read"
        );
        let subscribed = loaded.record.subscriptions.iter().cloned();
        missed_changes(&lists, subscribed)
            .filter_map(|change| {
                let message = serde_json::to_vec(&change.to_message(adapter, None)).ok()?;
                Some(body::event(None, None, &message))
            })
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
                tracing::error!(%err, "event log failure");
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
    let session = (shared.clone(), id.to_owned());
    let events = changes
        .take_while(|item| std::future::ready(item.is_ok()))
        .filter_map(move |item| {
            let (shared, id) = session.clone();
            let lists = lists.clone();
            async move {
                let (cursor, change) = item.ok()?;
                let wanted = match &change {
                    Change::ResourceUpdated { uri } => shared
                        .sessions
                        .load(&id)
                        .await
                        .is_ok_and(|loaded| loaded.record.subscriptions.contains(uri)),
                    other => lists.matches(other),
                };
                let message = serde_json::to_vec(&change.to_message(adapter, None)).ok()?;
                wanted.then(|| body::event(None, Some(&cursor.to_string()), &message))
            }
        });
    let source = stream::iter(priming.into_iter().chain(missed))
        .chain(events)
        // The stream holds its slot among the session's GET streams until it ends.
        .map(move |frame| {
            let _held = &slot;
            frame
        })
        .boxed();
    let stream = SseStream::new(source, shared.config.keep_alive)
        .until_closing(shared.closing.subscribe())
        .counted(&shared.server, "get");
    sse_response(HttpBody::sse(stream))
}

/// One change of every kind a GET stream with `lists` and `subscribed` resources delivers.
fn missed_changes(
    lists: &crate::notify::NotificationFilter,
    subscribed: impl Iterator<Item = String>,
) -> impl Iterator<Item = Change> {
    [
        Change::ToolsListChanged,
        Change::PromptsListChanged,
        Change::ResourcesListChanged,
    ]
    .into_iter()
    .filter(|change| lists.matches(change))
    .chain(subscribed.map(|uri| Change::ResourceUpdated { uri }))
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

/// [`store_failure`] for a request without a JSON-RPC message.
fn bodiless_store_failure(adapter: Adapter, err: &SessionError) -> Response<HttpBody> {
    if !matches!(err, SessionError::Full(_) | SessionError::PrincipalFull(_)) {
        tracing::error!(%err, "session store failure");
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
pub(crate) async fn delete(shared: &Arc<Shared>, parts: &Parts) -> Response<HttpBody> {
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
    let owner = crate::auth::owner_of(parts);
    if owner.is_some() {
        // Only the session's principal may end it; to anyone else it does not exist.
        match shared.sessions.load(id).await {
            Ok(loaded) if loaded.record.owner == owner => {}
            Ok(_) | Err(SessionError::NotFound) => {
                return bodiless_failure(render, &Failure::session_not_found());
            }
            Err(err) => return bodiless_store_failure(render, &err),
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
        Err(err) => bodiless_store_failure(render, &err),
    }
}
