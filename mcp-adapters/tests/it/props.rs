//! Property tests: header mirroring round-trips, and decoding arbitrary input never panics.

use std::collections::HashMap;

use mcp_adapters::{Adapter, AdapterSet, ElicitAnswer, FailureKind, Incoming, Revision};
use mcp_schema::extract_headers;
use mcp_wire::jsonrpc;
use proptest::prelude::*;
use serde_json::{Value, json};

const MODERN: Adapter = Adapter::new(Revision::V2026_07_28);
const SAFE: i64 = (1 << 53) - 1;

fn tools() -> HashMap<String, Vec<mcp_schema::HeaderBinding>> {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "flag": {"type": "boolean", "x-mcp-header": "Flag"}
    }});
    let bindings = extract_headers(&schema).unwrap();
    HashMap::from([
        ("t".to_owned(), bindings.clone()),
        ("ü t\n".to_owned(), bindings),
    ])
}

fn body(name: &str, arguments: &Value) -> (Vec<u8>, serde_json::Map<String, Value>) {
    let params = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                  "io.modelcontextprotocol/clientCapabilities": {}},
                        "name": name, "arguments": arguments});
    let bytes = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
    )
    .unwrap();
    (bytes, params.as_object().unwrap().clone())
}

fn arguments() -> impl Strategy<Value = Value> {
    (
        proptest::option::of(any::<String>()),
        proptest::option::of(-SAFE..=SAFE),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(region, count, flag)| {
            let mut args = serde_json::Map::new();
            if let Some(r) = region {
                args.insert("region".into(), r.into());
            }
            if let Some(c) = count {
                args.insert("count".into(), c.into());
            }
            if let Some(f) = flag {
                args.insert("flag".into(), f.into());
            }
            Value::Object(args)
        })
}

proptest! {
    /// Whatever the values, the headers the client side builds pass the server's checks.
    #[test]
    fn client_headers_always_pass(name in prop_oneof![Just("t".to_owned()), Just("ü t\n".to_owned()), any::<String>()],
                                  args in arguments()) {
        let tools = tools();
        let (bytes, params) = body(&name, &args);
        let bindings = tools.get(&name).map(Vec::as_slice);
        let headers = MODERN.client_headers("tools/call", &params, false, bindings).unwrap();
        let decoded = MODERN.decode_http(jsonrpc::decode(&bytes), &headers, &tools);
        prop_assert!(matches!(decoded.items()[0], Incoming::Call(_)), "{:?} {:?}", headers, decoded.items());
    }

    /// A tool call's headers read from its name and arguments are the headers of its params,
    /// on every revision, and `client_headers` is the same pairs as owned strings.
    #[test]
    fn tool_call_headers_are_the_headers_of_its_params(
        name in prop_oneof![Just("t".to_owned()), Just("ü t\n".to_owned()), any::<String>()],
        args in prop_oneof![arguments(), Just(Value::Null), Just(json!("not an object"))],
        known in any::<bool>(),
    ) {
        let tools = tools();
        let bindings = tools.get(&name).map(Vec::as_slice).filter(|_| known);
        let mut params = serde_json::Map::new();
        params.insert("name".into(), name.clone().into());
        if !args.is_null() {
            params.insert("arguments".into(), args.clone());
        }
        for r in Revision::ALL {
            let adapter = Adapter::new(r);
            let direct = adapter.tool_call_headers(&name, &args, bindings).unwrap();
            let from_params = adapter.request_headers("tools/call", &params, false, bindings).unwrap();
            prop_assert_eq!(&direct, &from_params);
            let pairs: Vec<(String, String)> = direct
                .iter()
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect();
            prop_assert_eq!(pairs, adapter.client_headers("tools/call", &params, false, bindings).unwrap());
        }
    }

    /// A header that names another value than the body is refused.
    #[test]
    fn a_changed_region_is_refused(region in any::<String>(), other in any::<String>()) {
        prop_assume!(region != other);
        let tools = tools();
        let (bytes, params) = body("t", &json!({"region": region}));
        let mut headers = MODERN.client_headers("tools/call", &params, false, tools.get("t").map(Vec::as_slice)).unwrap();
        for (name, value) in &mut headers {
            if name == "Mcp-Param-Region" {
                *value = mcp_wire::header::encode_text(&other).into_owned();
            }
        }
        let decoded = MODERN.decode_http(jsonrpc::decode(&bytes), &headers, &tools);
        prop_assert!(matches!(&decoded.items()[0], Incoming::Invalid(i) if i.failure.kind == FailureKind::HeaderMismatch));
    }

    /// Arbitrary bytes never panic selection or any adapter's decoder.
    #[test]
    fn arbitrary_bodies_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let set = AdapterSet::all();
        let none: [(&str, &str); 0] = [];
        let _ = set.select_http(&jsonrpc::decode(&bytes), &none[..], None, None);
        for r in Revision::ALL {
            let decoded = Adapter::new(r).decode(jsonrpc::decode(&bytes));
            prop_assert!(!decoded.items().is_empty());
        }
    }

    /// Arbitrary JSON-ish messages never panic either, and each item is answered or not.
    #[test]
    fn arbitrary_messages_never_panic(method in "[a-z/]{0,20}", id in proptest::option::of(any::<i64>()),
                                      params in proptest::option::of(any::<String>())) {
        let mut msg = json!({"jsonrpc": "2.0", "method": method});
        if let Some(id) = id { msg["id"] = id.into(); }
        if let Some(p) = params { msg["params"] = json!({"name": p, "uri": p, "_meta": {"io.modelcontextprotocol/protocolVersion": p}}); }
        let bytes = serde_json::to_vec(&msg).unwrap();
        for r in Revision::ALL {
            let _ = Adapter::new(r).decode_http(jsonrpc::decode(&bytes), &[("Mcp-Name", "x")][..], &tools());
        }
    }

    /// Only `"action": "accept"` is ever read as acceptance.
    #[test]
    fn only_accept_accepts(action in proptest::option::of(any::<String>()), content in any::<bool>()) {
        let mut v = json!({});
        if let Some(a) = &action { v["action"] = a.clone().into(); }
        if content { v["content"] = json!({"k": 1}); }
        let answer = ElicitAnswer::from_result(&v);
        prop_assert_eq!(answer.accepted(), action.as_deref() == Some("accept"));
    }
}
