//! What each revision can do, as one `const` table.
//!
//! Everything above the adapters branches on these flags, never on a version string.

use mcp_schema::SchemaProfile;

use crate::revision::Revision;

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
    /// The table row of `revision`.
    pub const fn of(revision: Revision) -> &'static Self {
        match revision {
            Revision::V2024_11_05 => &V2024_11_05,
            Revision::V2025_03_26 => &V2025_03_26,
            Revision::V2025_06_18 => &V2025_06_18,
            Revision::V2025_11_25 => &V2025_11_25,
            Revision::V2026_07_28 => &V2026_07_28,
        }
    }

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

const V2025_11_25: Features = Features {
    ask: AskMechanism::Push,
    allows_batch: false,
    has_handshake: true,
    has_sessions: true,
    has_get_stream: true,
    sse_resumable: true,
    sse_polling: true,
    http_sse: false,
    version_header: VersionHeader::AfterHandshake,
    mirrors_headers: false,
    per_request_meta: false,
    result_envelope: false,
    cache_hints: false,
    progress_message: true,
    client_progress: true,
    supports_extensions: false,
    extensions_at_initialize: true,
    has_titles: true,
    has_icons: true,
    has_annotations: true,
    structured_output: StructuredOutput::ObjectOnly,
    has_audio: true,
    has_resource_link: true,
    has_elicitation: true,
    url_elicitation: true,
    has_ping: true,
    per_request_log_level: false,
    has_listen: false,
    has_resource_subscribe: true,
    stream_close_cancels: false,
    core_tasks: true,
    error_id_optional: true,
    schema: SchemaProfile::V2025_11_25,
    definition_meta: true,
    has_completions: true,
    error_table: ErrorTable::Sessions,
};

const V2025_06_18: Features = Features {
    sse_polling: false,
    has_icons: false,
    url_elicitation: false,
    core_tasks: false,
    error_id_optional: false,
    schema: SchemaProfile::V2025_06_18,
    ..V2025_11_25
};

const V2025_03_26: Features = Features {
    ask: AskMechanism::InArguments,
    allows_batch: true,
    version_header: VersionHeader::Undefined,
    has_titles: false,
    structured_output: StructuredOutput::TextOnly,
    has_resource_link: false,
    has_elicitation: false,
    schema: SchemaProfile::V2025_03_26,
    definition_meta: false,
    ..V2025_06_18
};

const V2024_11_05: Features = Features {
    allows_batch: false,
    has_get_stream: true,
    sse_resumable: false,
    http_sse: true,
    progress_message: false,
    has_annotations: false,
    has_audio: false,
    schema: SchemaProfile::V2024_11_05,
    has_completions: false,
    ..V2025_03_26
};

const V2026_07_28: Features = Features {
    ask: AskMechanism::InputRequired,
    allows_batch: false,
    has_handshake: false,
    has_sessions: false,
    has_get_stream: false,
    sse_resumable: false,
    sse_polling: false,
    http_sse: false,
    version_header: VersionHeader::EveryRequest,
    mirrors_headers: true,
    per_request_meta: true,
    result_envelope: true,
    cache_hints: true,
    progress_message: true,
    client_progress: false,
    supports_extensions: true,
    extensions_at_initialize: false,
    has_titles: true,
    has_icons: true,
    has_annotations: true,
    structured_output: StructuredOutput::Any,
    has_audio: true,
    has_resource_link: true,
    has_elicitation: true,
    url_elicitation: true,
    has_ping: false,
    per_request_log_level: true,
    has_listen: true,
    has_resource_subscribe: false,
    stream_close_cancels: true,
    core_tasks: false,
    error_id_optional: true,
    schema: SchemaProfile::V2026_07_28,
    definition_meta: true,
    has_completions: true,
    error_table: ErrorTable::Stateless,
};

#[cfg(test)]
mod row_tests {
    use super::Features;
    use crate::revision::Revision;
    use mcp_schema::SchemaProfile;

    /// mcp-schema keeps its own table of profiles by version string (it cannot depend on this
    /// crate); the rows here must name the same profile.
    #[test]
    fn each_row_names_the_schema_profile_mcp_schema_gives_its_revision() {
        for revision in Revision::ALL {
            assert_eq!(
                Some(Features::of(revision).schema),
                SchemaProfile::for_revision(revision.as_str()),
                "{revision}"
            );
        }
    }
}
