//! The same message gives the same bytes on every transport: a 2026-07-28 `tools/call`, a
//! `tools/list` and a refused request, sent as the same line to the socket-free entry
//! (`Server::handle`), to stdio (an in-memory duplex) and to Streamable HTTP (the endpoint's
//! `handle`, a JSON body), get byte-identical JSON-RPC responses. (HTTP+SSE carries the 2024
//! handshake revision only: its bytes are the stdio connection's after `initialize`, checked
//! by the pairing suite.)

use http_body_util::{BodyExt as _, Full};
use mcp_server::http::{HttpConfig, HttpEndpoint};
use mcp_server::{Context, Server, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

async fn add(args: AddArgs) -> String {
    (args.a + args.b).to_string()
}

fn server() -> Server {
    Server::builder("same-bytes", "1.0")
        .tool(Tool::new("add", add))
        .build()
        .unwrap()
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}"#;

/// The messages, with the HTTP headers 2026-07-28 mirrors.
fn messages() -> Vec<(String, &'static str, Option<&'static str>)> {
    vec![
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"add","arguments":{{"a":2,"b":40}},{META}}}}}"#
            ),
            "tools/call",
            Some("add"),
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":"two","method":"tools/list","params":{{{META}}}}}"#),
            "tools/list",
            None,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"missing","arguments":{{}},{META}}}}}"#
            ),
            "tools/call",
            Some("missing"),
        ),
    ]
}

async fn socket_free(server: &Server, line: &str) -> Vec<u8> {
    let out = server.handle_all(line, &Context::connection()).await;
    out.last().expect("a response").to_bytes()
}

async fn stdio(server: Server, line: &str) -> Vec<u8> {
    let (client, served) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(served);
    let task = tokio::spawn(mcp_server::serve_stdio_with(
        server,
        server_read,
        server_write,
        mcp_server::StdioConfig::new(),
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    client_write
        .write_all(format!("{line}\n").as_bytes())
        .await
        .unwrap();
    let mut answer = String::new();
    BufReader::new(client_read)
        .read_line(&mut answer)
        .await
        .unwrap();
    task.abort();
    answer.trim_end_matches('\n').as_bytes().to_vec()
}

async fn http(server: Server, line: &str, method: &str, name: Option<&str>) -> Vec<u8> {
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    let mut request = http::Request::post("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let request = request
        .body(Full::new(bytes::Bytes::from(line.to_owned())))
        .unwrap();
    let response = endpoint.handle(request).await;
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(
        content_type.starts_with("application/json"),
        "a JSON body ({content_type}): {}",
        String::from_utf8_lossy(&body)
    );
    body.to_vec()
}

#[tokio::test]
async fn every_transport_answers_the_same_message_with_the_same_bytes() {
    for (line, method, name) in messages() {
        let direct = socket_free(&server(), &line).await;
        let piped = stdio(server(), &line).await;
        let posted = http(server(), &line, method, name).await;
        let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        assert_eq!(
            show(&direct),
            show(&piped),
            "socket-free vs stdio for {line}"
        );
        assert_eq!(
            show(&direct),
            show(&posted),
            "socket-free vs HTTP for {line}"
        );
        let response: serde_json::Value = serde_json::from_slice(&direct).unwrap();
        let request: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(response["jsonrpc"], "2.0", "{response}");
        assert_eq!(response["id"], request["id"], "{response}");
    }
}
