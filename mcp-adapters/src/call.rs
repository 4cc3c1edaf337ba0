//! The normalized, revision-independent shape of what a client sent.

use std::borrow::Cow;

use mcp_wire::jsonrpc::{ErrorObject, Id};
use serde_json::{Map, Value};

use crate::ask::Answers;
pub use crate::context::ClientContext;
use crate::failure::Failure;
use crate::operation::Operation;

/// One decoded item of a body: a call, a reply to a server-pushed request, or a failure.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Incoming {
    /// A request or notification, decoded and checked.
    Call(Box<Call>),
    /// A JSON-RPC response from the client to a request the server pushed (2025-06-18 and
    /// 2025-11-25 `elicitation/create`, or `sampling/createMessage`, `roots/list`, `ping` on any
    /// revision with a handshake). The server publishes it to whoever waits for that id.
    Reply(Reply),
    /// The item could not be decoded; answer with this failure (unless it was a notification).
    Invalid(Invalid),
}

/// A client's answer to a request the server pushed.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The id the server gave the pushed request.
    pub id: Id,
    /// `Ok(result)` or the JSON-RPC error the client answered with. An error is a refusal,
    /// never an acceptance; see [`ElicitAnswer::from_reply`](crate::ElicitAnswer::from_reply).
    pub outcome: Result<Value, ErrorObject>,
}

/// An item that failed to decode.
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    /// The item's id, when it had a usable one. The error response carries it (`null`, or no
    /// `id` member on revisions where it is optional, otherwise).
    pub id: Option<Id>,
    /// `false` when the item was a notification or a response: JSON-RPC sends nothing back for
    /// those (over HTTP a lone invalid notification still gets an error status).
    pub respond: bool,
    /// What went wrong.
    pub failure: Failure,
}

/// A decoded request or notification.
///
/// `params` keeps the raw params object minus what was moved into typed fields: `name` (or
/// `uri`) of the operations with a [`target`](Self::target), `arguments`, `inputResponses` and
/// `requestState` are taken out (so are `mcpAnswers` / `mcpState` from the
/// arguments of a tool call on revisions that ask in arguments), and on 2026-07-28 requests
/// the protocol version, client capabilities and (object) client info are moved out of `_meta`
/// into [`protocol_version`](Self::protocol_version) and [`client`](Self::client). The rest of `_meta` and everything else stay, so a handler can
/// read any field an operation has (`ref` of `completion/complete`, `notifications` of
/// `subscriptions/listen`, `requestId` of `notifications/cancelled` ...).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Call {
    /// What to do.
    pub operation: Operation,
    /// The request id; `None` for a notification.
    pub id: Option<Id>,
    /// The wire method (the spec's constant when it is one of its names).
    pub method: Cow<'static, str>,
    /// `params.name` (tool, prompt) or `params.uri` (resource read, subscribe, unsubscribe).
    pub target: Option<String>,
    /// `params.arguments` of `tools/call` and `prompts/get` (empty when absent).
    pub arguments: Map<String, Value>,
    /// The rest of `params` (see the type docs).
    pub params: Map<String, Value>,
    /// The client's identity and capabilities, as far as this call states them.
    pub client: ClientContext,
    /// The protocol version the call names: `_meta` on 2026-07-28, `params.protocolVersion` on
    /// `initialize`.
    pub protocol_version: Option<String>,
    /// `_meta.progressToken`.
    pub progress_token: Option<Id>,
    /// The requested log level: `_meta["io.modelcontextprotocol/logLevel"]` on 2026-07-28, or
    /// `params.level` of `logging/setLevel`.
    pub log_level: Option<LogLevel>,
    /// Answers to earlier questions: MRTR `inputResponses`, or the `mcpAnswers` argument.
    pub answers: Option<Answers>,
    /// The opaque state of an earlier attempt: MRTR `requestState`, or the `mcpState`
    /// argument.
    pub request_state: Option<String>,
    /// `params.cursor` of the list operations.
    pub cursor: Option<String>,
}

impl Call {
    /// A call with only the operation, id and method set (the decoder fills the rest; tests
    /// and the stdio layer may build calls by hand).
    pub fn new(operation: Operation, id: Option<Id>, method: impl Into<Cow<'static, str>>) -> Self {
        Self {
            operation,
            id,
            method: method.into(),
            target: None,
            arguments: Map::new(),
            params: Map::new(),
            client: ClientContext::default(),
            protocol_version: None,
            progress_token: None,
            log_level: None,
            answers: None,
            request_state: None,
            cursor: None,
        }
    }

    /// The call is a notification (no reply).
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }

    /// The call is a retry of an earlier attempt that asked something (it carries answers or
    /// request state). Its result is never cacheable.
    pub fn is_retry(&self) -> bool {
        self.answers.is_some() || self.request_state.is_some()
    }

    /// `params._meta`, if present.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.params.get("_meta").and_then(Value::as_object)
    }

    /// The request a `notifications/cancelled` refers to (`params.requestId`).
    pub fn cancelled_request(&self) -> Option<Id> {
        self.params.get("requestId").and_then(id_of)
    }
}

/// The eight RFC 5424 log levels, least severe first: mcp-wire's type under the adapters' name.
pub use mcp_wire::model::{LoggingLevel as LogLevel, UnknownLoggingLevel as UnknownLogLevel};

/// `value` read as an [`Id`] (what `serde_json::from_value::<Id>` accepts, without a copy of
/// the value): a string, or an integer within the `i64` range.
pub(crate) fn id_of(value: &Value) -> Option<Id> {
    match value {
        Value::String(s) => Some(Id::String(s.clone())),
        Value::Number(n) => n.as_i64().map(Id::Number),
        _ => None,
    }
}
