//! Names fixed by the MCP specification: protocol revisions, method names, reserved `_meta` keys,
//! error codes and HTTP header names.
//!
//! Everything here is a constant; nothing allocates.
//! Each item says in which revisions it exists, so callers can check a name against the revision
//! in force without a table of their own.
//!
//! ```
//! use mcp_wire::names::{error_code, method, revision};
//!
//! assert_eq!(method::TOOLS_CALL, "tools/call");
//! assert_eq!(error_code::METHOD_NOT_FOUND, -32601);
//! assert_eq!(revision::V2025_06_18, "2025-06-18");
//! ```

/// Protocol revision strings, as sent in `protocolVersion` and `MCP-Protocol-Version`.
///
/// Names only: the set of revisions, their order and what each can do are
/// `mcp-adapters`' revision descriptors.
pub mod revision {
    /// 2024-11-05: stdio and the two-endpoint HTTP+SSE transport.
    pub const V2024_11_05: &str = "2024-11-05";
    /// 2025-03-26: Streamable HTTP with sessions, a GET stream and JSON-RPC batches.
    pub const V2025_03_26: &str = "2025-03-26";
    /// 2025-06-18: no batches, the `MCP-Protocol-Version` header, elicitation, structured tool output.
    pub const V2025_06_18: &str = "2025-06-18";
    /// 2025-11-25: icons, URL elicitation, sampling with tools, experimental tasks.
    pub const V2025_11_25: &str = "2025-11-25";
    /// 2026-07-28: stateless requests carrying their context in `_meta`, `server/discover`, MRTR.
    pub const V2026_07_28: &str = "2026-07-28";
}

/// JSON-RPC method names of every revision: requests and notifications.
pub mod method {
    /// `initialize`: client → server handshake request, 2024-11-05 to 2025-11-25.
    /// Must not be part of a batch and must not be cancelled.
    pub const INITIALIZE: &str = "initialize";
    /// `ping`: liveness request in both directions, 2024-11-05 to 2025-11-25 (removed in 2026-07-28).
    pub const PING: &str = "ping";
    /// `server/discover`: client → server, 2026-07-28; servers must implement it.
    pub const SERVER_DISCOVER: &str = "server/discover";

    /// `tools/list`: client → server, every revision.
    pub const TOOLS_LIST: &str = "tools/list";
    /// `tools/call`: client → server, every revision. May answer `input_required` in 2026-07-28.
    pub const TOOLS_CALL: &str = "tools/call";

    /// `prompts/list`: client → server, every revision.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// `prompts/get`: client → server, every revision. May answer `input_required` in 2026-07-28.
    pub const PROMPTS_GET: &str = "prompts/get";

    /// `resources/list`: client → server, every revision.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// `resources/templates/list`: client → server, every revision.
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// `resources/read`: client → server, every revision. May answer `input_required` in 2026-07-28.
    pub const RESOURCES_READ: &str = "resources/read";
    /// `resources/subscribe`: client → server, 2024-11-05 to 2025-11-25.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// `resources/unsubscribe`: client → server, 2024-11-05 to 2025-11-25.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";

    /// `subscriptions/listen`: client → server, 2026-07-28; its response stream carries
    /// list-changed and resource-updated notifications.
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

    /// `completion/complete`: client → server, every revision.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// `logging/setLevel`: client → server, 2024-11-05 to 2025-11-25 (2026-07-28 uses the
    /// `io.modelcontextprotocol/logLevel` request `_meta` key instead).
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";

    /// `sampling/createMessage`: a server → client request up to 2025-11-25; an embedded
    /// `InputRequest` in 2026-07-28.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// `roots/list`: a server → client request up to 2025-11-25; an embedded `InputRequest` in
    /// 2026-07-28.
    pub const ROOTS_LIST: &str = "roots/list";
    /// `elicitation/create`: a server → client request in 2025-06-18 and 2025-11-25; an embedded
    /// `InputRequest` in 2026-07-28.
    pub const ELICITATION_CREATE: &str = "elicitation/create";

    /// `tasks/get`: both directions, 2025-11-25 (experimental); also in the 2026-07-28 tasks extension.
    pub const TASKS_GET: &str = "tasks/get";
    /// `tasks/result`: both directions, 2025-11-25 (experimental).
    pub const TASKS_RESULT: &str = "tasks/result";
    /// `tasks/list`: both directions, 2025-11-25 (experimental).
    pub const TASKS_LIST: &str = "tasks/list";
    /// `tasks/cancel`: both directions, 2025-11-25 (experimental); also in the 2026-07-28 tasks extension.
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// `tasks/update`: the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`).
    pub const TASKS_UPDATE: &str = "tasks/update";

    /// `notifications/initialized`: client → server after the `initialize` response,
    /// 2024-11-05 to 2025-11-25.
    pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
    /// `notifications/cancelled`: both directions up to 2025-11-25; in 2026-07-28 client → server on
    /// stdio, and server → client only to end a `subscriptions/listen` stream.
    pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
    /// `notifications/progress`: both directions up to 2025-11-25; server → client only, on the
    /// request's own stream, in 2026-07-28.
    pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
    /// `notifications/message`: server → client log message, every revision (deprecated in 2026-07-28).
    pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
    /// `notifications/resources/updated`: server → client, every revision (on a listen stream in
    /// 2026-07-28).
    pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// `notifications/resources/list_changed`: server → client, every revision.
    pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// `notifications/tools/list_changed`: server → client, every revision.
    pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// `notifications/prompts/list_changed`: server → client, every revision.
    pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// `notifications/roots/list_changed`: client → server, 2024-11-05 to 2025-11-25.
    pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// `notifications/subscriptions/acknowledged`: server → client, first message of a
    /// `subscriptions/listen` stream, 2026-07-28.
    pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
        "notifications/subscriptions/acknowledged";
    /// `notifications/elicitation/complete`: server → client, 2025-11-25 only (URL elicitation).
    pub const NOTIFICATION_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
    /// `notifications/tasks/status`: both directions, 2025-11-25 (experimental tasks).
    pub const NOTIFICATION_TASKS_STATUS: &str = "notifications/tasks/status";

    /// Every request method name above, in no particular order.
    pub const ALL_REQUESTS: [&str; 23] = [
        INITIALIZE,
        PING,
        SERVER_DISCOVER,
        TOOLS_LIST,
        TOOLS_CALL,
        PROMPTS_LIST,
        PROMPTS_GET,
        RESOURCES_LIST,
        RESOURCES_TEMPLATES_LIST,
        RESOURCES_READ,
        RESOURCES_SUBSCRIBE,
        RESOURCES_UNSUBSCRIBE,
        SUBSCRIPTIONS_LISTEN,
        COMPLETION_COMPLETE,
        LOGGING_SET_LEVEL,
        SAMPLING_CREATE_MESSAGE,
        ROOTS_LIST,
        ELICITATION_CREATE,
        TASKS_GET,
        TASKS_RESULT,
        TASKS_LIST,
        TASKS_CANCEL,
        TASKS_UPDATE,
    ];

    /// The constant above equal to `name`, if there is one: a method name read from a message
    /// can then be kept without a copy.
    ///
    /// ```
    /// use mcp_wire::names::method;
    ///
    /// assert_eq!(method::known("tools/call"), Some(method::TOOLS_CALL));
    /// assert_eq!(method::known("tools/cal"), None);
    /// ```
    pub fn known(name: &str) -> Option<&'static str> {
        ALL_REQUESTS
            .iter()
            .chain(&ALL_NOTIFICATIONS)
            .find(|m| **m == name)
            .copied()
    }

    /// Every notification method name above, in no particular order.
    pub const ALL_NOTIFICATIONS: [&str; 12] = [
        NOTIFICATION_INITIALIZED,
        NOTIFICATION_CANCELLED,
        NOTIFICATION_PROGRESS,
        NOTIFICATION_MESSAGE,
        NOTIFICATION_RESOURCES_UPDATED,
        NOTIFICATION_RESOURCES_LIST_CHANGED,
        NOTIFICATION_TOOLS_LIST_CHANGED,
        NOTIFICATION_PROMPTS_LIST_CHANGED,
        NOTIFICATION_ROOTS_LIST_CHANGED,
        NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
        NOTIFICATION_ELICITATION_COMPLETE,
        NOTIFICATION_TASKS_STATUS,
    ];
}

/// Reserved `_meta` keys.
///
/// In 2026-07-28 any key whose prefix has `modelcontextprotocol` or `mcp` as its second label
/// (`io.modelcontextprotocol/`, `dev.mcp/`) is reserved; [`is_reserved`](meta::is_reserved)
/// checks that rule.
pub mod meta {
    /// The prefix of every key the specification defines.
    pub const PREFIX: &str = "io.modelcontextprotocol/";

    /// Request `_meta`, 2026-07-28, required: the revision this request is written in.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// Request `_meta`, 2026-07-28, required: the client's `ClientCapabilities` for this request
    /// (`{}` means none).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// Request `_meta`, 2026-07-28, SHOULD be present: the client's `Implementation`.
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// Request `_meta`, 2026-07-28, optional and deprecated: the `LoggingLevel` wanted for this
    /// request's `notifications/message`; without it the server sends none.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// Result `_meta`, 2026-07-28, SHOULD be present on every result: the server's `Implementation`.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// Notification and listen-result `_meta`, 2026-07-28: the JSON-RPC id of the
    /// `subscriptions/listen` request the message belongs to.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// `_meta` of task-related messages, 2025-11-25 (experimental tasks): `{taskId}`.
    pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
    /// Request `_meta`, every revision: the token `notifications/progress` refers to.
    pub const PROGRESS_TOKEN: &str = "progressToken";

    /// W3C trace context, reserved for OpenTelemetry in 2026-07-28.
    pub const TRACEPARENT: &str = "traceparent";
    /// W3C trace context, reserved for OpenTelemetry in 2026-07-28.
    pub const TRACESTATE: &str = "tracestate";
    /// W3C baggage, reserved for OpenTelemetry in 2026-07-28.
    pub const BAGGAGE: &str = "baggage";

    /// Extension identifier of the 2026-07-28 tasks extension (a key of the `extensions`
    /// capability, not a `_meta` key).
    pub const EXTENSION_TASKS: &str = "io.modelcontextprotocol/tasks";

    /// Whether `key` is reserved by the 2026-07-28 naming rules.
    ///
    /// A key is reserved when it has a prefix (text before a `/`) whose second dot-separated label
    /// is `modelcontextprotocol` or `mcp`, or when it is one of the OpenTelemetry keys.
    /// `progressToken` is reserved too.
    ///
    /// ```
    /// use mcp_wire::names::meta::is_reserved;
    ///
    /// assert!(is_reserved("io.modelcontextprotocol/anything"));
    /// assert!(is_reserved("dev.mcp/x"));
    /// assert!(is_reserved("traceparent"));
    /// assert!(!is_reserved("com.example/mcp"));
    /// ```
    pub fn is_reserved(key: &str) -> bool {
        if matches!(key, PROGRESS_TOKEN | TRACEPARENT | TRACESTATE | BAGGAGE) {
            return true;
        }
        let Some((prefix, _)) = key.split_once('/') else {
            return false;
        };
        matches!(
            prefix.split('.').nth(1),
            Some("modelcontextprotocol" | "mcp")
        )
    }
}

/// JSON-RPC error codes used by MCP, with the revisions in which each applies.
///
/// Codes are `i64` to match [`ErrorObject::code`](crate::jsonrpc::ErrorObject::code).
pub mod error_code {
    /// -32700, JSON-RPC "Parse error": the body is not JSON at all. Every revision.
    /// Sent with no id (`"id": null`).
    pub const PARSE_ERROR: i64 = -32700;
    /// -32600, JSON-RPC "Invalid Request": JSON, but not a valid JSON-RPC message (wrong
    /// `jsonrpc`, bad id, no method, an empty batch, a batch where one is not allowed). Every
    /// revision.
    pub const INVALID_REQUEST: i64 = -32600;
    /// -32601, JSON-RPC "Method not found". Every revision. In 2026-07-28 it is sent with HTTP 404
    /// and also covers methods gated by a capability the server did not advertise.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// -32602, JSON-RPC "Invalid params". Every revision. In 2026-07-28 it also means a request is
    /// missing required `_meta` fields (HTTP 400), an invalid log level, and a resource that was not
    /// found (replacing -32002). Up to 2025-11-25 the example error for an unsupported
    /// `initialize` version uses it with `data: {supported, requested}`.
    pub const INVALID_PARAMS: i64 = -32602;
    /// -32603, JSON-RPC "Internal error". Every revision.
    pub const INTERNAL_ERROR: i64 = -32603;

    /// -32002, resource not found, 2024-11-05 to 2025-11-25. Retired in 2026-07-28, which must not
    /// emit it (clients should still accept it from older servers).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// -32042, URL elicitation required, 2025-11-25 only, with
    /// `data.elicitations: ElicitRequestURLParams[]`. Retired in 2026-07-28.
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;

    /// -32020, HeaderMismatch, 2026-07-28, HTTP 400: a required header (`MCP-Protocol-Version`,
    /// `Mcp-Method`, `Mcp-Name`, a mirrored `Mcp-Param-*`) is missing, malformed, badly
    /// base64-encoded or does not match the body. No `data` is defined.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// -32021, MissingRequiredClientCapability, 2026-07-28, HTTP 400: the request needs a client
    /// capability its `_meta` did not declare; `data: {requiredCapabilities: ClientCapabilities}`.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// -32022, UnsupportedProtocolVersion, 2026-07-28, HTTP 400: the server does not implement the
    /// requested revision; `data: {supported: string[], requested: string}`.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

    /// First code of the range 2026-07-28 reserves for the specification (-32099 to -32020).
    /// Implementations must not emit an undefined code from it.
    pub const SPEC_RESERVED_MIN: i64 = -32099;
    /// Last code of the range reserved for the specification.
    pub const SPEC_RESERVED_MAX: i64 = -32020;
}

/// HTTP header names used by the MCP HTTP transports.
///
/// Header names are case-insensitive on the wire; these are the spellings the specification uses.
pub mod headers {
    /// `MCP-Protocol-Version`: required after `initialize` from 2025-06-18; required on every POST
    /// and equal to the `_meta` value in 2026-07-28.
    pub const PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
    /// `Mcp-Session-Id`: session id minted by the server, 2025-03-26 to 2025-11-25; ignored in
    /// 2026-07-28.
    pub const SESSION_ID: &str = "Mcp-Session-Id";
    /// `Mcp-Method`: the request's `method`, required on every request in 2026-07-28.
    pub const METHOD: &str = "Mcp-Method";
    /// `Mcp-Name`: `params.name` of `tools/call` and `prompts/get`, or `params.uri` of
    /// `resources/read`, 2026-07-28.
    pub const NAME: &str = "Mcp-Name";
    /// Prefix of the headers mirroring `x-mcp-header` tool arguments, 2026-07-28
    /// (`Mcp-Param-Region`).
    pub const PARAM_PREFIX: &str = "Mcp-Param-";
    /// `Last-Event-ID`: SSE resumption, 2025-03-26 to 2025-11-25; ignored in 2026-07-28.
    pub const LAST_EVENT_ID: &str = "Last-Event-ID";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_meta_keys() {
        for (key, reserved) in [
            (meta::PROTOCOL_VERSION, true),
            (meta::SUBSCRIPTION_ID, true),
            (meta::PROGRESS_TOKEN, true),
            ("dev.mcp/thing", true),
            ("mcp/thing", false),
            ("com.example/thing", false),
            ("com.example.mcp/thing", false),
            ("plain", false),
        ] {
            assert_eq!(meta::is_reserved(key), reserved, "{key}");
        }
    }

    #[test]
    fn method_names_are_unique() {
        let mut all: Vec<&str> = method::ALL_REQUESTS
            .iter()
            .chain(method::ALL_NOTIFICATIONS.iter())
            .copied()
            .collect();
        let len = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), len);
    }
}
