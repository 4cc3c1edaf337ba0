//! Failure kinds, and the JSON-RPC code and HTTP status of each kind on each revision.

use http::StatusCode;
use serde_json::{Value, json};

use crate::features::ErrorTable;
use crate::revision::Revision;

/// Why a message could not be served, independent of the revision.
///
/// [`FailureKind::mapping`] gives the JSON-RPC code and HTTP status on a given revision; that
/// one table is the only place where the numbers live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// The body is not JSON. `-32700`, 400.
    Parse,
    /// Not a valid JSON-RPC message (bad `jsonrpc`, bad id, params not an object, a batch where
    /// the revision has none, an empty batch, `initialize` in a batch). `-32600`, 400.
    InvalidRequest,
    /// The revision does not define the method (or the server does not serve it).
    /// `-32601`; HTTP 200 before 2026-07-28 (not specified there), 404 on 2026-07-28.
    UnknownMethod,
    /// No tool or prompt of that name. `-32602`, 200 (the spec's "Unknown tool" example).
    UnknownTarget,
    /// No resource at that URI. `-32002` up to 2025-11-25, `-32602` on 2026-07-28 (which
    /// retires `-32002`); HTTP 200. `data: {"uri": ...}`.
    ResourceNotFound,
    /// The params are wrong for the method (missing `name`, bad cursor, bad log level, a
    /// tampered `requestState` ...). `-32602`, 200.
    InvalidParams,
    /// A required `_meta` field is missing or malformed (2026-07-28: protocol version or
    /// client capabilities). `-32602`, 400.
    MissingMeta,
    /// An HTTP header is missing, malformed or differs from the body. `-32020`, 400 on
    /// 2026-07-28. Earlier revisions define no code: `-32600`, 400 (an invalid
    /// `MCP-Protocol-Version` header "MUST" get 400).
    HeaderMismatch,
    /// The client named a protocol version the server does not serve.
    /// `data: {"supported": [...], "requested": "..."}`. `-32022`, 400 on 2026-07-28;
    /// earlier revisions use the lifecycle page's example code `-32602`, with 400.
    UnsupportedVersion,
    /// Serving the request needs a client capability the client did not declare.
    /// `data: {"requiredCapabilities": {...}}`. `-32021`, 400 on 2026-07-28. Earlier revisions
    /// define no code: `-32603`, 200.
    MissingCapability,
    /// The `Mcp-Session-Id` names no live session (expired, deleted or another principal's).
    /// `-32001`, 404; the client re-initializes. Not reachable on 2026-07-28 (which ignores the
    /// header), where it maps to `-32600`, 400 since codes below `-32019` are legacy there.
    SessionNotFound,
    /// The server requires a session and the request has none. `-32600`, 400.
    SessionRequired,
    /// The `Origin` header is not allowed. `-32600`, 403.
    OriginRejected,
    /// The `Accept` header excludes every content type the answer could use. `-32600`, 406.
    NotAcceptable,
    /// The request's `Content-Type` is not `application/json`. `-32600`, 415.
    UnsupportedMediaType,
    /// The body exceeds the configured limit. `-32600`, 413.
    PayloadTooLarge,
    /// Something went wrong inside the server. `-32603`, 200.
    Internal,
    /// The request carries no valid access token for this resource (none, expired, for
    /// another resource, not verifiable). `-32600`, 401 with a `WWW-Authenticate` challenge,
    /// on every revision that has authorization.
    Unauthorized,
    /// The access token lacks a scope the request needs. `-32600`, 403 with a
    /// `WWW-Authenticate` challenge naming the scope (`error="insufficient_scope"`).
    InsufficientScope,
    /// The server cannot serve the request now, though the request is fine: a store it
    /// depends on is unreachable, or one of its limits is reached (sessions, streams, calls in
    /// flight). `-32603`, 503 on every revision: an HTTP client retries later, and the
    /// JSON-RPC error still names the request (`id`).
    Unavailable,
    /// A rate limit of the server refused the call: no handler ran. `-31429` (outside
    /// JSON-RPC's reserved block, so no revision forbids it), 429 on every revision, `data:
    /// {"retryAfterMs": N, "limit": NAME}` (see `mcp_server::RateLimit`).
    RateLimited,
}

/// The JSON-RPC error code and HTTP status of a [`FailureKind`] on one revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorMapping {
    /// The JSON-RPC `error.code`.
    pub code: i64,
    /// The HTTP status of the response that carries the error (Streamable HTTP only; stdio
    /// has no status).
    pub status: StatusCode,
}

/// JSON-RPC and MCP error codes used by the table.
pub mod codes {
    /// Parse error.
    pub const PARSE_ERROR: i64 = -32700;
    /// Invalid request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Method not found.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid params.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Session not found (implementation-defined, legacy sub-range).
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// Resource not found, up to 2025-11-25.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// 2026-07-28 `HeaderMismatch`.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28 `MissingRequiredClientCapability`.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28 `UnsupportedProtocolVersion`.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// A server's rate limit refused the call (this workspace's code, on every revision).
    pub const RATE_LIMITED: i64 = -31429;
}

impl FailureKind {
    /// The JSON-RPC code and HTTP status of this kind on `revision`.
    pub const fn mapping(self, revision: Revision) -> ErrorMapping {
        use codes::*;
        let modern = matches!(revision.features().error_table, ErrorTable::Stateless);
        let (code, status) = match self {
            Self::Parse => (PARSE_ERROR, StatusCode::BAD_REQUEST),
            Self::InvalidRequest => (INVALID_REQUEST, StatusCode::BAD_REQUEST),
            Self::UnknownMethod if modern => (METHOD_NOT_FOUND, StatusCode::NOT_FOUND),
            Self::UnknownMethod => (METHOD_NOT_FOUND, StatusCode::OK),
            Self::UnknownTarget => (INVALID_PARAMS, StatusCode::OK),
            Self::ResourceNotFound if modern => (INVALID_PARAMS, StatusCode::OK),
            Self::ResourceNotFound => (RESOURCE_NOT_FOUND, StatusCode::OK),
            Self::InvalidParams => (INVALID_PARAMS, StatusCode::OK),
            Self::MissingMeta => (INVALID_PARAMS, StatusCode::BAD_REQUEST),
            Self::HeaderMismatch if modern => (HEADER_MISMATCH, StatusCode::BAD_REQUEST),
            Self::HeaderMismatch => (INVALID_REQUEST, StatusCode::BAD_REQUEST),
            Self::UnsupportedVersion if modern => {
                (UNSUPPORTED_PROTOCOL_VERSION, StatusCode::BAD_REQUEST)
            }
            Self::UnsupportedVersion => (INVALID_PARAMS, StatusCode::BAD_REQUEST),
            Self::MissingCapability if modern => {
                (MISSING_REQUIRED_CLIENT_CAPABILITY, StatusCode::BAD_REQUEST)
            }
            Self::MissingCapability => (INTERNAL_ERROR, StatusCode::OK),
            Self::SessionNotFound if modern => (INVALID_REQUEST, StatusCode::BAD_REQUEST),
            Self::SessionNotFound => (SESSION_NOT_FOUND, StatusCode::NOT_FOUND),
            Self::SessionRequired => (INVALID_REQUEST, StatusCode::BAD_REQUEST),
            Self::OriginRejected => (INVALID_REQUEST, StatusCode::FORBIDDEN),
            Self::NotAcceptable => (INVALID_REQUEST, StatusCode::NOT_ACCEPTABLE),
            Self::UnsupportedMediaType => (INVALID_REQUEST, StatusCode::UNSUPPORTED_MEDIA_TYPE),
            Self::PayloadTooLarge => (INVALID_REQUEST, StatusCode::PAYLOAD_TOO_LARGE),
            Self::Internal => (INTERNAL_ERROR, StatusCode::OK),
            Self::Unavailable => (INTERNAL_ERROR, StatusCode::SERVICE_UNAVAILABLE),
            Self::RateLimited => (RATE_LIMITED, StatusCode::TOO_MANY_REQUESTS),
            Self::Unauthorized => (INVALID_REQUEST, StatusCode::UNAUTHORIZED),
            Self::InsufficientScope => (INVALID_REQUEST, StatusCode::FORBIDDEN),
        };
        ErrorMapping { code, status }
    }
}

/// A protocol failure: what went wrong, a message for the peer, and optional `data`.
///
/// This is the normalized value; [`Adapter::encode_failure`](crate::Adapter::encode_failure)
/// turns it into the revision's JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    /// The kind, which picks code and status.
    pub kind: FailureKind,
    /// A short human-readable sentence (`error.message`).
    pub message: String,
    /// `error.data`, if any.
    pub data: Option<Value>,
}

impl Failure {
    /// A failure with no `data`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            data: None,
        }
    }

    /// The same failure with `data` set.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The JSON-RPC code and HTTP status on `revision`.
    pub const fn mapping(&self, revision: Revision) -> ErrorMapping {
        self.kind.mapping(revision)
    }

    /// Unparseable body.
    pub fn parse(detail: impl std::fmt::Display) -> Self {
        Self::new(FailureKind::Parse, format!("parse error: {detail}"))
    }

    /// Not a valid JSON-RPC request.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(FailureKind::InvalidRequest, message)
    }

    /// Invalid params.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(FailureKind::InvalidParams, message)
    }

    /// The method is not defined by the revision or not served.
    pub fn unknown_method(method: &str) -> Self {
        Self::new(
            FailureKind::UnknownMethod,
            format!("method not found: {method}"),
        )
    }

    /// No tool of that name.
    pub fn unknown_tool(name: &str) -> Self {
        Self::new(FailureKind::UnknownTarget, format!("Unknown tool: {name}"))
    }

    /// No prompt of that name.
    pub fn unknown_prompt(name: &str) -> Self {
        Self::new(
            FailureKind::UnknownTarget,
            format!("Unknown prompt: {name}"),
        )
    }

    /// The failure a JSON-RPC error from a peer stands for, to pass it on (a gateway
    /// answering with its upstream's error): invalid params (`-32602`), a missing client
    /// capability (`-32021`), a resource not found (`-32002`) and a rate limit (`-31429`)
    /// keep their kind, with the peer's message and `data`; any other code is an internal
    /// error. The adapter that encodes it writes its own revision's code for the kind.
    ///
    /// ```
    /// use mcp_adapters::{Failure, FailureKind};
    ///
    /// let failure = Failure::from_peer(-32021, "needs tasks", None);
    /// assert_eq!(failure.kind, FailureKind::MissingCapability);
    /// assert_eq!(Failure::from_peer(-32000, "oops", None).kind, FailureKind::Internal);
    /// ```
    pub fn from_peer(code: i64, message: impl Into<String>, data: Option<Value>) -> Self {
        let kind = match code {
            codes::INVALID_PARAMS => FailureKind::InvalidParams,
            codes::MISSING_REQUIRED_CLIENT_CAPABILITY => FailureKind::MissingCapability,
            codes::RESOURCE_NOT_FOUND => FailureKind::ResourceNotFound,
            codes::RATE_LIMITED => FailureKind::RateLimited,
            _ => FailureKind::Internal,
        };
        Self {
            kind,
            message: message.into(),
            data,
        }
    }

    /// No resource at `uri`; `data: {"uri": uri}`.
    pub fn resource_not_found(uri: &str) -> Self {
        Self::new(FailureKind::ResourceNotFound, "Resource not found")
            .with_data(json!({ "uri": uri }))
    }

    /// A required `_meta` field is missing or malformed.
    pub fn missing_meta(message: impl Into<String>) -> Self {
        Self::new(FailureKind::MissingMeta, message)
    }

    /// A header is missing, malformed or differs from the body.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(FailureKind::HeaderMismatch, message)
    }

    /// `requested` is not served; `data: {"supported": [...], "requested": requested}` with
    /// `supported` in the given order.
    pub fn unsupported_version(requested: &str, supported: &[Revision]) -> Self {
        let list: Vec<&str> = supported.iter().map(|r| r.as_str()).collect();
        Self::new(
            FailureKind::UnsupportedVersion,
            format!("Unsupported protocol version: {requested}"),
        )
        .with_data(json!({ "supported": list, "requested": requested }))
    }

    /// The client did not declare `required` (a `ClientCapabilities` object, e.g.
    /// `{"elicitation": {}}`); `data: {"requiredCapabilities": required}`.
    pub fn missing_capability(required: Value) -> Self {
        let names: Vec<&str> = required
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        Self::new(
            FailureKind::MissingCapability,
            format!("client did not declare the {} capability", names.join(", ")),
        )
        .with_data(json!({ "requiredCapabilities": required }))
    }

    /// The session named by `Mcp-Session-Id` does not exist.
    pub fn session_not_found() -> Self {
        Self::new(FailureKind::SessionNotFound, "Session not found")
    }

    /// An internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(FailureKind::Internal, message)
    }

    /// The server cannot serve the request now (a store down, a limit reached); the client
    /// may retry later.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(FailureKind::Unavailable, message)
    }
}
