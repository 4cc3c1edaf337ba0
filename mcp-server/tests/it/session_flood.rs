//! Sessions under a flood (issue 47), over real sockets on 127.0.0.1: at `max_sessions` the
//! least recently used idle session makes room for a new one and a busy one (a call in flight,
//! an open GET or HTTP+SSE stream) never does; at `max_sessions_per_peer` a client address
//! only ends its own sessions; an evicted session's client (our `mcp-client`) initializes
//! again and its call succeeds, on this worker and on another sharing the hub; the client
//! address comes from `Forwarded` / `X-Forwarded-For` only when the connection is from a
//! trusted proxy; evictions and refusals are counted; and a flood of 12,000 sessions from one
//! address at the default cap leaves every other client served, the sessions held never
//! above the cap.
//!
//! The flood runs over one HTTP/2 connection with many requests in flight at once, so that
//! 12,000 sessions take seconds in a debug build.
#![cfg(feature = "metrics")]

use crate::raw_http;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt as _;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_client::{Client, Revision};
use mcp_hub::{EventLog, MemoryHub, StateStore};
use mcp_server::http::{DEFAULT_MAX_SESSIONS, HttpConfig, TrustedProxy};
use mcp_server::{Metrics, NoArgs, Server, Tool};
use raw_http::{RawRequest, RawStream, Running, WAIT};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context as LayerContext, SubscriberExt as _};

const VERSION: &str = "2025-11-25";

/// `wait` tells `started` it runs and answers once `release` is notified; `echo` answers.
struct Gate {
    started: Notify,
    release: Notify,
}

fn server_on(gate: &Arc<Gate>, metrics: &Metrics, hub: Option<&Arc<MemoryHub>>) -> Server {
    let gate = gate.clone();
    let mut builder = Server::builder("flood", "1")
        .metrics(metrics)
        .tool(Tool::new("wait", move |_: NoArgs| {
            let gate = gate.clone();
            async move {
                gate.started.notify_one();
                gate.release.notified().await;
                "released".to_owned()
            }
        }))
        .tool(Tool::new("echo", |_: NoArgs| async { "echo".to_owned() }));
    if let Some(hub) = hub {
        let store: Arc<dyn StateStore> = hub.clone();
        let log: Arc<dyn EventLog> = hub.clone();
        builder = builder.state_store(store).event_log(log);
    }
    builder.build().unwrap()
}

fn gate() -> Arc<Gate> {
    Arc::new(Gate {
        started: Notify::new(),
        release: Notify::new(),
    })
}

/// 127.0.0.1, where every test connection comes from, as a trusted proxy.
fn loopback_proxy() -> TrustedProxy {
    "127.0.0.1".parse().unwrap()
}

fn initialize_body(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "flood", "version": "1"}}})
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

/// A new session, its `initialize` sent with `headers` (a client address a proxy reports).
async fn open_from(addr: SocketAddr, headers: &[(&str, &str)]) -> String {
    let mut request = post(None, &initialize_body(1));
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let response = request.send(addr).await;
    assert_eq!(response.status, 200, "{response:?}");
    response.header("mcp-session-id").unwrap().to_owned()
}

async fn open(addr: SocketAddr) -> String {
    open_from(addr, &[]).await
}

/// A session reached from a client address a trusted proxy reports.
async fn open_as(addr: SocketAddr, client: &str) -> String {
    open_from(addr, &[("X-Forwarded-For", client)]).await
}

/// The status of a `ping` in `session`: 200 while it lives, 404 once it is gone.
async fn ping(addr: SocketAddr, session: &str) -> u16 {
    post(
        Some(session),
        &json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
    )
    .send(addr)
    .await
    .status
}

/// The session's GET stream, open.
async fn get_stream(addr: SocketAddr, session: &str) -> RawStream {
    let stream = RawRequest::new("GET", "/mcp")
        .header("Accept", "text/event-stream")
        .header("MCP-Protocol-Version", VERSION)
        .header("Mcp-Session-Id", session)
        .open(addr)
        .await;
    assert_eq!(stream.status, 200);
    stream
}

/// A `wait` call of `session` in flight (returned once the tool runs); it answers once the
/// gate is released.
async fn call_in_flight(
    addr: SocketAddr,
    gate: &Arc<Gate>,
    session: &str,
) -> tokio::task::JoinHandle<u16> {
    let started = gate.started.notified();
    let session = session.to_owned();
    let call = tokio::spawn(async move {
        post(
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "wait", "arguments": {}}}),
        )
        .send(addr)
        .await
        .status
    });
    tokio::time::timeout(WAIT, started)
        .await
        .expect("the call started");
    call
}

/// The value of `name` (with its labels, as rendered) in the metrics, 0 when absent.
fn metric(metrics: &Metrics, name: &str) -> u64 {
    metrics
        .render()
        .lines()
        .find_map(|line| {
            let value = line.strip_prefix(name)?.strip_prefix(' ')?;
            value.trim().parse::<f64>().ok()
        })
        .map_or(0, |v| v as u64)
}

fn evicted(metrics: &Metrics, reason: &str) -> u64 {
    metric(
        metrics,
        &format!("mcp_sessions_evicted_total{{reason=\"{reason}\"}}"),
    )
}

/// The sessions created and not evicted: an upper bound of the sessions the worker holds
/// (an eviction is counted before the session that takes its place is created).
fn held(metrics: &Metrics) -> u64 {
    metric(metrics, "mcp_sessions_created_total")
        - evicted(metrics, "cap")
        - evicted(metrics, "peer_quota")
}

/// Many `initialize`s at once over one HTTP/2 connection.
struct Flood {
    client: HyperClient<HttpConnector, Full<Bytes>>,
    url: String,
}

impl Flood {
    fn new(addr: SocketAddr) -> Self {
        Self {
            client: HyperClient::builder(TokioExecutor::new())
                .http2_only(true)
                .build_http(),
            url: format!("http://{addr}/mcp"),
        }
    }

    /// `count` sessions from `client` (reported by the trusted proxy), 64 in flight at once;
    /// every one must be minted.
    async fn sessions(&self, client: &str, count: usize) {
        let minted = futures::stream::iter(0..count)
            .map(|n| {
                let request = http::Request::post(&self.url)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header("x-forwarded-for", client)
                    .body(Full::new(Bytes::from(
                        initialize_body(n as i64).to_string(),
                    )))
                    .unwrap();
                let sent = self.client.request(request);
                async move {
                    let response = tokio::time::timeout(WAIT, sent).await.unwrap().unwrap();
                    let status = response.status();
                    let minted = response.headers().contains_key("mcp-session-id");
                    let _ = response.into_body().collect().await;
                    status == 200 && minted
                }
            })
            .buffer_unordered(64)
            .filter(|minted| std::future::ready(*minted))
            .count()
            .await;
        assert_eq!(
            minted, count,
            "every initialize of the flood minted a session"
        );
    }
}

#[tokio::test]
async fn at_the_cap_the_least_recently_used_idle_session_goes_and_busy_ones_never_do() {
    let (gate, metrics) = (gate(), Metrics::new());
    let config = HttpConfig::new()
        .max_sessions(5)
        .max_sessions_per_peer(usize::MAX);
    let running = Running::start(server_on(&gate, &metrics, None), config).await;
    let addr = running.addr;
    let calling = open(addr).await;
    let streaming = open(addr).await;
    let (older, newer) = (open(addr).await, open(addr).await);
    let call = call_in_flight(addr, &gate, &calling).await;
    let _stream = get_stream(addr, &streaming).await;
    // An HTTP+SSE session is busy while its stream is open.
    let mut sse = RawRequest::new("GET", "/sse")
        .header("Accept", "text/event-stream")
        .open(addr)
        .await;
    assert_eq!(sse.status, 200);
    assert_eq!(
        sse.event().await.unwrap().event.as_deref(),
        Some("endpoint")
    );
    // `older` is used after `newer` was made: `newer` is the least recently used idle one.
    assert_eq!(ping(addr, &older).await, 200);
    let fifth = open(addr).await;
    assert_eq!(
        ping(addr, &newer).await,
        404,
        "the least recently used idle session went"
    );
    assert_eq!(evicted(&metrics, "cap"), 1);
    assert_eq!(ping(addr, &older).await, 200);
    // `fifth` is now the least recently used idle session.
    let sixth = open(addr).await;
    assert_eq!(ping(addr, &fifth).await, 404);
    assert_eq!(held(&metrics), 5);
    // Every session busy: refused, with Retry-After and the revision's error, none ended.
    let _streams = (
        get_stream(addr, &older).await,
        get_stream(addr, &sixth).await,
    );
    let refused = post(None, &initialize_body(42)).send(addr).await;
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.header("retry-after"), Some("2"));
    assert!(refused.header("mcp-session-id").is_none());
    let body = refused.json();
    assert_eq!(
        (body["id"].clone(), body["error"]["code"].clone()),
        (json!(42), json!(-32603))
    );
    crate::support::check(Revision::V2025_11_25, "JSONRPCMessage", &body);
    assert_eq!(
        metric(&metrics, "mcp_limit_refusals_total{limit=\"max_sessions\"}"),
        1
    );
    assert_eq!(evicted(&metrics, "cap"), 2);
    // The call ends: its session is idle, and the one that goes next.
    gate.release.notify_one();
    assert_eq!(
        tokio::time::timeout(WAIT, call).await.unwrap().unwrap(),
        200
    );
    open(addr).await;
    assert_eq!(ping(addr, &calling).await, 404);
    for busy in [&streaming, &older, &sixth] {
        assert_eq!(ping(addr, busy).await, 200);
    }
    assert!(held(&metrics) <= 5);
    drop(sse);
}

#[tokio::test]
async fn an_evicted_sessions_client_initializes_again_and_its_call_succeeds() {
    for revision in [
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ] {
        let (gate, metrics) = (gate(), Metrics::new());
        let config = HttpConfig::new()
            .max_sessions(2)
            .max_sessions_per_peer(usize::MAX);
        let running = Running::start(server_on(&gate, &metrics, None), config).await;
        let client = Client::builder()
            .timeout(WAIT)
            .revision(revision)
            .connect_http(&running.url("/mcp"))
            .await
            .unwrap();
        client.call_tool("echo", json!({})).await.unwrap();
        let first = client.session_id().expect("a session");
        open(running.addr).await;
        open(running.addr).await;
        assert_eq!(evicted(&metrics, "cap"), 1, "{revision}");
        assert_eq!(ping(running.addr, &first).await, 404, "{revision}");
        let echoed = client.call_tool("echo", json!({})).await.unwrap();
        assert_eq!(echoed["content"][0]["text"], "echo", "{revision}");
        let second = client.session_id().expect("a new session");
        assert_ne!(first, second, "{revision}: initialized again");
    }
}

#[tokio::test]
async fn an_evicted_session_is_gone_on_every_worker_of_the_hub() {
    let hub = Arc::new(MemoryHub::default());
    let (gate, metrics) = (gate(), Metrics::new());
    let config = || {
        HttpConfig::new()
            .max_sessions(1)
            .max_sessions_per_peer(usize::MAX)
    };
    let a = Running::start(server_on(&gate, &metrics, Some(&hub)), config()).await;
    let b = Running::start(server_on(&gate, &Metrics::new(), Some(&hub)), config()).await;
    let client = Client::builder()
        .timeout(WAIT)
        .revision(Revision::V2025_11_25)
        .connect_http(&a.url("/mcp"))
        .await
        .unwrap();
    let first = client.session_id().unwrap();
    assert_eq!(
        ping(b.addr, &first).await,
        200,
        "served by the other worker"
    );
    open(a.addr).await;
    assert_eq!(evicted(&metrics, "cap"), 1);
    assert_eq!(
        ping(b.addr, &first).await,
        404,
        "gone on the other worker too"
    );
    assert_eq!(ping(a.addr, &first).await, 404);
    client.call_tool("echo", json!({})).await.unwrap();
}

#[tokio::test]
async fn a_flood_from_one_address_ends_only_that_addresses_sessions() {
    const QUOTA: usize = 4;
    let (gate, metrics) = (gate(), Metrics::new());
    let config = HttpConfig::new()
        .max_sessions(50)
        .max_sessions_per_peer(QUOTA)
        .trusted_proxies([loopback_proxy()]);
    let running = Running::start(server_on(&gate, &metrics, None), config).await;
    let addr = running.addr;
    let bystander = open_as(addr, "198.51.100.7").await;
    let busy = open_as(addr, "192.0.2.1").await;
    let _stream = get_stream(addr, &busy).await;
    Flood::new(addr).sessions("192.0.2.1", 100).await;
    // The flood ended only its own idle sessions: 101 made, 4 kept.
    assert_eq!(evicted(&metrics, "peer_quota"), 101 - QUOTA as u64);
    assert_eq!(evicted(&metrics, "cap"), 0);
    assert_eq!(ping(addr, &bystander).await, 200);
    assert_eq!(
        ping(addr, &busy).await,
        200,
        "a busy session is never evicted"
    );
    // Every session of the address busy: its next one is refused, others are served.
    let mut streams = Vec::new();
    let mut last = Vec::new();
    for _ in 1..QUOTA {
        let session = open_as(addr, "192.0.2.1").await;
        streams.push(get_stream(addr, &session).await);
        last.push(session);
    }
    let refused = post(None, &initialize_body(7))
        .header("X-Forwarded-For", "192.0.2.1")
        .send(addr)
        .await;
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.header("retry-after"), Some("2"));
    let message = refused.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("maximum of 4 sessions"), "{message}");
    assert_eq!(
        metric(
            &metrics,
            "mcp_limit_refusals_total{limit=\"max_sessions_per_peer\"}"
        ),
        1
    );
    open_as(addr, "203.0.113.5").await;
    for session in last.iter().chain([&busy, &bystander]) {
        assert_eq!(ping(addr, session).await, 200);
    }
}

#[tokio::test]
async fn client_address_headers_count_only_from_a_trusted_proxy() {
    // (trusted proxies, whether the headers are believed)
    let rows: [(Vec<TrustedProxy>, bool); 3] = [
        (Vec::new(), false),
        (vec!["10.0.0.0/8".parse().unwrap()], false),
        (vec!["127.0.0.0/8".parse().unwrap()], true),
    ];
    for (proxies, believed) in rows {
        let (gate, metrics) = (gate(), Metrics::new());
        let config = HttpConfig::new()
            .max_sessions(50)
            .max_sessions_per_peer(2)
            .trusted_proxies(proxies.clone());
        let running = Running::start(server_on(&gate, &metrics, None), config).await;
        let addr = running.addr;
        let sessions = [
            open_from(addr, &[("X-Forwarded-For", "192.0.2.1")]).await,
            open_from(addr, &[("Forwarded", "for=192.0.2.2")]).await,
            open_from(
                addr,
                &[
                    ("Forwarded", "for=\"[2001:db8::3]\""),
                    ("X-Forwarded-For", "192.0.2.3"),
                ],
            )
            .await,
        ];
        // Believed: three addresses, nothing evicted. Ignored: one address (127.0.0.1) at
        // its quota of 2, so the first session made room for the third.
        let expected = if believed { 200 } else { 404 };
        assert_eq!(ping(addr, &sessions[0]).await, expected, "{proxies:?}");
        assert_eq!(
            evicted(&metrics, "peer_quota"),
            u64::from(!believed),
            "{proxies:?}"
        );
        for session in &sessions[1..] {
            assert_eq!(ping(addr, session).await, 200, "{proxies:?}");
        }
    }
}

/// The flood: 12,000 sessions from one address against one worker at the default
/// cap of 10,000 (the per-address quota off, so the cap itself is what is reached).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_thousand_sessions_from_one_address_leave_everyone_else_served() {
    const FLOOD: usize = 12_000;
    let (gate, metrics) = (gate(), Metrics::new());
    let config = HttpConfig::new()
        .max_sessions_per_peer(usize::MAX)
        .trusted_proxies([loopback_proxy()]);
    let running = Running::start(server_on(&gate, &metrics, None), config).await;
    let addr = running.addr;
    let cap = DEFAULT_MAX_SESSIONS as u64;
    // Made before the flood, so the least recently used: our client's (idle), one with a call
    // in flight, one with its GET stream open.
    let client = Client::builder()
        .timeout(WAIT)
        .revision(Revision::V2025_11_25)
        .connect_http(&running.url("/mcp"))
        .await
        .unwrap();
    client.call_tool("echo", json!({})).await.unwrap();
    let first = client.session_id().unwrap();
    let calling = open(addr).await;
    let streaming = open(addr).await;
    let call = call_in_flight(addr, &gate, &calling).await;
    let _stream = get_stream(addr, &streaming).await;

    let flood = Flood::new(addr);
    for _ in 0..FLOOD / 1000 {
        flood.sessions("192.0.2.1", 1000).await;
        assert!(held(&metrics) <= cap, "held {} > {cap}", held(&metrics));
    }
    let made = FLOOD as u64 + 3;
    assert_eq!(held(&metrics), cap);
    assert_eq!(evicted(&metrics, "cap"), made - cap);
    assert_eq!(
        metric(&metrics, "mcp_limit_refusals_total{limit=\"max_sessions\"}"),
        0
    );
    // Another address is served; the busy sessions are still there.
    open_as(addr, "198.51.100.7").await;
    assert_eq!(ping(addr, &streaming).await, 200);
    gate.release.notify_one();
    assert_eq!(
        tokio::time::timeout(WAIT, call).await.unwrap().unwrap(),
        200
    );
    assert_eq!(ping(addr, &calling).await, 200);
    // Our client's idle session went; it initializes again and its call succeeds.
    assert_eq!(ping(addr, &first).await, 404);
    client.call_tool("echo", json!({})).await.unwrap();
    assert_ne!(client.session_id().unwrap(), first);
    assert!(held(&metrics) <= cap);
}

/// The fields of one log event, as text.
#[derive(Default)]
struct Line(Vec<(String, String)>);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
}

impl Line {
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Keeps every event of `mcp_server` (this thread's subscriber only).
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<Line>>>);

impl<S: tracing::Subscriber> Layer<S> for Lines {
    fn on_event(&self, event: &tracing::Event<'_>, _: LayerContext<'_, S>) {
        if event.metadata().target().starts_with("mcp_server") {
            let mut line = Line::default();
            event.record(&mut line);
            self.0.lock().unwrap().push(line);
        }
    }
}

/// A flood is visible in the log without flooding it: one line per cause per 5 s, the count
/// suppressed since in the next, and never a session id.
#[tokio::test]
async fn a_flood_is_logged_at_most_once_per_cause_and_period_without_session_ids() {
    let lines = Lines::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(lines.clone()));
    let (gate, metrics) = (gate(), Metrics::new());
    let config = HttpConfig::new().max_sessions(50).max_sessions_per_peer(2);
    let running = Running::start(server_on(&gate, &metrics, None), config).await;
    let started = std::time::Instant::now();
    let mut ids = Vec::new();
    for _ in 0..30 {
        ids.push(open(running.addr).await);
    }
    let elapsed = started.elapsed();
    assert_eq!(evicted(&metrics, "peer_quota"), 28);
    let lines = lines.0.lock().unwrap();
    let evictions: Vec<&Line> = lines
        .iter()
        .filter(|line| line.get("reason") == Some("\"peer_quota\""))
        .collect();
    // One line, plus one per 5 s the flood took on a slow machine.
    let bound = 1 + usize::try_from(elapsed.as_secs() / 5).unwrap();
    assert!(
        !evictions.is_empty() && evictions.len() <= bound,
        "{} lines in {elapsed:?}",
        evictions.len()
    );
    assert_eq!(evictions[0].get("suppressed"), Some("0"));
    assert!(
        evictions[0]
            .get("message")
            .is_some_and(|m| m.contains("least recently used idle session")),
        "{:?}",
        evictions[0].0
    );
    for line in lines.iter() {
        for (_, value) in &line.0 {
            assert!(
                !ids.iter().any(|id| value.contains(id.as_str())),
                "a session id in the log: {value}"
            );
        }
    }
}
