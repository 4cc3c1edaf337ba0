//! What an exchange knows about the client: the connection's identity and capabilities on
//! revisions with a handshake (kept across calls and a repeated `initialize`), the request's
//! own on 2026-07-28.

use mcp_server::{Context, Exchange, NoArgs, Server, Tool};
use serde_json::{Value, json};

/// `"<client name>/<has roots>"`.
async fn who(_: NoArgs, ex: Exchange) -> String {
    let name = ex
        .client_info()
        .and_then(|i| i.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_owned();
    let roots = ex
        .client_capabilities()
        .is_some_and(|c| c.contains_key("roots"));
    format!("{name}/{roots}")
}

fn server() -> Server {
    Server::builder("s", "1")
        .tool(Tool::new("who", who))
        .build()
        .unwrap()
}

async fn text_of(server: &Server, ctx: &Context, message: Value) -> Value {
    let out = server.handle_all(message, ctx).await;
    let response = out.last().expect("a response").to_value();
    response["result"]["content"][0]["text"].clone()
}

async fn initialize(server: &Server, ctx: &Context, params: Value) {
    let out = server
        .handle_all(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}),
            ctx,
        )
        .await;
    assert!(out[0].to_value()["result"].is_object(), "{out:?}");
}

fn call_who(id: u64, meta: Option<Value>) -> Value {
    let mut params = json!({"name": "who", "arguments": {}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

#[tokio::test]
async fn a_handshake_connection_keeps_the_client_for_every_call() {
    let server = server();
    let ctx = Context::connection();
    initialize(
        &server,
        &ctx,
        json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
               "clientInfo": {"name": "first", "version": "1"}}),
    )
    .await;
    for id in 1..=3 {
        assert_eq!(
            text_of(&server, &ctx, call_who(id, None)).await,
            "first/true"
        );
    }
    // A repeated initialize without an identity keeps the one the connection has; its
    // capabilities replace the earlier ones.
    initialize(
        &server,
        &ctx,
        json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
    )
    .await;
    assert_eq!(
        text_of(&server, &ctx, call_who(4, None)).await,
        "first/false"
    );
}

#[tokio::test]
async fn a_modern_call_states_its_own_client() {
    let server = server();
    let ctx = Context::connection();
    let modern_meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "modern", "version": "1"}
    });
    // 2026-07-28: the request's own `_meta`, every time, nothing remembered.
    assert_eq!(
        text_of(&server, &ctx, call_who(1, Some(modern_meta))).await,
        "modern/true"
    );
    let silent = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    assert_eq!(
        text_of(&server, &ctx, call_who(2, Some(silent))).await,
        "unknown/false"
    );
}
