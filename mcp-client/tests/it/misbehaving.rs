//! The client against deliberately misbehaving servers: raw tokio TCP servers on 127.0.0.1 that
//! answer the handshake properly and then send whatever a broken or hostile server might (a
//! wrong content type, truncated SSE, garbage JSON, a body that never ends, nothing at all, a
//! 500, a redirect, an oversized body, bytes that are not HTTP). Every case must end in a typed
//! error (kind, and the HTTP status where there is one), never a panic, and never a hang past
//! the configured timeout; the client must keep working once the server behaves again.
//!
//! The only clock in these tests is each test step's generous guard ([`within`]): nothing is
//! asserted about how long anything took.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{CallOptions, Client, ClientBuilder, ErrorKind, LogLevel, Revision};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A guard against hangs: far longer than any timeout configured below.
async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the client hung past its timeout")
}

/// The per-call timeout the cases rely on to end a silent server.
const CALL_TIMEOUT: Duration = Duration::from_millis(400);

/// One HTTP request as the raw server read it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn rpc_method(&self) -> &str {
        self.body
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn id(&self) -> Value {
        self.body.get("id").cloned().unwrap_or(Value::Null)
    }
}

/// What the raw server does with one request.
enum Act {
    /// Write these bytes and keep reading requests on the connection.
    Write(Vec<u8>),
    /// Write these bytes and close the connection.
    WriteClose(Vec<u8>),
    /// Write these bytes, then hold the connection open without writing again.
    WriteHang(Vec<u8>),
    /// Close the connection without a response.
    Close,
    /// A slow server: write these bytes after this pause, and keep reading requests.
    WriteAfter(Duration, Vec<u8>),
}

/// How the server treats `tools/call` (and, for a few cases, the handshake).
type Script = Arc<dyn Fn(&Seen) -> Act + Send + Sync>;

struct Raw {
    base: String,
    seen: Mutex<Vec<Seen>>,
    misbehave: Mutex<Option<Script>>,
    /// The script answers the handshake too.
    handshake_too: AtomicBool,
    /// TCP connections accepted so far.
    connections: AtomicUsize,
    /// Connections held open on purpose; dropped with the server.
    held: Mutex<Vec<TcpStream>>,
}

impl Raw {
    async fn start() -> Arc<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let raw = Arc::new(Self {
            base: format!("http://{}", listener.local_addr().unwrap()),
            seen: Mutex::new(Vec::new()),
            misbehave: Mutex::new(None),
            handshake_too: AtomicBool::new(false),
            connections: AtomicUsize::new(0),
            held: Mutex::new(Vec::new()),
        });
        let server = Arc::downgrade(&raw);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let Some(server) = server.upgrade() else {
                    return;
                };
                server.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(server.serve(socket));
            }
        });
        raw
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// From now on `tools/call` gets `script`; `None` makes the server behave.
    fn misbehave(&self, script: Option<Script>) {
        *self.misbehave.lock().unwrap() = script;
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    async fn serve(self: Arc<Self>, mut socket: TcpStream) {
        let mut buf = Vec::new();
        loop {
            let Some(seen) = read_request(&mut socket, &mut buf).await else {
                return;
            };
            self.seen.lock().unwrap().push(seen.clone());
            let act = self.act(&seen);
            match act {
                Act::Write(bytes) => {
                    if socket.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
                Act::WriteClose(bytes) => {
                    let _ = socket.write_all(&bytes).await;
                    let _ = socket.shutdown().await;
                    return;
                }
                Act::WriteHang(bytes) => {
                    let _ = socket.write_all(&bytes).await;
                    self.held.lock().unwrap().push(socket);
                    return;
                }
                Act::Close => return,
                Act::WriteAfter(pause, bytes) => {
                    tokio::time::sleep(pause).await;
                    if socket.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    fn act(&self, seen: &Seen) -> Act {
        let script = self.misbehave.lock().unwrap().clone();
        if let Some(script) = script {
            let handshake = matches!(
                seen.rpc_method(),
                "server/discover" | "initialize" | "notifications/initialized"
            );
            if !handshake || self.handshake_too.load(Ordering::Relaxed) {
                return script(seen);
            }
        }
        behave(seen)
    }
}

/// Reads one request (head and `Content-Length` body) from `socket`; `None` at the end.
async fn read_request(socket: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Seen> {
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
    buf.drain(..head_end + length);
    Some(Seen {
        method,
        path,
        headers,
        body,
    })
}

fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn json_reply(status: &str, extra: &[(&str, &str)], value: &Value) -> Vec<u8> {
    let mut headers = vec![("content-type", "application/json")];
    headers.extend_from_slice(extra);
    response(status, &headers, value.to_string().as_bytes())
}

fn ok(seen: &Seen, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": seen.id(), "result": result})
}

/// A server that behaves: 2026-07-28 `server/discover`, legacy `initialize` with a session,
/// `tools/call` of `echo`.
fn behave(seen: &Seen) -> Act {
    if seen.method == "DELETE" {
        return Act::Write(response("200 OK", &[], b""));
    }
    let modern = seen
        .body
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .is_some();
    let complete = |mut result: Value| {
        if modern {
            result["resultType"] = json!("complete");
        }
        result
    };
    let body = match seen.rpc_method() {
        "server/discover" => ok(
            seen,
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private"}),
        ),
        "initialize" => {
            let result = json!({"protocolVersion": seen.body["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}});
            return Act::Write(json_reply(
                "200 OK",
                &[("mcp-session-id", "raw-session")],
                &ok(seen, result),
            ));
        }
        "tools/call" => ok(
            seen,
            complete(
                json!({"content": [{"type": "text", "text": seen.body["params"]["arguments"]["text"]}]}),
            ),
        ),
        "" if seen.body.get("id").is_none() => {
            return Act::Write(response("202 Accepted", &[], b""));
        }
        _ => {
            if seen.body.get("id").is_none() {
                // A notification.
                return Act::Write(response("202 Accepted", &[], b""));
            }
            json!({"jsonrpc": "2.0", "id": seen.id(), "error": {"code": -32601, "message": "unknown method"}})
        }
    };
    Act::Write(json_reply("200 OK", &[], &body))
}

fn builder() -> ClientBuilder {
    Client::builder()
        .client_info("misbehaving-tests", "0.0.1")
        .remember_era(false)
        .timeout(Duration::from_secs(5))
}

async fn connect(raw: &Raw, revision: Revision, b: ClientBuilder) -> Client {
    within(b.revision(revision).connect_http(&raw.url()))
        .await
        .unwrap()
}

async fn call(client: &Client) -> Result<Value, mcp_client::Error> {
    let options = CallOptions::new().timeout(CALL_TIMEOUT);
    within(client.call_tool_with("bad", json!({"text": "x"}), options)).await
}

async fn still_works(raw: &Raw, client: &Client, case: &str) {
    raw.misbehave(None);
    let result = within(client.call_tool("echo", json!({"text": "ok"})))
        .await
        .unwrap_or_else(|e| panic!("{case}: the client does not recover: {e}"));
    assert_eq!(result["content"][0]["text"], "ok", "{case}");
}

/// A script answering every `tools/call` with the same bytes.
fn always(act: impl Fn(&Seen) -> Act + Send + Sync + 'static) -> Option<Script> {
    Some(Arc::new(act))
}

fn sse_headers() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n"
        .to_vec()
}

/// The cases every revision gets: (name, script, expected kind, expected HTTP status).
fn cases() -> Vec<(&'static str, Option<Script>, ErrorKind, Option<u16>)> {
    vec![
        (
            "wrong content type",
            always(|_| {
                Act::Write(response(
                    "200 OK",
                    &[("content-type", "text/html")],
                    b"<p>hi</p>",
                ))
            }),
            ErrorKind::Protocol,
            None,
        ),
        (
            "no content type",
            always(|s| {
                Act::Write(response(
                    "200 OK",
                    &[],
                    ok(s, json!({})).to_string().as_bytes(),
                ))
            }),
            ErrorKind::Protocol,
            None,
        ),
        (
            "garbage JSON",
            always(|_| {
                Act::Write(response(
                    "200 OK",
                    &[("content-type", "application/json")],
                    b"{not json",
                ))
            }),
            ErrorKind::Protocol,
            None,
        ),
        (
            "JSON that is not JSON-RPC",
            always(|_| Act::Write(json_reply("200 OK", &[], &json!({"hello": "world"})))),
            ErrorKind::Protocol,
            None,
        ),
        (
            "a batch instead of a response",
            always(|s| Act::Write(json_reply("200 OK", &[], &json!([ok(s, json!({}))])))),
            ErrorKind::Protocol,
            None,
        ),
        (
            "an empty JSON body",
            always(|_| {
                Act::Write(response(
                    "200 OK",
                    &[("content-type", "application/json")],
                    b"",
                ))
            }),
            ErrorKind::Protocol,
            None,
        ),
        (
            "a response to another request",
            always(|_| {
                Act::Write(json_reply(
                    "200 OK",
                    &[],
                    &json!({"jsonrpc": "2.0", "id": 987_654, "result": {"content": []}}),
                ))
            }),
            ErrorKind::Protocol,
            None,
        ),
        (
            "202 for a request",
            always(|_| Act::Write(response("202 Accepted", &[], b""))),
            ErrorKind::Protocol,
            None,
        ),
        (
            "truncated SSE (the stream ends mid-event)",
            always(|_| {
                let mut bytes = sse_headers();
                bytes.extend_from_slice(b"data: {\"jsonrpc\":\"2.0\",\"id\"");
                Act::WriteClose(bytes)
            }),
            ErrorKind::Protocol,
            None,
        ),
        (
            "SSE that ends without the response",
            always(|_| {
                let mut bytes = sse_headers();
                bytes.extend_from_slice(b": nothing to see\n\n");
                Act::WriteClose(bytes)
            }),
            ErrorKind::Protocol,
            None,
        ),
        (
            "garbage SSE data",
            always(|_| {
                let mut bytes = sse_headers();
                bytes.extend_from_slice(b"data: garbage\n\n");
                Act::WriteHang(bytes)
            }),
            ErrorKind::Protocol,
            None,
        ),
        (
            "a truncated JSON body (Content-Length longer than the body)",
            always(|_| {
                Act::WriteClose(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"jsonrpc\""
                        .to_vec(),
                )
            }),
            ErrorKind::Transport,
            None,
        ),
        (
            "a JSON body that never ends",
            always(|_| {
                Act::WriteHang(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"jsonrpc\""
                        .to_vec(),
                )
            }),
            ErrorKind::Timeout,
            None,
        ),
        (
            "an SSE stream that never ends and never answers",
            always(|_| {
                let mut bytes = sse_headers();
                bytes.extend_from_slice(b": keep-alive\n\n: keep-alive\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n");
                Act::WriteHang(bytes)
            }),
            ErrorKind::Timeout,
            None,
        ),
        (
            "a slow server (no response within the timeout)",
            always(|_| Act::WriteHang(Vec::new())),
            ErrorKind::Timeout,
            None,
        ),
        (
            "a 500 with an HTML body",
            always(|_| {
                Act::Write(response(
                    "500 Internal Server Error",
                    &[("content-type", "text/html")],
                    b"<h1>oops</h1>",
                ))
            }),
            ErrorKind::Transport,
            Some(500),
        ),
        (
            "a 503 whose body never ends",
            always(|_| {
                Act::WriteHang(
                    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 100\r\n\r\nbusy".to_vec(),
                )
            }),
            ErrorKind::Timeout,
            None,
        ),
        (
            "a redirect (not followed)",
            always(|_| Act::Write(response("302 Found", &[("location", "/elsewhere")], b""))),
            ErrorKind::Transport,
            Some(302),
        ),
        (
            "the connection closes without a response",
            always(|_| Act::Close),
            ErrorKind::Transport,
            None,
        ),
        (
            "bytes that are not HTTP",
            always(|_| Act::WriteClose(b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec())),
            ErrorKind::Transport,
            None,
        ),
        (
            "a response head larger than any sane limit",
            always(|_| {
                let mut bytes =
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-junk: ".to_vec();
                bytes.extend(std::iter::repeat_n(b'a', 2 * 1024 * 1024));
                bytes.extend_from_slice(b"\r\n\r\n");
                Act::WriteClose(bytes)
            }),
            ErrorKind::Transport,
            None,
        ),
    ]
}

#[tokio::test]
async fn every_misbehaviour_is_a_typed_error_on_every_streamable_revision() {
    for revision in [
        Revision::V2026_07_28,
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
    ] {
        let raw = Raw::start().await;
        let client = connect(&raw, revision, builder()).await;
        for (case, script, kind, status) in cases() {
            raw.misbehave(script);
            let error = call(&client).await.expect_err(case);
            assert_eq!(error.kind(), kind, "{revision} {case}: {error}");
            assert_eq!(error.http_status(), status, "{revision} {case}: {error}");
            // The error renders, and says something.
            assert!(!error.to_string().is_empty());
            still_works(&raw, &client, case).await;
        }
        // A redirect is never followed: nothing was asked of /elsewhere. Every POST asked for
        // both media types.
        for seen in raw.seen() {
            assert_eq!(seen.path, "/mcp", "{revision}");
            if seen.method == "POST" {
                let accept = seen.header("accept").unwrap_or_default();
                assert!(
                    accept.contains("application/json") && accept.contains("text/event-stream"),
                    "{revision}: {accept}"
                );
            }
        }
        within(client.close()).await.unwrap();
    }
}

#[tokio::test]
async fn a_json_rpc_error_in_a_500_body_is_the_servers_error_with_the_status() {
    let raw = Raw::start().await;
    let client = connect(&raw, Revision::V2026_07_28, builder()).await;
    raw.misbehave(always(|s| {
        let body = json!({"jsonrpc": "2.0", "id": s.id(), "error": {"code": -32603, "message": "internal", "data": {"trace": "abc"}}});
        Act::Write(json_reply("500 Internal Server Error", &[], &body))
    }));
    let error = call(&client).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Rpc);
    assert_eq!(error.code(), Some(-32603));
    assert_eq!(error.message(), Some("internal"));
    assert_eq!(error.data(), Some(&json!({"trace": "abc"})));
    assert_eq!(error.http_status(), Some(500));
}

#[tokio::test]
async fn oversized_responses_stop_at_the_configured_limit() {
    const LIMIT: usize = 64 * 1024;
    let big = "x".repeat(LIMIT * 4);
    let json_body = {
        let big = big.clone();
        always(move |s| {
            let body = ok(s, json!({"content": [{"type": "text", "text": big}]}));
            Act::Write(json_reply("200 OK", &[], &body))
        })
    };
    let declared_only = always(|_| {
        // A Content-Length far past the limit, and a body that never comes: refused on the head.
        Act::WriteHang(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1099511627776\r\n\r\n"
                .to_vec(),
        )
    });
    let sse_event = {
        let big = big.clone();
        always(move |s| {
            let mut bytes = sse_headers();
            let message = ok(s, json!({"content": [{"type": "text", "text": big}]}));
            bytes.extend_from_slice(format!("data: {message}\n\n").as_bytes());
            Act::WriteHang(bytes)
        })
    };
    let endless_line = always(|_| {
        // One SSE line that never ends: the decoder must stop buffering at the limit.
        let mut bytes = sse_headers();
        bytes.extend_from_slice(b"data: ");
        bytes.extend(std::iter::repeat_n(b'y', LIMIT * 3));
        Act::WriteHang(bytes)
    });
    for revision in [Revision::V2026_07_28, Revision::V2025_06_18] {
        let raw = Raw::start().await;
        let client = connect(&raw, revision, builder().max_message_size(LIMIT)).await;
        for (case, script) in [
            ("a JSON body", json_body.clone()),
            ("a declared length", declared_only.clone()),
            ("an SSE event", sse_event.clone()),
            ("an endless SSE line", endless_line.clone()),
        ] {
            raw.misbehave(script);
            let error = call(&client).await.expect_err(case);
            assert_eq!(
                error.kind(),
                ErrorKind::Protocol,
                "{revision} {case}: {error}"
            );
            assert!(
                error.to_string().contains(&LIMIT.to_string()),
                "{revision} {case}: the error names the limit: {error}"
            );
            still_works(&raw, &client, case).await;
        }
    }
    // Under the default limit (16 MiB) the same 256 KiB body is fine.
    let raw = Raw::start().await;
    let client = connect(&raw, Revision::V2026_07_28, builder()).await;
    raw.misbehave(json_body);
    let result = call(&client).await.unwrap();
    assert_eq!(
        result["content"][0]["text"].as_str().unwrap().len(),
        LIMIT * 4
    );
}

#[tokio::test]
async fn a_misbehaving_handshake_fails_connect_with_a_typed_error() {
    let handshake_cases: Vec<(&str, Option<Script>, ErrorKind)> = vec![
        (
            "garbage JSON",
            always(|_| {
                Act::Write(response(
                    "200 OK",
                    &[("content-type", "application/json")],
                    b"]]",
                ))
            }),
            ErrorKind::Protocol,
        ),
        (
            "a silent server",
            always(|_| Act::WriteHang(Vec::new())),
            ErrorKind::Timeout,
        ),
        (
            "a wrong content type",
            always(|_| {
                Act::Write(response(
                    "200 OK",
                    &[("content-type", "text/plain")],
                    b"hello",
                ))
            }),
            ErrorKind::Protocol,
        ),
        (
            "bytes that are not HTTP",
            always(|_| Act::WriteClose(b"\x00\x01\x02\x03\r\n\r\n".to_vec())),
            ErrorKind::Transport,
        ),
    ];
    for revision in [Revision::V2026_07_28, Revision::V2025_06_18] {
        for (case, script, kind) in &handshake_cases {
            let raw = Raw::start().await;
            raw.misbehave(script.clone());
            raw.handshake_too.store(true, Ordering::Relaxed);
            // The client's timeout bounds the whole connect.
            let b = builder().timeout(CALL_TIMEOUT).revision(revision);
            let error = within(b.connect_http(&raw.url())).await.unwrap_err();
            assert_eq!(error.kind(), *kind, "{revision} {case}: {error}");
        }
    }
}

#[tokio::test]
async fn a_notification_answer_that_never_ends_does_not_hang_connect_or_close() {
    // `notifications/initialized` gets a 202 whose body never comes, and so does DELETE.
    let raw = Raw::start().await;
    raw.misbehave(always(|s| {
        if s.rpc_method() == "notifications/initialized" || s.method == "DELETE" {
            Act::WriteHang(b"HTTP/1.1 202 Accepted\r\ncontent-length: 10\r\n\r\n".to_vec())
        } else {
            behave(s)
        }
    }));
    raw.handshake_too.store(true, Ordering::Relaxed);
    let b = builder()
        .timeout(CALL_TIMEOUT)
        .revision(Revision::V2025_06_18);
    match within(b.connect_http(&raw.url())).await {
        Ok(client) => {
            let error = within(client.close()).await.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
        }
        Err(error) => assert_eq!(error.kind(), ErrorKind::Timeout, "{error}"),
    }
}

#[tokio::test]
async fn a_misbehaving_http_sse_stream_fails_connect_with_a_typed_error() {
    let sse_cases: Vec<(&str, Option<Script>, ErrorKind)> = vec![
        (
            "a stream that is not text/event-stream",
            always(|_| {
                Act::Write(response(
                    "200 OK",
                    &[("content-type", "text/html")],
                    b"<p>hi</p>",
                ))
            }),
            ErrorKind::Protocol,
        ),
        (
            "a stream without an endpoint event",
            always(|_| {
                let mut bytes = sse_headers();
                bytes.extend_from_slice(b": hello\n\n");
                Act::WriteHang(bytes)
            }),
            ErrorKind::Protocol,
        ),
        (
            "an endpoint on another origin",
            always(|_| {
                let mut bytes = sse_headers();
                bytes.extend_from_slice(
                    b"event: endpoint\ndata: http://evil.example:1/messages\n\n",
                );
                Act::WriteHang(bytes)
            }),
            ErrorKind::Protocol,
        ),
        (
            "a stream that ends before the endpoint",
            always(|_| Act::WriteClose(sse_headers())),
            ErrorKind::Protocol,
        ),
        (
            "a 404",
            always(|_| Act::Write(response("404 Not Found", &[], b""))),
            ErrorKind::Transport,
        ),
    ];
    for (case, script, kind) in sse_cases {
        let raw = Raw::start().await;
        raw.misbehave(script);
        let b = builder()
            .timeout(CALL_TIMEOUT)
            .revision(Revision::V2024_11_05);
        let error = within(b.connect_sse(&format!("{}/sse", raw.base)))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), kind, "{case}: {error}");
    }
}

#[tokio::test]
async fn connections_are_reused_and_a_closed_one_is_replaced() {
    let raw = Raw::start().await;
    let client = connect(&raw, Revision::V2026_07_28, builder()).await;
    let echo = |text: &'static str| client.call_tool("echo", json!({"text": text}));
    within(echo("warm")).await.unwrap();
    let before = raw.connections.load(Ordering::SeqCst);
    for _ in 0..20 {
        within(echo("again")).await.unwrap();
    }
    assert_eq!(
        raw.connections.load(Ordering::SeqCst),
        before,
        "sequential calls share one keep-alive connection"
    );
    // A server that closes each connection after answering: every call still succeeds, on a
    // new connection each time.
    raw.misbehave(always(|s| match behave(s) {
        Act::Write(bytes) => Act::WriteClose(bytes),
        other => other,
    }));
    for _ in 0..5 {
        let result = within(echo("fresh")).await.unwrap();
        assert_eq!(result["content"][0]["text"], "fresh");
    }
    assert!(raw.connections.load(Ordering::SeqCst) >= before + 4);
    // A call whose response never ends is cut by its timeout; its connection is not reused.
    raw.misbehave(always(|_| Act::WriteHang(sse_headers())));
    let error = call(&client).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout);
    still_works(&raw, &client, "after a cut stream").await;
}

/// A `tools/list` script: `pages` pages (`None`: endless, a fresh cursor on every page) of
/// `per_page` tools, each with a description of `weight` bytes.
fn paged(pages: Option<usize>, per_page: usize, weight: usize) -> Option<Script> {
    always(move |s| {
        if s.rpc_method() != "tools/list" {
            return behave(s);
        }
        let page: usize = s
            .body
            .pointer("/params/cursor")
            .and_then(Value::as_str)
            .and_then(|c| c.strip_prefix('p'))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let tools: Vec<Value> = (0..per_page)
            .map(|i| {
                json!({"name": format!("t{page}-{i}"), "description": "d".repeat(weight),
                       "inputSchema": {"type": "object"}})
            })
            .collect();
        let mut result = json!({"tools": tools});
        if pages.is_none_or(|n| page + 1 < n) {
            result["nextCursor"] = json!(format!("p{}", page + 1));
        }
        Act::Write(json_reply("200 OK", &[], &ok(s, result)))
    })
}

fn list_requests(raw: &Raw) -> usize {
    raw.seen()
        .iter()
        .filter(|s| s.rpc_method() == "tools/list")
        .count()
}

#[tokio::test]
async fn a_list_that_never_ends_stops_at_the_default_page_limit() {
    // Issue 27: a fresh cursor on every page used to be followed for 10,000 pages.
    let raw = Raw::start().await;
    let client = connect(&raw, Revision::V2025_06_18, builder()).await;
    raw.misbehave(paged(None, 1, 0));
    let error = within(client.list_tools()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::LimitExceeded, "{error}");
    assert!(error.is_limit_exceeded());
    assert!(error.to_string().contains("max_list_pages"), "{error}");
    assert_eq!(
        list_requests(&raw),
        1_000,
        "no page is asked past the limit"
    );
    still_works(&raw, &client, "after an endless list").await;
}

#[tokio::test]
async fn listing_limits_on_pages_items_and_bytes_are_exact() {
    let raw = Raw::start().await;
    let client = connect(
        &raw,
        Revision::V2025_06_18,
        builder()
            .max_list_pages(3)
            .max_list_items(30)
            .max_list_bytes(64 * 1024),
    )
    .await;
    // At each limit exactly: every item comes back.
    raw.misbehave(paged(Some(3), 10, 10));
    let tools = within(client.list_tools()).await.unwrap();
    assert_eq!(tools.len(), 30);
    assert_eq!(tools[29]["name"], "t2-9");
    // One page more: the fourth is never asked for.
    let before = list_requests(&raw);
    raw.misbehave(paged(Some(4), 5, 10));
    let error = within(client.list_tools()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::LimitExceeded, "{error}");
    assert!(error.to_string().contains("max_list_pages"), "{error}");
    assert_eq!(list_requests(&raw) - before, 3);
    // One item too many, on the second page.
    raw.misbehave(paged(Some(2), 16, 10));
    let error = within(client.list_tools()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::LimitExceeded, "{error}");
    assert!(error.to_string().contains("max_list_items"), "{error}");
    // Heavy items: two pages of 30 KiB fit in 64 KiB, a third does not.
    raw.misbehave(paged(Some(2), 1, 30 * 1024));
    assert_eq!(within(client.list_tools()).await.unwrap().len(), 2);
    raw.misbehave(paged(Some(3), 1, 30 * 1024));
    let error = within(client.list_tools()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::LimitExceeded, "{error}");
    assert!(error.to_string().contains("max_list_bytes"), "{error}");
    still_works(&raw, &client, "after the limits").await;
}

#[tokio::test]
async fn an_http_error_names_the_status_and_quotes_the_body() {
    // Issue 27: a 500 on the handshake was reported as "the server refused the connection".
    let said = "database is down\n  at pool.rs:12";
    let broken = always(move |_| {
        Act::Write(response(
            "500 Internal Server Error",
            &[("content-type", "text/plain")],
            said.as_bytes(),
        ))
    });
    for revision in [Revision::V2026_07_28, Revision::V2025_06_18] {
        let raw = Raw::start().await;
        raw.misbehave(broken.clone());
        raw.handshake_too.store(true, Ordering::Relaxed);
        let error = within(builder().revision(revision).connect_http(&raw.url()))
            .await
            .unwrap_err();
        let text = error.to_string();
        assert_eq!(error.kind(), ErrorKind::Transport, "{revision}: {text}");
        assert_eq!(error.http_status(), Some(500), "{revision}: {text}");
        assert!(
            text.contains("HTTP 500 Internal Server Error"),
            "{revision}: {text}"
        );
        assert!(
            text.contains("database is down at pool.rs:12"),
            "{revision}: {text}"
        );
        assert!(
            !text.contains("refused the connection"),
            "{revision}: {text}"
        );
        // The same on a call, after a good handshake; a huge body is quoted only in part.
        raw.handshake_too.store(false, Ordering::Relaxed);
        let client = connect(&raw, revision, builder()).await;
        let page = format!("<html>{}</html>", "oops ".repeat(100_000));
        raw.misbehave(always(move |_| {
            Act::Write(response(
                "503 Service Unavailable",
                &[("content-type", "text/html")],
                page.as_bytes(),
            ))
        }));
        let error = call(&client).await.unwrap_err();
        let text = error.to_string();
        assert_eq!(error.http_status(), Some(503), "{revision}: {text}");
        assert!(text.contains("HTTP 503 Service Unavailable"), "{revision}");
        assert!(text.contains("<html>oops oops"), "{revision}: {text}");
        assert!(
            text.len() < 600,
            "{revision}: the excerpt is bounded: {text}"
        );
        still_works(&raw, &client, "after a 503").await;
    }
}

#[tokio::test]
async fn a_step_of_the_handshake_that_hangs_fails_connect_at_its_one_timeout() {
    // Issue 27: `logging/setLevel` after `initialize` waited a timeout of its own (and its
    // failure was ignored), so a server hanging after the handshake cost a timeout per step.
    let raw = Raw::start().await;
    raw.misbehave(always(|s| {
        if s.rpc_method() == "logging/setLevel" {
            Act::WriteHang(Vec::new())
        } else {
            behave(s)
        }
    }));
    let b = builder()
        .timeout(CALL_TIMEOUT)
        .log_level(LogLevel::Info)
        .revision(Revision::V2025_06_18);
    let error = within(b.connect_http(&raw.url())).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    let methods: Vec<String> = raw
        .seen()
        .iter()
        .map(|s| s.rpc_method().to_owned())
        .collect();
    assert!(
        methods.iter().any(|m| m == "logging/setLevel"),
        "{methods:?}"
    );
}

#[tokio::test]
async fn every_page_of_a_listing_shares_one_timeout() {
    // A slow server answers each page well within the timeout, and never ends its list: the
    // listing as a whole is bounded by one timeout, not one per page.
    let raw = Raw::start().await;
    let client = connect(
        &raw,
        Revision::V2025_06_18,
        builder().timeout(Duration::from_millis(1_000)),
    )
    .await;
    let endless = paged(None, 1, 0).unwrap();
    raw.misbehave(always(move |s| match endless(s) {
        Act::Write(bytes) if s.rpc_method() == "tools/list" => {
            Act::WriteAfter(Duration::from_millis(150), bytes)
        }
        other => other,
    }));
    let error = within(client.list_tools()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(list_requests(&raw) > 1, "the pages came one after another");
    still_works(&raw, &client, "after a slow endless list").await;
}
