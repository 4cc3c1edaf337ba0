//! Metadata documents and where to find them: protected resource metadata (RFC 9728), and
//! authorization server metadata (RFC 8414, OpenID Connect Discovery 1.0).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use url::Url;

/// The RFC 9728 well-known suffix.
pub const PROTECTED_RESOURCE_SUFFIX: &str = "/.well-known/oauth-protected-resource";
/// The RFC 8414 well-known suffix.
pub const AUTHORIZATION_SERVER_SUFFIX: &str = "/.well-known/oauth-authorization-server";
/// The OpenID Connect Discovery suffix.
pub const OPENID_CONFIGURATION_SUFFIX: &str = "/.well-known/openid-configuration";

/// A document or URL that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// A URL that does not parse, or is not absolute `http(s)`.
    #[error("not a usable URL: {0}")]
    Url(String),
    /// The document's `issuer` is not the issuer its location was built from (RFC 8414 §3.3):
    /// the document must not be used.
    #[error("the metadata's issuer {found:?} is not {expected:?}")]
    IssuerMismatch {
        /// The issuer the location was built from.
        expected: String,
        /// The document's `issuer`.
        found: String,
    },
    /// The protected resource metadata names another resource (RFC 9728 §3.3).
    #[error("the metadata describes {found:?}, not {expected:?}")]
    ResourceMismatch {
        /// The resource the client talks to.
        expected: String,
        /// The document's `resource`.
        found: String,
    },
    /// A required member is missing or of the wrong type.
    #[error("malformed metadata: {0}")]
    Malformed(String),
    /// A URL meant for the user's browser (the `authorization_endpoint`) that is not `https:`
    /// (or `http:` to a loopback host): a `file:`, `smb:` or custom-scheme URL would make the
    /// operating system's opener launch whatever handles it. It is never opened.
    #[error(
        "refusing to open {0:?} in a browser: an authorization endpoint must be https (or http to a loopback host)"
    )]
    UnsafeBrowserUrl(String),
}

/// Protected resource metadata (RFC 9728 §2): what an MCP server says about itself.
///
/// ```
/// use mcp_auth::ProtectedResourceMetadata;
///
/// let prm = ProtectedResourceMetadata::new("https://mcp.example.com/mcp")
///     .authorization_server("https://auth.example.com")
///     .scopes(["mcp:read", "mcp:deploy"]);
/// let json = serde_json::to_value(&prm).unwrap();
/// assert_eq!(json["authorization_servers"][0], "https://auth.example.com");
/// assert_eq!(json["bearer_methods_supported"][0], "header");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The resource identifier (REQUIRED).
    pub resource: String,
    /// Issuers of the authorization servers that issue tokens for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authorization_servers: Vec<String>,
    /// The scopes it understands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// How a token may be presented: MCP allows only `header`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bearer_methods_supported: Vec<String>,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// Documentation for developers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_documentation: Option<String>,
    /// The DPoP algorithms it accepts (RFC 9449 §5.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether it accepts only DPoP-bound tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_bound_access_tokens_required: Option<bool>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ProtectedResourceMetadata {
    /// The metadata of `resource`, presenting tokens in the `Authorization` header only.
    pub fn new(resource: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            bearer_methods_supported: vec!["header".into()],
            ..Self::default()
        }
    }

    /// Adds an authorization server.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Sets `scopes_supported`.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Checks that the document describes `resource` (the URL the client is talking to),
    /// compared in canonical form (RFC 9728 §3.3). A client must not use a document that
    /// fails this.
    pub fn check_resource(&self, resource: &str) -> Result<(), MetadataError> {
        let canonical = |r: &str| crate::canonical_resource(r).ok();
        let (expected, found) = (canonical(resource), canonical(&self.resource));
        if expected.is_some() && expected == found {
            Ok(())
        } else {
            Err(MetadataError::ResourceMismatch {
                expected: resource.to_owned(),
                found: self.resource.clone(),
            })
        }
    }
}

/// Authorization server metadata (RFC 8414 §2, and the OpenID Connect Discovery members MCP
/// reads).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier (REQUIRED).
    pub issuer: String,
    /// Where the authorization request goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Where tokens are requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// The keys its tokens are signed with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// The scopes it knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// `code` for the authorization code flow (REQUIRED).
    #[serde(default)]
    pub response_types_supported: Vec<String>,
    /// The grants it serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// How clients authenticate at the token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// PKCE methods: MCP requires `S256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// RFC 7009 revocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// RFC 7662 introspection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection_endpoint: Option<String>,
    /// RFC 9207: authorization responses carry `iss`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// Client ID metadata documents: a URL may be a `client_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    /// DPoP algorithms (RFC 9449 §5.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Every other member.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AuthorizationServerMetadata {
    /// The metadata of `issuer` for the authorization code flow (`response_types_supported:
    /// ["code"]`); set the endpoints and the rest on the returned value.
    pub fn new(issuer: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            response_types_supported: vec!["code".into()],
            ..Self::default()
        }
    }

    /// RFC 8414 §3.3: the document's `issuer` must be the issuer whose well-known location it
    /// was fetched from, compared as plain strings.
    pub fn check_issuer(&self, expected: &str) -> Result<(), MetadataError> {
        if self.issuer == expected {
            Ok(())
        } else {
            Err(MetadataError::IssuerMismatch {
                expected: expected.to_owned(),
                found: self.issuer.clone(),
            })
        }
    }

    /// The `authorization_endpoint`, checked to be safe to hand to a browser (see
    /// [`browser_url`]): `https:`, or `http:` to a loopback host. A malicious MCP server
    /// controls this URL through its protected resource metadata, so a client must not open
    /// anything else. `Ok(None)` when the document has no authorization endpoint.
    ///
    /// ```
    /// use mcp_auth::{AuthorizationServerMetadata, MetadataError};
    ///
    /// let mut metadata = AuthorizationServerMetadata::new("https://as.example");
    /// metadata.authorization_endpoint = Some("https://as.example/authorize".into());
    /// assert!(metadata.checked_authorization_endpoint().is_ok());
    /// metadata.authorization_endpoint = Some("file:///etc/passwd".into());
    /// assert!(matches!(
    ///     metadata.checked_authorization_endpoint(),
    ///     Err(MetadataError::UnsafeBrowserUrl(_))
    /// ));
    /// ```
    pub fn checked_authorization_endpoint(&self) -> Result<Option<Url>, MetadataError> {
        self.authorization_endpoint
            .as_deref()
            .map(browser_url)
            .transpose()
    }

    /// Whether PKCE with `S256` is advertised (MCP clients must refuse a server that does not
    /// say so).
    pub fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|m| m == crate::pkce::S256))
    }

    /// Whether `scope` is listed in `scopes_supported`.
    pub fn lists_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|scopes| scopes.iter().any(|s| s == scope))
    }
}

/// Parses `text` as a URL that may be handed to the user's browser (or the operating system's
/// URL opener): `https:` with a host, or `http:` to a loopback host (`localhost`,
/// `127.0.0.0/8`, `[::1]`, RFC 8252 §8.3). Everything else (`file:`, `smb:`, `javascript:`,
/// custom protocol handlers, `http:` to another host) is refused with
/// [`MetadataError::UnsafeBrowserUrl`] naming the URL.
///
/// ```
/// use mcp_auth::metadata::browser_url;
///
/// assert!(browser_url("https://as.example/authorize?x=1").is_ok());
/// assert!(browser_url("http://127.0.0.1:9000/authorize").is_ok());
/// assert!(browser_url("http://as.example/authorize").is_err());
/// assert!(browser_url("search-ms:query=x").is_err());
/// ```
pub fn browser_url(text: &str) -> Result<Url, MetadataError> {
    let refused = || MetadataError::UnsafeBrowserUrl(text.to_owned());
    let url = Url::parse(text).map_err(|_| refused())?;
    if url.host().is_none() {
        return Err(refused());
    }
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        _ => Err(refused()),
    }
}

/// Whether `url`'s host is `localhost` or a loopback IP address (127.0.0.0/8, `::1`).
///
/// ```
/// use mcp_auth::metadata::is_loopback;
///
/// assert!(is_loopback(&"http://127.0.0.1:8080/cb".parse().unwrap()));
/// assert!(is_loopback(&"http://[::1]/".parse().unwrap()));
/// assert!(!is_loopback(&"http://example.com/".parse().unwrap()));
/// ```
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The origin of an absolute URL (`scheme://host[:port]`, a default port left out), `None` for
/// text that is not one. A resource server builds a DPoP proof's expected `htu` from it.
///
/// ```
/// use mcp_auth::metadata::origin_of;
///
/// assert_eq!(origin_of("https://Example.com:443/mcp").as_deref(), Some("https://example.com"));
/// assert_eq!(origin_of("http://127.0.0.1:8080/mcp").as_deref(), Some("http://127.0.0.1:8080"));
/// assert_eq!(origin_of("not a url"), None);
/// ```
pub fn origin_of(url: &str) -> Option<String> {
    let origin = Url::parse(url).ok()?.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

fn parse_url(text: &str) -> Result<Url, MetadataError> {
    let url = Url::parse(text).map_err(|e| MetadataError::Url(format!("{text}: {e}")))?;
    if !matches!(url.scheme(), "https" | "http") || url.host().is_none() {
        return Err(MetadataError::Url(format!("{text}: not an http(s) URL")));
    }
    Ok(url)
}

/// `origin + suffix + path`, keeping the query: RFC 8615 path insertion.
fn inserted(url: &Url, suffix: &str) -> String {
    let path = url.path().trim_end_matches('/');
    let mut out = format!("{}{suffix}{path}", origin(url));
    if let Some(query) = url.query() {
        out.push('?');
        out.push_str(query);
    }
    out
}

fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// Where a client looks for the protected resource metadata of `resource` when no
/// `resource_metadata` came with the challenge, in the specification's order: the
/// path-inserted location (RFC 9728 §3.1), then the root one. A resource without a path has
/// only the root location.
///
/// ```
/// use mcp_auth::protected_resource_metadata_urls;
///
/// assert_eq!(
///     protected_resource_metadata_urls("https://mcp.example.com/public/mcp").unwrap(),
///     [
///         "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
///         "https://mcp.example.com/.well-known/oauth-protected-resource",
///     ]
/// );
/// ```
pub fn protected_resource_metadata_urls(resource: &str) -> Result<Vec<String>, MetadataError> {
    let url = parse_url(resource)?;
    let root = format!("{}{PROTECTED_RESOURCE_SUFFIX}", origin(&url));
    let path_inserted = inserted(&url, PROTECTED_RESOURCE_SUFFIX);
    Ok(if path_inserted == root {
        vec![root]
    } else {
        vec![path_inserted, root]
    })
}

/// The path a server serves its protected resource metadata at, for an endpoint at `path`
/// (`/mcp` gives `/.well-known/oauth-protected-resource/mcp`).
pub fn protected_resource_metadata_path(path: &str) -> String {
    let path = path.trim_end_matches('/');
    format!("{PROTECTED_RESOURCE_SUFFIX}{path}")
}

/// Where a client looks for an authorization server's metadata, in the specification's order.
/// For an issuer with a path: RFC 8414 path-inserted, OpenID Connect path-inserted, OpenID
/// Connect path-appended; without one: RFC 8414, then OpenID Connect. Each document fetched
/// must pass [`AuthorizationServerMetadata::check_issuer`] with `issuer`.
///
/// ```
/// use mcp_auth::authorization_server_metadata_urls;
///
/// assert_eq!(
///     authorization_server_metadata_urls("https://auth.example.com/tenant1").unwrap(),
///     [
///         "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
///         "https://auth.example.com/.well-known/openid-configuration/tenant1",
///         "https://auth.example.com/tenant1/.well-known/openid-configuration",
///     ]
/// );
/// ```
pub fn authorization_server_metadata_urls(issuer: &str) -> Result<Vec<String>, MetadataError> {
    let url = parse_url(issuer)?;
    let path = url.path().trim_end_matches('/');
    if path.is_empty() {
        let origin = origin(&url);
        return Ok(vec![
            format!("{origin}{AUTHORIZATION_SERVER_SUFFIX}"),
            format!("{origin}{OPENID_CONFIGURATION_SUFFIX}"),
        ]);
    }
    Ok(vec![
        inserted(&url, AUTHORIZATION_SERVER_SUFFIX),
        inserted(&url, OPENID_CONFIGURATION_SUFFIX),
        format!("{}{path}{OPENID_CONFIGURATION_SUFFIX}", origin(&url)),
    ])
}

/// The 2025-03-26 fallbacks: with no metadata at all, the endpoints sit at the MCP server's
/// origin (`/authorize`, `/token`, `/register`).
pub fn fallback_endpoints(server: &str) -> Result<AuthorizationServerMetadata, MetadataError> {
    let url = parse_url(server)?;
    let origin = origin(&url);
    Ok(AuthorizationServerMetadata {
        issuer: origin.clone(),
        authorization_endpoint: Some(format!("{origin}/authorize")),
        token_endpoint: Some(format!("{origin}/token")),
        registration_endpoint: Some(format!("{origin}/register")),
        response_types_supported: vec!["code".into()],
        code_challenge_methods_supported: Some(vec![crate::pkce::S256.into()]),
        ..AuthorizationServerMetadata::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_resource_locations() {
        let table: &[(&str, &[&str])] = &[
            (
                "https://h/mcp",
                &[
                    "https://h/.well-known/oauth-protected-resource/mcp",
                    "https://h/.well-known/oauth-protected-resource",
                ],
            ),
            (
                "https://h",
                &["https://h/.well-known/oauth-protected-resource"],
            ),
            (
                "https://h/",
                &["https://h/.well-known/oauth-protected-resource"],
            ),
            (
                "http://127.0.0.1:8080/mcp/?x=1",
                &[
                    "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp?x=1",
                    "http://127.0.0.1:8080/.well-known/oauth-protected-resource",
                ],
            ),
        ];
        for (resource, expected) in table {
            assert_eq!(
                protected_resource_metadata_urls(resource).unwrap(),
                *expected
            );
        }
        assert!(protected_resource_metadata_urls("ftp://h/x").is_err());
        assert!(protected_resource_metadata_urls("/relative").is_err());
        assert_eq!(
            protected_resource_metadata_path("/mcp/"),
            "/.well-known/oauth-protected-resource/mcp"
        );
    }

    #[test]
    fn authorization_server_locations() {
        assert_eq!(
            authorization_server_metadata_urls("https://as.example").unwrap(),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn issuer_and_resource_checks_are_exact() {
        let metadata: AuthorizationServerMetadata = serde_json::from_value(serde_json::json!({
            "issuer": "https://as.example/",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["plain", "S256"],
            "x-vendor": true,
        }))
        .unwrap();
        assert!(metadata.check_issuer("https://as.example/").is_ok());
        // Plain strings: a trailing slash matters.
        assert!(matches!(
            metadata.check_issuer("https://as.example"),
            Err(MetadataError::IssuerMismatch { .. })
        ));
        assert!(metadata.supports_s256());
        assert_eq!(metadata.extra["x-vendor"], true);
        let prm = ProtectedResourceMetadata::new("https://mcp.example/mcp");
        assert!(prm.check_resource("https://MCP.example:443/mcp").is_ok());
        assert!(prm.check_resource("https://mcp.example/other").is_err());
        assert!(prm.check_resource("https://evil.example/mcp").is_err());
    }

    #[test]
    fn only_https_or_loopback_http_authorization_endpoints_reach_a_browser() {
        for ok in [
            "https://as.example/authorize",
            "HTTPS://as.example:8443/a?b=c",
            "http://127.0.0.1:8080/authorize",
            "http://127.1.2.3/authorize",
            "http://localhost:1/authorize",
            "http://[::1]:9/authorize",
        ] {
            assert!(browser_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "file:///etc/passwd",
            "smb://attacker.example/share",
            "search-ms:query=x&crumb=location:\\\\attacker\\x",
            "javascript:alert(1)",
            "ms-settings:",
            "http://as.example/authorize",
            "http://10.0.0.1/authorize",
            "ftp://as.example/authorize",
            "not a url",
        ] {
            assert_eq!(
                browser_url(bad).unwrap_err(),
                MetadataError::UnsafeBrowserUrl(bad.to_owned()),
                "{bad}"
            );
        }
        let mut metadata = AuthorizationServerMetadata::new("https://as.example");
        assert_eq!(metadata.checked_authorization_endpoint(), Ok(None));
        metadata.authorization_endpoint = Some("file:///x".into());
        let error = metadata.checked_authorization_endpoint().unwrap_err();
        assert!(error.to_string().contains("file:///x"), "{error}");
    }

    #[test]
    fn the_2025_03_26_fallbacks_sit_at_the_origin() {
        let fallback = fallback_endpoints("https://mcp.example/v1/mcp").unwrap();
        assert_eq!(
            fallback.authorization_endpoint.as_deref(),
            Some("https://mcp.example/authorize")
        );
        assert_eq!(
            fallback.token_endpoint.as_deref(),
            Some("https://mcp.example/token")
        );
    }
}
