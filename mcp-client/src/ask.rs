//! Questions a server puts to the client, and the client's answers.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use mcp_adapters::Adapter;
use mcp_wire::jsonrpc::ErrorObject;
use mcp_wire::names::method;
use serde_json::{Map, Value, json};

use crate::transport::BoxFuture;

/// Which kinds of question the `on_ask` callback answers.
///
/// The client declares exactly these capabilities to the server, and no others: a server puts a
/// question only to a client that said it can answer it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Asks {
    form: bool,
    url: bool,
    sampling: bool,
    roots: bool,
}

impl Asks {
    /// Answers nothing.
    pub fn none() -> Self {
        Self::default()
    }

    /// Answers form-mode elicitation (`elicitation/create` with a `requestedSchema`).
    pub fn elicitation(mut self) -> Self {
        self.form = true;
        self
    }

    /// Answers URL-mode elicitation (2025-11-25 and later).
    pub fn url_elicitation(mut self) -> Self {
        self.url = true;
        self
    }

    /// Answers `sampling/createMessage`.
    pub fn sampling(mut self) -> Self {
        self.sampling = true;
        self
    }

    /// Answers `roots/list`.
    pub fn roots(mut self) -> Self {
        self.roots = true;
        self
    }

    /// Every kind.
    pub fn all() -> Self {
        Self {
            form: true,
            url: true,
            sampling: true,
            roots: true,
        }
    }

    /// The `ClientCapabilities` object to declare on `adapter`'s revision.
    pub(crate) fn capabilities(&self, adapter: Adapter) -> Value {
        let features = adapter.features();
        let mut caps = Map::new();
        if features.has_elicitation && (self.form || self.url) {
            if features.url_elicitation {
                let mut modes = Map::new();
                if self.form {
                    modes.insert("form".into(), json!({}));
                }
                if self.url {
                    modes.insert("url".into(), json!({}));
                }
                caps.insert("elicitation".into(), Value::Object(modes));
            } else if self.form {
                // Before URL mode, an empty object means form elicitation.
                caps.insert("elicitation".into(), json!({}));
            }
        }
        if self.sampling {
            caps.insert("sampling".into(), json!({}));
        }
        if self.roots {
            caps.insert("roots".into(), json!({}));
        }
        Value::Object(caps)
    }
}

/// What a question asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum QuestionKind {
    /// Form-mode elicitation: answer with [`Answer::accept`] and content matching
    /// `requestedSchema`, or decline or cancel.
    Elicitation,
    /// URL-mode elicitation: the user should open [`Question::url`]; accept means "consented".
    UrlElicitation,
    /// `sampling/createMessage`: answer with a `CreateMessageResult` through [`Answer::result`].
    Sampling,
    /// `roots/list`: answer with `{"roots": [...]}` through [`Answer::result`].
    Roots,
    /// A method this client does not know.
    Other,
}

/// One question from the server, whatever mechanism carried it.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    method: String,
    params: Value,
    key: Option<String>,
}

impl Question {
    pub(crate) fn new(method: String, params: Option<Value>, key: Option<String>) -> Self {
        Self {
            method,
            params: params.unwrap_or_else(|| json!({})),
            key,
        }
    }

    /// What the question asks for.
    pub fn kind(&self) -> QuestionKind {
        match self.method.as_str() {
            method::ELICITATION_CREATE => {
                if self.params.get("mode").and_then(Value::as_str) == Some("url") {
                    QuestionKind::UrlElicitation
                } else {
                    QuestionKind::Elicitation
                }
            }
            method::SAMPLING_CREATE_MESSAGE => QuestionKind::Sampling,
            method::ROOTS_LIST => QuestionKind::Roots,
            _ => QuestionKind::Other,
        }
    }

    /// The method, such as `elicitation/create`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params exactly as the server sent them.
    pub fn params(&self) -> &Value {
        &self.params
    }

    /// The message shown to the user, for elicitation.
    pub fn message(&self) -> Option<&str> {
        self.params.get("message").and_then(Value::as_str)
    }

    /// The URL to open, for URL-mode elicitation.
    pub fn url(&self) -> Option<&str> {
        self.params.get("url").and_then(Value::as_str)
    }

    /// The schema of the requested content, for form-mode elicitation.
    pub fn requested_schema(&self) -> Option<&Value> {
        self.params.get("requestedSchema")
    }

    /// The server's key for this question, when it asked several at once (MRTR and the
    /// argument convention); `None` for a pushed request.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }
}

/// The client's answer to a [`Question`].
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    outcome: Result<Value, ErrorObject>,
}

impl Answer {
    /// Accepts an elicitation with `content` (an object matching `requestedSchema`).
    pub fn accept(content: Value) -> Self {
        Self::result(json!({"action": "accept", "content": content}))
    }

    /// Accepts a URL-mode elicitation (consent, with no content).
    pub fn accept_url() -> Self {
        Self::result(json!({"action": "accept"}))
    }

    /// Declines an elicitation.
    pub fn decline() -> Self {
        Self::result(json!({"action": "decline"}))
    }

    /// Cancels an elicitation (the user dismissed it).
    pub fn cancel() -> Self {
        Self::result(json!({"action": "cancel"}))
    }

    /// Answers with a whole result object (a `CreateMessageResult`, a `ListRootsResult`, an
    /// `ElicitResult`).
    pub fn result(result: Value) -> Self {
        Self {
            outcome: Ok(result),
        }
    }

    /// Refuses to answer with a JSON-RPC error. A pushed request gets this error as its response;
    /// an MRTR or argument-convention question fails the call.
    pub fn error(error: ErrorObject) -> Self {
        Self {
            outcome: Err(error),
        }
    }

    /// The result or the error.
    pub fn outcome(&self) -> &Result<Value, ErrorObject> {
        &self.outcome
    }

    pub(crate) fn into_outcome(self) -> Result<Value, ErrorObject> {
        self.outcome
    }

    /// Whether this answer accepts (an elicitation `accept`, or any other result).
    pub fn is_accept(&self) -> bool {
        match &self.outcome {
            Ok(v) => v
                .get("action")
                .and_then(Value::as_str)
                .is_none_or(|a| a == "accept"),
            Err(_) => false,
        }
    }
}

/// The callback type behind `on_ask`.
pub(crate) type AskFn = Arc<dyn Fn(Question) -> BoxFuture<'static, Answer> + Send + Sync>;

pub(crate) fn ask_fn<F, Fut>(f: F) -> AskFn
where
    F: Fn(Question) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Answer> + Send + 'static,
{
    Arc::new(move |q| Box::pin(f(q)))
}

/// Whether `asks` covers `question` (the client declared that capability).
pub(crate) fn declared(asks: &Asks, question: &Question) -> bool {
    match question.kind() {
        QuestionKind::Elicitation => asks.form,
        QuestionKind::UrlElicitation => asks.url,
        QuestionKind::Sampling => asks.sampling,
        QuestionKind::Roots => asks.roots,
        QuestionKind::Other => false,
    }
}

/// The on-ask configuration: what is declared and who answers.
#[derive(Clone)]
pub(crate) struct OnAsk {
    pub(crate) asks: Asks,
    pub(crate) callback: AskFn,
}

impl fmt::Debug for OnAsk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnAsk")
            .field("asks", &self.asks)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use mcp_adapters::Revision;

    use super::*;

    #[test]
    fn declares_only_what_it_answers() {
        let cases = [
            (Asks::none(), Revision::V2026_07_28, json!({})),
            (
                Asks::none().elicitation(),
                Revision::V2026_07_28,
                json!({"elicitation": {"form": {}}}),
            ),
            (
                Asks::all(),
                Revision::V2025_11_25,
                json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}),
            ),
            (
                Asks::all(),
                Revision::V2025_06_18,
                json!({"elicitation": {}, "sampling": {}, "roots": {}}),
            ),
            (
                Asks::none().url_elicitation(),
                Revision::V2025_06_18,
                json!({}),
            ),
            (
                Asks::all(),
                Revision::V2025_03_26,
                json!({"sampling": {}, "roots": {}}),
            ),
        ];
        for (asks, revision, expected) in cases {
            assert_eq!(
                asks.capabilities(Adapter::new(revision)),
                expected,
                "{revision}"
            );
        }
    }

    #[test]
    fn question_kinds() {
        let q = |m: &str, p: Value| Question::new(m.into(), Some(p), None);
        assert_eq!(
            q("elicitation/create", json!({"message": "x"})).kind(),
            QuestionKind::Elicitation
        );
        assert_eq!(
            q("elicitation/create", json!({"mode": "url", "url": "u"})).kind(),
            QuestionKind::UrlElicitation
        );
        assert_eq!(
            q("sampling/createMessage", json!({})).kind(),
            QuestionKind::Sampling
        );
        assert_eq!(q("roots/list", json!({})).kind(), QuestionKind::Roots);
        assert_eq!(q("tasks/get", json!({})).kind(), QuestionKind::Other);
        assert!(!declared(
            &Asks::none().elicitation(),
            &q("elicitation/create", json!({"mode": "url"}))
        ));
    }
}
