//! The session-bound pipeline (`mcp-server/src/session/`) through the socket-free entry point,
//! `HttpEndpoint::handle`, with no listener: minting a session, an unknown session (404), the
//! save after an error, another principal's session (404), and the one rule both HTTP
//! transports share for a token (the body is decoded once, so a call is refused or served
//! exactly once).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full};
use mcp_auth::{Audience, Claims, ScopeSet};
use mcp_server::auth::{ResourceServer, StaticTokens};
use mcp_server::http::{HttpBody, HttpConfig, HttpEndpoint};
use mcp_server::{Exchange, Revision, Server, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const BASE: &str = "http://mcp.test";
const ISSUER: &str = "https://auth.example.test";
const WAIT: Duration = Duration::from_secs(10);

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// The log level the session's client asked for, as the call sees it.
async fn level(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    Ok(ex
        .log_level()
        .map_or_else(|| "none".to_owned(), |l| format!("{l:?}").to_lowercase()))
}

fn claims(subject: &str, scopes: &str) -> Claims {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    Claims {
        iss: Some(ISSUER.into()),
        sub: Some(subject.into()),
        aud: Some(Audience::One(format!("{BASE}/mcp"))),
        exp: Some(i64::try_from(now).unwrap() + 3600),
        scope: ScopeSet::parse(scopes),
        ..Claims::default()
    }
}

/// An endpoint with the tools `level`, `count` (counts its runs) and `deploy` (needs
/// `mcp:deploy`, counts its runs); protected with the tokens `alice`, `bob` and `deployer`
/// when `protect` is set.
fn endpoint(protect: bool, runs: &Arc<AtomicUsize>) -> HttpEndpoint {
    let counted = |runs: Arc<AtomicUsize>| {
        move |_: NoArgs| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                "ran".to_owned()
            }
        }
    };
    let server = Server::builder("pipeline", "1")
        .tool(Tool::new("level", level))
        .tool(Tool::new("count", counted(runs.clone())))
        .tool(Tool::new("deploy", counted(runs.clone())).scopes(["mcp:deploy"]))
        .build()
        .unwrap();
    let mut config = HttpConfig::new();
    if protect {
        let tokens = StaticTokens::new()
            .token("alice", claims("alice", "mcp:read"))
            .token("bob", claims("bob", "mcp:read"))
            .token("deployer", claims("alice", "mcp:read mcp:deploy"));
        let auth = ResourceServer::builder(format!("{BASE}/mcp"), ISSUER)
            .scopes_supported(["mcp:read", "mcp:deploy"])
            .required_scopes(["mcp:read"])
            .verifier(tokens)
            .build()
            .unwrap();
        config = config.auth(auth);
    }
    HttpEndpoint::new(server, config)
}

fn initialize(id: i64, revision: Revision) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": revision.as_str(), "capabilities": {},
        "clientInfo": {"name": "socket-free", "version": "1"}}})
}

fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}})
}

/// A request as a client would send it, with `headers`.
fn request(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder()
        .method(method)
        .uri(format!("{BASE}{path}"))
        .header("host", "mcp.test")
        .header("accept", "application/json, text/event-stream");
    if body.is_some() {
        builder = builder.header("content-type", "application/json");
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let bytes = body
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    builder.body(Full::new(Bytes::from(bytes))).unwrap()
}

/// A Streamable HTTP POST through the socket-free entry point: its status, session header
/// and messages (from a JSON body or an SSE stream that ends with the call).
async fn post(
    endpoint: &HttpEndpoint,
    token: Option<&str>,
    session: Option<&str>,
    revision: Revision,
    body: &Value,
) -> (StatusCode, Option<String>, Vec<Value>) {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("mcp-protocol-version", revision.as_str())];
    if let Some(bearer) = &bearer {
        headers.push(("authorization", bearer));
    }
    if let Some(session) = session {
        headers.push(("mcp-session-id", session));
    }
    let response = endpoint
        .handle(request("POST", "/mcp", &headers, Some(body)))
        .await;
    let status = response.status();
    let minted = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let bytes = tokio::time::timeout(WAIT, response.into_body().collect())
        .await
        .expect("the body ends with the call")
        .unwrap()
        .to_bytes();
    let messages = if sse {
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect()
    } else if bytes.is_empty() {
        Vec::new()
    } else {
        match serde_json::from_slice(&bytes).unwrap() {
            Value::Array(items) => items,
            one => vec![one],
        }
    };
    (status, minted, messages)
}

/// The result text of a tool call's answer.
fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {answer}"))
}

/// An HTTP+SSE stream opened through the socket-free entry point.
struct Stream {
    body: HttpBody,
    buffered: String,
}

impl Stream {
    async fn open(endpoint: &HttpEndpoint, token: Option<&str>) -> (Self, String) {
        let bearer = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = bearer
            .iter()
            .map(|b| ("authorization", b.as_str()))
            .collect();
        let response: Response<HttpBody> = endpoint
            .handle(request("GET", "/sse", &headers, None))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let mut stream = Self {
            body: response.into_body(),
            buffered: String::new(),
        };
        let (event, data) = stream.event().await;
        assert_eq!(event.as_deref(), Some("endpoint"));
        (stream, data)
    }

    /// The next event: its name and data.
    async fn event(&mut self) -> (Option<String>, String) {
        loop {
            if let Some(end) = self.buffered.find("\n\n") {
                let block: String = self.buffered.drain(..end + 2).collect();
                let mut name = None;
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        name = Some(value.trim().to_owned());
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim());
                    }
                }
                if name.is_none() && data.is_empty() {
                    continue; // a keep-alive comment
                }
                return (name, data);
            }
            let frame = tokio::time::timeout(WAIT, self.body.frame())
                .await
                .expect("an event in time")
                .expect("the stream is open")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.buffered.push_str(&String::from_utf8_lossy(&data));
            }
        }
    }

    async fn message(&mut self) -> Value {
        let (_, data) = self.event().await;
        serde_json::from_str(&data).unwrap()
    }
}

/// An HTTP+SSE POST to the message URI through the socket-free entry point.
async fn post_sse(
    endpoint: &HttpEndpoint,
    uri: &str,
    token: Option<&str>,
    body: &Value,
) -> StatusCode {
    let path = uri.strip_prefix(BASE).unwrap_or(uri);
    let bearer = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = bearer
        .iter()
        .map(|b| ("authorization", b.as_str()))
        .collect();
    endpoint
        .handle(request("POST", path, &headers, Some(body)))
        .await
        .status()
}

#[tokio::test]
async fn streamable_sessions_are_minted_found_saved_and_owned_without_a_socket() {
    let runs = Arc::new(AtomicUsize::new(0));
    let endpoint = endpoint(true, &runs);
    let v = Revision::V2025_03_26;

    // `initialize` mints a session.
    let (status, session, init) = post(&endpoint, Some("alice"), None, v, &initialize(1, v)).await;
    assert_eq!(status, StatusCode::OK, "{init:?}");
    let session = session.expect("a session id for a successful initialize");
    assert_eq!(init[0]["result"]["protocolVersion"], v.as_str());

    // A session this server never minted: 404, with a JSON-RPC error naming the request.
    let (status, _, unknown) = post(
        &endpoint,
        Some("alice"),
        Some("no-such-session"),
        v,
        &call(2, "count"),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{unknown:?}");
    assert_eq!(unknown[0]["id"], 2);

    // Another principal's session is as good as none: 404, and its call does not run.
    let (status, _, foreign) =
        post(&endpoint, Some("bob"), Some(&session), v, &call(3, "count")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{foreign:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // A request answered with an error saves what it changed: the batch's level holds for
    // the session's next call, and the session stays usable after the error.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel", "params": {"level": "error"}},
        {"jsonrpc": "2.0", "id": 5, "method": "no/such/method"}
    ]);
    let (status, _, answers) = post(&endpoint, Some("alice"), Some(&session), v, &batch).await;
    assert_eq!(status, StatusCode::OK, "{answers:?}");
    let failed = answers
        .iter()
        .find(|a| a["id"] == 5)
        .expect("the failed item");
    assert!(failed["error"]["code"].is_i64(), "{answers:?}");
    let (status, _, answers) = post(
        &endpoint,
        Some("alice"),
        Some(&session),
        v,
        &json!({"jsonrpc": "2.0", "id": 6, "method": "no/such/method"}),
    )
    .await;
    assert_eq!(answers[0]["id"], 6, "{status}: {answers:?}");
    assert!(answers[0]["error"].is_object());
    let (status, _, level) = post(
        &endpoint,
        Some("alice"),
        Some(&session),
        v,
        &call(7, "level"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{level:?}");
    assert_eq!(text(level.last().unwrap()), "error");
}

#[tokio::test]
async fn http_sse_sessions_are_found_saved_and_owned_without_a_socket() {
    let runs = Arc::new(AtomicUsize::new(0));
    let endpoint = endpoint(true, &runs);
    let (mut stream, uri) = Stream::open(&endpoint, Some("alice")).await;
    // 2025-03-26 over HTTP+SSE: a revision with batches.
    let v = Revision::V2025_03_26;

    // A session this server never minted: 404.
    let status = post_sse(
        &endpoint,
        "/messages?session_id=no-such-session",
        Some("alice"),
        &call(1, "count"),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Another principal's session: 404, and nothing runs.
    assert_eq!(
        post_sse(&endpoint, &uri, Some("bob"), &call(2, "count")).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    assert_eq!(
        post_sse(&endpoint, &uri, Some("alice"), &initialize(3, v)).await,
        StatusCode::ACCEPTED
    );
    let init = stream.message().await;
    assert_eq!(init["result"]["protocolVersion"], v.as_str(), "{init}");

    // The same save rule as Streamable HTTP: a request answered with an error saves what it
    // changed, and the session stays usable after an error.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel", "params": {"level": "error"}},
        {"jsonrpc": "2.0", "id": 5, "method": "no/such/method"}
    ]);
    assert_eq!(
        post_sse(&endpoint, &uri, Some("alice"), &batch).await,
        StatusCode::ACCEPTED
    );
    // The batch's answers: one array, or its items one by one.
    let mut answers = Vec::new();
    while answers.len() < 2 {
        match stream.message().await {
            Value::Array(items) => answers.extend(items),
            one => answers.push(one),
        }
    }
    let failed = answers
        .iter()
        .find(|a| a["id"] == 5)
        .expect("the failed item");
    assert!(failed["error"]["code"].is_i64(), "{answers:?}");
    assert_eq!(
        post_sse(
            &endpoint,
            &uri,
            Some("alice"),
            &json!({"jsonrpc": "2.0", "id": 6, "method": "no/such/method"})
        )
        .await,
        StatusCode::ACCEPTED
    );
    let failed = stream.message().await;
    assert_eq!(failed["id"], 6, "{failed}");
    assert_eq!(
        post_sse(&endpoint, &uri, Some("alice"), &call(7, "level")).await,
        StatusCode::ACCEPTED
    );
    let level = stream.message().await;
    assert_eq!(text(&level), "error");
}

/// With a token, both transports decode a message once and check its scopes on that one
/// decode: a call the token lacks a scope for is refused (403, before HTTP+SSE accepts it) and
/// never runs; a call it may make runs exactly once.
#[tokio::test]
async fn with_a_token_a_call_is_refused_or_served_once_on_both_transports() {
    let runs = Arc::new(AtomicUsize::new(0));
    let endpoint = endpoint(true, &runs);

    let v = Revision::V2025_06_18;
    let (_, session, _) = post(&endpoint, Some("alice"), None, v, &initialize(1, v)).await;
    let session = session.unwrap();
    let (status, _, refused) = post(
        &endpoint,
        Some("alice"),
        Some(&session),
        v,
        &call(2, "deploy"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused:?}");
    assert_eq!(refused[0]["id"], 2);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let (status, _, ran) = post(
        &endpoint,
        Some("alice"),
        Some(&session),
        v,
        &call(3, "count"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{ran:?}");
    assert_eq!(text(ran.last().unwrap()), "ran");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let (mut stream, uri) = Stream::open(&endpoint, Some("alice")).await;
    let old = Revision::V2024_11_05;
    assert_eq!(
        post_sse(&endpoint, &uri, Some("alice"), &initialize(4, old)).await,
        StatusCode::ACCEPTED
    );
    stream.message().await;
    assert_eq!(
        post_sse(&endpoint, &uri, Some("alice"), &call(5, "deploy")).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        post_sse(&endpoint, &uri, Some("alice"), &call(6, "count")).await,
        StatusCode::ACCEPTED
    );
    // The refused call left nothing on the stream: the next message is the served call's.
    let ran = stream.message().await;
    assert_eq!(ran["id"], 6, "{ran}");
    assert_eq!(text(&ran), "ran");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
