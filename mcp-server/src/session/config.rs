//! [`SessionConfig`]: the settings of a transport's sessions, wherever their bytes travel.

use std::sync::Arc;
use std::time::Duration;

use mcp_hub::Namespace;

use crate::server::Server;
use crate::session::{Cancels, Sessions};

/// The default time to live of a session: one hour after its last use.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(3600);

/// The default time a worker serves a session record from memory between store reads: 1 s
/// (changes made on other workers arrive sooner, through the event log; see
/// [`SessionConfig::cache`]).
pub const DEFAULT_SESSION_CACHE: Duration = Duration::from_secs(1);

/// The default maximum of sessions one endpoint (worker) mints and holds at once: 10,000
/// (about 8 MiB of session records on the memory store).
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

/// The default maximum of calls (requests with an id) of one session in flight on one
/// endpoint at once: 64.
pub const DEFAULT_MAX_CALLS_PER_SESSION: usize = 64;

/// The settings of the sessions an endpoint mints and serves: how many, for how long, how
/// many calls each, and in which namespace. Set on an HTTP endpoint with
/// [`HttpConfig::sessions`](crate::http::HttpConfig::sessions) (or its shorthands); every
/// setting has a safe default.
///
/// | Setting | Default |
/// | --- | --- |
/// | [`max_sessions`](Self::max_sessions) | 10,000 per endpoint; a new session beyond it ends the least recently used idle one (whose client is told to initialize again), and gets 503 with `Retry-After` only when every session is in use |
/// | [`max_sessions_per_peer`](Self::max_sessions_per_peer) | sessions without a principal: `max(16, max_sessions / 100)` (100 by default) per client address on this endpoint; a new one beyond it ends that address's own least recently used idle session, and gets 503 with `Retry-After` only when all of them are in use |
/// | [`max_sessions_per_principal`](Self::max_sessions_per_principal) | with authorization: `max(16, max_sessions / 100)` (100 by default) per principal on all workers; one more gets 503 |
/// | [`max_calls_per_session`](Self::max_calls_per_session) | 64 calls of one session in flight; a request beyond it gets 503 |
/// | [`ttl`](Self::ttl) | 1 hour after last use |
/// | [`cache`](Self::cache) | 1 s, invalidated through the event log on every change |
/// | [`namespace`](Self::namespace) | the root namespace |
///
/// ```
/// use std::time::Duration;
/// use mcp_server::http::HttpConfig;
/// use mcp_server::SessionConfig;
///
/// let sessions = SessionConfig::new()
///     .max_sessions(50_000)
///     .max_sessions_per_peer(20)
///     .ttl(Duration::from_secs(600));
/// let config = HttpConfig::new().sessions(sessions);
/// # let _ = config;
/// ```
#[derive(Clone, Debug)]
pub struct SessionConfig {
    pub(crate) ttl: Duration,
    pub(crate) cache: Duration,
    pub(crate) namespace: Namespace,
    pub(crate) max_sessions: usize,
    pub(crate) max_sessions_per_principal: Option<usize>,
    pub(crate) max_sessions_per_peer: Option<usize>,
    pub(crate) max_calls_per_session: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl SessionConfig {
    /// The defaults (see the table on the type).
    pub fn new() -> Self {
        Self {
            ttl: DEFAULT_SESSION_TTL,
            cache: DEFAULT_SESSION_CACHE,
            namespace: Namespace::root(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_principal: None,
            max_sessions_per_peer: None,
            max_calls_per_session: DEFAULT_MAX_CALLS_PER_SESSION,
        }
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
    /// was deleted on another worker): at most one [`ttl`](Self::ttl) after
    /// that. Every eviction is counted (`mcp_sessions_evicted_total{reason="cap"}`) and logged
    /// (at most one line per 5 s, with the number not logged since). Values below 1 count as 1.
    ///
    /// ```
    /// use mcp_server::SessionConfig;
    ///
    /// let config = SessionConfig::new().max_sessions(50_000);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max.max(1);
        self
    }

    /// The most sessions one principal (an authenticated issuer and subject, see
    /// [`HttpConfig::auth`](crate::http::HttpConfig::auth)) holds at once, Streamable HTTP and HTTP+SSE together, counted on
    /// all workers that share the hub. Default: `max(16, max_sessions / 100)`, 100 with the
    /// default [`max_sessions`](Self::max_sessions), and no limit when `max_sessions` is
    /// `usize::MAX`; values below 1 count as 1, and `usize::MAX` turns the limit off. Without
    /// [`HttpConfig::auth`](crate::http::HttpConfig::auth) there is no principal and this limit does not apply.
    ///
    /// So one principal cannot take every session of the server: at its limit, its
    /// `initialize` that would mint a session gets HTTP 503 with the revision's JSON-RPC
    /// error for an unavailable server (`-32603`, naming the request's id and the limit), and
    /// its `GET /sse` gets 503; other principals are served as before. Nothing of the
    /// principal's is ended to make room (a session in use elsewhere is never evicted): a
    /// session frees its place when the client deletes it (`DELETE`, or the HTTP+SSE stream
    /// closes) or when it expires ([`ttl`](Self::ttl) after its last use).
    ///
    /// Each principal has one record in the hub's state store (the ids of its sessions, 35
    /// bytes each, so keep the limit in the hundreds), renewed with its sessions; minting,
    /// deleting and renewing a principal's session cost one or two more store operations.
    /// At the limit, the sessions listed are looked up (one read each) to drop those that
    /// expired.
    ///
    /// ```
    /// use mcp_server::SessionConfig;
    ///
    /// let config = SessionConfig::new().max_sessions_per_principal(20);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_sessions_per_principal(mut self, max: usize) -> Self {
        self.max_sessions_per_principal = Some(max.max(1));
        self
    }

    /// The most sessions without a principal (no [`HttpConfig::auth`](crate::http::HttpConfig::auth)) one client address
    /// holds on this endpoint (one worker) at once, Streamable HTTP and HTTP+SSE together.
    /// Default: `max(16, max_sessions / 100)`, 100 with the default
    /// [`max_sessions`](Self::max_sessions), and no limit when `max_sessions` is `usize::MAX`;
    /// values below 1 count as 1, and `usize::MAX` turns the limit off. Authenticated
    /// sessions are counted per principal instead
    /// ([`max_sessions_per_principal`](Self::max_sessions_per_principal)).
    ///
    /// The client address is the connection's, or, when the connection comes from one of the
    /// [`HttpConfig::trusted_proxies`](crate::http::HttpConfig::trusted_proxies), the address they report; IPv6 addresses
    /// count by their /64 network (one host commonly has a whole /64), IPv4-mapped ones as
    /// IPv4. A mounted endpoint (not run by [`serve`](crate::http::serve()) and its siblings)
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
    /// use mcp_server::SessionConfig;
    ///
    /// let config = SessionConfig::new().max_sessions_per_peer(50);
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
    /// use mcp_server::SessionConfig;
    ///
    /// let config = SessionConfig::new().max_calls_per_session(16);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_calls_per_session(mut self, max: usize) -> Self {
        self.max_calls_per_session = max.max(1);
        self
    }

    /// How long a session lives after its last use; the TTL is renewed lazily (at most once per
    /// quarter of the TTL per worker), never by a write on every request. Default is one hour.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_millis(1));
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
    pub fn cache(mut self, trust: Duration) -> Self {
        self.cache = trust;
        self
    }

    /// The namespace (tenant) of sessions, their streams and cancellations, request state and
    /// question topics. Default is the root namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: Namespace) -> Self {
        self.namespace = namespace;
        self
    }

    /// The sessions of `server` with these settings, and the registry of their running calls
    /// (for cross-worker cancellation and the per-session call limit).
    pub(crate) fn build(&self, server: &Server) -> (Sessions, Arc<Cancels>) {
        let settings = server.settings();
        let cancels = Arc::new(Cancels::new(self.max_calls_per_session));
        let sessions = Sessions::new(
            settings.states.store().clone(),
            self.namespace.clone(),
            self.ttl,
            Some((settings.log.clone(), self.cache)),
        )
        .limited(
            self.max_sessions,
            self.sessions_per_principal(),
            self.sessions_per_peer(),
            cancels.clone(),
        )
        .noting(settings.refusals.clone());
        #[cfg(feature = "metrics")]
        let sessions = sessions.metered(settings.metrics.clone());
        (sessions, cancels)
    }
}

#[cfg(test)]
mod tests {
    use super::SessionConfig;

    #[test]
    fn the_per_principal_session_limit_is_a_small_share_of_the_session_limit() {
        // (config, the limit in force)
        for (config, limit) in [
            (SessionConfig::new(), 100),
            (SessionConfig::new().max_sessions(500), 16),
            (SessionConfig::new().max_sessions(50_000), 500),
            (SessionConfig::new().max_sessions(usize::MAX), usize::MAX),
            (SessionConfig::new().max_sessions_per_principal(0), 1),
            (
                SessionConfig::new()
                    .max_sessions(usize::MAX)
                    .max_sessions_per_principal(7),
                7,
            ),
        ] {
            assert_eq!(config.sessions_per_principal(), limit, "{config:?}");
            // The per-address limit follows the same rule.
            let config = match config.max_sessions_per_principal {
                Some(max) => SessionConfig {
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
