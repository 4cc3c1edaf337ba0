//! Reading questions out of results, and putting answers into the next attempt, for the two
//! mechanisms that travel in results: MRTR (2026-07-28) and the argument convention (2025-03-26,
//! 2024-11-05). Pushed questions are answered where they arrive, in the client core.

use mcp_adapters::{Adapter, Operation};
use serde_json::{Map, Value};

use crate::ask::Question;
use crate::client::INPUT_REQUIRED_META;
use crate::error::Error;

/// The questions one result asks, and the state to echo.
#[derive(Debug)]
pub(crate) struct Asked {
    pub(crate) questions: Vec<(String, Question)>,
    pub(crate) state: Option<Value>,
}

/// Reads the questions `result` asks, if any, checking the revision's result envelope.
///
/// On a revision with `resultType`, an absent value means complete, `"input_required"` means
/// questions (only on the three methods that may ask), and anything else is invalid.
pub(crate) fn questions(
    adapter: Adapter,
    method: &str,
    result: &Value,
) -> Result<Option<Asked>, Error> {
    let operation = adapter.operation(method);
    let may_ask = operation.is_some_and(Operation::may_require_input);
    if adapter.features().result_envelope {
        match result.get("resultType") {
            None => return Ok(None),
            Some(Value::String(kind)) if kind == "complete" => return Ok(None),
            Some(Value::String(kind))
                if kind == "input_required" && may_ask && adapter.can_ask() =>
            {
                return read(result.get("inputRequests"), result.get("requestState")).map(Some);
            }
            Some(other) => {
                return Err(Error::protocol(format!(
                    "unexpected resultType {other} for {method}"
                )));
            }
        }
    }
    if adapter.asks_in_arguments()
        && operation == Some(Operation::CallTool)
        && let Some(asked) = result.get("_meta").and_then(|m| m.get(INPUT_REQUIRED_META))
    {
        return read(asked.get("inputRequests"), asked.get("requestState")).map(Some);
    }
    Ok(None)
}

fn read(requests: Option<&Value>, state: Option<&Value>) -> Result<Asked, Error> {
    let mut questions = Vec::new();
    match requests {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (key, request) in map {
                let Some(method) = request.get("method").and_then(Value::as_str) else {
                    return Err(Error::protocol(format!(
                        "input request {key:?} has no method"
                    )));
                };
                let question = Question::new(
                    method.to_owned(),
                    request.get("params").cloned(),
                    Some(key.clone()),
                );
                questions.push((key.clone(), question));
            }
        }
        Some(_) => return Err(Error::protocol("inputRequests is not an object")),
    }
    let state = match state {
        None | Some(Value::Null) => None,
        Some(s @ Value::String(_)) => Some(s.clone()),
        Some(_) => return Err(Error::protocol("requestState is not a string")),
    };
    if questions.is_empty() && state.is_none() {
        return Err(Error::protocol(
            "an input_required result with neither inputRequests nor requestState",
        ));
    }
    Ok(Asked { questions, state })
}

/// `params` for the next attempt: every answer collected so far and the state, exactly as given.
pub(crate) fn with_answers(
    adapter: Adapter,
    method: &str,
    params: Option<Value>,
    answers: &Map<String, Value>,
    state: Option<&Value>,
) -> Option<Value> {
    if answers.is_empty() && state.is_none() {
        return params;
    }
    let mut params = match params {
        Some(Value::Object(map)) => map,
        None => Map::new(),
        Some(other) => return Some(other),
    };
    if adapter.can_ask() {
        params.insert("inputResponses".into(), Value::Object(answers.clone()));
        if let Some(state) = state {
            params.insert("requestState".into(), state.clone());
        }
    } else if adapter.asks_in_arguments() && adapter.operation(method) == Some(Operation::CallTool)
    {
        let arguments = params
            .entry("arguments")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(arguments) = arguments {
            arguments.insert("mcpAnswers".into(), Value::Object(answers.clone()));
            if let Some(state) = state {
                arguments.insert("mcpState".into(), state.clone());
            }
        }
    }
    Some(Value::Object(params))
}

#[cfg(test)]
mod tests {
    use mcp_adapters::Revision;
    use serde_json::json;

    use super::*;

    fn modern() -> Adapter {
        Adapter::new(Revision::V2026_07_28)
    }

    #[test]
    fn result_type_rules() {
        let cases: &[(&str, Value, Result<bool, ()>)] = &[
            ("tools/call", json!({"content": []}), Ok(false)),
            ("tools/call", json!({"resultType": "complete"}), Ok(false)),
            (
                "tools/call",
                json!({"resultType": "input_required", "inputRequests": {"a": {"method": "roots/list"}}}),
                Ok(true),
            ),
            (
                "tools/call",
                json!({"resultType": "input_required", "requestState": "s"}),
                Ok(true),
            ),
            (
                "tools/call",
                json!({"resultType": "input_required"}),
                Err(()),
            ),
            ("tools/call", json!({"resultType": "task"}), Err(())),
            ("tools/call", json!({"resultType": 3}), Err(())),
            (
                "tools/list",
                json!({"resultType": "input_required", "requestState": "s"}),
                Err(()),
            ),
            (
                "prompts/get",
                json!({"resultType": "input_required", "requestState": "s"}),
                Ok(true),
            ),
        ];
        for (method, result, expected) in cases {
            let got = questions(modern(), method, result)
                .map(|q| q.is_some())
                .map_err(|_| ());
            assert_eq!(&got, expected, "{method} {result}");
        }
    }

    #[test]
    fn argument_convention() {
        let legacy = Adapter::new(Revision::V2025_03_26);
        let result = json!({"content": [], "_meta": {INPUT_REQUIRED_META: {
            "inputRequests": {"go": {"method": "elicitation/create", "params": {"message": "Go?"}}},
            "requestState": "st"}}});
        let asked = questions(legacy, "tools/call", &result).unwrap().unwrap();
        assert_eq!(asked.questions[0].0, "go");
        assert_eq!(asked.questions[0].1.message(), Some("Go?"));
        let mut answers = Map::new();
        answers.insert("go".into(), json!({"action": "accept", "content": {}}));
        let params = with_answers(
            legacy,
            "tools/call",
            Some(json!({"name": "t", "arguments": {"x": 1}})),
            &answers,
            asked.state.as_ref(),
        );
        assert_eq!(
            params.unwrap(),
            json!({"name": "t", "arguments": {"x": 1, "mcpAnswers": {"go": {"action": "accept", "content": {}}}, "mcpState": "st"}})
        );
        // A pushed-ask revision reads nothing from results.
        assert!(
            questions(Adapter::new(Revision::V2025_06_18), "tools/call", &result)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn mrtr_echoes_state_and_all_answers() {
        let mut answers = Map::new();
        answers.insert("a".into(), json!({"action": "decline"}));
        answers.insert("b".into(), json!({"roots": []}));
        let params = with_answers(
            modern(),
            "tools/call",
            Some(json!({"name": "t"})),
            &answers,
            Some(&json!("opaque")),
        );
        assert_eq!(
            params.unwrap(),
            json!({"name": "t", "inputResponses": {"a": {"action": "decline"}, "b": {"roots": []}}, "requestState": "opaque"})
        );
        let params = with_answers(
            modern(),
            "tools/call",
            Some(json!({"name": "t"})),
            &answers,
            None,
        );
        assert!(params.unwrap().get("requestState").is_none());
    }
}
