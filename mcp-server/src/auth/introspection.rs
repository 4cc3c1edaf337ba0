//! Opaque access tokens, checked by asking the authorization server (RFC 7662).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use futures::future::BoxFuture;
use http_body_util::Full;

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
}

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
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
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
            }),
        }
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
        let body: String = url::form_urlencoded::Serializer::new(String::new())
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
        Box::pin(self.introspect(token))
    }
}
