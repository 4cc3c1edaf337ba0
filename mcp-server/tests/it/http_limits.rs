//! The HTTP server's limits under hostile clients (issue 27, defects 3, 4, 5 and 10), on real
//! sockets on 127.0.0.1: header-read and idle timeouts, the connection cap, the session cap
//! with every session in use,
//! per-session hub topics removed with the session (DELETE and expiry, on the memory hub and
//! on the Redis at `MCP_REDIS_URL`), and the `Host` checks.
//!
//! Timeouts are configured short; a test waits for the server to close a socket by reading
//! until end of file within an outer bound, never by sleeping.

use crate::raw_http;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::future::BoxFuture;
use mcp_hub::{Cursor, Event, EventLog, LogError, MemoryHub, Namespace, StateStore, Topic};
use mcp_server::http::HttpConfig;
use mcp_server::{NoArgs, Server, Tool};
use raw_http::{RawRequest, Running, WAIT};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};

const VERSION: &str = "2025-11-25";

/// A server with `wait` (notifies `release.0` when it starts, answers once `release.1` is
/// notified) and `echo`.
fn server_with(
    release: Arc<(Notify, Notify)>,
    hub: Option<(Arc<dyn StateStore>, Arc<dyn EventLog>)>,
) -> Server {
    let mut builder = Server::builder("limits", "1")
        .tool(Tool::new("wait", move |_: NoArgs| {
            let release = release.clone();
            async move {
                release.0.notify_one();
                release.1.notified().await;
                "released".to_owned()
            }
        }))
        .tool(Tool::new("echo", |_: NoArgs| async { "echo".to_owned() }));
    if let Some((store, log)) = hub {
        builder = builder.state_store(store).event_log(log);
    }
    builder.build().unwrap()
}

fn server() -> Server {
    server_with(Arc::default(), None)
}

fn post(session: Option<&str>, body: &Value) -> RawRequest<'static> {
    let mut request = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", VERSION);
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    request.json(body)
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "limits", "version": "1"}}})
}

/// A new session's id.
async fn open_session(addr: SocketAddr) -> String {
    let response = post(None, &initialize(1)).send(addr).await;
    assert_eq!(
        response.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&response.body)
    );
    let id = response.header("mcp-session-id").unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(Some(&id), &initialized).send(addr).await.status, 202);
    id
}

/// Reads until the server closes the connection (end of file or reset); panics if it does not
/// within [`WAIT`]. Returns what was read.
async fn read_until_closed(tcp: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(WAIT, async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the server closed the connection in time");
    all
}

/// One keep-alive request on `tcp` (to a path that is not the endpoint's: 404); returns the
/// response's head.
async fn keep_alive_request(tcp: &mut TcpStream, addr: SocketAddr) -> String {
    let head = format!("GET /elsewhere HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    tcp.write_all(head.as_bytes()).await.unwrap();
    // The head, then exactly Content-Length bytes of body.
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(WAIT, async {
        loop {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed before the response");
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text[..end]
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if got.len() >= end + 4 + length {
                    return text[..end].to_owned();
                }
            }
        }
    })
    .await
    .expect("a response in time")
}

#[tokio::test]
async fn a_client_that_sends_half_a_head_is_cut_off_at_the_header_read_timeout() {
    let config = HttpConfig::new()
        .header_read_timeout(Duration::from_millis(200))
        .idle_timeout(Duration::from_secs(600));
    let running = Running::start(server(), config).await;
    let mut tcp = TcpStream::connect(running.addr).await.unwrap();
    tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    let answer = read_until_closed(&mut tcp).await;
    assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    // Other clients are served meanwhile and after.
    let mut other = TcpStream::connect(running.addr).await.unwrap();
    assert!(
        keep_alive_request(&mut other, running.addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
}

#[tokio::test]
async fn idle_connections_are_closed_at_the_idle_timeout() {
    let config = HttpConfig::new()
        .header_read_timeout(Duration::from_secs(600))
        .idle_timeout(Duration::from_millis(200));
    let running = Running::start(server(), config).await;
    // One that never sends anything.
    let mut silent = TcpStream::connect(running.addr).await.unwrap();
    // One kept alive after a request.
    let mut kept = TcpStream::connect(running.addr).await.unwrap();
    assert!(
        keep_alive_request(&mut kept, running.addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
    assert!(read_until_closed(&mut silent).await.is_empty());
    assert!(read_until_closed(&mut kept).await.is_empty());
}

#[tokio::test]
async fn a_kept_alive_connection_waits_for_its_next_head_at_most_the_header_read_timeout() {
    // The header-read timeout starts when the server waits for a head: between two
    // requests of a kept-alive HTTP/1.1 connection too, however long the idle timeout.
    let config = HttpConfig::new()
        .header_read_timeout(Duration::from_millis(200))
        .idle_timeout(Duration::from_secs(600));
    let running = Running::start(server(), config).await;
    let mut kept = TcpStream::connect(running.addr).await.unwrap();
    assert!(
        keep_alive_request(&mut kept, running.addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
    assert!(read_until_closed(&mut kept).await.is_empty());
}

#[tokio::test]
async fn a_head_still_being_sent_is_no_request_in_flight() {
    // The idle timeout counts until a request's head is complete: a shorter idle timeout
    // closes a slow head before the header-read timeout would.
    let config = HttpConfig::new()
        .header_read_timeout(Duration::from_secs(600))
        .idle_timeout(Duration::from_millis(200));
    let running = Running::start(server(), config).await;
    let mut tcp = TcpStream::connect(running.addr).await.unwrap();
    tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    assert!(read_until_closed(&mut tcp).await.is_empty());
}

#[tokio::test]
async fn an_idle_http2_connection_gets_goaway_and_ends() {
    let config = HttpConfig::new()
        .header_read_timeout(Duration::from_secs(600))
        .idle_timeout(Duration::from_millis(200));
    let running = Running::start(server(), config).await;
    let tcp = TcpStream::connect(running.addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await
    .unwrap();
    let connection = tokio::spawn(connection);
    let request = http::Request::get(format!("http://{}/elsewhere", running.addr))
        .body(http_body_util::Empty::<Bytes>::new())
        .unwrap();
    let response = tokio::time::timeout(WAIT, sender.send_request(request))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), 404);
    drop(response);
    // Nothing in flight: the server ends the connection (GOAWAY), so the client's ends too.
    tokio::time::timeout(WAIT, connection)
        .await
        .expect("the server ended the idle HTTP/2 connection in time")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_connection_with_a_call_in_flight_is_not_idle() {
    let release = Arc::new((Notify::new(), Notify::new()));
    let config = HttpConfig::new().idle_timeout(Duration::from_millis(100));
    let running = Running::start(server_with(release.clone(), None), config).await;
    let session = open_session(running.addr).await;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "wait", "arguments": {}}});
    let addr = running.addr;
    let waiting = tokio::spawn(async move { post(Some(&session), &call).send(addr).await });
    tokio::time::timeout(WAIT, release.0.notified())
        .await
        .unwrap();
    // The call runs: a connection opened now is closed for idling, so the call's own
    // connection has been quiet for longer than the idle timeout once this returns.
    let mut clock = TcpStream::connect(running.addr).await.unwrap();
    read_until_closed(&mut clock).await;
    release.1.notify_one();
    let response = tokio::time::timeout(WAIT, waiting).await.unwrap().unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["result"]["content"][0]["text"], "released");
}

#[tokio::test]
async fn connections_beyond_the_limit_wait_while_the_open_ones_are_served() {
    let config = HttpConfig::new().max_connections(1);
    let running = Running::start(server(), config).await;
    let mut first = TcpStream::connect(running.addr).await.unwrap();
    assert!(
        keep_alive_request(&mut first, running.addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
    // The second connects (the kernel completes the handshake) but is not served...
    let second = tokio::spawn({
        let addr = running.addr;
        async move {
            let mut second = TcpStream::connect(addr).await.unwrap();
            keep_alive_request(&mut second, addr).await
        }
    });
    // ...while the first keeps working,
    assert!(
        keep_alive_request(&mut first, running.addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
    assert!(
        keep_alive_request(&mut first, running.addr)
            .await
            .starts_with("HTTP/1.1 404")
    );
    assert!(!second.is_finished(), "served beyond the connection limit");
    // and it is served once the first closes.
    drop(first);
    let head = tokio::time::timeout(WAIT, second).await.unwrap().unwrap();
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}

/// At the limit an idle session makes room (`session_flood.rs`); with every session in use
/// (here: each has its GET stream open) a new one is refused until one ends.
#[tokio::test]
async fn initialize_beyond_the_session_limit_with_every_session_in_use_gets_503_until_one_ends() {
    let running = Running::start(server(), HttpConfig::new().max_sessions(2)).await;
    let first = open_session(running.addr).await;
    let second = open_session(running.addr).await;
    let _streams = (
        get_stream(&first).open(running.addr).await,
        get_stream(&second).open(running.addr).await,
    );
    let refused = post(None, &initialize(42)).send(running.addr).await;
    assert_eq!(refused.status, 503);
    assert_eq!(refused.header("retry-after"), Some("2"));
    let body = refused.json();
    assert_eq!(body["id"], 42, "{body}");
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert!(refused.header("mcp-session-id").is_none());
    // A session ended frees its place.
    let deleted = RawRequest::new("DELETE", "/mcp")
        .header("Mcp-Session-Id", &first)
        .header("MCP-Protocol-Version", VERSION)
        .send(running.addr)
        .await;
    assert_eq!(deleted.status, 204);
    open_session(running.addr).await;
}

#[tokio::test]
async fn a_call_beyond_the_sessions_calls_in_flight_gets_503() {
    let release = Arc::new((Notify::new(), Notify::new()));
    let config = HttpConfig::new().max_calls_per_session(1);
    let running = Running::start(server_with(release.clone(), None), config).await;
    let addr = running.addr;
    let session = open_session(addr).await;
    let other = open_session(addr).await;
    let call = |id: i64, name: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": {}}})
    };
    let waiting = {
        let (session, call) = (session.clone(), call(1, "wait"));
        tokio::spawn(async move { post(Some(&session), &call).send(addr).await })
    };
    tokio::time::timeout(WAIT, release.0.notified())
        .await
        .unwrap();
    let refused = post(Some(&session), &call(2, "echo")).send(addr).await;
    assert_eq!(refused.status, 503);
    let body = refused.json();
    assert_eq!(body["id"], 2, "{body}");
    assert_eq!(body["error"]["code"], -32603, "{body}");
    // Another session is not held back; this one is served again once its call ended.
    assert_eq!(
        post(Some(&other), &call(3, "echo")).send(addr).await.status,
        200
    );
    release.1.notify_one();
    let answered = tokio::time::timeout(WAIT, waiting).await.unwrap().unwrap();
    assert_eq!(answered.status, 200);
    assert_eq!(
        post(Some(&session), &call(4, "echo"))
            .send(addr)
            .await
            .status,
        200
    );
}

fn get_stream(session: &str) -> RawRequest<'static> {
    RawRequest::new("GET", "/mcp")
        .header("Accept", "text/event-stream")
        .header("MCP-Protocol-Version", VERSION)
        .header("Mcp-Session-Id", session)
}

#[tokio::test]
async fn a_get_stream_beyond_the_sessions_limit_gets_503() {
    let config = HttpConfig::new()
        .max_streams_per_session(1)
        .keep_alive(Duration::from_millis(20));
    let running = Running::start(server(), config).await;
    let addr = running.addr;
    let session = open_session(addr).await;
    let other = open_session(addr).await;
    let open = get_stream(&session).open(addr).await;
    assert_eq!(open.status, 200);
    let refused = get_stream(&session).send(addr).await;
    assert_eq!(refused.status, 503);
    assert_eq!(refused.json()["error"]["code"], -32603);
    let elsewhere = get_stream(&other).open(addr).await;
    assert_eq!(elsewhere.status, 200, "another session is not held back");
    // Closed by the client: its slot is free once the server notices (at the next keep-alive
    // comment, 20 ms); every attempt until then is refused, none is an error.
    drop(open);
    let reopened = tokio::time::timeout(WAIT, async {
        loop {
            let attempt = get_stream(&session).open(addr).await;
            if attempt.status == 200 {
                return attempt;
            }
            assert_eq!(attempt.status, 503);
        }
    })
    .await
    .expect("the slot was freed in time");
    drop(reopened);
}

#[tokio::test]
async fn two_host_headers_are_refused_with_400() {
    let running = Running::start(server(), HttpConfig::new()).await;
    let response = post(None, &initialize(1))
        .header("Host", "127.0.0.1")
        .header("Host", "evil.example")
        .send(running.addr)
        .await;
    assert_eq!(response.status, 400);
}

#[tokio::test]
async fn an_absolute_target_naming_a_foreign_host_is_refused() {
    let running = Running::start(server(), HttpConfig::new()).await;
    let foreign = RawRequest {
        path: "http://evil.example/mcp".to_owned(),
        ..post(None, &initialize(1)).header("Host", "127.0.0.1")
    };
    assert_eq!(foreign.send(running.addr).await.status, 403);
    let local = RawRequest {
        path: format!("http://{}/mcp", running.addr),
        ..post(None, &initialize(1)).header("Host", "127.0.0.1")
    };
    assert_eq!(local.send(running.addr).await.status, 200);
}

/// An event log that tells which topics were deleted.
struct Watching {
    inner: Arc<dyn EventLog>,
    deleted: watch::Sender<Vec<String>>,
}

impl EventLog for Watching {
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Cursor, LogError>> {
        self.inner.publish(topic, message)
    }
    fn publish_existing<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Option<Cursor>, LogError>> {
        self.inner.publish_existing(topic, message)
    }
    fn position<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<Cursor, LogError>> {
        self.inner.position(topic)
    }
    fn poll<'a>(
        &'a self,
        topic: &'a Topic,
        after: Cursor,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Vec<Event>, LogError>> {
        self.inner.poll(topic, after, timeout)
    }
    fn delete<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<(), LogError>> {
        Box::pin(async move {
            let result = self.inner.delete(topic).await;
            self.deleted
                .send_modify(|d| d.push(topic.as_str().to_owned()));
            result
        })
    }
}

/// A session whose cancel topic holds a cancellation (a call ran, a `notifications/cancelled`
/// was published for it); returns its id and the topic.
async fn session_with_cancel_topic(addr: SocketAddr, log: &Arc<dyn EventLog>) -> (String, Topic) {
    let session = open_session(addr).await;
    let topic = Namespace::root().topic(&format!("mcp-cancel/{session}"));
    let start = log.position(&topic).await.unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "echo", "arguments": {}}});
    assert_eq!(post(Some(&session), &call).send(addr).await.status, 200);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 99, "reason": "test"}});
    assert_eq!(post(Some(&session), &cancel).send(addr).await.status, 202);
    assert_ne!(
        log.position(&topic).await.unwrap(),
        start,
        "the cancellation is in the hub"
    );
    (session, topic)
}

async fn wait_deleted(deleted: &mut watch::Receiver<Vec<String>>, topic: &Topic) {
    let name = topic.as_str().to_owned();
    tokio::time::timeout(WAIT, deleted.wait_for(|d| d.contains(&name)))
        .await
        .expect("the topic was deleted in time")
        .unwrap();
}

/// DELETE and expiry remove the session's cancel topic, on `store` and `log`.
async fn session_topics_go_with_the_session(store: Arc<dyn StateStore>, log: Arc<dyn EventLog>) {
    let (deleted, mut seen) = watch::channel(Vec::new());
    let watching: Arc<dyn EventLog> = Arc::new(Watching {
        inner: log.clone(),
        deleted,
    });
    let server = server_with(Arc::default(), Some((store, watching)));
    let config = HttpConfig::new().session_ttl(Duration::from_millis(400));
    let running = Running::start(server, config).await;

    // DELETE.
    let (session, topic) = session_with_cancel_topic(running.addr, &log).await;
    let unused = Namespace::root().topic("never-published");
    let start = log.position(&unused).await.unwrap();
    let response = RawRequest::new("DELETE", "/mcp")
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", VERSION)
        .send(running.addr)
        .await;
    assert_eq!(response.status, 204);
    wait_deleted(&mut seen, &topic).await;
    assert_eq!(
        log.position(&topic).await.unwrap(),
        start,
        "the cancel topic is gone after DELETE"
    );

    // Expiry: nobody uses the session for its TTL.
    let (_, topic) = session_with_cancel_topic(running.addr, &log).await;
    wait_deleted(&mut seen, &topic).await;
    assert_eq!(
        log.position(&topic).await.unwrap(),
        start,
        "the cancel topic is gone after expiry"
    );
}

#[tokio::test]
async fn session_topics_go_with_the_session_on_the_memory_hub() {
    let hub = Arc::new(MemoryHub::default());
    session_topics_go_with_the_session(hub.clone(), hub).await;
}

#[tokio::test]
async fn session_topics_go_with_the_session_on_redis() {
    let url =
        std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("mcp-server-limits-test:{}:{nanos}", std::process::id());
    let config = mcp_hub::RedisConfig::new().key_prefix(prefix);
    let hub = match mcp_hub::RedisHub::connect(&url, config).await {
        Ok(hub) => Arc::new(hub),
        Err(err) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("notice: Redis at {url} is unreachable ({err}); skipping");
            return;
        }
        Err(err) => panic!("Redis at {url} is unreachable with CI=true: {err}"),
    };
    session_topics_go_with_the_session(hub.clone(), hub).await;
}
