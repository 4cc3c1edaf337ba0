//! Malformed input over real sockets: random bodies (noise, truncated JSON, wrong types, huge
//! ids, invalid UTF-8) and random MCP headers (junk versions, session ids, names, invalid
//! base64 in `Mcp-Param-*`). Every request gets a 4xx, or a 200/202 whose body is JSON-RPC;
//! never a 5xx, a panic or a hang; and the server still answers a good request afterwards.

use crate::raw_http;

include!("../../src/bin/demo/registry.rs");

use std::net::SocketAddr;
use std::sync::OnceLock;

use mcp_server::http::HttpConfig;
use proptest::prelude::*;
use raw_http::{RawRequest, RawResponse, Running};
use serde_json::Value;

/// One runtime and one server for every case.
fn harness() -> &'static (tokio::runtime::Runtime, SocketAddr) {
    static HARNESS: OnceLock<(tokio::runtime::Runtime, SocketAddr)> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let addr = runtime.block_on(async {
            let running = Running::start(
                demo_builder("fuzz").build().unwrap(),
                HttpConfig::new().body_limit(64 * 1024),
            )
            .await;
            let addr = running.addr;
            // The server lives as long as the runtime (the whole test binary).
            std::mem::forget(running);
            addr
        });
        (runtime, addr)
    })
}

fn send(request: RawRequest<'_>) -> RawResponse {
    let (runtime, addr) = harness();
    runtime.block_on(request.send(*addr))
}

const VALID: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"routed","arguments":{"region":"eu"}}}"#;

fn bodies() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        (0..VALID.len()).prop_map(|cut| VALID.as_bytes()[..cut].to_vec()),
        prop::sample::select(vec![
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":42}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"nope"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7,"arguments":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"[]"#,
            r#"[1,2,3]"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":17}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":[]}}}"#,
            r#"null"#,
            r#""just a string""#,
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        // Invalid UTF-8 inside a JSON string.
        proptest::collection::vec(128u8..=255, 1..8).prop_map(|junk| {
            let mut body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":""#.to_vec();
            body.extend_from_slice(&junk);
            body.extend_from_slice(br#""}}}"#);
            body
        }),
    ]
}

fn header_values() -> impl Strategy<Value = String> {
    prop_oneof![
        "[!-~]{0,40}",
        Just("2026-07-28".to_owned()),
        Just("2025-11-25".to_owned()),
        Just("=?base64?%%%?=".to_owned()),
        Just("=?base64?SGVsbG8?=".to_owned()),
        "=\\?base64\\?[A-Za-z0-9+/=]{0,12}\\?=",
        Just("ünïcödé".to_owned()),
    ]
}

fn header_names() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "MCP-Protocol-Version",
        "Mcp-Session-Id",
        "Mcp-Method",
        "Mcp-Name",
        "Mcp-Param-Region",
        "Mcp-Param-Other",
        "Accept",
        "Content-Type",
        "Last-Event-ID",
    ])
}

fn check(response: &RawResponse) {
    assert!(
        response.status < 500,
        "a 5xx: {} {}",
        response.status,
        String::from_utf8_lossy(&response.body)
    );
    assert!(
        (400..500).contains(&response.status) || matches!(response.status, 200 | 202 | 405),
        "unexpected status {}",
        response.status
    );
    if response.status == 200 {
        let messages = response.messages();
        assert!(!messages.is_empty(), "a 200 without a message");
        for message in messages {
            let items = match &message {
                Value::Array(items) => items.clone(),
                other => vec![other.clone()],
            };
            for item in items {
                assert_eq!(item["jsonrpc"], "2.0", "{item}");
                assert!(
                    item.get("result").is_some()
                        || item.get("error").is_some()
                        || item.get("method").is_some(),
                    "{item}"
                );
            }
        }
    }
}

/// A valid request; it must still be served.
fn good_request() {
    let response = send(
        RawRequest::new("POST", "/mcp")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "routed")
            .header("Mcp-Param-Region", "eu")
            .body(VALID),
    );
    assert_eq!(response.status, 200);
    assert_eq!(
        response.json()["result"]["content"][0]["text"],
        "routed to eu"
    );
}

#[test]
fn random_bodies_and_headers_never_break_the_server() {
    let strategy = (
        bodies(),
        proptest::collection::vec((header_names(), header_values()), 0..5),
        any::<bool>(),
        prop::sample::select(vec!["/mcp", "/messages?session_id=junk", "/mcp?x=1"]),
    );
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 300,
        ..ProptestConfig::default()
    });
    runner
        .run(&strategy, |(body, headers, json_type, path)| {
            let mut request = RawRequest::new("POST", path).body(body);
            if json_type {
                request = request.header("Content-Type", "application/json");
            }
            for (name, value) in headers {
                request = request.header(name, &value);
            }
            check(&send(request));
            Ok(())
        })
        .unwrap();
    // The server still answers a good request after all of that.
    good_request();
}
