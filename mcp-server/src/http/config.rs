//! [`HttpConfig`]: every setting of the HTTP endpoint, with safe defaults.

use std::time::Duration;

use mcp_hub::Namespace;

use crate::http::origin::Pattern;

/// The default body limit of a POST: 4 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 4 * 1024 * 1024;

/// The default time to live of a session: one hour after its last use.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(3600);

/// The default time a worker serves a session record from memory between store reads: 1 s
/// (changes made on other workers arrive sooner, through the event log; see
/// [`HttpConfig::session_cache`]).
pub const DEFAULT_SESSION_CACHE: Duration = Duration::from_secs(1);

/// The default interval of keep-alive comments on an idle SSE stream: 15 s.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The default time graceful shutdown waits for calls in flight: 10 s.
pub const DEFAULT_SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);

/// The default `retry` (milliseconds) of the priming event on revisions with SSE polling.
pub const DEFAULT_SSE_RETRY_MS: u64 = 1000;

/// The default lease of a running call on its resumable POST stream: 10 s (see
/// [`HttpConfig::post_stream_lease`]).
pub const DEFAULT_POST_STREAM_LEASE: Duration = Duration::from_secs(10);

/// The default maximum of sessions one endpoint (worker) mints and holds at once: 10,000
/// (about 8 MiB of session records on the memory store).
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

/// The default time a client has to send a request's head (request line and headers) once it
/// started sending it: 10 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The default time a connection may sit without a request in flight before it is closed:
/// 60 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The default interval of HTTP/2 keep-alive pings: 30 s (a peer that does not answer one
/// within 20 s loses its connection).
pub const DEFAULT_HTTP2_KEEP_ALIVE: Duration = Duration::from_secs(30);

/// The default maximum of calls (requests with an id) of one session in flight on one
/// endpoint at once: 64.
pub const DEFAULT_MAX_CALLS_PER_SESSION: usize = 64;

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
/// let config = HttpConfig::new()
///     .allowed_origin("https://*.example.com")
///     .allowed_host("mcp.example.com")
///     .body_limit(1024 * 1024)
///     .session_ttl(Duration::from_secs(600));
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
/// | [`session_ttl`](Self::session_ttl) | 1 hour after last use |
/// | [`session_cache`](Self::session_cache) | 1 s, invalidated through the event log on every change |
/// | [`keep_alive`](Self::keep_alive) | a comment every 15 s on idle SSE streams |
/// | [`prefer_sse`](Self::prefer_sse) | off: JSON unless the call sends something before its result |
/// | [`sse_retry`](Self::sse_retry) | 1000 ms in the priming event (revisions with SSE polling) |
/// | [`resumable_post_streams`](Self::resumable_post_streams) | on: a call's POST stream that outlives its first message is logged on the hub and resumes on any worker |
/// | [`post_stream_lease`](Self::post_stream_lease) | 10 s: a resumed POST stream whose call's worker stopped ends with an error within 1.5 times this |
/// | [`post_stream_poll_after`](Self::post_stream_poll_after) | off: a POST stream stays open until its call ends |
/// | [`shutdown_deadline`](Self::shutdown_deadline) | 10 s |
/// | [`namespace`](Self::namespace) | the root namespace |
/// | [`legacy_sse`](Self::legacy_sse) | on (HTTP+SSE for the revisions that have a handshake) |
/// | [`auth`](Self::auth) | none: no access token is asked for |
/// | [`routes`](Self::routes) | none: every path but the MCP ones (and the resource server's metadata) gets 404 |
/// | [`max_sessions`](Self::max_sessions) | 10,000 per endpoint; a new session beyond it ends the least recently used idle one (whose client is told to initialize again), and gets 503 with `Retry-After` only when every session is in use |
/// | [`max_sessions_per_peer`](Self::max_sessions_per_peer) | sessions without a principal: `max(16, max_sessions / 100)` (100 by default) per client address on this endpoint; a new one beyond it ends that address's own least recently used idle session, and gets 503 with `Retry-After` only when all of them are in use |
/// | [`trusted_proxies`](Self::trusted_proxies) | none: the client address is the connection's, `Forwarded` and `X-Forwarded-For` are never read |
/// | [`max_sessions_per_principal`](Self::max_sessions_per_principal) | with [`auth`](Self::auth): `max(16, max_sessions / 100)` (100 by default) per principal on all workers; one more gets 503 |
/// | [`max_calls_per_session`](Self::max_calls_per_session) | 64 calls of one session in flight; a request beyond it gets 503 |
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
    pub(crate) session_ttl: Duration,
    pub(crate) session_cache: Duration,
    pub(crate) keep_alive: Duration,
    pub(crate) prefer_sse: bool,
    pub(crate) sse_retry_ms: u64,
    pub(crate) resumable_post_streams: bool,
    pub(crate) post_stream_lease: Duration,
    pub(crate) post_stream_poll_after: Option<Duration>,
    pub(crate) shutdown_deadline: Duration,
    pub(crate) namespace: Namespace,
    pub(crate) legacy_sse: bool,
    pub(crate) auth: Option<crate::auth::ResourceServer>,
    pub(crate) routes: Vec<std::sync::Arc<dyn crate::http::Routes>>,
    pub(crate) max_sessions: usize,
    pub(crate) max_sessions_per_principal: Option<usize>,
    pub(crate) max_sessions_per_peer: Option<usize>,
    pub(crate) trusted_proxies: Vec<crate::http::TrustedProxy>,
    pub(crate) max_calls_per_session: usize,
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
            session_ttl: DEFAULT_SESSION_TTL,
            session_cache: DEFAULT_SESSION_CACHE,
            keep_alive: DEFAULT_KEEP_ALIVE,
            prefer_sse: false,
            sse_retry_ms: DEFAULT_SSE_RETRY_MS,
            resumable_post_streams: true,
            post_stream_lease: DEFAULT_POST_STREAM_LEASE,
            post_stream_poll_after: None,
            shutdown_deadline: DEFAULT_SHUTDOWN_DEADLINE,
            namespace: Namespace::root(),
            legacy_sse: true,
            auth: None,
            routes: Vec::new(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_principal: None,
            max_sessions_per_peer: None,
            trusted_proxies: Vec::new(),
            max_calls_per_session: DEFAULT_MAX_CALLS_PER_SESSION,
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

    /// The most sessions this endpoint (one worker) mints and holds at once, Streamable HTTP
    /// and HTTP+SSE together. Default is 10,000 ([`DEFAULT_MAX_SESSIONS`]).
    ///
    /// At the limit, a new session takes the place of the least recently used *idle* session
    /// of this worker: one with no request running and no stream open here (an HTTP+SSE
    /// session is busy as long as its stream is open). That session is ended (its record
    /// deleted from the hub's state store, so no worker serves it any more, and its hub
    /// topics go with it), and its client's next request gets the revision's answer for an
    /// unknown session (404 on Streamable HTTP), which every revision answers by initializing
    /// again (the `mcp-client` crate does so by itself and retries the request). A session in
    /// use is never ended: only when every session this worker holds is busy does an
    /// `initialize` that would mint one get HTTP 503 with `Retry-After: 2` and the revision's
    /// JSON-RPC error for an unavailable server (`-32603`, naming the request's id), and
    /// `GET /sse` 503. So a flood of sessions costs its own sessions, and never locks new
    /// clients out for a TTL. Finding the session to end is O(1) (a least-recently-used list).
    ///
    /// The limit counts the sessions this worker minted. Whether a session is in use is known
    /// per worker: with workers sharing a hub and no sticky routing, a session minted here and
    /// in use only on another worker counts as idle here (a call running there finishes, its
    /// session's next request gets 404 and the client initializes again). A session frees its
    /// place when it is deleted here, or when this worker notices that it ended (expired, or
    /// was deleted on another worker): at most one [`session_ttl`](Self::session_ttl) after
    /// that. Every eviction is counted (`mcp_sessions_evicted_total{reason="cap"}`) and logged
    /// (at most one line per 5 s, with the number not logged since). Values below 1 count as 1.
    ///
    /// ```
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().max_sessions(50_000);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max.max(1);
        self
    }

    /// The most sessions one principal (an authenticated issuer and subject, see
    /// [`auth`](Self::auth)) holds at once, Streamable HTTP and HTTP+SSE together, counted on
    /// all workers that share the hub. Default: `max(16, max_sessions / 100)`, 100 with the
    /// default [`max_sessions`](Self::max_sessions), and no limit when `max_sessions` is
    /// `usize::MAX`; values below 1 count as 1, and `usize::MAX` turns the limit off. Without
    /// [`auth`](Self::auth) there is no principal and this limit does not apply.
    ///
    /// So one principal cannot take every session of the server: at its limit, its
    /// `initialize` that would mint a session gets HTTP 503 with the revision's JSON-RPC
    /// error for an unavailable server (`-32603`, naming the request's id and the limit), and
    /// its `GET /sse` gets 503; other principals are served as before. Nothing of the
    /// principal's is ended to make room (a session in use elsewhere is never evicted): a
    /// session frees its place when the client deletes it (`DELETE`, or the HTTP+SSE stream
    /// closes) or when it expires ([`session_ttl`](Self::session_ttl) after its last use).
    ///
    /// Each principal has one record in the hub's state store (the ids of its sessions, 35
    /// bytes each, so keep the limit in the hundreds), renewed with its sessions; minting,
    /// deleting and renewing a principal's session cost one or two more store operations.
    /// At the limit, the sessions listed are looked up (one read each) to drop those that
    /// expired.
    ///
    /// ```
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().max_sessions_per_principal(20);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_sessions_per_principal(mut self, max: usize) -> Self {
        self.max_sessions_per_principal = Some(max.max(1));
        self
    }

    /// The most sessions without a principal (no [`auth`](Self::auth)) one client address
    /// holds on this endpoint (one worker) at once, Streamable HTTP and HTTP+SSE together.
    /// Default: `max(16, max_sessions / 100)`, 100 with the default
    /// [`max_sessions`](Self::max_sessions), and no limit when `max_sessions` is `usize::MAX`;
    /// values below 1 count as 1, and `usize::MAX` turns the limit off. Authenticated
    /// sessions are counted per principal instead
    /// ([`max_sessions_per_principal`](Self::max_sessions_per_principal)).
    ///
    /// The client address is the connection's, or, when the connection comes from one of the
    /// [`trusted_proxies`](Self::trusted_proxies), the address they report; IPv6 addresses
    /// count by their /64 network (one host commonly has a whole /64), IPv4-mapped ones as
    /// IPv4. A mounted endpoint (not run by [`serve`](crate::http::serve) and its siblings)
    /// does not know the connection's address, and this limit does not apply there.
    ///
    /// At the limit, the address's new session takes the place of its own least recently
    /// used idle session (ended as at [`max_sessions`](Self::max_sessions), and counted as
    /// `mcp_sessions_evicted_total{reason="peer_quota"}`), so a client that floods the server
    /// with sessions only ends its own; only when every session of the address is in use does
    /// its `initialize` get HTTP 503 with `Retry-After: 2` and the revision's JSON-RPC error
    /// (counted as `mcp_limit_refusals_total{limit="max_sessions_per_peer"}`). The count is
    /// per worker (in memory, no hub operation per `initialize`): across `n` workers one
    /// address holds at most `n` times the limit. The addresses tracked are at most the
    /// sessions held.
    ///
    /// ```
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().max_sessions_per_peer(50);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_sessions_per_peer(mut self, max: usize) -> Self {
        self.max_sessions_per_peer = Some(max.max(1));
        self
    }

    /// The per-address session limit in force (see
    /// [`max_sessions_per_peer`](Self::max_sessions_per_peer)).
    pub(crate) fn sessions_per_peer(&self) -> usize {
        match self.max_sessions_per_peer {
            Some(max) => max,
            None if self.max_sessions == usize::MAX => usize::MAX,
            None => (self.max_sessions / 100).max(16),
        }
    }

    /// Proxies (addresses or CIDR networks) whose client address headers are believed:
    /// when a connection comes from one of them, the client address that
    /// [`max_sessions_per_peer`](Self::max_sessions_per_peer) counts is the right-most
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

    /// The per-principal session limit in force (see
    /// [`max_sessions_per_principal`](Self::max_sessions_per_principal)).
    pub(crate) fn sessions_per_principal(&self) -> usize {
        match self.max_sessions_per_principal {
            Some(max) => max,
            // No session limit asked for: no per-principal limit either.
            None if self.max_sessions == usize::MAX => usize::MAX,
            None => (self.max_sessions / 100).max(16),
        }
    }

    /// The most calls (requests with an id, a batch counting each of its requests) of one
    /// session in flight on this endpoint at once. Default is 64
    /// ([`DEFAULT_MAX_CALLS_PER_SESSION`]); values below 1 count as 1.
    ///
    /// A request whose calls would exceed it is refused whole with HTTP 503 and the
    /// revision's JSON-RPC error for an unavailable server (`-32603`, naming the request's
    /// first id); on HTTP+SSE (where the POST was already answered 202) the error travels on
    /// the stream. The calls already running go on; the client may retry once one ended.
    ///
    /// ```
    /// use mcp_server::http::HttpConfig;
    ///
    /// let config = HttpConfig::new().max_calls_per_session(16);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_calls_per_session(mut self, max: usize) -> Self {
        self.max_calls_per_session = max.max(1);
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

    /// How long a session lives after its last use; the TTL is renewed lazily (at most once per
    /// quarter of the TTL per worker), never by a write on every request. Default is one hour.
    #[must_use]
    pub fn session_ttl(mut self, ttl: Duration) -> Self {
        self.session_ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// How long a worker may serve a session's record (negotiated revision, client
    /// capabilities, log level, subscriptions) from its memory without reading the state store.
    /// Default is 1 s; [`Duration::ZERO`] reads the store on every request.
    ///
    /// A worker that changes or ends a session publishes the session id on a topic of the
    /// endpoint's namespace in the event log, and every worker that follows that topic drops
    /// its copy, so a cached record is replaced as soon as the change is delivered (on Redis,
    /// typically well under a millisecond). Records are trusted only while this worker follows
    /// the topic; the time here bounds how long a copy can outlive a change whose notice was
    /// lost (a worker that died between writing and publishing). A request that reaches another
    /// worker within that delivery delay may still see the previous record; with sticky
    /// sessions every change is made on the worker that caches it, so nothing is ever stale.
    /// On the memory store, records are read in memory anyway: this only saves decoding.
    ///
    /// With the cache on, a worker also rides out a store outage for the sessions it has seen:
    /// when the store fails or does not answer within 3 ms, a request of a session this worker
    /// holds a copy of is served from that copy (changes to the session still need the store,
    /// and fail with 503 while it is away). With [`Duration::ZERO`] every request waits for
    /// the store and gets 503 when it fails.
    #[must_use]
    pub fn session_cache(mut self, trust: Duration) -> Self {
        self.session_cache = trust;
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

    /// The namespace (tenant) of sessions, HTTP+SSE streams, request state and question topics.
    /// Default is the root namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: Namespace) -> Self {
        self.namespace = namespace;
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

#[cfg(test)]
mod tests {
    use super::HttpConfig;

    #[test]
    fn the_per_principal_session_limit_is_a_small_share_of_the_session_limit() {
        // (config, the limit in force)
        for (config, limit) in [
            (HttpConfig::new(), 100),
            (HttpConfig::new().max_sessions(500), 16),
            (HttpConfig::new().max_sessions(50_000), 500),
            (HttpConfig::new().max_sessions(usize::MAX), usize::MAX),
            (HttpConfig::new().max_sessions_per_principal(0), 1),
            (
                HttpConfig::new()
                    .max_sessions(usize::MAX)
                    .max_sessions_per_principal(7),
                7,
            ),
        ] {
            assert_eq!(config.sessions_per_principal(), limit, "{config:?}");
            // The per-address limit follows the same rule.
            let config = match config.max_sessions_per_principal {
                Some(max) => HttpConfig {
                    max_sessions_per_principal: None,
                    ..config
                }
                .max_sessions_per_peer(max),
                None => config,
            };
            assert_eq!(config.sessions_per_peer(), limit, "{config:?}");
        }
    }
}
