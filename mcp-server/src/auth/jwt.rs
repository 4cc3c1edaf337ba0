//! Access tokens as JWTs, verified against the authorization server's key set.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use tokio::time::Instant;

use super::fetch::Fetcher;
use super::{Claims, TokenError, TokenVerifier, VerifyError};

/// Verifies JWT access tokens (RFC 9068) with the keys of a JSON Web Key Set: fixed, or
/// fetched from the authorization server's `jwks_uri` over HTTPS.
///
/// A fetched key set is cached. It is fetched again when a token names a key id (`kid`) it
/// does not hold (a key rotation), at most once per
/// [`refresh_interval`](Self::refresh_interval) (so tokens with made-up key ids cannot make
/// the server hammer its authorization server), and when it is older than
/// [`max_age`](Self::max_age). Concurrent misses share one fetch. Fetches time out after
/// 10 s and refuse key sets over 1 MiB; while the key set cannot be fetched, tokens signed
/// with a known key are still verified, and the others get 503.
///
/// Only asymmetric algorithms are accepted (ES256, ES384, RS256, RS384, RS512, PS256, PS384,
/// PS512, EdDSA by default): a shared-secret (`HS*`) or unsigned (`none`) token is refused,
/// whatever its header says.
///
/// ```no_run
/// use mcp_server::auth::{JwtVerifier, ResourceServer};
///
/// let auth = ResourceServer::builder("https://mcp.example.com/mcp", "https://auth.example.com")
///     .verifier(JwtVerifier::fetch("https://auth.example.com/jwks.json"))
///     .build()
///     .unwrap();
/// # let _ = auth;
/// ```
#[derive(Clone)]
pub struct JwtVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    source: Option<(String, Fetcher)>,
    /// The certificate authorities trusted for the key set's URL besides the web PKI.
    extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    keys: RwLock<Keys>,
    /// One fetch at a time; the others wait for its result.
    fetching: tokio::sync::Mutex<()>,
    algorithms: Vec<Algorithm>,
    refresh_interval: Duration,
    max_age: Duration,
}

struct Keys {
    set: JwkSet,
    fetched: Option<Instant>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("jwks_uri", &self.inner.source.as_ref().map(|(url, _)| url))
            .field("algorithms", &self.inner.algorithms)
            .finish_non_exhaustive()
    }
}

const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::EdDSA,
];

impl JwtVerifier {
    fn with_source(source: Option<(String, Fetcher)>, set: JwkSet) -> Self {
        Self {
            inner: Arc::new(Inner {
                source,
                extra_roots: Vec::new(),
                keys: RwLock::new(Keys { set, fetched: None }),
                fetching: tokio::sync::Mutex::new(()),
                algorithms: DEFAULT_ALGORITHMS.to_vec(),
                refresh_interval: Duration::from_secs(30),
                max_age: Duration::from_secs(900),
            }),
        }
    }

    /// Verifies with a fixed key set (never fetched).
    pub fn from_jwks(set: JwkSet) -> Self {
        Self::with_source(None, set)
    }

    /// Verifies with the key set at `jwks_uri`, fetched on first use and cached (see the type
    /// docs). `https://` with the web PKI roots; `http://` is accepted only to a loopback
    /// host (`localhost`, `127.0.0.0/8`, `[::1]`), for development and tests: any other URL
    /// makes [`ResourceServerBuilder::build`](super::ResourceServerBuilder::build) fail, and
    /// is never fetched.
    pub fn fetch(jwks_uri: impl Into<String>) -> Self {
        let fetcher = Fetcher::new(Duration::from_secs(10), 1 << 20);
        Self::with_source(
            Some((jwks_uri.into(), fetcher)),
            JwkSet { keys: Vec::new() },
        )
    }

    /// Trusts the certificate authority `ca` (DER) for the key set's `https://` URL, besides
    /// the web PKI roots: an authorization server behind a private PKI, or a test CA.
    /// Repeatable. Without a key set URL ([`JwtVerifier::from_jwks`]) it changes nothing.
    ///
    /// ```no_run
    /// use mcp_server::auth::JwtVerifier;
    ///
    /// let ca = std::fs::read("corporate-ca.der").unwrap();
    /// let verifier = JwtVerifier::fetch("https://auth.internal/jwks.json")
    ///     .add_root_certificate(ca.into());
    /// # let _ = verifier;
    /// ```
    #[must_use]
    pub fn add_root_certificate(self, ca: rustls::pki_types::CertificateDer<'static>) -> Self {
        self.edit(|inner| {
            if let Some((_, fetcher)) = &mut inner.source {
                inner.extra_roots.push(ca);
                *fetcher = Fetcher::trusting(Duration::from_secs(10), 1 << 20, &inner.extra_roots);
            }
        })
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => f(inner),
            None => unreachable!("a verifier is configured before it is shared"),
        }
        self
    }

    /// The signature algorithms accepted; symmetric ones and `none` are ignored. Default:
    /// the asymmetric algorithms listed on the type.
    #[must_use]
    pub fn algorithms(self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        let algorithms: Vec<Algorithm> = algorithms
            .into_iter()
            .filter(|a| DEFAULT_ALGORITHMS.contains(a))
            .collect();
        self.edit(|inner| inner.algorithms = algorithms)
    }

    /// The shortest time between two fetches of the key set. Default is 30 s.
    #[must_use]
    pub fn refresh_interval(self, interval: Duration) -> Self {
        self.edit(|inner| inner.refresh_interval = interval)
    }

    /// How long a fetched key set is used before it is fetched again. Default is 15 minutes.
    #[must_use]
    pub fn max_age(self, age: Duration) -> Self {
        self.edit(|inner| inner.max_age = age)
    }

    fn key(&self, kid: Option<&str>) -> Option<jsonwebtoken::jwk::Jwk> {
        let keys = self.inner.keys.read().unwrap_or_else(|e| e.into_inner());
        match kid {
            Some(kid) => keys.set.find(kid).cloned(),
            // Without a key id, only a set of one key is unambiguous.
            None => match keys.set.keys.as_slice() {
                [only] => Some(only.clone()),
                _ => None,
            },
        }
    }

    /// Whether the key set may be fetched now: `stale` asks for the age rule, otherwise the
    /// rate limit alone decides.
    fn may_fetch(&self, stale_only: bool) -> bool {
        let keys = self.inner.keys.read().unwrap_or_else(|e| e.into_inner());
        match keys.fetched {
            None => true,
            Some(at) if stale_only => at.elapsed() >= self.inner.max_age,
            Some(at) => at.elapsed() >= self.inner.refresh_interval,
        }
    }

    /// Fetches the key set, unless a fetch that started after `wanted` already did.
    async fn refresh(&self, wanted: Instant) -> Result<(), VerifyError> {
        let Some((url, fetcher)) = &self.inner.source else {
            return Ok(());
        };
        let _one = self.inner.fetching.lock().await;
        let fresh = {
            let keys = self.inner.keys.read().unwrap_or_else(|e| e.into_inner());
            keys.fetched.is_some_and(|at| at >= wanted)
        };
        if fresh {
            return Ok(());
        }
        let fetched = async {
            let body = fetcher.get(url).await?;
            serde_json::from_slice::<JwkSet>(&body).map_err(|e| format!("{url}: {e}"))
        }
        .await;
        let mut keys = self.inner.keys.write().unwrap_or_else(|e| e.into_inner());
        // A failed fetch counts for the rate limit too.
        keys.fetched = Some(Instant::now());
        match fetched {
            Ok(set) => {
                keys.set = set;
                Ok(())
            }
            Err(why) => Err(VerifyError::Unavailable(why)),
        }
    }

    async fn verify_token(&self, token: &str) -> Result<Claims, VerifyError> {
        let invalid = |why: String| VerifyError::Token(TokenError::Invalid(why));
        let header = jsonwebtoken::decode_header(token).map_err(|e| invalid(e.to_string()))?;
        if !self.inner.algorithms.contains(&header.alg) {
            return Err(invalid(format!(
                "the algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let kid = header.kid.as_deref();
        if self.inner.source.is_some() && self.may_fetch(true) {
            // First use, or the set is old: fetch; a failure leaves the keys held.
            if let Err(err) = self.refresh(Instant::now()).await
                && self.key(kid).is_none()
            {
                return Err(err);
            }
        }
        let jwk = match self.key(kid) {
            Some(jwk) => jwk,
            None if self.inner.source.is_some() && self.may_fetch(false) => {
                // An unknown key id: the authorization server may have rotated its keys.
                self.refresh(Instant::now()).await?;
                self.key(kid)
                    .ok_or_else(|| invalid("no key of the key set signed it".into()))?
            }
            None => return Err(invalid("no key of the key set signed it".into())),
        };
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| invalid(e.to_string()))?;
        // Expiry, issuer and audience are TokenRules' (with their leeway); here only the
        // signature and the algorithm.
        let mut validation = Validation::new(header.alg);
        validation.validate_exp = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|e| invalid(e.to_string()))
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Claims, VerifyError>> {
        Box::pin(self.verify_token(token))
    }

    fn configuration_error(&self) -> Option<String> {
        let (url, _) = self.inner.source.as_ref()?;
        super::fetch::refused_url(url)
    }
}
