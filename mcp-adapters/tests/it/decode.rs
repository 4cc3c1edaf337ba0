//! Decoding: the 2026-07-28 header checks and their order, the header codec cases of the spec
//! (section 5.2 and 5.3 of the notes), batches, replies and the asking fields.

use std::collections::HashMap;

use mcp_adapters::{
    Adapter, AdapterSet, Call, FailureKind, Incoming, NoTools, Operation, Revision,
};
use mcp_schema::{HeaderBinding, extract_headers};
use mcp_wire::jsonrpc::{self, Id};
use serde_json::{Value, json};

const MODERN: Adapter = Adapter::new(Revision::V2026_07_28);

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn tools_call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"_meta": meta(), "name": name, "arguments": arguments}})
}

fn weather_tools() -> HashMap<String, Vec<HeaderBinding>> {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "flag": {"type": ["boolean", "null"], "x-mcp-header": "Flag"},
        "where": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
        "text": {"type": "string"}
    }});
    HashMap::from([("weather".to_owned(), extract_headers(&schema).unwrap())])
}

/// Decodes `body` on 2026-07-28 over HTTP with exactly `headers`.
fn decode(body: &Value, headers: &[(&str, &str)]) -> Incoming {
    let bytes = serde_json::to_vec(body).unwrap();
    let decoded = MODERN.decode_http(jsonrpc::decode(&bytes), headers, &weather_tools());
    assert_eq!(decoded.items().len(), 1);
    decoded.into_items().next().expect("one item")
}

/// `Ok(())` when accepted, else the failure kind; asserts the id is kept.
fn outcome(item: &Incoming) -> Result<(), FailureKind> {
    match item {
        Incoming::Call(_) => Ok(()),
        Incoming::Invalid(invalid) => {
            assert_eq!(
                invalid.id,
                Some(Id::from(7)),
                "the request id is kept in the error"
            );
            Err(invalid.failure.kind)
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// Headers as `(name, value)` pairs.
type Headers<'a> = Vec<(&'a str, &'a str)>;
/// What a table row expects: accepted, or refused with this kind.
type Expect = Result<(), FailureKind>;

const V: (&str, &str) = ("MCP-Protocol-Version", "2026-07-28");
const M: (&str, &str) = ("Mcp-Method", "tools/call");

#[test]
fn standard_header_cases() {
    use FailureKind::*;
    let body = tools_call("weather", json!({}));
    let rows: Vec<(&str, Headers<'_>, Expect)> = vec![
        ("all present", vec![V, M, ("Mcp-Name", "weather")], Ok(())),
        (
            "names are case-insensitive",
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("MCP-METHOD", "tools/call"),
                ("mcp-name", "weather"),
            ],
            Ok(()),
        ),
        (
            "missing version header",
            vec![M, ("Mcp-Name", "weather")],
            Err(HeaderMismatch),
        ),
        (
            "version header differs from _meta",
            vec![
                ("MCP-Protocol-Version", "2025-11-25"),
                M,
                ("Mcp-Name", "weather"),
            ],
            Err(HeaderMismatch),
        ),
        (
            "missing Mcp-Method",
            vec![V, ("Mcp-Name", "weather")],
            Err(HeaderMismatch),
        ),
        (
            "method values are case-sensitive",
            vec![V, ("Mcp-Method", "TOOLS/CALL"), ("Mcp-Name", "weather")],
            Err(HeaderMismatch),
        ),
        ("missing Mcp-Name", vec![V, M], Err(HeaderMismatch)),
        (
            "different Mcp-Name",
            vec![V, M, ("Mcp-Name", "forecast")],
            Err(HeaderMismatch),
        ),
        (
            "repeated Mcp-Name",
            vec![V, M, ("Mcp-Name", "weather"), ("Mcp-Name", "weather")],
            Err(HeaderMismatch),
        ),
        (
            "base64 Mcp-Name of a plain name",
            vec![V, M, ("Mcp-Name", "=?base64?d2VhdGhlcg==?=")],
            Ok(()),
        ),
        (
            "malformed base64 (bad padding)",
            vec![V, M, ("Mcp-Name", "=?base64?d2VhdGhlcg?=")],
            Err(HeaderMismatch),
        ),
        (
            "malformed base64 (bad characters)",
            vec![V, M, ("Mcp-Name", "=?base64?d2V*dGhlcg==?=")],
            Err(HeaderMismatch),
        ),
    ];
    for (name, headers, expected) in rows {
        assert_eq!(outcome(&decode(&body, &headers)), expected, "{name}");
    }
}

#[test]
fn mcp_name_encoding_cases() {
    use FailureKind::*;
    let rows: Vec<(&str, &str, &str, Result<(), FailureKind>)> = vec![
        (
            "non-ASCII encoded",
            "Hello, 世界",
            "=?base64?SGVsbG8sIOS4lueVjA==?=",
            Ok(()),
        ),
        (
            "non-ASCII sent raw",
            "Hello, 世界",
            "Hello, 世界",
            Err(HeaderMismatch),
        ),
        (
            "leading/trailing space encoded",
            " padded ",
            "=?base64?IHBhZGRlZCA=?=",
            Ok(()),
        ),
        (
            "leading/trailing space raw",
            " padded ",
            " padded ",
            Err(HeaderMismatch),
        ),
        (
            "newline encoded",
            "line1\nline2",
            "=?base64?bGluZTEKbGluZTI=?=",
            Ok(()),
        ),
        (
            "sentinel collision encoded",
            "=?base64?literal?=",
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
            Ok(()),
        ),
        (
            "sentinel collision sent raw",
            "=?base64?literal?=",
            "=?base64?literal?=",
            Err(HeaderMismatch),
        ),
        (
            "uppercase marker is a literal",
            "=?BASE64?abc?=",
            "=?BASE64?abc?=",
            Ok(()),
        ),
        (
            "missing suffix is a literal",
            "=?base64?abc",
            "=?base64?abc",
            Ok(()),
        ),
        ("missing prefix is a literal", "abc?=", "abc?=", Ok(())),
        (
            "internal spaces stay plain",
            "us west 1",
            "us west 1",
            Ok(()),
        ),
        ("empty value", "", "", Ok(())),
    ];
    for (name, value, header, expected) in rows {
        let body = tools_call(value, json!({}));
        let got = outcome(&decode(&body, &[V, M, ("Mcp-Name", header)]));
        // An accepted request then names the decoded value.
        assert_eq!(got, expected, "{name}");
    }
    // The client side produces exactly the spec's encodings.
    for (value, header) in [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ] {
        let params = json!({"name": value});
        let headers = MODERN
            .client_headers("tools/call", params.as_object().unwrap(), false, None)
            .unwrap();
        assert!(
            headers.contains(&("Mcp-Name".to_owned(), header.to_owned())),
            "{value:?}: {headers:?}"
        );
    }
}

#[test]
fn resources_read_and_prompts_get_mirror_their_target() {
    let read = json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read",
                      "params": {"_meta": meta(), "uri": "file:///ü.txt"}});
    let encoded = "=?base64?ZmlsZTovLy/DvC50eHQ=?=";
    let headers = [V, ("Mcp-Method", "resources/read"), ("Mcp-Name", encoded)];
    assert_eq!(outcome(&decode(&read, &headers)), Ok(()));
    let wrong = [
        V,
        ("Mcp-Method", "resources/read"),
        ("Mcp-Name", "file:///u.txt"),
    ];
    assert_eq!(
        outcome(&decode(&read, &wrong)),
        Err(FailureKind::HeaderMismatch)
    );
    let get = json!({"jsonrpc": "2.0", "id": 7, "method": "prompts/get",
                     "params": {"_meta": meta(), "name": "greet"}});
    assert_eq!(
        outcome(&decode(&get, &[V, ("Mcp-Method", "prompts/get")])),
        Err(FailureKind::HeaderMismatch)
    );
    assert_eq!(
        outcome(&decode(
            &get,
            &[V, ("Mcp-Method", "prompts/get"), ("Mcp-Name", "greet")]
        )),
        Ok(())
    );
    // tools/list has no Mcp-Name rule.
    let list =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta()}});
    assert_eq!(
        outcome(&decode(&list, &[V, ("Mcp-Method", "tools/list")])),
        Ok(())
    );
}

#[test]
fn mcp_param_cases() {
    use FailureKind::*;
    let base = |extra: &[(&'static str, &'static str)]| {
        let mut h = vec![V, M, ("Mcp-Name", "weather")];
        h.extend_from_slice(extra);
        h
    };
    let rows: Vec<(&str, Value, Headers<'_>, Expect)> = vec![
        (
            "all mirrored",
            json!({"region": "us-west1", "count": 42, "flag": true, "where": {"zone": "b"}}),
            base(&[
                ("Mcp-Param-Region", "us-west1"),
                ("Mcp-Param-Count", "42"),
                ("Mcp-Param-Flag", "true"),
                ("Mcp-Param-Zone", "b"),
            ]),
            Ok(()),
        ),
        (
            "header name case variation",
            json!({"region": "eu"}),
            base(&[("mcp-param-REGION", "eu")]),
            Ok(()),
        ),
        (
            "nothing bound, nothing sent",
            json!({"text": "x"}),
            base(&[]),
            Ok(()),
        ),
        (
            "missing header for a value",
            json!({"region": "eu"}),
            base(&[]),
            Err(HeaderMismatch),
        ),
        (
            "header without a value",
            json!({}),
            base(&[("Mcp-Param-Region", "eu")]),
            Err(HeaderMismatch),
        ),
        (
            "null value: no header expected",
            json!({"flag": null}),
            base(&[]),
            Ok(()),
        ),
        (
            "null value: header refused",
            json!({"flag": null}),
            base(&[("Mcp-Param-Flag", "false")]),
            Err(HeaderMismatch),
        ),
        (
            "different value",
            json!({"region": "eu"}),
            base(&[("Mcp-Param-Region", "us")]),
            Err(HeaderMismatch),
        ),
        (
            "integers compare numerically (42.0)",
            json!({"count": 42.0}),
            base(&[("Mcp-Param-Count", "42")]),
            Ok(()),
        ),
        (
            "integer mismatch",
            json!({"count": 42}),
            base(&[("Mcp-Param-Count", "43")]),
            Err(HeaderMismatch),
        ),
        (
            "booleans are lowercase",
            json!({"flag": true}),
            base(&[("Mcp-Param-Flag", "True")]),
            Err(HeaderMismatch),
        ),
        (
            "unicode value encoded",
            json!({"region": "Zürich"}),
            base(&[("Mcp-Param-Region", "=?base64?WsO8cmljaA==?=")]),
            Ok(()),
        ),
        (
            "malformed base64 value",
            json!({"region": "eu"}),
            base(&[("Mcp-Param-Region", "=?base64?ZX?=")]),
            Err(HeaderMismatch),
        ),
        (
            "extra unbound header",
            json!({"region": "eu"}),
            base(&[("Mcp-Param-Region", "eu"), ("Mcp-Param-Other", "x")]),
            Err(HeaderMismatch),
        ),
        (
            "nested property",
            json!({"where": {"zone": "a"}}),
            base(&[("Mcp-Param-Zone", "a")]),
            Ok(()),
        ),
        (
            "nested property mismatch",
            json!({"where": {"zone": "a"}}),
            base(&[("Mcp-Param-Zone", "b")]),
            Err(HeaderMismatch),
        ),
        (
            "repeated param header",
            json!({"region": "eu"}),
            base(&[("Mcp-Param-Region", "eu"), ("Mcp-Param-Region", "eu")]),
            Err(HeaderMismatch),
        ),
    ];
    for (name, arguments, headers, expected) in rows {
        let body = tools_call("weather", arguments);
        assert_eq!(outcome(&decode(&body, &headers)), expected, "{name}");
    }
    // An unknown tool is not checked here: it fails later as an unknown tool.
    let body = tools_call("other", json!({"region": "eu"}));
    assert_eq!(
        outcome(&decode(
            &body,
            &[V, M, ("Mcp-Name", "other"), ("Mcp-Param-X", "1")]
        )),
        Ok(())
    );
}

#[test]
fn validation_order() {
    use FailureKind::*;
    // Header problems win over _meta problems, which win over the method, which wins over params.
    let no_meta = json!({"jsonrpc": "2.0", "id": 7, "method": "nope/nope", "params": {}});
    assert_eq!(outcome(&decode(&no_meta, &[V])), Err(HeaderMismatch));
    assert_eq!(
        outcome(&decode(&no_meta, &[V, ("Mcp-Method", "nope/nope")])),
        Err(MissingMeta)
    );
    let no_caps = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    assert_eq!(
        outcome(&decode(&no_caps, &[V, ("Mcp-Method", "tools/list")])),
        Err(MissingMeta)
    );
    let unknown = json!({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"_meta": meta()}});
    assert_eq!(
        outcome(&decode(&unknown, &[V, ("Mcp-Method", "ping")])),
        Err(UnknownMethod)
    );
    let no_name =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"_meta": meta()}});
    assert_eq!(outcome(&decode(&no_name, &[V, M])), Err(InvalidParams));
    // Param checks come last: bad params beat a missing Mcp-Param header.
    let bad_args = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"_meta": meta(), "name": "weather", "arguments": [1]}});
    assert_eq!(
        outcome(&decode(&bad_args, &[V, M, ("Mcp-Name", "weather")])),
        Err(InvalidParams)
    );
    // Status and code of each.
    for (kind, status, code) in [
        (HeaderMismatch, 400, -32020),
        (MissingMeta, 400, -32602),
        (UnknownMethod, 404, -32601),
        (InvalidParams, 200, -32602),
    ] {
        let m = kind.mapping(Revision::V2026_07_28);
        assert_eq!((m.status.as_u16(), m.code), (status, code));
    }
}

#[test]
fn http_header_map_is_read_in_place() {
    let mut map = http::HeaderMap::new();
    map.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
    map.insert("mcp-method", "tools/call".parse().unwrap());
    map.insert("mcp-name", "weather".parse().unwrap());
    map.insert("mcp-param-region", "eu".parse().unwrap());
    let body = serde_json::to_vec(&tools_call("weather", json!({"region": "eu"}))).unwrap();
    let decoded = MODERN.decode_http(jsonrpc::decode(&body), &map, &weather_tools());
    assert!(
        matches!(decoded.items()[0], Incoming::Call(_)),
        "{:?}",
        decoded.items()
    );
    map.append("mcp-param-region", "eu".parse().unwrap());
    let decoded = MODERN.decode_http(jsonrpc::decode(&body), &map, &weather_tools());
    assert!(
        matches!(&decoded.items()[0], Incoming::Invalid(i) if i.failure.kind == FailureKind::HeaderMismatch)
    );
}

#[test]
fn legacy_revisions_check_no_headers() {
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"region":"eu"}}}"#;
    for r in [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ] {
        let headers = [("Mcp-Method", "WRONG"), ("Mcp-Name", "other")];
        let decoded =
            Adapter::new(r).decode_http(jsonrpc::decode(body), &headers[..], &weather_tools());
        assert!(matches!(decoded.items()[0], Incoming::Call(_)), "{r}");
    }
}

fn call(item: &Incoming) -> &Call {
    match item {
        Incoming::Call(c) => c,
        other => panic!("expected a call: {other:?}"),
    }
}

#[test]
fn batch_items_are_independent() {
    let adapter = Adapter::new(Revision::V2025_03_26);
    let body = br#"[
        {"jsonrpc":"2.0","id":1,"method":"tools/list"},
        {"jsonrpc":"2.0","method":"notifications/initialized"},
        {"jsonrpc":"2.0","id":"srv-1","result":{"action":"accept"}},
        {"jsonrpc":"2.0","id":2,"method":"bogus"},
        3,
        {"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-03-26"}},
        {"jsonrpc":"2.0","method":"notifications/whatever"},
        {"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}
    ]"#;
    let decoded = adapter.decode(jsonrpc::decode(body));
    assert!(decoded.is_batch());
    let items = &decoded.items();
    assert_eq!(items.len(), 8);
    assert_eq!(call(&items[0]).operation, Operation::ListTools);
    assert_eq!(call(&items[1]).operation, Operation::HandshakeComplete);
    assert!(call(&items[1]).is_notification());
    assert!(
        matches!(&items[2], Incoming::Reply(r) if r.id == Id::from("srv-1") && r.outcome.is_ok())
    );
    // A method no revision defines is left to the server's extensions (which answer
    // -32601 when none has it).
    assert_eq!(call(&items[3]).operation, Operation::Extension);
    assert_eq!(call(&items[3]).id, Some(Id::from(2)));
    assert!(
        matches!(&items[4], Incoming::Invalid(i) if i.failure.kind == FailureKind::InvalidRequest && i.id.is_none() && i.respond)
    );
    assert!(
        matches!(&items[5], Incoming::Invalid(i) if i.failure.kind == FailureKind::InvalidRequest && i.id == Some(Id::from(4)))
    );
    assert_eq!(call(&items[6]).operation, Operation::Notification);
    // An invalid notification gets no reply.
    assert!(matches!(&items[7], Incoming::Invalid(i) if !i.respond));
    // An empty batch is one invalid request.
    let empty = adapter.decode(jsonrpc::decode(b"[]"));
    assert!(!empty.is_batch());
    assert!(
        matches!(&empty.items()[0], Incoming::Invalid(i) if i.failure.kind == FailureKind::InvalidRequest)
    );
}

#[test]
fn replies_to_pushed_requests() {
    let adapter = Adapter::new(Revision::V2025_11_25);
    let error = br#"{"jsonrpc":"2.0","id":"q-9","error":{"code":-32603,"message":"user closed"}}"#;
    let decoded = adapter.decode(jsonrpc::decode(error));
    let Incoming::Reply(reply) = &decoded.items()[0] else {
        panic!()
    };
    let answer = mcp_adapters::ElicitAnswer::from_reply(&reply.outcome);
    assert!(!answer.accepted(), "an error reply is a refusal");
    // 2026-07-28 clients send no responses.
    let ok = br#"{"jsonrpc":"2.0","id":"q-9","result":{}}"#;
    let decoded = MODERN.decode(jsonrpc::decode(ok));
    assert!(matches!(&decoded.items()[0], Incoming::Invalid(i) if !i.respond));
}

#[test]
fn extension_methods_on_every_revision() {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "com.example/search", "params": {"_meta": meta()}});
    let bytes = serde_json::to_vec(&body).unwrap();
    let decoded = MODERN.decode(jsonrpc::decode(&bytes));
    assert_eq!(call(&decoded.items()[0]).operation, Operation::Extension);
    assert_eq!(call(&decoded.items()[0]).method, "com.example/search");
    // The handshake revisions negotiate extensions at `initialize` (SEP-2133): their methods
    // reach the server too.
    let legacy = Adapter::new(Revision::V2025_11_25).decode(jsonrpc::decode(&bytes));
    assert_eq!(call(&legacy.items()[0]).operation, Operation::Extension);
    for removed in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let body =
            json!({"jsonrpc": "2.0", "id": 7, "method": removed, "params": {"_meta": meta()}});
        let decoded = MODERN.decode(jsonrpc::decode(&serde_json::to_vec(&body).unwrap()));
        assert!(
            matches!(&decoded.items()[0], Incoming::Invalid(i) if i.failure.kind == FailureKind::UnknownMethod),
            "{removed}"
        );
    }
    for legacy_only in ["server/discover", "subscriptions/listen"] {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": legacy_only});
        let decoded = Adapter::new(Revision::V2025_06_18)
            .decode(jsonrpc::decode(&serde_json::to_vec(&body).unwrap()));
        assert!(
            matches!(&decoded.items()[0], Incoming::Invalid(i) if i.failure.kind == FailureKind::UnknownMethod),
            "{legacy_only}"
        );
    }
}

#[test]
fn mrtr_fields_are_taken_out_of_params() {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {
        "_meta": meta(), "uri": "file:///a",
        "inputResponses": {"k": {"action": "accept", "content": {"x": 1}}}, "requestState": "st"}});
    let decoded = MODERN.decode(jsonrpc::decode(&serde_json::to_vec(&body).unwrap()));
    let c = call(&decoded.items()[0]);
    assert_eq!(c.target.as_deref(), Some("file:///a"));
    assert_eq!(c.request_state.as_deref(), Some("st"));
    assert!(
        c.answers
            .as_ref()
            .unwrap()
            .elicitation("k")
            .unwrap()
            .accepted()
    );
    assert!(c.is_retry());
    assert!(!c.params.contains_key("inputResponses") && !c.params.contains_key("requestState"));
    for (field, bad) in [("inputResponses", json!([1])), ("requestState", json!(5))] {
        let mut body = body.clone();
        body["params"][field] = bad;
        let decoded = MODERN.decode(jsonrpc::decode(&serde_json::to_vec(&body).unwrap()));
        assert!(
            matches!(&decoded.items()[0], Incoming::Invalid(i) if i.failure.kind == FailureKind::InvalidParams),
            "{field}"
        );
    }
}

#[test]
fn answers_in_arguments_are_taken_out_before_the_tool_sees_them() {
    for r in [Revision::V2024_11_05, Revision::V2025_03_26] {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gate","arguments":{"x":1,"mcpAnswers":{"go":{"action":"accept","content":{}}},"mcpState":"s1"}}}"#;
        let decoded = Adapter::new(r).decode(jsonrpc::decode(body));
        let c = call(&decoded.items()[0]);
        assert_eq!(
            c.arguments,
            json!({"x": 1}).as_object().unwrap().clone(),
            "{r}"
        );
        assert_eq!(c.request_state.as_deref(), Some("s1"));
        assert!(
            c.answers
                .as_ref()
                .unwrap()
                .elicitation("go")
                .unwrap()
                .accepted()
        );
    }
    // On a push revision the same arguments are the tool's own.
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gate","arguments":{"mcpAnswers":{}}}}"#;
    let decoded = Adapter::new(Revision::V2025_06_18).decode(jsonrpc::decode(body));
    assert!(
        call(&decoded.items()[0])
            .arguments
            .contains_key("mcpAnswers")
    );
}

#[test]
fn initialize_params_and_legacy_log_level() {
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}"#;
    let decoded = Adapter::new(Revision::V2025_06_18).decode(jsonrpc::decode(body));
    let c = call(&decoded.items()[0]);
    assert_eq!(c.operation, Operation::Describe);
    assert_eq!(c.protocol_version.as_deref(), Some("2025-06-18"));
    assert!(c.client.can_elicit_form() && !c.client.can_elicit_url());
    let bad = br#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"loud"}}"#;
    let decoded = Adapter::new(Revision::V2025_06_18).decode(jsonrpc::decode(bad));
    assert!(
        matches!(&decoded.items()[0], Incoming::Invalid(i) if i.failure.kind == FailureKind::InvalidParams)
    );
    let bad_meta_level = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "loud"}}});
    let decoded = MODERN.decode(jsonrpc::decode(
        &serde_json::to_vec(&bad_meta_level).unwrap(),
    ));
    assert!(
        matches!(&decoded.items()[0], Incoming::Invalid(i) if i.failure.kind == FailureKind::InvalidParams)
    );
}

#[test]
fn selection_over_http() {
    let set = AdapterSet::all();
    let none: [(&str, &str); 0] = [];
    let parse = jsonrpc::decode(b"{not json");
    let rejected = set.select_http(&parse, &none[..], None, None).unwrap_err();
    assert_eq!(rejected.failure.kind, FailureKind::Parse);
    let body = jsonrpc::decode(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#);
    let mismatch = set
        .select_http(
            &body,
            &[("MCP-Protocol-Version", "2025-06-18")][..],
            None,
            None,
        )
        .unwrap_err();
    assert_eq!(mismatch.failure.kind, FailureKind::HeaderMismatch);
    let encoded = mismatch.adapter.encode_failure(None, &mismatch.failure);
    assert_eq!(
        (
            encoded.status.as_u16(),
            &encoded.to_value()["error"]["code"]
        ),
        (400, &json!(-32020))
    );
    let ok = set.select_http(&body, &none[..], None, None).unwrap();
    assert_eq!(ok.adapter.revision(), Revision::V2026_07_28);
    let non_utf8: [(&str, &[u8]); 1] = [("MCP-Protocol-Version", b"\xff")];
    let plain = jsonrpc::decode(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    assert_eq!(
        set.select_http(&plain, &non_utf8[..], None, None)
            .unwrap_err()
            .failure
            .kind,
        FailureKind::HeaderMismatch
    );
    let pinned = set
        .select_http(
            &plain,
            &[("MCP-Protocol-Version", "2025-11-25")][..],
            Some("2025-06-18"),
            None,
        )
        .unwrap();
    assert_eq!(pinned.adapter.revision(), Revision::V2025_06_18);
}

#[test]
fn the_published_2026_examples_decode() {
    let root = std::env::var_os("MCP_SPEC_SCHEMAS").map_or_else(
        || {
            std::path::PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/spec-schemas"
            ))
        },
        std::path::PathBuf::from,
    );
    let dir = root.join("2026-07-28/examples");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "CI=true and {} is missing",
            dir.display()
        );
        eprintln!("notice: {} not found; skipped", dir.display());
        return;
    };
    let mut seen = 0;
    for entry in entries {
        let entry = entry.unwrap();
        let kind = entry.file_name().to_string_lossy().into_owned();
        if !kind.ends_with("Request")
            || kind.starts_with("CreateMessage")
            || kind.starts_with("Elicit")
            || kind.starts_with("ListRoots")
        {
            continue;
        }
        for file in std::fs::read_dir(entry.path()).unwrap() {
            let bytes = std::fs::read(file.unwrap().path()).unwrap();
            let value: Value = serde_json::from_slice(&bytes).unwrap();
            let method = value["method"].as_str().unwrap().to_owned();
            let params = value["params"].as_object().cloned().unwrap_or_default();
            let headers = MODERN
                .client_headers(&method, &params, false, None)
                .unwrap();
            let decoded = MODERN.decode_http(jsonrpc::decode(&bytes), &headers, &NoTools);
            assert!(
                matches!(decoded.items()[0], Incoming::Call(_)),
                "{kind}: {:?}",
                decoded.items()[0]
            );
            seen += 1;
        }
    }
    assert!(seen >= 8, "only {seen} example requests");
}

#[test]
fn modern_client_context_is_moved_out_of_meta() {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
        "progressToken": 3,
        "com.example/kept": true
    }}});
    let decoded = MODERN.decode(jsonrpc::decode(&serde_json::to_vec(&body).unwrap()));
    let Some(Incoming::Call(call)) = decoded.items().first() else {
        panic!("expected a call, got {decoded:?}");
    };
    assert!(call.client.has("roots"));
    assert_eq!(call.client.info, Some(json!({"name": "c", "version": "1"})));
    assert_eq!(call.progress_token, Some(Id::from(3)));
    assert_eq!(call.protocol_version.as_deref(), Some("2026-07-28"));
    // What `call.client` and `call.protocol_version` hold is not kept twice; the rest of
    // `_meta` stays.
    assert_eq!(
        call.meta().cloned().map(Value::Object),
        Some(json!({
            "progressToken": 3,
            "com.example/kept": true
        }))
    );
    // A client info that is not an object is not the client's identity, and stays.
    let odd = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": "c"
    }}});
    let decoded = MODERN.decode(jsonrpc::decode(&serde_json::to_vec(&odd).unwrap()));
    let Some(Incoming::Call(call)) = decoded.items().first() else {
        panic!("expected a call, got {decoded:?}");
    };
    assert_eq!(call.client.info, None);
    assert_eq!(
        call.meta().cloned().map(Value::Object),
        Some(json!({"io.modelcontextprotocol/clientInfo": "c"}))
    );
}

#[test]
fn header_map_and_pairs_give_the_same_answers() {
    let body = serde_json::to_vec(&tools_call("weather", json!({"region": "eu"}))).unwrap();
    let full = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "weather"),
        ("Mcp-Param-Region", "eu"),
    ];
    let mut cases: Vec<Vec<(&str, &str)>> = vec![full.to_vec()];
    for skip in 0..full.len() {
        let mut without = full.to_vec();
        without.remove(skip);
        cases.push(without);
        let mut twice = full.to_vec();
        twice.push(full[skip]);
        cases.push(twice);
        let mut other = full.to_vec();
        other[skip].1 = "2025-11-25";
        cases.push(other);
    }
    for pairs in cases {
        let mut map = http::HeaderMap::new();
        for (name, value) in &pairs {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        let from_map = MODERN.decode_http(jsonrpc::decode(&body), &map, &weather_tools());
        let from_pairs =
            MODERN.decode_http(jsonrpc::decode(&body), pairs.as_slice(), &weather_tools());
        assert_eq!(from_map, from_pairs, "{pairs:?}");
        let set = AdapterSet::all();
        let decoded = jsonrpc::decode(&body);
        assert_eq!(
            set.select_http(&decoded, &map, None, None),
            set.select_http(&decoded, pairs.as_slice(), None, None),
            "{pairs:?}"
        );
    }
}

#[test]
fn failures_carry_the_request_id_back() {
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "weather"),
    ];
    let ok = json!({"jsonrpc": "2.0", "id": "req-1", "method": "tools/call",
                    "params": {"_meta": meta(), "name": "weather", "arguments": {}}});
    let Incoming::Call(call) = decode(&ok, &headers) else {
        panic!("expected a call");
    };
    assert_eq!(call.id, Some(Id::from("req-1")));
    assert_eq!(call.method, "tools/call");
    assert_eq!(call.target.as_deref(), Some("weather"));
    // One failure from each step of the validation order.
    let failing = [
        (
            json!({"jsonrpc": "2.0", "id": "req-1", "method": "tools/call", "params": [1]}),
            FailureKind::InvalidParams,
        ),
        (
            json!({"jsonrpc": "2.0", "id": "req-1", "method": "tools/list", "params": {"_meta": meta()}}),
            FailureKind::HeaderMismatch,
        ),
        (
            json!({"jsonrpc": "2.0", "id": "req-1", "method": "tools/call",
                   "params": {"name": "weather"}}),
            FailureKind::MissingMeta,
        ),
        (
            json!({"jsonrpc": "2.0", "id": "req-1", "method": "tools/call",
                   "params": {"_meta": meta(), "name": "weather", "arguments": 3}}),
            FailureKind::InvalidParams,
        ),
        (
            json!({"jsonrpc": "2.0", "id": "req-1", "method": "tools/call",
                   "params": {"_meta": meta(), "name": "weather", "arguments": {"region": "eu"}}}),
            FailureKind::HeaderMismatch,
        ),
    ];
    for (body, kind) in failing {
        match decode(&body, &headers) {
            Incoming::Invalid(invalid) => {
                assert_eq!(invalid.id, Some(Id::from("req-1")), "{body}");
                assert!(invalid.respond, "{body}");
                assert_eq!(invalid.failure.kind, kind, "{body}");
            }
            other => panic!("{body}: expected a failure, got {other:?}"),
        }
    }
    // A notification that fails is not answered and has no id.
    let notification =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [3]});
    let decoded = MODERN.decode(jsonrpc::decode(&serde_json::to_vec(&notification).unwrap()));
    match &decoded.items()[0] {
        Incoming::Invalid(invalid) => {
            assert_eq!(invalid.id, None);
            assert!(!invalid.respond);
            assert_eq!(invalid.failure.kind, FailureKind::InvalidParams);
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// Per revision, a `tools/call` with every member the decoder moves out: what moves into the
/// typed fields and what stays in `params` (and in `_meta`).
#[test]
fn tools_call_members_move_out_per_revision() {
    for revision in Revision::ALL {
        let adapter = Adapter::new(revision);
        let modern = revision == Revision::V2026_07_28;
        let mut meta = json!({"progressToken": "p", "com.example/kept": [1]});
        if modern {
            meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
            meta["io.modelcontextprotocol/clientCapabilities"] = json!({"roots": {}});
            meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "c"});
            meta["io.modelcontextprotocol/logLevel"] = json!("debug");
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "t", "arguments": {"a": 1}, "_meta": meta, "extra": null,
            "inputResponses": {"k": {"action": "decline"}}, "requestState": "s"}});
        let decoded = adapter.decode(jsonrpc::decode(&serde_json::to_vec(&body).unwrap()));
        let Some(Incoming::Call(call)) = decoded.items().first() else {
            panic!("{revision:?}: expected a call, got {decoded:?}");
        };
        assert_eq!(call.target.as_deref(), Some("t"), "{revision:?}");
        assert_eq!(Value::Object(call.arguments.clone()), json!({"a": 1}));
        assert_eq!(call.progress_token, Some(Id::from("p")), "{revision:?}");
        // `name` moved into `target`, like `arguments` into `arguments`.
        let mut kept = json!({"extra": null,
            "_meta": {"progressToken": "p", "com.example/kept": [1]}});
        if modern {
            assert!(call.is_retry(), "{revision:?}");
            assert_eq!(call.request_state.as_deref(), Some("s"));
            assert_eq!(call.protocol_version.as_deref(), Some("2026-07-28"));
            assert!(call.client.has("roots"));
            assert_eq!(call.client.info, Some(json!({"name": "c"})));
            assert_eq!(call.log_level.map(|l| l.as_str()), Some("debug"));
            kept["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
        } else {
            // No input-required retries here: the members stay where they were.
            assert_eq!(call.request_state, None, "{revision:?}");
            assert_eq!(call.protocol_version, None, "{revision:?}");
            assert_eq!(call.client, Default::default(), "{revision:?}");
            kept["inputResponses"] = json!({"k": {"action": "decline"}});
            kept["requestState"] = json!("s");
        }
        assert_eq!(Value::Object(call.params.clone()), kept, "{revision:?}");
    }
}

#[test]
fn a_task_method_routed_by_mcp_name_must_name_its_task() {
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
        "params": {"_meta": meta(), "taskId": "t-1"}}))
    .unwrap();
    let decode = |headers: &[(&str, &str)]| {
        MODERN.decode_http(jsonrpc::decode(&body), headers, &weather_tools())
    };
    let base = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tasks/get"),
    ];
    // Without Mcp-Name (clients that do not route by it), and with the task's id.
    assert!(matches!(decode(&base).items()[0], Incoming::Call(_)));
    let named = [base[0], base[1], ("Mcp-Name", "t-1")];
    assert!(matches!(decode(&named).items()[0], Incoming::Call(_)));
    // Another task's id is a header mismatch.
    let wrong = [base[0], base[1], ("Mcp-Name", "t-2")];
    assert!(
        matches!(&decode(&wrong).items()[0], Incoming::Invalid(i) if i.failure.kind == FailureKind::HeaderMismatch)
    );
}
