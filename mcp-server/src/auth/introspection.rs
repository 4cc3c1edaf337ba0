//! Opaque access tokens, checked by asking the authorization server (RFC 7662).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use futures::future::BoxFuture;
use http_body_util::Full;
use sha2::{Digest as _, Sha256};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::fetch::Fetcher;
use super::{Claims, TokenError, TokenVerifier, VerifyError};

/// Verifies opaque access tokens with the authorization server's introspection endpoint
/// (RFC 7662), authenticating as a client with `client_secret_basic`.
///
/// Each token is introspected once and then served from the resource server's cache (keyed by
/// a SHA-256 of the token) until it expires or the cache's time-to-live passes; an inactive
/// token is refused. Requests time out after 10 s and answers over 64 KiB are refused; an
/// endpoint that cannot be reached gives 503, not 401.
///
/// Unauthenticated clients choose the tokens, so what they can make the server ask is
/// bounded:
///
/// | Limit | Default | At the limit |
/// |---|---|---|
/// | [`negative_cache`](Self::negative_cache) | 10,000 refused tokens (SHA-256 digests) for 30 s | a refused token is refused again without a call; past the count, expired entries go first, then all |
/// | [`max_in_flight`](Self::max_in_flight) | 32 introspections at once, waiting up to 1 s for a slot | 503 (the token cannot be verified now), no call made |
///
/// The endpoint must be `https://`, or `http://` to a loopback host (development and tests):
/// the client secret is sent with every call. Any other URL makes
/// [`ResourceServerBuilder::build`](super::ResourceServerBuilder::build) fail and is never
/// called.
///
/// ```no_run
/// use mcp_server::auth::{IntrospectionVerifier, ResourceServer};
///
/// let auth = ResourceServer::builder("https://mcp.example.com/mcp", "https://auth.example.com")
///     .verifier(IntrospectionVerifier::new(
///         "https://auth.example.com/introspect",
///         "mcp-server",
///         "its-secret",
///     ))
///     .build()
///     .unwrap();
/// # let _ = auth;
/// ```
#[derive(Clone)]
pub struct IntrospectionVerifier {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    endpoint: String,
    authorization: String,
    fetcher: Fetcher,
    /// The certificate authorities trusted for the endpoint besides the web PKI.
    extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    /// Tokens refused lately, by the SHA-256 of the token: until when they stay refused.
    refused: Arc<Mutex<crate::FastMap<[u8; 32], Instant>>>,
    refused_entries: usize,
    refused_ttl: Duration,
    /// One permit per introspection in flight.
    slots: Arc<Semaphore>,
    slot_wait: Duration,
}

/// The defaults of [`IntrospectionVerifier`]'s limits.
const DEFAULT_REFUSED_ENTRIES: usize = 10_000;
const DEFAULT_REFUSED_TTL: Duration = Duration::from_secs(30);
const DEFAULT_MAX_IN_FLIGHT: usize = 32;
const DEFAULT_SLOT_WAIT: Duration = Duration::from_secs(1);

impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The client secret stays out of logs.
        f.debug_struct("IntrospectionVerifier")
            .field("endpoint", &self.inner.endpoint)
            .finish_non_exhaustive()
    }
}

/// RFC 6749 §2.3.1: the client id and secret are form-encoded before Basic.
fn form_encoded(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

impl IntrospectionVerifier {
    /// Introspects at `endpoint` as the client `client_id` with `client_secret`.
    pub fn new(endpoint: impl Into<String>, client_id: &str, client_secret: &str) -> Self {
        let credentials = format!(
            "{}:{}",
            form_encoded(client_id),
            form_encoded(client_secret)
        );
        Self {
            inner: Arc::new(Inner {
                endpoint: endpoint.into(),
                authorization: format!("Basic {}", STANDARD.encode(credentials)),
                fetcher: Fetcher::new(Duration::from_secs(10), 64 << 10),
                extra_roots: Vec::new(),
                refused: Arc::new(Mutex::new(crate::FastMap::default())),
                refused_entries: DEFAULT_REFUSED_ENTRIES,
                refused_ttl: DEFAULT_REFUSED_TTL,
                slots: Arc::new(Semaphore::new(DEFAULT_MAX_IN_FLIGHT)),
                slot_wait: DEFAULT_SLOT_WAIT,
            }),
        }
    }

    /// How many refused tokens are remembered, and for how long: a token the endpoint called
    /// inactive (or that its answer refused) is refused again without a call until `ttl`
    /// passes. Defaults are 10,000 tokens and 30 s. The cache holds SHA-256 digests (32
    /// bytes each), never tokens; at the limit, expired entries are dropped first, then all.
    /// `0` entries turns it off.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_server::auth::IntrospectionVerifier;
    ///
    /// let verifier = IntrospectionVerifier::new("https://auth.example.com/introspect", "rs", "secret")
    ///     .negative_cache(50_000, Duration::from_secs(10));
    /// # let _ = verifier;
    /// ```
    #[must_use]
    pub fn negative_cache(mut self, entries: usize, ttl: Duration) -> Self {
        let inner = Arc::make_mut(&mut self.inner);
        inner.refused_entries = entries;
        inner.refused_ttl = ttl;
        self
    }

    /// The most introspections in flight at once, and how long a token waits for one to end
    /// when that many are: past `wait` the request gets 503 (the token cannot be verified now)
    /// and no call is made. Defaults are 32 and 1 s; values below 1 count as 1.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_server::auth::IntrospectionVerifier;
    ///
    /// let verifier = IntrospectionVerifier::new("https://auth.example.com/introspect", "rs", "secret")
    ///     .max_in_flight(128, Duration::from_millis(500));
    /// # let _ = verifier;
    /// ```
    #[must_use]
    pub fn max_in_flight(mut self, max: usize, wait: Duration) -> Self {
        let inner = Arc::make_mut(&mut self.inner);
        inner.slots = Arc::new(Semaphore::new(max.clamp(1, Semaphore::MAX_PERMITS)));
        inner.slot_wait = wait;
        self
    }

    /// Whether the token of `digest` was refused lately.
    fn refused_lately(&self, digest: &[u8; 32]) -> bool {
        let refused = self.inner.refused.lock().unwrap_or_else(|e| e.into_inner());
        refused
            .get(digest)
            .is_some_and(|until| *until > Instant::now())
    }

    /// Remembers that the token of `digest` was refused.
    fn remember_refusal(&self, digest: [u8; 32]) {
        let limit = self.inner.refused_entries;
        if limit == 0 {
            return;
        }
        let now = Instant::now();
        let mut refused = self.inner.refused.lock().unwrap_or_else(|e| e.into_inner());
        if refused.len() >= limit && !refused.contains_key(&digest) {
            refused.retain(|_, until| *until > now);
            if refused.len() >= limit {
                refused.clear();
            }
        }
        refused.insert(digest, now + self.inner.refused_ttl);
    }

    async fn verify_bounded(&self, token: &str) -> Result<Claims, VerifyError> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if self.refused_lately(&digest) {
            return Err(TokenError::Inactive.into());
        }
        let slot = tokio::time::timeout(self.inner.slot_wait, self.inner.slots.acquire()).await;
        let Ok(Ok(_slot)) = slot else {
            return Err(VerifyError::Unavailable(
                "too many introspections in flight".into(),
            ));
        };
        let result = self.introspect(token).await;
        if matches!(result, Err(VerifyError::Token(_))) {
            self.remember_refusal(digest);
        }
        result
    }

    /// Trusts the certificate authority `ca` (DER) for the introspection endpoint, besides
    /// the web PKI roots: an authorization server behind a private PKI, or a test CA.
    /// Repeatable.
    #[must_use]
    pub fn add_root_certificate(mut self, ca: rustls::pki_types::CertificateDer<'static>) -> Self {
        let inner = Arc::make_mut(&mut self.inner);
        inner.extra_roots.push(ca);
        inner.fetcher = Fetcher::trusting(Duration::from_secs(10), 64 << 10, &inner.extra_roots);
        self
    }

    async fn introspect(&self, token: &str) -> Result<Claims, VerifyError> {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let request = http::Request::post(&self.inner.endpoint)
            .header(http::header::AUTHORIZATION, &self.inner.authorization)
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| VerifyError::Unavailable(e.to_string()))?;
        let (status, body) = self
            .inner
            .fetcher
            .send(request)
            .await
            .map_err(VerifyError::Unavailable)?;
        if status != http::StatusCode::OK {
            return Err(VerifyError::Unavailable(format!(
                "the introspection endpoint answered {status}"
            )));
        }
        let claims: Claims = serde_json::from_slice(&body)
            .map_err(|e| VerifyError::Unavailable(format!("unreadable introspection: {e}")))?;
        match claims.active {
            Some(true) => Ok(claims),
            _ => Err(TokenError::Inactive.into()),
        }
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Claims, VerifyError>> {
        Box::pin(self.verify_bounded(token))
    }

    fn configuration_error(&self) -> Option<String> {
        super::fetch::refused_url(&self.inner.endpoint)
    }
}
