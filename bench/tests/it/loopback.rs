//! The load generator against servers on 127.0.0.1: the floor, and a minimal MCP-shaped server
//! written here that checks what the load generator sends and answers correctly (or not).
//!
//! Runs are short (tens of milliseconds measured); the assertions are about correctness
//! (calls pass or fail their checks), never about speed.

use std::{convert::Infallible, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header::CONTENT_TYPE};
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use mcp_bench::{
    Revision, Transport,
    floor::{self, FLOOR_BODY},
    load::{self, LoadConfig, Report},
};
use serde_json::{Value, json};
use tokio::net::TcpListener;

async fn start_floor(body: &'static str) -> String {
    start_floor_with(body, floor::ReplyMode::Fixed).await
}

async fn start_floor_with(body: &'static str, mode: floor::ReplyMode) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(floor::serve(
        listener,
        Bytes::from_static(body.as_bytes()),
        mode,
    ));
    format!("http://{addr}")
}

fn config(base: &str, revision: Revision) -> LoadConfig {
    let path = match revision.default_transport() {
        Transport::HttpSse => "/sse",
        _ => "/mcp",
    };
    let mut config = LoadConfig::new(format!("{base}{path}"), revision);
    config.concurrency = 2;
    config.warmup = Duration::from_millis(20);
    config.duration = Duration::from_millis(80);
    config.timeout = Duration::from_secs(5);
    config
}

async fn run(config: &LoadConfig) -> Report {
    load::run(config).await.expect("the run starts")
}

#[tokio::test]
async fn floor_passes_on_every_revision_with_fixed_reply() {
    let base = start_floor(FLOOR_BODY).await;
    for revision in Revision::ALL {
        let mut config = config(&base, revision);
        config.fixed_reply = true;
        let report = run(&config).await;
        assert_eq!(report.errors, 0, "{revision}: {:?}", report.first_error);
        assert!(report.calls > 0, "{revision}: no call passed");
        assert!(
            report.p50_ms > 0.0 && report.p50_ms <= report.p99_ms,
            "{report:?}"
        );
        assert_eq!(report.transport, revision.default_transport().as_str());
    }
}

#[tokio::test]
async fn floor_fails_strict_checks() {
    // Without --fixed-reply the fixed body is a wrong handshake reply (or, on 2026-07-28, has
    // the wrong id from the second call on).
    let base = start_floor(FLOOR_BODY).await;
    for revision in Revision::ALL {
        let report = run(&config(&base, revision)).await;
        assert!(
            report.errors > 0,
            "{revision}: strict checks passed a fixed reply"
        );
    }
}

#[tokio::test]
async fn wrong_sum_is_counted_as_an_error() {
    const WRONG: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"sum":6}}}"#;
    let base = start_floor(WRONG).await;
    for revision in [Revision::V2024_11_05, Revision::V2026_07_28] {
        let mut config = config(&base, revision);
        config.fixed_reply = true;
        let report = run(&config).await;
        assert_eq!(report.calls, 0, "{revision}");
        assert!(report.errors > 0, "{revision}");
        let error = report.first_error.expect("an error message");
        assert!(error.contains("wrong sum 6"), "{error}");
    }
}

#[tokio::test]
async fn unreachable_server_is_reported_not_hung() {
    // Bind then drop: nothing listens on this port any more.
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind")
        .local_addr()
        .expect("addr");
    let report = run(&config(&format!("http://{addr}"), Revision::V2025_11_25)).await;
    assert_eq!(report.calls, 0);
    assert!(report.errors > 0);
}

/// A minimal Streamable HTTP server that enforces what a real one would: the session header
/// after `initialize`, the version header from 2025-06-18 on, `_meta` and the `Mcp-*` headers
/// on 2026-07-28, increasing ids; it answers odd ids as SSE (with a notification first) and
/// even ids as JSON.
struct Strict {
    sum: i64,
}

const SESSION: &str = "s-1";

impl Strict {
    async fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
    ) -> Result<Response<Full<Bytes>>, Infallible> {
        Ok(self
            .answer(request)
            .await
            .unwrap_or_else(|why| plain(StatusCode::BAD_REQUEST, why)))
    }

    async fn answer(&self, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, String> {
        if request.method() != Method::POST {
            return Err("not a POST".into());
        }
        let (parts, body) = request.into_parts();
        let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
        if header("accept") != Some("application/json, text/event-stream") {
            return Err("bad Accept".into());
        }
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        let message: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        let method = message["method"].as_str().unwrap_or("");
        let id = message["id"].clone();
        let revision = match method {
            "initialize" => {
                let version = message["params"]["protocolVersion"].clone();
                let result = json!({"protocolVersion": version, "capabilities": {"tools": {}},
                    "serverInfo": {"name": "strict", "version": "0"}});
                let mut response = json_reply(&id, &result);
                response
                    .headers_mut()
                    .insert("mcp-session-id", HeaderValue::from_static(SESSION));
                return Ok(response);
            }
            _ => message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
                .as_str()
                .or(header("mcp-protocol-version"))
                .unwrap_or("2025-03-26")
                .parse::<Revision>()
                .map_err(|e| e.to_string())?,
        };
        if revision.has_handshake() && header("mcp-session-id") != Some(SESSION) {
            return Err("missing session".into());
        }
        if revision.sends_version_header()
            && header("mcp-protocol-version") != Some(revision.as_str())
        {
            return Err("missing version header".into());
        }
        if method == "notifications/initialized" {
            return Ok(plain(StatusCode::ACCEPTED, String::new()));
        }
        if method != "tools/call" || message["params"]["name"] != "add" {
            return Err(format!("unexpected {method}"));
        }
        if !revision.has_handshake()
            && (header("mcp-method") != Some("tools/call") || header("mcp-name") != Some("add"))
        {
            return Err("missing Mcp-* headers".into());
        }
        let args = &message["params"]["arguments"];
        let a = args["a"].as_i64().ok_or("no a")?;
        let b = args["b"].as_i64().ok_or("no b")?;
        let sum = a + b - 5 + self.sum;
        let result = json!({"content": [{"type": "text", "text": sum.to_string()}],
            "structuredContent": {"sum": sum}, "isError": false});
        let n = id.as_u64().ok_or("id is not a number")?;
        if n % 2 == 1 {
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
            let stream = format!(
                "id: 0\nretry: 1000\ndata:\n\n\
                 data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{}}}}\n\n\
                 event: message\ndata: {reply}\n\n"
            );
            let mut response = Response::new(Full::new(Bytes::from(stream)));
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            Ok(response)
        } else {
            Ok(json_reply(&id, &result))
        }
    }
}

fn json_reply(id: &Value, result: &Value) -> Response<Full<Bytes>> {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    let mut response = Response::new(Full::new(Bytes::from(body)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn plain(status: StatusCode, text: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() = status;
    response
}

async fn start_strict(sum: i64) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = Arc::new(Strict { sum });
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let server = server.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| server.clone().handle(request));
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn strict_server_sees_correct_handshakes_headers_and_ids() {
    let base = start_strict(5).await;
    for revision in Revision::ALL
        .into_iter()
        .filter(|r| *r != Revision::V2024_11_05)
    {
        let report = run(&config(&base, revision)).await;
        assert_eq!(report.errors, 0, "{revision}: {:?}", report.first_error);
        assert!(report.calls > 0, "{revision}");
    }
}

#[tokio::test]
async fn strict_server_with_wrong_sum_fails_on_sse_replies() {
    let base = start_strict(7).await;
    let report = run(&config(&base, Revision::V2025_11_25)).await;
    assert_eq!(report.calls, 0);
    assert!(report.errors > 0);
    // The first call (id 1) is answered over SSE.
    let error = report.first_error.expect("an error message");
    assert!(error.contains("wrong sum 7"), "{error}");
}

#[tokio::test]
async fn sessions_mode_opens_and_counts_sessions() {
    let base = start_strict(5).await;
    let mut strict = config(&base, Revision::V2025_11_25);
    strict.sessions = Some(25);
    strict.concurrency = 3;
    let report = load::open_sessions(&strict).await.expect("the run starts");
    assert_eq!(
        (
            report.requested,
            report.opened,
            report.with_session_id,
            report.errors
        ),
        (25, 25, 25, 0),
        "{:?}",
        report.first_error
    );

    // The floor answers `initialize` with an `add` result (id 1): every handshake fails its
    // check.
    let base = start_floor(FLOOR_BODY).await;
    let mut floor = config(&base, Revision::V2025_06_18);
    floor.sessions = Some(25);
    let report = load::open_sessions(&floor).await.expect("the run starts");
    assert_eq!(report.opened, 0);
    assert!(report.errors > 0);
    let error = report.first_error.expect("an error message");
    assert!(error.contains("request id 0"), "{error}");
}

fn stdio_config(revision: Revision, fixed_reply: bool) -> LoadConfig {
    let mut config = LoadConfig::from_args([
        "--transport",
        "stdio",
        "--command",
        &format!("{} --stdio", env!("CARGO_BIN_EXE_mcp-floor")),
        "--revision",
        revision.as_str(),
        "--warmup",
        "0.02",
        "--duration",
        "0.08",
    ])
    .expect("valid");
    config.fixed_reply = fixed_reply;
    config
}

#[tokio::test]
async fn stdio_floor_passes_with_fixed_reply_and_fails_strict_checks() {
    for revision in [
        Revision::V2024_11_05,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ] {
        let report = run(&stdio_config(revision, true)).await;
        assert_eq!(report.errors, 0, "{revision}: {:?}", report.first_error);
        assert!(report.calls > 0, "{revision}");
        assert_eq!(report.transport, "stdio");
        let report = run(&stdio_config(revision, false)).await;
        assert!(
            report.errors > 0,
            "{revision}: strict checks passed a fixed reply"
        );
    }
}

#[tokio::test]
async fn echo_floor_passes_strict_checks_on_every_revision() {
    let base = start_floor_with(FLOOR_BODY, floor::ReplyMode::Echo).await;
    for revision in Revision::ALL {
        let report = run(&config(&base, revision)).await;
        assert_eq!(report.errors, 0, "{revision}: {:?}", report.first_error);
        assert!(report.calls > 0, "{revision}");
    }
}

#[cfg(feature = "client")]
#[tokio::test]
async fn our_client_against_the_echo_floor_on_every_revision() {
    let base = start_floor_with(FLOOR_BODY, floor::ReplyMode::Echo).await;
    for revision in Revision::ALL {
        let report = mcp_bench::client_load::run(&config(&base, revision))
            .await
            .expect("the run starts");
        assert_eq!(report.errors, 0, "{revision}: {:?}", report.first_error);
        assert!(report.calls > 0, "{revision}");
    }
}

#[cfg(feature = "client")]
#[tokio::test]
async fn our_client_counts_a_wrong_sum() {
    const WRONG: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"sum":6}}}"#;
    let base = start_floor_with(WRONG, floor::ReplyMode::Echo).await;
    let report = mcp_bench::client_load::run(&config(&base, Revision::V2026_07_28))
        .await
        .expect("the run starts");
    assert_eq!(report.calls, 0);
    let error = report.first_error.expect("an error message");
    assert!(error.contains("wrong sum 6"), "{error}");
}
