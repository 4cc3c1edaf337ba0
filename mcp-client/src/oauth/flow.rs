//! The flow itself: discovery, registration, authorization, tokens and refresh.

use std::fmt;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use http::HeaderMap;
use mcp_auth::{
    AuthorizationServerMetadata, BearerChallenge, Challenge, PkceVerifier,
    ProtectedResourceMetadata, ScopeSet, authorization_server_metadata_urls, canonical_resource,
    fallback_endpoints, protected_resource_metadata_urls, select_scopes,
};
use serde_json::{Value, json};

use super::dpop::DpopKey;
use super::http::{HttpClient, Response};
use super::store::{ClientRegistration, TokenSet};
use super::{Grant, OAuthConfig, OAuthError};
use crate::transport::lock;

const OFFLINE_ACCESS: &str = "offline_access";

/// The OAuth state of one MCP server: its configuration, the tokens held, and the lock that
/// makes one refresh or authorization serve every concurrent caller. Clones share it.
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Inner>,
}

struct Inner {
    config: OAuthConfig,
    /// The MCP server's URL, as the client connects to it.
    server: String,
    http: HttpClient,
    current: Mutex<Option<TokenSet>>,
    loaded: std::sync::atomic::AtomicBool,
    /// One refresh or authorization at a time.
    flight: tokio::sync::Mutex<()>,
    /// The DPoP key, made when first needed.
    dpop: Mutex<Option<Arc<DpopKey>>>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("server", &self.inner.server)
            .field("config", &self.inner.config)
            .field("tokens", &*lock(&self.inner.current))
            .finish()
    }
}

/// What discovery found.
struct Discovered {
    /// The `resource` to send (RFC 8707).
    resource: String,
    /// Whether to ask for DPoP-bound tokens.
    dpop: bool,
    /// The resource's `scopes_supported`.
    scopes_supported: Option<Vec<String>>,
    metadata: AuthorizationServerMetadata,
}

/// What a challenge from the server asks.
#[derive(Debug, Default)]
struct Asked {
    challenge: Option<BearerChallenge>,
}

impl OAuth {
    /// The OAuth client for the MCP server at `server` (the URL the transport posts to).
    pub fn new(config: OAuthConfig, server: &str) -> Result<Self, OAuthError> {
        canonical_resource(server).map_err(|e| OAuthError::Config(e.to_string()))?;
        let http = HttpClient::new(config.https.clone());
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                server: server.to_owned(),
                http,
                current: Mutex::new(None),
                loaded: false.into(),
                flight: tokio::sync::Mutex::new(()),
                dpop: Mutex::new(None),
            }),
        })
    }

    /// The MCP server's URL.
    pub fn server(&self) -> &str {
        &self.inner.server
    }

    /// The tokens held now (loaded from the store on first use), if any.
    pub fn tokens(&self) -> Result<Option<TokenSet>, OAuthError> {
        self.ensure_loaded()?;
        Ok(lock(&self.inner.current).clone())
    }

    /// Forgets the tokens of this server, here and in the store.
    pub fn logout(&self) -> Result<(), OAuthError> {
        *lock(&self.inner.current) = None;
        self.inner
            .loaded
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.inner.config.store.remove_tokens(&self.inner.server)
    }

    fn ensure_loaded(&self) -> Result<(), OAuthError> {
        use std::sync::atomic::Ordering;
        if !self.inner.loaded.load(Ordering::SeqCst) {
            // A DPoP-bound token needs the key it was bound to, which lived in another run.
            // Nor is a token without the scopes the configuration asks for
            // ([`OAuthConfig::scope`]): a new authorization asks for them.
            let wanted = self.inner.config.scope.as_deref().map(ScopeSet::parse);
            let stored = self
                .inner
                .config
                .store
                .load_tokens(&self.inner.server)?
                .filter(|t| !is_dpop(t))
                .filter(|t| {
                    wanted.as_ref().is_none_or(|wanted| {
                        ScopeSet::parse(t.scope.as_deref().unwrap_or_default()).contains_all(wanted)
                    })
                });
            let mut current = lock(&self.inner.current);
            if !self.inner.loaded.swap(true, Ordering::SeqCst) && current.is_none() {
                *current = stored;
            }
        }
        Ok(())
    }

    fn now(&self) -> u64 {
        self.inner.config.clock.now()
    }

    /// Whether `tokens` expire within the refresh margin.
    fn expiring(&self, tokens: &TokenSet) -> bool {
        let margin = self.inner.config.refresh_before.as_secs();
        tokens
            .expires_at
            .is_some_and(|at| self.now().saturating_add(margin) >= at)
    }

    /// The access token to send now, refreshed first when it is about to expire (one refresh
    /// for every concurrent caller). `None` when there is none yet (the server's challenge
    /// will start an authorization) or the refresh token was refused.
    pub async fn access_token(&self) -> Result<Option<String>, OAuthError> {
        self.ensure_loaded()?;
        let Some(held) = lock(&self.inner.current).clone() else {
            return Ok(None);
        };
        let renewable = held.refresh_token.is_some() || self.direct_grant();
        if !self.expiring(&held) || !renewable {
            return Ok(Some(held.access_token));
        }
        let _flight = self.inner.flight.lock().await;
        let Some(held) = lock(&self.inner.current).clone() else {
            return Ok(None);
        };
        if !self.expiring(&held) {
            // Another caller refreshed while this one waited.
            return Ok(Some(held.access_token));
        }
        let renewed = if held.refresh_token.is_none() && self.direct_grant() {
            self.grant_token(&held).await
        } else {
            self.refresh(&held).await
        };
        match renewed {
            Ok(tokens) => Ok(Some(tokens.access_token)),
            // A refused refresh token: one new authorization. A refused direct grant (its
            // assertion or credentials) is reported, not tried again.
            Err(e) if e.is_invalid_grant() && held.refresh_token.is_some() => {
                tracing::info!("the refresh token was refused; authorizing again");
                self.forget(&held).await?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Whether tokens come without a user and a redirect (every grant but the code grant).
    fn direct_grant(&self) -> bool {
        self.inner.config.grant != Grant::AuthorizationCode
    }

    async fn forget(&self, held: &TokenSet) -> Result<(), OAuthError> {
        {
            let mut current = lock(&self.inner.current);
            if current
                .as_ref()
                .is_some_and(|c| c.access_token == held.access_token)
            {
                *current = None;
            }
        }
        if let Some(stored) = self.inner.config.store.load_tokens(&self.inner.server)?
            && stored.access_token == held.access_token
        {
            let server = self.inner.server.clone();
            off_runtime(&self.inner.config.store, move |store| {
                store.remove_tokens(&server)
            })
            .await?;
        }
        Ok(())
    }

    /// The server refused a request that carried `sent` (or no token) with `status` and this
    /// `WWW-Authenticate`. Gets a new token when that can help: `Ok(true)` to try again,
    /// `Ok(false)` when nothing can be done (the refusal stands).
    /// `dpop_nonce` is the response's `DPoP-Nonce`, for a `use_dpop_nonce` challenge.
    pub async fn challenged(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
        dpop_nonce: Option<&str>,
        sent: Option<&str>,
    ) -> Result<bool, OAuthError> {
        self.ensure_loaded()?;
        let asked = Asked {
            challenge: www_authenticate
                .and_then(|v| Challenge::parse_all(v).ok())
                .and_then(|c| BearerChallenge::find(&c)),
        };
        if let (Some(nonce), Some(challenge)) = (dpop_nonce, &asked.challenge)
            && challenge.error.as_deref() == Some("use_dpop_nonce")
        {
            // RFC 9449 §9: the same request again, its proof carrying the server's nonce.
            if let Some(key) = lock(&self.inner.dpop).clone() {
                key.remember_nonce(&self.inner.server, nonce);
                return Ok(true);
            }
        }
        let _flight = self.inner.flight.lock().await;
        let held = lock(&self.inner.current).clone();
        if let Some(held) = &held
            && sent != Some(held.access_token.as_str())
        {
            // Someone replaced the token while this request was out: try with the new one.
            return Ok(true);
        }
        let challenged_scope = asked
            .challenge
            .as_ref()
            .and_then(|c| c.scope.as_deref())
            .map(ScopeSet::parse);
        if status == 403 {
            let insufficient = asked
                .challenge
                .as_ref()
                .is_some_and(|c| c.error.as_deref() == Some("insufficient_scope"));
            if !insufficient {
                return Ok(false);
            }
            let held_scope = held
                .as_ref()
                .and_then(|t| t.scope.as_deref())
                .map(ScopeSet::parse)
                .unwrap_or_default();
            let needed = challenged_scope.unwrap_or_default();
            if needed.is_empty() || held_scope.contains_all(&needed) {
                // Asking again for what is held would loop: the refusal stands.
                return Err(OAuthError::StepUpExhausted(
                    held_scope.union(&needed).to_string(),
                ));
            }
            let discovered = self.discover(asked.challenge.as_ref()).await?;
            let scopes = held_scope.union(&needed);
            if self.direct_grant() {
                // No user to ask: a new token by the same grant, for the wider scope.
                let Some(held) = held else {
                    return Ok(false);
                };
                let mut base = held;
                base.scope = Some(scopes.to_string());
                self.grant_token(&base).await?;
                return Ok(true);
            }
            let missing = held_scope.missing(&needed);
            self.inner
                .config
                .redirect
                .step_up(&held_scope.to_string(), &missing.to_string());
            self.authorize(&discovered, Some(scopes)).await?;
            return Ok(true);
        }
        if status != 401 {
            return Ok(false);
        }
        let discovered = self.discover(asked.challenge.as_ref()).await?;
        // A token was refused: refresh it when it comes from the same authorization server.
        if let Some(held) = held.filter(|h| {
            sent.is_some() && h.refresh_token.is_some() && h.issuer == discovered.metadata.issuer
        }) {
            match self.refresh(&held).await {
                Ok(_) => return Ok(true),
                Err(e) if e.is_invalid_grant() => self.forget(&held).await?,
                Err(e) => return Err(e),
            }
        }
        if self.direct_grant() {
            let scopes = self.with_configured(select_scopes(
                challenged_scope.as_ref(),
                discovered.scopes_supported.as_deref(),
                None,
            ));
            let metadata = &discovered.metadata;
            let base = TokenSet {
                access_token: String::new(),
                refresh_token: None,
                token_type: discovered.dpop.then(|| DPOP.to_owned()),
                expires_at: None,
                scope: scopes.map(|s| s.to_string()),
                server: self.inner.server.clone(),
                resource: discovered.resource.clone(),
                issuer: metadata.issuer.clone(),
                token_endpoint: metadata.token_endpoint.clone().ok_or_else(|| {
                    OAuthError::Discovery(format!("{} has no token endpoint", metadata.issuer))
                })?,
                client: self
                    .registration(metadata, &self.inner.config.redirect_uri)
                    .await?,
            };
            self.grant_token(&base).await?;
            return Ok(true);
        }
        let offline = (self.inner.config.offline_access
            && discovered.metadata.lists_scope(OFFLINE_ACCESS))
        .then_some(OFFLINE_ACCESS);
        let scopes = select_scopes(
            challenged_scope.as_ref(),
            discovered.scopes_supported.as_deref(),
            None,
        )
        .map(|mut s| {
            if let Some(o) = offline {
                s.insert(o);
            }
            s
        })
        .or_else(|| offline.map(ScopeSet::parse));
        let scopes = self.with_configured(scopes);
        self.authorize(&discovered, scopes).await?;
        Ok(true)
    }

    /// `scopes` with those of [`OAuthConfig::scope`] added.
    fn with_configured(&self, scopes: Option<ScopeSet>) -> Option<ScopeSet> {
        let Some(wanted) = self.inner.config.scope.as_deref().map(ScopeSet::parse) else {
            return scopes;
        };
        Some(match scopes {
            Some(scopes) => scopes.union(&wanted),
            None => wanted,
        })
    }

    // ---------------------------------------------------------------- discovery

    async fn discover(
        &self,
        challenge: Option<&BearerChallenge>,
    ) -> Result<Discovered, OAuthError> {
        let server = &self.inner.server;
        let mut locations: Vec<String> = Vec::new();
        if let Some(url) = challenge.and_then(|c| c.resource_metadata.clone()) {
            locations.push(url);
        }
        for url in protected_resource_metadata_urls(server)
            .map_err(|e| OAuthError::Config(e.to_string()))?
        {
            if !locations.contains(&url) {
                locations.push(url);
            }
        }
        let mut prm = None;
        for url in &locations {
            match self.inner.http.get_json(url).await {
                Ok(response) => {
                    if let Some(document) = response.json::<ProtectedResourceMetadata>() {
                        prm = Some(document);
                        break;
                    }
                }
                Err(e) => tracing::debug!("protected resource metadata at {url}: {e}"),
            }
        }
        match prm {
            Some(prm) => {
                self.check_resource(&prm.resource)?;
                let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
                    OAuthError::Discovery(
                        "the protected resource metadata names no authorization server".into(),
                    )
                })?;
                let metadata = self.authorization_server(&issuer, false).await?;
                let wanted = self.inner.config.dpop
                    || challenge.is_some_and(|c| c.scheme == mcp_auth::BearerScheme::DPoP)
                    || prm.dpop_bound_access_tokens_required == Some(true);
                Ok(Discovered {
                    dpop: wanted && signs_dpop(&metadata),
                    resource: prm.resource,
                    scopes_supported: prm.scopes_supported,
                    metadata,
                })
            }
            None => {
                // 2025-03-26: the authorization server is the server's origin.
                let origin = url::Url::parse(server)
                    .map_err(|e| OAuthError::Config(e.to_string()))?
                    .origin()
                    .ascii_serialization();
                let metadata = match self.authorization_server(&origin, true).await {
                    Ok(metadata) => metadata,
                    Err(OAuthError::Discovery(_)) => {
                        fallback_endpoints(server).map_err(|e| OAuthError::Config(e.to_string()))?
                    }
                    Err(e) => return Err(e),
                };
                let wanted = self.inner.config.dpop
                    || challenge.is_some_and(|c| c.scheme == mcp_auth::BearerScheme::DPoP);
                Ok(Discovered {
                    dpop: wanted && signs_dpop(&metadata),
                    resource: canonical_resource(server)
                        .map_err(|e| OAuthError::Config(e.to_string()))?,
                    scopes_supported: None,
                    metadata,
                })
            }
        }
    }

    /// The metadata's `resource` must be this server: the same origin, and a path that is
    /// the server's or one of its ancestors (a resource at the origin covers every path).
    fn check_resource(&self, resource: &str) -> Result<(), OAuthError> {
        let mismatch = || OAuthError::ResourceMismatch {
            expected: self.inner.server.clone(),
            found: resource.to_owned(),
        };
        let parse = |text: &str| {
            canonical_resource(text)
                .ok()
                .and_then(|c| url::Url::parse(&c).ok())
        };
        let (Some(found), Some(server)) = (parse(resource), parse(&self.inner.server)) else {
            return Err(mismatch());
        };
        if found.origin() != server.origin() {
            return Err(mismatch());
        }
        let prefix = found.path().trim_end_matches('/');
        let path = server.path().trim_end_matches('/');
        let covers = path == prefix
            || prefix.is_empty()
            || path
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('/'));
        if covers { Ok(()) } else { Err(mismatch()) }
    }

    /// The metadata of the authorization server `issuer`, from the first well-known location
    /// that has a usable document. `legacy`: the 2025-03-26 origin-as-issuer, where a trailing
    /// slash on the document's issuer is tolerated.
    async fn authorization_server(
        &self,
        issuer: &str,
        legacy: bool,
    ) -> Result<AuthorizationServerMetadata, OAuthError> {
        let mut mismatch = None;
        for url in authorization_server_metadata_urls(issuer)
            .map_err(|e| OAuthError::Config(e.to_string()))?
        {
            let response = match self.inner.http.get_json(&url).await {
                Ok(response) => response,
                Err(e) => {
                    tracing::debug!("authorization server metadata at {url}: {e}");
                    continue;
                }
            };
            let Some(metadata) = response.json::<AuthorizationServerMetadata>() else {
                continue;
            };
            let matches = metadata.check_issuer(issuer).is_ok()
                || (legacy && metadata.issuer.trim_end_matches('/') == issuer);
            if !matches {
                mismatch = Some(OAuthError::IssuerMismatch {
                    expected: issuer.to_owned(),
                    found: metadata.issuer.clone(),
                });
                continue;
            }
            return Ok(metadata);
        }
        Err(mismatch.unwrap_or_else(|| {
            OAuthError::Discovery(format!("no authorization server metadata for {issuer}"))
        }))
    }

    // ---------------------------------------------------------------- registration

    /// The client's registration with the authorization server of `metadata`; a dynamic
    /// registration registers `redirect_uri`.
    async fn registration(
        &self,
        metadata: &AuthorizationServerMetadata,
        redirect_uri: &str,
    ) -> Result<ClientRegistration, OAuthError> {
        let config = &self.inner.config;
        let issuer = &metadata.issuer;
        let supported = metadata.token_endpoint_auth_methods_supported.as_deref();
        let pick = |has_secret: bool| -> String {
            let preference: &[&str] = if has_secret {
                &["client_secret_basic", "client_secret_post", "none"]
            } else {
                &["none"]
            };
            match supported {
                None => preference[0].to_owned(),
                Some(list) => preference
                    .iter()
                    .find(|m| list.iter().any(|s| s == *m))
                    .unwrap_or(&preference[0])
                    .to_string(),
            }
        };
        if let Some(client) = config
            .client
            .as_ref()
            .filter(|c| c.issuer.as_ref().is_none_or(|i| i == issuer))
        {
            return Ok(ClientRegistration {
                issuer: issuer.clone(),
                client_id: client.client_id.clone(),
                client_secret: client.client_secret.clone(),
                token_endpoint_auth_method: client
                    .token_endpoint_auth_method
                    .clone()
                    .unwrap_or_else(|| pick(client.client_secret.is_some())),
            });
        }
        if let Some(url) = &config.client_metadata_url
            && metadata.client_id_metadata_document_supported == Some(true)
        {
            return Ok(ClientRegistration {
                issuer: issuer.clone(),
                client_id: url.clone(),
                client_secret: None,
                token_endpoint_auth_method: "none".into(),
            });
        }
        if let Some(saved) = config.store.load_client(issuer)?
            && saved.issuer == *issuer
        {
            return Ok(saved);
        }
        let endpoint = metadata.registration_endpoint.as_deref().ok_or_else(|| {
            OAuthError::Registration(format!(
                "{issuer} offers no dynamic registration and no client is configured"
            ))
        })?;
        let method = pick(true);
        let mut grant_types = vec!["authorization_code"];
        if config.offline_access {
            grant_types.push("refresh_token");
        }
        let body = json!({
            "redirect_uris": [redirect_uri],
            "client_name": config.client_name,
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": config.application_type,
        });
        let response = self.inner.http.post_json(endpoint, &body).await?;
        let Some(answer) = response.json::<Value>() else {
            return Err(OAuthError::Registration(format!(
                "{endpoint} answered HTTP {}: {}",
                response.status,
                crate::transport::excerpt(&response.body).unwrap_or_default()
            )));
        };
        let client_id = answer["client_id"]
            .as_str()
            .ok_or_else(|| OAuthError::Registration("no client_id in the answer".into()))?
            .to_owned();
        let client_secret = answer["client_secret"].as_str().map(str::to_owned);
        let method = answer["token_endpoint_auth_method"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or(if client_secret.is_some() {
                method
            } else {
                "none".into()
            });
        let registration = ClientRegistration {
            issuer: issuer.clone(),
            client_id,
            client_secret,
            token_endpoint_auth_method: method,
        };
        let saved = registration.clone();
        off_runtime(&config.store, move |store| store.save_client(&saved)).await?;
        Ok(registration)
    }

    // ---------------------------------------------------------------- authorization

    async fn authorize(
        &self,
        discovered: &Discovered,
        scopes: Option<ScopeSet>,
    ) -> Result<TokenSet, OAuthError> {
        let config = &self.inner.config;
        let metadata = &discovered.metadata;
        // A server that does not list S256 (or lists no methods) cannot be used: MCP clients
        // must refuse the authorization code grant without PKCE.
        if !metadata.supports_s256() {
            return Err(OAuthError::NoPkce(metadata.issuer.clone()));
        }
        // The endpoint goes to the user's browser (the operating system's opener): only
        // https, or http to a loopback host (a `file:` or custom-scheme URL would launch its
        // handler). Checked before anything is registered there.
        let mut url = metadata
            .checked_authorization_endpoint()
            .map_err(|e| OAuthError::Discovery(e.to_string()))?
            .ok_or_else(|| {
                OAuthError::Discovery(format!("{} has no authorization endpoint", metadata.issuer))
            })?;
        // The redirect URI of this authorization (a loopback listener's port, RFC 8252 §7.3).
        let redirect_uri = config.redirect.prepare(&config.redirect_uri).await?;
        let client = self.registration(metadata, &redirect_uri).await?;
        let token_endpoint = metadata.token_endpoint.clone().ok_or_else(|| {
            OAuthError::Discovery(format!("{} has no token endpoint", metadata.issuer))
        })?;
        let verifier = PkceVerifier::generate().map_err(|e| OAuthError::Config(e.to_string()))?;
        let state =
            mcp_auth::pkce::random_token(24).map_err(|e| OAuthError::Config(e.to_string()))?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &verifier.challenge())
                .append_pair("code_challenge_method", mcp_auth::pkce::S256)
                .append_pair("state", &state)
                .append_pair("resource", &discovered.resource);
            if let Some(scopes) = scopes.as_ref().filter(|s| !s.is_empty()) {
                query.append_pair("scope", &scopes.to_string());
            }
        }
        let landed = config
            .redirect
            .authorize(url.as_str(), &redirect_uri)
            .await?;
        let landed = url::Url::parse(&landed)
            .map_err(|e| OAuthError::Redirect(format!("unreadable redirect: {e}")))?;
        let param = |name: &str| {
            landed
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if let Some(error) = param("error") {
            return Err(OAuthError::Denied {
                error,
                description: param("error_description"),
            });
        }
        if param("state").as_deref() != Some(state.as_str()) {
            return Err(OAuthError::StateMismatch);
        }
        // RFC 9207: compared as plain strings.
        let iss = param("iss");
        let advertised = metadata.authorization_response_iss_parameter_supported == Some(true);
        match &iss {
            Some(iss) if *iss != metadata.issuer => {
                return Err(OAuthError::IssMismatch {
                    expected: metadata.issuer.clone(),
                    found: Some(iss.clone()),
                });
            }
            None if advertised => {
                return Err(OAuthError::IssMismatch {
                    expected: metadata.issuer.clone(),
                    found: None,
                });
            }
            _ => {}
        }
        let code = param("code")
            .ok_or_else(|| OAuthError::Redirect("the redirect carries no code".into()))?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri.clone()),
            ("code_verifier", verifier.as_str().to_owned()),
            ("resource", discovered.resource.clone()),
        ];
        let previous = TokenSet {
            access_token: String::new(),
            refresh_token: None,
            token_type: discovered.dpop.then(|| DPOP.to_owned()),
            expires_at: None,
            scope: scopes.map(|s| s.to_string()),
            server: self.inner.server.clone(),
            resource: discovered.resource.clone(),
            issuer: metadata.issuer.clone(),
            token_endpoint,
            client,
        };
        let _store = config.store.lock(&self.inner.server).await?;
        let tokens = self.token_request(&previous, form).await?;
        Ok(tokens)
    }

    // ---------------------------------------------------------------- tokens

    /// Refreshes `held` under the store's lock: if another client sharing the store already
    /// did, its tokens are adopted and no refresh token is spent.
    async fn refresh(&self, held: &TokenSet) -> Result<TokenSet, OAuthError> {
        let store = &self.inner.config.store;
        let _lock = store.lock(&self.inner.server).await?;
        let base = match store.load_tokens(&self.inner.server)? {
            Some(stored) if stored.issuer == held.issuer => {
                if stored.access_token != held.access_token
                    && !self.expiring(&stored)
                    && !is_dpop(&stored)
                {
                    *lock(&self.inner.current) = Some(stored.clone());
                    return Ok(stored);
                }
                stored
            }
            _ => held.clone(),
        };
        let Some(refresh_token) = base.refresh_token.clone() else {
            return Err(OAuthError::Token {
                status: 0,
                error: "invalid_grant".into(),
                description: Some("no refresh token".into()),
            });
        };
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token),
            ("resource", base.resource.clone()),
        ];
        self.token_request(&base, form).await
    }

    /// A token by the configured grant without a user (client credentials, JWT bearer,
    /// enterprise-managed) for the scopes and resource of `base`.
    async fn grant_token(&self, base: &TokenSet) -> Result<TokenSet, OAuthError> {
        const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
        let _lock = self.inner.config.store.lock(&self.inner.server).await?;
        let config = &self.inner.config;
        let mut form = match config.grant {
            Grant::JwtBearer => vec![
                ("grant_type", JWT_BEARER.to_owned()),
                (
                    "assertion",
                    config.assertion.clone().ok_or_else(|| {
                        OAuthError::Config("the JWT bearer grant needs an assertion".into())
                    })?,
                ),
            ],
            Grant::EnterpriseManaged => vec![
                ("grant_type", JWT_BEARER.to_owned()),
                ("assertion", self.identity_assertion(base).await?),
            ],
            _ => vec![("grant_type", "client_credentials".to_owned())],
        };
        form.push(("resource", base.resource.clone()));
        if let Some(scope) = base.scope.as_ref().filter(|s| !s.is_empty()) {
            form.push(("scope", scope.clone()));
        }
        self.token_request(base, form).await
    }

    /// SEP-990: exchanges the user's ID token at the enterprise identity provider for an
    /// identity assertion grant (ID-JAG) for this authorization server and resource
    /// (RFC 8693).
    async fn identity_assertion(&self, base: &TokenSet) -> Result<String, OAuthError> {
        let idp = self.inner.config.enterprise.as_ref().ok_or_else(|| {
            OAuthError::Config("enterprise-managed authorization needs an identity provider".into())
        })?;
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag",
            ),
            ("subject_token", idp.id_token.as_str()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
            ("audience", base.issuer.as_str()),
            ("resource", base.resource.as_str()),
            ("client_id", idp.client_id.as_str()),
        ];
        if let Some(secret) = &idp.client_secret {
            form.push(("client_secret", secret));
        }
        if let Some(scope) = base.scope.as_deref().filter(|s| !s.is_empty()) {
            form.push(("scope", scope));
        }
        let response = self
            .inner
            .http
            .post_form(&idp.token_endpoint, &form, None, HeaderMap::new())
            .await?;
        let answer: Option<Value> = serde_json::from_slice(&response.body).ok();
        let field = |name: &str| {
            answer
                .as_ref()
                .and_then(|a| a.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        if !(200..300).contains(&response.status) {
            return Err(OAuthError::Token {
                status: response.status,
                error: field("error").unwrap_or_else(|| "token exchange failed".into()),
                description: field("error_description"),
            });
        }
        field("access_token").ok_or_else(|| OAuthError::Token {
            status: response.status,
            error: "invalid_response".into(),
            description: Some("the token exchange returned no access_token".into()),
        })
    }

    /// The `client_assertion` of `private_key_jwt` (RFC 7523 §2.2): a short-lived JWT by the
    /// client about itself, for the authorization server `audience`.
    fn client_assertion(&self, client_id: &str, audience: &str) -> Result<String, OAuthError> {
        use jsonwebtoken::{Algorithm, EncodingKey, Header};
        let (pem, algorithm) = self
            .inner
            .config
            .client
            .as_ref()
            .and_then(|c| c.private_key.clone())
            .ok_or_else(|| OAuthError::Config("private_key_jwt without a private key".into()))?;
        let algorithm: Algorithm = algorithm
            .parse()
            .map_err(|_| OAuthError::Config(format!("unknown JWS algorithm {algorithm:?}")))?;
        let key = match algorithm {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem.as_bytes()),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
                return Err(OAuthError::Config(
                    "private_key_jwt needs an asymmetric algorithm".into(),
                ));
            }
            _ => EncodingKey::from_rsa_pem(pem.as_bytes()),
        }
        .map_err(|e| OAuthError::Config(format!("the private key: {e}")))?;
        let now = self.now();
        let jti =
            mcp_auth::pkce::random_token(16).map_err(|e| OAuthError::Config(e.to_string()))?;
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "jti": jti,
        });
        jsonwebtoken::encode(&Header::new(algorithm), &claims, &key)
            .map_err(|e| OAuthError::Config(format!("signing the client assertion: {e}")))
    }

    /// A token request with the client's authentication; saves and adopts the answer.
    async fn token_request(
        &self,
        base: &TokenSet,
        mut form: Vec<(&'static str, String)>,
    ) -> Result<TokenSet, OAuthError> {
        let client = &base.client;
        let mut basic = None;
        match client.token_endpoint_auth_method.as_str() {
            "client_secret_basic" if client.client_secret.is_some() => {
                let encode = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                let pair = format!(
                    "{}:{}",
                    encode(&client.client_id),
                    encode(client.client_secret.as_deref().unwrap_or_default())
                );
                basic = Some(base64::engine::general_purpose::STANDARD.encode(pair));
                // RFC 6749 §4.1.3 asks `client_id` of unauthenticated clients only, but
                // allows it here too, and some authorization servers (the Python SDK's) look
                // the client up by the body's `client_id` before reading the header.
                form.push(("client_id", client.client_id.clone()));
            }
            super::PRIVATE_KEY_JWT => {
                let assertion = self.client_assertion(&client.client_id, &base.issuer)?;
                form.push(("client_id", client.client_id.clone()));
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ));
                form.push(("client_assertion", assertion));
            }
            "client_secret_post" if client.client_secret.is_some() => {
                form.push(("client_id", client.client_id.clone()));
                form.push((
                    "client_secret",
                    client.client_secret.clone().unwrap_or_default(),
                ));
            }
            _ => form.push(("client_id", client.client_id.clone())),
        }
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let key = if is_dpop(base) {
            Some(self.dpop_key()?)
        } else {
            None
        };
        let mut response = None;
        // Twice at most: once more with the nonce a `use_dpop_nonce` answer gives (§8).
        for _ in 0..2 {
            let mut headers = HeaderMap::new();
            if let Some(key) = &key {
                let proof = key.proof("POST", &base.token_endpoint, None, self.now())?;
                headers.insert(
                    "dpop",
                    http::HeaderValue::try_from(proof)
                        .map_err(|_| OAuthError::Config("an unsendable DPoP proof".into()))?,
                );
            }
            let answer = self
                .inner
                .http
                .post_form(&base.token_endpoint, &pairs, basic.as_deref(), headers)
                .await?;
            let nonce = answer
                .headers
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let asks_nonce = answer.status == 400
                && serde_json::from_slice::<Value>(&answer.body)
                    .ok()
                    .is_some_and(|v| v["error"] == "use_dpop_nonce");
            match (&key, nonce, asks_nonce, response.is_none()) {
                (Some(key), Some(nonce), true, true) => {
                    key.remember_nonce(&base.token_endpoint, &nonce);
                    response = Some(answer);
                }
                _ => {
                    response = Some(answer);
                    break;
                }
            }
        }
        let Some(response) = response else {
            return Err(OAuthError::Http("no token response".into()));
        };
        let tokens = self.read_tokens(base, &response)?;
        let saved = tokens.clone();
        off_runtime(&self.inner.config.store, move |store| {
            store.save_tokens(&saved)
        })
        .await?;
        *lock(&self.inner.current) = Some(tokens.clone());
        Ok(tokens)
    }

    fn read_tokens(&self, base: &TokenSet, response: &Response) -> Result<TokenSet, OAuthError> {
        let answer: Option<Value> = serde_json::from_slice(&response.body).ok();
        let field = |name: &str| {
            answer
                .as_ref()
                .and_then(|a| a.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        if !(200..300).contains(&response.status) {
            return Err(OAuthError::Token {
                status: response.status,
                error: field("error").unwrap_or_else(|| {
                    crate::transport::excerpt(&response.body).unwrap_or_else(|| "no body".into())
                }),
                description: field("error_description"),
            });
        }
        let bad = |what: &str| OAuthError::Token {
            status: response.status,
            error: "invalid_response".into(),
            description: Some(what.to_owned()),
        };
        let access_token = field("access_token").ok_or_else(|| bad("no access_token"))?;
        let token_type = field("token_type").unwrap_or_default();
        let dpop = token_type.eq_ignore_ascii_case(DPOP);
        if !(token_type.eq_ignore_ascii_case("bearer") || (dpop && is_dpop(base))) {
            return Err(bad("token_type is not Bearer (or DPoP, when asked for)"));
        }
        let expires_in = answer.as_ref().and_then(|a| match a.get("expires_in") {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.parse().ok(),
            _ => None,
        });
        Ok(TokenSet {
            access_token,
            // A server that does not rotate keeps the refresh token valid.
            refresh_token: field("refresh_token").or_else(|| base.refresh_token.clone()),
            token_type: dpop.then(|| DPOP.to_owned()),
            expires_at: expires_in.map(|s| self.now().saturating_add(s)),
            scope: field("scope").or_else(|| base.scope.clone()),
            server: self.inner.server.clone(),
            resource: base.resource.clone(),
            issuer: base.issuer.clone(),
            token_endpoint: base.token_endpoint.clone(),
            client: base.client.clone(),
        })
    }
}

const DPOP: &str = "DPoP";

fn is_dpop(tokens: &TokenSet) -> bool {
    tokens
        .token_type
        .as_deref()
        .is_some_and(|t| t.eq_ignore_ascii_case(DPOP))
}

/// Whether the authorization server issues DPoP-bound tokens with proofs signed by ES256.
fn signs_dpop(metadata: &AuthorizationServerMetadata) -> bool {
    metadata
        .dpop_signing_alg_values_supported
        .as_ref()
        .is_some_and(|algs| algs.iter().any(|a| a == super::dpop::ES256))
}

impl OAuth {
    fn dpop_key(&self) -> Result<Arc<DpopKey>, OAuthError> {
        let mut slot = lock(&self.inner.dpop);
        if let Some(key) = slot.as_ref() {
            return Ok(key.clone());
        }
        let key = Arc::new(DpopKey::generate()?);
        *slot = Some(key.clone());
        Ok(key)
    }

    /// Puts the credentials for a `method` request to the MCP server in `headers`:
    /// `Authorization: Bearer`, or `Authorization: DPoP` with a fresh `DPoP` proof for `uri`
    /// (default: the server's URL). Returns the access token sent, if any.
    pub(crate) async fn authorize_request(
        &self,
        headers: &mut HeaderMap,
        method: &str,
        uri: Option<&str>,
    ) -> Result<Option<String>, OAuthError> {
        use http::header::AUTHORIZATION;
        let token = self.access_token().await?;
        headers.remove(AUTHORIZATION);
        headers.remove("dpop");
        let Some(token) = token else {
            return Ok(None);
        };
        let dpop = lock(&self.inner.current)
            .as_ref()
            .is_some_and(|t| t.access_token == token && is_dpop(t));
        let unsendable = || OAuthError::Config("an access token not sendable in a header".into());
        if dpop {
            let proof = self.dpop_key()?.proof(
                method,
                uri.unwrap_or(&self.inner.server),
                Some(&token),
                self.now(),
            )?;
            headers.insert(
                AUTHORIZATION,
                http::HeaderValue::try_from(format!("DPoP {token}")).map_err(|_| unsendable())?,
            );
            headers.insert(
                "dpop",
                http::HeaderValue::try_from(proof).map_err(|_| unsendable())?,
            );
        } else {
            headers.insert(
                AUTHORIZATION,
                http::HeaderValue::try_from(format!("Bearer {token}")).map_err(|_| unsendable())?,
            );
        }
        Ok(Some(token))
    }
}

/// Runs a change of the token store on the runtime's blocking pool: a store may wait there (a
/// [`FileTokenStore`](super::FileTokenStore) polls for another process's lock file, up to its
/// lock timeout), which must never hold up the runtime's threads (on a current-thread runtime,
/// every other task of the process, the server that would answer included).
async fn off_runtime<T: Send + 'static>(
    store: &Arc<dyn super::TokenStore>,
    change: impl FnOnce(&dyn super::TokenStore) -> Result<T, OAuthError> + Send + 'static,
) -> Result<T, OAuthError> {
    let store = Arc::clone(store);
    tokio::task::spawn_blocking(move || change(store.as_ref()))
        .await
        .map_err(|e| OAuthError::Store(format!("the token store's task ended: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::FollowRedirect;

    fn oauth(server: &str) -> OAuth {
        OAuth::new(OAuthConfig::new(FollowRedirect::new()), server).unwrap()
    }

    #[test]
    fn the_resource_must_be_the_server_or_an_ancestor_on_its_origin() {
        let o = oauth("https://mcp.example.com/tenant/mcp");
        for ok in [
            "https://mcp.example.com/tenant/mcp",
            "https://MCP.example.com:443/tenant/mcp/",
            "https://mcp.example.com/tenant",
            "https://mcp.example.com",
            "https://mcp.example.com/",
        ] {
            assert!(o.check_resource(ok).is_ok(), "{ok}");
        }
        for bad in [
            "https://evil.example.com/tenant/mcp",
            "http://mcp.example.com/tenant/mcp",
            "https://mcp.example.com:8443/tenant/mcp",
            "https://mcp.example.com/ten",
            "https://mcp.example.com/tenant/mcp/other",
            "https://mcp.example.com/tenant/mcp#x",
            "not a url",
        ] {
            assert!(
                matches!(
                    o.check_resource(bad),
                    Err(OAuthError::ResourceMismatch { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_bad_server_url_is_a_configuration_error() {
        assert!(matches!(
            OAuth::new(OAuthConfig::new(FollowRedirect::new()), "ftp://x/y"),
            Err(OAuthError::Config(_))
        ));
    }

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let tokens = TokenSet {
            access_token: "at-secret".into(),
            refresh_token: Some("rt-secret".into()),
            token_type: None,
            expires_at: Some(1),
            scope: None,
            server: "https://s/mcp".into(),
            resource: "https://s/mcp".into(),
            issuer: "https://as".into(),
            token_endpoint: "https://as/token".into(),
            client: ClientRegistration {
                issuer: "https://as".into(),
                client_id: "id".into(),
                client_secret: Some("cs-secret".into()),
                token_endpoint_auth_method: "client_secret_basic".into(),
            },
        };
        let config = OAuthConfig::new(FollowRedirect::new()).client(
            crate::oauth::PreRegistered::new("id", Some("cs-secret".into()))
                .private_key_jwt("pem-secret", None),
        );
        let text = format!("{tokens:?} {config:?}");
        for secret in ["at-secret", "rt-secret", "cs-secret", "pem-secret"] {
            assert!(!text.contains(secret), "{text}");
        }
    }
}
