//! [`HttpConfig`]: every setting of the HTTP endpoint, with safe defaults.

use std::time::Duration;

use mcp_hub::Namespace;

use crate::http::origin::Pattern;
use crate::session::SessionConfig;

/// The default body limit of a POST: 4 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 4 * 1024 * 1024;

/// The default interval of keep-alive comments on an idle SSE stream: 15 s.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The default time graceful shutdown waits for calls in flight: 10 s.
pub const DEFAULT_SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);

/// The default `retry` (milliseconds) of the priming event on revisions with SSE polling.
pub const DEFAULT_SSE_RETRY_MS: u64 = 1000;

/// The default lease of a running call on its resumable POST stream: 10 s (see
/// [`HttpConfig::post_stream_lease`]).
pub const DEFAULT_POST_STREAM_LEASE: Duration = Duration::from_secs(10);

/// The default time a client has to send a request's head (request line and headers) once it
/// started sending it: 10 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The default time a connection may sit without a request in flight before it is closed:
/// 60 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The default interval of HTTP/2 keep-alive pings: 30 s (a peer that does not answer one
/// within 20 s loses its connection).
pub const DEFAULT_HTTP2_KEEP_ALIVE: Duration = Duration::from_secs(30);

/// The default maximum of Streamable HTTP GET streams one session holds open on one endpoint:
/// 4.
pub const DEFAULT_MAX_STREAMS_PER_SESSION: usize = 4;

/// The default maximum of connections served at once: 4,096.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// The default path of the liveness probe: `/healthz`.
pub const DEFAULT_LIVENESS_PATH: &str = "/healthz";

/// The default path of the readiness probe: `/readyz`.
pub const DEFAULT_READINESS_PATH: &str = "/readyz";

/// The default drain period: none (shutdown begins when the signal resolves).
pub const DEFAULT_DRAIN_PERIOD: Duration = Duration::ZERO;

/// Whether localhost origins and hosts are trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Localhost {
    /// Trusted when the server is known to listen on a loopback address (set by
    /// [`serve`](crate::http::serve)); a mounted endpoint does not know, and does not trust.
    Auto,
    /// Always trusted.
    Allow,
    /// Only if listed.
    Deny,
}

/// Settings of an [`HttpEndpoint`](crate::http::HttpEndpoint).
///
/// Every setting has a safe default; the builder methods consume and return the config:
///
/// ```
/// use std::time::Duration;
/// use mcp_server::http::HttpConfig;
///
/// use mcp_server::SessionConfig;
///
/// let config = HttpConfig::new()
///     .allowed_origin("https://*.example.com")
///     .allowed_host("mcp.example.com")
///     .body_limit(1024 * 1024)
///     .sessions(SessionConfig::new().ttl(Duration::from_secs(600)));
/// # let _ = config;
/// ```
///
/// | Setting | Default |
/// | --- | --- |
/// | [`path`](Self::path) (Streamable HTTP) | `/mcp` |
/// | [`sse_path`](Self::sse_path), [`message_path`](Self::message_path) (HTTP+SSE) | `/sse`, `/messages` |
/// | [`body_limit`](Self::body_limit) | 4 MiB (larger bodies get 413) |
/// | [`allowed_origin`](Self::allowed_origin) | none: only requests without `Origin`, same-origin requests, and localhost origins when bound to loopback |
/// | [`allowed_host`](Self::allowed_host) | any host, except that a server bound to loopback accepts only `localhost`, `127.0.0.1` and `[::1]` |
/// | [`sessions`](Self::sessions) | [`SessionConfig`]'s: at most 10,000 sessions per endpoint (the least recently used idle one makes room), 100 per client address or per principal, 64 calls of a session in flight, one hour after last use, the root namespace |
/// | [`keep_alive`](Self::keep_alive) | a comment every 15 s on idle SSE streams |
/// | [`prefer_sse`](Self::prefer_sse) | off: JSON unless the call sends something before its result |
/// | [`sse_retry`](Self::sse_retry) | 1000 ms in the priming event (revisions with SSE polling) |
/// | [`resumable_post_streams`](Self::resumable_post_streams) | on: a call's POST stream that outlives its first message is logged on the hub and resumes on any worker |
/// | [`post_stream_lease`](Self::post_stream_lease) | 10 s: a resumed POST stream whose call's worker stopped ends with an error within 1.5 times this |
/// | [`post_stream_poll_after`](Self::post_stream_poll_after) | off: a POST stream stays open until its call ends |
/// | [`shutdown_deadline`](Self::shutdown_deadline) | 10 s |
/// | [`legacy_sse`](Self::legacy_sse) | on (HTTP+SSE for the revisions that have a handshake) |
/// | [`auth`](Self::auth) | none: no access token is asked for |
/// | [`routes`](Self::routes) | none: every path but the MCP ones (and the resource server's metadata) gets 404 |
/// | [`trusted_proxies`](Self::trusted_proxies) | none: the client address is the connection's, `Forwarded` and `X-Forwarded-For` are never read |
/// | [`max_streams_per_session`](Self::max_streams_per_session) | 4 GET streams open per session; another GET gets 503 |
/// | [`header_read_timeout`](Self::header_read_timeout) | 10 s to send a request's head on HTTP/1.1, counted from when the server waits for it |
/// | [`idle_timeout`](Self::idle_timeout) | 60 s without a request in flight, then the connection is closed |
/// | [`http2_keep_alive`](Self::http2_keep_alive) | a ping every 30 s on HTTP/2 connections |
/// | [`max_connections`](Self::max_connections) | 4,096; more wait in the listen backlog |
/// | [`liveness_path`](Self::liveness_path) | `/healthz`: 200 while the process serves |
/// | [`readiness_path`](Self::readiness_path) | `/readyz`: 200 when the hub answers within 1 s (checked at most once a second) and the endpoint is not draining, else 503 |
/// | [`drain_period`](Self::drain_period) | none: on the shutdown signal, shutdown begins at once |
/// | [`hub_label`](Self::hub_label) | `unnamed`: what the start and shutdown log lines call the hub |
///
/// The connection settings from [`header_read_timeout`](Self::header_read_timeout) to
/// [`max_connections`](Self::max_connections) apply when the endpoint runs on its own socket
/// ([`serve_with_shutdown`](crate::http::serve_with_shutdown)); a mounted endpoint gets
/// the connection handling of the server it is mounted in, and its
/// [`drain_period`](Self::drain_period) through
/// [`HttpEndpoint::shutdown_on`](crate::http::HttpEndpoint::shutdown_on).
#[derive(Clone, Debug)]
pub struct HttpConfig {
    pub(crate) path: String,
    pub(crate) sse_path: String,
    pub(crate) message_path: String,
    pub(crate) body_limit: usize,
    pub(crate) origins: Vec<Pattern>,
    pub(crate) hosts: Vec<Pattern>,
    pub(crate) localhost: Localhost,
    pub(crate) bound_loopback: bool,
    pub(crate) sessions: SessionConfig,
    pub(crate) keep_alive: Duration,
    pub(crate) prefer_sse: bool,
    pub(crate) sse_retry_ms: u64,
    pub(crate) resumable_post_streams: bool,
    pub(crate) post_stream_lease: Duration,
    pub(crate) post_stream_poll_after: Option<Duration>,
    pub(crate) shutdown_deadline: Duration,
    pub(crate) legacy_sse: bool,
    pub(crate) auth: Option<crate::auth::ResourceServer>,
    pub(crate) routes: Vec<std::sync::Arc<dyn crate::http::Routes>>,
    pub(crate) trusted_proxies: Vec<crate::http::TrustedProxy>,
    pub(crate) max_streams_per_session: usize,
    pub(crate) header_read_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) http2_keep_alive: Option<Duration>,
    pub(crate) max_connections: usize,
    pub(crate) liveness_path: Option<String>,
    pub(crate) readiness_path: Option<String>,
    pub(crate) drain_period: Duration,
    pub(crate) hub_label: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpConfig {
    /// The defaults (see the table on the type).
    pub fn new() -> Self {
        Self {
            path: "/mcp".into(),
            sse_path: "/sse".into(),
            message_path: "/messages".into(),
            body_limit: DEFAULT_BODY_LIMIT,
            origins: Vec::new(),
            hosts: Vec::new(),
            localhost: Localhost::Auto,
            bound_loopback: false,
            sessions: SessionConfig::new(),
            keep_alive: DEFAULT_KEEP_ALIVE,
            prefer_sse: false,
            sse_retry_ms: DEFAULT_SSE_RETRY_MS,
            resumable_post_streams: true,
            post_stream_lease: DEFAULT_POST_STREAM_LEASE,
            post_stream_poll_after: None,
            shutdown_deadline: DEFAULT_SHUTDOWN_DEADLINE,
            legacy_sse: true,
            auth: None,
            routes: Vec::new(),
            trusted_proxies: Vec::new(),
            max_streams_per_session: DEFAULT_MAX_STREAMS_PER_SESSION,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            http2_keep_alive: Some(DEFAULT_HTTP2_KEEP_ALIVE),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            liveness_path: Some(DEFAULT_LIVENESS_PATH.to_owned()),
            readiness_path: Some(DEFAULT_READINESS_PATH.to_owned()),
            drain_period: DEFAULT_DRAIN_PERIOD,
            hub_label: "unnamed".to_owned(),
        }
    }

    /// The path of the liveness probe (`GET` or `HEAD`): `200 ok` whenever the process
    /// serves requests at all; `None` turns it off (the path then gets 404 like any other).
    /// Default is `/healthz` ([`DEFAULT_LIVENESS_PATH`]).
    ///
    /// The probes are answered before the `Host` and `Origin` checks, authorization, the
    /// session machinery and [`routes`](Self::routes) (unless a mounted route claims the
    /// path itself): load balancers and orchestrators probe a worker by its address, which
    /// an [`allowed_host`](Self::allowed_host) list of public names does not hold, and the
    /// answers carry nothing a DNS-rebinding page could use (no data, no effect; a readiness
    /// check costs at most one hub read a second whatever the number of probes).
    ///
    /// ```
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().liveness_path(Some("/livez")).readiness_path(None);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn liveness_path(mut self, path: Option<&str>) -> Self {
        self.liveness_path = path.map(str::to_owned);
        self
    }

    /// The path of the readiness probe (`GET` or `HEAD`): `200` with `{"ready":true}` when
    /// the hub's state store answers a read within 1 s and the endpoint is not draining,
    /// else `503` with `{"ready":false,"reason":"..."}` (`draining`, or which way the hub
    /// failed; the backend's own message is logged at WARN, never sent). The hub's answer is
    /// kept for 1 s and one probe at a time asks it, so a storm of probes costs at most one
    /// hub read a second. `None` turns it off. Default is `/readyz`
    /// ([`DEFAULT_READINESS_PATH`]). Answered before the `Host`, `Origin` and authorization
    /// checks, like [`liveness_path`](Self::liveness_path).
    ///
    /// ```
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().readiness_path(Some("/ready"));
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn readiness_path(mut self, path: Option<&str>) -> Self {
        self.readiness_path = path.map(str::to_owned);
        self
    }

    /// How long the endpoint keeps serving once draining began (the shutdown signal of
    /// [`serve_with_shutdown`](crate::http::serve_with_shutdown) or
    /// [`HttpEndpoint::shutdown_on`](crate::http::HttpEndpoint::shutdown_on) resolved, or
    /// [`HttpEndpoint::drain`](crate::http::HttpEndpoint::drain) was called): the readiness
    /// probe answers 503 at once, so a load balancer stops sending new clients, while the
    /// listener keeps accepting and serving for this long; then shutdown proceeds as without
    /// it (stop accepting, end streams, wait [`shutdown_deadline`](Self::shutdown_deadline)
    /// for calls). Set it a little above the load balancer's probe interval times its
    /// failure threshold. Default: none ([`DEFAULT_DRAIN_PERIOD`]); the demo uses 5 s.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().drain_period(Duration::from_secs(5));
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn drain_period(mut self, period: Duration) -> Self {
        self.drain_period = period;
        self
    }

    /// What the start and shutdown log lines of
    /// [`serve_with_shutdown`](crate::http::serve_with_shutdown) call the server's hub, say
    /// `redis://cache:6379`. Never put a password here: it is logged. Default `unnamed`.
    ///
    /// ```
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().hub_label("redis://cache:6379");
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn hub_label(mut self, label: impl Into<String>) -> Self {
        self.hub_label = label.into();
        self
    }

    /// The settings of the endpoint's sessions (Streamable HTTP and HTTP+SSE together): how
    /// many, for how long, how many calls each, in which namespace, as [`SessionConfig`]
    /// describes. Replaces what the shorthands below set.
    ///
    /// ```
    /// use mcp_server::http::HttpConfig;
    /// use mcp_server::SessionConfig;
    ///
    /// let config = HttpConfig::new().sessions(SessionConfig::new().max_sessions(50_000));
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn sessions(mut self, sessions: SessionConfig) -> Self {
        self.sessions = sessions;
        self
    }

    /// Shorthand for [`SessionConfig::max_sessions`] on [`sessions`](Self::sessions).
    #[must_use]
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.sessions = self.sessions.max_sessions(max);
        self
    }

    /// Shorthand for [`SessionConfig::max_sessions_per_principal`] on
    /// [`sessions`](Self::sessions).
    #[must_use]
    pub fn max_sessions_per_principal(mut self, max: usize) -> Self {
        self.sessions = self.sessions.max_sessions_per_principal(max);
        self
    }

    /// Shorthand for [`SessionConfig::max_sessions_per_peer`] on [`sessions`](Self::sessions).
    #[must_use]
    pub fn max_sessions_per_peer(mut self, max: usize) -> Self {
        self.sessions = self.sessions.max_sessions_per_peer(max);
        self
    }

    /// Shorthand for [`SessionConfig::max_calls_per_session`] on
    /// [`sessions`](Self::sessions).
    #[must_use]
    pub fn max_calls_per_session(mut self, max: usize) -> Self {
        self.sessions = self.sessions.max_calls_per_session(max);
        self
    }

    /// Shorthand for [`SessionConfig::ttl`] on [`sessions`](Self::sessions).
    #[must_use]
    pub fn session_ttl(mut self, ttl: Duration) -> Self {
        self.sessions = self.sessions.ttl(ttl);
        self
    }

    /// Shorthand for [`SessionConfig::cache`] on [`sessions`](Self::sessions).
    #[must_use]
    pub fn session_cache(mut self, trust: Duration) -> Self {
        self.sessions = self.sessions.cache(trust);
        self
    }

    /// Shorthand for [`SessionConfig::namespace`] on [`sessions`](Self::sessions): the
    /// namespace (tenant) of sessions, HTTP+SSE streams, request state and question topics.
    #[must_use]
    pub fn namespace(mut self, namespace: Namespace) -> Self {
        self.sessions = self.sessions.namespace(namespace);
        self
    }

    /// Proxies (addresses or CIDR networks) whose client address headers are believed:
    /// when a connection comes from one of them, the client address that
    /// [`SessionConfig::max_sessions_per_peer`] counts is the right-most
    /// address of `Forwarded` (RFC 7239, its `for=`; read when the request has the header)
    /// or else `X-Forwarded-For` that is not itself a trusted proxy (the left-most when every
    /// hop is trusted; the last trusted hop when the next one is hidden, `unknown` or
    /// malformed). Headers from any other peer are never read: a client cannot pick its own
    /// address. Repeatable; each call adds to the list. Default: none.
    ///
    /// ```
    /// use mcp_server::http::{HttpConfig, TrustedProxy};
    ///
    /// let balancer: TrustedProxy = "10.0.0.0/8".parse()?;
    /// let config = HttpConfig::new().trusted_proxies([balancer]);
    /// # let _ = config;
    /// # Ok::<(), mcp_server::http::InvalidProxy>(())
    /// ```
    #[must_use]
    pub fn trusted_proxies(
        mut self,
        proxies: impl IntoIterator<Item = crate::http::TrustedProxy>,
    ) -> Self {
        self.trusted_proxies.extend(proxies);
        self
    }

    /// The most Streamable HTTP GET streams (`GET /mcp`) one session holds open on this
    /// endpoint at once. Default is 4 ([`DEFAULT_MAX_STREAMS_PER_SESSION`]); values below 1
    /// count as 1.
    ///
    /// Another GET of the session gets HTTP 503 with the revision's JSON-RPC error for an
    /// unavailable server (`-32603`); the open streams go on, and a stream's slot is free
    /// again once it ended (the client closed it and the server noticed, at the latest at
    /// the next [`keep_alive`](Self::keep_alive) comment). A `GET` that resumes a call's POST
    /// stream (see [`post_stream_lease`](Self::post_stream_lease)) counts as one until the
    /// call ends. HTTP+SSE streams are one per session by construction.
    ///
    /// ```
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().max_streams_per_session(1);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_streams_per_session(mut self, max: usize) -> Self {
        self.max_streams_per_session = max.max(1);
        self
    }

    /// Logs a call's POST stream on the hub so it resumes on any worker (see
    /// [`post_stream_lease`](Self::post_stream_lease)): on the revisions whose SSE streams
    /// resume, a call that sends something before its result gets event ids from the hub's log,
    /// and a client (or ours, by itself) that lost the stream reads the rest with `GET` and
    /// `Last-Event-ID` on any worker. Default: on. Each event of such a call costs one append
    /// to the hub before it goes out (a plain JSON reply, and a call whose result is its first
    /// message, cost nothing); off, a call's events carry no ids and a dropped POST stream
    /// loses what the call sends after the drop.
    ///
    /// ```
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().resumable_post_streams(false);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn resumable_post_streams(mut self, on: bool) -> Self {
        self.resumable_post_streams = on;
        self
    }

    /// How long the worker running a call holds its lease on the call's POST stream, renewed
    /// every third of it. Default is 10 s ([`DEFAULT_POST_STREAM_LEASE`]); values below 3 ms
    /// count as 3 ms.
    ///
    /// With [`resumable_post_streams`](Self::resumable_post_streams), on the revisions whose
    /// SSE streams resume (2025-03-26, 2025-06-18, 2025-11-25), every event of a call's POST
    /// stream (once the call sends something before its result) gets an
    /// id from the hub's event log, and a `GET` of the same session with that id as
    /// `Last-Event-ID`, on any worker sharing the hub, replays what the client missed and
    /// follows the call to its result. If the worker running the call stops (a crash, a lost
    /// machine) the lease lapses, and a stream following the call ends with the revision's
    /// internal error (`-32603`) for the call's request, at most 1.5 times this after the
    /// worker stopped. A shorter lease finds a dead worker sooner and costs one state-store
    /// write per third of it per running call; a hub pause longer than the lease ends the
    /// streams that follow a call although its worker lives.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().post_stream_lease(Duration::from_secs(5));
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn post_stream_lease(mut self, lease: Duration) -> Self {
        self.post_stream_lease = lease.max(Duration::from_millis(3));
        self
    }

    /// Closes a call's POST stream this long after it started (after its priming event with
    /// `Duration::ZERO`), on the revisions with SSE polling (2025-11-25): the client reads the
    /// rest with `GET` and the last event id, as the priming event's `retry` tells it, so a
    /// load balancer's read timeout shorter than a long call stops mattering. Default is off
    /// (`None`): the stream stays open until the call ends. Only streams that resume (see
    /// [`post_stream_lease`](Self::post_stream_lease)) are closed, so a call whose result is
    /// its first message is never affected.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().post_stream_poll_after(Some(Duration::from_secs(20)));
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn post_stream_poll_after(mut self, after: Option<Duration>) -> Self {
        self.post_stream_poll_after = after;
        self
    }

    /// How long an HTTP/1.1 client may take to send a request's head (request line and
    /// headers); a connection that has not sent it in full by then is closed without an answer
    /// (against slowloris clients). It starts when the server waits for a head, so it also
    /// bounds the pause between two requests of a kept-alive connection. HTTP/2 connections are bounded by the
    /// [`idle_timeout`](Self::idle_timeout) instead, and given this long to end after its
    /// `GOAWAY`; a TLS handshake must finish within it. Default is 10 s
    /// ([`DEFAULT_HEADER_READ_TIMEOUT`]); values below 1 ms count as 1 ms.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().header_read_timeout(Duration::from_secs(5));
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a connection may stay open without a request in flight (a keep-alive
    /// connection between requests, one that never sends anything, or one still sending a
    /// head) before it is closed:
    /// HTTP/1.1 connections are closed, HTTP/2 ones get a `GOAWAY`. A response that is still
    /// being sent (an SSE stream) counts as in flight. Default is 60 s
    /// ([`DEFAULT_IDLE_TIMEOUT`]); values below 1 ms count as 1 ms.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().idle_timeout(Duration::from_secs(15));
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The interval of HTTP/2 keep-alive pings; a peer that does not acknowledge one within
    /// 20 s loses its connection (and the calls on it). `None` sends no pings. Default is 30 s
    /// ([`DEFAULT_HTTP2_KEEP_ALIVE`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().http2_keep_alive(Some(Duration::from_secs(10)));
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn http2_keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.http2_keep_alive = interval.map(|i| i.max(Duration::from_millis(1)));
        self
    }

    /// The most connections served at once. Beyond it the server stops accepting: new
    /// connections wait in the kernel's listen backlog (and are served in turn as others
    /// close, or time out there) while the open ones keep working. The server also keeps it
    /// at most 7/8 of the process's soft descriptor limit (`ulimit -n`) where the system
    /// tells it (Linux), so that descriptors remain for the hub and for accepting at all.
    /// Default is 4,096 ([`DEFAULT_MAX_CONNECTIONS`]); values below 1 count as 1.
    ///
    /// ```
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().max_connections(900);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Protects the endpoint with an OAuth 2.1 resource server (see [`crate::auth`]): its
    /// metadata is served at the RFC 9728 locations, every MCP request needs a valid access
    /// token for this resource (401 otherwise) with the scopes it needs (403 otherwise), and
    /// sessions, request state, questions and streams are bound to the token's principal.
    /// Default: no authorization (any client that passes the `Origin` and `Host` checks).
    #[must_use]
    pub fn auth(mut self, resource_server: crate::auth::ResourceServer) -> Self {
        self.auth = Some(resource_server);
        self
    }

    /// Serves more paths on the same listener, before MCP routing (see [`Routes`](crate::http::Routes)):
    /// the paths `routes` claims are answered by it, after the `Host`/`Origin` checks and
    /// with the body read within [`body_limit`](Self::body_limit). Repeatable: the routes are
    /// asked in the order given. The development authorization server of the
    /// `everymcp-dev-auth` crate mounts this way. Default: none.
    #[must_use]
    pub fn routes(mut self, routes: impl crate::http::Routes) -> Self {
        self.routes.push(std::sync::Arc::new(routes));
        self
    }

    /// The path of the Streamable HTTP endpoint (POST, GET and DELETE). Default is `/mcp`.
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The path of the HTTP+SSE stream (GET). Default is `/sse`.
    #[must_use]
    pub fn sse_path(mut self, path: impl Into<String>) -> Self {
        self.sse_path = path.into();
        self
    }

    /// The path HTTP+SSE messages are POSTed to, as named in the `endpoint` event (with
    /// `?session_id=...` appended). Default is `/messages`. When the endpoint is mounted under a
    /// prefix, include the prefix: the client resolves this path against the stream's URL.
    #[must_use]
    pub fn message_path(mut self, path: impl Into<String>) -> Self {
        self.message_path = path.into();
        self
    }

    /// Turns the HTTP+SSE transport (2024-11-05) on or off. Default is on.
    #[must_use]
    pub fn legacy_sse(mut self, enabled: bool) -> Self {
        self.legacy_sse = enabled;
        self
    }

    /// The largest POST body accepted; larger ones get 413. Default is 4 MiB.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Allows browser requests from `origin`: `scheme://host[:port]`. In the host, `*` stands
    /// for exactly one DNS label and `**` for one or more (`https://*.example.com`,
    /// `https://**.example.com`); a port of `*` stands for any port. A request with a bad
    /// `Origin` gets 403; requests without `Origin` (non-browser clients) are always allowed,
    /// and so are same-origin requests.
    #[must_use]
    pub fn allowed_origin(mut self, origin: &str) -> Self {
        self.origins.push(Pattern::origin(origin));
        self
    }

    /// Allows requests whose `Host` header names `host` (`name` or `name:port`, with the same
    /// wildcards as [`allowed_origin`](Self::allowed_origin)), against DNS rebinding. Once one
    /// host is listed, every other host gets 403 (localhost too, unless listed or
    /// [`allow_localhost`](Self::allow_localhost) is on). Default: any host, except that a
    /// server bound to loopback accepts only localhost names.
    #[must_use]
    pub fn allowed_host(mut self, host: &str) -> Self {
        self.hosts.push(Pattern::host(host));
        self
    }

    /// Trusts (`true`) or does not trust (`false`) localhost origins and hosts whatever the
    /// address the server is bound to. Default: trusted when bound to a loopback address.
    #[must_use]
    pub fn allow_localhost(mut self, allow: bool) -> Self {
        self.localhost = if allow {
            Localhost::Allow
        } else {
            Localhost::Deny
        };
        self
    }

    /// How often an idle SSE stream gets a keep-alive comment. Default is 15 s.
    #[must_use]
    pub fn keep_alive(mut self, interval: Duration) -> Self {
        self.keep_alive = interval.max(Duration::from_millis(1));
        self
    }

    /// Answers every request with an SSE stream when the client accepts one. Default is off:
    /// a plain JSON body unless the call sends something (progress, log, a question) before its
    /// result.
    #[must_use]
    pub fn prefer_sse(mut self, prefer: bool) -> Self {
        self.prefer_sse = prefer;
        self
    }

    /// The `retry` (milliseconds) of the priming event that opens SSE streams on revisions with
    /// SSE polling (2025-11-25). Default is 1000.
    #[must_use]
    pub fn sse_retry(mut self, millis: u64) -> Self {
        self.sse_retry_ms = millis;
        self
    }

    /// How long graceful shutdown waits for calls in flight before it cancels them.
    /// Default is 10 s.
    #[must_use]
    pub fn shutdown_deadline(mut self, deadline: Duration) -> Self {
        self.shutdown_deadline = deadline;
        self
    }

    /// Whether localhost origins and hosts are trusted.
    pub(crate) fn trusts_localhost(&self) -> bool {
        match self.localhost {
            Localhost::Allow => true,
            Localhost::Deny => false,
            Localhost::Auto => self.bound_loopback,
        }
    }
}
