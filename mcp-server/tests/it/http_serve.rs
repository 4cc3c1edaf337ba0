//! The connection loop: HTTP/2 when the client asks for it, HTTP/1.1 keep-alive, and
//! graceful shutdown that cancels calls still running at the deadline.

use crate::raw_http;

include!("../../src/bin/demo/registry.rs");

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use mcp_server::http::HttpConfig;
use raw_http::{RawRequest, Running, WAIT};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"add","arguments":{"a":2,"b":3}}}"#;

fn call_request(addr: std::net::SocketAddr) -> http::Request<Full<Bytes>> {
    http::Request::post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "add")
        .body(Full::new(Bytes::from_static(CALL.as_bytes())))
        .unwrap()
}

#[tokio::test]
async fn http2_prior_knowledge_is_served() {
    let server = Running::start(demo_builder("h2").build().unwrap(), HttpConfig::new()).await;
    let client = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http::<Full<Bytes>>();
    for _ in 0..2 {
        let response = tokio::time::timeout(WAIT, client.request(call_request(server.addr)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(response.version(), http::Version::HTTP_2);
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["result"]["structuredContent"]["sum"], 5);
    }
    server.stop().await;
}

#[tokio::test]
async fn http1_keeps_the_connection_alive() {
    let server = Running::start(demo_builder("h1").build().unwrap(), HttpConfig::new()).await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    for round in 0..3 {
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: add\r\nContent-Length: {}\r\n\r\n{CALL}",
            server.addr,
            CALL.len()
        );
        tcp.write_all(request.as_bytes()).await.unwrap();
        // Read one response (its Content-Length says where it ends) on the same socket.
        let mut buffer = Vec::new();
        let text = tokio::time::timeout(WAIT, async {
            loop {
                let mut chunk = [0u8; 4096];
                let n = tcp.read(&mut chunk).await.unwrap();
                assert!(
                    n > 0,
                    "round {round}: the server closed a keep-alive connection"
                );
                buffer.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buffer).into_owned();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length: usize = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap();
                    if buffer.len() >= end + 4 + length {
                        return text;
                    }
                }
            }
        })
        .await
        .unwrap();
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(text.contains(r#""sum":5"#));
    }
    server.stop().await;
}

#[tokio::test]
async fn shutdown_cancels_calls_still_running_at_the_deadline() {
    let server = Running::start(
        demo_builder("shutdown").build().unwrap(),
        HttpConfig::new().shutdown_deadline(Duration::from_millis(200)),
    )
    .await;
    // A 2025-11-25 call that waits for an answer that never comes.
    let init = RawRequest::new("POST", "/mcp")
        .json(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "s", "version": "1"}}}),
        )
        .send(server.addr)
        .await;
    let session = init.header("mcp-session-id").unwrap().to_owned();
    let mut stream = RawRequest::new("POST", "/mcp")
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", &session)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "deploy", "arguments": {"service": "web"}}}))
        .open(server.addr)
        .await;
    let question = stream.message().await.unwrap();
    assert_eq!(question["method"], "elicitation/create");
    // Stopping returns (the call is cut at the deadline) and the stream ends unanswered.
    let addr = server.addr;
    server.stop().await;
    while let Some(message) = stream.message().await {
        assert!(message.get("result").is_none(), "{message}");
    }
    // Nothing listens any more.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn shutdown_closes_an_idle_keep_alive_connection_at_once() {
    // The deadline is far beyond the test's wait: stopping returns in time only if the idle
    // connection hears the shutdown signal and closes, rather than being cut at the deadline.
    let server = Running::start(
        demo_builder("idle-shutdown").build().unwrap(),
        HttpConfig::new().shutdown_deadline(Duration::from_secs(600)),
    )
    .await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: add\r\nContent-Length: {}\r\n\r\n{CALL}",
        server.addr,
        CALL.len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut chunk = [0u8; 4096];
    let n = tokio::time::timeout(WAIT, tcp.read(&mut chunk))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&chunk[..n]).starts_with("HTTP/1.1 200"));
    // The connection is now idle, kept alive; stopping closes it.
    tokio::time::timeout(WAIT, server.stop())
        .await
        .expect("stopping waited for the idle connection");
    let mut rest = Vec::new();
    tokio::time::timeout(WAIT, tcp.read_to_end(&mut rest))
        .await
        .unwrap()
        .unwrap();
}
