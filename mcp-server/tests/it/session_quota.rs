//! The per-principal session limit (issue 44, review finding 6), over real sockets on
//! 127.0.0.1: a principal at its limit is refused a new session (Streamable HTTP and
//! HTTP+SSE, whose open stream counts as a session) while other principals are served, a deleted session frees its place, sessions
//! without authorization are not counted, and the count is shared by workers on one hub
//! (once per backend, see `support/backends.rs`).

use crate::backends;
use crate::raw_http;
use crate::support;

use std::time::{SystemTime, UNIX_EPOCH};

use backends::{Backend, Place};
use mcp_auth::{Audience, Claims, ScopeSet};
use mcp_server::auth::{ResourceServer, StaticTokens};
use mcp_server::http::HttpConfig;
use mcp_server::{NoArgs, Revision, Server, Tool};
use raw_http::{RawRequest, RawResponse, Running};
use serde_json::json;

const RESOURCE: &str = "https://mcp.example.test/mcp";
const ISSUER: &str = "https://auth.example.test";
const REVISION: Revision = Revision::V2025_11_25;
const QUOTA: usize = 3;

async fn hello(_: NoArgs) -> String {
    "hello".to_owned()
}

fn claims(sub: &str) -> Claims {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    Claims {
        iss: Some(ISSUER.into()),
        sub: Some(sub.into()),
        aud: Some(Audience::One(RESOURCE.into())),
        exp: Some(i64::try_from(now).unwrap() + 3600),
        scope: ScopeSet::parse("mcp:read"),
        ..Claims::default()
    }
}

fn auth() -> ResourceServer {
    ResourceServer::builder(RESOURCE, ISSUER)
        .verifier(
            StaticTokens::new()
                .token("alice", claims("alice"))
                .token("bob", claims("bob"))
                .token("carol", claims("carol")),
        )
        .build()
        .unwrap()
}

fn server() -> mcp_server::ServerBuilder {
    Server::builder("quota", "1").tool(Tool::new("hello", hello))
}

fn config() -> HttpConfig {
    HttpConfig::new()
        .auth(auth())
        .max_sessions_per_principal(QUOTA)
}

fn initialize(token: Option<&str>) -> RawRequest<'static> {
    let mut request = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", REVISION.as_str());
    if let Some(token) = token {
        request = request.header("Authorization", &format!("Bearer {token}"));
    }
    request.json(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": REVISION.as_str(), "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    )
}

/// A new session of `token`'s principal on `at`: its id.
async fn open(at: &Running, token: Option<&str>) -> String {
    let response = initialize(token).send(at.addr).await;
    assert_eq!(response.status, 200, "{token:?}: {response:?}");
    response.header("mcp-session-id").unwrap().to_owned()
}

/// The refusal of a principal at its limit: 503 with the revision's error naming the limit.
fn at_limit(response: &RawResponse) {
    assert_eq!(response.status, 503, "{response:?}");
    assert!(response.header("mcp-session-id").is_none());
    let body = response.json();
    support::check(REVISION, "JSONRPCMessage", &body);
    assert_eq!(body["id"], 1);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("maximum of {QUOTA} sessions")),
        "{message}"
    );
}

async fn delete(at: &Running, token: &str, session: &str) {
    let response = RawRequest::new("DELETE", "/mcp")
        .header("Authorization", &format!("Bearer {token}"))
        .header("MCP-Protocol-Version", REVISION.as_str())
        .header("Mcp-Session-Id", session)
        .send(at.addr)
        .await;
    assert_eq!(response.status, 204, "{response:?}");
}

#[tokio::test]
async fn a_principal_at_its_limit_is_refused_and_the_others_are_not() {
    let running = Running::start(server().build().unwrap(), config()).await;
    let mut sessions = Vec::new();
    for _ in 0..QUOTA {
        sessions.push(open(&running, Some("alice")).await);
    }
    at_limit(&initialize(Some("alice")).send(running.addr).await);
    // HTTP+SSE sessions count too.
    let sse = RawRequest::new("GET", "/sse")
        .header("Accept", "text/event-stream")
        .header("Authorization", "Bearer alice")
        .send(running.addr)
        .await;
    assert_eq!(sse.status, 503, "{sse:?}");
    // Another principal is served, up to its own limit.
    for _ in 0..QUOTA {
        open(&running, Some("bob")).await;
    }
    at_limit(&initialize(Some("bob")).send(running.addr).await);
    // A deleted session frees its place; the others are untouched.
    delete(&running, "alice", &sessions[0]).await;
    open(&running, Some("alice")).await;
    at_limit(&initialize(Some("alice")).send(running.addr).await);
    for session in &sessions[1..] {
        let list = RawRequest::new("POST", "/mcp")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", REVISION.as_str())
            .header("Authorization", "Bearer alice")
            .header("Mcp-Session-Id", session)
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            .send(running.addr)
            .await;
        assert_eq!(list.status, 200, "{list:?}");
    }
}

#[tokio::test]
async fn an_open_http_sse_stream_counts_as_a_session() {
    let running = Running::start(
        server().build().unwrap(),
        HttpConfig::new().auth(auth()).max_sessions_per_principal(1),
    )
    .await;
    let sse = || {
        RawRequest::new("GET", "/sse")
            .header("Accept", "text/event-stream")
            .header("Authorization", "Bearer alice")
    };
    let mut stream = sse().open(running.addr).await;
    assert_eq!(stream.status, 200);
    let endpoint = stream.event().await.expect("the endpoint event");
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    at_limit_sse(&initialize(Some("alice")).send(running.addr).await);
    open(&running, Some("bob")).await;
    drop(stream);
}

/// [`at_limit`] for a limit of one.
fn at_limit_sse(response: &RawResponse) {
    assert_eq!(response.status, 503, "{response:?}");
    let message = response.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("maximum of 1 sessions"), "{message}");
}

#[tokio::test]
async fn sessions_without_authorization_are_not_counted_per_principal() {
    let running = Running::start(
        server().build().unwrap(),
        HttpConfig::new().max_sessions_per_principal(1),
    )
    .await;
    for _ in 0..3 {
        open(&running, None).await;
    }
}

#[tokio::test]
async fn the_limit_is_shared_by_the_workers_of_one_hub() {
    for backend in Backend::all() {
        let Some(place) = backend.place().await else {
            continue;
        };
        eprintln!("row: {backend:?}");
        shared_row(&place).await;
    }
}

async fn shared_row(place: &Place) {
    let mut workers = Vec::new();
    for _ in 0..2 {
        let hub = place.hub().await;
        let server = server()
            .state_store(hub.clone())
            .event_log(hub)
            .build()
            .unwrap();
        workers.push(Running::start(server, config()).await);
    }
    let (a, b) = (&workers[0], &workers[1]);
    let first = open(a, Some("alice")).await;
    open(a, Some("alice")).await;
    open(b, Some("alice")).await;
    at_limit(&initialize(Some("alice")).send(b.addr).await);
    at_limit(&initialize(Some("alice")).send(a.addr).await);
    open(b, Some("bob")).await;
    // A session minted on one worker and deleted through the other frees its place on both.
    delete(b, "alice", &first).await;
    open(a, Some("alice")).await;
    at_limit(&initialize(Some("alice")).send(b.addr).await);
}

#[tokio::test]
async fn a_burst_of_one_principals_sessions_on_two_workers_stays_within_the_limit() {
    for backend in Backend::all() {
        let Some(place) = backend.place().await else {
            continue;
        };
        eprintln!("row: {backend:?}");
        burst_row(&place).await;
    }
}

async fn burst_row(place: &Place) {
    let mut workers = Vec::new();
    for _ in 0..2 {
        let hub = place.hub().await;
        let server = server()
            .state_store(hub.clone())
            .event_log(hub)
            .build()
            .unwrap();
        workers.push(Running::start(server, config()).await);
    }
    let sends = (0..12).map(|n| {
        let at = workers[n % 2].addr;
        async move { initialize(Some("carol")).send(at).await }
    });
    let responses = futures::future::join_all(sends).await;
    let served = responses.iter().filter(|r| r.status == 200).count();
    assert_eq!(served, QUOTA, "{backend:?}", backend = place.backend);
    for refused in responses.iter().filter(|r| r.status != 200) {
        at_limit(refused);
    }
}

/// One request on a kept-alive connection `tcp` to `at`: its status and JSON body (`Null` when
/// the body is empty or not JSON). The responses these tests read carry a `Content-Length`.
async fn exchange(
    tcp: &mut tokio::net::TcpStream,
    at: &Running,
    token: Option<&str>,
    session: &str,
    id: u64,
) -> (u16, serde_json::Value) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "hello", "arguments": {}}}))
    .unwrap();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMCP-Protocol-Version: {}\r\nMcp-Session-Id: {session}\r\n\
         Content-Length: {}\r\n",
        at.addr,
        REVISION.as_str(),
        body.len()
    );
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    head.push_str("\r\n");
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(&body).await.unwrap();
    let mut buffer = Vec::new();
    let end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = tcp.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed before a response head");
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .expect("a Content-Length");
    while buffer.len() < end + length {
        let mut chunk = [0u8; 4096];
        let n = tcp.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed within a body");
        buffer.extend_from_slice(&chunk[..n]);
    }
    let json = serde_json::from_slice(&buffer[end..end + length]).unwrap_or_default();
    (status, json)
}

/// The listener's facts about a connection are shared by its requests, and the principal is
/// each request's own: on one kept-alive connection, requests of two principals and one
/// without a token, in turn, each act as who sent them.
#[tokio::test]
async fn requests_on_one_connection_act_for_their_own_principals() {
    let running = Running::start(server().build().unwrap(), config()).await;
    let session = open(&running, Some("alice")).await;
    let mut tcp = tokio::net::TcpStream::connect(running.addr).await.unwrap();

    let (status, body) = exchange(&mut tcp, &running, Some("alice"), &session, 2).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "hello", "{body}");

    // Bob, on the same connection: Alice's session does not exist for him.
    let (status, body) = exchange(&mut tcp, &running, Some("bob"), &session, 3).await;
    assert_eq!(status, 404, "{body}");

    // No token, on the same connection: refused, not served as Alice or Bob.
    let (status, _) = exchange(&mut tcp, &running, None, &session, 4).await;
    assert_eq!(status, 401);

    let (status, body) = exchange(&mut tcp, &running, Some("alice"), &session, 5).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], 5, "{body}");
    running.stop().await;
}
