//! Downstream authorization from plain settings (what `mcp proxy --auth-…` takes): the
//! gateway's endpoint as an OAuth 2.1 resource server verifying JWT access tokens.

use mcp_server::auth::{JwtVerifier, ResourceServer};
use mcp_server::http::HttpConfig;

use crate::error::GatewayError;

/// Protects the gateway's endpoint: every downstream request needs an access token issued by
/// `issuer` for `resource`, signed by a key of the set at `jwks_uri`, with the required
/// scopes. For anything else (introspection, several issuers, DPoP, per-method scopes) build
/// a `mcp_server::auth::ResourceServer` and pass it in an `HttpConfig` to
/// [`Gateway::serve_http_with`](crate::Gateway::serve_http_with).
#[derive(Clone, Debug)]
pub struct DownstreamAuth {
    resource: String,
    issuer: String,
    jwks_uri: String,
    scopes: Vec<String>,
}

impl DownstreamAuth {
    /// Tokens from `issuer`, for `resource` (the URL downstream clients use for the MCP
    /// endpoint, say `https://gateway.example.com/mcp`), verified with the key set at
    /// `jwks_uri` (`https://`, or `http://` to a loopback host). No scope is required by
    /// default.
    pub fn jwt(
        resource: impl Into<String>,
        issuer: impl Into<String>,
        jwks_uri: impl Into<String>,
    ) -> Self {
        Self {
            resource: resource.into(),
            issuer: issuer.into(),
            jwks_uri: jwks_uri.into(),
            scopes: Vec::new(),
        }
    }

    /// Scopes every downstream request needs. Default none.
    #[must_use]
    pub fn required_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The endpoint's `HttpConfig` with this protection.
    ///
    /// # Errors
    ///
    /// [`GatewayError::InvalidSetting`] when the resource server refuses the settings (a
    /// resource that is not an absolute URL, a key set URL that may not be fetched).
    pub fn http_config(&self) -> Result<HttpConfig, GatewayError> {
        let mut builder = ResourceServer::builder(self.resource.clone(), self.issuer.clone())
            .verifier(JwtVerifier::fetch(self.jwks_uri.clone()));
        if !self.scopes.is_empty() {
            builder = builder
                .scopes_supported(self.scopes.clone())
                .required_scopes(&self.scopes);
        }
        let server = builder.build().map_err(|e| GatewayError::InvalidSetting {
            setting: "downstream authorization",
            reason: e.to_string(),
        })?;
        Ok(HttpConfig::new().auth(server))
    }
}
