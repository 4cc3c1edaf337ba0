//! What each revision can do: the types of the flags and tables of a revision's
//! [`Descriptor`](crate::Descriptor) (the rows themselves are in `revision.rs`).
//!
//! Everything above the adapters branches on these flags, never on a version string.

use mcp_schema::SchemaProfile;

/// How a server asks the client (and through it, the user) something in the middle of a call.
///
/// Each revision has exactly one mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AskMechanism {
    /// 2026-07-28 (MRTR): the question *is* the result (`resultType: "input_required"`); the
    /// client calls again with `inputResponses` and the opaque `requestState`.
    InputRequired,
    /// 2025-11-25 and 2025-06-18: a server-initiated JSON-RPC request (`elicitation/create`,
    /// `sampling/createMessage`, `roots/list`) is pushed on the call's open stream and answered
    /// by a separate POST.
    Push,
    /// 2025-03-26 and 2024-11-05: no protocol mechanism. The tool returns an ordinary result
    /// whose text names exactly what to send back, and the answers come back as the
    /// `mcpAnswers` / `mcpState` arguments of the next call.
    InArguments,
}

/// What a tool result may carry as structured output, and whether `outputSchema` exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StructuredOutput {
    /// No `structuredContent`, no `outputSchema` (2025-03-26 and 2024-11-05): the value
    /// travels as text only.
    TextOnly,
    /// `structuredContent` must be a JSON object and `outputSchema` is object-rooted
    /// (2025-06-18 and 2025-11-25).
    ObjectOnly,
    /// `structuredContent` may be any JSON value; `outputSchema` is any JSON Schema 2020-12
    /// (2026-07-28).
    Any,
}

/// Whether, and when, the `MCP-Protocol-Version` HTTP header is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum VersionHeader {
    /// Not defined by the revision; its absence implies 2025-03-26.
    Undefined,
    /// Sent on every request after `initialize` (the client may send it on `initialize` too).
    AfterHandshake,
    /// Required on every POST and must equal the body's `_meta` protocol version.
    EveryRequest,
}

/// The capability flags and feature switches of one revision.
///
/// Obtain it with [`Adapter::features`](crate::Adapter::features). The struct is
/// `#[non_exhaustive]`: new flags may be added without a breaking change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Features {
    /// The one way this revision asks the client something mid-call.
    pub ask: AskMechanism,
    /// JSON-RPC batch arrays are accepted in one POST (2025-03-26 only; never `initialize`).
    pub allows_batch: bool,
    /// The revision starts with `initialize` + `notifications/initialized`
    /// (otherwise `server/discover`, which a client may skip).
    pub has_handshake: bool,
    /// Streamable HTTP sessions (`Mcp-Session-Id`, minted on the `initialize` response; an
    /// unknown or expired session is answered 404). On 2024-11-05 the session is the HTTP+SSE
    /// connection.
    pub has_sessions: bool,
    /// A standalone GET stream exists for server-initiated messages. On 2026-07-28 GET is
    /// answered 405 and `subscriptions/listen` replaces it.
    pub has_get_stream: bool,
    /// SSE streams can be resumed with `Last-Event-ID`.
    pub sse_resumable: bool,
    /// SSE polling (priming event with an id, `retry`, server may close after an event id):
    /// 2025-11-25.
    pub sse_polling: bool,
    /// The revision's own HTTP transport is HTTP+SSE (two endpoints and an `endpoint` event),
    /// not Streamable HTTP (2024-11-05).
    pub http_sse: bool,
    /// When the `MCP-Protocol-Version` header is sent.
    pub version_header: VersionHeader,
    /// `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers mirror the body and are checked
    /// (400 + `-32020` on any difference).
    pub mirrors_headers: bool,
    /// Every request carries `_meta` protocol version and client capabilities; capabilities
    /// are per request and their absence means "none" (2026-07-28). Otherwise capabilities
    /// are declared once at `initialize` and remembered for the session.
    pub per_request_meta: bool,
    /// Every result carries `resultType` and `_meta["io.modelcontextprotocol/serverInfo"]`.
    pub result_envelope: bool,
    /// Complete results of the six cacheable methods carry `ttlMs` and `cacheScope`.
    pub cache_hints: bool,
    /// `notifications/progress` has a `message` field.
    pub progress_message: bool,
    /// Clients may send `notifications/progress` to the server.
    pub client_progress: bool,
    /// The `extensions` capability maps exist (client and server).
    pub supports_extensions: bool,
    /// Extensions are negotiated once, in the `initialize` capabilities (SEP-2133's rule for
    /// the revisions with a handshake, whose schemas allow the extra `extensions` member):
    /// the handshake revisions.
    pub extensions_at_initialize: bool,
    /// `title` on tools, resources, templates, prompts, prompt arguments and implementations.
    pub has_titles: bool,
    /// `icons` on tools, resources, templates, prompts and implementations.
    pub has_icons: bool,
    /// Tool `annotations` exist.
    pub has_annotations: bool,
    /// What structured tool output may look like.
    pub structured_output: StructuredOutput,
    /// `audio` content blocks exist.
    pub has_audio: bool,
    /// `resource_link` content blocks exist.
    pub has_resource_link: bool,
    /// `elicitation/create` exists in some form (pushed or embedded).
    pub has_elicitation: bool,
    /// URL-mode elicitation exists.
    pub url_elicitation: bool,
    /// `ping` exists.
    pub has_ping: bool,
    /// The log level travels in each request's `_meta` (`io.modelcontextprotocol/logLevel`);
    /// otherwise `logging/setLevel` sets it for the session.
    pub per_request_log_level: bool,
    /// `subscriptions/listen` replaces `resources/subscribe`, `resources/unsubscribe` and the
    /// GET stream.
    pub has_listen: bool,
    /// `resources/subscribe` and `resources/unsubscribe` exist.
    pub has_resource_subscribe: bool,
    /// On HTTP, closing the response stream cancels the request (otherwise a disconnect is not
    /// a cancellation and `notifications/cancelled` is the only way).
    pub stream_close_cancels: bool,
    /// The core experimental tasks (`tasks/*`) exist (2025-11-25).
    pub core_tasks: bool,
    /// A JSON-RPC error response may omit `id` (2025-11-25 and later). Older schemas require
    /// it, so an error about an unreadable request carries `"id": null` there.
    pub error_id_optional: bool,
    /// What the revision's tool schemas can hold (`mcp-schema`'s profile): on 2026-07-28 any
    /// JSON Schema 2020-12 keyword and `x-mcp-header`; before, a simplified schema, and a tool
    /// whose schema cannot be simplified without loss is not offered.
    pub schema: SchemaProfile,
    /// `_meta` on definitions (tools, resources, prompts, content blocks), from 2025-06-18.
    pub definition_meta: bool,
    /// The `completions` server capability (`completion/complete`), from 2025-03-26.
    pub has_completions: bool,
    /// Which table of error codes and HTTP statuses the revision answers failures with
    /// ([`FailureKind::mapping`](crate::FailureKind::mapping)).
    pub error_table: ErrorTable,
}

/// The error codes and HTTP statuses a revision gives each
/// [`FailureKind`](crate::FailureKind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorTable {
    /// 2024-11-05 to 2025-11-25: `-32002` for a missing resource, `-32001` and 404 for an
    /// unknown session, `-32602` for an unsupported version.
    Sessions,
    /// 2026-07-28: `-32020` header mismatch, `-32021` missing client capability, `-32022`
    /// unsupported version, 404 for an unknown method.
    Stateless,
}

impl Features {
    /// Extensions exist on this revision, negotiated per request or at `initialize`.
    pub const fn has_extensions(&self) -> bool {
        self.supports_extensions || self.extensions_at_initialize
    }

    /// MRTR: the question is the result and the client calls again (`ask == InputRequired`).
    pub const fn can_ask(&self) -> bool {
        matches!(self.ask, AskMechanism::InputRequired)
    }

    /// A server-initiated request is pushed on the call's stream (`ask == Push`).
    pub const fn can_push_ask(&self) -> bool {
        matches!(self.ask, AskMechanism::Push)
    }

    /// The question rides in the tool call's arguments (`ask == InArguments`).
    pub const fn asks_in_arguments(&self) -> bool {
        matches!(self.ask, AskMechanism::InArguments)
    }

    /// Request state travels through the client between attempts (MRTR `requestState`, or
    /// the `mcpState` argument).
    pub const fn carries_state(&self) -> bool {
        self.can_ask() || self.asks_in_arguments()
    }
}
