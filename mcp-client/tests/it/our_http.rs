//! The client against our own HTTP server (`mcp_server::http`) on 127.0.0.1: negotiation from
//! each starting point (a modern-only server, legacy-only servers, an HTTP+SSE-only endpoint),
//! re-initialize after the server lost the session, and cancellation over HTTP. Every message
//! the client sends on Streamable HTTP is recorded by a wrapping transport and validated
//! against the revision's official schema.

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_adapters::AdapterSet;
use mcp_client::transport::{
    BoxFuture, Delivery, HttpSse, MessageStream, Outbound, StreamableHttp, Transport,
    TransportError, TransportInfo,
};
use mcp_client::{Answer, Asks, CallOptions, Client, ErrorKind, QuestionKind, Revision};
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use mcp_server::{Exchange, NoArgs, Question, Server, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use support::{Recorded, within};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Notify, oneshot};

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

async fn echo(args: EchoArgs) -> String {
    args.text
}

#[derive(Deserialize, JsonSchema)]
struct DeployArgs {
    service: String,
}

async fn deploy(args: DeployArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask(
            "confirm",
            Question::elicit(format!("Deploy {}?", args.service)),
        )
        .await?;
    Ok(if answer.accepted() {
        format!("deployed {}", args.service)
    } else {
        format!("kept {}", args.service)
    })
}

/// Set when a `wait` call is cancelled on the server (its future dropped or told so).
struct Watch {
    cancelled: AtomicBool,
    notify: Notify,
}

static WATCH: Watch = Watch {
    cancelled: AtomicBool::new(false),
    notify: Notify::const_new(),
};

struct OnDrop;

impl Drop for OnDrop {
    fn drop(&mut self) {
        WATCH.cancelled.store(true, Ordering::SeqCst);
        WATCH.notify.notify_waiters();
    }
}

async fn wait(_: NoArgs, ex: Exchange) -> String {
    let _guard = OnDrop;
    ex.cancelled().await;
    "cancelled".into()
}

fn server(revisions: AdapterSet) -> Server {
    Server::builder("client-http-test", "1")
        .tool(Tool::new("echo", echo))
        .tool(Tool::new("deploy", deploy))
        .tool(Tool::new("wait", wait))
        .revisions(revisions)
        .build()
        .unwrap()
}

/// Our HTTP server on 127.0.0.1:0, stopped when dropped.
struct Running {
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Running {
    async fn start(server: Server, config: HttpConfig) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let endpoint = HttpEndpoint::new(server, config);
        tokio::spawn(async move {
            let _ = serve_with_shutdown(listener, endpoint, async {
                let _ = stopped.await;
            })
            .await;
        });
        Self {
            addr,
            stop: Some(stop),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Ends `session` from outside the client (a raw `DELETE`), as a server that forgot it.
    async fn forget(&self, session: &str, version: &str) {
        let mut socket = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        let request = format!(
            "DELETE /mcp HTTP/1.1\r\nhost: {}\r\nmcp-session-id: {session}\r\nmcp-protocol-version: {version}\r\nconnection: close\r\n\r\n",
            self.addr
        );
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        socket.read_to_end(&mut response).await.unwrap();
        let head = String::from_utf8_lossy(&response);
        assert!(head.starts_with("HTTP/1.1 2"), "DELETE: {head}");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A transport (Streamable HTTP, or HTTP+SSE) that records every message the client sends, with the revision it was sent
/// under (from `_meta`, `initialize`, or the version header; 2025-03-26 sends none of them).
#[derive(Debug, Clone)]
struct Recording {
    inner: Arc<dyn Transport>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    sent: Arc<Notify>,
}

impl Recording {
    fn new(url: &str) -> Self {
        Self {
            inner: Arc::new(StreamableHttp::new(url.parse().unwrap())),
            recorded: Arc::default(),
            sent: Arc::default(),
        }
    }

    async fn sse(url: &str) -> Self {
        let transport = within(HttpSse::builder(url.parse().unwrap()).connect())
            .await
            .unwrap();
        Self {
            inner: Arc::new(transport),
            recorded: Arc::default(),
            sent: Arc::default(),
        }
    }

    fn recorded(&self) -> Vec<Recorded> {
        self.recorded.lock().unwrap().clone()
    }

    /// Waits until the client has sent a message with `method`, and returns it.
    async fn sent(&self, method: &str) -> Recorded {
        loop {
            let sent = self.sent.notified();
            tokio::pin!(sent);
            sent.as_mut().enable();
            if let Some(r) = self
                .recorded()
                .into_iter()
                .find(|r| r.body["method"] == method)
            {
                return r;
            }
            sent.await;
        }
    }

    fn methods(&self) -> Vec<String> {
        self.recorded()
            .iter()
            .map(|r| r.body["method"].as_str().unwrap_or("(response)").to_owned())
            .collect()
    }
}

fn revision_of(message: &Outbound, body: &Value) -> String {
    if let Some(v) = body
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str)
    {
        return v.into();
    }
    if body["method"] == "initialize" {
        return body["params"]["protocolVersion"]
            .as_str()
            .unwrap_or("?")
            .into();
    }
    message
        .headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("2025-03-26")
        .into()
}

impl Transport for Recording {
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>> {
        let body: Value = serde_json::from_slice(&message.body).unwrap();
        self.recorded.lock().unwrap().push(Recorded {
            revision: revision_of(&message, &body),
            headers: message.headers.clone(),
            body,
        });
        self.sent.notify_waiters();
        self.inner.send(message)
    }

    fn incoming(&self) -> Option<MessageStream> {
        self.inner.incoming()
    }

    fn open_stream(
        &self,
        headers: http::HeaderMap,
        last_event_id: Option<String>,
    ) -> BoxFuture<'_, Result<MessageStream, TransportError>> {
        self.inner.open_stream(headers, last_event_id)
    }

    fn info(&self) -> TransportInfo {
        self.inner.info()
    }

    fn session_id(&self) -> Option<String> {
        self.inner.session_id()
    }

    fn reset_session(&self) {
        self.inner.reset_session();
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        self.inner.close()
    }
}

fn answering() -> mcp_client::ClientBuilder {
    Client::builder()
        .client_info("client-http-test", "0.0.1")
        .remember_era(false)
        .timeout(Duration::from_secs(10))
        .on_ask(Asks::all(), |q| async move {
            match q.kind() {
                QuestionKind::Roots => Answer::result(json!({"roots": []})),
                _ => Answer::accept(json!({})),
            }
        })
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Calls, asks and lists on `client`.
async fn exercise(client: &Client) {
    let revision = client.revision();
    let echoed = within(client.call_tool("echo", json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(text(&echoed), "hi", "{revision}");
    let deployed = within(client.call_tool("deploy", json!({"service": "web"})))
        .await
        .unwrap();
    assert_eq!(text(&deployed), "deployed web", "{revision}: {deployed}");
    let tools = within(client.list_tools()).await.unwrap();
    assert_eq!(tools.len(), 3, "{revision}");
}

#[tokio::test]
async fn negotiates_from_each_starting_point_against_our_server() {
    const LEGACY: &[&str] = &["server/discover", "initialize", "notifications/initialized"];
    let cases: Vec<(&str, AdapterSet, Revision, &[&str])> = vec![
        (
            "every revision",
            AdapterSet::all(),
            Revision::V2026_07_28,
            &["server/discover"],
        ),
        (
            "modern only",
            AdapterSet::only(Revision::V2026_07_28),
            Revision::V2026_07_28,
            &["server/discover"],
        ),
        (
            "legacy only",
            AdapterSet::all().handshake_only().unwrap(),
            Revision::V2025_11_25,
            LEGACY,
        ),
        (
            "2025-06-18 only",
            AdapterSet::only(Revision::V2025_06_18),
            Revision::V2025_06_18,
            LEGACY,
        ),
        (
            "2025-03-26 only",
            AdapterSet::only(Revision::V2025_03_26),
            Revision::V2025_03_26,
            LEGACY,
        ),
    ];
    for (name, revisions, expected, opening) in cases {
        let running = Running::start(server(revisions), HttpConfig::new()).await;
        let transport = Recording::new(&running.url("/mcp"));
        let client = within(answering().connect(transport.clone()))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(client.revision(), expected, "{name}");
        exercise(&client).await;
        let methods = transport.methods();
        // The probe may be answered with -32022 and a list, then retried with a mutual version:
        // what matters is the order of the opening and that no modern request follows it.
        let mut opening_seen = methods
            .iter()
            .map(String::as_str)
            .filter(|m| ["server/discover", "initialize", "notifications/initialized"].contains(m));
        let first: Vec<&str> = opening_seen.by_ref().take(opening.len()).collect();
        assert_eq!(first, opening, "{name}: {methods:?}");
        within(client.close()).await.unwrap();
        support::schema::validate(&transport.recorded());
    }
}

#[tokio::test]
async fn falls_back_to_http_sse_when_the_url_is_an_http_sse_endpoint() {
    // A server whose only endpoint at this URL is HTTP+SSE: the POSTs fail without a modern
    // body, and the client opens the stream at the same URL.
    let running = Running::start(server(AdapterSet::all()), HttpConfig::new()).await;
    let client = within(answering().connect_http(&running.url("/sse")))
        .await
        .unwrap();
    assert_eq!(client.revision(), Revision::V2025_11_25);
    exercise(&client).await;
    within(client.close()).await.unwrap();
    // And with HTTP+SSE only for 2024-11-05.
    let running = Running::start(
        server(AdapterSet::only(Revision::V2024_11_05)),
        HttpConfig::new(),
    )
    .await;
    let client = within(answering().connect_http(&running.url("/sse")))
        .await
        .unwrap();
    assert_eq!(client.revision(), Revision::V2024_11_05);
    exercise(&client).await;
    // Pinned, straight to the stream.
    let transport = within(HttpSse::builder(running.url("/sse").parse().unwrap()).connect())
        .await
        .unwrap();
    let client = within(
        answering()
            .revision(Revision::V2024_11_05)
            .connect(transport),
    )
    .await
    .unwrap();
    exercise(&client).await;
}

#[tokio::test]
async fn reinitializes_after_the_server_lost_the_session() {
    let running = Running::start(server(AdapterSet::all()), HttpConfig::new()).await;
    for revision in [
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
    ] {
        let transport = Recording::new(&running.url("/mcp"));
        let client = within(answering().revision(revision).connect(transport.clone()))
            .await
            .unwrap();
        let first = client.session_id().expect("a session");
        exercise(&client).await;
        running.forget(&first, revision.as_str()).await;
        // The next call meets 404, initializes again and is retried once, transparently.
        let echoed = within(client.call_tool("echo", json!({"text": "again"})))
            .await
            .unwrap();
        assert_eq!(text(&echoed), "again", "{revision}");
        let second = client.session_id().expect("a new session");
        assert_ne!(first, second, "{revision}");
        let initializes = transport
            .methods()
            .iter()
            .filter(|m| *m == "initialize")
            .count();
        assert_eq!(initializes, 2, "{revision}");
        // Questions still work on the new session.
        exercise(&client).await;
        within(client.close()).await.unwrap();
        support::schema::validate(&transport.recorded());
    }
}

#[tokio::test]
async fn cancellation_over_http_reaches_the_handler() {
    let running = Running::start(server(AdapterSet::all()), HttpConfig::new()).await;
    for revision in [
        Revision::V2026_07_28,
        Revision::V2025_11_25,
        Revision::V2025_03_26,
        Revision::V2024_11_05,
    ] {
        WATCH.cancelled.store(false, Ordering::SeqCst);
        let recording = if revision == Revision::V2024_11_05 {
            Recording::sse(&running.url("/sse")).await
        } else {
            Recording::new(&running.url("/mcp"))
        };
        let client = within(answering().revision(revision).connect(recording.clone()))
            .await
            .unwrap();
        let cancelled = WATCH.notify.notified();
        tokio::pin!(cancelled);
        cancelled.as_mut().enable();
        let options = CallOptions::new().timeout(Duration::from_millis(300));
        let error = within(client.call_tool_with("wait", json!({}), options))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Timeout, "{revision}");
        if revision == Revision::V2026_07_28 {
            // Over Streamable HTTP, closing the call's stream is the cancellation.
            within(cancelled).await;
        } else {
            // Before, the client says so with `notifications/cancelled` naming the call.
            let cancel = within(recording.sent("notifications/cancelled")).await;
            let call = recording.sent("tools/call").await;
            assert_eq!(
                cancel.body["params"]["requestId"], call.body["id"],
                "{revision}"
            );
            if revision != Revision::V2024_11_05 {
                within(cancelled).await;
            }
        }
        if revision != Revision::V2024_11_05 {
            assert!(WATCH.cancelled.load(Ordering::SeqCst), "{revision}");
        }
        let sent = recording.recorded();
        let notified = sent
            .iter()
            .any(|r| r.body["method"] == "notifications/cancelled");
        assert_eq!(notified, revision != Revision::V2026_07_28, "{revision}");
        support::schema::validate(&sent);
        // The client goes on working.
        exercise(&client).await;
    }
}

/// `ClientBuilder::on_message` sees every message both ways, on each revision and through the
/// HTTP+SSE fallback of `connect_http`: each request the client sent has its response among
/// what it received.
#[tokio::test]
async fn on_message_sees_every_message_both_ways() {
    use mcp_client::transport::Direction;
    let cases: Vec<(&str, AdapterSet, &str)> = vec![
        ("every revision", AdapterSet::all(), "/mcp"),
        (
            "2025-11-25 only",
            AdapterSet::only(Revision::V2025_11_25),
            "/mcp",
        ),
        (
            "2025-06-18 only",
            AdapterSet::only(Revision::V2025_06_18),
            "/mcp",
        ),
        (
            "2025-03-26 only",
            AdapterSet::only(Revision::V2025_03_26),
            "/mcp",
        ),
        ("HTTP+SSE fallback", AdapterSet::all(), "/sse"),
    ];
    for (name, revisions, path) in cases {
        let running = Running::start(server(revisions), HttpConfig::new()).await;
        let seen: Arc<Mutex<Vec<(Direction, Value)>>> = Arc::default();
        let record = seen.clone();
        let client = within(
            answering()
                .on_message(move |seen| {
                    record
                        .lock()
                        .unwrap()
                        .push((seen.direction(), seen.message().clone()));
                })
                .connect_http(&running.url(path)),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        exercise(&client).await;
        let seen = seen.lock().unwrap().clone();
        let sent: Vec<&Value> = seen
            .iter()
            .filter(|(d, _)| *d == Direction::Sent)
            .map(|(_, m)| m)
            .collect();
        let received: Vec<&Value> = seen
            .iter()
            .filter(|(d, _)| *d == Direction::Received)
            .map(|(_, m)| m)
            .collect();
        for method in ["tools/call", "tools/list"] {
            assert!(
                sent.iter().any(|m| m["method"] == method),
                "{name}: no {method} sent"
            );
        }
        for request in sent
            .iter()
            .filter(|m| m["method"].is_string() && !m["id"].is_null())
        {
            assert!(
                received.iter().any(|m| m["id"] == request["id"]
                    && (m["result"].is_object() || m["error"].is_object())),
                "{name}: no response to {request} among {received:?}"
            );
        }
        within(client.close()).await.unwrap();
    }
}
