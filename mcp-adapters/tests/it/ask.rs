//! The three ways to ask, end to end: the server encodes a question, the client reads it,
//! answers, and the server decodes the answer.

use std::collections::BTreeMap;

use mcp_adapters::{
    Adapter, Answers, ClientContext, FailureKind, Incoming, InputRequest, NoTools, Operation,
    Outcome, ResultContext, ResultKind, Revision,
};
use mcp_wire::jsonrpc::{self, Id};
use serde_json::{Map, Value, json};

fn client(capabilities: Value) -> ClientContext {
    ClientContext {
        info: Some(json!({"name": "cli", "version": "1"})),
        capabilities: capabilities.as_object().cloned(),
    }
}

fn question() -> BTreeMap<String, InputRequest> {
    let schema = json!({"type": "object", "properties": {"env": {"type": "string", "enum": ["prod", "dev"]}}});
    BTreeMap::from([(
        "confirm".to_owned(),
        InputRequest::elicit("Deploy?", schema),
    )])
}

/// The client builds a tools/call, the server decodes it (over HTTP, with the client's headers).
fn send(adapter: Adapter, params: Map<String, Value>, id: i64) -> mcp_adapters::Call {
    let headers = adapter
        .client_headers("tools/call", &params, false, None)
        .unwrap();
    let body = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
    )
    .unwrap();
    match adapter
        .decode_http(jsonrpc::decode(&body), &headers, &NoTools)
        .into_items()
        .next()
        .expect("one item")
    {
        Incoming::Call(call) => *call,
        other => panic!("{other:?}"),
    }
}

fn first_params(adapter: Adapter, who: &ClientContext) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("name".into(), "deploy".into());
    params.insert("arguments".into(), json!({"service": "web"}));
    adapter.client_params(params, who, None, None)
}

#[test]
fn mrtr_round_trip() {
    let adapter = Adapter::new(Revision::V2026_07_28);
    let who = client(json!({"elicitation": {}}));
    let first = send(adapter, first_params(adapter, &who), 1);
    assert!(first.answers.is_none() && first.request_state.is_none());
    for (_, q) in question() {
        adapter
            .check_ask(first.operation, &q, &first.client)
            .unwrap();
    }
    let reply = adapter
        .encode(
            &first,
            Outcome::InputRequired {
                requests: question(),
                state: Some("sealed".into()),
            },
            &ResultContext::default(),
        )
        .unwrap();
    let ResultKind::InputRequired(questions) =
        adapter.read_result(&reply.to_value()["result"]).unwrap()
    else {
        panic!("expected questions")
    };
    assert_eq!(questions.state.as_deref(), Some("sealed"));
    assert_eq!(questions.requests["confirm"].message(), Some("Deploy?"));

    let mut answers = Answers::new();
    answers.insert(
        "confirm",
        Ok(json!({"action": "accept", "content": {"env": "prod"}})),
    );
    let mut retry = first_params(adapter, &who);
    adapter
        .attach_answers(
            "tools/call",
            &mut retry,
            &answers,
            questions.state.as_deref(),
        )
        .unwrap();
    let second = send(adapter, retry, 2);
    assert_eq!(second.request_state.as_deref(), Some("sealed"));
    let answer = second
        .answers
        .as_ref()
        .unwrap()
        .elicitation("confirm")
        .unwrap();
    assert!(answer.accepted());
    assert_eq!(answer.content["env"], "prod");
    assert_eq!(
        second.arguments,
        json!({"service": "web"}).as_object().unwrap().clone()
    );

    let done = adapter
        .encode(
            &second,
            Outcome::Value(json!({"content": [{"type": "text", "text": "deployed"}]})),
            &ResultContext::default(),
        )
        .unwrap();
    assert_eq!(
        adapter.read_result(&done.to_value()["result"]).unwrap(),
        ResultKind::Complete
    );
}

#[test]
fn mrtr_refuses_clients_that_did_not_declare_the_capability() {
    let adapter = Adapter::new(Revision::V2026_07_28);
    let call = send(adapter, first_params(adapter, &client(json!({}))), 1);
    let failure = adapter
        .check_ask(Operation::CallTool, &question()["confirm"], &call.client)
        .unwrap_err();
    let enc = adapter
        .encode(&call, Outcome::Failure(failure), &ResultContext::default())
        .unwrap();
    assert_eq!(enc.status.as_u16(), 400);
    assert_eq!(enc.to_value()["id"], 1);
    assert_eq!(enc.to_value()["error"]["code"], -32021);
    assert_eq!(
        enc.to_value()["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
}

#[test]
fn mrtr_result_types() {
    let adapter = Adapter::new(Revision::V2026_07_28);
    assert_eq!(
        adapter.read_result(&json!({"content": []})).unwrap(),
        ResultKind::Complete
    );
    assert!(adapter.read_result(&json!({"resultType": "task"})).is_err());
    assert!(adapter.read_result(&json!([])).is_err());
}

#[test]
fn asking_in_arguments_round_trip() {
    for revision in [Revision::V2025_03_26, Revision::V2024_11_05] {
        let adapter = Adapter::new(revision);
        let who = client(json!({}));
        let first = send(adapter, first_params(adapter, &who), 1);
        // No capability is needed: it is an ordinary tool call.
        adapter
            .check_ask(first.operation, &question()["confirm"], &first.client)
            .unwrap();
        let reply = adapter
            .encode(
                &first,
                Outcome::InputRequired {
                    requests: question(),
                    state: Some("s1".into()),
                },
                &ResultContext::default(),
            )
            .unwrap();
        let result = &reply.to_value()["result"];
        assert_eq!(
            result["isError"], false,
            "not an error: the call is unfinished"
        );

        // A model reads the text and copies the JSON it names into the arguments.
        let text = result["content"][0]["text"].as_str().unwrap();
        let template: Value = text
            .lines()
            .find_map(|l| serde_json::from_str(l).ok())
            .expect("the text carries JSON to copy");
        assert_eq!(template["mcpState"], "s1");
        assert_eq!(template["mcpAnswers"]["confirm"]["action"], "accept");
        let mut params = first_params(adapter, &who);
        let args = params
            .get_mut("arguments")
            .unwrap()
            .as_object_mut()
            .unwrap();
        for (k, v) in template.as_object().unwrap() {
            args.insert(k.clone(), v.clone());
        }
        let by_model = send(adapter, params, 2);
        assert_eq!(by_model.request_state.as_deref(), Some("s1"));
        assert!(
            by_model
                .answers
                .as_ref()
                .unwrap()
                .elicitation("confirm")
                .unwrap()
                .accepted()
        );
        assert_eq!(
            by_model.arguments,
            json!({"service": "web"}).as_object().unwrap().clone()
        );

        // A program reads the _meta and answers through the adapter.
        let ResultKind::InputRequired(questions) = adapter.read_result(result).unwrap() else {
            panic!("{revision}: expected questions")
        };
        assert_eq!(questions.requests.len(), 1);
        let mut answers = Answers::new();
        answers.insert("confirm", Ok(json!({"action": "decline"})));
        let mut params = first_params(adapter, &who);
        adapter
            .attach_answers(
                "tools/call",
                &mut params,
                &answers,
                questions.state.as_deref(),
            )
            .unwrap();
        let by_program = send(adapter, params, 3);
        assert!(
            !by_program
                .answers
                .unwrap()
                .elicitation("confirm")
                .unwrap()
                .accepted()
        );

        // Later rounds repeat the earlier answers in the template.
        let mut again = by_model.clone();
        again.id = Some(Id::from(4));
        let more = BTreeMap::from([(
            "second".to_owned(),
            InputRequest::elicit("Sure?", Value::Null),
        )]);
        let reply = adapter
            .encode(
                &again,
                Outcome::InputRequired {
                    requests: more,
                    state: None,
                },
                &ResultContext::default(),
            )
            .unwrap();
        let reply = reply.to_value();
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("\"confirm\"") && text.contains("\"second\""),
            "{text}"
        );

        // Only tools/call can ask this way.
        let prompt =
            mcp_adapters::Call::new(Operation::GetPrompt, Some(Id::from(5)), "prompts/get");
        let enc = adapter
            .encode(
                &prompt,
                Outcome::InputRequired {
                    requests: question(),
                    state: None,
                },
                &ResultContext::default(),
            )
            .unwrap();
        assert!(enc.to_value().get("error").is_some());
    }
}

#[test]
fn pushed_question_round_trip() {
    for revision in [Revision::V2025_06_18, Revision::V2025_11_25] {
        let adapter = Adapter::new(revision);
        let who = client(json!({"elicitation": {}}));
        adapter
            .check_ask(Operation::CallTool, &question()["confirm"], &who)
            .unwrap();
        let failure = adapter
            .check_ask(
                Operation::CallTool,
                &question()["confirm"],
                &client(json!({})),
            )
            .unwrap_err();
        assert_eq!(failure.kind, FailureKind::MissingCapability);
        assert_eq!(failure.mapping(revision).code, -32603);

        let pushed = adapter
            .pushed_request(Id::from("q-0123456789abcdef"), &question()["confirm"])
            .unwrap();
        assert_eq!(pushed["method"], "elicitation/create");
        assert_eq!(pushed["id"], "q-0123456789abcdef");

        for (answer, accepted) in [
            (
                Ok(json!({"action": "accept", "content": {"env": "dev"}})),
                true,
            ),
            (Ok(json!({"action": "decline"})), false),
            (Ok(json!({"content": {"env": "dev"}})), false),
            (Err(jsonrpc::ErrorObject::new(-32603, "closed")), false),
        ] {
            let reply = adapter.answer_pushed(Id::from("q-0123456789abcdef"), answer);
            let bytes = serde_json::to_vec(&reply).unwrap();
            let decoded = adapter.decode(jsonrpc::decode(&bytes));
            let Incoming::Reply(reply) = &decoded.items()[0] else {
                panic!("{:?}", decoded.items())
            };
            assert_eq!(reply.id, Id::from("q-0123456789abcdef"));
            let read = mcp_adapters::ElicitAnswer::from_reply(&reply.outcome);
            assert_eq!(read.accepted(), accepted, "{revision}: {reply:?}");
        }

        // Questions are not results on these revisions.
        let call = mcp_adapters::Call::new(Operation::CallTool, Some(Id::from(1)), "tools/call");
        let enc = adapter
            .encode(
                &call,
                Outcome::InputRequired {
                    requests: question(),
                    state: None,
                },
                &ResultContext::default(),
            )
            .unwrap();
        assert_eq!(enc.to_value()["error"]["code"], -32603);
        assert_eq!(
            adapter.read_result(&json!({"content": []})).unwrap(),
            ResultKind::Complete
        );
    }
}

#[test]
fn handshake_requests() {
    let who = client(json!({"elicitation": {"form": {}}, "roots": {}}));
    let (method, params) = Adapter::new(Revision::V2025_06_18).handshake_request(&who);
    assert_eq!(method, "initialize");
    assert_eq!(params["protocolVersion"], "2025-06-18");
    assert_eq!(params["capabilities"]["elicitation"], json!({}));
    let (method, params) = Adapter::new(Revision::V2025_03_26).handshake_request(&who);
    assert_eq!(method, "initialize");
    assert!(
        params["capabilities"].get("elicitation").is_none(),
        "2025-03-26 has no elicitation"
    );
    let (method, params) = Adapter::new(Revision::V2026_07_28).handshake_request(&who);
    assert_eq!(method, "server/discover");
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"]["roots"],
        json!({})
    );
    assert!(mcp_adapters::is_modern_error(-32022) && !mcp_adapters::is_modern_error(-32602));
}
