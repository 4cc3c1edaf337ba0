//! The session-bound pipeline, between the transports and [`dispatch`](crate::dispatch).
//!
//! A session is a small record in the hub's state store ([`store`]), so any worker serves any
//! session; calls of a session register here while they run so a later
//! `notifications/cancelled` reaches them on any worker ([`cancel`]).
//!
//! Every request of a session-capable transport goes through two steps, whatever carries its
//! bytes (Streamable HTTP, HTTP+SSE):
//!
//! 1. [`prepare`]: select the revision once, load the session the request names and confirm
//!    that it speaks that revision, publish the cancellations it carries, decode the body once,
//!    build the call's [`Context`] from the session record, bind the principal, check its
//!    scopes, and register the calls for cancellation. A refusal comes back as a [`Refusal`]
//!    already in the words of the adapter that must render it.
//! 2. [`Prepared::run`] serves the decoded body, and [`Prepared::settle`] applies the one save
//!    rule to each response: an `initialize` mints the session when it succeeded; a request of
//!    a session saves whatever it changed in the session, whether its answer is a result or an
//!    error (as stdio's connection keeps what a failed request changed); a request without a
//!    session saves nothing. A change the store did not take replaces the response.
//!
//! Nothing here knows HTTP: the transports frame the bytes and render [`Refusal`]s.

pub(crate) mod cancel;
pub(crate) mod changes;
pub(crate) mod config;
pub(crate) mod held;
pub(crate) mod resume;
pub(crate) mod store;
pub(crate) mod streams;

use std::future::Future;
use std::sync::Arc;

use mcp_adapters::{
    Adapter, AdapterSet, DecodedBody, Failure, FailureKind, HeaderSource, Selected, SelectedBy,
    SelectionInput,
};
use mcp_wire::jsonrpc::{Decoded, Id, Message};

use crate::dispatch::{Context, Outgoing, Reply};
use crate::server::{Served, Server};

pub(crate) use cancel::{Cancels, Registered};
pub use config::{
    DEFAULT_MAX_CALLS_PER_SESSION, DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_CACHE,
    DEFAULT_SESSION_TTL, SessionConfig,
};
pub(crate) use held::PeerKey;
pub(crate) use store::{Hold, Loaded, SessionError, SessionRecord, Sessions};

/// What the pipeline works with: the server, its sessions and this worker's running calls,
/// and the resource server that checks scopes (protected endpoints only).
#[derive(Clone, Copy)]
pub(crate) struct Pipeline<'a> {
    pub(crate) server: &'a Server,
    pub(crate) sessions: &'a Sessions,
    pub(crate) cancels: &'a Arc<Cancels>,
    pub(crate) auth: Option<&'a crate::auth::ResourceServer>,
}

/// How a request names its session.
pub(crate) enum Named {
    /// By the request's `Mcp-Session-Id` header, looked up only once the revision is selected
    /// and has sessions: revisions without sessions ignore it, `initialize` needs none. A
    /// header given twice names no session.
    Header,
    /// A session its transport already loaded (an HTTP+SSE stream's), which speaks its stored
    /// revision, else `fallback` until `initialize` says otherwise.
    Loaded { loaded: Loaded, fallback: Adapter },
}

/// Who sends a request: the principal the resource server accepted, with its binding and the
/// digest session records keep.
#[derive(Default)]
pub(crate) struct Caller {
    pub(crate) principal: Option<(Arc<mcp_auth::Principal>, Arc<str>)>,
    pub(crate) owner: Option<Arc<str>>,
    /// The client's address (behind trusted proxies, the one they report), which rate limits
    /// key an anonymous caller by; set only when the server has rate limits.
    pub(crate) peer: Option<PeerKey>,
}

impl Caller {
    /// The caller of an HTTP request, as the resource server left it in its facts.
    pub(crate) fn of(facts: &crate::auth::RequestFacts) -> Self {
        match crate::auth::principal_of(facts) {
            Some((principal, binding, owner)) => Self {
                principal: Some((principal, binding)),
                owner: Some(owner),
                peer: None,
            },
            None => Self {
                principal: None,
                owner: None,
                peer: None,
            },
        }
    }
}

/// One request, as its transport hands it to [`prepare`].
pub(crate) struct Inbound<'a, H: ?Sized> {
    /// The revisions this transport serves.
    pub(crate) set: &'a AdapterSet,
    pub(crate) decoded: Decoded,
    /// The headers the revision reads (none for HTTP+SSE).
    pub(crate) headers: &'a H,
    pub(crate) named: Named,
    pub(crate) caller: Caller,
    /// The transport can carry messages before the response (SSE).
    pub(crate) can_push: bool,
    /// The resource a scope challenge names.
    pub(crate) path: &'a str,
}

/// Why a request is not served, in the words of the adapter that renders it.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) adapter: Adapter,
    pub(crate) id: Option<Id>,
    pub(crate) why: Refused,
    /// The seconds the client is told to wait before it retries (`Retry-After`), if any.
    pub(crate) retry_after: Option<u64>,
}

/// What a [`Refusal`] says.
#[derive(Debug)]
pub(crate) enum Refused {
    /// A JSON-RPC failure (selection, session, store, too many calls).
    Failure(Failure),
    /// The principal lacks a scope: the resource server's challenge goes with it.
    Scope(crate::auth::AuthRefusal),
}

impl Refusal {
    fn failure(adapter: Adapter, id: Option<Id>, failure: Failure) -> Self {
        Self {
            adapter,
            id,
            why: Refused::Failure(failure),
            retry_after: None,
        }
    }

    /// The session store failed: 503 (the client may retry), noted in `refusals` (a limit
    /// was noted where it was hit).
    pub(crate) fn store(
        adapter: Adapter,
        id: Option<Id>,
        err: &SessionError,
        refusals: &crate::refusal::Refusals,
    ) -> Self {
        if !err.is_expected() {
            refusals.note_failure(
                crate::refusal::Reason::Unavailable,
                None,
                format_args!("the session store failed: {err}"),
            );
        }
        Self {
            retry_after: err.retry_after(),
            ..Self::failure(adapter, id, err.failure())
        }
    }

    /// The failure as one JSON-RPC message (a scope refusal without its challenge).
    pub(crate) fn encode(&self) -> mcp_adapters::Encoded {
        match &self.why {
            Refused::Failure(failure) => self.adapter.encode_failure(self.id.clone(), failure),
            Refused::Scope(refusal) => self.adapter.encode_failure(
                self.id.clone(),
                &Failure::new(FailureKind::InsufficientScope, refusal.reason.clone()),
            ),
        }
    }
}

/// A request ready to run: its decoded body, the registry it was decoded against, and the
/// session it is bound to.
pub(crate) struct Prepared {
    pub(crate) bound: Bound,
    body: DecodedBody,
    served: Served,
}

/// The session a request runs in, kept until its responses are settled.
pub(crate) struct Bound {
    pub(crate) adapter: Adapter,
    pub(crate) ctx: Context,
    /// The stored session, for requests of a session.
    session: Option<Loaded>,
    /// The request is `initialize` without a session: one is minted if it succeeds.
    initialize: bool,
    /// The id of such an `initialize`, for the failure when its session cannot be stored.
    id: Option<Id>,
    /// The request's principal, as session records keep it.
    owner: Option<Arc<str>>,
    /// The client's address, which a session minted without a principal is counted for;
    /// set by the transport for an `initialize` only (see [`Bound::is_initialize`]).
    pub(crate) peer: Option<PeerKey>,
    /// The id of the body's first request, in a session (what a resumed POST stream names
    /// when the worker running the call stopped).
    pub(crate) call_id: Option<Id>,
    /// Keeps the calls reachable by `notifications/cancelled` while they run.
    _registered: Option<Registered>,
    /// Keeps the session busy (never evicted) while the request runs; `None` when another
    /// worker minted the session.
    _hold: Option<Hold>,
}

/// Selects, loads, confirms, decodes, binds and registers one request (see the module
/// documentation); a refusal is rendered by the adapter it names.
// Inlined into its transports: the future it returns is then built in place rather than
// copied into theirs.
#[inline(always)]
pub(crate) fn prepare<'a, H>(
    pipeline: Pipeline<'a>,
    inbound: Inbound<'a, H>,
) -> impl Future<Output = Result<Prepared, Refusal>> + 'a
where
    H: HeaderSource + ?Sized,
{
    // Taken apart before the future is built: an `async fn` would keep `inbound` and its
    // parts side by side in every request's future.
    let Inbound {
        set,
        decoded,
        headers,
        named,
        caller,
        can_push,
        path,
    } = inbound;
    async move {
        let (adapter, session, initialize, hold) =
            match bind(pipeline, set, headers, named, &caller, &decoded) {
                Ok(picked) => picked,
                Err(Unbound::Refused(refusal)) => return Err(*refusal),
                // Boxed: the store's path is the rare one, and its state would otherwise
                // enlarge the future of every request.
                Err(Unbound::Stored(selected, id)) => {
                    Box::pin(bind_stored(pipeline, set, selected, id, &caller, &decoded))
                        .await
                        .map_err(|refusal| *refusal)?
                }
            };
        let id = initialize.then(|| first_id(&decoded)).flatten();
        if let Some(Loaded { id, .. }) = &session {
            // A call of this session runs in an earlier request, here or on another worker.
            let cancelled = cancel::cancellations(&decoded);
            if !cancelled.is_empty() {
                let topic = pipeline.sessions.cancel_topic(id);
                let log = &pipeline.server.settings().log;
                // Boxed: rare, and its state would enlarge every request's future.
                Box::pin(pipeline.cancels.cancel(log, &topic, id, &cancelled)).await;
            }
        }
        // The registry as it is now: the header checks agree with what the call is served from.
        let served = pipeline.server.served();
        let mut items = adapter.decode_http(decoded, headers, served.registry.view(adapter));
        header_trace(&mut items, headers);
        let snapshot = session
            .as_ref()
            .map(|loaded| loaded.record.load(pipeline.server.revisions()))
            .unwrap_or_default();
        let mut ctx =
            Context::for_session(snapshot, can_push, pipeline.sessions.namespace().clone());
        if let Some((principal, binding)) = caller.principal {
            // Every call of this request acts for the token's principal.
            let hide = pipeline.auth.is_some_and(|a| a.hides_tools());
            if let Some((id, refusal)) =
                missing_scope(pipeline.auth, &served, path, &items, &principal)
            {
                pipeline.server.settings().refusals.note(
                    crate::refusal::Reason::InsufficientScope,
                    None,
                    format_args!("{}", refusal.reason),
                );
                return Err(Refusal {
                    adapter,
                    id,
                    why: Refused::Scope(refusal),
                    retry_after: None,
                });
            }
            ctx = ctx.with_auth_binding(principal, binding, hide);
        }
        if let Some(limiter) = &pipeline.server.settings().limiter {
            // Before anything runs or is registered: a refused call costs no handler and no task.
            let refusals = &pipeline.server.settings().refusals;
            let who = (caller.owner.as_ref(), caller.peer);
            // The common case, a token of this worker's lease, builds no future.
            if !limiter.admit_leased(&items, || limit_key(who)) {
                // Boxed: only when a lease ran out; its state would enlarge every
                // request's future.
                Box::pin(limited(limiter, adapter, &items, who, refusals)).await?;
            }
        }
        if let Some(Loaded { id, .. }) = &session {
            // Replies to questions pushed in this session are accepted only from this session.
            ctx = ctx.with_shared_session(id.clone());
        }
        // While the call runs, a `notifications/cancelled` of its session reaches it (a body
        // without a request has nothing to cancel).
        let (registered, call_id) = match &session {
            Some(Loaded { id, .. }) if cancel::has_request(&items) => {
                let topic = || pipeline.sessions.cancel_topic(id);
                let log = &pipeline.server.settings().log;
                let (count, first) = cancel::requests(&items);
                match pipeline.cancels.register(log, topic, id, &ctx, count).await {
                    Ok(registered) => (Some(registered), first),
                    Err(busy) => {
                        pipeline.server.settings().refusals.note(
                            crate::refusal::Reason::MaxCallsPerSession,
                            None,
                            format_args!("{busy}"),
                        );
                        return Err(Refusal::failure(adapter, first, busy.failure()));
                    }
                }
            }
            _ => (None, None),
        };
        Ok(Prepared {
            bound: Bound {
                adapter,
                ctx,
                session,
                initialize,
                id,
                owner: caller.owner,
                peer: None,
                call_id,
                _registered: registered,
                _hold: hold,
            },
            body: items,
            served,
        })
    }
}

/// Gives the calls of `items` whose `_meta` names no trace the request's `traceparent`
/// header (with its `tracestate` and `baggage`): `_meta` first, as the spec reserves it, the
/// HTTP header for a client that traces only its HTTP requests. Only while request spans are
/// recorded, which is all the context is for; a header given twice, or invalid, is ignored.
fn header_trace<H: HeaderSource + ?Sized>(items: &mut DecodedBody, headers: &H) {
    use mcp_adapters::{Incoming, Lookup};
    use mcp_wire::names::meta::{BAGGAGE, TRACEPARENT, TRACESTATE};
    use mcp_wire::trace::TraceContext;
    // Asked about the span (a filter may let the spans of the target through without its
    // events, as `otel::export_filter` does).
    if !tracing::enabled!(
        kind: tracing::metadata::Kind::SPAN,
        target: "mcp_server::request",
        tracing::Level::DEBUG
    ) {
        return;
    }
    let text = |name| match headers.lookup(name) {
        Lookup::One(value) => std::str::from_utf8(value).ok(),
        Lookup::Missing | Lookup::Repeated => None,
    };
    let Some(context) = text(TRACEPARENT)
        .and_then(|parent| TraceContext::from_parts(parent, text(TRACESTATE), text(BAGGAGE)))
    else {
        return;
    };
    for item in items.items_mut() {
        if let Incoming::Call(call) = item
            && TraceContext::from_params(&call.params).is_none()
        {
            context.write_params(&mut call.params);
        }
    }
}

/// The refusal of the first call of `items` a rate limit refuses, if any.
async fn limited(
    limiter: &Arc<crate::limit::Limiter>,
    adapter: Adapter,
    items: &DecodedBody,
    who: (Option<&Arc<str>>, Option<PeerKey>),
    refusals: &crate::refusal::Refusals,
) -> Result<(), Refusal> {
    let Some((id, verdict, method)) = limiter.first_refused(items, || limit_key(who)).await else {
        return Ok(());
    };
    let (failure, seconds) = verdict.refusal(refusals, &method);
    Err(Refusal {
        adapter,
        id,
        why: Refused::Failure(failure),
        retry_after: Some(seconds),
    })
}

/// Whose budget a call spends: the principal's, else the address's, else the one budget of
/// every anonymous caller without an address.
fn limit_key((owner, peer): (Option<&Arc<str>>, Option<PeerKey>)) -> crate::limit::CallerKey {
    use crate::limit::CallerKey;
    match (owner, peer) {
        (Some(owner), _) => CallerKey::Principal(owner.clone()),
        (None, Some(peer)) => CallerKey::Address(peer.ip()),
        (None, None) => CallerKey::Anonymous,
    }
}

/// What [`bind`] picked: the adapter, the session, whether the request is an `initialize`,
/// and the hold that keeps the session busy.
type Picked = (Adapter, Option<Loaded>, bool, Option<Hold>);

/// Why [`bind`] picked nothing yet.
enum Unbound<'a> {
    /// The request is refused.
    Refused(Box<Refusal>),
    /// The session named must be read from the store first ([`bind_stored`]).
    Stored(Selected, &'a str),
}

/// Picks the adapter and the session of a request: one selection, at most one store read,
/// none on revisions without sessions. Synchronous for the usual request (a session this
/// worker trusts its record of); [`Unbound::Stored`] when the store must be read.
fn bind<'a, H>(
    pipeline: Pipeline<'_>,
    set: &AdapterSet,
    headers: &'a H,
    named: Named,
    caller: &Caller,
    decoded: &Decoded,
) -> Result<Picked, Unbound<'a>>
where
    H: HeaderSource + ?Sized,
{
    let reject = |rejected: mcp_adapters::Rejected| {
        Unbound::Refused(Box::new(Refusal::failure(
            rejected.adapter,
            first_id(decoded),
            rejected.failure,
        )))
    };
    match named {
        Named::Loaded { loaded, fallback } => {
            // The session speaks the revision it negotiated (or the transport's own).
            let stored = loaded
                .record
                .version
                .as_deref()
                .unwrap_or_else(|| fallback.version());
            let adapter = set
                .select_http(decoded, headers, None, Some(stored))
                .map_err(reject)?
                .adapter;
            // The transport holds the session while its stream is open.
            return Ok((adapter, Some(loaded), false, None));
        }
        Named::Header => {}
    }
    let mut selected: Selected = set
        .select_http(decoded, headers, None, None)
        .map_err(reject)?;
    if selected.by != SelectedBy::Initialize && is_initialize(decoded) {
        // `initialize` never needs a session, whatever headers a client sends with it (some
        // send `MCP-Protocol-Version` on every request): its own protocolVersion negotiates.
        selected = set
            .select(&SelectionInput::from_body(decoded))
            .map_err(reject)?;
    }
    if selected.by == SelectedBy::Initialize {
        return Ok((selected.adapter, None, true, None));
    }
    if !selected.adapter.has_sessions() {
        // 2026-07-28: a session header is ignored.
        return Ok((selected.adapter, None, false, None));
    }
    let Some(id) = session_id_header(headers) else {
        return Err(Unbound::Refused(Box::new(Refusal::failure(
            selected.adapter,
            first_id(decoded),
            Failure::new(
                FailureKind::SessionRequired,
                "this request needs the Mcp-Session-Id header that initialize returned",
            ),
        ))));
    };
    // Busy from before it is read: a session a request is using is never evicted.
    let Some(found) = pipeline.sessions.load_held_now(id) else {
        return Err(Unbound::Stored(selected, id));
    };
    let found = own(found, caller.owner.as_deref(), false);
    confirm(pipeline, set, selected, found, decoded).map_err(Unbound::Refused)
}

/// The `Mcp-Session-Id` header's name, built once: a lookup by `&str` parses the name on every
/// request.
pub(crate) const SESSION_ID_HEADER: http::HeaderName =
    http::HeaderName::from_static("mcp-session-id");

/// The value of the request's one `Mcp-Session-Id` header, if it has exactly one and it is
/// text.
fn session_id_header<H: HeaderSource + ?Sized>(headers: &H) -> Option<&str> {
    match headers.lookup_name(&SESSION_ID_HEADER) {
        mcp_adapters::Lookup::One(value) => std::str::from_utf8(value).ok(),
        _ => None,
    }
}

/// [`bind`] when the session must be read from the store.
async fn bind_stored(
    pipeline: Pipeline<'_>,
    set: &AdapterSet,
    selected: Selected,
    id: &str,
    caller: &Caller,
    decoded: &Decoded,
) -> Result<Picked, Box<Refusal>> {
    let found = load_own_held(pipeline.sessions, id, caller.owner.as_deref(), false).await;
    confirm(pipeline, set, selected, found, decoded)
}

/// The end of [`bind`] once the session is read: the store's answer, then the revision it
/// negotiated.
fn confirm(
    pipeline: Pipeline<'_>,
    set: &AdapterSet,
    selected: Selected,
    found: Result<(Loaded, Option<Hold>), SessionError>,
    decoded: &Decoded,
) -> Result<Picked, Box<Refusal>> {
    let (loaded, hold) = found.map_err(|err| {
        let refusals = &pipeline.server.settings().refusals;
        Box::new(Refusal::store(
            selected.adapter,
            first_id(decoded),
            &err,
            refusals,
        ))
    })?;
    // The session speaks the revision it negotiated, and only that one.
    let adapter = set
        .confirm_session(selected, loaded.record.version.as_deref())
        .map_err(|rejected| {
            Box::new(Refusal::failure(
                rejected.adapter,
                first_id(decoded),
                rejected.failure,
            ))
        })?;
    Ok((adapter, Some(loaded), false, hold))
}

/// A session found for `owner` over a transport with (`sse`) or without an HTTP+SSE stream:
/// another principal's session, or one of the other transport, is as good as none.
fn own(
    (loaded, hold): (Loaded, Option<Hold>),
    owner: Option<&str>,
    sse: bool,
) -> Result<(Loaded, Option<Hold>), SessionError> {
    if loaded.record.sse == sse && loaded.record.owner.as_deref() == owner {
        Ok((loaded, hold))
    } else {
        Err(SessionError::NotFound)
    }
}

/// Loads session `id` for a request of `owner` over a transport with (`sse`) or without an
/// HTTP+SSE stream: another principal's session, or one of the other transport, is as good as
/// none ([`SessionError::NotFound`]).
pub(crate) async fn load_own(
    sessions: &Sessions,
    id: &str,
    owner: Option<&str>,
    sse: bool,
) -> Result<Loaded, SessionError> {
    let loaded = sessions.load(id).await?;
    own((loaded, None), owner, sse).map(|(loaded, _)| loaded)
}

/// [`load_own`], the session busy on this worker (never evicted) until the hold drops.
pub(crate) async fn load_own_held(
    sessions: &Sessions,
    id: &str,
    owner: Option<&str>,
    sse: bool,
) -> Result<(Loaded, Option<Hold>), SessionError> {
    let found = match sessions.load_held_now(id) {
        Some(found) => found,
        // Boxed: the store's path is the rare one, and its state would otherwise enlarge the
        // future of every request.
        None => Box::pin(sessions.load_held(id)).await?,
    };
    own(found, owner, sse)
}

impl Prepared {
    /// Serves the request: the stream of what it sends, then its response; the session it
    /// runs in, to settle each response.
    pub(crate) fn run(self) -> (Reply, Bound) {
        let Self {
            bound,
            body,
            served,
        } = self;
        let reply = served.handle(
            crate::Input::Decoded {
                adapter: bound.adapter,
                body,
            },
            &bound.ctx,
        );
        (reply, bound)
    }
}

impl Bound {
    /// Settles the session after `response`, by the one rule of every transport: an
    /// `initialize` mints the session when it succeeded (its id is returned); a request of a
    /// session saves what it changed, whatever its answer; other requests save nothing. A
    /// failure is the request's answer instead of `response`: the change (a subscription, a
    /// log level) is not stored, so the client must not take it as done.
    pub(crate) fn settle<'a>(
        &'a self,
        sessions: &'a Sessions,
        response: &Outgoing,
    ) -> impl Future<Output = Result<Option<String>, Refusal>> + use<'a> {
        use futures::future::{Either, FutureExt as _, ready};
        // Decided before any future is built: the usual request stores nothing, and a
        // store operation's state (boxed, it is rare) would otherwise sit in every request's
        // future.
        if !self.stores(response) {
            return Either::Left(ready(Ok(None)));
        }
        if self.initialize {
            let mut record = SessionRecord {
                owner: self.owner.as_deref().map(str::to_owned),
                ..SessionRecord::default()
            };
            self.ctx.inspect_session(|now| record.absorb(now));
            let (adapter, id, peer) = (self.adapter, self.id.clone(), self.peer);
            return Either::Right(
                async move {
                    match sessions.create(&record, peer).await {
                        Ok(id) => Ok(Some(id)),
                        Err(err) => Err(Refusal::store(adapter, id, &err, sessions.refusals())),
                    }
                }
                .boxed(),
            );
        }
        let Some(loaded) = &self.session else {
            // `stores` said a stateless request (2026-07-28) saves nothing.
            return Either::Left(ready(Ok(None)));
        };
        let (adapter, id) = (self.adapter, response_id(response));
        Either::Right(
            async move {
                match sessions.save_changes(&loaded.id, loaded, &self.ctx).await {
                    Ok(()) => Ok(None),
                    Err(err) => {
                        tracing::error!(%err, "could not save a session change");
                        Err(Refusal::failure(adapter, id, err.failure()))
                    }
                }
            }
            .boxed(),
        )
    }

    /// Whether [`settle`](Self::settle) after `response` goes to the store: an `initialize`
    /// that succeeded on a revision with sessions (minting), or a request that changed its
    /// session (saving). When it does not, `settle` is `Ok(None)` without waiting, so a
    /// transport may send `response` at once.
    pub(crate) fn stores(&self, response: &Outgoing) -> bool {
        if self.initialize {
            return matches!(response, Outgoing::Response(e) if !e.is_error())
                && self
                    .ctx
                    .inspect_session(|now| now.adapter.is_some_and(|a| a.has_sessions()));
        }
        // Stateless (2026-07-28): nothing to save. The usual call changes nothing of its
        // session either.
        self.session.as_ref().is_some_and(|loaded| {
            self.ctx
                .inspect_session(|now| loaded.record.would_change(now))
        })
    }

    /// The request is an `initialize` that mints its session when it succeeds.
    pub(crate) fn is_initialize(&self) -> bool {
        self.initialize
    }

    /// The id of the stored session the request runs in, if any.
    pub(crate) fn session_id(&self) -> Option<&Arc<str>> {
        self.session.as_ref().map(|loaded| &loaded.id)
    }
}

/// The first call of `items` the principal lacks a scope for (the resource server's
/// required and per-method scopes, and a tool's own, read from `served`), with its id and the
/// refusal, whose challenge names the metadata of the resource at `path`.
pub(crate) fn missing_scope(
    auth: Option<&crate::auth::ResourceServer>,
    served: &Served,
    path: &str,
    items: &DecodedBody,
    principal: &mcp_auth::Principal,
) -> Option<(Option<Id>, crate::auth::AuthRefusal)> {
    let auth = auth?;
    let registry = &served.registry;
    items.items().iter().find_map(|item| {
        let mcp_adapters::Incoming::Call(call) = item else {
            return None;
        };
        let tool = (call.operation == mcp_adapters::Operation::CallTool && registry.scoped_tools)
            .then(|| call.target.as_deref().and_then(|name| registry.tool(name)))
            .flatten()
            .map(|entry| &entry.tool.scopes);
        if auth.grants(call, tool, principal) {
            return None;
        }
        let needed = auth.scopes_for_call(call, tool);
        auth.check_scopes_at(path, principal, &needed)
            .err()
            .map(|refusal| (call.id.clone(), refusal))
    })
}

/// The body is one `initialize` request.
fn is_initialize(decoded: &Decoded) -> bool {
    matches!(decoded, Decoded::Single(Ok(message)) if message.method().is_some_and(mcp_adapters::starts_session))
}

/// The id of a single request, so a refusal before decoding can still name it.
pub(crate) fn first_id(decoded: &Decoded) -> Option<Id> {
    match decoded {
        Decoded::Single(Ok(Message::Request(request))) => Some(request.id.clone()),
        _ => None,
    }
}

/// The id of a single response (read back from its bytes: only for the rare failure that
/// replaces a response after it was encoded).
pub(crate) fn response_id(response: &Outgoing) -> Option<Id> {
    let Outgoing::Response(encoded) = response else {
        return None;
    };
    #[derive(serde::Deserialize)]
    struct WithId {
        id: Option<Id>,
    }
    serde_json::from_slice::<WithId>(&encoded.to_bytes())
        .ok()
        .and_then(|message| message.id)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mcp_adapters::{LogLevel, Revision};
    use mcp_hub::{MemoryHub, Namespace};

    use super::*;

    fn sessions() -> Sessions {
        Sessions::new(
            Arc::new(MemoryHub::default()),
            Namespace::root(),
            Duration::from_secs(3600),
            None,
        )
    }

    /// A request of a stored session whose call set the log level to `error` and was then
    /// answered with `response`.
    fn bound(adapter: Adapter, loaded: Option<Loaded>, initialize: bool, level: bool) -> Bound {
        let mut now = loaded
            .as_ref()
            .map(|loaded| loaded.record.load(&AdapterSet::all()))
            .unwrap_or_default();
        if level {
            now.log_level = Some(LogLevel::Error);
        }
        if initialize {
            now.adapter = Some(adapter);
        }
        Bound {
            adapter,
            ctx: Context::for_session(now, false, Namespace::root()),
            session: loaded,
            initialize,
            id: None,
            owner: None,
            peer: None,
            call_id: None,
            _registered: None,
            _hold: None,
        }
    }

    fn answer(adapter: Adapter, error: bool) -> Outgoing {
        let id = Some(Id::Number(7));
        Outgoing::Response(if error {
            adapter.encode_failure(id, &Failure::unknown_method("nope"))
        } else {
            adapter.encode_result(
                Id::Number(7),
                mcp_adapters::Operation::Ping,
                false,
                serde_json::json!({}),
                &mcp_adapters::ResultContext::default(),
            )
        })
    }

    /// The one save rule, shared by Streamable HTTP and HTTP+SSE (both settle through
    /// `Bound::settle`): a request of a session saves what it changed whether it was answered
    /// with a result or an error. (HTTP+SSE used to skip the save after an error.)
    #[tokio::test]
    async fn a_session_change_is_saved_whatever_the_answer() {
        let sessions = sessions();
        let adapter = AdapterSet::all().get(Revision::V2025_11_25).unwrap();
        for error in [true, false] {
            let record = SessionRecord {
                version: Some(adapter.version().to_owned()),
                ..SessionRecord::default()
            };
            let id = sessions.create(&record, None).await.unwrap();
            let loaded = sessions.load(&id).await.unwrap();
            assert_eq!(loaded.record.log_level, None);
            let unchanged = bound(adapter, Some(loaded.clone()), false, false);
            assert!(
                !unchanged.stores(&answer(adapter, error)),
                "a request that changed nothing of its session stores nothing"
            );
            let bound = bound(adapter, Some(loaded), false, true);
            assert!(bound.stores(&answer(adapter, error)));
            let minted = bound
                .settle(&sessions, &answer(adapter, error))
                .await
                .unwrap();
            assert_eq!(minted, None, "a request of a session mints nothing");
            let saved = sessions.load(&id).await.unwrap();
            assert_eq!(
                saved.record.log_level.as_deref(),
                Some("error"),
                "answered with an error: {error}"
            );
        }
    }

    /// `initialize` mints its session only when it succeeded; a request without a session
    /// saves nothing.
    #[tokio::test]
    async fn initialize_mints_only_on_success_and_stateless_requests_save_nothing() {
        let sessions = sessions();
        let adapter = AdapterSet::all().get(Revision::V2025_11_25).unwrap();
        let failed = bound(adapter, None, true, false);
        assert!(!failed.stores(&answer(adapter, true)));
        assert_eq!(
            failed
                .settle(&sessions, &answer(adapter, true))
                .await
                .unwrap(),
            None
        );
        let succeeded = bound(adapter, None, true, false);
        assert!(succeeded.stores(&answer(adapter, false)));
        let id = succeeded
            .settle(&sessions, &answer(adapter, false))
            .await
            .unwrap()
            .expect("a session for a successful initialize");
        let loaded = sessions.load(&id).await.unwrap();
        assert_eq!(loaded.record.version.as_deref(), Some(adapter.version()));

        let stateless = AdapterSet::all().get(Revision::V2026_07_28).unwrap();
        let request = bound(stateless, None, false, true);
        assert!(!request.stores(&answer(stateless, false)));
        assert_eq!(
            request
                .settle(&sessions, &answer(stateless, false))
                .await
                .unwrap(),
            None
        );
    }

    #[test]
    fn only_one_text_session_header_names_a_session() {
        type Headers<'a> = &'a [(&'a str, &'a [u8])];
        let rows: [(Headers<'_>, Option<&str>); 5] = [
            (&[], None),
            (&[("Mcp-Session-Id", b"abc")], Some("abc")),
            (
                &[("mcp-session-id", b"abc"), ("Accept", b"*/*")],
                Some("abc"),
            ),
            (
                &[("Mcp-Session-Id", b"abc"), ("mcp-session-id", b"def")],
                None,
            ),
            (&[("Mcp-Session-Id", b"\xff\xfe")], None),
        ];
        for (headers, expected) in rows {
            assert_eq!(session_id_header(headers), expected, "{headers:?}");
        }
    }

    #[test]
    fn a_refusal_is_encoded_by_its_adapter() {
        let adapter = AdapterSet::all().get(Revision::V2025_03_26).unwrap();
        let refusal = Refusal::store(
            adapter,
            Some(Id::Number(3)),
            &SessionError::NotFound,
            &crate::refusal::Refusals::default(),
        );
        let message: serde_json::Value =
            serde_json::from_slice(&refusal.encode().to_bytes()).unwrap();
        assert_eq!(message["id"], 3);
        assert!(message["error"]["code"].is_i64(), "{message}");
    }
}
