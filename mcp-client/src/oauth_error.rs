//! Why the OAuth client could not get a token ([`OAuthError`], public as
//! `mcp_client::oauth::OAuthError`): its own module, so that the transports name it without
//! depending on the OAuth flows.

/// Why the OAuth client could not get a token.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// Discovery failed: no protected resource or authorization server metadata could be
    /// fetched and used.
    #[error("OAuth discovery failed: {0}")]
    Discovery(String),
    /// The protected resource metadata describes another resource than this server: it must
    /// not be used (RFC 9728 §3.3).
    #[error("the protected resource metadata is for {found:?}, not this server ({expected:?})")]
    ResourceMismatch {
        /// The server's URL.
        expected: String,
        /// The metadata's `resource`.
        found: String,
    },
    /// The authorization server metadata names another issuer than the one it was fetched
    /// for (RFC 8414 §3.3): it must not be used.
    #[error("the authorization server metadata's issuer {found:?} is not {expected:?}")]
    IssuerMismatch {
        /// The issuer the metadata was fetched for.
        expected: String,
        /// The metadata's `issuer`.
        found: String,
    },
    /// The authorization server does not support PKCE with S256, which MCP requires.
    #[error("the authorization server {0} does not support PKCE S256")]
    NoPkce(String),
    /// Registering the client failed, or no way to register is available.
    #[error("client registration failed: {0}")]
    Registration(String),
    /// No user can authorize now (a script, no terminal): a [`RedirectHandler`](crate::oauth::RedirectHandler) says so
    /// instead of waiting. The server's refusal (its `401` or `403`) is then what the request
    /// fails with.
    #[error("authorization needs a user: {0}")]
    LoginRequired(String),
    /// The redirect handler failed or brought back something unusable.
    #[error("the authorization redirect failed: {0}")]
    Redirect(String),
    /// The authorization server answered the authorization request with an error.
    #[error(
        "the authorization server did not authorize this client ({error}{})",
        describe_inline(description)
    )]
    Denied {
        /// The `error` code.
        error: String,
        /// `error_description`, if any.
        description: Option<String>,
    },
    /// The redirect's `state` is not the one sent (a forged or mixed-up response).
    #[error("the authorization response's state does not match the request's")]
    StateMismatch,
    /// The redirect's `iss` is missing (the server advertises it) or names another issuer
    /// (RFC 9207): a possible mix-up attack.
    #[error("the authorization response's iss {found:?} is not the issuer {expected:?}")]
    IssMismatch {
        /// The authorization server's issuer.
        expected: String,
        /// The `iss` received, if any.
        found: Option<String>,
    },
    /// The token endpoint refused the request.
    #[error(
        "the token request failed (HTTP {status}): {error}{}",
        describe(description)
    )]
    Token {
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code (`invalid_grant` ...), or a summary of the response.
        error: String,
        /// `error_description`, if any.
        description: Option<String>,
    },
    /// The server keeps asking for scopes the client already obtained: stepping up again
    /// would not help.
    #[error("the server still refuses after authorization with scopes {0:?}")]
    StepUpExhausted(String),
    /// An OAuth HTTP request failed (connection, TLS, timeout, a body too large).
    #[error("OAuth request failed: {0}")]
    Http(String),
    /// The token store failed.
    #[error("token store: {0}")]
    Store(String),
    /// The configuration cannot work (a malformed server URL, no randomness).
    #[error("OAuth configuration: {0}")]
    Config(String),
}

fn describe(description: &Option<String>) -> String {
    description
        .as_deref()
        .map(|d| format!(" ({d})"))
        .unwrap_or_default()
}

fn describe_inline(description: &Option<String>) -> String {
    description
        .as_deref()
        .map(|d| format!(": {d}"))
        .unwrap_or_default()
}
