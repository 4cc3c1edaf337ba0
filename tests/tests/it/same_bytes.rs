//! The same message gives the same bytes on every transport: a 2026-07-28 `tools/call`, a
//! `tools/list` and a refused request, sent as the same line to the socket-free entry
//! (`Server::handle`), to stdio (an in-memory duplex) and to Streamable HTTP (the endpoint's
//! `handle`, a JSON body), get byte-identical JSON-RPC responses. HTTP+SSE carries the
//! 2024-11-05 handshake revision only: there the same three messages, after the same
//! `initialize` handshake on each transport, get the same bytes from the socket-free entry,
//! stdio, and HTTP+SSE (served on 127.0.0.1: POSTed to the session's endpoint, the response
//! read from the `data` of the stream's `message` event).

use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_server::http::{HttpConfig, HttpEndpoint};
use mcp_server::{Context, Server, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};

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

/// The 2024-11-05 handshake: `initialize`, then `notifications/initialized`.
const HANDSHAKE_2024: [&str; 2] = [
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
];

/// The same three messages on 2024-11-05 (no `_meta`: the handshake chose the revision).
fn messages_2024() -> Vec<&'static str> {
    vec![
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":40}}}"#,
        r#"{"jsonrpc":"2.0","id":"two","method":"tools/list","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"missing","arguments":{}}}"#,
    ]
}

/// Whether `line` is a request (it has an id, so it is answered).
fn is_request(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line)
        .unwrap()
        .get("id")
        .is_some()
}

async fn socket_free(server: &Server, line: &str) -> Vec<u8> {
    socket_free_after(server, &[], line).await
}

/// The socket-free entry on one connection: `before` (a handshake), then `line`.
async fn socket_free_after(server: &Server, before: &[&str], line: &str) -> Vec<u8> {
    let ctx = Context::connection();
    for earlier in before {
        let out = server.handle_all(*earlier, &ctx).await;
        assert_eq!(out.is_empty(), !is_request(earlier), "{earlier}");
    }
    let out = server.handle_all(line, &ctx).await;
    out.last().expect("a response").to_bytes()
}

async fn stdio(server: Server, line: &str) -> Vec<u8> {
    stdio_after(server, &[], line).await
}

/// Stdio over an in-memory duplex: `before` (a handshake, each request's answer read), then
/// `line`, whose answer is returned.
async fn stdio_after(server: Server, before: &[&str], line: &str) -> Vec<u8> {
    let (client, served) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(served);
    let task = tokio::spawn(mcp_server::serve_stdio_with(
        server,
        server_read,
        server_write,
        mcp_server::StdioConfig::new(),
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut client_read = BufReader::new(client_read);
    let mut answer = String::new();
    for earlier in before {
        client_write
            .write_all(format!("{earlier}\n").as_bytes())
            .await
            .unwrap();
        if is_request(earlier) {
            client_read.read_line(&mut answer).await.unwrap();
            answer.clear();
        }
    }
    client_write
        .write_all(format!("{line}\n").as_bytes())
        .await
        .unwrap();
    client_read.read_line(&mut answer).await.unwrap();
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

/// One event of an SSE stream: its type and its data (the `data` lines joined by `\n`).
struct Event {
    kind: String,
    data: String,
}

/// The client's end of an HTTP+SSE session on a real socket: the stream, and a connection to
/// POST messages to the endpoint it named.
struct SseSession {
    stream: Incoming,
    buf: Vec<u8>,
    post: hyper::client::conn::http1::SendRequest<Full<bytes::Bytes>>,
    endpoint: String,
    host: String,
}

impl SseSession {
    /// Opens the stream (`GET /sse`) on `host` and reads the `endpoint` event.
    async fn open(host: &str) -> Self {
        let mut get = connect(host).await;
        let request = http::Request::get("/sse")
            .header("host", host)
            .header("accept", "text/event-stream")
            .body(Full::new(bytes::Bytes::new()))
            .unwrap();
        let response = get.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200, "GET /sse");
        let mut session = Self {
            stream: response.into_body(),
            buf: Vec::new(),
            post: connect(host).await,
            endpoint: String::new(),
            host: host.to_owned(),
        };
        let event = session.next_event().await;
        assert_eq!(
            event.kind, "endpoint",
            "the stream names its endpoint first"
        );
        session.endpoint = event.data;
        session
    }

    /// The next event with data on the stream (comments and `retry` alone are skipped).
    async fn next_event(&mut self) -> Event {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let raw: Vec<u8> = self.buf.drain(..end + 2).collect();
                let raw = String::from_utf8(raw).expect("UTF-8 events");
                let mut kind = "message".to_owned();
                let mut data = Vec::new();
                for line in raw.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        kind = value.strip_prefix(' ').unwrap_or(value).to_owned();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push(value.strip_prefix(' ').unwrap_or(value));
                    }
                }
                if !data.is_empty() {
                    return Event {
                        kind,
                        data: data.join("\n"),
                    };
                }
                continue;
            }
            let frame = self
                .stream
                .frame()
                .await
                .expect("the stream stays open")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.buf.extend_from_slice(&data);
                // CRLF and CR line ends read as LF.
                if self.buf.contains(&b'\r') {
                    let text = String::from_utf8_lossy(&self.buf).replace("\r\n", "\n");
                    self.buf = text.replace('\r', "\n").into_bytes();
                }
            }
        }
    }

    /// POSTs `line` to the endpoint (202) and, for a request, returns the data of the
    /// `message` event that answers it.
    async fn send(&mut self, line: &str) -> Option<Vec<u8>> {
        let request = http::Request::post(self.endpoint.as_str())
            .header("host", self.host.as_str())
            .header("content-type", "application/json")
            .body(Full::new(bytes::Bytes::from(line.to_owned())))
            .unwrap();
        let response = self.post.send_request(request).await.unwrap();
        assert_eq!(response.status(), 202, "POST {line}");
        response.into_body().collect().await.unwrap();
        if !is_request(line) {
            return None;
        }
        let event = self.next_event().await;
        assert_eq!(event.kind, "message", "{}", event.data);
        Some(event.data.into_bytes())
    }
}

/// An HTTP/1.1 connection to `host` on 127.0.0.1.
async fn connect(host: &str) -> hyper::client::conn::http1::SendRequest<Full<bytes::Bytes>> {
    let socket = TcpStream::connect(host).await.unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(socket))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

/// HTTP+SSE served on 127.0.0.1: a fresh session, `before` (a handshake), then `line`, whose
/// answer (the `message` event's data) is returned.
async fn http_sse_after(server: Server, before: &[&str], line: &str) -> Vec<u8> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(mcp_server::http::serve_with_shutdown(
        listener,
        HttpEndpoint::new(server, HttpConfig::new()),
        async {
            let _ = stopped.await;
        },
    ));
    let mut session = SseSession::open(&host).await;
    for earlier in before {
        session.send(earlier).await;
    }
    let answer = session.send(line).await.expect("an answer");
    drop(session);
    let _ = stop.send(());
    serving.abort();
    answer
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

#[tokio::test]
async fn http_sse_answers_the_same_message_with_the_same_bytes_on_2024_11_05() {
    for line in messages_2024() {
        let direct = socket_free_after(&server(), &HANDSHAKE_2024, line).await;
        let piped = stdio_after(server(), &HANDSHAKE_2024, line).await;
        let streamed = http_sse_after(server(), &HANDSHAKE_2024, line).await;
        let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        assert_eq!(
            show(&direct),
            show(&piped),
            "socket-free vs stdio for {line}"
        );
        assert_eq!(
            show(&direct),
            show(&streamed),
            "socket-free vs HTTP+SSE for {line}"
        );
        let response: serde_json::Value = serde_json::from_slice(&direct).unwrap();
        let request: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(response["jsonrpc"], "2.0", "{response}");
        assert_eq!(response["id"], request["id"], "{response}");
        // The 2024-11-05 shape: no 2026-07-28 result envelope.
        assert!(
            response.pointer("/result/resultType").is_none(),
            "{response}"
        );
        match request["id"].clone() {
            serde_json::Value::Number(n) if n.as_i64() == Some(1) => {
                assert_eq!(response["result"]["content"][0]["text"], "42", "{response}");
            }
            serde_json::Value::String(_) => {
                assert_eq!(response["result"]["tools"][0]["name"], "add", "{response}");
            }
            _ => assert!(
                response.get("error").is_some() || response["result"]["isError"] == true,
                "{response}"
            ),
        }
    }
}
