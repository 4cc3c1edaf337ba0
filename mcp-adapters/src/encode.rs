//! Encoding outcomes into JSON-RPC messages, identically for JSON, SSE and stdio.
//!
//! An [`Encoded`] is one JSON-RPC message (bytes or JSON) plus the HTTP status it goes with; the
//! transport frames it (`application/json` body, SSE `data:` event, or one ndjson line).

use std::fmt;

use http::StatusCode;
use mcp_wire::jsonrpc::Id;
use mcp_wire::names::{meta, method};
use serde_json::{Map, Value, json};

use crate::adapter::Adapter;
use crate::ask::{INPUT_REQUIRED_META, InputRequests, instructions_text};
use crate::call::{Call, LogLevel};
use crate::failure::Failure;
use crate::features::AskMechanism;
use crate::operation::Operation;
use crate::select::AdapterSet;
use crate::write;

/// What a handler produced for a call.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// The result object, in the newest revision's superset shape (the adapter projects it).
    Value(Value),
    /// A `tools/call` result, typed: the same as [`Outcome::Value`] of its
    /// [`into_value`](ToolResult::into_value), written without building the result object.
    Tool(ToolResult),
    /// The handler needs answers first.
    InputRequired {
        /// The questions, by server-assigned key.
        requests: InputRequests,
        /// Opaque state for the next attempt (the server must integrity-protect it).
        state: Option<String>,
    },
    /// The call failed.
    Failure(Failure),
}

/// A `CallToolResult` in the newest revision's shape, typed.
///
/// Built from content blocks ([`new`](Self::new), then `with_*`), or from a tool's structured
/// output ([`output`](Self::output)). The adapter projects it for its revision when it encodes
/// it ([`Adapter::encode_tool_result`]); [`into_value`](Self::into_value) gives the same
/// object unprojected.
///
/// ```
/// use mcp_adapters::ToolResult;
/// use serde_json::json;
///
/// let text = ToolResult::new(vec![json!({"type": "text", "text": "3"})]);
/// assert_eq!(text.into_value(), json!({"content": [{"type": "text", "text": "3"}]}));
///
/// let sum = ToolResult::output(&json!({"sum": 3})).unwrap();
/// assert_eq!(
///     sum.into_value(),
///     json!({
///         "content": [{"type": "text", "text": "{\"sum\":3}"}],
///         "structuredContent": {"sum": 3},
///     })
/// );
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolResult {
    body: ToolBody,
}

#[derive(Clone, Debug)]
enum ToolBody {
    /// Content blocks and the other members.
    Parts(ToolParts),
    /// Structured output serialized once as compact JSON text: one text block holding the
    /// text and, when `structured`, the same JSON as `structuredContent`. Written from the
    /// text, without a `Value` tree.
    Output { json: String, structured: bool },
}

impl Default for ToolBody {
    fn default() -> Self {
        Self::Parts(ToolParts::default())
    }
}

/// The members of a tool result.
#[derive(Clone, Debug, Default)]
pub(crate) struct ToolParts {
    pub(crate) content: Vec<Value>,
    pub(crate) structured_content: Option<Value>,
    /// `isError: true` (written only when set).
    pub(crate) is_error: bool,
    pub(crate) meta: Option<Map<String, Value>>,
    /// Members the model does not name, written after the named ones (never in their
    /// place: see [`ToolResult::with_extra`]).
    pub(crate) extra: Map<String, Value>,
}

/// The members of a tool result the writer names itself: an extra member never replaces one.
const NAMED_TOOL_MEMBERS: [&str; 5] = [
    "content",
    "structuredContent",
    "isError",
    "_meta",
    "resultType",
];

impl ToolResult {
    /// A result with these content blocks (each a content block object, as the newest
    /// revision writes it).
    pub fn new(content: Vec<Value>) -> Self {
        Self {
            body: ToolBody::Parts(ToolParts {
                content,
                ..ToolParts::default()
            }),
        }
    }

    /// A tool's structured output: one text block holding `value` as compact JSON, and the
    /// same JSON as `structuredContent` (where the revision carries it; elsewhere the text
    /// block alone).
    ///
    /// # Errors
    ///
    /// `value` cannot be serialized (say, a map with non-string keys).
    pub fn output<T: serde::Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        Ok(Self {
            body: ToolBody::Output {
                json: serde_json::to_string(value)?,
                structured: true,
            },
        })
    }

    /// Sets `structuredContent`.
    #[must_use]
    pub fn with_structured_content(self, structured: Value) -> Self {
        let mut parts = self.into_parts();
        parts.structured_content = Some(structured);
        Self {
            body: ToolBody::Parts(parts),
        }
    }

    /// Leaves `structuredContent` out (say, the tool declares no output schema on this
    /// revision); the content is unchanged.
    #[must_use]
    pub fn without_structured_content(mut self) -> Self {
        match &mut self.body {
            ToolBody::Parts(parts) => parts.structured_content = None,
            ToolBody::Output { structured, .. } => *structured = false,
        }
        self
    }

    /// Sets `isError` (written only when `true`).
    #[must_use]
    pub fn with_is_error(self, is_error: bool) -> Self {
        if !is_error && !self.is_error() {
            return self;
        }
        let mut parts = self.into_parts();
        parts.is_error = is_error;
        Self {
            body: ToolBody::Parts(parts),
        }
    }

    /// Sets `_meta`.
    #[must_use]
    pub fn with_meta(self, meta: Map<String, Value>) -> Self {
        let mut parts = self.into_parts();
        parts.meta = Some(meta);
        Self {
            body: ToolBody::Parts(parts),
        }
    }

    /// Adds members the model does not name (a tool result's unknown members, kept as they
    /// are). A member of the same name as one the result names (`content`,
    /// `structuredContent`, `isError`, `_meta`, `resultType`) is left out: the named one wins.
    #[must_use]
    pub fn with_extra(self, extra: Map<String, Value>) -> Self {
        if extra.is_empty() {
            return self;
        }
        let mut parts = self.into_parts();
        parts.extra = extra;
        parts
            .extra
            .retain(|key, _| !NAMED_TOOL_MEMBERS.contains(&key.as_str()));
        Self {
            body: ToolBody::Parts(parts),
        }
    }

    /// Whether the tool failed (`isError: true`).
    pub fn is_error(&self) -> bool {
        matches!(&self.body, ToolBody::Parts(parts) if parts.is_error)
    }

    /// The result as its members.
    fn into_parts(self) -> ToolParts {
        match self.body {
            ToolBody::Parts(parts) => parts,
            ToolBody::Output { json, structured } => {
                let mut block = Map::new();
                block.insert("type".into(), Value::from("text"));
                // Written by serde_json: it reads back.
                let structured_content = structured
                    .then(|| serde_json::from_str(&json).ok())
                    .flatten();
                block.insert("text".into(), Value::String(json));
                ToolParts {
                    content: vec![Value::Object(block)],
                    structured_content,
                    ..ToolParts::default()
                }
            }
        }
    }

    /// The result object.
    pub fn into_value(self) -> Value {
        let parts = self.into_parts();
        let mut out = Map::new();
        out.insert("content".into(), Value::Array(parts.content));
        if let Some(structured) = parts.structured_content {
            out.insert("structuredContent".into(), structured);
        }
        if parts.is_error {
            out.insert("isError".into(), Value::Bool(true));
        }
        if let Some(meta) = parts.meta {
            out.insert("_meta".into(), Value::Object(meta));
        }
        for (key, value) in parts.extra {
            out.entry(key).or_insert(value);
        }
        Value::Object(out)
    }
}

/// Two results are equal when their result objects are, however they were built.
impl PartialEq for ToolResult {
    fn eq(&self, other: &Self) -> bool {
        match (&self.body, &other.body) {
            (ToolBody::Parts(a), ToolBody::Parts(b)) => {
                a.content == b.content
                    && a.structured_content == b.structured_content
                    && a.is_error == b.is_error
                    && a.meta == b.meta
                    && a.extra == b.extra
            }
            _ => self.clone().into_value() == other.clone().into_value(),
        }
    }
}

/// What [`Adapter::project_result_body`] leaves for the writer to add.
#[derive(Clone, Copy, Debug, Default)]
struct Additions {
    /// `resultType: "complete"` (the handler set none).
    result_type: bool,
    /// The server info in `_meta` (unless the handler put one there).
    server_info: bool,
}

const RESULT_NOT_OBJECT: &str = "a result must be a JSON object";

/// Who may cache a result (`cacheScope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CacheScope {
    /// Any client or shared intermediary may cache it.
    Public,
    /// Only caches of the same authorization context.
    #[default]
    Private,
}

impl CacheScope {
    /// The wire value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Private => "private",
        }
    }
}

/// The cache hints of one cacheable result (`ttlMs`, `cacheScope`).
///
/// Default is `ttlMs: 0` (immediately stale) and `cacheScope: "private"`: safe for anything.
/// Configure it per list and per resource (all pages of one list must share one scope).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CacheHint {
    /// Freshness in milliseconds.
    pub ttl_ms: u64,
    /// Who may cache.
    pub scope: CacheScope,
}

impl CacheHint {
    /// `ttlMs: 0`, `cacheScope: "private"`.
    pub const NONE: Self = Self {
        ttl_ms: 0,
        scope: CacheScope::Private,
    };
}

/// What the encoder needs besides the outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ResultContext<'a> {
    /// The server's `Implementation`, put in `_meta["io.modelcontextprotocol/serverInfo"]` of
    /// every result on 2026-07-28 (omitted when `None`), projected for the revision
    /// ([`Adapter::project_implementation`]) unless
    /// [`server_info_projected`](Self::server_info_projected) says it already is.
    pub server_info: Option<&'a Value>,
    /// `server_info` is already projected for the encoding adapter's revision (say, once per
    /// revision at startup), so it is copied in as it is. Default `false`: it is projected on
    /// every result.
    pub server_info_projected: bool,
    /// The cache hints for this result, when the operation is cacheable. Default is
    /// [`CacheHint::NONE`].
    pub cache: CacheHint,
}

/// One encoded JSON-RPC message and the HTTP status that carries it.
///
/// A success response is written to bytes as it is encoded (its envelope and the result's
/// `resultType` and `_meta` server info go straight into the output, never into a JSON tree);
/// other messages are kept as JSON. [`to_value`](Self::to_value) gives either as JSON.
#[derive(Clone, Debug)]
pub struct Encoded {
    repr: Repr,
    /// The HTTP status (200 for results; the failure table's status for errors).
    pub status: StatusCode,
}

#[derive(Clone)]
enum Repr {
    /// A message as JSON.
    Message(Value),
    /// A success response, serialized (compact JSON).
    Written(Vec<u8>),
}

impl fmt::Debug for Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Message(message) => f.debug_tuple("Message").field(message).finish(),
            Self::Written(bytes) => f
                .debug_tuple("Written")
                .field(&String::from_utf8_lossy(bytes))
                .finish(),
        }
    }
}

impl PartialEq for Encoded {
    /// The same status and the same JSON message, however each is held.
    fn eq(&self, other: &Self) -> bool {
        self.status == other.status
            && match (&self.repr, &other.repr) {
                (Repr::Written(a), Repr::Written(b)) if a == b => true,
                // Members may be written in another order.
                _ => self.to_value() == other.to_value(),
            }
    }
}

impl Encoded {
    /// A message as JSON, with its HTTP status.
    pub fn new(message: Value, status: StatusCode) -> Self {
        Self {
            repr: Repr::Message(message),
            status,
        }
    }

    /// The message as JSON (parsed back from its bytes for a success response).
    pub fn to_value(&self) -> Value {
        match &self.repr {
            Repr::Message(message) => message.clone(),
            // Written here from JSON values: it parses.
            Repr::Written(bytes) => serde_json::from_slice(bytes).unwrap_or(Value::Null),
        }
    }

    /// The message as JSON, consuming it.
    pub fn into_value(self) -> Value {
        match self.repr {
            Repr::Message(message) => message,
            Repr::Written(_) => self.to_value(),
        }
    }

    /// It is an error response.
    pub fn is_error(&self) -> bool {
        match &self.repr {
            Repr::Message(message) => message.get("error").is_some(),
            Repr::Written(_) => false,
        }
    }

    /// The message as bytes (compact JSON, no trailing newline).
    pub fn to_bytes(&self) -> Vec<u8> {
        match &self.repr {
            Repr::Written(bytes) => bytes.clone(),
            Repr::Message(_) => {
                let mut out = Vec::with_capacity(256);
                self.write_to(&mut out);
                out
            }
        }
    }

    /// The message as bytes, consuming it (no copy for a success response).
    pub fn into_bytes(self) -> Vec<u8> {
        match self.repr {
            Repr::Written(bytes) => bytes,
            Repr::Message(_) => self.to_bytes(),
        }
    }

    /// Appends the message's bytes to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match &self.repr {
            Repr::Written(bytes) => out.extend_from_slice(bytes),
            // Cannot fail: the writer is a Vec and every map key is a string.
            Repr::Message(message) => {
                let _ = serde_json::to_writer(out, message);
            }
        }
    }
}

/// `{"jsonrpc": "2.0", "id": id, "result": result}`, moving `result` in (`json!` would copy
/// it through the serializer).
fn response_message(id: Id, result: Value) -> Value {
    let id = match id {
        Id::Number(n) => Value::from(n),
        Id::String(s) => Value::String(s),
    };
    let mut message = Map::new();
    message.insert("jsonrpc".into(), Value::from("2.0"));
    message.insert("id".into(), id);
    message.insert("result".into(), result);
    Value::Object(message)
}

/// `{"jsonrpc":"2.0","id":id,"result":…}`, written without building the envelope; `body`
/// writes the result.
fn write_response(id: &Id, body: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write::write_id(&mut out, id);
    out.extend_from_slice(br#","result":"#);
    body(&mut out);
    out.push(b'}');
    out
}

/// A tool result with the adapter's additions (`resultType: "complete"` when `result_type`,
/// `server_info` in `_meta` unless `_meta` already names one), written in one pass.
fn write_tool_result(
    out: &mut Vec<u8>,
    result: &ToolParts,
    result_type: bool,
    server_info: Option<&Value>,
) {
    out.extend_from_slice(br#"{"content":"#);
    write::write_array(out, &result.content);
    if let Some(structured) = &result.structured_content {
        out.extend_from_slice(br#","structuredContent":"#);
        write::write_value(out, structured);
    }
    if result.is_error {
        out.extend_from_slice(br#","isError":true"#);
    }
    match (&result.meta, server_info) {
        (Some(entries), Some(info)) if !entries.contains_key(meta::SERVER_INFO) => {
            out.extend_from_slice(br#","_meta":"#);
            write_meta_with_server_info(out, Some(entries), info);
        }
        (Some(entries), _) => {
            out.extend_from_slice(br#","_meta":"#);
            write::write_object(out, entries);
        }
        (None, Some(info)) => {
            out.extend_from_slice(br#","_meta":"#);
            write_meta_with_server_info(out, None, info);
        }
        (None, None) => {}
    }
    for (key, value) in &result.extra {
        out.push(b',');
        write::write_member(out, key, value);
    }
    if result_type {
        out.extend_from_slice(br#","resultType":"complete""#);
    }
    out.push(b'}');
}

/// [`write_tool_result`] for structured output as JSON text: the members in the order (and with the
/// bytes) the `Value` path writes them; the text block's members are sorted as a `Map` sorts
/// them.
fn write_json_tool_result(
    out: &mut Vec<u8>,
    json: &str,
    structured: bool,
    result_type: bool,
    server_info: Option<&Value>,
) {
    out.extend_from_slice(br#"{"content":[{"text":"#);
    write::write_str(out, json);
    out.extend_from_slice(br#","type":"text"}]"#);
    if structured {
        out.extend_from_slice(br#","structuredContent":"#);
        out.extend_from_slice(json.as_bytes());
    }
    if let Some(info) = server_info {
        out.extend_from_slice(br#","_meta":"#);
        write_meta_with_server_info(out, None, info);
    }
    if result_type {
        out.extend_from_slice(br#","resultType":"complete""#);
    }
    out.push(b'}');
}

/// A result object with the adapter's additions (as in [`write_tool_result`]), written in
/// one pass.
fn write_result_body(
    out: &mut Vec<u8>,
    body: &Map<String, Value>,
    result_type: bool,
    server_info: Option<&Value>,
) {
    out.push(b'{');
    let mut first = true;
    let mut member = |out: &mut Vec<u8>, key: &str| {
        if !first {
            out.push(b',');
        }
        first = false;
        write::write_str(out, key);
        out.push(b':');
    };
    let mut meta_seen = false;
    for (key, value) in body {
        member(out, key);
        if key == "_meta" {
            meta_seen = true;
            if let (Some(info), Value::Object(entries)) = (server_info, value)
                && !entries.contains_key(meta::SERVER_INFO)
            {
                write_meta_with_server_info(out, Some(entries), info);
                continue;
            }
        }
        write::write_value(out, value);
    }
    if !meta_seen && let Some(info) = server_info {
        member(out, "_meta");
        write_meta_with_server_info(out, None, info);
    }
    if result_type {
        member(out, "resultType");
        out.extend_from_slice(br#""complete""#);
    }
    out.push(b'}');
}

/// A `_meta` object (its `entries`, in order) plus `io.modelcontextprotocol/serverInfo` last.
fn write_meta_with_server_info(
    out: &mut Vec<u8>,
    entries: Option<&Map<String, Value>>,
    info: &Value,
) {
    out.push(b'{');
    for (key, value) in entries.into_iter().flatten() {
        write::write_member(out, key, value);
        out.push(b',');
    }
    write::write_str(out, meta::SERVER_INFO);
    out.push(b':');
    write::write_value(out, info);
    out.push(b'}');
}

impl Adapter {
    /// Encodes the outcome of `call`. `None` for a notification (nothing is sent back).
    pub fn encode(
        &self,
        call: &Call,
        outcome: Outcome,
        ctx: &ResultContext<'_>,
    ) -> Option<Encoded> {
        let id = call.id.clone()?;
        Some(match outcome {
            Outcome::Value(value) => {
                self.encode_result(id, call.operation, call.is_retry(), value, ctx)
            }
            Outcome::Tool(result) => self.encode_tool_result(id, result, ctx),
            Outcome::InputRequired { requests, state } => self
                .encode_input_required(id.clone(), call, &requests, state.as_deref(), ctx)
                .unwrap_or_else(|failure| self.encode_failure(Some(id), &failure)),
            Outcome::Failure(failure) => self.encode_failure(Some(id), &failure),
        })
    }

    /// A success response carrying `result`, projected and enveloped for this revision (see
    /// [`Adapter::result_body`]).
    pub fn encode_result(
        &self,
        id: Id,
        operation: Operation,
        is_retry: bool,
        result: Value,
        ctx: &ResultContext<'_>,
    ) -> Encoded {
        let Value::Object(mut body) = result else {
            return self.encode_failure(Some(id), &Failure::internal(RESULT_NOT_OBJECT));
        };
        let additions = self.project_result_body(operation, is_retry, &mut body, ctx);
        let server_info = self.server_info_to_write(additions.server_info, ctx);
        Encoded {
            repr: Repr::Written(write_response(&id, |out| {
                write_result_body(out, &body, additions.result_type, server_info.as_deref());
            })),
            status: StatusCode::OK,
        }
    }

    /// A success response carrying a `tools/call` result: what
    /// [`encode_result`](Self::encode_result) makes of its [`into_value`](ToolResult::into_value),
    /// written straight from the parts.
    pub fn encode_tool_result(
        &self,
        id: Id,
        result: ToolResult,
        ctx: &ResultContext<'_>,
    ) -> Encoded {
        // `tools/call` results are never cacheable: the envelope is `resultType` and the
        // server info.
        let envelope = self.features().result_envelope;
        let server_info = self.server_info_to_write(envelope, ctx);
        let repr = match result.body {
            ToolBody::Parts(mut parts) => {
                self.project_tool_parts(&mut parts);
                Repr::Written(write_response(&id, |out| {
                    write_tool_result(out, &parts, envelope, server_info.as_deref());
                }))
            }
            ToolBody::Output { json, structured } => {
                let keeps = structured && self.keeps_structured_json(&json);
                Repr::Written(write_response(&id, |out| {
                    write_json_tool_result(out, &json, keeps, envelope, server_info.as_deref());
                }))
            }
        };
        Encoded {
            repr,
            status: StatusCode::OK,
        }
    }

    /// The result object for this revision:
    ///
    /// - `tools/call` results get [`Adapter::project_tool_result`], `prompts/get` results
    ///   [`Adapter::project_prompt_result`];
    /// - on 2026-07-28: `resultType: "complete"` unless the handler set one,
    ///   `_meta["io.modelcontextprotocol/serverInfo"]`, and on cacheable operations `ttlMs` and
    ///   `cacheScope` from `ctx.cache` unless already set. On a retry (the call carried
    ///   answers or request state) they are forced to `0` and `"private"`: the spec requires
    ///   the fields on every complete result of those methods and forbids caching retries;
    /// - elsewhere `resultType`, `ttlMs` and `cacheScope` are removed.
    ///
    /// A result that is not a JSON object is an `Internal` failure.
    pub fn result_body(
        &self,
        operation: Operation,
        is_retry: bool,
        result: Value,
        ctx: &ResultContext<'_>,
    ) -> Result<Value, Failure> {
        let Value::Object(mut body) = result else {
            return Err(Failure::internal(RESULT_NOT_OBJECT));
        };
        let additions = self.project_result_body(operation, is_retry, &mut body, ctx);
        if additions.result_type {
            body.insert("resultType".into(), "complete".into());
        }
        if additions.server_info {
            self.add_server_info(&mut body, ctx);
        }
        Ok(Value::Object(body))
    }

    /// [`result_body`](Self::result_body) in place, but for `resultType` and the server info,
    /// which it says to add (the caller writes them straight into the output).
    fn project_result_body(
        &self,
        operation: Operation,
        is_retry: bool,
        body: &mut Map<String, Value>,
        ctx: &ResultContext<'_>,
    ) -> Additions {
        match operation {
            Operation::CallTool => self.project_tool_result(body),
            Operation::GetPrompt => self.project_prompt_result(body),
            _ => {}
        }
        let f = self.features();
        if !f.result_envelope {
            for key in ["resultType", "ttlMs", "cacheScope"] {
                body.remove(key);
            }
            return Additions::default();
        }
        let result_type = !body.contains_key("resultType");
        let complete =
            result_type || body.get("resultType").and_then(Value::as_str) == Some("complete");
        if f.cache_hints && operation.is_cacheable() && complete {
            let hint = if is_retry { CacheHint::NONE } else { ctx.cache };
            if is_retry || !body.contains_key("ttlMs") {
                body.insert("ttlMs".into(), hint.ttl_ms.into());
            }
            if is_retry || !body.contains_key("cacheScope") {
                body.insert("cacheScope".into(), hint.scope.as_str().into());
            }
        }
        Additions {
            result_type,
            server_info: ctx.server_info.is_some(),
        }
    }

    /// The server info a written result carries in `_meta` when `wanted`: projected for this
    /// revision unless the context says it already is.
    fn server_info_to_write<'a>(
        &self,
        wanted: bool,
        ctx: &ResultContext<'a>,
    ) -> Option<std::borrow::Cow<'a, Value>> {
        let info = ctx.server_info.filter(|_| wanted)?;
        Some(if ctx.server_info_projected {
            std::borrow::Cow::Borrowed(info)
        } else {
            std::borrow::Cow::Owned(self.project_implementation(info))
        })
    }

    fn add_server_info(&self, body: &mut Map<String, Value>, ctx: &ResultContext<'_>) {
        if let Some(info) = ctx.server_info {
            let meta_obj = body
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = meta_obj {
                m.entry(meta::SERVER_INFO).or_insert_with(|| {
                    if ctx.server_info_projected {
                        info.clone()
                    } else {
                        self.project_implementation(info)
                    }
                });
            }
        }
    }

    /// An error response. `id: None` (the request's id could not be read) is written as
    /// `"id": null` where the revision's schema requires an id (up to 2025-06-18, as JSON-RPC
    /// 2.0 says), and as no `id` member from 2025-11-25 on, where it is optional.
    pub fn encode_failure(&self, id: Option<Id>, failure: &Failure) -> Encoded {
        let mapping = failure.mapping(self.revision());
        let mut error = Map::new();
        error.insert("code".into(), mapping.code.into());
        error.insert("message".into(), Value::String(failure.message.clone()));
        if let Some(data) = &failure.data {
            error.insert("data".into(), data.clone());
        }
        let mut message = Map::new();
        message.insert("jsonrpc".into(), "2.0".into());
        match id {
            Some(id) => {
                message.insert("id".into(), json!(id));
            }
            None if self.features().error_id_optional => {}
            None => {
                message.insert("id".into(), Value::Null);
            }
        }
        message.insert("error".into(), Value::Object(error));
        Encoded::new(Value::Object(message), mapping.status)
    }

    /// Encodes questions the handler needs answered, by this revision's mechanism:
    ///
    /// - 2026-07-28: an `InputRequiredResult` (`resultType: "input_required"`, `inputRequests`,
    ///   `requestState`, server info; never cache hints). Only for `tools/call`, `prompts/get`
    ///   and `resources/read`; at least one of questions or state.
    /// - 2025-03-26 and 2024-11-05: a successful `CallToolResult` (not an error: the call is
    ///   unfinished, not failed) whose text says exactly what to send back as JSON to copy
    ///   (earlier answers included, since the client must resend them all), with the questions
    ///   repeated under `_meta[`[`INPUT_REQUIRED_META`]`]`. Only for `tools/call`.
    /// - 2025-11-25 and 2025-06-18 push each question instead ([`Adapter::pushed_request`]),
    ///   so this is an `Internal` failure there.
    pub fn encode_input_required(
        &self,
        id: Id,
        call: &Call,
        requests: &InputRequests,
        state: Option<&str>,
        ctx: &ResultContext<'_>,
    ) -> Result<Encoded, Failure> {
        let result = self.input_required_result(call, requests, state, ctx)?;
        Ok(Encoded::new(response_message(id, result), StatusCode::OK))
    }

    /// The result object of [`Adapter::encode_input_required`].
    pub fn input_required_result(
        &self,
        call: &Call,
        requests: &InputRequests,
        state: Option<&str>,
        ctx: &ResultContext<'_>,
    ) -> Result<Value, Failure> {
        match self.features().ask {
            AskMechanism::InputRequired => {
                let mut shaped = Map::new();
                for (key, request) in requests {
                    shaped.insert(key.clone(), self.input_request(key, request)?);
                }
                if !call.operation.may_require_input() {
                    return Err(Failure::internal(format!(
                        "{} cannot ask for input during {}",
                        self.version(),
                        call.method
                    )));
                }
                if requests.is_empty() && state.is_none() {
                    return Err(Failure::internal(
                        "an input-required result needs questions or request state",
                    ));
                }
                let mut body = Map::new();
                body.insert("resultType".into(), "input_required".into());
                if !shaped.is_empty() {
                    body.insert("inputRequests".into(), Value::Object(shaped));
                }
                if let Some(state) = state {
                    body.insert("requestState".into(), state.into());
                }
                self.add_server_info(&mut body, ctx);
                Ok(Value::Object(body))
            }
            AskMechanism::InArguments => {
                if call.operation != Operation::CallTool {
                    return Err(Failure::internal(format!(
                        "{} can only ask during tools/call",
                        self.version()
                    )));
                }
                let questions: Map<String, Value> = requests
                    .iter()
                    .map(|(k, r)| {
                        let mut q = Map::new();
                        q.insert("method".into(), r.kind().method().into());
                        q.insert("params".into(), Value::Object(r.params().clone()));
                        (k.clone(), Value::Object(q))
                    })
                    .collect();
                let text = instructions_text(requests, state, call.answers.as_ref());
                Ok(json!({
                    "content": [{"type": "text", "text": text}],
                    "isError": false,
                    "_meta": {
                        INPUT_REQUIRED_META: {"inputRequests": questions, "requestState": state}
                    }
                }))
            }
            AskMechanism::Push => Err(Failure::internal(format!(
                "{} pushes questions on the call's stream; use pushed_request",
                self.version()
            ))),
        }
    }

    /// The result of `initialize` (revisions with a handshake) or `server/discover`
    /// (2026-07-28), before the envelope ([`Adapter::result_body`] adds it):
    /// `protocolVersion` is this adapter's version (the negotiated one), `supportedVersions`
    /// the set's, capabilities and identity projected for the revision. On 2026-07-28 the
    /// identity goes in `_meta` (through `ctx.server_info` when encoding), not in the body.
    pub fn describe_result(
        &self,
        set: &AdapterSet,
        server_info: &Value,
        capabilities: &Value,
        instructions: Option<&str>,
    ) -> Value {
        let mut body = Map::new();
        body.insert(
            "capabilities".into(),
            self.project_server_capabilities(capabilities),
        );
        if self.has_handshake() {
            body.insert("protocolVersion".into(), self.version().into());
            body.insert(
                "serverInfo".into(),
                self.project_implementation(server_info),
            );
        } else {
            body.insert("supportedVersions".into(), json!(set.versions()));
        }
        if let Some(text) = instructions {
            body.insert("instructions".into(), text.into());
        }
        Value::Object(body)
    }

    /// A `notifications/progress` message. `message` is dropped on 2024-11-05, which has no
    /// such field.
    pub fn progress_notification(
        &self,
        token: &Id,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Value {
        let mut params = Map::new();
        params.insert("progressToken".into(), json!(token));
        params.insert("progress".into(), json!(progress));
        if let Some(total) = total {
            params.insert("total".into(), json!(total));
        }
        if let Some(text) = message.filter(|_| self.progress_message()) {
            params.insert("message".into(), text.into());
        }
        notification(method::NOTIFICATION_PROGRESS, params)
    }

    /// A `notifications/message` log message.
    pub fn log_notification(&self, level: LogLevel, data: Value, logger: Option<&str>) -> Value {
        let mut params = Map::new();
        params.insert("level".into(), level.as_str().into());
        if let Some(logger) = logger {
            params.insert("logger".into(), logger.into());
        }
        params.insert("data".into(), data);
        notification(method::NOTIFICATION_MESSAGE, params)
    }

    /// A change notification (`notifications/resources/updated`, the `*/list_changed` ones)
    /// for delivery. On 2026-07-28 it belongs to a `subscriptions/listen` stream and carries
    /// `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen request's id; elsewhere
    /// `subscription` is ignored.
    pub fn change_notification(
        &self,
        method_name: &str,
        params: Option<Map<String, Value>>,
        subscription: Option<&Id>,
    ) -> Value {
        let mut params = params.unwrap_or_default();
        if self.features().has_listen
            && let Some(id) = subscription
        {
            let meta_obj = params
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = meta_obj {
                m.insert(meta::SUBSCRIPTION_ID.into(), json!(id));
            }
        }
        notification(method_name, params)
    }
}

impl Adapter {
    /// The first message of a `subscriptions/listen` stream (2026-07-28):
    /// `notifications/subscriptions/acknowledged` with the honoured subset of the requested
    /// `notifications` filter, tagged with the listen request's id.
    pub fn subscriptions_acknowledged(&self, subscription: &Id, honoured: Value) -> Value {
        let mut params = Map::new();
        params.insert("notifications".into(), honoured);
        params.insert(
            "_meta".into(),
            json!({ meta::SUBSCRIPTION_ID: subscription }),
        );
        notification(method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, params)
    }

    /// A `notifications/cancelled` (`requestId`, optional `reason`): sent by a client on
    /// every revision, and by a 2026-07-28 server on stdio to end a listen stream.
    pub fn cancelled_notification(&self, request: &Id, reason: Option<&str>) -> Value {
        let mut params = Map::new();
        params.insert("requestId".into(), json!(request));
        if let Some(reason) = reason {
            params.insert("reason".into(), reason.into());
        }
        notification(method::NOTIFICATION_CANCELLED, params)
    }
}

/// `{"jsonrpc": "2.0", "method", "params"}`.
fn notification(method_name: &str, params: Map<String, Value>) -> Value {
    json!({"jsonrpc": "2.0", "method": method_name, "params": params})
}
