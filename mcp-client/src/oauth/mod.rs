//! The OAuth 2.1 client: an MCP server that answers `401` (or `403 insufficient_scope`) gets
//! an access token, found and obtained the way the MCP authorization specification says.
//!
//! Give a [`ClientBuilder`](crate::ClientBuilder) an [`OAuthConfig`] with
//! [`ClientBuilder::oauth`](crate::ClientBuilder::oauth); every request then carries
//! `Authorization: Bearer`, and a challenge from the server runs, on the transport's own HTTP
//! stack (same TLS settings and pools):
//!
//! 1. discovery: the protected resource metadata (the challenge's `resource_metadata`, then
//!    the path-inserted and root well-known locations, RFC 9728), whose `resource` must be
//!    this server; the authorization server metadata (RFC 8414 and OpenID Connect, with the
//!    path forms, in the specification's order), whose `issuer` must be the one asked for.
//!    A server without protected resource metadata gets the 2025-03-26 behaviour: metadata at
//!    the server's origin, else the default endpoints `/authorize`, `/token`, `/register`;
//! 2. registration: the pre-registered client ([`OAuthConfig::client`]), else the client ID
//!    metadata document URL ([`OAuthConfig::client_metadata_url`]) when the authorization
//!    server supports it, else dynamic registration (RFC 7591, with `application_type`).
//!    Registrations are kept per authorization server and never used with another one;
//! 3. the authorization code grant with PKCE S256, `state`, the RFC 8707 `resource` and the
//!    RFC 9207 `iss` check (plain string comparison), through a [`RedirectHandler`];
//! 4. tokens: requested with `client_secret_basic`, `client_secret_post` or `none`; refreshed
//!    before they expire, once for any number of concurrent calls and for every client sharing
//!    the [`TokenStore`], with `resource`; an `invalid_grant` on refresh falls back to one new
//!    authorization.
//!
//! The scope requested is the challenge's, else the resource's `scopes_supported`, else none;
//! `offline_access` is added only when the authorization server lists it. A `403` with
//! `insufficient_scope` re-authorizes with the union of the scopes held and those challenged
//! (telling the [`RedirectHandler::step_up`] why first), or, for a grant without a user
//! ([`Grant::ClientCredentials`] and the like), requests a token for that union; it gives up
//! when that would ask for nothing new. [`OAuthConfig::scope`] adds scopes to every request.
//!
//! The authorization endpoint goes to the user's browser only when it is `https:` (or `http:`
//! to a loopback host): a `file:`, `smb:` or custom-scheme URL from a hostile server's metadata
//! is refused with [`OAuthError::Discovery`] naming it, before anything is registered. A
//! [`RedirectHandler`] may pick each authorization's redirect URI in
//! [`RedirectHandler::prepare`] (a loopback listener on a port the system gives).
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp_client::Error> {
//! use mcp_client::Client;
//! use mcp_client::oauth::{FileTokenStore, FollowRedirect, OAuthConfig};
//!
//! let oauth = OAuthConfig::new(FollowRedirect::new())
//!     .client_name("my-app")
//!     .store(FileTokenStore::new("tokens.json"));
//! let client = Client::builder().oauth(oauth).connect_http("https://mcp.example.com/mcp").await?;
//! let tools = client.list_tools().await?;
//! # Ok(()) }
//! ```
//!
//! Secrets never reach a log: the `Debug` output of tokens, registrations and configurations
//! redacts them.

mod dpop;
mod flow;
mod http;
mod redirect;
mod store;
pub(crate) mod transport;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use flow::OAuth;
pub use redirect::{FollowRedirect, RedirectHandler};
pub use store::{
    ClientRegistration, Clock, FileTokenStore, ManualClock, MemoryTokenStore, StoreLock,
    SystemClock, TokenSet, TokenStore,
};
pub use transport::OAuthTransport;

/// Whether an authorization URL may be handed to a browser: `https:`, or `http:` to a loopback
/// host (the check the OAuth client applies to every authorization endpoint; a program that
/// opens URLs itself applies it again before its opener).
pub use mcp_auth::metadata::browser_url;
/// Whether a URL's host is `localhost` or a loopback IP address (the rule of
/// [`browser_url`] for plain `http:`).
pub use mcp_auth::metadata::is_loopback;

use crate::transport::Https;

pub use crate::oauth_error::OAuthError;

impl OAuthError {
    /// Whether the authorization server said the grant (code or refresh token) is invalid,
    /// expired or revoked.
    pub fn is_invalid_grant(&self) -> bool {
        matches!(self, Self::Token { error, .. } if error == "invalid_grant")
    }
}

/// How the client obtains its tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Grant {
    /// The authorization code grant with PKCE: a user authorizes through the
    /// [`RedirectHandler`] (the default).
    #[default]
    AuthorizationCode,
    /// The `client_credentials` grant (SEP-1046): the client acts for itself, with the
    /// pre-registered credentials ([`OAuthConfig::client`]), by secret or by
    /// `private_key_jwt`; no user, no redirect, no refresh token (a new token is requested
    /// when the old one expires).
    ClientCredentials,
    /// The JWT bearer grant (RFC 7523 §2.1) with a workload identity token as the assertion
    /// (SEP-1933), set with [`OAuthConfig::jwt_bearer`]. Errors are reported, never retried
    /// with another grant.
    JwtBearer,
    /// Enterprise-managed authorization (SEP-990): the user's ID token is exchanged at the
    /// enterprise identity provider for an identity assertion grant (ID-JAG, RFC 8693 token
    /// exchange), which the authorization server takes as a JWT bearer grant. Set with
    /// [`OAuthConfig::enterprise_managed`].
    EnterpriseManaged,
}

/// The enterprise identity provider of [`Grant::EnterpriseManaged`].
#[derive(Clone)]
pub struct EnterpriseIdp {
    /// The identity provider's token endpoint (where the ID token is exchanged).
    pub token_endpoint: String,
    /// This client's ID at the identity provider.
    pub client_id: String,
    /// This client's secret at the identity provider, if it has one (sent in the form).
    pub client_secret: Option<String>,
    /// The user's ID token from the identity provider.
    pub id_token: String,
}

impl fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// A client registered in advance with the authorization server.
#[derive(Clone)]
pub struct PreRegistered {
    /// The client ID.
    pub client_id: String,
    /// The client secret, for a confidential client.
    pub client_secret: Option<String>,
    /// How to authenticate at the token endpoint; `None` picks one the authorization server
    /// supports (`client_secret_basic`, then `client_secret_post`; `none` without a secret).
    pub token_endpoint_auth_method: Option<String>,
    /// The private key (PEM, PKCS#8) and JWS algorithm (`ES256`, `RS256` ...) of
    /// `private_key_jwt` (RFC 7523 §2.2); never stored.
    pub private_key: Option<(String, String)>,
    /// The authorization server (issuer) the client is registered with: with another one
    /// these credentials are not used (SEP-2352), and the client registers there instead.
    /// `None`: whichever the server names.
    pub issuer: Option<String>,
}

impl PreRegistered {
    /// A client ID with an optional secret.
    pub fn new(client_id: impl Into<String>, client_secret: Option<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret,
            token_endpoint_auth_method: None,
            private_key: None,
            issuer: None,
        }
    }

    /// Binds the credentials to the authorization server `issuer`.
    #[must_use]
    pub fn for_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Authenticates with `private_key_jwt`: a JWT assertion signed with `pem` (a PKCS#8
    /// private key) by `algorithm` (`ES256` when `None`).
    #[must_use]
    pub fn private_key_jwt(mut self, pem: impl Into<String>, algorithm: Option<&str>) -> Self {
        self.private_key = Some((pem.into(), algorithm.unwrap_or("ES256").to_owned()));
        self.token_endpoint_auth_method = Some(PRIVATE_KEY_JWT.into());
        self
    }
}

/// The `private_key_jwt` token endpoint authentication method.
pub(crate) const PRIVATE_KEY_JWT: &str = "private_key_jwt";

impl fmt::Debug for PreRegistered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreRegistered")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field(
                "private_key",
                &self
                    .private_key
                    .as_ref()
                    .map(|(_, alg)| (alg, "<redacted>")),
            )
            .finish()
    }
}

/// How the client authorizes itself with protected MCP servers.
#[derive(Clone)]
pub struct OAuthConfig {
    pub(crate) redirect: Arc<dyn RedirectHandler>,
    pub(crate) redirect_uri: String,
    pub(crate) client: Option<PreRegistered>,
    pub(crate) grant: Grant,
    pub(crate) assertion: Option<String>,
    pub(crate) enterprise: Option<EnterpriseIdp>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) client_name: String,
    pub(crate) application_type: String,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) offline_access: bool,
    pub(crate) dpop: bool,
    pub(crate) refresh_before: Duration,
    pub(crate) https: Option<Https>,
    pub(crate) scope: Option<String>,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("redirect", &self.redirect)
            .field("redirect_uri", &self.redirect_uri)
            .field("client", &self.client)
            .field("grant", &self.grant)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_name", &self.client_name)
            .field("store", &self.store)
            .field("offline_access", &self.offline_access)
            .field("refresh_before", &self.refresh_before)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// The default redirect URI: a loopback address, as native clients use.
pub const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1:33418/callback";

impl OAuthConfig {
    /// A configuration that sends the user through `redirect`. Defaults: redirect URI
    /// [`DEFAULT_REDIRECT_URI`], dynamic registration as a `native` client named `mcp-client`,
    /// tokens in memory, the system clock, `offline_access` when offered, refresh 60 s before
    /// expiry.
    pub fn new(redirect: impl RedirectHandler) -> Self {
        Self {
            redirect: Arc::new(redirect),
            redirect_uri: DEFAULT_REDIRECT_URI.into(),
            client: None,
            grant: Grant::AuthorizationCode,
            assertion: None,
            enterprise: None,
            client_metadata_url: None,
            client_name: "mcp-client".into(),
            application_type: "native".into(),
            store: Arc::new(MemoryTokenStore::new()),
            clock: Arc::new(SystemClock),
            offline_access: true,
            dpop: false,
            refresh_before: Duration::from_secs(60),
            https: None,
            scope: None,
        }
    }

    /// The redirect URI registered and sent in the authorization request.
    #[must_use]
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = uri.into();
        self
    }

    /// Scopes (space-separated) to ask for in every authorization and token request, beside
    /// those the server's challenge or metadata name: for a script that knows it needs more
    /// than the server asks up front. A kept token without all of them is not used (a new
    /// authorization asks for them). Default: none.
    ///
    /// ```
    /// use mcp_client::oauth::{FollowRedirect, OAuthConfig};
    ///
    /// let config = OAuthConfig::new(FollowRedirect::new()).scope("mcp:read mcp:deploy");
    /// ```
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into()).filter(|s| !s.trim().is_empty());
        self
    }

    /// Uses a client registered in advance instead of registering.
    #[must_use]
    pub fn client(mut self, client: PreRegistered) -> Self {
        self.client = Some(client);
        self
    }

    /// How tokens are obtained. Default: [`Grant::AuthorizationCode`].
    /// [`Grant::ClientCredentials`] needs a pre-registered [`OAuthConfig::client`].
    #[must_use]
    pub fn grant(mut self, grant: Grant) -> Self {
        self.grant = grant;
        self
    }

    /// Uses the JWT bearer grant with `assertion` (a workload identity token whose audience
    /// is the authorization server): [`Grant::JwtBearer`].
    #[must_use]
    pub fn jwt_bearer(mut self, assertion: impl Into<String>) -> Self {
        self.grant = Grant::JwtBearer;
        self.assertion = Some(assertion.into());
        self
    }

    /// Uses enterprise-managed authorization through `idp`: [`Grant::EnterpriseManaged`].
    /// The authorization server's client credentials are [`OAuthConfig::client`].
    #[must_use]
    pub fn enterprise_managed(mut self, idp: EnterpriseIdp) -> Self {
        self.grant = Grant::EnterpriseManaged;
        self.enterprise = Some(idp);
        self
    }

    /// The HTTPS URL of this client's metadata document, used as its `client_id` with
    /// authorization servers that advertise `client_id_metadata_document_supported`.
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The `client_name` of dynamic registration.
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The `application_type` of dynamic registration: `native` (the default) or `web`.
    #[must_use]
    pub fn application_type(mut self, kind: impl Into<String>) -> Self {
        self.application_type = kind.into();
        self
    }

    /// Where tokens and registrations are kept. Default: memory.
    #[must_use]
    pub fn store(mut self, store: impl TokenStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// A store shared with other clients.
    #[must_use]
    pub fn shared_store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = store;
        self
    }

    /// The clock expiry is judged by. Default: the system clock.
    #[must_use]
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Whether to ask for `offline_access` (a refresh token) when the authorization server
    /// lists it. Default: yes.
    #[must_use]
    pub fn offline_access(mut self, want: bool) -> Self {
        self.offline_access = want;
        self
    }

    /// Whether to ask for DPoP-bound tokens (RFC 9449) whenever the authorization server
    /// signs them with ES256. Default: only when the MCP server asks (a `DPoP` challenge, or
    /// `dpop_bound_access_tokens_required` in its metadata).
    #[must_use]
    pub fn dpop(mut self, always: bool) -> Self {
        self.dpop = always;
        self
    }

    /// How long before its expiry an access token is refreshed. Default: 60 seconds.
    #[must_use]
    pub fn refresh_before(mut self, margin: Duration) -> Self {
        self.refresh_before = margin;
        self
    }

    /// HTTPS settings for the OAuth requests. Default: those of the client builder.
    #[must_use]
    pub fn https(mut self, https: Https) -> Self {
        self.https = Some(https);
        self
    }
}
