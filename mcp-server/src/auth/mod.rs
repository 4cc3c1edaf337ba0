//! The OAuth 2.1 resource server: who may call this server, with which scopes.
//!
//! A [`ResourceServer`] is configured once on the HTTP endpoint and applies to Streamable HTTP
//! and HTTP+SSE alike, on every revision:
//!
//! - its protected resource metadata (RFC 9728) is served at the path-inserted location
//!   (`/.well-known/oauth-protected-resource/mcp` for an endpoint at `/mcp`) and at the root;
//!   with HTTP+SSE on, that endpoint is a resource of its own (`…/sse` next to `…/mcp`, its
//!   metadata at `/.well-known/oauth-protected-resource/sse`), which the challenges on `/sse`
//!   and its message endpoint name, and a token issued for either resource of this server is
//!   accepted on both;
//! - a request without a valid token gets 401 with
//!   `WWW-Authenticate: Bearer resource_metadata="…", scope="…"`, one whose token lacks a scope
//!   gets 403 with `error="insufficient_scope"` and the scope needed, each with the JSON-RPC
//!   error body of the request's revision;
//! - tokens are checked by a [`TokenVerifier`] (signature or introspection) and then by the
//!   rules every token must pass ([`TokenRules`]: issuer, audience = this resource, expiry):
//!   a token issued for another resource is refused and never passed on;
//! - the [`Principal`] becomes the request's owner: sessions, request state, pushed questions
//!   and streams are bound to it, and handlers read it from the
//!   [`Exchange`](crate::Exchange).
//!
//! Verified tokens are cached (by a SHA-256 of the token, never the token itself) until they
//! expire or the cache's time-to-live passes, so a busy client costs one verification, not one
//! per request.
//!
//! # DPoP (RFC 9449)
//!
//! A token whose claims carry `cnf.jkt` is DPoP-bound: it is accepted only as
//! `Authorization: DPoP <token>` with one `DPoP` header holding a proof signed by the bound
//! key, for this request's method and URI, issued within the `iat` window, for this token
//! (`ath`), and never seen before. Presented as `Bearer`, or without a valid proof, it gets
//! 401 with a `DPoP` challenge (`error="invalid_token"`, or `use_dpop_nonce` with a
//! `DPoP-Nonce` header when [nonces](ResourceServerBuilder::dpop_nonces) are on). An unbound
//! token under the `DPoP` scheme is refused too (no downgrade either way). The metadata lists
//! `dpop_signing_alg_values_supported`, and `dpop_bound_access_tokens_required` when
//! [`require_dpop`](ResourceServerBuilder::require_dpop) is set.
//!
//! - **The URI a proof must name** (`htu`) is built from the configured resource URL, never
//!   from the request's `Host` header: the resource's scheme and authority, and its path up to
//!   the endpoint's path, followed by the request's path. Behind a proxy, configure the public
//!   URL clients use as the resource.
//! - **Replay**: each proof's `jti` (hashed with the key's thumbprint) is created in the state
//!   store with a time to live of the `iat` window; a second use anywhere is refused. On an
//!   HTTP endpoint the store is the server's (its hub: every worker sharing it refuses a proof
//!   another worker accepted) unless [`dpop_replay_store`](ResourceServerBuilder::dpop_replay_store)
//!   names one. Only proofs that passed every other check, with a valid bound token, are
//!   recorded, so the records are bounded by the authenticated request rate times the window
//!   (66 s by default), each a fixed-size key with an empty value.
//!
//! ```
//! use mcp_server::auth::{ResourceServer, StaticTokens};
//! use mcp_auth::{Claims, ScopeSet};
//!
//! let tokens = StaticTokens::new().token(
//!     "test-token",
//!     Claims {
//!         iss: Some("https://auth.example.com".into()),
//!         sub: Some("alice".into()),
//!         aud: Some(mcp_auth::Audience::One("https://mcp.example.com/mcp".into())),
//!         exp: Some(i64::MAX / 2),
//!         scope: ScopeSet::parse("mcp:read"),
//!         ..Claims::default()
//!     },
//! );
//! let auth = ResourceServer::builder("https://mcp.example.com/mcp", "https://auth.example.com")
//!     .scopes_supported(["mcp:read", "mcp:deploy"])
//!     .required_scopes(["mcp:read"])
//!     .verifier(tokens)
//!     .build()
//!     .unwrap();
//! assert_eq!(auth.metadata().resource, "https://mcp.example.com/mcp");
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, StatusCode};
use mcp_auth::dpop::{DpopError, DpopRequest, DpopVerifier};
use mcp_auth::{BearerChallenge, BearerScheme, ProtectedResourceMetadata};
pub use mcp_auth::{Claims, Principal, ScopeSet, TokenError, TokenRules};
use mcp_hub::{Namespace, StateStore, StoreError};
use sha2::{Digest, Sha256};

pub(crate) mod fetch;
mod introspection;
mod jwt;

pub use introspection::IntrospectionVerifier;
pub use jwt::JwtVerifier;

/// Checks an access token's signature (or asks its issuer about it) and gives its claims.
/// [`TokenRules`] run afterwards, whatever the verifier: a verifier need not check issuer,
/// audience or expiry itself.
pub trait TokenVerifier: Send + Sync + 'static {
    /// The verified claims of `token`, or why it is not valid. A backend that cannot be
    /// reached (a key set or an introspection endpoint down) is
    /// [`VerifyError::Unavailable`], which the client sees as 503, not as a bad token.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Claims, VerifyError>>;

    /// Why this verifier cannot work as configured, if it cannot (say a key set URL that is
    /// neither `https://` nor `http://` to a loopback host): [`ResourceServerBuilder::build`]
    /// then fails with [`AuthConfigError::Verifier`]. Default: `None`.
    fn configuration_error(&self) -> Option<String> {
        None
    }
}

/// Why a verifier gave no claims.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The token is not valid (401).
    #[error(transparent)]
    Token(#[from] TokenError),
    /// What the verifier needs is unreachable (503).
    #[error("the token cannot be verified now: {0}")]
    Unavailable(String),
}

/// A fixed table of tokens and their claims: for tests and local development only (the
/// tokens are bearer secrets kept in memory; a real deployment verifies signed tokens or asks
/// its authorization server).
#[derive(Clone, Default)]
pub struct StaticTokens(HashMap<String, Claims>);

impl StaticTokens {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `token` with `claims`.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>, claims: Claims) -> Self {
        self.0.insert(token.into(), claims);
        self
    }
}

impl fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The tokens are secrets.
        f.debug_struct("StaticTokens")
            .field("tokens", &self.0.len())
            .finish()
    }
}

impl TokenVerifier for StaticTokens {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Claims, VerifyError>> {
        let claims = self
            .0
            .get(token)
            .cloned()
            .ok_or_else(|| TokenError::Invalid("unknown token".into()).into());
        Box::pin(std::future::ready(claims))
    }
}

/// A request the resource server refuses: the HTTP status, the challenge for
/// `WWW-Authenticate`, and a sentence for the JSON-RPC error (never the token).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthRefusal {
    /// 401 (no valid token), 403 (a scope is missing) or 503 (verification unavailable).
    pub status: StatusCode,
    /// The `WWW-Authenticate` challenge (none with 503).
    pub challenge: Option<Box<BearerChallenge>>,
    /// Why, for the JSON-RPC error message and logs. For a 401 it is a fixed sentence per
    /// kind of error, as the challenge's `error_description` is (never the verifier's
    /// detail, such as a parser's message or the accepted algorithms: that is logged at
    /// DEBUG).
    pub reason: String,
    /// The nonce a `use_dpop_nonce` refusal sends in the `DPoP-Nonce` header.
    pub dpop_nonce: Option<String>,
    /// Seconds a 503 tells the client to wait (`Retry-After`), when known.
    pub retry_after: Option<u64>,
}

impl AuthRefusal {
    /// The `WWW-Authenticate` header value, if the refusal has a challenge.
    pub fn www_authenticate(&self) -> Option<HeaderValue> {
        let challenge = self.challenge.as_ref()?;
        HeaderValue::from_str(&challenge.to_string()).ok()
    }
}

/// The defaults of [`ResourceServerBuilder`].
const DEFAULT_CACHE_ENTRIES: usize = 10_000;
const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(300);
const DEFAULT_DPOP_REPLAY_LIMIT: usize = 100_000;
/// The longest token the verification cache keeps (see [`ResourceServerBuilder::cache`]).
const MAX_CACHED_TOKEN: usize = 4096;

/// Settings of a [`ResourceServer`].
pub struct ResourceServerBuilder {
    resource: String,
    issuers: Vec<String>,
    scopes_supported: Option<Vec<String>>,
    required: ScopeSet,
    method_scopes: Vec<(String, ScopeSet)>,
    verifier: Option<Arc<dyn TokenVerifier>>,
    leeway: Duration,
    cache_entries: usize,
    cache_ttl: Duration,
    resource_name: Option<String>,
    hide_tools: bool,
    dpop: DpopVerifier,
    dpop_required: bool,
    dpop_nonce: Option<(Vec<u8>, Duration)>,
    dpop_replay: Option<(Arc<dyn StateStore>, Namespace)>,
    dpop_replay_limit: usize,
}

impl fmt::Debug for ResourceServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServerBuilder")
            .field("resource", &self.resource)
            .field("issuers", &self.issuers)
            .finish_non_exhaustive()
    }
}

/// A configuration that cannot protect anything.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthConfigError {
    /// The resource is not an absolute `http(s)` URL without a fragment.
    #[error(transparent)]
    Resource(#[from] mcp_auth::ResourceError),
    /// No [`TokenVerifier`] was set.
    #[error("a resource server needs a token verifier")]
    NoVerifier,
    /// [`method_scopes`](ResourceServerBuilder::method_scopes) names a method that no
    /// revision defines (a typo would otherwise leave the method unprotected).
    #[error("method scopes for `{0}`: no revision defines this method")]
    UnknownMethod(String),
    /// The verifier cannot work as configured ([`TokenVerifier::configuration_error`]).
    #[error("the token verifier: {0}")]
    Verifier(String),
}

impl ResourceServerBuilder {
    /// Adds another authorization server whose tokens are accepted.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.push(issuer.into());
        self
    }

    /// The scopes listed in the metadata (`scopes_supported`), which a client without a
    /// challenge scope asks for. Default: not listed.
    #[must_use]
    pub fn scopes_supported(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Scopes every request needs; they are the `scope` of the 401 challenge. Every request
    /// to the MCP paths is checked (a POST's calls, `GET` and `DELETE` of the endpoint, the
    /// HTTP+SSE stream's `GET`): a token without them gets 403 `insufficient_scope`. Default:
    /// none (any valid token for this resource).
    #[must_use]
    pub fn required_scopes(mut self, scopes: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        self.required = scopes.into_iter().collect();
        self
    }

    /// Scopes an operation needs on top of the required ones, named by one of its method
    /// names (say `resources/subscribe`). Repeating a method (or another name of the same
    /// operation) adds to its scopes.
    ///
    /// The scopes are keyed by what the method does, not by its name on one revision, so
    /// every revision's name for the operation is covered:
    ///
    /// - `initialize` and `server/discover` (2026-07-28) are one operation (describe the
    ///   server): scopes set on either apply to both;
    /// - scopes set on `resources/subscribe` also apply to a 2026-07-28
    ///   `subscriptions/listen` that asks for `resourceSubscriptions` (scopes set on
    ///   `subscriptions/listen` apply to every listen request);
    /// - the Tasks extension's methods (`tasks/get`, `tasks/list`, …) are keyed by name.
    ///
    /// A name no revision defines makes [`build`](Self::build) fail with
    /// [`AuthConfigError::UnknownMethod`].
    ///
    /// ```
    /// use mcp_server::auth::{ResourceServer, StaticTokens};
    ///
    /// let auth = ResourceServer::builder("https://mcp.example.com/mcp", "https://auth.example.com")
    ///     .method_scopes("resources/subscribe", ["mcp:watch"])
    ///     .verifier(StaticTokens::new())
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(auth.scopes_for("resources/subscribe", None).to_string(), "mcp:watch");
    /// ```
    #[must_use]
    pub fn method_scopes(
        mut self,
        method: impl Into<String>,
        scopes: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Self {
        self.method_scopes
            .push((method.into(), scopes.into_iter().collect()));
        self
    }

    /// How tokens are verified (required).
    #[must_use]
    pub fn verifier(mut self, verifier: impl TokenVerifier) -> Self {
        self.verifier = Some(Arc::new(verifier));
        self
    }

    /// The clock skew allowed on `exp` and `nbf`. Default is 60 s.
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// How many verified tokens are remembered, and for how long at most (never past a
    /// token's expiry). Defaults are 10,000 tokens and 5 minutes. At the limit, expired
    /// entries are dropped first, then the whole cache: a token then costs one more
    /// verification. `0` entries turns the cache off.
    ///
    /// The cache keys a token by its exact bytes (a lookup compares the whole token, so two
    /// tokens never share an entry) and keeps only tokens that verified, of at most
    /// 4 KiB each (a longer one is verified on every request): at most `entries` x 4 KiB of
    /// tokens, all issued by the trusted authorization server.
    #[must_use]
    pub fn cache(mut self, entries: usize, ttl: Duration) -> Self {
        self.cache_entries = entries;
        self.cache_ttl = ttl;
        self
    }

    /// Whether `tools/list` shows only the tools the token's scopes allow it to call (their
    /// [`Tool::scopes`](crate::Tool::scopes)). Default: every tool is listed, and calling one
    /// without its scopes gets 403 with the scopes to step up to.
    #[must_use]
    pub fn hide_unauthorized_tools(mut self, hide: bool) -> Self {
        self.hide_tools = hide;
        self
    }

    /// How DPoP proofs are checked (RFC 9449): the algorithms accepted (listed as
    /// `dpop_signing_alg_values_supported`), the `iat` window and the size limits. Default:
    /// [`DpopVerifier::new`] (every asymmetric algorithm, `iat` at most 60 s old and 5 s ahead,
    /// proofs of at most 8 KiB, `jti` of at most 256 bytes).
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_auth::dpop::DpopVerifier;
    /// use mcp_server::auth::{ResourceServer, StaticTokens};
    ///
    /// let auth = ResourceServer::builder("https://mcp.example.com/mcp", "https://auth.example.com")
    ///     .verifier(StaticTokens::new())
    ///     .dpop(DpopVerifier::new().iat_window(Duration::from_secs(30), Duration::from_secs(2)))
    ///     .require_dpop(true)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(auth.metadata().dpop_bound_access_tokens_required, Some(true));
    /// ```
    #[must_use]
    pub fn dpop(mut self, verifier: DpopVerifier) -> Self {
        self.dpop = verifier;
        self
    }

    /// Whether only DPoP-bound tokens are accepted (`dpop_bound_access_tokens_required` in
    /// the metadata): a bearer token then gets 401 with a `DPoP` challenge. Default: `false`
    /// (bearer tokens and DPoP-bound tokens alike; a bound one always needs its proof).
    #[must_use]
    pub fn require_dpop(mut self, required: bool) -> Self {
        self.dpop_required = required;
        self
    }

    /// Turns on server-provided DPoP nonces (RFC 9449 §9): a proof must carry a nonce this
    /// server gave within the last one or two `lifetime`s, else the request gets 401
    /// `use_dpop_nonce` with the current nonce in `DPoP-Nonce`. Nonces are an HMAC-SHA256 of
    /// the time window under `secret`, so every worker configured with the same secret
    /// accepts the others' nonces without shared state. Default: off (the `iat` window and the
    /// replay store alone bound a proof's use). Keep `secret` at least 32 random bytes and out
    /// of logs and command lines.
    #[must_use]
    pub fn dpop_nonces(mut self, secret: impl AsRef<[u8]>, lifetime: Duration) -> Self {
        self.dpop_nonce = Some((
            secret.as_ref().to_vec(),
            lifetime.max(Duration::from_secs(1)),
        ));
        self
    }

    /// Where the `jti` of accepted DPoP proofs is recorded (set-if-absent, with the `iat`
    /// window as time to live) so that a proof replayed on any worker sharing the store is
    /// refused. Default: the state store of the server whose HTTP endpoint this resource server
    /// is set on (its hub), in the endpoint's namespace; a fresh in-memory store when used
    /// alone.
    #[must_use]
    pub fn dpop_replay_store(mut self, store: Arc<dyn StateStore>, namespace: Namespace) -> Self {
        self.dpop_replay = Some((store, namespace));
        self
    }

    /// The most DPoP replay records this resource server keeps live in the replay store at
    /// once: each accepted proof's `jti` is recorded for the proof's `iat` window (66 s by
    /// default), so this bounds the store's records from this worker to `limit` (and the
    /// hub's to `limit` times the number of workers), whatever the request rate. At the limit a
    /// request with a DPoP proof gets 503 with `Retry-After` (the seconds until this worker's
    /// oldest record expires) and is not served; bearer tokens are unaffected. Default:
    /// 100,000 (a sustained 1,500 DPoP requests per second per worker with the default window,
    /// about 15 MB of 64-character keys in Redis); at least 1.
    #[must_use]
    pub fn dpop_replay_limit(mut self, limit: usize) -> Self {
        self.dpop_replay_limit = limit.max(1);
        self
    }

    /// `resource_name` in the metadata.
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// The resource server.
    pub fn build(self) -> Result<ResourceServer, AuthConfigError> {
        let verifier = self.verifier.ok_or(AuthConfigError::NoVerifier)?;
        if let Some(why) = verifier.configuration_error() {
            return Err(AuthConfigError::Verifier(why));
        }
        let mut method_scopes: HashMap<ScopeKey, ScopeSet> = HashMap::new();
        for (method, scopes) in self.method_scopes {
            let key = ScopeKey::of_name(&method).ok_or(AuthConfigError::UnknownMethod(method))?;
            let entry = method_scopes.entry(key).or_default();
            *entry = entry.union(&scopes);
        }
        let rules =
            TokenRules::new(&self.resource, self.issuers.iter().cloned())?.leeway(self.leeway);
        let mut metadata = ProtectedResourceMetadata::new(rules.audience());
        metadata.authorization_servers = self.issuers;
        metadata.scopes_supported = self.scopes_supported;
        metadata.resource_name = self.resource_name;
        metadata.dpop_signing_alg_values_supported = Some(
            self.dpop
                .algorithm_names()
                .into_iter()
                .map(str::to_owned)
                .collect(),
        );
        metadata.dpop_bound_access_tokens_required = self.dpop_required.then_some(true);
        let replay_set = self.dpop_replay.is_some();
        let (store, namespace) = self.dpop_replay.unwrap_or_else(|| {
            (
                Arc::new(mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default())),
                Namespace::root(),
            )
        });
        let nonce = self.dpop_nonce.map(|(secret, lifetime)| Nonces {
            key: mcp_auth::dpop::NonceKey::new(&secret),
            lifetime: lifetime.as_secs().max(1),
        });
        let algs = self.dpop.algorithm_names().join(" ");
        let budget = Arc::new(ReplayBudget::new(
            self.dpop_replay_limit,
            self.dpop.window(),
        ));
        Ok(ResourceServer {
            endpoints: Arc::new([Endpoint::new(metadata, rules, Vec::new())]),
            dpop: Arc::new(Dpop {
                verifier: self.dpop,
                algs,
                required: self.dpop_required,
                nonces: nonce,
                replay: store,
                namespace,
                replay_set,
                budget,
                htu_base: None,
            }),
            inner: Arc::new(Inner {
                required: self.required,
                method_scopes,
                verifier,
                cache: Mutex::new(crate::FastMap::default()),
                cache_entries: self.cache_entries,
                cache_ttl: self.cache_ttl,
                hide_tools: self.hide_tools,
            }),
        })
    }
}

/// An OAuth 2.1 resource server: see the [module docs](self).
#[derive(Clone)]
pub struct ResourceServer {
    /// The protected endpoints, each its own resource: the configured one first (it also
    /// answers at the root metadata location and for paths no other endpoint claims), then
    /// the HTTP+SSE one when the HTTP endpoint serves it.
    endpoints: Arc<[Endpoint]>,
    dpop: Arc<Dpop>,
    inner: Arc<Inner>,
}

/// The DPoP settings of a [`ResourceServer`].
struct Dpop {
    verifier: DpopVerifier,
    /// The algorithms' names, space-separated (a challenge's `algs`).
    algs: String,
    required: bool,
    nonces: Option<Nonces>,
    replay: Arc<dyn StateStore>,
    namespace: Namespace,
    /// Whether the replay store was configured (else the endpoint's server's store is used).
    replay_set: bool,
    /// This worker's live replay records, bounded (shared by the endpoints' copies).
    budget: Arc<ReplayBudget>,
    /// The resource URL up to the endpoint's path: a request's `htu` is this and its path.
    /// `None` before the resource server is set on an endpoint: then the resource's origin.
    htu_base: Option<String>,
}

/// The DPoP replay records this worker created that are still live, counted per second of
/// creation: at most `limit` at once (see [`ResourceServerBuilder::dpop_replay_limit`]).
struct ReplayBudget {
    limit: usize,
    /// A record's lifetime, in whole seconds rounded up.
    window: i64,
    /// (second of creation, records created in it), oldest first, and their total.
    live: Mutex<(std::collections::VecDeque<(i64, usize)>, usize)>,
}

impl ReplayBudget {
    fn new(limit: usize, window: Duration) -> Self {
        let secs = window.as_secs() + u64::from(window.subsec_nanos() > 0);
        Self {
            limit: limit.max(1),
            window: i64::try_from(secs).unwrap_or(i64::MAX).max(1),
            live: Mutex::new((std::collections::VecDeque::new(), 0)),
        }
    }

    /// Counts one record created at `now`; at the limit, the seconds until the oldest
    /// expires instead.
    fn reserve(&self, now: i64) -> Result<(), u64> {
        let mut guard = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let (seconds, total) = &mut *guard;
        while let Some(&(at, count)) = seconds.front() {
            if at.saturating_add(self.window) > now {
                break;
            }
            seconds.pop_front();
            *total -= count;
        }
        if *total >= self.limit {
            let oldest = seconds.front().map_or(now, |&(at, _)| at);
            let wait = oldest
                .saturating_add(self.window)
                .saturating_sub(now)
                .max(1);
            return Err(u64::try_from(wait).unwrap_or(1));
        }
        match seconds.back_mut() {
            Some((at, count)) if *at == now => *count += 1,
            _ => seconds.push_back((now, 1)),
        }
        *total += 1;
        Ok(())
    }

    /// Forgets a record counted at `at` that was not created after all.
    fn release(&self, at: i64) {
        let mut guard = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let (seconds, total) = &mut *guard;
        if let Some((_, count)) = seconds.iter_mut().rev().find(|(second, _)| *second == at)
            && *count > 0
        {
            *count -= 1;
            *total -= 1;
        }
    }
}

/// Stateless DPoP nonces: an HMAC of the time window.
struct Nonces {
    key: mcp_auth::dpop::NonceKey,
    /// Seconds per window.
    lifetime: u64,
}

impl Nonces {
    fn at(&self, window: i64) -> String {
        let tag = self.key.tag(&window.to_be_bytes());
        format!(
            "{window}.{}",
            base64::Engine::encode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                &tag[..16]
            )
        )
    }

    fn window(&self, now: i64) -> i64 {
        now.div_euclid(i64::try_from(self.lifetime).unwrap_or(i64::MAX))
    }

    /// The nonce to give now, and the two accepted (this window's and the last one's).
    fn current(&self, now: i64) -> (String, String) {
        let window = self.window(now);
        (self.at(window), self.at(window.saturating_sub(1)))
    }
}

/// One protected endpoint of the server: its resource, metadata and token rules.
struct Endpoint {
    /// The request paths of the endpoint (none for the configured one: it is the fallback).
    paths: Vec<String>,
    metadata: ProtectedResourceMetadata,
    /// The metadata as served (JSON).
    body: Bytes,
    /// The absolute URL of the metadata (path-inserted), as challenges name it.
    metadata_url: String,
    /// The path of `metadata_url` on this server.
    metadata_path: String,
    /// The rules of tokens issued for this resource.
    rules: TokenRules,
}

impl Endpoint {
    fn new(metadata: ProtectedResourceMetadata, rules: TokenRules, paths: Vec<String>) -> Self {
        let metadata_url = mcp_auth::protected_resource_metadata_urls(rules.audience())
            .ok()
            .and_then(|urls| urls.into_iter().next())
            .unwrap_or_default();
        let metadata_path = url_path(&metadata_url).unwrap_or_default().to_owned();
        let body = Bytes::from(serde_json::to_vec(&metadata).unwrap_or_default());
        Self {
            paths,
            metadata,
            body,
            metadata_url,
            metadata_path,
            rules,
        }
    }
}

/// The path of an absolute URL, without its query.
fn url_path(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let path = &rest[rest.find('/')?..];
    path.split('?').next()
}

/// What [`ResourceServerBuilder::method_scopes`] keys scopes by: an operation, whatever a
/// revision calls it, or the name of an extension's method.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ScopeKey {
    Operation(mcp_adapters::Operation),
    Extension(String),
}

impl ScopeKey {
    /// The key of a method name: the operation any revision maps it to, else a Tasks
    /// extension method by name; `None` for a name nothing defines.
    fn of_name(method: &str) -> Option<Self> {
        let operation = mcp_adapters::Revision::ALL
            .iter()
            .find_map(|revision| mcp_adapters::Adapter::from(*revision).operation(method));
        match operation {
            Some(operation) => Some(Self::Operation(operation)),
            None => {
                use mcp_wire::names::method;
                [
                    method::TASKS_GET,
                    method::TASKS_RESULT,
                    method::TASKS_LIST,
                    method::TASKS_CANCEL,
                    method::TASKS_UPDATE,
                ]
                .contains(&method)
                .then(|| Self::Extension(method.to_owned()))
            }
        }
    }
}

/// Whether a 2026-07-28 `subscriptions/listen` asks for resource updates (what
/// `resources/subscribe` does on the other revisions).
fn listens_to_resources(call: &mcp_adapters::Call) -> bool {
    call.params
        .get("notifications")
        .and_then(|n| n.get("resourceSubscriptions"))
        .and_then(serde_json::Value::as_array)
        .is_some_and(|uris| !uris.is_empty())
}

struct Inner {
    required: ScopeSet,
    method_scopes: HashMap<ScopeKey, ScopeSet>,
    verifier: Arc<dyn TokenVerifier>,
    /// Verified tokens by their exact bytes (compared whole, so no two tokens can share an
    /// entry), in a seeded hash table.
    cache: Mutex<crate::FastMap<Box<[u8]>, Cached>>,
    cache_entries: usize,
    cache_ttl: Duration,
    hide_tools: bool,
}

struct Cached {
    principal: Arc<Principal>,
    /// The principal's owner digest (see [`owner_digest`]), computed once per token.
    owner: Owner,
    /// Seconds since the epoch after which the entry is not used.
    until: i64,
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let resources: Vec<&str> = self
            .endpoints
            .iter()
            .map(|e| e.metadata.resource.as_str())
            .collect();
        f.debug_struct("ResourceServer")
            .field("resources", &resources)
            .field("issuers", &self.primary().rules.issuers())
            .finish_non_exhaustive()
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl ResourceServer {
    /// Protects `resource` (the URL clients use for the MCP endpoint, say
    /// `https://mcp.example.com/mcp`) with tokens issued by `issuer`.
    pub fn builder(
        resource: impl Into<String>,
        issuer: impl Into<String>,
    ) -> ResourceServerBuilder {
        ResourceServerBuilder {
            resource: resource.into(),
            issuers: vec![issuer.into()],
            scopes_supported: None,
            required: ScopeSet::new(),
            method_scopes: Vec::new(),
            verifier: None,
            leeway: Duration::from_secs(60),
            cache_entries: DEFAULT_CACHE_ENTRIES,
            cache_ttl: DEFAULT_CACHE_TTL,
            resource_name: None,
            hide_tools: false,
            dpop: DpopVerifier::new(),
            dpop_required: false,
            dpop_nonce: None,
            dpop_replay: None,
            dpop_replay_limit: DEFAULT_DPOP_REPLAY_LIMIT,
        }
    }

    /// The same resource server for an HTTP endpoint whose Streamable HTTP endpoint is at
    /// `path` and, with `legacy`, whose HTTP+SSE endpoint is at `legacy.0` with its message
    /// endpoint at `legacy.1`. The HTTP+SSE endpoint becomes a resource of its own: the
    /// configured resource with its last `path` replaced by the SSE path (nothing is added
    /// when the resource does not end with `path`). The token cache is shared.
    ///
    /// `store` is the server's state store and the endpoint's namespace: DPoP replay records
    /// go there unless the builder named a store.
    pub(crate) fn for_endpoint(
        &self,
        path: &str,
        legacy: Option<(&str, &str)>,
        store: Option<(Arc<dyn StateStore>, Namespace)>,
    ) -> Self {
        let primary = self.primary();
        let mut endpoints = vec![Endpoint::new(
            primary.metadata.clone(),
            primary.rules.clone(),
            Vec::new(),
        )];
        let resource = primary.rules.audience();
        let sse_resource = legacy.and_then(|(sse_path, message_path)| {
            let base = resource.strip_suffix(path).filter(|_| !path.is_empty())?;
            let sse = format!("{base}{sse_path}");
            let rules = primary.rules.for_resource(&sse).ok()?;
            (rules.audience() != resource).then_some((rules, sse_path, message_path))
        });
        if let Some((rules, sse_path, message_path)) = sse_resource {
            let mut metadata = primary.metadata.clone();
            metadata.resource = rules.audience().to_owned();
            endpoints.push(Endpoint::new(
                metadata,
                rules,
                vec![sse_path.to_owned(), message_path.to_owned()],
            ));
        }
        let dpop = &self.dpop;
        let (replay, namespace) = match store {
            Some(store) if !dpop.replay_set => store,
            _ => (dpop.replay.clone(), dpop.namespace.clone()),
        };
        let htu_base = resource
            .strip_suffix(path)
            .filter(|_| !path.is_empty())
            .map(str::to_owned);
        Self {
            endpoints: endpoints.into(),
            dpop: Arc::new(Dpop {
                verifier: dpop.verifier.clone(),
                algs: dpop.algs.clone(),
                required: dpop.required,
                nonces: dpop.nonces.as_ref().map(|n| Nonces {
                    key: n.key.clone(),
                    lifetime: n.lifetime,
                }),
                replay,
                namespace,
                replay_set: dpop.replay_set,
                budget: dpop.budget.clone(),
                htu_base,
            }),
            inner: self.inner.clone(),
        }
    }

    /// The URI a DPoP proof of a request at `path` must name (see the module docs): built
    /// from the configured resource, never from the `Host` header.
    fn htu(&self, path: &str) -> String {
        let resource = self.primary().rules.audience();
        if path.is_empty() {
            return resource.to_owned();
        }
        match &self.dpop.htu_base {
            Some(base) => format!("{base}{path}"),
            None => match mcp_auth::metadata::origin_of(resource) {
                Some(origin) => format!("{origin}{path}"),
                None => resource.to_owned(),
            },
        }
    }

    fn primary(&self) -> &Endpoint {
        &self.endpoints[0]
    }

    /// The endpoint a request at `path` is for: the one that claims the path, else the
    /// configured one.
    fn endpoint(&self, path: &str) -> &Endpoint {
        self.endpoints
            .iter()
            .find(|e| e.paths.iter().any(|p| p == path))
            .unwrap_or_else(|| self.primary())
    }

    /// Whether `tools/list` hides the tools a token may not call.
    pub(crate) fn hides_tools(&self) -> bool {
        self.inner.hide_tools
    }

    /// The protected resource metadata served for the configured resource.
    pub fn metadata(&self) -> &ProtectedResourceMetadata {
        &self.primary().metadata
    }

    /// The absolute URL of the configured resource's metadata, as challenges name it.
    pub fn metadata_url(&self) -> &str {
        &self.primary().metadata_url
    }

    /// The resources this server accepts tokens for: the configured one first, then the
    /// HTTP+SSE endpoint's once the resource server is set on an HTTP endpoint serving it.
    pub fn resources(&self) -> impl Iterator<Item = &str> {
        self.endpoints.iter().map(|e| e.metadata.resource.as_str())
    }

    /// The absolute URL of the metadata a challenge for a request at `path` names: that of
    /// the endpoint's own resource (`…/.well-known/oauth-protected-resource/sse` for `/sse`
    /// and its message endpoint when HTTP+SSE is served).
    pub fn metadata_url_for(&self, path: &str) -> &str {
        &self.endpoint(path).metadata_url
    }

    /// The metadata document (JSON) served at `path`, if `path` is one of its locations on
    /// this server: each endpoint's path-inserted one, and the root one (the configured
    /// resource's).
    pub(crate) fn metadata_at(&self, path: &str) -> Option<Bytes> {
        if path == mcp_auth::metadata::PROTECTED_RESOURCE_SUFFIX {
            return Some(self.primary().body.clone());
        }
        self.endpoints
            .iter()
            .find(|e| e.metadata_path == path)
            .map(|e| e.body.clone())
    }

    fn challenge(&self, path: &str) -> BearerChallenge {
        let challenge = BearerChallenge::new(self.metadata_url_for(path).to_owned());
        if self.inner.required.is_empty() {
            challenge
        } else {
            challenge.scope(self.inner.required.to_string())
        }
    }

    fn unauthorized(&self, path: &str, error: Option<&TokenError>) -> AuthRefusal {
        let mut challenge = self.challenge(path);
        if self.dpop.required {
            // A server that takes only DPoP-bound tokens says so in its challenge too, not
            // only in its metadata (RFC 9449 §7.1).
            challenge = challenge.dpop(self.dpop.algs.clone());
        }
        let reason = match error {
            Some(error) => {
                // The detail (a parser's message, the accepted algorithms) stays in the log:
                // the client gets a fixed sentence per kind of error.
                tracing::debug!(%error, "an access token was refused");
                let public = public_description(error);
                challenge = challenge.error("invalid_token", Some(public));
                public.to_owned()
            }
            None => "this server needs an access token".to_owned(),
        };
        AuthRefusal {
            status: StatusCode::UNAUTHORIZED,
            challenge: Some(Box::new(challenge)),
            reason,
            dpop_nonce: None,
            retry_after: None,
        }
    }

    /// A 401 with a `DPoP` challenge (RFC 9449 §7.1): `invalid_token`, or `use_dpop_nonce`
    /// with the nonce to use.
    fn dpop_refusal(&self, path: &str, error: &DpopError, now: i64) -> AuthRefusal {
        tracing::debug!(%error, "DPoP proof refused");
        let code = error.resource_error_code();
        let challenge = self
            .challenge(path)
            .error(code, Some(&error.to_string()))
            .dpop(self.dpop.algs.clone());
        let dpop_nonce = match (error, &self.dpop.nonces) {
            (DpopError::UseNonce, Some(nonces)) => Some(nonces.current(now).0),
            _ => None,
        };
        AuthRefusal {
            status: StatusCode::UNAUTHORIZED,
            challenge: Some(Box::new(challenge)),
            reason: error.to_string(),
            dpop_nonce,
            retry_after: None,
        }
    }

    /// Checks the DPoP binding of a request whose token is `token` (sent under the `DPoP`
    /// scheme when `dpop_scheme`) and whose principal is `principal`.
    async fn check_dpop(
        &self,
        request: &Presented<'_>,
        principal: &Principal,
        now: i64,
    ) -> Result<(), AuthRefusal> {
        let &Presented {
            method,
            path,
            headers,
            token,
            dpop_scheme,
        } = request;
        let Some(jkt) = principal.dpop_jkt.as_deref() else {
            if dpop_scheme {
                // An unbound token is not sent under the DPoP scheme (no downgrade).
                return Err(self.dpop_refusal(path, &DpopError::KeyMismatch, now));
            }
            if self.dpop.required {
                return Err(self.dpop_refusal(path, &DpopError::Missing, now));
            }
            return Ok(());
        };
        if !dpop_scheme {
            // A DPoP-bound token presented as a bearer token (RFC 9449 §7.2).
            return Err(self.dpop_refusal(path, &DpopError::Missing, now));
        }
        let mut proofs = headers.get_all("dpop").iter();
        let (Some(proof), None) = (proofs.next(), proofs.next()) else {
            return Err(self.dpop_refusal(path, &DpopError::Missing, now));
        };
        let Ok(proof) = proof.to_str() else {
            return Err(self.dpop_refusal(path, &DpopError::Malformed("not text"), now));
        };
        let token = std::str::from_utf8(token).unwrap_or_default();
        let htu = self.htu(path);
        let nonces = self.dpop.nonces.as_ref().map(|n| n.current(now));
        let accepted: Vec<&str> = nonces
            .as_ref()
            .map(|(a, b)| vec![a.as_str(), b.as_str()])
            .unwrap_or_default();
        let mut request = DpopRequest::new(method.as_str(), &htu, now)
            .access_token(token)
            .bound_to(jkt);
        if nonces.is_some() {
            request = request.nonces(&accepted);
        }
        let verified = self
            .dpop
            .verifier
            .verify(proof, &request)
            .map_err(|e| self.dpop_refusal(path, &e, now))?;
        let key = self
            .dpop
            .namespace
            .key(&format!("dpop-jti/{}", verified.replay_key()));
        if let Err(wait) = self.dpop.budget.reserve(now) {
            tracing::warn!(
                limit = self.dpop.budget.limit,
                "DPoP replay records at their limit; proofs refused for now"
            );
            return Err(AuthRefusal {
                status: StatusCode::SERVICE_UNAVAILABLE,
                challenge: None,
                reason: "too many DPoP proofs to record for replay checks now; retry later".into(),
                dpop_nonce: None,
                retry_after: Some(wait),
            });
        }
        let created = self
            .dpop
            .replay
            .create(&key, Bytes::new(), self.dpop.verifier.window())
            .await;
        if created.is_err() {
            self.dpop.budget.release(now);
        }
        match created {
            Ok(_) => Ok(()),
            Err(StoreError::AlreadyExists) => {
                Err(self.dpop_refusal(path, &DpopError::Replayed, now))
            }
            Err(err) => {
                tracing::warn!(%err, "DPoP proofs cannot be checked for replay");
                Err(AuthRefusal {
                    status: StatusCode::SERVICE_UNAVAILABLE,
                    challenge: None,
                    reason: "access tokens cannot be verified now".into(),
                    dpop_nonce: None,
                    retry_after: None,
                })
            }
        }
    }

    /// The principal of a request to the configured resource, from its
    /// `Authorization: Bearer` header (see [`authenticate_at`](Self::authenticate_at)).
    ///
    /// A DPoP-bound token's proof is checked as for a `POST` to the resource (use
    /// [`authenticate_request`](Self::authenticate_request) for another method).
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Arc<Principal>, AuthRefusal> {
        self.authenticate_request(&http::Method::POST, "", headers)
            .await
    }

    /// The principal of a `method` request at `path` (empty for the configured resource), from
    /// its `Authorization` header, with the DPoP proof of a DPoP-bound token checked against
    /// that method and the URI the resource server builds for `path` (see the module docs).
    pub async fn authenticate_request(
        &self,
        method: &http::Method,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<Arc<Principal>, AuthRefusal> {
        self.authenticate_owner(method, path, headers)
            .await
            .map(|(principal, _)| principal)
    }

    /// The principal of a request at `path`, from its `Authorization: Bearer` header. A
    /// token issued for any resource of this server is accepted; a refusal's challenge names
    /// the metadata of the resource at `path`.
    pub async fn authenticate_at(
        &self,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<Arc<Principal>, AuthRefusal> {
        self.authenticate_owner(&http::Method::POST, path, headers)
            .await
            .map(|(principal, _)| principal)
    }

    /// [`authenticate_at`](Self::authenticate_at), with the principal's owner digest (kept
    /// with the cached token, so a request of a known token hashes nothing more).
    pub(crate) async fn authenticate_owner(
        &self,
        method: &http::Method,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<(Arc<Principal>, Owner), AuthRefusal> {
        let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(self.unauthorized(path, None));
        };
        // Read as bytes: a cached token is found without validating the header as text.
        let Some((scheme, token)) = bearer_token(value.as_bytes()) else {
            return Err(self.unauthorized(
                path,
                Some(&TokenError::Invalid(
                    "the Authorization header is not a bearer token".into(),
                )),
            ));
        };
        let now = now();
        // Only a token that passed the syntax check below was ever cached, so a cached one
        // needs no check again.
        let presented = Presented {
            method,
            path,
            headers,
            token,
            dpop_scheme: scheme == BearerScheme::DPoP,
        };
        if let Some(found) = self.cached(token, now) {
            self.check_dpop(&presented, &found.0, now).await?;
            return Ok(found);
        }
        let Some(token) = std::str::from_utf8(token).ok().filter(|t| is_token68(t)) else {
            return Err(self.unauthorized(
                path,
                Some(&TokenError::Invalid(
                    "the Authorization header is not a bearer token".into(),
                )),
            ));
        };
        let claims = match self.inner.verifier.verify(token).await {
            Ok(claims) => claims,
            Err(VerifyError::Token(error)) => return Err(self.unauthorized(path, Some(&error))),
            Err(VerifyError::Unavailable(why)) => {
                tracing::warn!(%why, "access tokens cannot be verified");
                return Err(AuthRefusal {
                    status: StatusCode::SERVICE_UNAVAILABLE,
                    challenge: None,
                    reason: "access tokens cannot be verified now".into(),
                    dpop_nonce: None,
                    retry_after: None,
                });
            }
        };
        let principal = self
            .check(claims, now)
            .map_err(|error| self.unauthorized(path, Some(&error)))?;
        let principal = Arc::new(principal);
        let owner = Owner {
            principal: principal.clone(),
            digest: Arc::from(owner_digest(Some(&principal)).unwrap_or_default()),
            binding: Arc::from(principal.binding()),
        };
        self.remember(token.as_bytes(), &principal, &owner, now);
        self.check_dpop(&presented, &principal, now).await?;
        Ok((principal, owner))
    }

    /// The principal of verified `claims` if they pass the rules of one of this server's
    /// resources (the configured one's error otherwise).
    fn check(&self, claims: Claims, now: i64) -> Result<Principal, TokenError> {
        let Some((primary, others)) = self.endpoints.split_first() else {
            return Err(TokenError::WrongAudience);
        };
        match primary.rules.check(claims.clone(), now) {
            Err(TokenError::WrongAudience) => others
                .iter()
                .find_map(|e| e.rules.check(claims.clone(), now).ok())
                .ok_or(TokenError::WrongAudience),
            checked => checked,
        }
    }

    fn cached(&self, token: &[u8], now: i64) -> Option<(Arc<Principal>, Owner)> {
        let cache = self.inner.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(token)
            .filter(|entry| entry.until >= now)
            .map(|entry| (entry.principal.clone(), entry.owner.clone()))
    }

    fn remember(&self, token: &[u8], principal: &Arc<Principal>, owner: &Owner, now: i64) {
        let limit = self.inner.cache_entries;
        if limit == 0 || token.len() > MAX_CACHED_TOKEN {
            return;
        }
        let ttl = i64::try_from(self.inner.cache_ttl.as_secs()).unwrap_or(i64::MAX);
        let until = principal
            .claims
            .exp
            .unwrap_or(i64::MAX)
            .min(now.saturating_add(ttl));
        let mut cache = self.inner.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= limit {
            cache.retain(|_, entry| entry.until >= now);
            if cache.len() >= limit {
                cache.clear();
            }
        }
        cache.insert(
            Box::from(token),
            Cached {
                principal: principal.clone(),
                owner: owner.clone(),
                until,
            },
        );
    }

    /// The scopes `method` needs beyond the token being valid: the required ones and the
    /// scopes of the method's operation (whatever revision's name `method` is, see
    /// [`ResourceServerBuilder::method_scopes`]), plus `extra` (a tool's, resource's or
    /// prompt's).
    pub fn scopes_for(&self, method: &str, extra: Option<&ScopeSet>) -> ScopeSet {
        let key = ScopeKey::of_name(method);
        self.needed(
            key.iter().map(|key| self.inner.method_scopes.get(key)),
            extra,
        )
    }

    /// [`scopes_for`](Self::scopes_for) a decoded call.
    pub(crate) fn scopes_for_call(
        &self,
        call: &mcp_adapters::Call,
        extra: Option<&ScopeSet>,
    ) -> ScopeSet {
        self.needed(self.call_scopes(call), extra)
    }

    fn needed<'a>(
        &self,
        sets: impl Iterator<Item = Option<&'a ScopeSet>>,
        extra: Option<&ScopeSet>,
    ) -> ScopeSet {
        let mut needed = self.inner.required.clone();
        for scopes in sets.flatten() {
            needed = needed.union(scopes);
        }
        if let Some(extra) = extra {
            needed = needed.union(extra);
        }
        needed
    }

    /// The method scopes that apply to `call`: its operation's (or its extension method's),
    /// and for a listen asking for resource updates, those of `resources/subscribe`.
    fn call_scopes<'a>(
        &'a self,
        call: &mcp_adapters::Call,
    ) -> impl Iterator<Item = Option<&'a ScopeSet>> + 'a {
        use mcp_adapters::Operation;
        let scopes = &self.inner.method_scopes;
        let own = if scopes.is_empty() {
            None
        } else if call.operation == Operation::Extension {
            scopes.get(&ScopeKey::Extension(call.method.to_string()))
        } else {
            scopes.get(&ScopeKey::Operation(call.operation))
        };
        let subscribe = (call.operation == Operation::Listen
            && !scopes.is_empty()
            && listens_to_resources(call))
        .then(|| scopes.get(&ScopeKey::Operation(Operation::Subscribe)))
        .flatten();
        [own, subscribe].into_iter()
    }

    /// Whether `principal` holds every scope [`scopes_for_call`](Self::scopes_for_call) would
    /// name, looked at set by set without building their union (every request of a protected
    /// server asks this; the union is built only for a refusal's challenge).
    pub(crate) fn grants(
        &self,
        call: &mcp_adapters::Call,
        extra: Option<&ScopeSet>,
        principal: &Principal,
    ) -> bool {
        let granted = &principal.scopes;
        granted.contains_all(&self.inner.required)
            && self
                .call_scopes(call)
                .flatten()
                .all(|scopes| granted.contains_all(scopes))
            && extra.is_none_or(|scopes| granted.contains_all(scopes))
    }

    /// The scopes every request needs ([`ResourceServerBuilder::required_scopes`]).
    pub(crate) fn required(&self) -> &ScopeSet {
        &self.inner.required
    }

    /// Refuses with 403 `insufficient_scope` when `principal` lacks a scope of `needed`; the
    /// challenge names every scope the request needs, and the configured resource's metadata
    /// (see [`check_scopes_at`](Self::check_scopes_at)).
    pub fn check_scopes(
        &self,
        principal: &Principal,
        needed: &ScopeSet,
    ) -> Result<(), AuthRefusal> {
        self.check_scopes_at("", principal, needed)
    }

    /// [`check_scopes`](Self::check_scopes) for a request at `path`: the challenge names the
    /// metadata of the resource at `path`.
    pub fn check_scopes_at(
        &self,
        path: &str,
        principal: &Principal,
        needed: &ScopeSet,
    ) -> Result<(), AuthRefusal> {
        let Err(missing) = principal.require(needed) else {
            return Ok(());
        };
        Err(AuthRefusal {
            status: StatusCode::FORBIDDEN,
            challenge: Some(Box::new(
                BearerChallenge::new(self.metadata_url_for(path).to_owned())
                    .scope(needed.to_string())
                    .error(
                        "insufficient_scope",
                        Some(&format!("the token lacks {missing}")),
                    ),
            )),
            reason: format!("the access token lacks the scope {missing}"),
            dpop_nonce: None,
            retry_after: None,
        })
    }
}

/// What a client is told about a refused token: a fixed sentence per kind of error, never
/// the verifier's detail (which names the parser, its input and the accepted algorithms).
fn public_description(error: &TokenError) -> &'static str {
    match error {
        TokenError::Expired => "the token expired",
        TokenError::NotYetValid => "the token is not valid yet",
        TokenError::Inactive => "the token is not active",
        TokenError::WrongAudience => "the token was issued for another resource",
        _ => "the token is not valid",
    }
}

/// What a request presents to the resource server: where it goes and its credentials.
struct Presented<'a> {
    method: &'a http::Method,
    path: &'a str,
    headers: &'a HeaderMap,
    /// The token, as sent.
    token: &'a [u8],
    /// Whether it came under the `DPoP` scheme.
    dpop_scheme: bool,
}

/// What the resource server computes once per verified token and leaves with a request (in
/// its [`RequestFacts`], a clone of three `Arc`s): the principal, its owner digest (see
/// [`owner_digest`]) and its binding (see [`Principal::binding`]).
#[derive(Clone)]
pub(crate) struct Owner {
    principal: Arc<Principal>,
    digest: Arc<str>,
    binding: Arc<str>,
}

/// What the endpoint learns of a request besides its parts (carried beside them, see
/// `http::Head`): the connection's peer address, set by the listener, and the principal the
/// resource server accepted, with what was computed of it.
///
/// One pointer: the listener makes the facts of a connection once and every request of the
/// connection shares them (a reference count, no allocation per request); authorization
/// makes the facts of its request anew. Kept this small because it sits in every request's
/// future, which must stay within the allocator's per-thread cache (`docs/profiling.md`).
#[derive(Clone, Default)]
pub(crate) struct RequestFacts(Option<Arc<Facts>>);

#[derive(Clone, Default)]
struct Facts {
    peer: Option<std::net::SocketAddr>,
    owner: Option<Owner>,
}

impl RequestFacts {
    /// The facts of the requests of a connection from `peer`, before authorization.
    pub(crate) fn from_peer(peer: std::net::SocketAddr) -> Self {
        Self(Some(Arc::new(Facts {
            peer: Some(peer),
            owner: None,
        })))
    }

    /// The address the request came from: `None` on an endpoint mounted in another server.
    pub(crate) fn peer(&self) -> Option<std::net::SocketAddr> {
        self.0.as_ref().and_then(|facts| facts.peer)
    }

    /// Records the principal the resource server accepted.
    pub(crate) fn set_owner(&mut self, owner: Owner) {
        let peer = self.peer();
        self.0 = Some(Arc::new(Facts {
            peer,
            owner: Some(owner),
        }));
    }

    fn owner(&self) -> Option<&Owner> {
        self.0.as_ref()?.owner.as_ref()
    }
}

/// The owner digest of a request's principal: the one the resource server left in the
/// request's facts; `None` without authorization.
pub(crate) fn owner_of(facts: &RequestFacts) -> Option<Arc<str>> {
    facts.owner().map(|owner| owner.digest.clone())
}

/// The principal of a request, its binding (see [`Principal::binding`]) and its owner
/// digest, as the resource server left them in the request's facts.
pub(crate) fn principal_of(facts: &RequestFacts) -> Option<(Arc<Principal>, Arc<str>, Arc<str>)> {
    facts.owner().map(|owner| {
        (
            owner.principal.clone(),
            owner.binding.clone(),
            owner.digest.clone(),
        )
    })
}

/// What a session record keeps of its principal: a SHA-256 digest of the principal's
/// binding (issuer and subject), so the store never holds who it is in clear. `None` without
/// authorization.
pub(crate) fn owner_digest(principal: Option<&Arc<Principal>>) -> Option<String> {
    let principal = principal?;
    let digest = Sha256::digest(principal.binding().as_bytes());
    Some(lower_hex(&digest))
}

/// `bytes` in lowercase hexadecimal, in one allocation (this runs on every request of a
/// protected server: a `format!` per byte cost 32 allocations).
fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text
}

/// RFC 6750 `b64token` (the same characters as RFC 9110's `token68`).
/// The scheme and token of an `Authorization: Bearer <token>` or `Authorization: DPoP <token>`
/// value (the scheme matched without regard to case, spaces around the token ignored), `None`
/// for any other value.
fn bearer_token(value: &[u8]) -> Option<(BearerScheme, &[u8])> {
    let space = value.iter().position(|&b| b == b' ')?;
    let (scheme, rest) = value.split_at(space);
    let scheme = if scheme.eq_ignore_ascii_case(b"bearer") {
        BearerScheme::Bearer
    } else if scheme.eq_ignore_ascii_case(b"dpop") {
        BearerScheme::DPoP
    } else {
        return None;
    };
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some((scheme, token))
}

fn is_token68(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty() && body.bytes().all(|b| TOKEN68[usize::from(b)])
}

/// The bytes of a `token68` before its `=` padding, as a table: every request of a protected
/// server checks each byte of its token.
const TOKEN68: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] =
            c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/');
        b += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use mcp_auth::{Audience, Challenge};

    use super::*;

    #[test]
    fn the_replay_budget_holds_at_most_its_limit_until_records_expire() {
        let budget = ReplayBudget::new(3, Duration::from_secs(66));
        assert_eq!(budget.reserve(100), Ok(()));
        assert_eq!(budget.reserve(101), Ok(()));
        assert_eq!(budget.reserve(101), Ok(()));
        // Full: the oldest record (made at 100) expires at 166.
        assert_eq!(budget.reserve(102), Err(64));
        // A record that was not created after all frees its place.
        budget.release(101);
        assert_eq!(budget.reserve(102), Ok(()));
        assert_eq!(budget.reserve(165), Err(1));
        // The first second's record expired: one place.
        assert_eq!(budget.reserve(166), Ok(()));
        assert_eq!(budget.reserve(166), Err(1));
        // Everything expired.
        for _ in 0..3 {
            assert_eq!(budget.reserve(1000), Ok(()));
        }
        assert!(budget.reserve(1000).is_err());
        // A window of a fraction of a second still lasts one second; a limit is at least 1.
        let tiny = ReplayBudget::new(0, Duration::from_millis(1));
        assert_eq!(tiny.reserve(5), Ok(()));
        assert_eq!(tiny.reserve(5), Err(1));
        assert_eq!(tiny.reserve(6), Ok(()));
    }

    #[test]
    fn token68_bytes() {
        for b in 0..=u8::MAX {
            let expected = b.is_ascii_alphanumeric() || b"-._~+/".contains(&b);
            assert_eq!(TOKEN68[usize::from(b)], expected, "{b}");
        }
        assert!(is_token68("abc.DEF-_~+/=="));
        assert!(!is_token68("=="));
        assert!(!is_token68("a b"));
        assert!(!is_token68("a=b"));
    }

    #[test]
    fn owner_digests_are_lowercase_hex() {
        for bytes in [&[][..], &[0x00, 0x0f, 0xa0, 0xff], &[0x12; 32]] {
            let expected: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(lower_hex(bytes), expected);
        }
    }

    const RESOURCE: &str = "https://mcp.example.com/mcp";
    const ISSUER: &str = "https://auth.example.com";

    fn claims(scope: &str) -> Claims {
        Claims {
            iss: Some(ISSUER.into()),
            sub: Some("alice".into()),
            aud: Some(Audience::One(RESOURCE.into())),
            exp: Some(now() + 3600),
            scope: ScopeSet::parse(scope),
            ..Claims::default()
        }
    }

    struct Counting(StaticTokens, AtomicUsize);

    impl TokenVerifier for Arc<Counting> {
        fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Claims, VerifyError>> {
            self.1.fetch_add(1, Ordering::SeqCst);
            self.0.verify(token)
        }
    }

    fn server(verifier: impl TokenVerifier) -> ResourceServer {
        ResourceServer::builder(RESOURCE, ISSUER)
            .required_scopes(["mcp:read"])
            .verifier(verifier)
            .build()
            .unwrap()
    }

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, value.parse().unwrap());
        headers
    }

    #[tokio::test]
    async fn the_cache_matches_whole_tokens_and_skips_long_ones() {
        let long = "L".repeat(MAX_CACHED_TOKEN + 1);
        let tokens = StaticTokens::new()
            .token("good", claims("mcp:read"))
            .token(long.clone(), claims("mcp:read"));
        let counting = Arc::new(Counting(tokens, AtomicUsize::new(0)));
        let auth = server(counting.clone());
        auth.authenticate(&headers("Bearer good")).await.unwrap();
        // The scheme's case and the spaces around the token do not make another token.
        auth.authenticate(&headers("bearer   good ")).await.unwrap();
        assert_eq!(counting.1.load(Ordering::SeqCst), 1);
        // A token that only starts or ends like a cached one is verified (and refused).
        for other in ["Bearer goo", "Bearer goodd", "Bearer xgood"] {
            let refusal = auth.authenticate(&headers(other)).await.unwrap_err();
            assert_eq!(refusal.status, StatusCode::UNAUTHORIZED, "{other}");
        }
        assert_eq!(counting.1.load(Ordering::SeqCst), 4);
        // A token over the cache's size limit is verified on every request.
        for _ in 0..2 {
            auth.authenticate(&headers(&format!("Bearer {long}")))
                .await
                .unwrap();
        }
        assert_eq!(counting.1.load(Ordering::SeqCst), 6);
    }

    #[tokio::test]
    async fn tokens_are_verified_checked_and_cached() {
        let tokens = StaticTokens::new()
            .token("good", claims("mcp:read"))
            .token(
                "expired",
                Claims {
                    exp: Some(1),
                    ..claims("mcp:read")
                },
            )
            .token(
                "elsewhere",
                Claims {
                    aud: Some(Audience::One("https://other.example/mcp".into())),
                    ..claims("mcp:read")
                },
            );
        let counting = Arc::new(Counting(tokens, AtomicUsize::new(0)));
        let auth = server(counting.clone());
        for _ in 0..3 {
            let principal = auth.authenticate(&headers("Bearer good")).await.unwrap();
            assert_eq!(principal.subject, "alice");
        }
        assert_eq!(counting.1.load(Ordering::SeqCst), 1, "verified once");
        // (Authorization value, the refusal's error parameter)
        let cases = [
            ("Bearer expired", Some("invalid_token")),
            ("Bearer elsewhere", Some("invalid_token")),
            ("Bearer unknown", Some("invalid_token")),
            ("Basic Z29vZA==", Some("invalid_token")),
            ("Bearer a b", Some("invalid_token")),
        ];
        for (value, error) in cases {
            let refusal = auth.authenticate(&headers(value)).await.unwrap_err();
            assert_eq!(refusal.status, StatusCode::UNAUTHORIZED, "{value}");
            let challenge = refusal.challenge.unwrap();
            assert_eq!(challenge.error.as_deref(), error, "{value}");
            assert_eq!(
                challenge.resource_metadata.as_deref(),
                Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
            );
            assert_eq!(challenge.scope.as_deref(), Some("mcp:read"));
        }
        // Only the three well-formed bearer tokens reached the verifier: the syntax check
        // (done after the cache lookup) stops the others.
        assert_eq!(counting.1.load(Ordering::SeqCst), 4);
        let missing = auth.authenticate(&HeaderMap::new()).await.unwrap_err();
        let header = missing.www_authenticate().unwrap();
        let parsed = Challenge::parse_all(header.to_str().unwrap()).unwrap();
        let bearer = BearerChallenge::find(&parsed).unwrap();
        assert_eq!(bearer.error, None);
        // A repeated header is refused rather than guessed at.
        let mut twice = headers("Bearer good");
        twice.append(http::header::AUTHORIZATION, "Bearer good".parse().unwrap());
        assert!(auth.authenticate(&twice).await.is_err());
    }

    #[tokio::test]
    async fn a_missing_scope_is_a_403_naming_what_is_needed() {
        let auth = ResourceServer::builder(RESOURCE, ISSUER)
            .method_scopes("resources/subscribe", ["mcp:watch"])
            .verifier(StaticTokens::new().token("t", claims("mcp:read")))
            .build()
            .unwrap();
        let principal = auth.authenticate(&headers("Bearer t")).await.unwrap();
        let deploy = ScopeSet::parse("mcp:deploy");
        let needed = auth.scopes_for("tools/call", Some(&deploy));
        let refusal = auth.check_scopes(&principal, &needed).unwrap_err();
        assert_eq!(refusal.status, StatusCode::FORBIDDEN);
        let challenge = refusal.challenge.unwrap();
        assert_eq!(challenge.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(challenge.scope.as_deref(), Some("mcp:deploy"));
        assert_eq!(
            auth.scopes_for("resources/subscribe", None).to_string(),
            "mcp:watch"
        );
        assert!(
            auth.check_scopes(&principal, &ScopeSet::parse("mcp:read"))
                .is_ok()
        );
        // The per-request check agrees with building the union and checking it.
        let read = ScopeSet::parse("mcp:read");
        for (method, extra) in [
            ("tools/call", None),
            ("tools/call", Some(&deploy)),
            ("tools/call", Some(&read)),
            ("resources/subscribe", None),
            ("resources/read", Some(&read)),
        ] {
            let needed = auth.scopes_for(method, extra);
            assert_eq!(needed, auth.scopes_for_call(&call_of(method), extra));
            assert_eq!(
                auth.grants(&call_of(method), extra, &principal),
                auth.check_scopes(&principal, &needed).is_ok(),
                "{method} {extra:?}"
            );
        }
        assert!(!auth.grants(&call_of("resources/subscribe"), None, &principal));
        assert!(auth.grants(&call_of("tools/list"), None, &principal));
    }

    /// A call of `method` as the decoder makes it.
    fn call_of(method: &str) -> mcp_adapters::Call {
        let operation = match ScopeKey::of_name(method) {
            Some(ScopeKey::Operation(operation)) => operation,
            _ => mcp_adapters::Operation::Extension,
        };
        mcp_adapters::Call::new(operation, None, method.to_owned())
    }

    #[tokio::test]
    async fn method_scopes_are_keyed_by_operation() {
        let auth = ResourceServer::builder(RESOURCE, ISSUER)
            .method_scopes("resources/subscribe", ["mcp:watch"])
            .method_scopes("server/discover", ["mcp:hello"])
            .method_scopes("tasks/get", ["mcp:tasks"])
            .verifier(StaticTokens::new().token("t", claims("mcp:read")))
            .build()
            .unwrap();
        let principal = auth.authenticate(&headers("Bearer t")).await.unwrap();
        // (method, needed)
        for (method, needed) in [
            ("initialize", "mcp:hello"),
            ("server/discover", "mcp:hello"),
            ("resources/subscribe", "mcp:watch"),
            ("tasks/get", "mcp:tasks"),
            ("tools/list", ""),
        ] {
            assert_eq!(
                auth.scopes_for(method, None).to_string(),
                needed,
                "{method}"
            );
            assert_eq!(
                auth.grants(&call_of(method), None, &principal),
                needed.is_empty(),
                "{method}"
            );
        }
        // A listen asking for resource updates needs the subscribe scopes; one asking only for
        // list changes does not.
        let mut listen = call_of("subscriptions/listen");
        listen.params.insert(
            "notifications".into(),
            serde_json::json!({"resourceSubscriptions": ["file:///a"]}),
        );
        assert_eq!(auth.scopes_for_call(&listen, None).to_string(), "mcp:watch");
        assert!(!auth.grants(&listen, None, &principal));
        listen.params.insert(
            "notifications".into(),
            serde_json::json!({"toolsListChanged": true}),
        );
        assert!(auth.grants(&listen, None, &principal));
        // A name no revision defines is refused when building.
        let typo = ResourceServer::builder(RESOURCE, ISSUER)
            .method_scopes("resources/subscribed", ["mcp:watch"])
            .verifier(StaticTokens::new())
            .build();
        assert!(
            matches!(typo, Err(AuthConfigError::UnknownMethod(m)) if m == "resources/subscribed")
        );
    }

    #[tokio::test]
    async fn the_cache_stays_within_its_limit() {
        let mut tokens = StaticTokens::new();
        for n in 0..50 {
            tokens = tokens.token(format!("t{n}"), claims("mcp:read"));
        }
        let auth = ResourceServer::builder(RESOURCE, ISSUER)
            .verifier(tokens)
            .cache(8, Duration::from_secs(60))
            .build()
            .unwrap();
        for n in 0..50 {
            auth.authenticate(&headers(&format!("Bearer t{n}")))
                .await
                .unwrap();
            assert!(auth.inner.cache.lock().unwrap().len() <= 8);
        }
    }

    #[test]
    fn the_metadata_is_served_at_both_locations() {
        let auth = server(StaticTokens::new());
        let at = |path: &str| {
            auth.metadata_at(path)
                .map(|body| serde_json::from_slice::<serde_json::Value>(&body).unwrap())
        };
        assert!(at("/.well-known/oauth-protected-resource/other").is_none());
        assert!(at("/.well-known/oauth-protected-resource/sse").is_none());
        for path in [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ] {
            let body = at(path).unwrap();
            assert_eq!(body["resource"], RESOURCE);
            assert_eq!(body["authorization_servers"], serde_json::json!([ISSUER]));
        }
    }

    #[tokio::test]
    async fn the_sse_endpoint_is_a_resource_of_its_own() {
        const SSE: &str = "https://mcp.example.com/sse";
        let tokens = StaticTokens::new()
            .token("for-mcp", claims("mcp:read"))
            .token(
                "for-sse",
                Claims {
                    aud: Some(Audience::One(SSE.into())),
                    ..claims("mcp:read")
                },
            )
            .token(
                "elsewhere",
                Claims {
                    aud: Some(Audience::One("https://other.example/sse".into())),
                    ..claims("mcp:read")
                },
            );
        let auth = server(tokens).for_endpoint("/mcp", Some(("/sse", "/messages")), None);
        assert_eq!(auth.resources().collect::<Vec<_>>(), [RESOURCE, SSE]);
        let body = auth
            .metadata_at("/.well-known/oauth-protected-resource/sse")
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["resource"], SSE);
        assert_eq!(body["authorization_servers"], serde_json::json!([ISSUER]));
        let root = auth
            .metadata_at("/.well-known/oauth-protected-resource")
            .unwrap();
        let root: serde_json::Value = serde_json::from_slice(&root).unwrap();
        assert_eq!(root["resource"], RESOURCE);
        // (request path, the metadata its challenges name)
        let cases = [
            (
                "/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            ),
            (
                "/sse",
                "https://mcp.example.com/.well-known/oauth-protected-resource/sse",
            ),
            (
                "/messages",
                "https://mcp.example.com/.well-known/oauth-protected-resource/sse",
            ),
        ];
        for (path, metadata) in cases {
            for token in ["for-mcp", "for-sse"] {
                let value = format!("Bearer {token}");
                assert!(auth.authenticate_at(path, &headers(&value)).await.is_ok());
            }
            for value in ["Bearer elsewhere", ""] {
                let headers = if value.is_empty() {
                    HeaderMap::new()
                } else {
                    headers(value)
                };
                let refusal = auth.authenticate_at(path, &headers).await.unwrap_err();
                assert_eq!(refusal.status, StatusCode::UNAUTHORIZED);
                let challenge = refusal.challenge.unwrap();
                assert_eq!(challenge.resource_metadata.as_deref(), Some(metadata));
            }
        }
        // Without HTTP+SSE, or with a resource that does not end with the endpoint's path,
        // there is one resource.
        let alone = server(StaticTokens::new()).for_endpoint("/mcp", None, None);
        assert_eq!(alone.resources().count(), 1);
        let elsewhere =
            server(StaticTokens::new()).for_endpoint("/api", Some(("/sse", "/m")), None);
        assert_eq!(elsewhere.resources().count(), 1);
        // Set again (an endpoint rebuilt on its bound address), it stays the same.
        let again = auth.for_endpoint("/mcp", Some(("/sse", "/messages")), None);
        assert_eq!(again.resources().collect::<Vec<_>>(), [RESOURCE, SSE]);
    }
}
