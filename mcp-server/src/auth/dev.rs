//! A development authorization server: enough OAuth 2.1 to try and test a protected MCP
//! server end to end, on the same address. **A development and test tool, not an identity
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
//! A client id that is an `https://` URL is a client ID metadata document: it is fetched
//! (64 KiB, 5 s at most) and must name itself and the redirect URI.
//!
//! Several workers sharing a hub serve one authorization server: the signing key is made once
//! and stored there (a secret in the store: one more reason this is for development only).
//!
//! What it stores is bounded in size and time, not in count: a registration (at most 16
//! redirect URIs of 2 KiB) lives 30 days, a code 60 s, a refresh token its lifetime. It does
//! not limit how many clients register or how often: never expose it on the open internet.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, LOCATION, PRAGMA};
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, Uri};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_auth::{AuthorizationServerMetadata, ScopeSet, pkce};
use mcp_hub::{Namespace, StateStore, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use super::fetch::Fetcher;

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

    /// Registers a client ahead of time.
    #[must_use]
    pub fn client(mut self, client: DevClient) -> Self {
        self.clients.push(client);
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
                fetcher: Fetcher::new(Duration::from_secs(5), 64 << 10),
            }),
        }
    }
}

/// The development authorization server: see the [module docs](self).
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
    fetcher: Fetcher,
}

struct SigningKey {
    kid: String,
    encoding: EncodingKey,
    jwk: Jwk,
}

/// What a registered client keeps in the store.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ClientRecord {
    client_id: String,
    /// SHA-256 of the secret, for confidential clients.
    #[serde(default)]
    secret_digest: Option<String>,
    redirect_uris: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct CodeRecord {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
    resource: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct RefreshRecord {
    family: String,
    client_id: String,
    scope: String,
    resource: Option<String>,
    subject: String,
    used: bool,
    /// The DPoP key thumbprint the tokens of this grant are bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jkt: Option<String>,
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

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Whether `requested` matches a registered redirect URI: exactly, or for a loopback
/// redirect (RFC 8252 §7.3) with any port.
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
    /// request body (forms and JSON are small: read it within your body limit).
    pub async fn handle(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Option<Response<Bytes>> {
        let route = self.route(uri)?;
        let result = match (route, method) {
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
            ("register", &Method::POST) => self.register(&body).await,
            _ => Err(oauth_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "invalid_request",
                "method not allowed",
            )),
        };
        Some(result.unwrap_or_else(|error| error_response(&error)))
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
                let encoding = EncodingKey::from_ec_der(&der);
                let kid = digest(&STANDARD.encode(&der))[..16].to_owned();
                let mut jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256).map_err(|e| {
                    oauth_error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "server_error",
                        e.to_string(),
                    )
                })?;
                jwk.common.key_id = Some(kid.clone());
                Ok(SigningKey { kid, encoding, jwk })
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
            return Ok(Some(ClientRecord {
                client_id: client.client_id.clone(),
                secret_digest: client.client_secret.as_deref().map(digest),
                redirect_uris: client.redirect_uris.clone(),
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
        let Ok(body) = self.inner.fetcher.get(url).await else {
            return Ok(None);
        };
        let Ok(document) = serde_json::from_slice::<Value>(&body) else {
            return Ok(None);
        };
        if document["client_id"] != url {
            return Ok(None);
        }
        let redirect_uris = string_list(&document["redirect_uris"]).unwrap_or_default();
        Ok(Some(ClientRecord {
            client_id: url.to_owned(),
            secret_digest: None,
            redirect_uris,
        }))
    }

    async fn register(&self, body: &[u8]) -> Result<Response<Bytes>, OAuthError> {
        let bad = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_client_metadata", why);
        let request: Value = serde_json::from_slice(body).map_err(|_| bad("not JSON"))?;
        let redirect_uris: Vec<String> = string_list(&request["redirect_uris"]).unwrap_or_default();
        let grant_types: Vec<String> = string_list(&request["grant_types"])
            .unwrap_or_else(|| vec!["authorization_code".into(), "refresh_token".into()]);
        if redirect_uris.is_empty() && grant_types.iter().any(|g| g == "authorization_code") {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_redirect_uri",
                "redirect_uris is required for the authorization code grant",
            ));
        }
        if redirect_uris.len() > 16
            || redirect_uris
                .iter()
                .any(|u| u.len() > 2048 || url::Url::parse(u).is_err())
        {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_redirect_uri",
                "redirect_uris must be at most 16 absolute URLs of at most 2 KiB",
            ));
        }
        let method = request["token_endpoint_auth_method"]
            .as_str()
            .unwrap_or("client_secret_basic")
            .to_owned();
        if !["none", "client_secret_basic", "client_secret_post"].contains(&method.as_str()) {
            return Err(bad("token_endpoint_auth_method not supported"));
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
        };
        self.inner
            .store
            .create(
                &self.key_of(&format!("client/{}", digest(&client_id))),
                Bytes::from(serde_json::to_vec(&record).unwrap_or_default()),
                Duration::from_secs(30 * 86_400),
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

    fn check_scope(&self, scope: &str) -> Result<(), OAuthError> {
        if self.inner.scopes.is_empty() {
            return Ok(());
        }
        let unknown = ScopeSet::parse(scope)
            .iter()
            .find(|s| !self.inner.scopes.iter().any(|k| k == s))
            .map(str::to_owned);
        match unknown {
            Some(scope) => Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_scope",
                format!("unknown scope {scope}"),
            )),
            None => Ok(()),
        }
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
        let Some(client) = self.client(client_id).await? else {
            return page_error("unknown client");
        };
        if !redirect_allowed(&client.redirect_uris, redirect_uri) {
            return page_error("redirect_uri is not registered for this client");
        }
        let state = field(params, "state");
        let fail = |error: &str, description: &str| {
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
        if field(params, "response_type") != Some("code") {
            return fail("unsupported_response_type", "response_type must be code");
        }
        let Some(challenge) = field(params, "code_challenge") else {
            return fail("invalid_request", "PKCE code_challenge is required");
        };
        if field(params, "code_challenge_method") != Some(pkce::S256) {
            return fail("invalid_request", "code_challenge_method must be S256");
        }
        let scope = field(params, "scope").unwrap_or_default();
        if self.check_scope(scope).is_err() {
            return fail("invalid_scope", "a requested scope is unknown");
        }
        let resource = field(params, "resource");
        if let Err(refused) = self.check_resource(resource) {
            return fail("invalid_target", &refused.description);
        }
        if !self.inner.auto_approve && !submitted {
            return Ok(self.consent_page(params, client_id, scope));
        }
        if submitted && field(params, "decision") != Some("approve") {
            return fail("access_denied", "the user denied the request");
        }
        let code = random(32)?;
        let record = CodeRecord {
            client_id: client_id.to_owned(),
            redirect_uri: redirect_uri.to_owned(),
            challenge: challenge.to_owned(),
            scope: scope.to_owned(),
            resource: resource.map(str::to_owned),
        };
        self.inner
            .store
            .create(
                &self.key_of(&format!("code/{}", digest(&code))),
                Bytes::from(serde_json::to_vec(&record).unwrap_or_default()),
                Duration::from_secs(60),
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
        params: &[(String, String)],
        client_id: &str,
        scope: &str,
    ) -> Response<Bytes> {
        let hidden: String = params
            .iter()
            .filter(|(k, _)| k != "decision")
            .map(|(k, v)| {
                format!(
                    r#"<input type="hidden" name="{}" value="{}">"#,
                    escape(k),
                    escape(v)
                )
            })
            .collect();
        html(
            StatusCode::OK,
            format!(
                r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorize</title>
<meta name="viewport" content="width=device-width"></head><body>
<h1>Authorize {client}</h1>
<p>Development authorization server: approve as <strong>{subject}</strong> with the scopes <code>{scope}</code>?</p>
<form method="post">{hidden}
<button name="decision" value="approve" autofocus>Approve</button>
<button name="decision" value="deny">Deny</button>
</form></body></html>"#,
                client = escape(client_id),
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
            (Some(expected), Some(given)) if *expected == digest(given) => Ok(client),
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
        let jkt = self.dpop_binding(headers).await?;
        let jkt = jkt.as_deref();
        let invalid_grant = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why);
        match field(params, "grant_type") {
            Some("authorization_code") => {
                let code =
                    field(params, "code").ok_or_else(|| invalid_grant("code is required"))?;
                let key = self.key_of(&format!("code/{}", digest(code)));
                let record = self
                    .inner
                    .store
                    .get(&key)
                    .await
                    .map_err(|e| Self::store_error(&e))?
                    .ok_or_else(|| invalid_grant("unknown, expired or used code"))?;
                // Single use: whoever deletes it redeems it.
                if !self
                    .inner
                    .store
                    .delete(&key)
                    .await
                    .map_err(|e| Self::store_error(&e))?
                {
                    return Err(invalid_grant("unknown, expired or used code"));
                }
                let code: CodeRecord = serde_json::from_slice(&record.value)
                    .map_err(|_| invalid_grant("unreadable code"))?;
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
                let family = random(16)?;
                self.issue(
                    &client.client_id,
                    &self.inner.subject,
                    &code.scope,
                    code.resource.as_deref(),
                    Some(&family),
                    jkt,
                )
                .await
            }
            Some("refresh_token") => {
                let token = field(params, "refresh_token")
                    .ok_or_else(|| invalid_grant("refresh_token is required"))?;
                self.refresh(&client, token, field(params, "resource"), jkt)
                    .await
            }
            Some("client_credentials") => {
                if client.secret_digest.is_none() {
                    return Err(oauth_error(
                        StatusCode::BAD_REQUEST,
                        "unauthorized_client",
                        "client_credentials needs a confidential client",
                    ));
                }
                let scope = field(params, "scope").unwrap_or_default();
                self.check_scope(scope)?;
                self.check_resource(field(params, "resource"))?;
                self.issue(
                    &client.client_id,
                    &client.client_id,
                    scope,
                    field(params, "resource"),
                    None,
                    jkt,
                )
                .await
            }
            _ => Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "grant_type must be authorization_code, refresh_token or client_credentials",
            )),
        }
    }

    /// Rotates a refresh token: the one presented is spent, a new one of the same family is
    /// issued. A spent one presented again revokes the family (every refresh token of it).
    async fn refresh(
        &self,
        client: &ClientRecord,
        token: &str,
        resource: Option<&str>,
        jkt: Option<&str>,
    ) -> Result<Response<Bytes>, OAuthError> {
        let invalid_grant = |why: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", why);
        let key = self.key_of(&format!("refresh/{}", digest(token)));
        let record = self
            .inner
            .store
            .get(&key)
            .await
            .map_err(|e| Self::store_error(&e))?
            .ok_or_else(|| invalid_grant("unknown or expired refresh token"))?;
        let mut stored: RefreshRecord = serde_json::from_slice(&record.value)
            .map_err(|_| invalid_grant("unreadable refresh token"))?;
        if stored.client_id != client.client_id {
            return Err(invalid_grant(
                "the refresh token was issued to another client",
            ));
        }
        if stored.jkt.is_some() && stored.jkt.as_deref() != jkt {
            // RFC 9449 §5: a bound grant is refreshed only with a proof by its key.
            return Err(invalid_grant(
                "the refresh token is bound to another DPoP key",
            ));
        }
        let family_key = self.key_of(&format!("family/{}", stored.family));
        let revoked = self
            .inner
            .store
            .get(&family_key)
            .await
            .map_err(|e| Self::store_error(&e))?
            .is_some();
        if revoked {
            return Err(invalid_grant("the refresh token's family was revoked"));
        }
        let spent = stored.used || {
            stored.used = true;
            // Compare-and-set: of two concurrent uses, one spends it, the other is a reuse.
            self.inner
                .store
                .save(
                    &key,
                    Bytes::from(serde_json::to_vec(&stored).unwrap_or_default()),
                    record.version,
                    self.inner.refresh_ttl,
                )
                .await
                .is_err()
        };
        if spent {
            tracing::warn!("a spent refresh token was presented again; its family is revoked");
            let _ = self
                .inner
                .store
                .create(
                    &family_key,
                    Bytes::from_static(b"revoked"),
                    self.inner.refresh_ttl,
                )
                .await;
            return Err(invalid_grant(
                "the refresh token was already used; its family is revoked",
            ));
        }
        if resource.is_some_and(|r| Some(r) != stored.resource.as_deref()) {
            return Err(oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_target",
                "resource differs from the original grant",
            ));
        }
        self.issue(
            &client.client_id,
            &stored.subject,
            &stored.scope,
            stored.resource.as_deref(),
            Some(&stored.family),
            stored.jkt.as_deref(),
        )
        .await
    }

    /// An access token (and a refresh token of `family`, when given).
    async fn issue(
        &self,
        client_id: &str,
        subject: &str,
        scope: &str,
        resource: Option<&str>,
        family: Option<&str>,
        jkt: Option<&str>,
    ) -> Result<Response<Bytes>, OAuthError> {
        let key = self.signing_key().await?;
        let now = now();
        let ttl = i64::try_from(self.inner.access_ttl.as_secs()).unwrap_or(3600);
        let mut claims = json!({
            "iss": self.inner.issuer,
            "sub": subject,
            "client_id": client_id,
            "iat": now,
            "exp": now + ttl,
            "jti": random(16)?,
        });
        if let Some(resource) = resource {
            claims["aud"] = json!(resource);
        }
        if !scope.is_empty() {
            claims["scope"] = json!(scope);
        }
        if let Some(jkt) = jkt {
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
            "token_type": if jkt.is_some() { "DPoP" } else { "Bearer" },
            "expires_in": ttl,
        });
        if !scope.is_empty() {
            answer["scope"] = json!(scope);
        }
        if let Some(family) = family {
            let refresh = random(32)?;
            let record = RefreshRecord {
                family: family.to_owned(),
                client_id: client_id.to_owned(),
                scope: scope.to_owned(),
                resource: resource.map(str::to_owned),
                subject: subject.to_owned(),
                used: false,
                jkt: jkt.map(str::to_owned),
            };
            self.inner
                .store
                .create(
                    &self.key_of(&format!("refresh/{}", digest(&refresh))),
                    Bytes::from(serde_json::to_vec(&record).unwrap_or_default()),
                    self.inner.refresh_ttl,
                )
                .await
                .map_err(|e| Self::store_error(&e))?;
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

/// The development authorization server verifies its own tokens in process (with its signing
/// key, no fetch of its key set): what a server that runs it on its own address, over TLS
/// with a private certificate say, uses as its [`TokenVerifier`](super::TokenVerifier).
impl super::TokenVerifier for DevAuthorizationServer {
    fn verify<'a>(
        &'a self,
        token: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<super::Claims, super::VerifyError>> {
        Box::pin(async move {
            let key = self
                .signing_key()
                .await
                .map_err(|e| super::VerifyError::Unavailable(e.description))?;
            let keys = JwkSet {
                keys: vec![key.jwk.clone()],
            };
            super::JwtVerifier::from_jwks(keys).verify(token).await
        })
    }
}
