//! Reading questions out of results, and putting answers into the next attempt, for the two
//! mechanisms that travel in results: MRTR (2026-07-28) and the argument convention (2025-03-26,
//! 2024-11-05). Both are the adapter's client side; pushed questions are answered where they
//! arrive, in the client core.

use mcp_adapters::{Adapter, Answers, ClientError, Operation, ResultKind};
use serde_json::{Map, Value};

use crate::ask::Question;
use crate::error::Error;

/// The questions one result asks, and the state to echo.
#[derive(Debug)]
pub(crate) struct Asked {
    pub(crate) questions: Vec<(String, Question)>,
    pub(crate) state: Option<String>,
}

/// Reads the questions `result` asks, if any, checking the revision's result envelope: an
/// absent `resultType` means complete, an unknown one is invalid, and `input_required` is only
/// allowed on the methods that may ask.
pub(crate) fn questions(
    adapter: Adapter,
    method: &str,
    result: &Value,
) -> Result<Option<Asked>, Error> {
    let kind = adapter.read_result(result).map_err(|e| match e {
        ClientError::UnknownResultType(t) => {
            Error::protocol(format!("unknown resultType {t:?} for {method}"))
        }
        other => Error::protocol(other.to_string()),
    })?;
    let ResultKind::InputRequired(asked) = kind else {
        return Ok(None);
    };
    let may_ask = adapter
        .operation(method)
        .is_some_and(|o| o.may_require_input());
    if adapter.can_ask() && !may_ask {
        return Err(Error::protocol(format!(
            "{method} cannot ask questions on {}",
            adapter.version()
        )));
    }
    let answerable = adapter.can_ask() || (adapter.asks_in_arguments() && may_ask);
    if !answerable {
        // Questions in `_meta` where this revision has no way to send answers back: the result
        // is what it is, and the caller can read the `_meta` itself.
        return Ok(None);
    }
    if asked.requests.is_empty() && asked.state.is_none() {
        return Err(Error::protocol(
            "questions with neither inputRequests nor requestState",
        ));
    }
    let questions = asked
        .requests
        .into_iter()
        .map(|(key, request)| {
            let params = Value::Object(request.params().clone());
            (
                key.clone(),
                Question::new(request.kind().method().to_owned(), Some(params), Some(key)),
            )
        })
        .collect();
    Ok(Some(Asked {
        questions,
        state: asked.state,
    }))
}

/// Whether `method` carries answers on `adapter`'s revision: MRTR on the methods that may ask,
/// the argument convention on a tool call. (Pushed questions are answered where they arrive.)
pub(crate) fn carries_answers(adapter: Adapter, method: &str) -> bool {
    let may_ask = adapter
        .operation(method)
        .is_some_and(|o| o.may_require_input());
    (adapter.can_ask() && may_ask)
        || (adapter.asks_in_arguments() && adapter.operation(method) == Some(Operation::CallTool))
}

/// Puts every answer collected so far, and the state exactly as given, into `params` for the
/// next attempt.
pub(crate) fn attach(
    adapter: Adapter,
    method: &str,
    params: &mut Option<Value>,
    answers: &Answers,
    state: Option<&str>,
) -> Result<(), Error> {
    let Value::Object(map) = params.get_or_insert_with(|| Value::Object(Map::new())) else {
        return Err(Error::protocol("params are not an object"));
    };
    adapter
        .attach_answers(method, map, answers, state)
        .map_err(|e| Error::protocol(e.to_string()))
}

#[cfg(test)]
mod tests {
    use mcp_adapters::{INPUT_REQUIRED_META, Revision};
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
            ("tools/call", json!([1]), Err(())),
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
        let mut answers = Answers::new();
        answers.insert("go", Ok(json!({"action": "accept", "content": {}})));
        let mut params = Some(json!({"name": "t", "arguments": {"x": 1}}));
        attach(
            legacy,
            "tools/call",
            &mut params,
            &answers,
            asked.state.as_deref(),
        )
        .unwrap();
        assert_eq!(
            params.unwrap(),
            json!({"name": "t", "arguments": {"x": 1, "mcpAnswers": {"go": {"action": "accept", "content": {}}}, "mcpState": "st"}})
        );
    }

    #[test]
    fn answers_up_front_travel_where_the_revision_carries_answers() {
        assert!(carries_answers(modern(), "tools/call"));
        assert!(carries_answers(modern(), "prompts/get"));
        assert!(carries_answers(modern(), "resources/read"));
        assert!(!carries_answers(modern(), "tools/list"));
        let legacy = Adapter::new(Revision::V2025_03_26);
        assert!(carries_answers(legacy, "tools/call"));
        assert!(!carries_answers(legacy, "prompts/get"));
        let pushed = Adapter::new(Revision::V2025_11_25);
        assert!(!carries_answers(pushed, "tools/call"));
    }

    #[test]
    fn mrtr_echoes_state_and_all_answers() {
        let mut answers = Answers::new();
        answers.insert("a", Ok(json!({"action": "decline"})));
        answers.insert("b", Ok(json!({"roots": []})));
        let mut params = Some(json!({"name": "t"}));
        attach(
            modern(),
            "tools/call",
            &mut params,
            &answers,
            Some("opaque"),
        )
        .unwrap();
        assert_eq!(
            params.clone().unwrap(),
            json!({"name": "t", "inputResponses": {"a": {"action": "decline"}, "b": {"roots": []}}, "requestState": "opaque"})
        );
        // The next round reuses the params: a round without state removes the old one.
        attach(modern(), "tools/call", &mut params, &answers, None).unwrap();
        assert!(params.unwrap().get("requestState").is_none());
    }

    fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            prop_oneof![
                Just("input_required".to_owned()),
                Just("complete".to_owned()),
                Just("elicitation/create".to_owned()),
                "[a-z/_]{0,12}"
            ]
            .prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("resultType".to_owned()),
                        Just("inputRequests".to_owned()),
                        Just("requestState".to_owned()),
                        Just("method".to_owned()),
                        Just("params".to_owned()),
                        Just("_meta".to_owned()),
                        Just(INPUT_REQUIRED_META.to_owned()),
                        "[a-z]{1,6}"
                    ],
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Whatever a server puts in a result, reading it is a value or a typed error.
        #[test]
        fn reading_any_result_never_panics(result in arb_json()) {
            for revision in Revision::ALL {
                for method in ["tools/call", "tools/list", "prompts/get", "resources/read"] {
                    let _ = questions(Adapter::new(revision), method, &result);
                }
            }
        }
    }
}
