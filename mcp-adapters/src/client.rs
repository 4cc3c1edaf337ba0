//! The client side: headers, handshake, per-request `_meta`, answers, and reading results.

use std::borrow::Cow;

use mcp_schema::{HeaderAnnotationError, HeaderBinding, extract_headers};
use mcp_wire::header::{self, HeaderEncodeError};
use mcp_wire::jsonrpc::{ErrorObject, Id};
use mcp_wire::names::{headers as names, meta, method};
use serde_json::{Map, Value, json};

use crate::adapter::Adapter;
use crate::ask::{ANSWERS_ARGUMENT, Answers, Questions, STATE_ARGUMENT};
use crate::call::{ClientContext, LogLevel};
use crate::decode::target_field;
use crate::failure::codes;
use crate::features::{AskMechanism, VersionHeader};
use crate::headers::bound_value;
use crate::operation::Operation;
use crate::request::add_meta;

/// Why the client side could not build or read a message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// An argument bound to an `Mcp-Param-*` header cannot be written in a header.
    #[error("argument for header {header} cannot be sent: {source}")]
    HeaderValue {
        /// The header name.
        header: String,
        /// Why.
        source: HeaderEncodeError,
    },
    /// A result carries a `resultType` this client does not know (the spec says to treat it as
    /// invalid).
    #[error("unrecognized resultType {0:?}")]
    UnknownResultType(String),
    /// A result is not a JSON object.
    #[error("a result must be a JSON object")]
    NotAnObject,
    /// Answers cannot be sent for this method on this revision.
    #[error("{0}")]
    CannotAnswer(String),
}

/// What a result means to the client.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ResultKind {
    /// The final result (`resultType` absent or `"complete"`, or any result on revisions
    /// without questions in results).
    Complete,
    /// The server asked something; answer and call again.
    InputRequired(Questions),
}

/// The HTTP headers of one client message on one revision, values encoded for a header:
/// what [`Adapter::request_headers`] returns.
///
/// The version and the revision's method names are static texts, and `Mcp-Name` is borrowed
/// from the params when it needs no encoding, so a transport can turn them into its own header
/// values without copying them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestHeaders<'p> {
    /// `MCP-Protocol-Version` (always the revision's [`version`](Adapter::version)).
    pub protocol_version: Option<&'static str>,
    /// `Mcp-Method`: the method (static when it is one of the revision's).
    pub method: Option<Cow<'static, str>>,
    /// `Mcp-Name`: the target of the request (base64 sentinel when unsafe).
    pub name: Option<Cow<'p, str>>,
    /// The `Mcp-Param-{Name}` headers of the tool's bound arguments, as `(name, value)`.
    pub params: Vec<(String, String)>,
}

impl RequestHeaders<'_> {
    /// Every header as `(name, value)`, in the order above.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let fixed = [
            (names::PROTOCOL_VERSION, self.protocol_version),
            (names::METHOD, self.method.as_deref()),
            (names::NAME, self.name.as_deref()),
        ];
        fixed
            .into_iter()
            .filter_map(|(name, value)| Some((name, value?)))
            .chain(self.params.iter().map(|(n, v)| (n.as_str(), v.as_str())))
    }

    /// No header at all.
    pub fn is_empty(&self) -> bool {
        self.protocol_version.is_none()
            && self.method.is_none()
            && self.name.is_none()
            && self.params.is_empty()
    }
}

impl Adapter {
    /// The request that starts a conversation: `initialize` with this version, the client's
    /// capabilities and identity (projected for the revision), or `server/discover` with the
    /// per-request `_meta` on 2026-07-28. Returns `(method, params)`.
    pub fn handshake_request(&self, client: &ClientContext) -> (&'static str, Value) {
        if self.has_handshake() {
            let capabilities = client
                .capabilities
                .clone()
                .map_or_else(|| json!({}), Value::Object);
            let info = client.info.clone().unwrap_or_else(|| json!({}));
            let params = json!({
                "protocolVersion": self.version(),
                "capabilities": self.project_client_capabilities(&capabilities),
                "clientInfo": self.project_implementation(&info),
            });
            (method::INITIALIZE, params)
        } else {
            let params = self.client_params(Map::new(), client, None, None);
            (method::SERVER_DISCOVER, Value::Object(params))
        }
    }

    /// The notification that completes the handshake (`notifications/initialized`), on
    /// revisions that have one.
    pub fn handshake_complete(&self) -> Option<Value> {
        self.has_handshake()
            .then(|| json!({"jsonrpc": "2.0", "method": method::NOTIFICATION_INITIALIZED}))
    }

    /// The per-request `_meta` of 2026-07-28: protocol version, client capabilities (always,
    /// `{}` when none), client identity when known, the log level and progress token when
    /// given. On other revisions only `progressToken` is set.
    pub fn request_meta(
        &self,
        client: &ClientContext,
        log_level: Option<LogLevel>,
        progress_token: Option<&Id>,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        if self.features().per_request_meta {
            out.insert(meta::PROTOCOL_VERSION.into(), self.version().into());
            let capabilities = client
                .capabilities
                .clone()
                .map_or_else(|| json!({}), Value::Object);
            out.insert(
                meta::CLIENT_CAPABILITIES.into(),
                self.project_client_capabilities(&capabilities),
            );
            if let Some(info) = &client.info {
                out.insert(meta::CLIENT_INFO.into(), self.project_implementation(info));
            }
            if let Some(level) = log_level {
                out.insert(meta::LOG_LEVEL.into(), level.as_str().into());
            }
        }
        if let Some(token) = progress_token {
            out.insert(meta::PROGRESS_TOKEN.into(), json!(token));
        }
        out
    }

    /// Params ready to send: `params` with the [`Adapter::request_meta`] merged into its
    /// `_meta` (keys already there win; a `_meta` that is not an object is left alone).
    ///
    /// The reference form of what a client writes: [`Adapter::encode_request`] with a
    /// [`RequestMeta`](crate::RequestMeta) of the same entries gives this request without
    /// copying the params.
    pub fn client_params(
        &self,
        mut params: Map<String, Value>,
        client: &ClientContext,
        log_level: Option<LogLevel>,
        progress_token: Option<&Id>,
    ) -> Map<String, Value> {
        add_meta(
            &mut params,
            &self.request_meta(client, log_level, progress_token),
        );
        params
    }

    /// Puts every answer collected so far (and the state, if the server gave one) into the
    /// params of the retry: `inputResponses`/`requestState` on 2026-07-28 (for `tools/call`,
    /// `prompts/get`, `resources/read`), the `mcpAnswers`/`mcpState` arguments of `tools/call`
    /// on 2025-03-26 and 2024-11-05. Revisions that push questions have no retry.
    pub fn attach_answers(
        &self,
        method_name: &str,
        params: &mut Map<String, Value>,
        answers: &Answers,
        state: Option<&str>,
    ) -> Result<(), ClientError> {
        let operation = self.operation(method_name);
        match self.features().ask {
            AskMechanism::InputRequired if operation.is_some_and(|o| o.may_require_input()) => {
                params.insert(
                    "inputResponses".into(),
                    Value::Object(answers.as_map().clone()),
                );
                match state {
                    Some(s) => params.insert("requestState".into(), s.into()),
                    None => params.remove("requestState"),
                };
                Ok(())
            }
            AskMechanism::InArguments if method_name == method::TOOLS_CALL => {
                let arguments = params
                    .entry("arguments")
                    .or_insert_with(|| Value::Object(Map::new()));
                let Value::Object(arguments) = arguments else {
                    return Err(ClientError::CannotAnswer(
                        "arguments is not an object".into(),
                    ));
                };
                arguments.insert(
                    ANSWERS_ARGUMENT.into(),
                    Value::Object(answers.as_map().clone()),
                );
                arguments.insert(
                    STATE_ARGUMENT.into(),
                    state.map_or(Value::Null, Value::from),
                );
                Ok(())
            }
            _ => Err(ClientError::CannotAnswer(format!(
                "{} cannot carry answers on {method_name}",
                self.version()
            ))),
        }
    }

    /// The `x-mcp-header` bindings of a listed tool (2026-07-28; empty elsewhere). An invalid
    /// annotation makes the tool invalid: the client must leave it out of its tool list.
    pub fn tool_header_bindings(
        &self,
        tool: &Value,
    ) -> Result<Vec<HeaderBinding>, HeaderAnnotationError> {
        if !self.features().mirrors_headers {
            return Ok(Vec::new());
        }
        match tool.get("inputSchema") {
            Some(schema) => extract_headers(schema),
            None => Ok(Vec::new()),
        }
    }

    /// Whether a client message of `method_name` carries the `MCP-Protocol-Version` header
    /// (whose value is always [`version`](Self::version)).
    pub fn sends_version_header(&self, method_name: &str) -> bool {
        match self.features().version_header {
            VersionHeader::Undefined => false,
            VersionHeader::AfterHandshake => method_name != method::INITIALIZE,
            VersionHeader::EveryRequest => true,
        }
    }

    /// The HTTP headers a request needs, as `(name, value)` pairs (values already encoded):
    /// [`Adapter::request_headers`] as owned strings.
    ///
    /// - 2026-07-28: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (`tools/call`,
    ///   `prompts/get`, `resources/read`; base64 sentinel when unsafe) and one
    ///   `Mcp-Param-{Name}` per bound argument with a non-null value, when the tool's bindings
    ///   are known (`bindings: None` sends none, as a client that never saw the schema should);
    /// - 2025-06-18 and 2025-11-25: `MCP-Protocol-Version` on everything but `initialize`;
    /// - 2025-03-26 and 2024-11-05: nothing.
    ///
    /// Notifications get only the version header (the spec defines no other header rule for
    /// them).
    pub fn client_headers(
        &self,
        method_name: &str,
        params: &Map<String, Value>,
        is_notification: bool,
        bindings: Option<&[HeaderBinding]>,
    ) -> Result<Vec<(String, String)>, ClientError> {
        let headers = self.request_headers(method_name, params, is_notification, bindings)?;
        Ok(headers
            .iter()
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect())
    }

    /// The HTTP headers of a client message of `method_name` with `params` on this revision
    /// (the rules of [`Adapter::client_headers`]), with the version and the revision's method
    /// names as static texts and `Mcp-Name` borrowed from `params` when it needs no encoding.
    ///
    /// ```
    /// use mcp_adapters::{Adapter, Revision};
    /// use serde_json::json;
    ///
    /// let adapter = Adapter::new(Revision::V2026_07_28);
    /// let params = json!({"name": "add", "arguments": {"a": 1}});
    /// let headers = adapter
    ///     .request_headers("tools/call", params.as_object().unwrap(), false, None)
    ///     .unwrap();
    /// assert_eq!(headers.protocol_version, Some("2026-07-28"));
    /// assert_eq!(
    ///     headers.iter().collect::<Vec<_>>(),
    ///     [
    ///         ("MCP-Protocol-Version", "2026-07-28"),
    ///         ("Mcp-Method", "tools/call"),
    ///         ("Mcp-Name", "add"),
    ///     ]
    /// );
    /// ```
    pub fn request_headers<'p>(
        &self,
        method_name: &str,
        params: &'p Map<String, Value>,
        is_notification: bool,
        bindings: Option<&[HeaderBinding]>,
    ) -> Result<RequestHeaders<'p>, ClientError> {
        self.headers_of(
            method_name,
            || self.name_header(method_name, params),
            params.get("arguments").and_then(Value::as_object),
            is_notification,
            bindings,
        )
    }

    /// [`Adapter::request_headers`] of a `tools/call` whose params are
    /// `{"name": name, "arguments": arguments}`, read from the name and arguments without
    /// building the params.
    pub fn tool_call_headers<'p>(
        &self,
        name: &'p str,
        arguments: &Value,
        bindings: Option<&[HeaderBinding]>,
    ) -> Result<RequestHeaders<'p>, ClientError> {
        let method_name = self
            .method(Operation::CallTool)
            .unwrap_or(method::TOOLS_CALL);
        self.headers_of(
            method_name,
            || Some(header::encode_text(name)),
            arguments.as_object(),
            false,
            bindings,
        )
    }

    /// The HTTP headers of the GET that opens (or resumes) a standalone stream: the version
    /// header on the revisions that define it.
    pub fn stream_headers(&self) -> RequestHeaders<'static> {
        RequestHeaders {
            protocol_version: (self.features().version_header != VersionHeader::Undefined)
                .then(|| self.version()),
            ..RequestHeaders::default()
        }
    }

    /// The headers of a message of `method_name`, its `Mcp-Name` given by `name` and its
    /// tool arguments by `arguments`.
    fn headers_of<'p>(
        &self,
        method_name: &str,
        name: impl FnOnce() -> Option<Cow<'p, str>>,
        arguments: Option<&Map<String, Value>>,
        is_notification: bool,
        bindings: Option<&[HeaderBinding]>,
    ) -> Result<RequestHeaders<'p>, ClientError> {
        let mut out = RequestHeaders::default();
        if !self.sends_version_header(method_name) {
            return Ok(out);
        }
        out.protocol_version = Some(self.version());
        if !self.features().mirrors_headers || is_notification {
            return Ok(out);
        }
        let known = self
            .operation(method_name)
            .and_then(|op| self.method(op))
            .filter(|known| *known == method_name);
        out.method = Some(known.map_or_else(|| Cow::Owned(method_name.to_owned()), Cow::Borrowed));
        out.name = name();
        if method_name == method::TOOLS_CALL
            && let Some(bindings) = bindings
        {
            let empty = Map::new();
            let arguments = arguments.unwrap_or(&empty);
            for binding in bindings {
                let Some(value) = bound_value(binding, arguments) else {
                    continue;
                };
                let encoded =
                    header::encode_argument(value).map_err(|source| ClientError::HeaderValue {
                        header: binding.header_name(),
                        source,
                    })?;
                if let Some(text) = encoded {
                    out.params.push((binding.header_name(), text));
                }
            }
        }
        Ok(out)
    }

    /// The `Mcp-Name` value of a request on a revision that mirrors headers, encoded (base64
    /// sentinel when unsafe): the target (`name`, or `uri`) of `tools/call`, `prompts/get`,
    /// `resources/read` and the other operations that have one, when it is a string. `None` for
    /// other methods; [`client_headers`](Self::client_headers) sends it only on 2026-07-28.
    /// The Tasks extension's `tasks/get`, `tasks/update` and `tasks/cancel` are routed by
    /// their `taskId` (SEP-2663).
    pub fn name_header<'p>(
        &self,
        method_name: &str,
        params: &'p Map<String, Value>,
    ) -> Option<Cow<'p, str>> {
        let field = match self.operation(method_name) {
            Some(op) if op.has_target() => target_field(op),
            None if crate::decode::TASK_ROUTED_METHODS.contains(&method_name) => "taskId",
            _ => return None,
        };
        let name = params.get(field).and_then(Value::as_str)?;
        Some(header::encode_text(name))
    }

    /// Reads a result: complete, or questions to answer (MRTR `input_required`, or the
    /// `_meta` questions of a tool result on the revisions that ask in arguments). On
    /// 2026-07-28 an absent `resultType` means complete (a legacy server) and an unknown one
    /// is an error.
    pub fn read_result(&self, result: &Value) -> Result<ResultKind, ClientError> {
        if !result.is_object() {
            return Err(ClientError::NotAnObject);
        }
        if self.features().result_envelope {
            match result.get("resultType").and_then(Value::as_str) {
                None | Some("complete") => return Ok(ResultKind::Complete),
                Some("input_required") => {}
                Some(other) => return Err(ClientError::UnknownResultType(other.to_owned())),
            }
        }
        Ok(self
            .read_questions(result)
            .map_or(ResultKind::Complete, ResultKind::InputRequired))
    }

    /// The client's JSON-RPC response to a pushed request: the result, or an error (which the
    /// server reads as a refusal).
    pub fn answer_pushed(&self, id: Id, answer: Result<Value, ErrorObject>) -> Value {
        match answer {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        }
    }
}

/// Dual-era probing: the JSON-RPC error code identifies a server of the modern era
/// (2026-07-28's `-32020`, `-32021`, `-32022`). Never decide on one code alone: combine with
/// the body shape, as the spec asks.
pub fn is_modern_error(code: i64) -> bool {
    matches!(
        code,
        codes::HEADER_MISMATCH
            | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
            | codes::UNSUPPORTED_PROTOCOL_VERSION
    )
}
