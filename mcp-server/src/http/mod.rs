//! MCP over HTTP: Streamable HTTP (2025-03-26 and later) on one path, and the HTTP+SSE
//! transport of 2024-11-05 on two more, on hyper.
//!
//! [`HttpEndpoint`] is the whole endpoint as a [`tower_service::Service`] of
//! [`http::Request`]s, so it mounts in axum, hyper or any tower stack; [`serve`] and
//! [`serve_with_shutdown`] run it on a socket (HTTP/1.1 keep-alive, HTTP/2 when the client
//! asks, `TCP_NODELAY`, graceful shutdown).
//!
//! ```no_run
//! use mcp_server::{Json, Server, Tool};
//! # use schemars::JsonSchema; use serde::{Deserialize, Serialize};
//! # #[derive(Deserialize, JsonSchema)] struct Args { a: i64, b: i64 }
//! # #[derive(Serialize, JsonSchema)] struct Sum { sum: i64 }
//! # async fn add(args: Args) -> Json<Sum> { Json(Sum { sum: args.a + args.b }) }
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder("demo", "1.0").tool(Tool::new("add", add)).build()?;
//! // Streamable HTTP at /mcp, HTTP+SSE at /sse, until Ctrl-C or SIGTERM.
//! mcp_server::http::serve("127.0.0.1:8080", server).await?;
//! # Ok(()) }
//! ```
//!
//! # What the endpoint does
//!
//! | Request | Answer |
//! | --- | --- |
//! | `POST /mcp` | JSON, or SSE when the call sends something before its result (progress, logs, a pushed question) or [`HttpConfig::prefer_sse`] is on; `202` for notifications and responses |
//! | `GET /mcp` | the session's SSE stream (revisions with a GET stream); `405` on a server that serves only revisions without one |
//! | `DELETE /mcp` | ends the session (`204`) |
//! | `GET /sse`, `POST /messages?session_id=...` | HTTP+SSE: an `endpoint` event, then every answer on the stream: straight in when this worker holds it, through the hub when it is another's |
//! | `GET /healthz`, `GET /readyz` | the liveness probe (200 `ok`) and the readiness probe (200, or 503 when the hub fails or the endpoint drains), before every check below ([`HttpConfig::liveness_path`], [`HttpConfig::readiness_path`], [`HttpEndpoint::drain`]) |
//!
//! Transport failures, checked in this order: `Host` and `Origin` (403), method (405),
//! `Content-Type` (415), `Accept` (406), body size (413), then the revision's own checks
//! (selection, headers, `_meta`) with the adapters' codes and statuses; a session header that
//! names no live session gets 404, a missing one 400. Every decision about the revision reads
//! the adapter's flags (`has_sessions`, `has_get_stream`, `http_sse`, `sse_polling`,
//! `stream_close_cancels` ...), never a version string.
//!
//! Sessions are records in the server's [`StateStore`](mcp_hub::StateStore) (see
//! [`ServerBuilder::state_store`](crate::ServerBuilder::state_store)): negotiated revision, client
//! info and capabilities, log level and subscriptions, with a TTL renewed lazily. Workers that
//! share the store and the [`EventLog`](mcp_hub::EventLog) serve each other's sessions, streams
//! and pushed questions. Requests of 2026-07-28 never touch the store.
//!
//! # Limits
//!
//! Every resource a client can make the endpoint hold is bounded by a setting with a safe
//! default: sessions per endpoint, per client address and per principal, and calls in flight
//! per session ([`SessionConfig`](crate::SessionConfig), through [`HttpConfig::sessions`]: a
//! new session ends the least recently used idle one and gets 503 only when every one is in
//! use), GET streams per session
//! ([`max_streams_per_session`](HttpConfig::max_streams_per_session), 503 beyond it), and,
//! when the endpoint runs on its own socket, connections
//! ([`max_connections`](HttpConfig::max_connections): more wait in the listen backlog), the
//! time to send a request's head ([`header_read_timeout`](HttpConfig::header_read_timeout))
//! and the time a connection may stay without a request in flight
//! ([`idle_timeout`](HttpConfig::idle_timeout)). A session's hub topics (its HTTP+SSE stream,
//! its cancellations) are deleted with it, whether it is deleted or expires.

mod body;
mod config;
mod health;
mod legacy;
mod origin;
mod peer;
mod resume;
mod routes;
mod serve;
mod streamable;

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use bytes::Buf as _;
use bytes::Bytes;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use http::header::{ACCEPT, ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use mcp_adapters::{Adapter, AdapterSet, Failure, FailureKind};
use mcp_wire::jsonrpc::Id;
use tokio::sync::watch;

use crate::refusal::Reason;
use crate::server::Server;

pub use crate::listen::{HttpError, Tls};
#[cfg(feature = "metrics")]
pub use crate::metrics::serve_metrics;
pub use crate::session::{
    DEFAULT_MAX_CALLS_PER_SESSION, DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_CACHE, DEFAULT_SESSION_TTL,
};
pub use body::HttpBody;
pub use config::{
    DEFAULT_BODY_LIMIT, DEFAULT_DRAIN_PERIOD, DEFAULT_HEADER_READ_TIMEOUT,
    DEFAULT_HTTP2_KEEP_ALIVE, DEFAULT_IDLE_TIMEOUT, DEFAULT_KEEP_ALIVE, DEFAULT_LIVENESS_PATH,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_STREAMS_PER_SESSION, DEFAULT_POST_STREAM_LEASE,
    DEFAULT_READINESS_PATH, DEFAULT_SHUTDOWN_DEADLINE, DEFAULT_SSE_RETRY_MS, HttpConfig,
};
pub use peer::{InvalidProxy, TrustedProxy};
pub use routes::Routes;
pub use serve::{serve, serve_tls_with_shutdown, serve_with, serve_with_shutdown, shutdown_signal};

use crate::session::first_id;
use crate::session::{Cancels, Pipeline, Sessions};

/// The MCP endpoint: Streamable HTTP and HTTP+SSE for one [`Server`], as a
/// [`tower_service::Service`].
///
/// Cheap to clone (shared). Build it with [`HttpEndpoint::new`] and mount it, or run it with
/// [`serve_with_shutdown`]. Requests to paths other than the configured ones get 404: when
/// mounting it under another path, set [`HttpConfig::path`] to the full path the requests
/// carry.
///
/// ```no_run
/// use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
/// use mcp_server::Server;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = Server::builder("demo", "1.0").build()?;
/// let endpoint = HttpEndpoint::new(server, HttpConfig::new().max_sessions(1000));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// serve_with_shutdown(listener, endpoint, shutdown_signal()).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct HttpEndpoint {
    shared: Arc<Shared>,
}

impl fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEndpoint")
            .field("server", &self.shared.server)
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

/// A request's head as the endpoint serves it: hyper's parts, and what the listener and the
/// resource server learned of the request ([`RequestFacts`](crate::auth::RequestFacts): the
/// address it came from, set by our serve loops and not by a server that mounts the endpoint,
/// and the principal). The facts travel beside the parts, not in their extensions, where one
/// value costs three allocations per request. It dereferences to the parts.
pub(crate) struct Head {
    pub(crate) parts: http::request::Parts,
    pub(crate) facts: crate::auth::RequestFacts,
}

impl std::ops::Deref for Head {
    type Target = http::request::Parts;

    fn deref(&self) -> &http::request::Parts {
        &self.parts
    }
}

pub(crate) struct Shared {
    pub(crate) server: Server,
    pub(crate) config: HttpConfig,
    /// The revisions Streamable HTTP serves: every served one (a client may also run
    /// 2024-11-05 semantics over Streamable HTTP).
    pub(crate) streamable: Option<AdapterSet>,
    /// The revisions HTTP+SSE serves: those with a handshake.
    pub(crate) legacy: Option<AdapterSet>,
    pub(crate) sessions: Sessions,
    /// Turns true when the endpoint shuts down: long-lived streams end.
    pub(crate) closing: watch::Sender<bool>,
    /// Turns true when the shutdown deadline passes: detached calls are cancelled.
    pub(crate) cancelling: watch::Sender<bool>,
    /// The calls running outside a request future (HTTP+SSE, resumable POST streams), so
    /// shutdown can wait for them.
    pub(crate) calls: Arc<crate::session::cancel::Detached>,
    /// The session calls running on this worker, for `notifications/cancelled`.
    pub(crate) cancels: Arc<Cancels>,
    /// The HTTP+SSE streams this worker holds, for answers to POSTs that land here.
    pub(crate) local_streams: Arc<crate::session::streams::LocalStreams>,
    /// The open GET streams of each session on this endpoint.
    pub(crate) streams: Arc<crate::session::streams::StreamSlots>,
    /// Draining, and the hub's last readiness answer (shared with the copy
    /// [`HttpEndpoint::bound_to`] makes, so [`HttpEndpoint::drain`] reaches the listener).
    pub(crate) health: Arc<health::Health>,
}

impl Shared {
    /// Where this endpoint's calls log their resumable streams.
    pub(crate) fn call_hub(&self) -> crate::session::resume::CallHub {
        let settings = self.server.settings();
        crate::session::resume::CallHub {
            namespace: self.sessions.namespace().clone(),
            log: settings.log.clone(),
            store: settings.states.store().clone(),
            lease: self.config.post_stream_lease,
            done_ttl: self.config.sessions.ttl,
        }
    }
}

impl HttpEndpoint {
    /// The endpoint of `server` with `config`.
    ///
    /// Sessions live in the server's state store and HTTP+SSE messages travel through its event
    /// log, so endpoints of servers that share a hub serve each other's clients.
    pub fn new(server: Server, config: HttpConfig) -> Self {
        Self::with_health(server, config, Arc::default())
    }

    fn with_health(server: Server, mut config: HttpConfig, health: Arc<health::Health>) -> Self {
        if let Some(auth) = &config.auth {
            // The HTTP+SSE endpoint is a resource of its own, with its own metadata.
            let legacy = config
                .legacy_sse
                .then_some((config.sse_path.as_str(), config.message_path.as_str()));
            let store = (
                server.settings().states.store().clone(),
                config.sessions.namespace.clone(),
            );
            config.auth = Some(auth.for_endpoint(&config.path, legacy, Some(store)));
        }
        let served = server.revisions();
        let streamable = Some(served.clone());
        let legacy = if config.legacy_sse {
            served.handshake_only().ok()
        } else {
            None
        };
        let (sessions, cancels) = config.sessions.build(&server);
        let streams = Arc::new(crate::session::streams::StreamSlots::new(
            config.max_streams_per_session,
        ));
        Self {
            shared: Arc::new(Shared {
                server,
                config,
                streamable,
                legacy,
                sessions,
                closing: watch::channel(false).0,
                cancelling: watch::channel(false).0,
                calls: Arc::default(),
                cancels,
                local_streams: Arc::default(),
                streams,
                health,
            }),
        }
    }

    /// The server behind the endpoint.
    pub fn server(&self) -> &Server {
        &self.shared.server
    }

    /// The endpoint's settings.
    pub fn config(&self) -> &HttpConfig {
        &self.shared.config
    }

    /// The same endpoint, told that it listens on `addr` (a loopback address restricts hosts
    /// and trusts localhost origins, see [`HttpConfig`]).
    pub(crate) fn bound_to(&self, addr: std::net::SocketAddr) -> Self {
        let mut config = self.shared.config.clone();
        config.bound_loopback = addr.ip().is_loopback();
        Self::with_health(
            self.shared.server.clone(),
            config,
            self.shared.health.clone(),
        )
    }

    /// Begins draining: from now on the readiness probe
    /// ([`HttpConfig::readiness_path`]) answers 503 `draining`, so load balancers send no
    /// new clients, while requests are served as before. An endpoint run by
    /// [`serve_with_shutdown`] (or its siblings) then keeps serving for
    /// [`HttpConfig::drain_period`] and shuts down as on its shutdown signal, which begins
    /// draining the same way. A mounted endpoint only reports it: stop the server it is
    /// mounted in yourself. Draining cannot be undone.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
    /// use mcp_server::Server;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = HttpConfig::new().drain_period(Duration::from_secs(5));
    /// let endpoint = HttpEndpoint::new(Server::builder("demo", "1.0").build()?, config);
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// let serving = tokio::spawn(serve_with_shutdown(listener, endpoint.clone(), std::future::pending()));
    /// // Later, on a deployment's signal: not ready at once, stopped 5 s later.
    /// endpoint.drain();
    /// serving.await??;
    /// # Ok(())
    /// # }
    /// ```
    pub fn drain(&self) {
        if self.shared.health.drain() {
            tracing::info!(
                period = ?self.shared.config.drain_period,
                "draining: the readiness probe reports not ready"
            );
        }
    }

    /// Whether the endpoint drains (see [`drain`](Self::drain)).
    pub fn is_draining(&self) -> bool {
        self.shared.health.is_draining()
    }

    /// Resolves once draining began.
    pub(crate) async fn drained(&self) {
        self.shared.health.drained().await;
    }

    /// Resolves when `signal` does, after ending the endpoint's long-lived streams: pass it as
    /// the graceful-shutdown signal of a server that mounts this endpoint (axum's
    /// `with_graceful_shutdown`, hyper-util's `GracefulShutdown`). Such servers wait for every
    /// response to end, and an SSE stream (`GET /mcp`, `GET /sse`, `subscriptions/listen`)
    /// only ends when the client leaves: without this, shutdown waits for the clients.
    /// [`serve_with_shutdown`] does this by itself. When `signal` resolves the endpoint
    /// begins draining ([`drain`](Self::drain)): the future resolves
    /// [`HttpConfig::drain_period`] later (at once by default), so the server keeps accepting
    /// meanwhile while the readiness probe (if routed to this endpoint) reports not ready.
    ///
    /// ```no_run
    /// use mcp_server::http::{HttpConfig, HttpEndpoint, shutdown_signal};
    /// use mcp_server::Server;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let endpoint = HttpEndpoint::new(Server::builder("demo", "1.0").build()?, HttpConfig::new());
    /// let app = axum::Router::new().route_service("/mcp", endpoint.clone());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    /// axum::serve(listener, app)
    ///     .with_graceful_shutdown(endpoint.shutdown_on(shutdown_signal()))
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn shutdown_on(
        &self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let endpoint = self.clone();
        async move {
            signal.await;
            endpoint.drain();
            let period = endpoint.shared.config.drain_period;
            if !period.is_zero() {
                tokio::time::sleep(period).await;
            }
            endpoint.close_streams();
        }
    }

    /// Ends long-lived streams now (they are not calls in flight).
    pub(crate) fn close_streams(&self) {
        self.shared.closing.send_replace(true);
        // `subscriptions/listen` streams end gracefully, with their result.
        self.shared.server.close_streams();
    }

    /// Cancels calls that still run (after the shutdown deadline).
    pub(crate) fn cancel_calls(&self) {
        self.shared.cancelling.send_replace(true);
    }

    /// Waits until no detached call runs.
    pub(crate) async fn calls_done(&self) {
        self.shared.calls.done().await;
    }

    /// Answers one request.
    ///
    /// The future owns what it needs (a handle on the endpoint, the request's parts and
    /// body), so it can be spawned or boxed as it is.
    pub fn handle<B>(
        &self,
        request: Request<B>,
    ) -> impl Future<Output = Response<HttpBody>> + Send + 'static + use<B>
    where
        B: hyper::body::Body + Send + 'static,
        B::Data: Send,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        self.handle_from(request, &crate::auth::RequestFacts::default())
    }

    /// [`handle`](Self::handle) for a request our listener accepted, with its connection's
    /// facts (the peer address, which per-source limits read).
    pub(crate) fn handle_from<B: ReadableBody>(
        &self,
        request: Request<B>,
        facts: &crate::auth::RequestFacts,
    ) -> impl Future<Output = Response<HttpBody>> + Send + 'static + use<B> {
        let (parts, body) = request.into_parts();
        let facts = facts.clone();
        self.clone().respond(Head { parts, facts }, body)
    }

    /// [`handle`](Self::handle) from the request's parts. An `async` block rather than an
    /// `async fn`: the block holds the endpoint, the parts and the body once, where an
    /// `async fn` keeps its arguments twice, and a server boxes this future for every
    /// request.
    #[allow(
        clippy::manual_async_fn,
        reason = "an `async fn` keeps its arguments twice in its future"
    )]
    fn respond<B>(
        self,
        mut parts: Head,
        mut body: B,
    ) -> impl Future<Output = Response<HttpBody>> + Send + 'static
    where
        B: ReadableBody,
    {
        async move {
            let shared = &self.shared;
            if health::Health::claims(shared, &parts) {
                // Boxed: the probe's state does not enlarge every request's future.
                return Box::pin(shared.health.answer(shared, &parts)).await;
            }
            if let Err(refusal) = origin::check(&shared.config, &parts.headers, &parts.uri) {
                let (reason, failure) = match refusal {
                    origin::Refusal::Origin => (
                        Reason::Origin,
                        Failure::new(FailureKind::OriginRejected, "Origin not allowed"),
                    ),
                    origin::Refusal::Host => (
                        Reason::Host,
                        Failure::new(FailureKind::OriginRejected, "Host not allowed"),
                    ),
                    origin::Refusal::BadHost => (
                        Reason::Host,
                        Failure::invalid_request("the request has more than one Host header"),
                    ),
                };
                shared.refused(reason, &parts, format_args!("{}", failure.message));
                return shared.transport_failure(failure);
            }
            if let Some(routes) = shared
                .config
                .routes
                .iter()
                .find(|routes| routes.claims(&parts.method, &parts.uri))
            {
                // Boxed, like every branch but a Streamable HTTP POST: a branch's state would
                // otherwise enlarge the future of every request.
                return Box::pin(serve_route(shared, routes.as_ref(), parts, body)).await;
            }
            if let Some(auth) = &shared.config.auth {
                let path = parts.uri.path();
                if let Some(metadata) = auth.metadata_at(path) {
                    return match parts.method {
                        Method::GET => metadata_response(metadata),
                        _ => method_not_allowed("GET"),
                    };
                }
                if shared.is_mcp_path(path) {
                    // Boxed: its state would otherwise enlarge the future of every request.
                    body = match Box::pin(authorize(shared, auth, &mut parts, body)).await {
                        Ok(body) => body,
                        Err(response) => return response,
                    };
                }
            }
            let config = &shared.config;
            if parts.uri.path() == config.path {
                return match parts.method {
                    Method::POST => streamable::post(shared, &parts, body).await,
                    Method::GET => Box::pin(streamable::get(shared, &parts)).await,
                    Method::DELETE => Box::pin(streamable::delete(shared, &parts)).await,
                    _ => method_not_allowed("GET, POST, DELETE"),
                };
            }
            // No `path` local either: one held across both awaits below would sit in every
            // request's future.
            if shared.legacy.is_some() {
                if parts.uri.path() == config.sse_path {
                    return match parts.method {
                        Method::GET => Box::pin(legacy::open(shared, &parts)).await,
                        _ => method_not_allowed("GET"),
                    };
                }
                if parts.uri.path() == config.message_path {
                    return match parts.method {
                        Method::POST => Box::pin(legacy::post(shared, &parts, body)).await,
                        _ => method_not_allowed("POST"),
                    };
                }
            }
            not_here(config, shared.legacy.is_some(), parts.uri.path())
        }
    }
}

/// Authorizes a request to an MCP path: the body back when the token is good (and the caller
/// recorded in the request's extensions), else the refusal's response.
async fn authorize<B: ReadableBody>(
    shared: &Shared,
    auth: &crate::auth::ResourceServer,
    parts: &mut Head,
    body: B,
) -> Result<B, Response<HttpBody>> {
    let path = parts.uri.path();
    let refusal = match auth
        .authenticate_owner(&parts.method, path, &parts.headers)
        .await
    {
        // A GET (stream, HTTP+SSE session) or DELETE names no call, so only the scopes every
        // request needs apply; a POST's calls are checked with their own scopes once decoded.
        Ok((principal, owner)) => {
            if parts.method != Method::POST
                && let Err(refusal) = auth.check_scopes_at(path, &principal, auth.required())
            {
                shared.refused_auth(parts, &refusal);
                return Err(shared.auth_failure(&parts.headers, None, true, &refusal));
            }
            // The handlers of the path read it from the request's facts: the principal with
            // what was computed of it.
            parts.facts.set_owner(owner);
            return Ok(body);
        }
        Err(refusal) => refusal,
    };
    shared.refused_auth(parts, &refusal);
    // A POST's error names its request (the body is read within the body limit, as any
    // POST's would be), so it fits the revision's schema; other methods have no id to give.
    let id = if parts.method == Method::POST {
        read_body(shared, &parts.headers, body)
            .await
            .ok()
            .and_then(|bytes| first_id(&mcp_wire::jsonrpc::decode(&bytes)))
    } else {
        None
    };
    let bodiless = parts.method != Method::POST;
    Err(shared.auth_failure(&parts.headers, id, bodiless, &refusal))
}

/// A request a mounted route claims: its body read within the limit, then the route.
async fn serve_route<B: ReadableBody>(
    shared: &Shared,
    routes: &dyn Routes,
    parts: Head,
    body: B,
) -> Response<HttpBody> {
    let bytes = match read_body(shared, &parts.headers, body).await {
        Ok(bytes) => bytes,
        Err(err) => return shared.body_failure(err),
    };
    let peer = parts.facts.peer();
    let response = routes
        .serve(peer, Request::from_parts(parts.parts, bytes))
        .await;
    if response.status() == StatusCode::TOO_MANY_REQUESTS {
        shared.server.settings().refusals.note(
            Reason::RateLimited,
            peer,
            format_args!("a mounted route's rate limit was reached"),
        );
    }
    response.map(HttpBody::full)
}

/// The 404 of a path this endpoint does not serve, saying which paths it does: an endpoint
/// mounted under another path than [`HttpConfig::path`] otherwise answers every request with
/// a bare 404. The path asked for is logged at DEBUG, never echoed.
fn not_here(config: &HttpConfig, legacy: bool, path: &str) -> Response<HttpBody> {
    tracing::debug!(path, served = %config.path, "no MCP endpoint at this path");
    let text = if legacy {
        format!(
            "Not found: this MCP endpoint serves {} (Streamable HTTP), {} and {} (HTTP+SSE). \
             Mounted elsewhere, set HttpConfig::path to the path requests carry.\n",
            config.path, config.sse_path, config.message_path
        )
    } else {
        format!(
            "Not found: this MCP endpoint serves {}. Mounted elsewhere, set HttpConfig::path \
             to the path requests carry.\n",
            config.path
        )
    };
    let mut response = Response::new(HttpBody::full(text.into_bytes()));
    *response.status_mut() = StatusCode::NOT_FOUND;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

impl<B> tower_service::Service<Request<B>> for HttpEndpoint
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<HttpBody>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        Box::pin(self.handle(request).map(Ok))
    }
}

/// Why a body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    TooLarge,
    Broken,
}

/// A request body the endpoint can read.
pub(crate) trait ReadableBody:
    hyper::body::Body<Data: Send, Error: std::error::Error + Send + Sync + 'static> + Send + 'static
{
}

impl<B> ReadableBody for B where
    B: hyper::body::Body<Data: Send, Error: std::error::Error + Send + Sync + 'static>
        + Send
        + 'static
{
}

/// Reads the body, refusing more than the configured limit (by `Content-Length` first).
pub(crate) async fn read_body<B>(
    shared: &Shared,
    headers: &HeaderMap,
    body: B,
) -> Result<Bytes, BodyError>
where
    B: ReadableBody,
{
    let limit = shared.config.body_limit;
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge);
    }
    collect_limited(body, limit).await
}

/// The body's bytes, or [`BodyError::TooLarge`] once more than `limit` arrived. By hand rather
/// than through `collect`: the usual body is one chunk, handed on without a copy or a list of
/// chunks.
async fn collect_limited<B>(body: B, limit: usize) -> Result<Bytes, BodyError>
where
    B: hyper::body::Body,
{
    let mut body = std::pin::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut more: Option<bytes::BytesMut> = None;
    let mut total = 0usize;
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let Ok(data) = frame.map_err(|_| BodyError::Broken)?.into_data() else {
            // Trailers: nothing to read.
            continue;
        };
        let mut data = data;
        total = total.saturating_add(data.remaining());
        if total > limit {
            return Err(BodyError::TooLarge);
        }
        let chunk = data.copy_to_bytes(data.remaining());
        match (&mut first, &mut more) {
            (None, None) => first = Some(chunk),
            (Some(head), None) => {
                let mut joined = bytes::BytesMut::with_capacity(head.len() + chunk.len());
                joined.extend_from_slice(head);
                joined.extend_from_slice(&chunk);
                first = None;
                more = Some(joined);
            }
            (_, Some(joined)) => joined.extend_from_slice(&chunk),
        }
    }
    Ok(match (first, more) {
        (_, Some(joined)) => joined.freeze(),
        (Some(head), None) => head,
        (None, None) => Bytes::new(),
    })
}

impl Shared {
    /// Notes a refusal of the request `parts` (its peer, when known, goes into the log line).
    pub(crate) fn refused(&self, reason: Reason, parts: &Head, detail: fmt::Arguments<'_>) {
        let peer = parts.facts.peer();
        self.server.settings().refusals.note(reason, peer, detail);
    }

    /// [`refused`](Self::refused) for a failure of the server's own (the hub): at WARN.
    pub(crate) fn refused_failure(&self, reason: Reason, parts: &Head, detail: fmt::Arguments<'_>) {
        let peer = parts.facts.peer();
        self.server
            .settings()
            .refusals
            .note_failure(reason, peer, detail);
    }

    /// Notes a refusal of the resource server: 401, 403 or 503 (its reason is a fixed
    /// sentence, never the token or the verifier's detail).
    fn refused_auth(&self, parts: &Head, refusal: &crate::auth::AuthRefusal) {
        let reason = match refusal.status {
            StatusCode::FORBIDDEN => Reason::InsufficientScope,
            StatusCode::SERVICE_UNAVAILABLE => Reason::Unavailable,
            _ => Reason::Unauthorized,
        };
        self.refused(reason, parts, format_args!("{}", refusal.reason));
    }

    /// A failure before any revision was chosen, rendered by the newest served adapter.
    /// Whether `path` is one of the endpoint's MCP paths (the ones authorization protects).
    fn is_mcp_path(&self, path: &str) -> bool {
        let config = &self.config;
        path == config.path
            || (self.legacy.is_some() && (path == config.sse_path || path == config.message_path))
    }

    /// A request the resource server refused: its status and challenge, with the JSON-RPC
    /// error of the revision the request names (`MCP-Protocol-Version`; none means
    /// 2025-03-26 where served).
    pub(crate) fn auth_failure(
        &self,
        headers: &HeaderMap,
        id: Option<Id>,
        bodiless: bool,
        refusal: &crate::auth::AuthRefusal,
    ) -> Response<HttpBody> {
        let served = self.server.revisions();
        let adapter = headers
            .get(mcp_wire::names::headers::PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok())
            .map_or_else(
                || served.get(mcp_adapters::Revision::ASSUMED),
                |v| served.by_version(v),
            )
            .unwrap_or_else(|| served.newest());
        auth_refusal(adapter, id, bodiless, refusal)
    }

    /// The client address a session without a principal is counted for (see
    /// [`HttpConfig::max_sessions_per_peer`]): `None` on a mounted endpoint, which does not
    /// know the connection's address. Read for the requests that mint a session only.
    pub(crate) fn peer_of(&self, parts: &Head) -> Option<crate::session::PeerKey> {
        let peer = parts.facts.peer()?.ip();
        let client = peer::client_address(peer, &parts.headers, &self.config.trusted_proxies);
        Some(crate::session::PeerKey::of(client))
    }

    /// Who sends a request: its principal, and its address when rate limits key by it.
    pub(crate) fn caller_of(&self, parts: &Head) -> crate::session::Caller {
        let mut caller = crate::session::Caller::of(&parts.facts);
        if caller.owner.is_none() && self.server.settings().limiter.is_some() {
            caller.peer = self.peer_of(parts);
        }
        caller
    }

    /// The session pipeline of this endpoint.
    pub(crate) fn pipeline(&self) -> Pipeline<'_> {
        Pipeline {
            server: &self.server,
            sessions: &self.sessions,
            cancels: &self.cancels,
            auth: self.config.auth.as_ref(),
        }
    }

    pub(crate) fn transport_failure(&self, failure: Failure) -> Response<HttpBody> {
        let adapter = self.server.revisions().newest();
        failure_response(adapter, None, &failure)
    }

    /// The failure a body read ended with.
    pub(crate) fn body_failure(&self, error: BodyError) -> Response<HttpBody> {
        #[cfg(feature = "metrics")]
        if let (BodyError::TooLarge, Some(metrics)) = (&error, &self.server.settings().metrics) {
            metrics.limit_hit("body_limit");
        }
        if let BodyError::TooLarge = error {
            self.server.settings().refusals.note(
                Reason::BodyLimit,
                None,
                format_args!(
                    "the body exceeds the limit of {} bytes",
                    self.config.body_limit
                ),
            );
        }
        self.transport_failure(match error {
            BodyError::TooLarge => Failure::new(
                FailureKind::PayloadTooLarge,
                format!(
                    "the body exceeds the limit of {} bytes",
                    self.config.body_limit
                ),
            ),
            BodyError::Broken => Failure::invalid_request("the request body could not be read"),
        })
    }
}

/// A JSON-RPC error response with the adapter's code and status.
pub(crate) fn failure_response(
    adapter: Adapter,
    id: Option<Id>,
    failure: &Failure,
) -> Response<HttpBody> {
    let encoded = adapter.encode_failure(id, failure);
    json_response(encoded.status, encoded.to_bytes())
}

/// The failure of a request that carries no JSON-RPC message (`GET`, `DELETE`), so there is
/// no request id to answer: a JSON-RPC error without an id on the revisions whose schema allows
/// one (2025-11-25 and later), and on the others (whose schemas require an id on every error,
/// and `null` is no id) the same HTTP status with the message as plain text, which is no
/// JSON-RPC message at all rather than one their schema refuses.
pub(crate) fn bodiless_failure(adapter: Adapter, failure: &Failure) -> Response<HttpBody> {
    let encoded = adapter.encode_failure(None, failure);
    if adapter.features().error_id_optional {
        return json_response(encoded.status, encoded.to_bytes());
    }
    let mut response = Response::new(HttpBody::full(failure.message.clone().into_bytes()));
    *response.status_mut() = encoded.status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

pub(crate) fn json_response(status: StatusCode, body: Vec<u8>) -> Response<HttpBody> {
    let mut response = Response::new(HttpBody::full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

pub(crate) fn status_only(status: StatusCode) -> Response<HttpBody> {
    let mut response = Response::new(HttpBody::empty());
    *response.status_mut() = status;
    response
}

/// The revisions a POST's transport serves (404 when the endpoint serves it not), after the
/// POST's `Content-Type` check (415 unless JSON).
pub(crate) fn posted_json<'a>(
    set: Option<&'a AdapterSet>,
    headers: &HeaderMap,
) -> Result<&'a AdapterSet, Box<Response<HttpBody>>> {
    let Some(set) = set else {
        return Err(Box::new(status_only(StatusCode::NOT_FOUND)));
    };
    if !is_json(headers) {
        return Err(Box::new(failure_response(
            set.newest(),
            None,
            &Failure::new(
                FailureKind::UnsupportedMediaType,
                "Content-Type must be application/json",
            ),
        )));
    }
    Ok(set)
}

/// A request the session pipeline refused, as its adapter renders it.
pub(crate) fn refusal_response(refusal: &crate::session::Refusal) -> Response<HttpBody> {
    let mut response = match &refusal.why {
        crate::session::Refused::Failure(failure) => {
            failure_response(refusal.adapter, refusal.id.clone(), failure)
        }
        crate::session::Refused::Scope(auth) => {
            auth_refusal(refusal.adapter, refusal.id.clone(), false, auth)
        }
    };
    with_retry_after(&mut response, refusal.retry_after);
    response
}

/// Adds `Retry-After: seconds` when there are any.
pub(crate) fn with_retry_after(response: &mut Response<HttpBody>, seconds: Option<u64>) {
    if let Some(seconds) = seconds {
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
    }
}

/// The response to a request the resource server refused, rendered by `adapter`: the
/// refusal's status, its `WWW-Authenticate` challenge, and the revision's JSON-RPC error
/// (for a `bodiless` request, one without a JSON-RPC message, as [`bodiless_failure`] renders
/// it).
pub(crate) fn auth_refusal(
    adapter: Adapter,
    id: Option<Id>,
    bodiless: bool,
    refusal: &crate::auth::AuthRefusal,
) -> Response<HttpBody> {
    let kind = match refusal.status {
        StatusCode::FORBIDDEN => FailureKind::InsufficientScope,
        StatusCode::SERVICE_UNAVAILABLE => FailureKind::Unavailable,
        _ => FailureKind::Unauthorized,
    };
    let failure = Failure::new(kind, refusal.reason.clone());
    let mut response = match id {
        Some(id) => failure_response(adapter, Some(id), &failure),
        None if bodiless => bodiless_failure(adapter, &failure),
        None => failure_response(adapter, None, &failure),
    };
    if let Some(challenge) = refusal.www_authenticate() {
        response
            .headers_mut()
            .insert(http::header::WWW_AUTHENTICATE, challenge);
    }
    if let Some(nonce) = refusal
        .dpop_nonce
        .as_deref()
        .and_then(|n| HeaderValue::from_str(n).ok())
    {
        response.headers_mut().insert("dpop-nonce", nonce);
    }
    if let Some(seconds) = refusal.retry_after {
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// The protected resource metadata (RFC 9728), readable from any origin (browser clients
/// discover it too).
fn metadata_response(metadata: Bytes) -> Response<HttpBody> {
    let mut response = json_response(StatusCode::OK, metadata.to_vec());
    response.headers_mut().insert(
        http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

fn method_not_allowed(allow: &'static str) -> Response<HttpBody> {
    let mut response = status_only(StatusCode::METHOD_NOT_ALLOWED);
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    response
}

/// The headers of an SSE response.
pub(crate) fn sse_response(body: HttpBody) -> Response<HttpBody> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// What the `Accept` header allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Accepts {
    pub(crate) json: bool,
    pub(crate) sse: bool,
}

impl Accepts {
    /// The values clients send most, read without parsing.
    fn common(value: &[u8]) -> Option<Self> {
        let both = Self {
            json: true,
            sse: true,
        };
        match value {
            b"application/json, text/event-stream"
            | b"text/event-stream, application/json"
            | b"application/json,text/event-stream"
            | b"*/*" => Some(both),
            b"application/json" => Some(Self {
                json: true,
                sse: false,
            }),
            b"text/event-stream" => Some(Self {
                json: false,
                sse: true,
            }),
            _ => None,
        }
    }

    /// Reads `Accept` (media ranges, wildcards, `q=0` excluded). No header accepts anything.
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        let all = headers.get_all(ACCEPT);
        let mut values = all.iter().peekable();
        if values.peek().is_none() {
            return Self {
                json: true,
                sse: true,
            };
        }
        let mut out = Self {
            json: false,
            sse: false,
        };
        if let Some(value) = values.peek()
            && let Some(common) = Self::common(value.as_bytes())
            && all.iter().nth(1).is_none()
        {
            return common;
        }
        for value in values {
            let Ok(text) = value.to_str() else { continue };
            for range in text.split(',') {
                let mut pieces = range.split(';');
                let media = pieces.next().unwrap_or("").trim();
                let refused = pieces.any(|p| {
                    let p = p.trim();
                    p.strip_prefix("q=")
                        .or_else(|| p.strip_prefix("Q="))
                        .and_then(|q| q.trim().parse::<f32>().ok())
                        .is_some_and(|q| q <= 0.0)
                });
                if refused {
                    continue;
                }
                let is = |name: &str| media.eq_ignore_ascii_case(name);
                if is("*/*") {
                    out.json = true;
                    out.sse = true;
                } else if is("application/*") || is("application/json") {
                    out.json = true;
                } else if is("text/*") || is("text/event-stream") {
                    out.sse = true;
                }
            }
        }
        out
    }
}

/// Whether `Content-Type` is `application/json` (parameters ignored).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return false;
    };
    if value.as_bytes() == b"application/json" {
        return true;
    }
    Some(value)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// The session id a request names, if any (and readable).
pub(crate) fn session_header(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(crate::session::SESSION_ID_HEADER)
        .and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(value: &str) -> Accepts {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, value.parse().unwrap());
        Accepts::of(&headers)
    }

    /// A body of these chunks, then an error if `broken`.
    fn chunked(
        chunks: &[&'static str],
        broken: bool,
    ) -> impl hyper::body::Body<Data = Bytes, Error = std::io::Error> + use<> {
        let mut frames: Vec<Result<hyper::body::Frame<Bytes>, std::io::Error>> = chunks
            .iter()
            .map(|c| Ok(hyper::body::Frame::data(Bytes::from_static(c.as_bytes()))))
            .collect();
        frames.push(Ok(hyper::body::Frame::trailers(HeaderMap::new())));
        if broken {
            frames.push(Err(std::io::Error::other("reset")));
        }
        http_body_util::StreamBody::new(futures::stream::iter(frames))
    }

    #[tokio::test]
    async fn bodies_are_read_whole_within_the_limit() {
        let read = |chunks: &[&'static str], limit| collect_limited(chunked(chunks, false), limit);
        assert_eq!(read(&[], 10).await.unwrap(), Bytes::new());
        assert_eq!(read(&["{}"], 10).await.unwrap(), Bytes::from("{}"));
        assert_eq!(
            read(&["{\"a\"", ":", "1}"], 10).await.unwrap(),
            Bytes::from("{\"a\":1}")
        );
        assert_eq!(read(&["12345", "67890"], 10).await.unwrap().len(), 10);
        assert!(matches!(
            read(&["12345", "67890", "1"], 10).await,
            Err(BodyError::TooLarge)
        ));
        assert!(matches!(
            read(&["12345678901"], 10).await,
            Err(BodyError::TooLarge)
        ));
        assert!(matches!(
            collect_limited(chunked(&["{"], true), 10).await,
            Err(BodyError::Broken)
        ));
    }

    #[test]
    fn json_content_types() {
        let is = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(CONTENT_TYPE, value.parse().unwrap());
            is_json(&headers)
        };
        assert!(is("application/json"));
        assert!(is("Application/JSON; charset=utf-8"));
        assert!(!is("text/plain"));
        assert!(!is_json(&HeaderMap::new()));
    }

    #[test]
    fn accept_ranges() {
        let both = Accepts {
            json: true,
            sse: true,
        };
        assert_eq!(accepts("application/json, text/event-stream"), both);
        assert_eq!(accepts("*/*"), both);
        assert_eq!(Accepts::of(&HeaderMap::new()), both);
        assert_eq!(
            accepts("application/json"),
            Accepts {
                json: true,
                sse: false
            }
        );
        assert_eq!(
            accepts("text/event-stream, application/json;q=0"),
            Accepts {
                json: false,
                sse: true
            }
        );
        assert_eq!(
            accepts("text/html"),
            Accepts {
                json: false,
                sse: false
            }
        );
    }

    #[test]
    fn the_common_values_read_as_the_parser_reads_them() {
        for value in [
            "application/json, text/event-stream",
            "text/event-stream, application/json",
            "application/json,text/event-stream",
            "*/*",
            "application/json",
            "text/event-stream",
        ] {
            let mut general = Accepts {
                json: false,
                sse: false,
            };
            // What the loop reads when no shortcut applies: the same value with a refused
            // range appended.
            let refused = accepts(&format!("{value}, image/png;q=0"));
            general.json |= refused.json;
            general.sse |= refused.sse;
            assert_eq!(Accepts::common(value.as_bytes()), Some(general), "{value}");
        }
    }

    #[test]
    fn every_accept_line_counts() {
        let mut headers = HeaderMap::new();
        headers.append(ACCEPT, "application/json".parse().unwrap());
        headers.append(ACCEPT, "text/event-stream".parse().unwrap());
        assert_eq!(
            Accepts::of(&headers),
            Accepts {
                json: true,
                sse: true
            }
        );
    }
}
