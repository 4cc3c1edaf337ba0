//! A development authorization server: enough OAuth 2.1 to try and test a protected MCP
//! server end to end, on the same address (mounted with
//! [`HttpConfig::routes`](mcp_server::http::HttpConfig::routes), as a
//! [`Routes`]). **A development and test tool, not an identity
//! provider**: it authenticates no user (every approval is for one configured subject), and
//! keeps its clients, codes, refresh tokens and signing key in the hub's state store.
//!
//! What it serves, under its issuer URL:
//!
//! | path | what |
//! | --- | --- |
//! | `/.well-known/oauth-authorization-server`, `/.well-known/openid-configuration` | RFC 8414 metadata (`iss` in authorization responses, PKCE S256 only, client ID metadata documents) |
//! | `/authorize` | the authorization code flow with PKCE S256: a consent page, or an immediate redirect with [`auto_approve`](DevAuthorizationServerBuilder::auto_approve) |
//! | `/token` | `authorization_code`, `refresh_token` (rotated; a reused refresh token revokes its whole family), `client_credentials`; `Cache-Control: no-store`; DPoP-bound tokens (`cnf.jkt`, `token_type` `DPoP`) for a request with a valid `DPoP` proof, whose refresh needs a proof by the same key (RFC 9449 §5) |
//! | `/register` | dynamic client registration (RFC 7591; deprecated on 2026-07-28, still served) |
//! | `/jwks` | the public key its access tokens (ES256 JWTs) are signed with |
//!
//! A client id that is an `https://` URL is a client ID metadata document: it must have the
//! CIMD form (https, a path, no query or fragment), is fetched over HTTPS only (64 KiB, 5 s
//! at most, a few at a time), never from a loopback, private, link-local or multicast address
//! unless [`allow_private_addresses`](DevAuthorizationServerBuilder::allow_private_addresses)
//! says so, is cached (failures too) between 1 minute and 1 hour as its `Cache-Control` says,
//! and must name itself and the redirect URI.
//!
//! Several workers sharing a hub serve one authorization server: the signing key is made once
//! and stored there (a secret in the store: one more reason this is for development only).
//!
//! # Safe by default, still not for the open internet
//!
//! It authenticates no user: whoever can send it HTTP can approve a request. What it does
//! guard against:
//!
//! - Consent is a gate: the consent form carries an anti-forgery token (an HMAC, keyed from
//!   the signing key, over the authorization request and the time, valid 10 minutes), so a
//!   direct `POST /authorize … decision=approve` without the page is refused; every response
//!   carries `X-Frame-Options: DENY`, `Content-Security-Policy: frame-ancestors 'none'` and
//!   `Cache-Control: no-store`. The page names the client's registered name and the host the
//!   answer goes back to.
//! - A client uses only the grant types it registered: `client_credentials` is for
//!   confidential pre-registered clients (a [`DevClient`] with a secret), never for a
//!   dynamically registered one unless
//!   [`allow_dynamic_client_credentials`](DevAuthorizationServerBuilder::allow_dynamic_client_credentials)
//!   (unsafe) says so.
//! - Redirect URIs are `https` or `http` to a loopback host; a loopback redirect may use any
//!   port (RFC 8252 §7.3) but must match in path and query.
//! - `/authorize` is not an open redirector (RFC 6749 §4.1.2.1, RFC 9700 §4.11.2): an error
//!   found before the client and its redirect URI are verified (unknown client, a client ID
//!   metadata document not fetched or refused, a redirect URI not registered) is shown on its
//!   own page, never redirected; and an error in the other parameters is redirected only to a
//!   pre-registered client or a loopback redirect URI. A client anyone can create (dynamic
//!   registration, a metadata document) with a redirect URI off the user's machine gets the
//!   error on the page, naming where the answer would have gone. (With
//!   [`auto_approve`](DevAuthorizationServerBuilder::auto_approve), a valid request of any
//!   client is still answered with a code at once: a flag for tests.)
//! - A reused authorization code revokes the grant it produced (RFC 6749 §4.1.2): its refresh
//!   token, and its access tokens where this server verifies them itself (as `mcp-demo` does;
//!   a worker that cached a token's verification accepts it until that entry ends, 5 minutes
//!   at most by default, see `ResourceServerBuilder::cache`).
//! - `kid` is the RFC 7638 thumbprint of the public key; client secrets are kept as digests and
//!   compared in constant time.
//!
//! # Limits
//!
//! Everything it stores is bounded in count, size and time; past a limit a request is refused
//! with the spec's error, and nothing else is stored:
//!
//! | what | default | past it |
//! | --- | --- | --- |
//! | request body (`/authorize`, `/token`, `/register`) and `/authorize` query | 16 KiB ([`max_request_bytes`](DevAuthorizationServerBuilder::max_request_bytes)) | 413 `invalid_request` |
//! | dynamically registered clients (each lives 30 days, at most one body's size) | 1,000 ([`max_clients`](DevAuthorizationServerBuilder::max_clients)) | 503 `temporarily_unavailable` |
//! | registrations per minute per source (IPv4 address, IPv6 /64) | 60 ([`registrations_per_minute`](DevAuthorizationServerBuilder::registrations_per_minute)) | 429 `temporarily_unavailable`, `Retry-After` |
//! | authorization codes issued in 2 minutes (each lives 60 s) | 1,000 ([`max_codes`](DevAuthorizationServerBuilder::max_codes)) | redirect with `temporarily_unavailable` |
//! | live grants with a refresh token (one record each, rotated in place) | 10,000 ([`max_grants`](DevAuthorizationServerBuilder::max_grants)) | 503 `temporarily_unavailable` |
//! | client ID metadata documents cached, fetched at once | 256, 8 ([`metadata_documents`](DevAuthorizationServerBuilder::metadata_documents)) | oldest dropped; 503 `temporarily_unavailable` (a page on `/authorize`) |
//! | `scope` | the known scopes, each once (any: at most 32 of 128 bytes) | `invalid_scope` |
//! | `code_challenge` | 43-128 characters of the base64url alphabet | `invalid_request` |
//!
//! A slot of a count limit is taken when a client, code or grant is made and freed when its
//! time ends (a registration's after 30 days); near a limit a request may be refused a little
//! before it is reached exactly, never after.

//!
//! ```no_run
//! use mcp_dev_auth::DevAuthorizationServer;
//! use mcp_server::auth::ResourceServer;
//! use mcp_server::http::HttpConfig;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let base = "http://127.0.0.1:8080";
//! let dev = DevAuthorizationServer::builder(base)
//!     .scopes(["mcp:read"])
//!     .build();
//! let auth = ResourceServer::builder(format!("{base}/mcp"), base)
//!     .required_scopes(["mcp:read"])
//!     // It verifies its own tokens, and knows which grants were revoked.
//!     .verifier(dev.clone())
//!     .build()?;
//! let config = HttpConfig::new().auth(auth).routes(dev);
//! # let _ = config; Ok(()) }
//! ```

// Feature badges on docs.rs (nightly rustdoc, `--cfg docsrs`) for feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::header::{
    AUTHORIZATION, CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION, PRAGMA,
    REFERRER_POLICY, X_FRAME_OPTIONS,
};
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, Uri};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_auth::{AuthorizationServerMetadata, pkce};
use mcp_hub::{Namespace, StateStore, StoreError};
use mcp_server::auth::{Claims, JwtVerifier, TokenError, TokenVerifier, VerifyError};
use mcp_server::http::Routes;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

mod cimd;

use crate::cimd::{MetadataDocuments, Refusal};

/// A client registered ahead of time (the suite's "pre-registration", scripts with
/// `client_credentials`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DevClient {
    /// The client id.
    pub client_id: String,
    /// The secret of a confidential client; `None` for a public one (PKCE alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// Where authorization responses may go.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
}

/// Settings of a [`DevAuthorizationServer`].
pub struct DevAuthorizationServerBuilder {
    issuer: String,
    store: Option<Arc<dyn StateStore>>,
    namespace: Namespace,
    scopes: Vec<String>,
    resources: Vec<String>,
    auto_approve: bool,
    subject: String,
    access_ttl: Duration,
    refresh_ttl: Duration,
    clients: Vec<DevClient>,
    limits: Limits,
    allow_private_addresses: bool,
    allow_dynamic_client_credentials: bool,
}

/// The bounds of what it stores and serves (see the module's limits table).
#[derive(Clone, Copy, Debug)]
struct Limits {
    request_bytes: usize,
    clients: usize,
    registrations_per_minute: u64,
    codes: usize,
    grants: usize,
    cached_documents: usize,
    document_fetches: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            request_bytes: 16 << 10,
            clients: 1_000,
            registrations_per_minute: 60,
            codes: 1_000,
            grants: 10_000,
            cached_documents: 256,
            document_fetches: 8,
        }
    }
}

impl std::fmt::Debug for DevAuthorizationServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevAuthorizationServerBuilder")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl DevAuthorizationServerBuilder {
    /// Where clients, codes, refresh tokens and the signing key live. Default: a fresh
    /// in-memory store (one process); share the server's hub between workers.
    #[must_use]
    pub fn store(mut self, store: Arc<dyn StateStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The scopes it knows (`scopes_supported`); a request for another is refused with
    /// `invalid_scope`. Default: any scope.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The resources (RFC 8707) it issues tokens for, say the MCP endpoint's URL; an
    /// authorization or token request naming another is refused with `invalid_target`, so it
    /// never mints a token for a server it does not front. Default: any absolute http(s) URI
    /// (a development convenience; the demo names its own endpoints).
    #[must_use]
    pub fn resources(mut self, resources: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.resources = resources
            .into_iter()
            .map(Into::into)
            .map(|r: String| mcp_auth::canonical_resource(&r).unwrap_or(r))
            .collect();
        self
    }

    /// Approves every valid authorization request at once (a 302 back with the code), as the
    /// official suite's mock does: for tests and scripted clients. Default: a consent page.
    #[must_use]
    pub fn auto_approve(mut self, auto: bool) -> Self {
        self.auto_approve = auto;
        self
    }

    /// The subject of every approval. Default: `demo-user`.
    #[must_use]
    pub fn subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = subject.into();
        self
    }

    /// How long access tokens and refresh tokens live. Defaults: 1 hour and 1 day.
    #[must_use]
    pub fn lifetimes(mut self, access: Duration, refresh: Duration) -> Self {
        self.access_ttl = access;
        self.refresh_ttl = refresh;
        self
    }

    /// Registers a client ahead of time. It may use `authorization_code` and
    /// `refresh_token`, and, when it has a secret (a confidential client), `client_credentials`.
    #[must_use]
    pub fn client(mut self, client: DevClient) -> Self {
        self.clients.push(client);
        self
    }

    /// The largest request body of `/authorize`, `/token` and `/register` (and query of
    /// `/authorize`) it reads; a larger one is refused with 413 `invalid_request`. Default:
    /// 16 KiB. It also bounds what one registration stores.
    #[must_use]
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.limits.request_bytes = bytes;
        self
    }

    /// How many dynamically registered clients live at once (each for 30 days); one more is
    /// refused with 503 `temporarily_unavailable`. Default: 1,000.
    ///
    /// ```
    /// use mcp_dev_auth::DevAuthorizationServer;
    ///
    /// let dev = DevAuthorizationServer::builder("http://127.0.0.1:8080")
    ///     .max_clients(100)
    ///     .registrations_per_minute(10)
    ///     .build();
    /// # let _ = dev;
    /// ```
    #[must_use]
    pub fn max_clients(mut self, clients: usize) -> Self {
        self.limits.clients = clients;
        self
    }

    /// How many registrations it accepts per minute from one source (an IPv4 address, an
    /// IPv6 /64; requests whose source is unknown, through [`handle`](DevAuthorizationServer::handle),
    /// share one count); one more is refused with 429 `temporarily_unavailable` and
    /// `Retry-After`. Default: 60.
    #[must_use]
    pub fn registrations_per_minute(mut self, registrations: u64) -> Self {
        self.limits.registrations_per_minute = registrations;
        self
    }

    /// How many authorization codes it issues within 2 minutes (a code lives 60 s, and is
    /// remembered 60 s more once used, to catch its reuse); one more is refused with a
    /// redirect carrying `temporarily_unavailable`. Default: 1,000.
    #[must_use]
    pub fn max_codes(mut self, codes: usize) -> Self {
        self.limits.codes = codes;
        self
    }

    /// How many grants with a refresh token live at once (each is one record, rotated in
    /// place, living as long as its refresh token); one more is refused with 503
    /// `temporarily_unavailable`. Default: 10,000.
    #[must_use]
    pub fn max_grants(mut self, grants: usize) -> Self {
        self.limits.grants = grants;
        self
    }

    /// How many client ID metadata documents (or failures to get one) each worker caches, and
    /// how many it fetches at once; one fetch more is refused with `temporarily_unavailable`.
    /// Defaults: 256 and 8.
    #[must_use]
    pub fn metadata_documents(mut self, cached: usize, in_flight: usize) -> Self {
        self.limits.cached_documents = cached;
        self.limits.document_fetches = in_flight;
        self
    }

    /// **Unsafe**: fetches client ID metadata documents from loopback, private, link-local and
    /// multicast addresses too, so anyone who can reach the server makes it connect into its
    /// own network. For a local test of a metadata document only. Default: refused.
    #[must_use]
    pub fn allow_private_addresses(mut self, allow: bool) -> Self {
        self.allow_private_addresses = allow;
        self
    }

    /// **Unsafe**: lets dynamic registration (which anyone can use) register
    /// `client_credentials`, so anyone gets tokens without a user. Default: refused with
    /// `invalid_client_metadata`; pre-register a confidential [`DevClient`] instead.
    #[must_use]
    pub fn allow_dynamic_client_credentials(mut self, allow: bool) -> Self {
        self.allow_dynamic_client_credentials = allow;
        self
    }

    /// The authorization server.
    pub fn build(self) -> DevAuthorizationServer {
        let store = self
            .store
            .unwrap_or_else(|| Arc::new(mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default())));
        DevAuthorizationServer {
            inner: Arc::new(Inner {
                issuer: self.issuer.trim_end_matches('/').to_owned(),
                store,
                namespace: self.namespace,
                scopes: self.scopes,
                resources: self.resources,
                auto_approve: self.auto_approve,
                subject: self.subject,
                access_ttl: self.access_ttl,
                refresh_ttl: self.refresh_ttl,
                clients: self.clients,
                key: OnceCell::new(),
                documents: MetadataDocuments::new(
                    self.limits.cached_documents,
                    self.limits.document_fetches,
                    self.allow_private_addresses,
                ),
                limits: self.limits,
                allow_dynamic_client_credentials: self.allow_dynamic_client_credentials,
            }),
        }
    }
}

/// The development authorization server: see the [crate docs](crate).
#[derive(Clone)]
pub struct DevAuthorizationServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for DevAuthorizationServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevAuthorizationServer")
            .field("issuer", &self.inner.issuer)
            .finish_non_exhaustive()
    }
}

struct Inner {
    issuer: String,
    store: Arc<dyn StateStore>,
    namespace: Namespace,
    scopes: Vec<String>,
    resources: Vec<String>,
    auto_approve: bool,
    subject: String,
    access_ttl: Duration,
    refresh_ttl: Duration,
    clients: Vec<DevClient>,
    key: OnceCell<SigningKey>,
    documents: MetadataDocuments,
    limits: Limits,
    allow_dynamic_client_credentials: bool,
}

struct SigningKey {
    kid: String,
    encoding: EncodingKey,
    jwk: Jwk,
    /// Keys the consent form's anti-forgery tokens.
    csrf: ring::hmac::Key,
}

/// What a registered client keeps in the store.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ClientRecord {
    client_id: String,
    /// SHA-256 of the secret, for confidential clients.
    #[serde(default)]
    secret_digest: Option<String>,
    redirect_uris: Vec<String>,
    /// The grant types it may use at the token endpoint.
    #[serde(default = "default_grant_types")]
    grant_types: Vec<String>,
    /// What the consent page calls it (at most 100 characters; its id when it gave none).
    #[serde(default)]
    client_name: Option<String>,
}

const AUTHORIZATION_CODE: &str = "authorization_code";
const REFRESH_TOKEN: &str = "refresh_token";
const CLIENT_CREDENTIALS: &str = "client_credentials";

fn default_grant_types() -> Vec<String> {
    vec![AUTHORIZATION_CODE.into(), REFRESH_TOKEN.into()]
}

impl ClientRecord {
    fn may_use(&self, grant_type: &str) -> bool {
        self.grant_types.iter().any(|g| g == grant_type)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct CodeRecord {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    /// Normalized: known scopes, each once.
    scope: String,
    resource: Option<String>,
    /// Once redeemed: the grant it produced (revoked if the code comes again).
    #[serde(default)]
    redeemed: Option<String>,
}

/// A grant with a refresh token: one record, rotated in place. Its refresh tokens are
/// `GRANT.SECRET`; only the digest of the newest secret is kept, so presenting an older one
/// is a reuse, which revokes the grant.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct GrantRecord {
    client_id: String,
    scope: String,
    resource: Option<String>,
    subject: String,
    /// The digest of the current refresh token's secret.
    current: String,
    /// The place it holds among [`Limits::grants`].
    slot: usize,
    /// The DPoP key thumbprint the tokens of this grant are bound to (RFC 9449 §5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jkt: Option<String>,
}

/// What an access token is issued for: the one place its claims are made.
struct Issue<'a> {
    client_id: &'a str,
    subject: &'a str,
    scope: &'a str,
    resource: Option<&'a str>,
    /// The grant (and so a refresh token) it belongs to; `None` for `client_credentials`.
    grant: Option<&'a str>,
    /// The DPoP key thumbprint the access token is bound to (`cnf.jkt`), if any.
    jkt: Option<&'a str>,
}

/// An OAuth error response (RFC 6749 §5.2).
struct OAuthError {
    status: StatusCode,
    error: &'static str,
    description: String,
}

fn oauth_error(
    status: StatusCode,
    error: &'static str,
    description: impl Into<String>,
) -> OAuthError {
    OAuthError {
        status,
        error,
        description: description.into(),
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn digest(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(text.as_bytes()))
}

/// The source a per-source limit counts: the address, an IPv6 one by its /64 (what one host
/// usually has), `unknown` when not known.
fn source(peer: Option<IpAddr>) -> String {
    match peer.map(|ip| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }) {
        Some(IpAddr::V4(v4)) => v4.to_string(),
        Some(IpAddr::V6(v6)) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        None => "unknown".into(),
    }
}

/// Compares two digests in constant time.
fn same_digest(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq as _;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// A random index below `bound` (at least 1).
fn random_index(bound: usize) -> usize {
    let mut bytes = [0u8; 8];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes);
    usize::try_from(u64::from_le_bytes(bytes) % (bound.max(1) as u64)).unwrap_or(0)
}

/// Whether a redirect URI may be registered: `https`, or `http` to a loopback host, with no
/// fragment (RFC 6749 §3.1.2, RFC 8252 §7.3).
pub(crate) fn redirect_uri_acceptable(uri: &str) -> bool {
    if uri.len() > 2048 {
        return false;
    }
    let Ok(url) = url::Url::parse(uri) else {
        return false;
    };
    if url.fragment().is_some() || url.host().is_none() {
        return false;
    }
    match url.scheme() {
        "https" => true,
        "http" => is_loopback_host(&url),
        _ => false,
    }
}

fn is_loopback_host(url: &url::Url) -> bool {
    matches!(url.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"))
}

/// Whether `challenge` is an RFC 7636 code challenge: 43-128 characters of the base64url
/// alphabet.
fn challenge_acceptable(challenge: &str) -> bool {
    (43..=128).contains(&challenge.len())
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn random(bytes: usize) -> Result<String, OAuthError> {
    pkce::random_token(bytes).map_err(|e| {
        oauth_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            e.to_string(),
        )
    })
}

/// The strings of a JSON array (`None` when it is not one).
fn string_list(value: &Value) -> Option<Vec<String>> {
    value.as_array().map(|items| {
        items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

fn form(text: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(text).into_owned().collect()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let mut found = fields.iter().filter(|(k, _)| k == name);
    // A parameter sent twice is as good as none (RFC 6749 §3.1).
    match (found.next(), found.next()) {
        (Some((_, value)), None) => Some(value.as_str()),
        _ => None,
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(serde_json::to_vec(body).unwrap_or_default()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

fn error_response(error: &OAuthError) -> Response<Bytes> {
    json_response(
        error.status,
        &json!({"error": error.error, "error_description": error.description}),
    )
}

fn redirect(location: &str) -> Response<Bytes> {
    let mut response = Response::new(Bytes::new());
    *response.status_mut() = StatusCode::FOUND;
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, value);
    }
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn html(status: StatusCode, body: String) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

/// The host (and port, when given) a redirect URI sends the user to.
fn redirect_host(redirect_uri: &str) -> String {
    url::Url::parse(redirect_uri)
        .ok()
        .and_then(|u| {
            u.host_str().map(|h| {
                u.port()
                    .map_or_else(|| h.to_owned(), |p| format!("{h}:{p}"))
            })
        })
        .unwrap_or_default()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Whether `requested` matches a registered redirect URI: exactly, or for a loopback
/// redirect (RFC 8252 §7.3) with any port (scheme, host, path and query still equal).
fn redirect_allowed(registered: &[String], requested: &str) -> bool {
    let Ok(requested_uri) = url::Url::parse(requested) else {
        return false;
    };
    registered.iter().any(|r| {
        r == requested
            || url::Url::parse(r).is_ok_and(|r| {
                matches!(r.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"))
                    && r.scheme() == requested_uri.scheme()
                    && r.host_str() == requested_uri.host_str()
                    && r.path() == requested_uri.path()
                    && r.query() == requested_uri.query()
            })
    })
}

fn with_query(base: &str, params: &[(&str, &str)]) -> String {
    let Ok(mut url) = url::Url::parse(base) else {
        return base.to_owned();
    };
    {
        let mut query = url.query_pairs_mut();
        for (k, v) in params {
            query.append_pair(k, v);
        }
    }
    url.to_string()
}

impl DevAuthorizationServer {
    /// An authorization server whose issuer is `issuer` (say `http://127.0.0.1:8080`): its
    /// endpoints are served under that URL's path.
    pub fn builder(issuer: impl Into<String>) -> DevAuthorizationServerBuilder {
        DevAuthorizationServerBuilder {
            issuer: issuer.into(),
            store: None,
            namespace: Namespace::new("dev-authorization-server"),
            scopes: Vec::new(),
            resources: Vec::new(),
            auto_approve: false,
            subject: "demo-user".into(),
            access_ttl: Duration::from_secs(3600),
            refresh_ttl: Duration::from_secs(86_400),
            clients: Vec::new(),
            limits: Limits::default(),
            allow_private_addresses: false,
            allow_dynamic_client_credentials: false,
        }
    }

    /// The issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// Where its key set is served.
    pub fn jwks_uri(&self) -> String {
        format!("{}/jwks", self.inner.issuer)
    }

    /// The RFC 8414 metadata it serves.
    pub fn metadata(&self) -> AuthorizationServerMetadata {
        let issuer = &self.inner.issuer;
        let mut metadata = AuthorizationServerMetadata::new(issuer.clone());
        metadata.authorization_endpoint = Some(format!("{issuer}/authorize"));
        metadata.token_endpoint = Some(format!("{issuer}/token"));
        metadata.registration_endpoint = Some(format!("{issuer}/register"));
        metadata.jwks_uri = Some(self.jwks_uri());
        metadata.grant_types_supported = Some(vec![
            "authorization_code".into(),
            "refresh_token".into(),
            "client_credentials".into(),
        ]);
        metadata.token_endpoint_auth_methods_supported = Some(vec![
            "client_secret_basic".into(),
            "client_secret_post".into(),
            "none".into(),
        ]);
        metadata.code_challenge_methods_supported = Some(vec![pkce::S256.into()]);
        metadata.authorization_response_iss_parameter_supported = Some(true);
        metadata.client_id_metadata_document_supported = Some(true);
        metadata.dpop_signing_alg_values_supported = Some(
            mcp_auth::DpopVerifier::new()
                .algorithm_names()
                .into_iter()
                .map(str::to_owned)
                .collect(),
        );
        if !self.inner.scopes.is_empty() {
            metadata.scopes_supported = Some(self.inner.scopes.clone());
        }
        metadata
    }

    /// Whether `uri` is one of its paths.
    pub fn owns(&self, uri: &Uri) -> bool {
        self.route(uri).is_some()
    }

    /// The paths it answers (relative to its issuer's origin).
    fn route(&self, uri: &Uri) -> Option<&'static str> {
        let base = url::Url::parse(&self.inner.issuer).ok()?;
        let prefix = base.path().trim_end_matches('/');
        let path = uri.path();
        let wk_as = format!("/.well-known/oauth-authorization-server{prefix}");
        let wk_oidc = format!("/.well-known/openid-configuration{prefix}");
        if path == wk_as
            || path == wk_oidc
            || path == format!("{prefix}/.well-known/openid-configuration")
        {
            return Some("metadata");
        }
        let rest = path.strip_prefix(prefix)?;
        match rest {
            "/authorize" => Some("authorize"),
            "/token" => Some("token"),
            "/register" => Some("register"),
            "/jwks" => Some("jwks"),
            _ => None,
        }
    }

    /// Answers a request for one of its paths; `None` for any other path. `body` is the
    /// request body (forms and JSON are small: read it within your body limit; past
    /// [`max_request_bytes`](DevAuthorizationServerBuilder::max_request_bytes) it is refused).
    /// The source is unknown here, so every registration counts against one shared
    /// [`registrations_per_minute`](DevAuthorizationServerBuilder::registrations_per_minute)
    /// (mounted on an endpoint as [`Routes`], it gets the peer's
    /// address).
    pub async fn handle(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Option<Response<Bytes>> {
        self.handle_from(None, method, uri, headers, body).await
    }

    /// [`handle`](Self::handle) for a request from `peer`.
    async fn handle_from(
        &self,
        peer: Option<IpAddr>,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Option<Response<Bytes>> {
        let route = self.route(uri)?;
        let limit = self.inner.limits.request_bytes;
        let too_large = body.len() > limit || uri.query().is_some_and(|q| q.len() > limit);
        let result = match (route, method) {
            _ if too_large => Err(oauth_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request",
                format!("the request is over {limit} bytes"),
            )),
            ("metadata", &Method::GET) => Ok(json_response(
                StatusCode::OK,
                &serde_json::to_value(self.metadata()).unwrap_or_default(),
            )),
            ("jwks", &Method::GET) => self.jwks().await,
            ("authorize", &Method::GET) => {
                let query = form(uri.query().unwrap_or_default().as_bytes());
                self.authorize(&query, false).await
            }
            ("authorize", &Method::POST) => self.authorize(&form(&body), true).await,
            ("token", &Method::POST) => self.token(headers, &form(&body)).await,
            ("register", &Method::POST) => self.register(peer, &body).await,
            _ => Err(oauth_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "invalid_request",
                "method not allowed",
            )),
        };
        let mut response = result.unwrap_or_else(|error| error_response(&error));
        // Every answer: never framed, never cached.
        let headers = response.headers_mut();
        headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.insert(
            CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
        );
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
        Some(response)
    }

    fn key_of(&self, name: &str) -> mcp_hub::Key {
        self.inner.namespace.key(name)
    }

    fn store_error(err: &StoreError) -> OAuthError {
        oauth_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            err.to_string(),
        )
    }

    fn full(what: &str, option: &str, limit: usize) -> OAuthError {
        oauth_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "temporarily_unavailable",
            format!("too many {what} (the limit is {limit}, set by {option}); try again later"),
        )
    }

    /// Takes one of `max` places of `kind` for `ttl`: `None` when no free place was found
    /// (a few random places, then a bounded scan from a random one).
    async fn claim_slot(
        &self,
        kind: &str,
        max: usize,
        ttl: Duration,
    ) -> Result<Option<usize>, OAuthError> {
        if max == 0 {
            return Ok(None);
        }
        let start = random_index(max);
        let probes = (0..8)
            .map(|_| random_index(max))
            .chain((0..max.min(64)).map(|i| (start + i) % max));
        for slot in probes {
            match self
                .inner
                .store
                .create(
                    &self.key_of(&format!("{kind}-slot/{slot}")),
                    Bytes::new(),
                    ttl,
                )
                .await
            {
                Ok(_) => return Ok(Some(slot)),
                Err(StoreError::AlreadyExists) => {}
                Err(err) => return Err(Self::store_error(&err)),
            }
        }
        Ok(None)
    }

    /// Counts one event in the current window of `window` for `name`: whether it is within
    /// `limit`.
    async fn count_in_window(
        &self,
        name: &str,
        limit: u64,
        window: Duration,
    ) -> Result<bool, OAuthError> {
        let seconds = window.as_secs().max(1);
        let index = now().max(0).unsigned_abs() / seconds;
        let key = self.key_of(&format!("{name}/{index}"));
        // A compare-and-set increment, retried a few times against concurrent ones.
        for _ in 0..8 {
            let current = self
                .inner
                .store
                .get(&key)
                .await
                .map_err(|e| Self::store_error(&e))?;
            let outcome = match current {
                None => self
                    .inner
                    .store
                    .create(&key, Bytes::from_static(b"1"), window * 2)
                    .await
                    .map(|_| ()),
                Some(record) => {
                    let count: u64 = std::str::from_utf8(&record.value)
                        .ok()
                        .and_then(|t| t.parse().ok())
                        .unwrap_or(u64::MAX);
                    if count >= limit {
                        return Ok(false);
                    }
                    self.inner
                        .store
                        .save(
                            &key,
                            Bytes::from((count + 1).to_string()),
                            record.version,
                            window * 2,
                        )
                        .await
                        .map(|_| ())
                }
            };
            match outcome {
                Ok(()) => return Ok(true),
                Err(
                    StoreError::AlreadyExists
                    | StoreError::VersionConflict { .. }
                    | StoreError::NotFound,
                ) => {}
                Err(err) => return Err(Self::store_error(&err)),
            }
        }
        // Too contended to count: refuse, as at the limit.
        Ok(false)
    }

    /// The signing key: made once per hub (the first worker to need it stores it).
    async fn signing_key(&self) -> Result<&SigningKey, OAuthError> {
        self.inner
            .key
            .get_or_try_init(|| async {
                let key = self.key_of("signing-key");
                let ttl = Duration::from_secs(10 * 365 * 86_400);
                let stored = self
                    .inner
                    .store
                    .get(&key)
                    .await
                    .map_err(|e| Self::store_error(&e))?;
                let der = match stored {
                    Some(record) => record.value.to_vec(),
                    None => {
                        let rng = ring::rand::SystemRandom::new();
                        let made = ring::signature::EcdsaKeyPair::generate_pkcs8(
                            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                            &rng,
                        )
                        .map_err(|_| {
                            oauth_error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", "no key")
                        })?;
                        let der = made.as_ref().to_vec();
                        match self
                            .inner
                            .store
                            .create(&key, Bytes::from(der.clone()), ttl)
                            .await
                        {
                            Ok(_) => der,
                            // Another worker made one first: use theirs.
                            Err(StoreError::AlreadyExists) => self
                                .inner
                                .store
                                .get(&key)
                                .await
                                .map_err(|e| Self::store_error(&e))?
                                .map(|r| r.value.to_vec())
                                .unwrap_or(der),
                            Err(err) => return Err(Self::store_error(&err)),
                        }
                    }
                };
                let server_error = |e: jsonwebtoken::errors::Error| {
                    oauth_error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "server_error",
                        e.to_string(),
                    )
                };
                let encoding = EncodingKey::from_ec_der(&der);
                let mut jwk =
                    Jwk::from_encoding_key(&encoding, Algorithm::ES256).map_err(server_error)?;
                // RFC 7638: the thumbprint of the public key.
                let kid = jwk
                    .thumbprint(jsonwebtoken::jwk::ThumbprintHash::SHA256)
                    .map_err(server_error)?;
                jwk.common.key_id = Some(kid.clone());
                // The anti-forgery key: derived from the private key, so every worker of the
                // hub has the same one, and nothing else learns it.
                let mut csrf_secret = Sha256::new();
                csrf_secret.update(b"mcp dev authorization server: consent form\0");
                csrf_secret.update(&der);
                let csrf = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &csrf_secret.finalize());
                Ok(SigningKey {
                    kid,
                    encoding,
                    jwk,
                    csrf,
                })
            })
            .await
    }

    async fn jwks(&self) -> Result<Response<Bytes>, OAuthError> {
        let key = self.signing_key().await?;
        let set = JwkSet {
            keys: vec![key.jwk.clone()],
        };
        Ok(json_response(
            StatusCode::OK,
            &serde_json::to_value(set).unwrap_or_default(),
        ))
    }

    /// The registered client `client_id`: pre-registered, dynamically registered, or a
    /// client ID metadata document.
    async fn client(&self, client_id: &str) -> Result<Option<ClientRecord>, OAuthError> {
        if let Some(client) = self.inner.clients.iter().find(|c| c.client_id == client_id) {
            let mut grant_types = default_grant_types();
            if client.client_secret.is_some() {
                grant_types.push(CLIENT_CREDENTIALS.into());
            }
            return Ok(Some(ClientRecord {
                client_id: client.client_id.clone(),
                secret_digest: client.client_secret.as_deref().map(digest),
                redirect_uris: client.redirect_uris.clone(),
                grant_types,
                client_name: None,
            }));
        }
        if client_id.starts_with("https://") {
            return self.metadata_document(client_id).await;
        }
        let record = self
            .inner
            .store
            .get(&self.key_of(&format!("client/{}", digest(client_id))))
            .await
            .map_err(|e| Self::store_error(&e))?;
        Ok(record.and_then(|r| serde_json::from_slice(&r.value).ok()))
    }

    async fn metadata_document(&self, url: &str) -> Result<Option<ClientRecord>, OAuthError> {
        match self.inner.documents.get(url).await {
            Ok(document) => Ok(Some(ClientRecord {
                client_id: url.to_owned(),
                secret_digest: None,
                redirect_uris: document.redirect_uris,
                grant_types: default_grant_types(),
                client_name: document.client_name,
            })),
            Err(Refusal::Unusable) => Ok(None),
            Err(Refusal::Form) => Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_client",
                "a client ID metadata document URL is https, with a path and no query or fragment",
            )),
            Err(Refusal::Address) => Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_client",
                "the client ID metadata document is on a loopback, private, link-local or \
                 multicast address, which this server does not fetch from",
            )),
            Err(Refusal::Busy) => Err(Self::full(
                "client ID metadata documents being fetched",
                "metadata_documents",
                self.inner.limits.document_fetches,
            )),
        }
    }

    async fn register(
        &self,
        peer: Option<IpAddr>,
        body: &[u8],
    ) -> Result<Response<Bytes>, OAuthError> {
        let bad = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_client_metadata", why);
        let request: Value = serde_json::from_slice(body).map_err(|_| bad("not JSON"))?;
        let redirect_uris: Vec<String> = string_list(&request["redirect_uris"]).unwrap_or_default();
        let mut grant_types: Vec<String> =
            string_list(&request["grant_types"]).unwrap_or_else(default_grant_types);
        grant_types.dedup();
        if let Some(unknown) = grant_types.iter().find(|g| {
            ![AUTHORIZATION_CODE, REFRESH_TOKEN, CLIENT_CREDENTIALS].contains(&g.as_str())
        }) {
            return Err(bad(&format!("grant type {unknown} is not supported")));
        }
        if redirect_uris.is_empty() && grant_types.iter().any(|g| g == AUTHORIZATION_CODE) {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_redirect_uri",
                "redirect_uris is required for the authorization code grant",
            ));
        }
        if redirect_uris.len() > 16 || !redirect_uris.iter().all(|u| redirect_uri_acceptable(u)) {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_redirect_uri",
                "redirect_uris must be at most 16 URLs of at most 2 KiB, https or http to a \
                 loopback host, without a fragment",
            ));
        }
        let method = request["token_endpoint_auth_method"]
            .as_str()
            .unwrap_or("client_secret_basic")
            .to_owned();
        if !["none", "client_secret_basic", "client_secret_post"].contains(&method.as_str()) {
            return Err(bad("token_endpoint_auth_method not supported"));
        }
        if grant_types.iter().any(|g| g == CLIENT_CREDENTIALS) {
            if !self.inner.allow_dynamic_client_credentials {
                return Err(bad(
                    "client_credentials is not offered to dynamically registered clients: \
                     ask the operator for a pre-registered client",
                ));
            }
            if method == "none" {
                return Err(bad("client_credentials needs a confidential client"));
            }
        }
        let client_name = match &request["client_name"] {
            Value::Null => None,
            Value::String(name) if name.chars().count() <= 100 => Some(name.clone()),
            _ => {
                return Err(bad(
                    "client_name must be a string of at most 100 characters",
                ));
            }
        };
        let limits = self.inner.limits;
        if !self
            .count_in_window(
                &format!("register-rate/{}", source(peer)),
                limits.registrations_per_minute,
                Duration::from_secs(60),
            )
            .await?
        {
            let mut response = error_response(&oauth_error(
                StatusCode::TOO_MANY_REQUESTS,
                "temporarily_unavailable",
                format!(
                    "more than {} registrations this minute (registrations_per_minute); try \
                     again later",
                    limits.registrations_per_minute
                ),
            ));
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from_static("60"));
            return Ok(response);
        }
        let lifetime = Duration::from_secs(30 * 86_400);
        if self
            .claim_slot("client", limits.clients, lifetime)
            .await?
            .is_none()
        {
            return Err(Self::full(
                "registered clients",
                "max_clients",
                limits.clients,
            ));
        }
        let client_id = random(16)?;
        let secret = if method == "none" {
            None
        } else {
            Some(random(32)?)
        };
        let record = ClientRecord {
            client_id: client_id.clone(),
            secret_digest: secret.as_deref().map(digest),
            redirect_uris: redirect_uris.clone(),
            grant_types: grant_types.clone(),
            client_name,
        };
        self.inner
            .store
            .create(
                &self.key_of(&format!("client/{}", digest(&client_id))),
                Bytes::from(serde_json::to_vec(&record).unwrap_or_default()),
                lifetime,
            )
            .await
            .map_err(|e| Self::store_error(&e))?;
        let mut answer = request.as_object().cloned().unwrap_or_default();
        answer.insert("client_id".into(), json!(client_id));
        answer.insert("client_id_issued_at".into(), json!(now()));
        answer.insert("token_endpoint_auth_method".into(), json!(method));
        answer.insert("grant_types".into(), json!(grant_types));
        answer.insert("redirect_uris".into(), json!(redirect_uris));
        if let Some(secret) = secret {
            answer.insert("client_secret".into(), json!(secret));
            answer.insert("client_secret_expires_at".into(), json!(0));
        }
        Ok(json_response(StatusCode::CREATED, &Value::Object(answer)))
    }

    /// Refuses a `resource` that is not an absolute http(s) URI without a fragment, or not
    /// one of the configured [`resources`](DevAuthorizationServerBuilder::resources).
    fn check_resource(&self, resource: Option<&str>) -> Result<(), OAuthError> {
        let Some(resource) = resource else {
            return Ok(());
        };
        let refuse = |why: &str| {
            Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                why.to_owned(),
            ))
        };
        let Ok(canonical) = mcp_auth::canonical_resource(resource) else {
            return refuse("resource must be an absolute URI without a fragment");
        };
        if !self.inner.resources.is_empty() && !self.inner.resources.contains(&canonical) {
            return refuse("this authorization server issues no tokens for that resource");
        }
        Ok(())
    }

    /// `scope` normalized: each scope once, in the order given; every one known (when scopes
    /// are configured), else at most 32 of at most 128 bytes.
    fn normalize_scope(&self, scope: &str) -> Result<String, OAuthError> {
        let invalid = |why: String| oauth_error(StatusCode::BAD_REQUEST, "invalid_scope", why);
        let mut kept: Vec<&str> = Vec::new();
        for item in scope.split(' ').filter(|s| !s.is_empty()) {
            if self.inner.scopes.is_empty() {
                let printable = item
                    .bytes()
                    .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
                if item.len() > 128 || !printable {
                    return Err(invalid(
                        "a scope is at most 128 printable characters".into(),
                    ));
                }
            } else if !self.inner.scopes.iter().any(|k| k == item) {
                let shown: String = item.chars().take(64).collect();
                return Err(invalid(format!("unknown scope {shown}")));
            }
            if !kept.contains(&item) {
                kept.push(item);
            }
            if kept.len() > 32 {
                return Err(invalid("at most 32 scopes".into()));
            }
        }
        Ok(kept.join(" "))
    }

    /// The anti-forgery token of an authorization request at time `at`: an HMAC over the
    /// time and every parameter but the token's own and the decision.
    fn csrf_token(key: &SigningKey, params: &[(String, String)], at: i64) -> String {
        let mut fields: Vec<&(String, String)> = params
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "csrf" | "csrf_time" | "decision"))
            .collect();
        fields.sort();
        let mut context = ring::hmac::Context::with_key(&key.csrf);
        context.update(at.to_string().as_bytes());
        for (k, v) in fields {
            // Length-prefixed, so no two lists of fields read the same.
            for part in [k, v] {
                context.update(&(part.len() as u64).to_be_bytes());
                context.update(part.as_bytes());
            }
        }
        URL_SAFE_NO_PAD.encode(context.sign().as_ref())
    }

    /// Whether a submitted consent form carries a valid anti-forgery token, at most
    /// [`CSRF_TTL`] old.
    fn csrf_valid(key: &SigningKey, params: &[(String, String)]) -> bool {
        let (Some(token), Some(at)) = (field(params, "csrf"), field(params, "csrf_time")) else {
            return false;
        };
        let Ok(at) = at.parse::<i64>() else {
            return false;
        };
        let age = now().saturating_sub(at);
        if !(-60..=CSRF_TTL).contains(&age) {
            return false;
        }
        let expected = Self::csrf_token(key, params, at);
        same_digest(&expected, token)
    }

    async fn authorize(
        &self,
        params: &[(String, String)],
        submitted: bool,
    ) -> Result<Response<Bytes>, OAuthError> {
        let page_error = |why: &str| {
            Ok(html(
                StatusCode::BAD_REQUEST,
                format!(
                    "<!doctype html><title>Authorization error</title><p>{}</p>",
                    escape(why)
                ),
            ))
        };
        // Until the client and its redirect URI are known, errors stay on this page (never a
        // redirect to somewhere unverified).
        let (Some(client_id), Some(redirect_uri)) =
            (field(params, "client_id"), field(params, "redirect_uri"))
        else {
            return page_error("client_id and redirect_uri are required");
        };
        let client = match self.client(client_id).await {
            Ok(Some(client)) => client,
            Ok(None) => return page_error("unknown client"),
            Err(refused) => return page_error(&refused.description),
        };
        if !redirect_allowed(&client.redirect_uris, redirect_uri) {
            return page_error("redirect_uri is not registered for this client");
        }
        if !client.may_use(AUTHORIZATION_CODE) {
            return page_error("this client did not register the authorization code grant");
        }
        let state = field(params, "state");
        // An error answered to the client's redirect URI (RFC 6749 §4.1.2.1), once the client
        // and that URI are known.
        let answer = |error: &str, description: &str| {
            let mut query = vec![
                ("error", error),
                ("error_description", description),
                ("iss", self.inner.issuer.as_str()),
            ];
            if let Some(state) = state {
                query.push(("state", state));
            }
            Ok(redirect(&with_query(redirect_uri, &query)))
        };
        // Before the user has approved anything, an error is redirected only to a client the
        // operator trusts (pre-registered) or to the user's own machine (a loopback redirect
        // URI). Any other redirect URI is one anyone could have registered (dynamic
        // registration, a client ID metadata document on any host): redirecting there without
        // the user would make this server an open redirector (RFC 9700 §4.11.2), so the error
        // is shown here instead, naming where the answer would have gone.
        let trusted = self
            .inner
            .clients
            .iter()
            .any(|c| c.client_id == client.client_id)
            || url::Url::parse(redirect_uri).is_ok_and(|u| is_loopback_host(&u));
        let fail = |error: &str, description: &str| {
            if trusted {
                return answer(error, description);
            }
            Ok(html(
                StatusCode::BAD_REQUEST,
                format!(
                    "<!doctype html><title>Authorization error</title><p>The application's \
                     request was refused: {} (<code>{}</code>).</p><p>Its answer would go to \
                     <strong>{}</strong>; this server does not send you there without your \
                     approval. Return to the application yourself.</p>",
                    escape(description),
                    escape(error),
                    escape(&redirect_host(redirect_uri)),
                ),
            ))
        };
        if field(params, "response_type") != Some("code") {
            return fail("unsupported_response_type", "response_type must be code");
        }
        let Some(challenge) = field(params, "code_challenge") else {
            return fail("invalid_request", "PKCE code_challenge is required");
        };
        if field(params, "code_challenge_method") != Some(pkce::S256) {
            return fail("invalid_request", "code_challenge_method must be S256");
        }
        if !challenge_acceptable(challenge) {
            return fail(
                "invalid_request",
                "code_challenge must be 43-128 characters of the base64url alphabet",
            );
        }
        let scope = match self.normalize_scope(field(params, "scope").unwrap_or_default()) {
            Ok(scope) => scope,
            Err(refused) => return fail("invalid_scope", &refused.description),
        };
        let resource = field(params, "resource");
        if let Err(refused) = self.check_resource(resource) {
            return fail("invalid_target", &refused.description);
        }
        let key = self.signing_key().await?;
        if submitted {
            // Only the consent page's own form approves or denies: never a forged POST.
            if !Self::csrf_valid(key, params) {
                return Ok(html(
                    StatusCode::FORBIDDEN,
                    "<!doctype html><title>Authorization refused</title><p>This consent form \
                     is not valid (forged, altered or older than 10 minutes). Start the \
                     authorization again from the application.</p>"
                        .into(),
                ));
            }
            if field(params, "decision") != Some("approve") {
                // The user saw the page naming the client and where the answer goes.
                return answer("access_denied", "the user denied the request");
            }
        } else if !self.inner.auto_approve {
            return Ok(self.consent_page(key, params, &client, redirect_uri, &scope));
        }
        let limits = self.inner.limits;
        // A code lives 60 s and is remembered 60 s more once used: its place, 2 minutes.
        if self
            .claim_slot("code", limits.codes, Duration::from_secs(120))
            .await?
            .is_none()
        {
            let description =
                Self::full("authorization codes", "max_codes", limits.codes).description;
            return if submitted {
                answer("temporarily_unavailable", &description)
            } else {
                fail("temporarily_unavailable", &description)
            };
        }
        let code = random(32)?;
        let record = CodeRecord {
            client_id: client.client_id.clone(),
            redirect_uri: redirect_uri.to_owned(),
            challenge: challenge.to_owned(),
            scope,
            resource: resource.map(str::to_owned),
            redeemed: None,
        };
        self.inner
            .store
            .create(
                &self.key_of(&format!("code/{}", digest(&code))),
                Bytes::from(serde_json::to_vec(&record).unwrap_or_default()),
                CODE_TTL,
            )
            .await
            .map_err(|e| Self::store_error(&e))?;
        let mut query = vec![("code", code.as_str()), ("iss", self.inner.issuer.as_str())];
        if let Some(state) = state {
            query.push(("state", state));
        }
        Ok(redirect(&with_query(redirect_uri, &query)))
    }

    fn consent_page(
        &self,
        key: &SigningKey,
        params: &[(String, String)],
        client: &ClientRecord,
        redirect_uri: &str,
        scope: &str,
    ) -> Response<Bytes> {
        let at = now();
        let csrf = Self::csrf_token(key, params, at);
        let hidden: String = params
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "decision" | "csrf" | "csrf_time"))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([("csrf", csrf.as_str()), ("csrf_time", &at.to_string())])
            .map(|(k, v)| {
                format!(
                    r#"<input type="hidden" name="{}" value="{}">"#,
                    escape(k),
                    escape(v)
                )
            })
            .collect();
        let name = client.client_name.as_deref().unwrap_or(&client.client_id);
        let host = redirect_host(redirect_uri);
        html(
            StatusCode::OK,
            format!(
                r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorize</title>
<meta name="viewport" content="width=device-width"></head><body>
<h1>Authorize {name}</h1>
<p>Development authorization server: approve as <strong>{subject}</strong> with the scopes <code>{scope}</code>?</p>
<p>The answer goes back to <strong>{host}</strong>. The name above is what the client calls itself: approve only a request you started.</p>
<form method="post">{hidden}
<button name="decision" value="approve" autofocus>Approve</button>
<button name="decision" value="deny">Deny</button>
</form></body></html>"#,
                name = escape(name),
                host = escape(&host),
                subject = escape(&self.inner.subject),
                scope = escape(if scope.is_empty() { "(none)" } else { scope }),
            ),
        )
    }

    /// The client a token request authenticates as (`client_secret_basic`,
    /// `client_secret_post`, or `none` for public clients).
    async fn authenticate_client(
        &self,
        headers: &HeaderMap,
        params: &[(String, String)],
    ) -> Result<ClientRecord, OAuthError> {
        let unauthorized = || {
            oauth_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "client authentication failed",
            )
        };
        let basic = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Basic "))
            .and_then(|b| STANDARD.decode(b.trim()).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|text| {
                let (id, secret) = text.split_once(':')?;
                let decode = |s: &str| {
                    url::form_urlencoded::parse(format!("x={s}").as_bytes())
                        .next()
                        .map(|(_, v)| v.into_owned())
                };
                Some((decode(id)?, decode(secret)?))
            });
        let (client_id, secret) = match basic {
            // A body `client_id` beside the header must name the same client.
            Some((id, _)) if field(params, "client_id").is_some_and(|body| body != id) => {
                return Err(unauthorized());
            }
            Some((id, secret)) => (id, Some(secret)),
            None => (
                field(params, "client_id")
                    .ok_or_else(unauthorized)?
                    .to_owned(),
                field(params, "client_secret").map(str::to_owned),
            ),
        };
        let client = self.client(&client_id).await?.ok_or_else(unauthorized)?;
        match (&client.secret_digest, &secret) {
            (Some(expected), Some(given)) if same_digest(expected, &digest(given)) => Ok(client),
            (None, None) => Ok(client),
            _ => Err(unauthorized()),
        }
    }

    async fn token(
        &self,
        headers: &HeaderMap,
        params: &[(String, String)],
    ) -> Result<Response<Bytes>, OAuthError> {
        let client = self.authenticate_client(headers, params).await?;
        let grant_type = field(params, "grant_type").unwrap_or_default();
        if [AUTHORIZATION_CODE, REFRESH_TOKEN, CLIENT_CREDENTIALS].contains(&grant_type)
            && !client.may_use(grant_type)
        {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "unauthorized_client",
                format!("this client may not use the {grant_type} grant"),
            ));
        }
        let jkt = self.dpop_binding(headers).await?;
        let jkt = jkt.as_deref();
        let invalid_grant = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why);
        match grant_type {
            AUTHORIZATION_CODE => {
                let code =
                    field(params, "code").ok_or_else(|| invalid_grant("code is required"))?;
                let code = self.redeem(code).await?;
                if code.client_id != client.client_id {
                    return Err(invalid_grant("the code was issued to another client"));
                }
                if field(params, "redirect_uri") != Some(code.redirect_uri.as_str()) {
                    return Err(invalid_grant(
                        "redirect_uri differs from the authorization request",
                    ));
                }
                let verifier = field(params, "code_verifier").unwrap_or_default();
                if !pkce::verify_s256(verifier, &code.challenge) {
                    return Err(invalid_grant("the PKCE code_verifier does not match"));
                }
                if let Some(resource) = field(params, "resource")
                    && code.resource.as_deref() != Some(resource)
                {
                    return Err(oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_target",
                        "resource differs from the authorization request",
                    ));
                }
                let grant = code.redeemed.as_deref().unwrap_or_default();
                let issue = Issue {
                    client_id: &client.client_id,
                    subject: &self.inner.subject,
                    scope: &code.scope,
                    resource: code.resource.as_deref(),
                    grant: Some(grant),
                    jkt,
                };
                let refresh = if client.may_use(REFRESH_TOKEN) {
                    Some(self.start_grant(grant, &issue).await?)
                } else {
                    None
                };
                self.issue(&issue, refresh).await
            }
            REFRESH_TOKEN => {
                let token = field(params, "refresh_token")
                    .ok_or_else(|| invalid_grant("refresh_token is required"))?;
                self.refresh(&client, token, field(params, "resource"), jkt)
                    .await
            }
            CLIENT_CREDENTIALS => {
                if client.secret_digest.is_none() {
                    return Err(oauth_error(
                        StatusCode::BAD_REQUEST,
                        "unauthorized_client",
                        "client_credentials needs a confidential client",
                    ));
                }
                let scope = self.normalize_scope(field(params, "scope").unwrap_or_default())?;
                self.check_resource(field(params, "resource"))?;
                let issue = Issue {
                    client_id: &client.client_id,
                    subject: &client.client_id,
                    scope: &scope,
                    resource: field(params, "resource"),
                    grant: None,
                    jkt,
                };
                self.issue(&issue, None).await
            }
            _ => Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "grant_type must be authorization_code, refresh_token or client_credentials",
            )),
        }
    }

    /// Spends the code: its record, with the grant it now produces. A code presented again
    /// revokes that grant (RFC 6749 §4.1.2).
    async fn redeem(&self, code: &str) -> Result<CodeRecord, OAuthError> {
        let invalid_grant = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why);
        let key = self.key_of(&format!("code/{}", digest(code)));
        let record = self
            .inner
            .store
            .get(&key)
            .await
            .map_err(|e| Self::store_error(&e))?
            .ok_or_else(|| invalid_grant("unknown, expired or used code"))?;
        let mut stored: CodeRecord =
            serde_json::from_slice(&record.value).map_err(|_| invalid_grant("unreadable code"))?;
        if let Some(grant) = &stored.redeemed {
            self.revoke(grant).await;
            return Err(invalid_grant(
                "the code was already used; the tokens it produced are revoked",
            ));
        }
        let grant = random(16)?;
        stored.redeemed = Some(grant);
        // Compare-and-set: of two concurrent uses, one redeems it; the other finds it spent
        // (and revokes what it produced) on its next read.
        match self
            .inner
            .store
            .save(
                &key,
                Bytes::from(serde_json::to_vec(&stored).unwrap_or_default()),
                record.version,
                CODE_TTL,
            )
            .await
        {
            Ok(_) => Ok(stored),
            Err(StoreError::VersionConflict { .. }) => {
                if let Ok(Some(now)) = self.inner.store.get(&key).await
                    && let Ok(CodeRecord {
                        redeemed: Some(grant),
                        ..
                    }) = serde_json::from_slice(&now.value)
                {
                    self.revoke(&grant).await;
                }
                Err(invalid_grant(
                    "the code was already used; the tokens it produced are revoked",
                ))
            }
            Err(StoreError::NotFound) => Err(invalid_grant("unknown, expired or used code")),
            Err(err) => Err(Self::store_error(&err)),
        }
    }

    /// Revokes grant `grant`: its refresh token, and the access tokens this server verifies.
    async fn revoke(&self, grant: &str) {
        tracing::warn!("a spent code or refresh token was presented again; its grant is revoked");
        let ttl = self.inner.refresh_ttl.max(self.inner.access_ttl);
        let _ = self
            .inner
            .store
            .create(
                &self.key_of(&format!("revoked/{grant}")),
                Bytes::from_static(b"revoked"),
                ttl,
            )
            .await;
        let _ = self
            .inner
            .store
            .delete(&self.key_of(&format!("grant/{grant}")))
            .await;
    }

    async fn revoked(&self, grant: &str) -> Result<bool, StoreError> {
        Ok(self
            .inner
            .store
            .get(&self.key_of(&format!("revoked/{grant}")))
            .await?
            .is_some())
    }

    /// Stores a new grant (one of [`Limits::grants`]): its first refresh token.
    async fn start_grant(&self, grant: &str, issue: &Issue<'_>) -> Result<String, OAuthError> {
        let limits = self.inner.limits;
        let Some(slot) = self
            .claim_slot("grant", limits.grants, self.inner.refresh_ttl)
            .await?
        else {
            return Err(Self::full(
                "grants with a refresh token",
                "max_grants",
                limits.grants,
            ));
        };
        let secret = random(32)?;
        let record = GrantRecord {
            client_id: issue.client_id.to_owned(),
            scope: issue.scope.to_owned(),
            resource: issue.resource.map(str::to_owned),
            subject: issue.subject.to_owned(),
            current: digest(&secret),
            slot,
            jkt: issue.jkt.map(str::to_owned),
        };
        self.inner
            .store
            .create(
                &self.key_of(&format!("grant/{grant}")),
                Bytes::from(serde_json::to_vec(&record).unwrap_or_default()),
                self.inner.refresh_ttl,
            )
            .await
            .map_err(|e| Self::store_error(&e))?;
        Ok(format!("{grant}.{secret}"))
    }

    /// Rotates a refresh token: the one presented is spent, a new one of the same grant is
    /// issued. A spent one presented again revokes the grant.
    async fn refresh(
        &self,
        client: &ClientRecord,
        token: &str,
        resource: Option<&str>,
        jkt: Option<&str>,
    ) -> Result<Response<Bytes>, OAuthError> {
        let invalid_grant = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why);
        let Some((grant, secret)) = token.split_once('.') else {
            return Err(invalid_grant("unknown or expired refresh token"));
        };
        if self
            .revoked(grant)
            .await
            .map_err(|e| Self::store_error(&e))?
        {
            return Err(invalid_grant("the refresh token's grant was revoked"));
        }
        let key = self.key_of(&format!("grant/{grant}"));
        let record = self
            .inner
            .store
            .get(&key)
            .await
            .map_err(|e| Self::store_error(&e))?
            .ok_or_else(|| invalid_grant("unknown or expired refresh token"))?;
        let mut stored: GrantRecord = serde_json::from_slice(&record.value)
            .map_err(|_| invalid_grant("unreadable refresh token"))?;
        if stored.client_id != client.client_id {
            return Err(invalid_grant(
                "the refresh token was issued to another client",
            ));
        }
        let reused = || async {
            self.revoke(grant).await;
            Err(invalid_grant(
                "the refresh token was already used; its grant is revoked",
            ))
        };
        if !same_digest(&stored.current, &digest(secret)) {
            return reused().await;
        }
        if stored.jkt.is_some() && stored.jkt.as_deref() != jkt {
            // RFC 9449 §5: a bound grant is refreshed only with a proof by its key (the grant
            // stays: whoever holds the token without the key gains nothing).
            return Err(invalid_grant(
                "the refresh token is bound to another DPoP key",
            ));
        }
        if resource.is_some_and(|r| Some(r) != stored.resource.as_deref()) {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "resource differs from the original grant",
            ));
        }
        let next = random(32)?;
        stored.current = digest(&next);
        // Compare-and-set: of two concurrent uses, one rotates it, the other is a reuse.
        match self
            .inner
            .store
            .save(
                &key,
                Bytes::from(serde_json::to_vec(&stored).unwrap_or_default()),
                record.version,
                self.inner.refresh_ttl,
            )
            .await
        {
            Ok(_) => {}
            Err(StoreError::VersionConflict { .. } | StoreError::NotFound) => {
                return reused().await;
            }
            Err(err) => return Err(Self::store_error(&err)),
        }
        // The grant's place lives as long as the grant.
        let _ = self
            .inner
            .store
            .touch(
                &self.key_of(&format!("grant-slot/{}", stored.slot)),
                self.inner.refresh_ttl,
            )
            .await;
        let issue = Issue {
            client_id: &client.client_id,
            subject: &stored.subject,
            scope: &stored.scope,
            resource: stored.resource.as_deref(),
            grant: Some(grant),
            jkt: stored.jkt.as_deref(),
        };
        self.issue(&issue, Some(format!("{grant}.{next}"))).await
    }

    /// The token response: an access token for `issue`, with `refresh_token` when given.
    async fn issue(
        &self,
        issue: &Issue<'_>,
        refresh_token: Option<String>,
    ) -> Result<Response<Bytes>, OAuthError> {
        let key = self.signing_key().await?;
        let now = now();
        let ttl = i64::try_from(self.inner.access_ttl.as_secs()).unwrap_or(3600);
        // The access token's claims: the one place they are made.
        let mut claims = json!({
            "iss": self.inner.issuer,
            "sub": issue.subject,
            "client_id": issue.client_id,
            "iat": now,
            "exp": now + ttl,
            "jti": random(16)?,
        });
        if let Some(resource) = issue.resource {
            claims["aud"] = json!(resource);
        }
        if !issue.scope.is_empty() {
            claims["scope"] = json!(issue.scope);
        }
        if let Some(grant) = issue.grant {
            // The grant it belongs to: revoked with it (checked where this server verifies).
            claims[GRANT_CLAIM] = json!(grant);
        }
        if let Some(jkt) = issue.jkt {
            claims["cnf"] = json!({ "jkt": jkt });
        }
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(key.kid.clone());
        header.typ = Some("at+jwt".into());
        let access = jsonwebtoken::encode(&header, &claims, &key.encoding).map_err(|e| {
            oauth_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                e.to_string(),
            )
        })?;
        let mut answer = json!({
            "access_token": access,
            "token_type": if issue.jkt.is_some() { "DPoP" } else { "Bearer" },
            "expires_in": ttl,
        });
        if !issue.scope.is_empty() {
            answer["scope"] = json!(issue.scope);
        }
        if let Some(refresh) = refresh_token {
            answer["refresh_token"] = json!(refresh);
        }
        Ok(json_response(StatusCode::OK, &answer))
    }

    /// The thumbprint a token request's `DPoP` proof binds its tokens to (RFC 9449 §5), `None`
    /// without a proof. The proof must be for `POST` to this token endpoint (the issuer's, not
    /// one built from `Host`), fresh, and used once (its `jti` is recorded in the store for the
    /// `iat` window); anything else is `invalid_dpop_proof`.
    async fn dpop_binding(&self, headers: &HeaderMap) -> Result<Option<String>, OAuthError> {
        let invalid = |error: &mcp_auth::DpopError| {
            oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_dpop_proof",
                error.to_string(),
            )
        };
        let mut proofs = headers.get_all("dpop").iter();
        let proof = match (proofs.next(), proofs.next()) {
            (None, _) => return Ok(None),
            (Some(proof), None) => proof
                .to_str()
                .map_err(|_| invalid(&mcp_auth::DpopError::Malformed("not text")))?,
            (Some(_), Some(_)) => return Err(invalid(&mcp_auth::DpopError::Missing)),
        };
        let verifier = mcp_auth::DpopVerifier::new();
        let endpoint = format!("{}/token", self.inner.issuer);
        let verified = verifier
            .verify(proof, &mcp_auth::DpopRequest::new("POST", &endpoint, now()))
            .map_err(|e| invalid(&e))?;
        let key = self.key_of(&format!("dpop-jti/{}", verified.replay_key()));
        match self
            .inner
            .store
            .create(&key, Bytes::new(), verifier.window())
            .await
        {
            Ok(_) => Ok(Some(verified.jkt)),
            Err(StoreError::AlreadyExists) => Err(invalid(&mcp_auth::DpopError::Replayed)),
            Err(e) => Err(Self::store_error(&e)),
        }
    }
}

/// How long a code lives (and is remembered once used).
const CODE_TTL: Duration = Duration::from_secs(60);
/// How long a consent form stays valid, in seconds.
const CSRF_TTL: i64 = 600;
/// The private claim naming an access token's grant.
const GRANT_CLAIM: &str = "grant";

/// The development authorization server verifies its own tokens in process (with its signing
/// key, no fetch of its key set): what a server that runs it on its own address, over TLS
/// with a private certificate say, uses as its [`TokenVerifier`]. A
/// token of a revoked grant (its code was used twice, or a spent refresh token came again)
/// is refused.
impl TokenVerifier for DevAuthorizationServer {
    fn verify<'a>(
        &'a self,
        token: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Claims, VerifyError>> {
        Box::pin(async move {
            let key = self
                .signing_key()
                .await
                .map_err(|e| VerifyError::Unavailable(e.description))?;
            let keys = JwkSet {
                keys: vec![key.jwk.clone()],
            };
            let claims = JwtVerifier::from_jwks(keys).verify(token).await?;
            if let Some(grant) = claims.extra.get(GRANT_CLAIM).and_then(Value::as_str)
                && self
                    .revoked(grant)
                    .await
                    .map_err(|e| VerifyError::Unavailable(e.to_string()))?
            {
                return Err(VerifyError::Token(TokenError::Inactive));
            }
            Ok(claims)
        })
    }
}

/// Mounted on an MCP endpoint's listener: it claims its own paths (whatever the method: a
/// wrong one gets 405 from it) and answers them with the peer's address, so registrations are
/// counted per source.
impl Routes for DevAuthorizationServer {
    fn claims(&self, _: &Method, uri: &Uri) -> bool {
        self.owns(uri)
    }

    fn serve(
        &self,
        peer: Option<SocketAddr>,
        request: http::Request<Bytes>,
    ) -> futures::future::BoxFuture<'_, Response<Bytes>> {
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let peer = peer.map(|p| p.ip());
            self.handle_from(peer, &parts.method, &parts.uri, &parts.headers, body)
                .await
                .unwrap_or_else(|| {
                    let mut response = Response::new(Bytes::new());
                    *response.status_mut() = StatusCode::NOT_FOUND;
                    response
                })
        })
    }
}
