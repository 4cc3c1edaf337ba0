//! The gateway's one error type.

/// Why the gateway could not start, refresh its catalog or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The upstream server refused or failed a request the gateway needs (a listing), or
    /// could not be reached.
    #[error("upstream {doing}: {source}")]
    Upstream {
        /// What the gateway was doing (`"tools/list"`, ...).
        doing: &'static str,
        /// The client's error.
        #[source]
        source: mcp_client::Error,
    },
    /// The downstream server could not be built from the upstream's catalog.
    #[error("the downstream server: {0}")]
    Build(#[from] mcp_server::RegistrationError),
    /// The catalog could not be replaced after an upstream change (or its list-changed
    /// notification not published).
    #[error("the catalog refresh: {0}")]
    Refresh(#[from] mcp_server::ChangeError),
    /// The downstream HTTP listener failed.
    #[error("serving HTTP: {0}")]
    Http(#[from] mcp_server::http::HttpError),
    /// The downstream stdio transport failed.
    #[error("serving stdio: {0}")]
    Stdio(#[from] mcp_server::StdioError),
    /// The hub named by a URL could not be opened.
    #[error("the hub: {0}")]
    Hub(String),
    /// A builder setting out of range.
    #[error("invalid setting {setting}: {reason}")]
    InvalidSetting {
        /// The setting.
        setting: &'static str,
        /// Why it is refused.
        reason: String,
    },
}
