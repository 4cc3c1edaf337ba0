//! Questions a handler puts to the client (and through it, the user), and their answers.

use mcp_adapters::{ClientRequestKind, ElicitAction, ElicitAnswer, InputRequest};
use mcp_wire::jsonrpc::ErrorObject;
use serde_json::{Map, Value, json};

/// A question: one request the client answers (`elicitation/create`, or
/// `sampling/createMessage`, `roots/list`).
#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    pub(crate) request: InputRequest,
    /// The client may answer before being asked (see [`Question::answerable_up_front`]).
    pub(crate) up_front: bool,
}

impl Question {
    /// Asks the user to confirm `message` (form-mode elicitation with no fields).
    pub fn elicit(message: impl Into<String>) -> Self {
        Self::elicit_with(message, json!({"type": "object", "properties": {}}))
    }

    /// Asks the user for the fields of `requested_schema` (a flat object schema of primitive
    /// properties, as elicitation requires).
    pub fn elicit_with(message: impl Into<String>, requested_schema: Value) -> Self {
        Self::request(InputRequest::elicit(message, requested_schema))
    }

    /// Asks the user to visit `url` (URL-mode elicitation, 2025-11-25 and 2026-07-28): for
    /// what must not pass through the client, such as credentials or a payment. The client
    /// must have declared `elicitation.url`. An accepted answer means the user consented to
    /// open the page, not that they finished there.
    pub fn elicit_url(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self::request(InputRequest::elicit_url(message, url))
    }

    /// Asks the client's model to generate a message (`sampling/createMessage`, every
    /// revision; deprecated on 2026-07-28). `params` are the request's params (`messages`,
    /// `maxTokens`, and optionally `systemPrompt`, `modelPreferences`, ...). The client must
    /// have declared `sampling`; an accepted answer's content is the `CreateMessageResult`.
    pub fn create_message(params: Map<String, Value>) -> Self {
        Self::request(InputRequest::create_message(params))
    }

    /// [`create_message`](Self::create_message) for one user text and a token budget.
    pub fn sample(text: impl Into<String>, max_tokens: u32) -> Self {
        let params = json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": text.into()}}],
            "maxTokens": max_tokens,
        });
        let Value::Object(params) = params else {
            unreachable!("an object literal")
        };
        Self::create_message(params)
    }

    /// Asks the client for its roots (`roots/list`, every revision; deprecated on
    /// 2026-07-28). The client must have declared `roots`; an accepted answer's content is the
    /// `ListRootsResult` (`{"roots": [...]}`).
    pub fn list_roots() -> Self {
        Self::request(InputRequest::list_roots())
    }

    /// Any request the client can answer (see [`InputRequest`]'s constructors).
    pub fn request(request: InputRequest) -> Self {
        Self {
            request,
            up_front: false,
        }
    }

    /// Lets the client answer this question before it is asked: an answer under the question's
    /// key that arrives with the call itself (`inputResponses` on 2026-07-28, `mcpAnswers` on
    /// 2025-03-26 and 2024-11-05), without a request state the server issued, is used instead
    /// of asking.
    ///
    /// Off by default: normally the server reads answers only for questions it put on an
    /// earlier attempt of the same call (bound to it by the request state), so a client cannot
    /// skip a question, such as a confirmation, that the user was meant to see. Turn it on for
    /// questions whose answer the client could supply on its own anyway (a name, a preference,
    /// the roots), where a round trip saves nothing. Such an answer is read like any other
    /// (an elicitation answer without `"action": "accept"` is a decline). Answers under other
    /// keys are ignored, as the protocol asks.
    ///
    /// ```
    /// use mcp_server::Question;
    /// let question = Question::elicit("What should I call you?").answerable_up_front();
    /// assert!(question.is_answerable_up_front());
    /// ```
    #[must_use]
    pub fn answerable_up_front(mut self) -> Self {
        self.up_front = true;
        self
    }

    /// Whether the client may answer before being asked.
    pub fn is_answerable_up_front(&self) -> bool {
        self.up_front
    }

    /// Which client request this is.
    pub fn kind(&self) -> ClientRequestKind {
        self.request.kind()
    }

    /// The request.
    pub fn as_request(&self) -> &InputRequest {
        &self.request
    }
}

/// What the user did with a question.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AnswerAction {
    /// Accepted, with content.
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed without a choice, or the client refused or failed to answer.
    Cancel,
}

/// An answer to a [`Question`].
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    action: AnswerAction,
    content: Value,
}

impl Answer {
    /// An answer with this action and content (an object, or `null` for none).
    pub fn new(action: AnswerAction, content: Value) -> Self {
        Self { action, content }
    }

    /// Reads the client's answer to a question of `kind`: a result or a JSON-RPC error.
    ///
    /// Elicitation answers are read defensively (only `"action": "accept"` accepts; an error
    /// reply is `cancel`). For the other kinds the result itself is the accepted content.
    pub(crate) fn from_reply(kind: ClientRequestKind, reply: &Result<Value, ErrorObject>) -> Self {
        if kind == ClientRequestKind::Elicit {
            let answer = ElicitAnswer::from_reply(reply);
            let action = match answer.action {
                ElicitAction::Accept => AnswerAction::Accept,
                ElicitAction::Decline => AnswerAction::Decline,
                ElicitAction::Cancel => AnswerAction::Cancel,
            };
            let content = if action == AnswerAction::Accept {
                Value::Object(answer.content)
            } else {
                Value::Null
            };
            return Self { action, content };
        }
        match reply {
            Ok(result) => Self::new(AnswerAction::Accept, result.clone()),
            Err(_) => Self::refused(AnswerAction::Cancel),
        }
    }

    /// A refusal (a timeout, a decline).
    pub(crate) fn refused(action: AnswerAction) -> Self {
        Self::new(action, Value::Null)
    }

    /// What the user did.
    pub fn action(&self) -> AnswerAction {
        self.action
    }

    /// The user accepted.
    pub fn accepted(&self) -> bool {
        self.action == AnswerAction::Accept
    }

    /// The content (`null` unless accepted).
    pub fn content(&self) -> &Value {
        &self.content
    }

    /// One field of the content.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.content.get(field)
    }
}

/// Whether `raw` has the shape of a result of `kind` (`ElicitResult`, `CreateMessageResult`,
/// `ListRootsResult`): an answer sent before its question is used only when it does; otherwise
/// the question is asked.
pub(crate) fn well_formed(kind: ClientRequestKind, raw: &Value) -> bool {
    let Some(result) = raw.as_object() else {
        return false;
    };
    match kind {
        ClientRequestKind::Elicit => match result.get("action").and_then(Value::as_str) {
            Some("accept") => result.get("content").is_none_or(Value::is_object),
            Some("decline" | "cancel") => true,
            _ => false,
        },
        ClientRequestKind::CreateMessage => {
            result.get("role").is_some_and(Value::is_string)
                && result
                    .get("content")
                    .is_some_and(|c| c.is_object() || c.is_array())
                && result.get("model").is_some_and(Value::is_string)
        }
        ClientRequestKind::ListRoots => result.get("roots").is_some_and(Value::is_array),
        // A kind added later: read it like the others are read, without a shape check.
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elicitation_answers_are_never_accepted_by_default() {
        let cases = [
            (
                Ok(json!({"action": "accept", "content": {"a": 1}})),
                AnswerAction::Accept,
            ),
            (Ok(json!({"action": "decline"})), AnswerAction::Decline),
            (Ok(json!({"action": "cancel"})), AnswerAction::Cancel),
            (Ok(json!({"content": {"a": 1}})), AnswerAction::Decline),
            (Err(ErrorObject::internal_error("no")), AnswerAction::Cancel),
        ];
        for (reply, action) in cases {
            assert_eq!(
                Answer::from_reply(ClientRequestKind::Elicit, &reply).action(),
                action,
                "{reply:?}"
            );
        }
    }
}
