//! Normalized operations and each revision's method map, in both directions.

/// What a client message asks the server to do, whatever the revision calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// Describe the server: `initialize` (legacy) or `server/discover` (2026-07-28).
    Describe,
    /// `notifications/initialized` (legacy; a notification).
    HandshakeComplete,
    /// `ping` (legacy).
    Ping,
    /// `tools/list`.
    ListTools,
    /// `tools/call`.
    CallTool,
    /// `resources/list`.
    ListResources,
    /// `resources/templates/list`.
    ListResourceTemplates,
    /// `resources/read`.
    ReadResource,
    /// `resources/subscribe` (legacy).
    Subscribe,
    /// `resources/unsubscribe` (legacy).
    Unsubscribe,
    /// `prompts/list`.
    ListPrompts,
    /// `prompts/get`.
    GetPrompt,
    /// `completion/complete`.
    Complete,
    /// `logging/setLevel` (legacy).
    SetLogLevel,
    /// `subscriptions/listen` (2026-07-28; a long-lived request answered as a stream).
    Listen,
    /// `notifications/cancelled` (a notification).
    Cancelled,
    /// `notifications/progress` from the client (legacy; a notification).
    Progress,
    /// `notifications/roots/list_changed` (legacy; a notification).
    RootsListChanged,
    /// A request method the revision's core does not define, on a revision with extensions:
    /// it is left to the registered extensions (the method name is in
    /// [`Call::method`](crate::Call::method)); answer `UnknownMethod` if none declares it.
    Extension,
    /// A notification the revision does not define: JSON-RPC says it gets no reply, so the
    /// server ignores it (the method name is in [`Call::method`](crate::Call::method)).
    Notification,
}

/// Whether a message with this method changes what a connection knows (its revision, its
/// client, its log level: `initialize`, `server/discover`, `logging/setLevel`) or is a
/// notification (`notifications/...`, which may cancel or complete a handshake): a transport
/// that runs requests concurrently handles such messages in the order they came.
///
/// ```
/// assert!(mcp_adapters::changes_connection("initialize"));
/// assert!(mcp_adapters::changes_connection("notifications/cancelled"));
/// assert!(!mcp_adapters::changes_connection("tools/call"));
/// ```
pub fn changes_connection(method: &str) -> bool {
    use mcp_wire::names::method::{INITIALIZE, LOGGING_SET_LEVEL, SERVER_DISCOVER};
    matches!(method, INITIALIZE | SERVER_DISCOVER | LOGGING_SET_LEVEL)
        || method.starts_with("notifications/")
}

/// Whether a request with this method starts a session on the revisions that have sessions
/// (`initialize`).
pub fn starts_session(method: &str) -> bool {
    method == mcp_wire::names::method::INITIALIZE
}

impl Operation {
    /// The operation is a notification (it has no id and gets no reply).
    pub const fn is_notification(self) -> bool {
        matches!(
            self,
            Self::HandshakeComplete
                | Self::Cancelled
                | Self::Progress
                | Self::RootsListChanged
                | Self::Notification
        )
    }

    /// On revisions with cache hints, a complete result of this operation carries `ttlMs`
    /// and `cacheScope` (`server/discover`, the four lists and `resources/read`).
    pub const fn is_cacheable(self) -> bool {
        matches!(
            self,
            Self::Describe
                | Self::ListTools
                | Self::ListPrompts
                | Self::ListResources
                | Self::ListResourceTemplates
                | Self::ReadResource
        )
    }

    /// An interim "input required" answer is allowed for this operation (`tools/call`,
    /// `prompts/get`, `resources/read`).
    pub const fn may_require_input(self) -> bool {
        matches!(self, Self::CallTool | Self::GetPrompt | Self::ReadResource)
    }

    /// The operation names a target: a tool or prompt (`params.name`) or a resource
    /// (`params.uri`); it is mirrored in `Mcp-Name` on 2026-07-28.
    pub const fn has_target(self) -> bool {
        matches!(self, Self::CallTool | Self::GetPrompt | Self::ReadResource)
    }
}

/// One row of a method map.
pub(crate) type Row = (&'static str, Operation);

/// The method map of the revisions with the `initialize` handshake.
pub(crate) const LEGACY_METHODS: &[Row] = &[
    ("initialize", Operation::Describe),
    ("notifications/initialized", Operation::HandshakeComplete),
    ("ping", Operation::Ping),
    ("tools/list", Operation::ListTools),
    ("tools/call", Operation::CallTool),
    ("resources/list", Operation::ListResources),
    ("resources/templates/list", Operation::ListResourceTemplates),
    ("resources/read", Operation::ReadResource),
    ("resources/subscribe", Operation::Subscribe),
    ("resources/unsubscribe", Operation::Unsubscribe),
    ("prompts/list", Operation::ListPrompts),
    ("prompts/get", Operation::GetPrompt),
    ("completion/complete", Operation::Complete),
    ("logging/setLevel", Operation::SetLogLevel),
    ("notifications/cancelled", Operation::Cancelled),
    ("notifications/progress", Operation::Progress),
    (
        "notifications/roots/list_changed",
        Operation::RootsListChanged,
    ),
];

/// The method map of 2026-07-28.
pub(crate) const MODERN_METHODS: &[Row] = &[
    ("server/discover", Operation::Describe),
    ("tools/list", Operation::ListTools),
    ("tools/call", Operation::CallTool),
    ("resources/list", Operation::ListResources),
    ("resources/templates/list", Operation::ListResourceTemplates),
    ("resources/read", Operation::ReadResource),
    ("prompts/list", Operation::ListPrompts),
    ("prompts/get", Operation::GetPrompt),
    ("completion/complete", Operation::Complete),
    ("subscriptions/listen", Operation::Listen),
    ("notifications/cancelled", Operation::Cancelled),
];

/// Server-to-client requests the package can send (pushed, or embedded in an MRTR result).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClientRequestKind {
    /// `elicitation/create`: ask the user.
    Elicit,
    /// `sampling/createMessage`: ask the client's model.
    CreateMessage,
    /// `roots/list`: ask for the client's roots.
    ListRoots,
}

impl ClientRequestKind {
    /// The wire method.
    pub const fn method(self) -> &'static str {
        match self {
            Self::Elicit => "elicitation/create",
            Self::CreateMessage => "sampling/createMessage",
            Self::ListRoots => "roots/list",
        }
    }

    /// The kind that `method` names.
    pub fn from_method(method: &str) -> Option<Self> {
        [Self::Elicit, Self::CreateMessage, Self::ListRoots]
            .into_iter()
            .find(|k| k.method() == method)
    }

    /// The client capability (key of `ClientCapabilities`) the kind needs.
    pub const fn capability(self) -> &'static str {
        match self {
            Self::Elicit => "elicitation",
            Self::CreateMessage => "sampling",
            Self::ListRoots => "roots",
        }
    }
}
