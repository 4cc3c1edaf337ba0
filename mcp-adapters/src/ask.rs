//! Asking the client something mid-call: the three encodings, and reading the answers.
//!
//! | Mechanism | Revisions | Question | Answer |
//! | --- | --- | --- | --- |
//! | [`AskMechanism::InputRequired`](crate::AskMechanism::InputRequired) (MRTR) | 2026-07-28 | the result: `resultType: "input_required"`, `inputRequests`, `requestState` | the client calls again with `inputResponses` and `requestState` |
//! | [`AskMechanism::Push`](crate::AskMechanism::Push) | 2025-11-25, 2025-06-18 | a JSON-RPC request on the call's stream ([`Adapter::pushed_request`]) | a JSON-RPC response POSTed separately ([`Incoming::Reply`](crate::Incoming::Reply)) |
//! | [`AskMechanism::InArguments`](crate::AskMechanism::InArguments) | 2025-03-26, 2024-11-05 | an ordinary tool result whose text says what to send back, with the questions repeated in `_meta[`[`INPUT_REQUIRED_META`]`]` | the client calls the tool again with the arguments [`ANSWERS_ARGUMENT`] and [`STATE_ARGUMENT`] |
//!
//! The client re-sends every answer collected so far on each attempt, because the handler
//! starts over and would otherwise ask the same question again.

use std::collections::BTreeMap;

use mcp_wire::jsonrpc::{ErrorObject, Id};
use serde_json::{Map, Value, json};

use crate::adapter::Adapter;
use crate::context::ClientContext;
use crate::failure::Failure;
use crate::features::AskMechanism;
use crate::operation::{ClientRequestKind, Operation};

/// The `_meta` key under which a 2025-03-26 / 2024-11-05 tool result repeats its questions:
/// `{"inputRequests": {key: {method, params}}, "requestState": string | null}`.
///
/// No revision defines such a key, so it is named for this package (reverse-DNS, and outside
/// the prefixes 2026-07-28 reserves: the second label is not `mcp` or `modelcontextprotocol`).
pub const INPUT_REQUIRED_META: &str = "rs.mcp-adapters/inputRequired";

/// The tool argument that carries the answers on 2025-03-26 and 2024-11-05.
pub const ANSWERS_ARGUMENT: &str = "mcpAnswers";

/// The tool argument that carries the opaque request state on 2025-03-26 and 2024-11-05.
pub const STATE_ARGUMENT: &str = "mcpState";

/// One question for the client: a server-to-client request without a JSON-RPC id
/// (`{method, params}`, the shape of a 2026-07-28 `InputRequest`).
#[derive(Clone, Debug, PartialEq)]
pub struct InputRequest {
    kind: ClientRequestKind,
    params: Map<String, Value>,
}

/// Questions keyed by a server-assigned key, in key order.
pub type InputRequests = BTreeMap<String, InputRequest>;

impl InputRequest {
    /// A request of `kind` with `params` as given.
    pub fn new(kind: ClientRequestKind, params: Map<String, Value>) -> Self {
        Self { kind, params }
    }

    /// A form-mode `elicitation/create`: `message` and a flat `requestedSchema`
    /// (`{"type": "object", "properties": {...}}`; `Value::Null` means "no fields").
    pub fn elicit(message: impl Into<String>, requested_schema: Value) -> Self {
        let schema = if requested_schema.is_null() {
            json!({"type": "object", "properties": {}})
        } else {
            requested_schema
        };
        let mut params = Map::new();
        params.insert("mode".into(), "form".into());
        params.insert("message".into(), Value::String(message.into()));
        params.insert("requestedSchema".into(), schema);
        Self::new(ClientRequestKind::Elicit, params)
    }

    /// A URL-mode `elicitation/create` (2025-11-25 and later).
    pub fn elicit_url(message: impl Into<String>, url: impl Into<String>) -> Self {
        let mut params = Map::new();
        params.insert("mode".into(), "url".into());
        params.insert("message".into(), Value::String(message.into()));
        params.insert("url".into(), Value::String(url.into()));
        Self::new(ClientRequestKind::Elicit, params)
    }

    /// A `sampling/createMessage` with the given params (`messages`, `maxTokens`, ...).
    pub fn create_message(params: Map<String, Value>) -> Self {
        Self::new(ClientRequestKind::CreateMessage, params)
    }

    /// A `roots/list`.
    pub fn list_roots() -> Self {
        Self::new(ClientRequestKind::ListRoots, Map::new())
    }

    /// Reads `{method, params}` (a `jsonrpc`/`id` member, if any, is ignored). `None` when
    /// the method is not one of the three, or `params` is not an object.
    pub fn from_value(value: &Value) -> Option<Self> {
        let kind = ClientRequestKind::from_method(value.get("method")?.as_str()?)?;
        let params = match value.get("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(_) => return None,
        };
        Some(Self { kind, params })
    }

    /// What is asked.
    pub fn kind(&self) -> ClientRequestKind {
        self.kind
    }

    /// The params as built (revision-neutral; see [`Adapter::input_request`]).
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// The human-readable question (`params.message` of an elicitation).
    pub fn message(&self) -> Option<&str> {
        self.params.get("message").and_then(Value::as_str)
    }

    /// A URL-mode elicitation.
    pub fn is_url_elicitation(&self) -> bool {
        self.kind == ClientRequestKind::Elicit
            && self.params.get("mode").and_then(Value::as_str) == Some("url")
    }

    /// The `ClientCapabilities` the client must have declared to be asked this.
    pub fn required_capabilities(&self) -> Value {
        match self.kind {
            ClientRequestKind::Elicit if self.is_url_elicitation() => {
                json!({"elicitation": {"url": {}}})
            }
            ClientRequestKind::Elicit => json!({"elicitation": {"form": {}}}),
            ClientRequestKind::CreateMessage => json!({"sampling": {}}),
            ClientRequestKind::ListRoots => json!({"roots": {}}),
        }
    }

    /// The client declared what this question needs.
    pub fn client_can_answer(&self, client: &ClientContext) -> bool {
        match self.kind {
            ClientRequestKind::Elicit if self.is_url_elicitation() => client.can_elicit_url(),
            ClientRequestKind::Elicit => client.can_elicit_form(),
            other => client.has(other.capability()),
        }
    }
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElicitAction {
    /// The user accepted and (for form mode) filled in the content.
    Accept,
    /// The user explicitly declined.
    Decline,
    /// The user dismissed the question, or the client could not ask.
    Cancel,
}

/// An answer to an elicitation, read defensively.
#[derive(Clone, Debug, PartialEq)]
pub struct ElicitAnswer {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted fields (empty unless accepted).
    pub content: Map<String, Value>,
}

impl ElicitAnswer {
    /// Reads an `ElicitResult`. Only `"action": "accept"` accepts; a missing, unknown or
    /// non-string action is a decline, and anything that is not an object is a decline too.
    pub fn from_result(result: &Value) -> Self {
        let action = match result.get("action").and_then(Value::as_str) {
            Some("accept") => ElicitAction::Accept,
            Some("cancel") => ElicitAction::Cancel,
            _ => ElicitAction::Decline,
        };
        let content = match (action, result.get("content")) {
            (ElicitAction::Accept, Some(Value::Object(c))) => c.clone(),
            _ => Map::new(),
        };
        Self { action, content }
    }

    /// Reads the client's reply to a pushed `elicitation/create`. A JSON-RPC error reply is a
    /// refusal ([`ElicitAction::Cancel`]), never an acceptance.
    pub fn from_reply(reply: &Result<Value, ErrorObject>) -> Self {
        match reply {
            Ok(result) => Self::from_result(result),
            Err(_) => Self {
                action: ElicitAction::Cancel,
                content: Map::new(),
            },
        }
    }

    /// The user accepted.
    pub fn accepted(&self) -> bool {
        self.action == ElicitAction::Accept
    }
}

/// Answers to earlier questions, keyed like the questions: MRTR `inputResponses`, the
/// `mcpAnswers` argument, or replies to pushed requests collected by the server.
///
/// Values are kept raw (an `ElicitResult`, a `CreateMessageResult` or a `ListRootsResult`)
/// since the decoder does not know what was asked; read them with
/// [`Answers::elicitation`] or [`Answers::get`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answers(Map<String, Value>);

impl Answers {
    /// No answers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers from a JSON object.
    pub fn from_map(map: Map<String, Value>) -> Self {
        Self(map)
    }

    /// The raw answer to `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// `key` was answered.
    pub fn contains(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// The answer to `key` read as an elicitation answer (see [`ElicitAnswer::from_result`]).
    pub fn elicitation(&self, key: &str) -> Option<ElicitAnswer> {
        self.get(key).map(ElicitAnswer::from_result)
    }

    /// Records an answer (client side, or a server collecting pushed replies). A JSON-RPC
    /// error reply is recorded as `{"action": "cancel"}`.
    pub fn insert(&mut self, key: impl Into<String>, answer: Result<Value, ErrorObject>) {
        let value = answer.unwrap_or_else(|_| json!({"action": "cancel"}));
        self.0.insert(key.into(), value);
    }

    /// The number of answers.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No answers.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The answers as a JSON object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The answers as a JSON object, by value.
    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }
}

/// Questions read out of a result by a client, whatever mechanism the server used.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Questions {
    /// The questions, by key.
    pub requests: InputRequests,
    /// The opaque state to send back unchanged, if the server gave one.
    pub state: Option<String>,
}

impl Adapter {
    /// The question shaped for this revision (`{method, params}`): the elicitation `mode` is
    /// dropped on 2025-06-18 (which has no modes), and a URL-mode elicitation gets its
    /// `elicitationId` (= `key`) on 2025-11-25, where it is required. A question the revision
    /// cannot carry (URL mode before 2025-11-25, any elicitation before 2025-06-18) is an
    /// `Internal` failure: the caller should have checked [`Adapter::check_ask`].
    pub fn input_request(&self, key: &str, request: &InputRequest) -> Result<Value, Failure> {
        let f = self.features();
        let mut params = request.params.clone();
        if request.kind == ClientRequestKind::Elicit {
            if !f.has_elicitation || (request.is_url_elicitation() && !f.url_elicitation) {
                return Err(Failure::internal(format!(
                    "{} cannot carry this elicitation",
                    self.version()
                )));
            }
            if !f.url_elicitation {
                params.remove("mode");
            } else if request.is_url_elicitation() && !f.per_request_meta {
                params
                    .entry("elicitationId")
                    .or_insert_with(|| Value::String(key.to_owned()));
            }
        }
        let mut out = Map::new();
        out.insert("method".into(), request.kind.method().into());
        if !params.is_empty() || request.kind != ClientRequestKind::ListRoots {
            out.insert("params".into(), Value::Object(params));
        }
        Ok(Value::Object(out))
    }

    /// Whether this revision can put `request` to `client` during `operation`, and if not, why:
    ///
    /// - `MissingCapability` (`-32021` with `requiredCapabilities` on 2026-07-28) when the
    ///   client did not declare what the question needs (not checked when asking in
    ///   arguments: that convention needs no declaration);
    /// - `Internal` when the revision has no way to ask during this operation (only
    ///   `tools/call` can ask in arguments; MRTR only on `tools/call`, `prompts/get`,
    ///   `resources/read`) or cannot express the question.
    pub fn check_ask(
        &self,
        operation: Operation,
        request: &InputRequest,
        client: &ClientContext,
    ) -> Result<(), Failure> {
        let allowed = match self.features().ask {
            AskMechanism::InputRequired => operation.may_require_input(),
            AskMechanism::Push => !operation.is_notification(),
            AskMechanism::InArguments => operation == Operation::CallTool,
        };
        if !allowed {
            return Err(Failure::internal(format!(
                "{} cannot ask the client during {operation:?}",
                self.version()
            )));
        }
        if self.features().ask != AskMechanism::InArguments {
            self.input_request("", request)?;
            if !request.client_can_answer(client) {
                return Err(Failure::missing_capability(request.required_capabilities()));
            }
        }
        Ok(())
    }

    /// A pushed server-to-client JSON-RPC request: `{"jsonrpc": "2.0", "id": id, "method",
    /// "params"}`, for revisions with a handshake (2026-07-28 never pushes requests).
    ///
    /// The caller assigns `id`: the adapter holds no random number generator. Use a fresh,
    /// unguessable string (at least 128 random bits), because the answer is routed by it and
    /// comes back on an unrelated POST.
    pub fn pushed_request(&self, id: Id, request: &InputRequest) -> Result<Value, Failure> {
        if !self.has_handshake() {
            return Err(Failure::internal(format!(
                "{} has no server-to-client requests",
                self.version()
            )));
        }
        let key = id.to_string();
        let Value::Object(mut message) = self.input_request(&key, request)? else {
            unreachable!("input_request builds an object")
        };
        message.insert("jsonrpc".into(), "2.0".into());
        message.insert(
            "id".into(),
            serde_json::to_value(&id).unwrap_or(Value::Null),
        );
        Ok(Value::Object(message))
    }

    /// Questions read out of a result, whatever mechanism this revision uses:
    /// MRTR (`resultType: "input_required"`), or the `_meta` [`INPUT_REQUIRED_META`] of a
    /// tool result on the revisions that ask in arguments. `None` when the result asks nothing.
    /// Entries that are not one of the three request kinds are skipped.
    pub fn read_questions(&self, result: &Value) -> Option<Questions> {
        let source = match self.features().ask {
            AskMechanism::InputRequired => {
                if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                    return None;
                }
                result
            }
            AskMechanism::InArguments | AskMechanism::Push => {
                result.get("_meta")?.get(INPUT_REQUIRED_META)?
            }
        };
        let requests = source
            .get("inputRequests")
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .filter_map(|(k, v)| InputRequest::from_value(v).map(|r| (k.clone(), r)))
                    .collect()
            })
            .unwrap_or_default();
        let state = source
            .get("requestState")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Some(Questions { requests, state })
    }
}

/// Builds the text of the "ask in arguments" tool result: what to send back, as JSON to copy.
pub(crate) fn instructions_text(
    requests: &InputRequests,
    state: Option<&str>,
    previous: Option<&Answers>,
) -> String {
    let mut answers = previous.map(|a| a.as_map().clone()).unwrap_or_default();
    for (key, request) in requests {
        answers.insert(key.clone(), answer_template(request));
    }
    let template = json!({ ANSWERS_ARGUMENT: answers, STATE_ARGUMENT: state });
    let mut text = String::from(
        "This tool needs answers before it can finish. Ask the user the questions below, then \
         call this tool again with the same arguments plus these two:\n\n",
    );
    text.push_str(&template.to_string());
    text.push_str(
        "\n\nFill in each \"content\" with the user's answers. If the user refuses a question, \
         set its \"action\" to \"decline\" (or \"cancel\" if they dismissed it) and leave \
         \"content\" empty. Send \"mcpState\" back exactly as given.\n\nQuestions:\n",
    );
    for (key, request) in requests {
        let what = match request.kind {
            ClientRequestKind::Elicit => request.message().unwrap_or("(no message)").to_owned(),
            ClientRequestKind::CreateMessage => {
                "write a reply to the messages in this result's _meta".to_owned()
            }
            ClientRequestKind::ListRoots => "list the client's roots".to_owned(),
        };
        text.push_str(&format!("- {key}: {what}\n"));
    }
    text
}

/// A placeholder answer showing the expected shape.
fn answer_template(request: &InputRequest) -> Value {
    match request.kind {
        ClientRequestKind::Elicit => {
            let mut content = Map::new();
            if let Some(props) = request
                .params
                .get("requestedSchema")
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
            {
                for (name, schema) in props {
                    content.insert(name.clone(), placeholder(schema));
                }
            }
            json!({"action": "accept", "content": content})
        }
        ClientRequestKind::CreateMessage => json!({
            "role": "assistant",
            "content": {"type": "text", "text": ""},
            "model": "",
            "stopReason": "endTurn"
        }),
        ClientRequestKind::ListRoots => json!({"roots": []}),
    }
}

/// A placeholder value for one requested field.
fn placeholder(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(first) = schema
        .get("oneOf")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
        .and_then(|c| c.get("const"))
    {
        return first.clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => Value::Bool(false),
        Some("integer" | "number") => json!(0),
        Some("array") => json!([]),
        _ => Value::String(String::new()),
    }
}

/// The method names the answer convention refers to, kept in one place for the tests.
#[cfg(test)]
pub(crate) const ASK_METHODS: [&str; 3] = [
    mcp_wire::names::method::ELICITATION_CREATE,
    mcp_wire::names::method::SAMPLING_CREATE_MESSAGE,
    mcp_wire::names::method::ROOTS_LIST,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::revision::Revision;

    #[test]
    fn meta_key_is_not_reserved() {
        assert!(!mcp_wire::names::meta::is_reserved(INPUT_REQUIRED_META));
        for m in ASK_METHODS {
            assert!(ClientRequestKind::from_method(m).is_some());
        }
    }

    #[test]
    fn elicit_answers_are_read_defensively() {
        let cases = [
            (
                json!({"action": "accept", "content": {"a": 1}}),
                ElicitAction::Accept,
                1,
            ),
            (json!({"action": "accept"}), ElicitAction::Accept, 0),
            (
                json!({"action": "decline", "content": {"a": 1}}),
                ElicitAction::Decline,
                0,
            ),
            (json!({"action": "cancel"}), ElicitAction::Cancel, 0),
            (json!({"action": "ACCEPT"}), ElicitAction::Decline, 0),
            (json!({"action": "maybe"}), ElicitAction::Decline, 0),
            (json!({"action": 1}), ElicitAction::Decline, 0),
            (json!({"content": {"a": 1}}), ElicitAction::Decline, 0),
            (json!("accept"), ElicitAction::Decline, 0),
            (json!(null), ElicitAction::Decline, 0),
        ];
        for (value, action, fields) in cases {
            let answer = ElicitAnswer::from_result(&value);
            assert_eq!(answer.action, action, "{value}");
            assert_eq!(answer.content.len(), fields, "{value}");
        }
        let refused = ElicitAnswer::from_reply(&Err(ErrorObject::new(-32603, "no")));
        assert_eq!(refused.action, ElicitAction::Cancel);
        assert!(!refused.accepted());
        let mut answers = Answers::new();
        answers.insert("k", Err(ErrorObject::new(-32601, "no")));
        assert!(!answers.elicitation("k").unwrap().accepted());
    }

    #[test]
    fn elicitation_shape_follows_the_revision() {
        let form = InputRequest::elicit("Go?", Value::Null);
        let url = InputRequest::elicit_url("Sign in", "https://example.com/x");
        let shaped = |r: Revision, q: &InputRequest| Adapter::new(r).input_request("k", q);
        assert!(shaped(Revision::V2025_03_26, &form).is_err());
        let v = shaped(Revision::V2025_06_18, &form).unwrap();
        assert!(v["params"].get("mode").is_none());
        assert!(shaped(Revision::V2025_06_18, &url).is_err());
        let v = shaped(Revision::V2025_11_25, &url).unwrap();
        assert_eq!(v["params"]["elicitationId"], "k");
        let v = shaped(Revision::V2026_07_28, &url).unwrap();
        assert!(v["params"].get("elicitationId").is_none());
        assert_eq!(v["params"]["mode"], "url");
    }

    #[test]
    fn capability_checks() {
        let adapter = Adapter::new(Revision::V2026_07_28);
        let form = InputRequest::elicit("Go?", Value::Null);
        let none = ClientContext::default();
        let failure = adapter
            .check_ask(Operation::CallTool, &form, &none)
            .unwrap_err();
        assert_eq!(
            failure.data,
            Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}}))
        );
        let client = ClientContext {
            info: None,
            capabilities: Some(json!({"elicitation": {}}).as_object().unwrap().clone()),
        };
        assert!(
            adapter
                .check_ask(Operation::CallTool, &form, &client)
                .is_ok()
        );
        assert!(
            adapter
                .check_ask(Operation::Complete, &form, &client)
                .is_err()
        );
        let url = InputRequest::elicit_url("x", "https://example.com");
        assert!(
            adapter
                .check_ask(Operation::CallTool, &url, &client)
                .is_err()
        );
        let legacy = Adapter::new(Revision::V2025_03_26);
        assert!(legacy.check_ask(Operation::CallTool, &form, &none).is_ok());
        assert!(
            legacy
                .check_ask(Operation::GetPrompt, &form, &none)
                .is_err()
        );
    }
}
