//! The client's error type and the JSON-RPC error object it carries.

use std::fmt;
use std::time::Duration;

use mcp_wire::jsonrpc::ErrorObject;
use serde_json::Value;

use crate::limited::Limited;
use crate::transport::TransportError;

/// What went wrong, as a coarse category.
///
/// New categories may be added; match with a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The server answered with a JSON-RPC error; see [`Error::rpc`].
    Rpc,
    /// The request did not complete within its timeout.
    Timeout,
    /// The transport failed: connection refused or reset, the child process exited, the stream
    /// ended before the response arrived.
    Transport,
    /// The server sent something this client cannot read: a wrong content type, a truncated or
    /// oversized frame, JSON that is not a JSON-RPC message, a result of the wrong shape, an
    /// unknown `resultType`.
    Protocol,
    /// No revision both sides support: the server refused every version the client offered, or
    /// answered with one the client does not speak.
    UnsupportedVersion,
    /// The server kept asking questions past the configured bound on rounds.
    TooManyRounds,
    /// The server needs an answer the client has no callback for.
    InputRequired,
    /// The operation does not exist on the negotiated revision or transport.
    Unsupported,
    /// The caller's input cannot be sent: an argument bound to an `Mcp-Param-*` header that no
    /// header can carry, a malformed URL.
    InvalidInput,
    /// The client was closed.
    Closed,
    /// TLS with an `https://` server failed: a certificate from a CA the client does not trust
    /// (add it with [`crate::transport::Https::add_ca_file`]), a name that does not match the
    /// host, a handshake that timed out.
    Tls,
    /// A bound set on the client builder was reached: a listing that needs more pages, items or
    /// bytes than [`crate::ClientBuilder::max_list_pages`], [`crate::ClientBuilder::max_list_items`]
    /// or [`crate::ClientBuilder::max_list_bytes`] allow (a server that never ends its list).
    LimitExceeded,
    /// The server requires authorization and the OAuth client could not get a token it
    /// accepts: discovery, registration, the authorization or the token request failed, or
    /// the server still refuses after a step-up (see [`crate::oauth`]).
    Authorization,
    /// The task the server ran for a call did not complete: it failed (its JSON-RPC error is
    /// in [`Error::rpc`]) or was cancelled, or the client stopped following it because it
    /// asked more than [`crate::TaskPolling::max_questions`] questions or outlived its `ttlMs`
    /// (see [`crate::task`]).
    Task,
    /// The server refused the request for now: it is rate limited (the JSON-RPC error
    /// [`crate::rate_limit::RATE_LIMITED`], or an HTTP 429), and the client did not retry it or
    /// gave up retrying within [`crate::RateLimitRetry`]'s bounds. [`Error::retry_after`] is the
    /// wait the server asked for, [`Error::rate_limit`] the name of the rule it hit; the
    /// JSON-RPC error, when there was one, is in [`Error::rpc`].
    RateLimited,
}

/// Every failure of a client operation.
///
/// An opaque value: ask it what happened with [`Error::kind`] or the `is_*` methods, and read the
/// server's JSON-RPC error with [`Error::rpc`], [`Error::code`], [`Error::message`] and
/// [`Error::data`]. The `Display` text is meant for people and is not stable.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # // A server to talk to: one tool, one resource, one prompt, on 127.0.0.1.
/// # use mcp_server::{Prompt, Resource, ResourceRequest, Server, Tool};
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct AddArgs { a: i64, b: i64 }
/// # async fn add(x: AddArgs) -> String { (x.a + x.b).to_string() }
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct GreetArgs { name: String }
/// # async fn greet(x: GreetArgs) -> String { format!("Please greet {}.", x.name) }
/// # async fn config(_: ResourceRequest) -> String { "mode = production".into() }
/// # let server = Server::builder("calc", "1.0").tool(Tool::new("add", add))
/// #     .resource(Resource::new("config://app", "config", config)).prompt(Prompt::new("greet", greet)).build()?;
/// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// # let url = format!("http://{}/mcp", listener.local_addr()?);
/// # let endpoint = mcp_server::http::HttpEndpoint::new(server, mcp_server::http::HttpConfig::new());
/// # tokio::spawn(mcp_server::http::serve_with_shutdown(listener, endpoint, std::future::pending::<()>()));
/// use mcp_client::ErrorKind;
/// use serde_json::json;
///
/// let client = mcp_client::Client::builder().connect_http(&url).await?;
/// let error = client.read_resource("config://missing").await.unwrap_err();
/// assert_eq!(error.kind(), ErrorKind::Rpc);
/// println!("the server said {:?}: {:?}", error.code(), error.message());
/// // A failing tool is a result with `isError`, not an `Err`; an unknown one is refused.
/// let unknown = client.call_tool("nope", json!({})).await;
/// assert!(unknown.is_err() || unknown.is_ok_and(|r| r["isError"] == true));
/// # Ok(())
/// # }
/// ```
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: ErrorKind,
    detail: String,
    rpc: Option<ErrorObject>,
    status: Option<u16>,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
    /// What a rate-limited refusal said (only with [`ErrorKind::RateLimited`]).
    limited: Option<Limited>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, detail: impl Into<String>) -> Self {
        Self {
            inner: Box::new(Inner {
                kind,
                detail: detail.into(),
                rpc: None,
                status: None,
                source: None,
                limited: None,
            }),
        }
    }

    pub(crate) fn rpc_error(rpc: ErrorObject, status: Option<u16>) -> Self {
        let mut error = Self::new(ErrorKind::Rpc, String::new());
        error.inner.rpc = Some(rpc);
        error.inner.status = status;
        error
    }

    /// A request the server refused: with its JSON-RPC error when it sent one, else with the
    /// HTTP status and what the server said in the body (`said`, an excerpt). A rate limit (the
    /// error [`crate::rate_limit::RATE_LIMITED`] or a 429, whose `Retry-After` is
    /// `retry_after`) is [`ErrorKind::RateLimited`].
    pub(crate) fn refused(
        error: Option<ErrorObject>,
        status: Option<u16>,
        said: Option<&str>,
        retry_after: Option<Duration>,
    ) -> Self {
        if let Some(limited) = crate::limited::classify(error.as_ref(), status, retry_after) {
            let detail = match (&error, status, said) {
                (Some(_), _, _) => String::new(),
                (None, Some(status), Some(said)) => format!(
                    "the server answered {}; it said: {said:?}",
                    crate::transport::status_name(status)
                ),
                (None, Some(status), None) => format!(
                    "the server answered {}",
                    crate::transport::status_name(status)
                ),
                (None, None, _) => String::new(),
            };
            let mut out = Self::new(ErrorKind::RateLimited, detail);
            out.inner.rpc = error;
            out.inner.status = status;
            out.inner.limited = Some(limited);
            return out;
        }
        match (error, status) {
            (Some(e), status) => Self::rpc_error(e, status),
            (None, Some(status)) => {
                let name = crate::transport::status_name(status);
                let detail = match said {
                    Some(said) => format!("the server answered {name}; it said: {said:?}"),
                    None => format!("the server answered {name} with an empty body"),
                };
                Self::new(ErrorKind::Transport, detail).with_status(status)
            }
            (None, None) => Self::protocol("an empty refusal"),
        }
    }

    /// A task that failed (with its error, when the server gave one) or was cancelled.
    pub(crate) fn task(detail: impl Into<String>, rpc: Option<ErrorObject>) -> Self {
        let mut error = Self::new(ErrorKind::Task, detail);
        error.inner.rpc = rpc;
        error
    }

    pub(crate) fn protocol(detail: impl Into<String>) -> Self {
        Self::new(ErrorKind::Protocol, detail)
    }

    pub(crate) fn timeout(after: Duration) -> Self {
        Self::new(ErrorKind::Timeout, format!("no response within {after:?}"))
    }

    pub(crate) fn closed() -> Self {
        Self::new(ErrorKind::Closed, "the client is closed")
    }

    pub(crate) fn with_status(mut self, status: u16) -> Self {
        self.inner.status = Some(status);
        self
    }

    /// The category of this error.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The server's JSON-RPC error object, when the server refused the request.
    pub fn rpc(&self) -> Option<&ErrorObject> {
        self.inner.rpc.as_ref()
    }

    /// The JSON-RPC error code, when the server refused the request.
    pub fn code(&self) -> Option<i64> {
        self.rpc().map(|rpc| rpc.code)
    }

    /// The server's error message, when the server refused the request.
    pub fn message(&self) -> Option<&str> {
        self.rpc().map(|rpc| rpc.message.as_str())
    }

    /// The server's error data, when the server refused the request and sent some.
    pub fn data(&self) -> Option<&Value> {
        self.rpc().and_then(|rpc| rpc.data.as_ref())
    }

    /// The HTTP status of the response that carried this error, on HTTP transports.
    pub fn http_status(&self) -> Option<u16> {
        self.inner.status
    }

    /// Whether the server answered with a JSON-RPC error.
    pub fn is_rpc(&self) -> bool {
        self.kind() == ErrorKind::Rpc
    }

    /// Whether the request timed out.
    pub fn is_timeout(&self) -> bool {
        self.kind() == ErrorKind::Timeout
    }

    /// Whether the transport failed.
    pub fn is_transport(&self) -> bool {
        self.kind() == ErrorKind::Transport
    }

    /// Whether the server sent something unreadable.
    pub fn is_protocol(&self) -> bool {
        self.kind() == ErrorKind::Protocol
    }

    /// Whether no common revision could be agreed.
    pub fn is_unsupported_version(&self) -> bool {
        self.kind() == ErrorKind::UnsupportedVersion
    }

    /// Whether the client was closed.
    pub fn is_closed(&self) -> bool {
        self.kind() == ErrorKind::Closed
    }

    /// Whether TLS with an `https://` server failed ([`ErrorKind::Tls`]).
    pub fn is_tls(&self) -> bool {
        self.kind() == ErrorKind::Tls
    }

    /// Whether a limit set on the client builder was reached.
    pub fn is_limit_exceeded(&self) -> bool {
        self.kind() == ErrorKind::LimitExceeded
    }

    /// Whether the server rate limited the request ([`ErrorKind::RateLimited`]).
    pub fn is_rate_limited(&self) -> bool {
        self.kind() == ErrorKind::RateLimited
    }

    /// The wait the server asked for before trying again, when it named one: the error's
    /// `data.retryAfterMs`, else the HTTP `Retry-After` header. Only on
    /// [`ErrorKind::RateLimited`].
    ///
    /// ```
    /// # async fn run(client: mcp_client::Client) {
    /// match client.call_tool("deploy", serde_json::json!({})).await {
    ///     Err(e) if e.is_rate_limited() => {
    ///         println!("rate limited by {:?}; try again in {:?}", e.rate_limit(), e.retry_after());
    ///     }
    ///     _ => {}
    /// }
    /// # }
    /// ```
    pub fn retry_after(&self) -> Option<Duration> {
        self.inner.limited.as_ref().and_then(|l| l.retry_after)
    }

    /// The name of the server's rule that refused the request (`data.limit`: a method such as
    /// `tools/call`, a tool name such as `deploy`, or `default`), when it named one. Only on
    /// [`ErrorKind::RateLimited`]; a bare HTTP 429 names none.
    pub fn rate_limit(&self) -> Option<&str> {
        self.inner.limited.as_ref().and_then(|l| l.limit.as_deref())
    }
}

impl From<TransportError> for Error {
    fn from(error: TransportError) -> Self {
        let kind = match &error {
            TransportError::Protocol(_) | TransportError::TooLarge { .. } => ErrorKind::Protocol,
            TransportError::Closed | TransportError::Exited { .. } => ErrorKind::Closed,
            TransportError::Spawn { .. } => ErrorKind::Transport,
            TransportError::Status { .. }
            | TransportError::Io(_)
            | TransportError::Http(_)
            | TransportError::Interrupted { .. } => ErrorKind::Transport,
            TransportError::Unsupported(_) => ErrorKind::Unsupported,
            TransportError::Tls { .. }
            | TransportError::Certificate { .. }
            | TransportError::PlainHttp { .. } => ErrorKind::Tls,
            TransportError::Authorization(_) => ErrorKind::Authorization,
        };
        if let TransportError::Status {
            status: 429,
            content_type,
            body,
            retry_after_secs,
            ..
        } = &error
        {
            let rpc = crate::transport::refusal(content_type.as_deref(), body);
            let said = rpc
                .is_none()
                .then(|| crate::transport::excerpt(body))
                .flatten();
            let wait = crate::limited::retry_after_wait(*retry_after_secs);
            return Self::refused(rpc, Some(429), said.as_deref(), wait);
        }
        let status = match &error {
            TransportError::Status { status, .. } => Some(*status),
            _ => None,
        };
        let mut out = Self::new(kind, String::new());
        out.inner.status = status;
        out.inner.source = Some(Box::new(error));
        out
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Error");
        s.field("kind", &self.inner.kind);
        if !self.inner.detail.is_empty() {
            s.field("detail", &self.inner.detail);
        }
        if let Some(rpc) = &self.inner.rpc {
            s.field("rpc", rpc);
        }
        if let Some(status) = self.inner.status {
            s.field("status", &status);
        }
        if let Some(limited) = &self.inner.limited {
            s.field("retry_after", &limited.retry_after);
            s.field("limit", &limited.limit);
        }
        if let Some(source) = &self.inner.source {
            s.field("source", source);
        }
        s.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.inner.kind {
            ErrorKind::Rpc => "the server refused the request",
            ErrorKind::Timeout => "request timed out",
            ErrorKind::Transport => "transport failed",
            ErrorKind::Protocol => "unreadable message from the server",
            ErrorKind::UnsupportedVersion => "no protocol revision in common",
            ErrorKind::TooManyRounds => "too many rounds of questions",
            ErrorKind::InputRequired => "the server needs input the client cannot give",
            ErrorKind::Unsupported => "not supported",
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::Closed => "client closed",
            ErrorKind::Tls => "TLS failed",
            ErrorKind::LimitExceeded => "limit reached",
            ErrorKind::Authorization => "authorization failed",
            ErrorKind::Task => "the task did not complete",
            ErrorKind::RateLimited => "rate limited by the server",
        };
        f.write_str(what)?;
        if let Some(rpc) = &self.inner.rpc {
            write!(f, ": {rpc}")?;
            if let Some(status) = self.inner.status {
                write!(f, " ({})", crate::transport::status_name(status))?;
            }
        }
        if !self.inner.detail.is_empty() {
            write!(f, ": {}", self.inner.detail)?;
        }
        if let Some(limited) = &self.inner.limited {
            if let Some(limit) = &limited.limit {
                write!(f, " (limit {limit})")?;
            }
            match limited.retry_after {
                Some(wait) => write!(
                    f,
                    "; the server asked to wait {}",
                    crate::limited::wait_text(wait)
                )?,
                None => f.write_str("; the server named no wait")?,
            }
        }
        if let Some(source) = &self.inner.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
