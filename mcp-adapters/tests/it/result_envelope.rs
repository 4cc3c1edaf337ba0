//! The result envelope of 2026-07-28 with server info the caller already projected, and the
//! in-place projection of tool results.

use mcp_adapters::{Adapter, Operation, ResultContext, Revision};
use serde_json::{Value, json};

const MODERN: Adapter = Adapter::new(Revision::V2026_07_28);

fn info_of(body: &Value) -> &Value {
    &body["_meta"]["io.modelcontextprotocol/serverInfo"]
}

#[test]
fn server_info_is_projected_unless_the_caller_did() {
    let info = json!({"name": "s", "version": "1", "title": "S", "icons": [], "x": 1});
    let raw = ResultContext {
        server_info: Some(&info),
        ..ResultContext::default()
    };
    let body = MODERN
        .result_body(Operation::ListTools, false, json!({"tools": []}), &raw)
        .unwrap();
    assert_eq!(info_of(&body), &MODERN.project_implementation(&info));
    // Something projection would change (it keeps only objects) shows which path ran.
    let odd = json!(["not", "an", "object"]);
    let raw = ResultContext {
        server_info: Some(&odd),
        ..ResultContext::default()
    };
    let body = MODERN
        .result_body(Operation::ListTools, false, json!({"tools": []}), &raw)
        .unwrap();
    assert_eq!(info_of(&body), &json!({}));

    // Already projected: copied as given (the caller vouches for it).
    let ready = ResultContext {
        server_info: Some(&odd),
        server_info_projected: true,
        ..ResultContext::default()
    };
    let body = MODERN
        .result_body(Operation::ListTools, false, json!({"tools": []}), &ready)
        .unwrap();
    assert_eq!(info_of(&body), &odd);

    // Either way, a handler's own server info wins.
    let own = json!({"tools": [], "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "h"}}});
    let body = MODERN
        .result_body(Operation::ListTools, false, own, &ready)
        .unwrap();
    assert_eq!(info_of(&body), &json!({"name": "h"}));
}

fn project(adapter: Adapter, result: Value) -> Value {
    let Value::Object(mut map) = result else {
        panic!("not an object");
    };
    adapter.project_tool_result(&mut map);
    Value::Object(map)
}

#[test]
fn tool_results_are_projected_in_place() {
    let old = Adapter::new(Revision::V2025_03_26);
    // Blocks are projected where they are.
    let link = json!({"content": [
        {"type": "text", "text": "a"},
        {"type": "resource_link", "uri": "a://b", "name": "b"}
    ]});
    assert_eq!(
        project(old, link),
        json!({"content": [
            {"type": "text", "text": "a"},
            {"type": "text", "text": "Resource: b <a://b>"}
        ]})
    );
    // Missing or malformed content becomes an empty list.
    assert_eq!(project(MODERN, json!({})), json!({"content": []}));
    assert_eq!(
        project(MODERN, json!({"content": "x", "isError": true})),
        json!({"content": [], "isError": true})
    );
    // Dropped structured output becomes the text of an empty result, and only then.
    assert_eq!(
        project(old, json!({"structuredContent": {"sum": 5}})),
        json!({"content": [{"type": "text", "text": "{\"sum\":5}"}]})
    );
    assert_eq!(
        project(
            old,
            json!({"content": [{"type": "text", "text": "5"}], "structuredContent": {"sum": 5}})
        ),
        json!({"content": [{"type": "text", "text": "5"}]})
    );
    assert_eq!(
        project(MODERN, json!({"structuredContent": 5})),
        json!({"content": [], "structuredContent": 5})
    );
}

/// No server info, server info to project, and server info already projected.
fn contexts(info: &Value) -> [ResultContext<'_>; 3] {
    [
        ResultContext::default(),
        ResultContext {
            server_info: Some(info),
            ..ResultContext::default()
        },
        ResultContext {
            server_info: Some(info),
            server_info_projected: true,
            ..ResultContext::default()
        },
    ]
}

/// A success response is written straight to bytes; what it says is exactly the envelope
/// around [`Adapter::result_body`], on every revision, whatever `_meta` and `resultType` the
/// handler set, and whether or not the server info still needs projecting.
#[test]
fn written_responses_say_what_result_body_says() {
    let info = json!({"name": "s", "version": "1", "title": "S", "x": 1});
    let bodies = [
        json!({"tools": []}),
        json!({"content": [{"type": "text", "text": "a \"quoted\" line\n"}], "structuredContent": {"sum": 5}}),
        json!({"content": [], "_meta": {"k": [1, 2]}}),
        json!({"content": [], "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "h"}}}),
        json!({"content": [], "_meta": "not an object"}),
        json!({"content": [], "resultType": "complete", "ttlMs": 5}),
        json!({"content": [], "resultType": "input_required"}),
    ];
    let contexts = contexts(&info);
    for revision in Revision::ALL {
        let adapter = Adapter::new(revision);
        for operation in [Operation::CallTool, Operation::ListTools, Operation::Ping] {
            for (n, body) in bodies.iter().enumerate() {
                for ctx in &contexts {
                    for (id, retry) in [(json!(7), false), (json!("s-1"), true)] {
                        let expected = adapter.result_body(operation, retry, body.clone(), ctx);
                        let encoded = adapter.encode_result(
                            serde_json::from_value(id.clone()).unwrap(),
                            operation,
                            retry,
                            body.clone(),
                            ctx,
                        );
                        let expected =
                            json!({"jsonrpc": "2.0", "id": id, "result": expected.unwrap()});
                        assert_eq!(
                            encoded.to_value(),
                            expected,
                            "{revision:?} {operation:?} #{n}"
                        );
                        assert!(!encoded.is_error());
                        assert_eq!(encoded.status, http::StatusCode::OK);
                        // The bytes are the message.
                        let parsed: Value = serde_json::from_slice(&encoded.to_bytes()).unwrap();
                        assert_eq!(parsed, expected);
                    }
                }
            }
        }
    }
}

#[test]
fn a_result_that_is_not_an_object_is_an_internal_error() {
    let encoded = MODERN.encode_result(
        1.into(),
        Operation::CallTool,
        false,
        json!([1]),
        &ResultContext::default(),
    );
    assert!(encoded.is_error());
    assert_eq!(encoded.to_value()["error"]["code"], -32603);
}

/// A typed tool result encodes exactly as its JSON does, on every revision: the projection of
/// blocks and structured output, `isError`, `_meta` with or without the server info.
#[test]
fn typed_tool_results_encode_as_their_json_does() {
    use mcp_adapters::{Call, Outcome, ToolResult};

    let info = json!({"name": "s", "version": "1", "title": "S", "x": 1});
    let blocks = vec![
        json!({"type": "text", "text": "a \"quoted\"\nline", "_meta": {"m": 1}}),
        json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}),
        json!({"type": "resource_link", "uri": "a://b", "name": "b", "title": "B", "icons": []}),
        json!({"type": "image", "data": "AAAA", "mimeType": "image/png", "annotations": {"priority": 1}}),
    ];
    let mut results = Vec::new();
    for content in [Vec::new(), blocks[..1].to_vec(), blocks.clone()] {
        for structured in [None, Some(json!({"sum": 5})), Some(json!([1, 2]))] {
            for meta in [
                None,
                Some(json!({"k": true})),
                Some(json!({"io.modelcontextprotocol/serverInfo": {"name": "h"}})),
            ] {
                for is_error in [false, true] {
                    let mut result = ToolResult::new(content.clone()).with_is_error(is_error);
                    if let Some(structured) = &structured {
                        result = result.with_structured_content(structured.clone());
                    }
                    if let Some(meta) = &meta {
                        result = result.with_meta(meta.as_object().unwrap().clone());
                    }
                    results.push(result);
                }
            }
        }
    }
    let contexts = contexts(&info);
    let call = Call::new(Operation::CallTool, Some(3.into()), "tools/call");
    for revision in Revision::ALL {
        let adapter = Adapter::new(revision);
        for (n, result) in results.iter().enumerate() {
            for ctx in &contexts {
                let typed = adapter
                    .encode(&call, Outcome::Tool(result.clone()), ctx)
                    .unwrap();
                let json = adapter
                    .encode(&call, Outcome::Value(result.clone().into_value()), ctx)
                    .unwrap();
                assert_eq!(typed, json, "{revision:?} #{n}");
                let parsed: Value = serde_json::from_slice(&typed.to_bytes()).unwrap();
                assert_eq!(parsed, json.to_value(), "{revision:?} #{n}");
            }
        }
    }
}

/// A typed tool's structured output written from its JSON text encodes as its parts do, on
/// every revision and context: objects, arrays and scalars, with and without the tool's
/// output schema; and the bytes of the common case are pinned.
#[test]
fn json_tool_results_encode_as_their_parts_do() {
    use mcp_adapters::{Call, Outcome, ToolResult};

    let info = json!({"name": "s", "version": "1", "title": "S", "x": 1});
    let contexts = contexts(&info);
    let call = Call::new(Operation::CallTool, Some(3.into()), "tools/call");
    let outputs = [
        json!({"sum": 5}),
        json!({"b": [1, {"c": null}], "a": "x \"y\"\n\u{1}\u{e9}"}),
        json!([1, 2]),
        json!("text"),
        json!(null),
    ];
    for revision in Revision::ALL {
        let adapter = Adapter::new(revision);
        for output in &outputs {
            for structured in [true, false] {
                let json = ToolResult::output(output).unwrap();
                let json = if structured {
                    json
                } else {
                    json.without_structured_content()
                };
                for ctx in &contexts {
                    let written = adapter
                        .encode(&call, Outcome::Tool(json.clone()), ctx)
                        .unwrap();
                    let parts = adapter
                        .encode(&call, Outcome::Value(json.clone().into_value()), ctx)
                        .unwrap();
                    let parsed: Value = serde_json::from_slice(&written.to_bytes()).unwrap();
                    assert_eq!(
                        parsed,
                        parts.to_value(),
                        "{revision:?} {output} {structured}"
                    );
                }
            }
        }
    }
    let ctx = ResultContext {
        server_info: Some(&info),
        server_info_projected: true,
        ..ResultContext::default()
    };
    let add = ToolResult::output(&json!({"sum": 5})).unwrap();
    let cases = [
        (
            Revision::V2026_07_28,
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"text":"{\"sum\":5}","type":"text"}],"structuredContent":{"sum":5},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","title":"S","version":"1","x":1}},"resultType":"complete"}}"#,
        ),
        (
            Revision::V2025_11_25,
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"text":"{\"sum\":5}","type":"text"}],"structuredContent":{"sum":5}}}"#,
        ),
        (
            Revision::V2025_03_26,
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"text":"{\"sum\":5}","type":"text"}]}}"#,
        ),
    ];
    for (revision, expected) in cases {
        let written = Adapter::new(revision)
            .encode(&call, Outcome::Tool(add.clone()), &ctx)
            .unwrap();
        assert_eq!(
            String::from_utf8(written.to_bytes()).unwrap(),
            expected,
            "{revision:?}"
        );
    }
}

/// The bytes of a written response, members in the order they have always been written:
/// the handler's members, then `_meta` (with the server info last), then `resultType`.
#[test]
fn written_responses_keep_their_bytes() {
    use mcp_adapters::{Call, Outcome, ToolResult};

    let info = json!({"name": "s", "version": "1"});
    let ctx = ResultContext {
        server_info: Some(&info),
        server_info_projected: true,
        ..ResultContext::default()
    };
    let call = Call::new(Operation::CallTool, Some(3.into()), "tools/call");
    let add = ToolResult::new(vec![json!({"type": "text", "text": "{\"sum\":5}"})])
        .with_structured_content(json!({"sum": 5}));
    let cases = [
        (
            Revision::V2026_07_28,
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"text":"{\"sum\":5}","type":"text"}],"structuredContent":{"sum":5},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"resultType":"complete"}}"#,
        ),
        (
            Revision::V2025_11_25,
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"text":"{\"sum\":5}","type":"text"}],"structuredContent":{"sum":5}}}"#,
        ),
    ];
    for (revision, expected) in cases {
        let adapter = Adapter::new(revision);
        let typed = adapter
            .encode(&call, Outcome::Tool(add.clone()), &ctx)
            .unwrap();
        assert_eq!(String::from_utf8(typed.to_bytes()).unwrap(), expected);
        let json = adapter
            .encode(&call, Outcome::Value(add.clone().into_value()), &ctx)
            .unwrap();
        assert_eq!(String::from_utf8(json.to_bytes()).unwrap(), expected);
    }
    let with_meta = ToolResult::new(Vec::new())
        .with_is_error(true)
        .with_meta(json!({"k": "\u{1}"}).as_object().unwrap().clone());
    let written = MODERN
        .encode(&call, Outcome::Tool(with_meta), &ctx)
        .unwrap()
        .to_bytes();
    assert_eq!(
        String::from_utf8(written).unwrap(),
        r#"{"jsonrpc":"2.0","id":"#.to_owned()
            + r#"3,"result":{"content":[],"isError":true,"_meta":{"k":"\u0001","io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"resultType":"complete"}}"#
    );
    let list = MODERN.encode_result(
        "x".into(),
        Operation::ListTools,
        false,
        json!({"tools": [], "_meta": {"a": 1}}),
        &ctx,
    );
    assert_eq!(
        String::from_utf8(list.to_bytes()).unwrap(),
        r#"{"jsonrpc":"2.0","id":"x","result":{"_meta":{"a":1,"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"cacheScope":"private","tools":[],"ttlMs":0,"resultType":"complete"}}"#
    );
}

/// A tool result's unknown members are written after the named ones, on every revision, as
/// the `Value` form holds them; one named like a member the writer owns is left out.
#[test]
fn a_tool_results_extra_members_are_written() {
    use mcp_adapters::ToolResult;
    use mcp_wire::jsonrpc::Id;
    let extra = json!({"vendor": {"x": [1, 2]}, "content": "no", "resultType": "no"});
    let result = ToolResult::new(vec![json!({"type": "text", "text": "a"})])
        .with_extra(extra.as_object().unwrap().clone());
    assert_eq!(
        result.clone().into_value(),
        json!({"content": [{"type": "text", "text": "a"}], "vendor": {"x": [1, 2]}})
    );
    for revision in Revision::ALL {
        let adapter = Adapter::new(revision);
        let written = adapter
            .encode_tool_result(Id::from(1), result.clone(), &ResultContext::default())
            .to_value();
        assert_eq!(
            written["result"]["vendor"],
            json!({"x": [1, 2]}),
            "{revision}"
        );
        assert_eq!(
            written["result"]["content"][0]["text"], "a",
            "{revision}: {written}"
        );
        if adapter.features().result_envelope {
            assert_eq!(written["result"]["resultType"], "complete", "{revision}");
        }
    }
    // No extra member: the result is written as before.
    let plain = ToolResult::new(Vec::new()).with_extra(serde_json::Map::new());
    assert_eq!(plain, ToolResult::new(Vec::new()));
}
