//! Decoding a body (already parsed once by `mcp_wire::jsonrpc`) into normalized items.
//!
//! # Validation order
//!
//! The spec leaves the order open when several checks fail. This crate uses one order, chosen
//! so that header problems (which an intermediary may have routed on) are reported before
//! anything that depends on trusting the body:
//!
//! 1. the body is JSON (`-32700`, 400) and a valid JSON-RPC message or batch (`-32600`, 400);
//!    a batch on a revision without batches, or `initialize` inside one (`-32600`, 400);
//! 2. revision selection ([`AdapterSet::select`](crate::AdapterSet::select)): header and
//!    `_meta` versions agree (`-32020`), the version is served (`-32022`), a modern-only
//!    server gets a version header (`-32020`);
//! 3. on 2026-07-28 over HTTP ([`Adapter::decode_http`]): `MCP-Protocol-Version` present and
//!    equal to `_meta` (again, for pinned requests), then `Mcp-Method`, then `Mcp-Name` when the
//!    body has a string `name`/`uri` (`-32020`, 400);
//! 4. on 2026-07-28: the required `_meta` fields, protocol version and client capabilities
//!    (`-32602`, 400), and the `_meta` version is this revision's (`-32022`);
//! 5. the method exists on the revision (`-32601`; 404 on 2026-07-28);
//! 6. the params of the method (`-32602`): `name`/`uri`, `arguments`, `cursor`, log level,
//!    `inputResponses`/`requestState`, `mcpAnswers`/`mcpState`;
//! 7. on 2026-07-28 over HTTP, `Mcp-Param-*` mirror the named tool's `x-mcp-header`
//!    arguments: missing, extra, malformed or different (`-32020`, 400);
//! 8. then, in the server: unknown tool, prompt or resource, and when a handler asks,
//!    the client capability ([`Adapter::check_ask`], `-32021` on 2026-07-28).

use std::borrow::Cow;

use mcp_wire::jsonrpc::{DecodeError, Decoded, Id, Message};
use mcp_wire::names::{meta, method};
use serde_json::{Map, Value};

use crate::adapter::Adapter;
use crate::ask::{ANSWERS_ARGUMENT, Answers, STATE_ARGUMENT};
use crate::call::{Call, ClientContext, Incoming, Invalid, LogLevel, Reply, id_of};
use crate::failure::Failure;
use crate::headers::{self, HeaderSource, Lookup, NoTools, ToolHeaders};
use crate::operation::Operation;
use crate::revision::Revision;
use crate::revision::method_map;
use crate::select::{AdapterSet, Hint, Rejected, Selected, SelectionInput};

/// What [`Adapter::decode`] found in a body: one item, or the items of a JSON-RPC batch.
///
/// ```
/// use mcp_adapters::{AdapterSet, DecodedBody, Incoming};
/// use mcp_wire::jsonrpc;
///
/// let adapter = AdapterSet::all().by_version("2025-11-25").unwrap();
/// let body = adapter.decode(jsonrpc::decode(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#));
/// assert!(!body.is_batch());
/// assert!(matches!(body.items(), [Incoming::Call(_)]));
///
/// let batch = adapter.decode(jsonrpc::decode(br#"[{"jsonrpc":"2.0","method":"ping"}]"#));
/// // 2025-11-25 has no batches: one item, the failure to answer with.
/// assert!(matches!(batch, DecodedBody::Single(Incoming::Invalid(_))));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum DecodedBody {
    /// A single message (held inline: a body of one message allocates no list).
    Single(Incoming),
    /// A JSON-RPC batch, one entry per item: the answer is a JSON array of the responses, in
    /// item order (HTTP 200), or nothing (HTTP 202) when no item needs an answer.
    Batch(Vec<Incoming>),
}

impl DecodedBody {
    /// The body was a JSON-RPC batch.
    pub fn is_batch(&self) -> bool {
        matches!(self, Self::Batch(_))
    }

    /// The items in order (one for a single message).
    pub fn items(&self) -> &[Incoming] {
        match self {
            Self::Single(item) => std::slice::from_ref(item),
            Self::Batch(items) => items,
        }
    }

    /// The items in order, to change in place (a transport adding what its framing carried).
    pub fn items_mut(&mut self) -> &mut [Incoming] {
        match self {
            Self::Single(item) => std::slice::from_mut(item),
            Self::Batch(items) => items,
        }
    }

    /// The items in order, by value.
    pub fn into_items(self) -> std::vec::IntoIter<Incoming> {
        match self {
            Self::Single(item) => vec![item].into_iter(),
            Self::Batch(items) => items.into_iter(),
        }
    }
}

impl<'a> SelectionInput<'a> {
    /// The version hints of a decoded body: the `_meta` protocol version of the first message
    /// that has params, and the requested version when that message is `initialize`.
    /// Header, pin and session are left unset.
    pub fn from_body(body: &'a Decoded) -> Self {
        let first = match body {
            Decoded::Single(Ok(message)) => Some(message),
            Decoded::Batch(items) => items.iter().find_map(|i| i.as_ref().ok()),
            Decoded::Single(Err(_)) => None,
        };
        let mut input = Self::default();
        let Some(message) = first else {
            return input;
        };
        let params = match message {
            Message::Request(r) => r.params.as_ref(),
            Message::Notification(n) => n.params.as_ref(),
            Message::Response(_) => None,
        };
        if let Some(version) = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta::PROTOCOL_VERSION))
        {
            input.meta = version.as_str().map_or(Hint::Malformed, Hint::Value);
        }
        if message.method() == Some(method::INITIALIZE) {
            input.initialize = Some(match params.and_then(|p| p.get("protocolVersion")) {
                None => Hint::Absent,
                Some(v) => v.as_str().map_or(Hint::Malformed, Hint::Value),
            });
        }
        input
    }

    /// Sets [`header`](Self::header) from the request's `MCP-Protocol-Version` header.
    #[must_use]
    pub fn with_headers(mut self, headers: &'a (impl HeaderSource + ?Sized)) -> Self {
        self.header = match headers::PROTOCOL_VERSION.lookup(headers) {
            Lookup::Missing => Hint::Absent,
            Lookup::One(raw) => std::str::from_utf8(raw).map_or(Hint::Malformed, Hint::Value),
            Lookup::Repeated => Hint::Malformed,
        };
        self
    }
}

impl AdapterSet {
    /// Selection for a Streamable HTTP POST: a body that is not JSON is refused first
    /// (`-32700`), then [`AdapterSet::select`] runs on the body's hints, the
    /// `MCP-Protocol-Version` header, the operator's `pin` and the session's stored version.
    ///
    /// The parse error is rendered by the revision the request names where it can be read
    /// (the pin, else the header, else the session's; no header at all means 2025-03-26 when
    /// served), else by the newest: so the error has the shape that revision's schema gives it
    /// (`"id": null` up to 2025-06-18, where `id` is required; no `id` from 2025-11-25, where it
    /// is optional and cannot be null).
    pub fn select_http(
        &self,
        body: &Decoded,
        headers: &(impl HeaderSource + ?Sized),
        pin: Option<&str>,
        session: Option<&str>,
    ) -> Result<Selected, Rejected> {
        if let Decoded::Single(Err(DecodeError::Parse { detail })) = body {
            let header = SelectionInput::default().with_headers(headers).header;
            let named = match (pin, header, session) {
                (Some(version), _, _) | (None, Hint::Value(version), _) => self.by_version(version),
                (None, Hint::Absent, Some(version)) => self.by_version(version),
                (None, Hint::Absent, None) => self.get(Revision::ASSUMED),
                (None, Hint::Malformed, _) => None,
            };
            return Err(Rejected {
                adapter: named.unwrap_or_else(|| self.newest()),
                failure: Failure::parse(detail),
            });
        }
        let mut input = SelectionInput::from_body(body).with_headers(headers);
        input.pin = pin;
        input.session = session;
        self.select(&input)
    }
}

/// Where the HTTP checks get their inputs.
struct Http<'a, H: ?Sized, T: ?Sized> {
    headers: &'a H,
    tools: &'a T,
}

impl Adapter {
    /// Decodes a body received without HTTP headers (stdio, or HTTP+SSE message POSTs): no
    /// header checks run. See the module docs for the validation order.
    pub fn decode(&self, body: Decoded) -> DecodedBody {
        self.decode_inner::<[(&str, &str)], NoTools>(body, None)
    }

    /// Decodes a Streamable HTTP POST body and runs this revision's header checks (only
    /// 2026-07-28 has any). `tools` gives the `x-mcp-header` bindings of the tool a
    /// `tools/call` names, for the `Mcp-Param-*` check.
    pub fn decode_http<H, T>(&self, body: Decoded, headers: &H, tools: &T) -> DecodedBody
    where
        H: HeaderSource + ?Sized,
        T: ToolHeaders + ?Sized,
    {
        self.decode_inner(body, Some(Http { headers, tools }))
    }

    /// Decodes one message (no header checks).
    pub fn decode_message(&self, message: Message) -> Incoming {
        self.decode_one::<[(&str, &str)], NoTools>(message, None, false)
    }

    fn decode_inner<H, T>(&self, body: Decoded, http: Option<Http<'_, H, T>>) -> DecodedBody
    where
        H: HeaderSource + ?Sized,
        T: ToolHeaders + ?Sized,
    {
        match body {
            Decoded::Single(Ok(message)) => {
                DecodedBody::Single(self.decode_one(message, http.as_ref(), false))
            }
            Decoded::Single(Err(error)) => DecodedBody::Single(invalid_envelope(&error)),
            Decoded::Batch(_) if !self.allows_batch() => {
                DecodedBody::Single(Incoming::Invalid(Invalid {
                    id: None,
                    respond: true,
                    failure: Failure::invalid_request(format!(
                        "JSON-RPC batches are not supported on {}",
                        self.version()
                    )),
                }))
            }
            Decoded::Batch(items) => DecodedBody::Batch(
                items
                    .into_iter()
                    .map(|item| match item {
                        Ok(message) => self.decode_one(message, http.as_ref(), true),
                        Err(error) => invalid_envelope(&error),
                    })
                    .collect(),
            ),
        }
    }

    fn decode_one<H, T>(
        &self,
        message: Message,
        http: Option<&Http<'_, H, T>>,
        in_batch: bool,
    ) -> Incoming
    where
        H: HeaderSource + ?Sized,
        T: ToolHeaders + ?Sized,
    {
        match message {
            Message::Response(response) => match (response.id, self.has_handshake()) {
                (Some(id), true) => Incoming::Reply(Reply {
                    id,
                    outcome: response.outcome,
                }),
                (id, has_handshake) => Incoming::Invalid(Invalid {
                    id,
                    respond: false,
                    failure: Failure::invalid_request(if has_handshake {
                        "a response without an id cannot be routed".to_owned()
                    } else {
                        format!("clients must not send responses on {}", self.version())
                    }),
                }),
            },
            Message::Request(request) => {
                if in_batch && request.method == method::INITIALIZE {
                    return Incoming::Invalid(Invalid {
                        id: Some(request.id),
                        respond: true,
                        failure: Failure::invalid_request("initialize must not be part of a batch"),
                    });
                }
                self.decode_call(Some(request.id), request.method, request.params, http)
            }
            Message::Notification(notification) => {
                self.decode_call(None, notification.method, notification.params, http)
            }
        }
    }

    /// A request (`id` is `Some`) or notification as a [`Call`], or as the failure to answer
    /// with (carrying the id back).
    fn decode_call<H, T>(
        &self,
        id: Option<Id>,
        method: Cow<'static, str>,
        params: Option<Value>,
        http: Option<&Http<'_, H, T>>,
    ) -> Incoming
    where
        H: HeaderSource + ?Sized,
        T: ToolHeaders + ?Sized,
    {
        // Built in place: the id and method move in once, and come back out on failure.
        let mut call = Box::new(Call::new(Operation::Notification, id, method));
        match self.fill_call(&mut call, params, http) {
            Ok(()) => Incoming::Call(call),
            Err(failure) => {
                let id = call.id.take();
                Incoming::Invalid(Invalid {
                    respond: id.is_some(),
                    id,
                    failure,
                })
            }
        }
    }

    /// Fills `call` (its id and method set) from `params`; see the module docs for the order.
    fn fill_call<H, T>(
        &self,
        call: &mut Call,
        params: Option<Value>,
        http: Option<&Http<'_, H, T>>,
    ) -> Result<(), Failure>
    where
        H: HeaderSource + ?Sized,
        T: ToolHeaders + ?Sized,
    {
        let features = self.features();
        let is_request = call.id.is_some();
        let method = &*call.method;
        let mut params = match params {
            None => Map::new(),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(Failure::invalid_params("params must be an object")),
        };
        let known = self.operation(method);

        // 3. Header mirroring (2026-07-28 over HTTP, requests only).
        if let Some(http) = http.filter(|_| features.mirrors_headers && is_request) {
            let meta_version = params
                .get("_meta")
                .and_then(|m| m.get(meta::PROTOCOL_VERSION))
                .and_then(Value::as_str);
            headers::check_version(http.headers, meta_version)?;
            headers::check_method(http.headers, method)?;
            if let Some(op) = known.filter(|op| op.has_target())
                && let Some(name) = params.get(target_field(op)).and_then(Value::as_str)
            {
                headers::check_name(http.headers, name)?;
            } else if known.is_none()
                && TASK_ROUTED_METHODS.contains(&method)
                && !matches!(headers::NAME.lookup(http.headers), Lookup::Missing)
                && let Some(task_id) = params.get("taskId").and_then(Value::as_str)
            {
                // The Tasks extension (SEP-2663) routes its methods by `Mcp-Name: <taskId>`:
                // a header that is there must match. Clients that send none are served.
                headers::check_name(http.headers, task_id)?;
            }
        }

        // 4. Required `_meta` (2026-07-28 requests).
        let mut client = ClientContext::default();
        let mut protocol_version = None;
        let mut log_level = None;
        if features.per_request_meta && is_request {
            let meta_obj = params
                .get_mut("_meta")
                .and_then(Value::as_object_mut)
                .ok_or_else(|| Failure::missing_meta("missing params._meta"))?;
            // Moved out of `_meta`, not copied: `call.protocol_version` and `call.client` are
            // where they are read. One pass takes them (and reads the log level); the checks
            // then run in their order.
            let mut version = None;
            let mut capabilities = None;
            let mut level = None;
            meta_obj.retain(|key, value| match key.as_str() {
                meta::PROTOCOL_VERSION => {
                    version = Some(value.take());
                    false
                }
                meta::CLIENT_CAPABILITIES => {
                    capabilities = Some(value.take());
                    false
                }
                meta::CLIENT_INFO if value.is_object() => {
                    client.info = Some(value.take());
                    false
                }
                meta::LOG_LEVEL => {
                    level = Some(parse_level(value));
                    true
                }
                _ => true,
            });
            let version = match version {
                Some(Value::String(v)) => v,
                Some(_) => {
                    return Err(Failure::missing_meta(format!(
                        "_meta {:?} must be a string",
                        meta::PROTOCOL_VERSION
                    )));
                }
                None => {
                    return Err(Failure::missing_meta(format!(
                        "missing _meta {:?}",
                        meta::PROTOCOL_VERSION
                    )));
                }
            };
            if version != self.version() {
                return Err(Failure::unsupported_version(&version, &[self.revision()]));
            }
            protocol_version = Some(version);
            client.capabilities = match capabilities {
                Some(Value::Object(c)) => Some(c),
                Some(_) => {
                    return Err(Failure::missing_meta(format!(
                        "_meta {:?} must be an object",
                        meta::CLIENT_CAPABILITIES
                    )));
                }
                None => {
                    return Err(Failure::missing_meta(format!(
                        "missing _meta {:?}",
                        meta::CLIENT_CAPABILITIES
                    )));
                }
            };
            if let Some(level) = level {
                log_level = Some(level?);
            }
        }

        // 5. The method.
        let operation = match known {
            Some(op) if op.is_notification() != is_request => op,
            Some(_) | None if !is_request => Operation::Notification,
            Some(_) => {
                return Err(Failure::invalid_request(format!(
                    "{method} is a notification, not a request"
                )));
            }
            None if features.has_extensions() && !is_core_method(method) => Operation::Extension,
            None => return Err(Failure::unknown_method(method)),
        };

        // 6. Params.
        call.operation = operation;
        call.client = client;
        call.protocol_version = protocol_version;
        call.log_level = log_level;
        call.progress_token = params
            .get("_meta")
            .and_then(|m| m.get(meta::PROGRESS_TOKEN))
            .and_then(id_of);
        // What typed fields hold moves out of `params` in one pass that consumes the map:
        // the keys and values are moved (never copied), what is left is rebuilt in order, and
        // a `tools/call` with only `name` and `arguments` leaves an empty map that never
        // allocated (cheaper than searching the tree once per member and rebalancing it).
        let takes_arguments = matches!(operation, Operation::CallTool | Operation::GetPrompt);
        let takes_answers = features.can_ask() && operation.may_require_input();
        let target_member = match operation {
            Operation::CallTool | Operation::GetPrompt => Some("name"),
            Operation::ReadResource | Operation::Subscribe | Operation::Unsubscribe => Some("uri"),
            _ => None,
        };
        let mut target = None;
        let mut arguments = None;
        let mut input_responses = None;
        let mut request_state = None;
        if !params.is_empty() && (target_member.is_some() || takes_arguments || takes_answers) {
            let mut rest = Map::new();
            for (key, value) in params {
                let slot = match key.as_str() {
                    k if Some(k) == target_member => &mut target,
                    "arguments" if takes_arguments => &mut arguments,
                    "inputResponses" if takes_answers => &mut input_responses,
                    "requestState" if takes_answers => &mut request_state,
                    _ => {
                        rest.insert(key, value);
                        continue;
                    }
                };
                *slot = Some(value);
            }
            params = rest;
        }
        match operation {
            Operation::CallTool | Operation::GetPrompt => {
                call.target = Some(string_member("name", target)?);
                call.arguments = match arguments {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(a)) => a,
                    Some(_) => return Err(Failure::invalid_params("arguments must be an object")),
                };
            }
            Operation::ReadResource | Operation::Subscribe | Operation::Unsubscribe => {
                call.target = Some(string_member("uri", target)?);
            }
            Operation::ListTools
            | Operation::ListPrompts
            | Operation::ListResources
            | Operation::ListResourceTemplates => {
                call.cursor = optional_string(&params, "cursor")?;
            }
            Operation::Describe if features.has_handshake => {
                let version = required_string(&params, "protocolVersion")?;
                call.protocol_version = Some(version);
                call.client.capabilities = match params.get("capabilities") {
                    None | Some(Value::Null) => Some(Map::new()),
                    Some(Value::Object(c)) => Some(c.clone()),
                    Some(_) => {
                        return Err(Failure::invalid_params("capabilities must be an object"));
                    }
                };
                call.client.info = params.get("clientInfo").filter(|v| v.is_object()).cloned();
            }
            Operation::SetLogLevel => {
                let level = params
                    .get("level")
                    .ok_or_else(|| Failure::invalid_params("missing params.level"))?;
                call.log_level = Some(parse_level(level)?);
            }
            _ => {}
        }
        if takes_answers {
            call.answers = match input_responses {
                None | Some(Value::Null) => None,
                Some(Value::Object(a)) => Some(Answers::from_map(a)),
                Some(_) => return Err(Failure::invalid_params("inputResponses must be an object")),
            };
            call.request_state = match request_state {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s),
                Some(_) => return Err(Failure::invalid_params("requestState must be a string")),
            };
        }
        if features.asks_in_arguments() && operation == Operation::CallTool {
            call.answers = match call.arguments.remove(ANSWERS_ARGUMENT) {
                None | Some(Value::Null) => None,
                Some(Value::Object(a)) => Some(Answers::from_map(a)),
                Some(_) => {
                    return Err(Failure::invalid_params(format!(
                        "{ANSWERS_ARGUMENT} must be an object"
                    )));
                }
            };
            call.request_state = match call.arguments.remove(STATE_ARGUMENT) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s),
                Some(_) => {
                    return Err(Failure::invalid_params(format!(
                        "{STATE_ARGUMENT} must be a string"
                    )));
                }
            };
        }
        call.params = params;

        // 7. `Mcp-Param-*`.
        if let Some(http) = http.filter(|_| features.mirrors_headers && is_request)
            && operation == Operation::CallTool
            && let Some(bindings) = call
                .target
                .as_deref()
                .and_then(|name| http.tools.header_bindings(name))
        {
            headers::check_params(http.headers, bindings, &call.arguments)?;
        }
        Ok(())
    }
}

/// The Tasks extension's methods that carry `Mcp-Name: <taskId>` on 2026-07-28 (SEP-2663).
pub(crate) const TASK_ROUTED_METHODS: [&str; 3] = [
    method::TASKS_GET,
    method::TASKS_UPDATE,
    method::TASKS_CANCEL,
];

/// The params field an operation's target is in.
pub(crate) fn target_field(operation: Operation) -> &'static str {
    match operation {
        Operation::ReadResource | Operation::Subscribe | Operation::Unsubscribe => "uri",
        _ => "name",
    }
}

/// A method some revision defines (so it is not an extension method on 2026-07-28).
/// Whether some revision defines `name` as a method (or it is a `notifications/` method):
/// what an extension may not take as its own.
pub fn is_core_method(name: &str) -> bool {
    Revision::ALL
        .iter()
        .any(|r| method_map(*r).iter().any(|(m, _)| *m == name))
        || name.starts_with("notifications/")
}

fn invalid_envelope(error: &DecodeError) -> Incoming {
    let failure = match error {
        DecodeError::Parse { detail } => Failure::parse(detail),
        other => Failure::invalid_request(other.to_error_object().message),
    };
    Incoming::Invalid(Invalid {
        id: error.id().cloned(),
        respond: true,
        failure,
    })
}

fn required_string(params: &Map<String, Value>, field: &str) -> Result<String, Failure> {
    match params.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        other => Err(bad_string(field, other.is_some())),
    }
}

/// The member `field` of params, already moved out of them: it must be a string.
fn string_member(field: &str, value: Option<Value>) -> Result<String, Failure> {
    match value {
        Some(Value::String(s)) => Ok(s),
        other => Err(bad_string(field, other.is_some())),
    }
}

fn optional_string(params: &Map<String, Value>, field: &str) -> Result<Option<String>, Failure> {
    match params.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad_string(field, true)),
    }
}

/// The failure for the string member `field` of params: `present` but not a string, or
/// missing.
fn bad_string(field: &str, present: bool) -> Failure {
    Failure::invalid_params(if present {
        format!("params.{field} must be a string")
    } else {
        format!("missing params.{field}")
    })
}

fn parse_level(value: &Value) -> Result<LogLevel, Failure> {
    value
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Failure::invalid_params(format!("invalid log level {value}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn id_of_accepts_what_the_id_deserializer_accepts() {
        for value in [
            json!(3),
            json!(-3),
            json!(0),
            json!(i64::MAX),
            json!(i64::MIN),
            json!(u64::MAX),
            json!(1.0),
            json!(2.5),
            json!("t"),
            json!(""),
            json!(null),
            json!(true),
            json!([1]),
            json!({"a": 1}),
        ] {
            assert_eq!(
                id_of(&value),
                serde_json::from_value::<Id>(value.clone()).ok(),
                "{value}"
            );
        }
    }
}
