//! POST streams that resume across workers (issue 47): the events of a call's SSE reply carry
//! ids from the hub's log, so a `GET` with `Last-Event-ID` on another worker replays what the
//! client missed and follows the call to its result; a call whose worker died ends with an
//! error; another session cannot read the call. Once per revision with sessions, on every hub
//! backend (memory: two endpoints on one `MemoryHub`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backends::{Backend, Place};
use crate::raw_http::{RawRequest, RawStream, Running, SseEvent, WAIT};
use mcp_hub::{Hub, HubConfig, MemoryHub};
use mcp_server::http::HttpConfig;
use mcp_server::{Exchange, Server, State, Tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// The revisions with Streamable HTTP sessions, whose SSE streams resume.
const REVISIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

/// One permit per step of the `paced` tool: the test lets each step go.
#[derive(Clone)]
struct Gate(Arc<Semaphore>);

#[derive(Deserialize, JsonSchema)]
struct PacedArgs {
    /// How many steps.
    n: u32,
}

/// Sends `n` progress notifications, each after a permit of the gate, then its result.
async fn paced(State(gate): State<Gate>, args: PacedArgs, ex: Exchange) -> String {
    for i in 1..=args.n {
        match gate.0.acquire().await {
            Ok(permit) => permit.forget(),
            Err(_) => return "closed".into(),
        }
        ex.progress(
            f64::from(i),
            Some(f64::from(args.n)),
            Some(&format!("step {i}")),
        );
    }
    format!("paced {}", args.n)
}

fn server(hub: Arc<dyn Hub>, gate: &Gate) -> Server {
    Server::builder("post-resume", "1")
        .with_state(gate.clone())
        .tool(Tool::new("paced", paced).description("Steps when the test says so."))
        .state_store(hub.clone())
        .event_log(hub)
        .build()
        .unwrap()
}

fn config() -> HttpConfig {
    HttpConfig::new()
        .resumable_post_streams(true)
        .session_cache(Duration::ZERO)
        .post_stream_lease(LEASE)
}

/// The lease of the tests' calls: a dead worker's call ends within 1.5 times this.
const LEASE: Duration = Duration::from_millis(800);

/// Where the workers of one row meet.
enum Meeting {
    Memory(Arc<MemoryHub>),
    Shared(Place),
}

impl Meeting {
    async fn hub(&self) -> Arc<dyn Hub> {
        match self {
            Self::Memory(hub) => hub.clone(),
            Self::Shared(place) => place.hub().await,
        }
    }

    fn name(&self) -> String {
        match self {
            Self::Memory(_) => "memory".into(),
            Self::Shared(place) => format!("{:?}", place.backend),
        }
    }
}

/// Memory, then every shared backend that answers.
async fn meetings() -> Vec<Meeting> {
    let mut out = vec![Meeting::Memory(Arc::new(MemoryHub::new(HubConfig::new())))];
    for backend in Backend::all() {
        if let Some(place) = backend.place().await {
            out.push(Meeting::Shared(place));
        }
    }
    out
}

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

fn post(revision: &str, session: Option<&str>, body: &Value) -> RawRequest<'static> {
    let mut request = RawRequest::new("POST", "/mcp").header("Accept", ACCEPT_BOTH);
    if revision != "2025-03-26" {
        request = request.header("MCP-Protocol-Version", revision);
    }
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    request.json(body)
}

async fn initialize(at: &Running, revision: &str) -> String {
    let init = RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT_BOTH)
        .json(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision, "capabilities": {},
            "clientInfo": {"name": "resume", "version": "1"}}}),
        )
        .send(at.addr)
        .await;
    assert_eq!(init.status, 200, "{revision}");
    let session = init.header("mcp-session-id").unwrap().to_owned();
    let initialized = post(
        revision,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .send(at.addr)
    .await;
    assert_eq!(initialized.status, 202);
    session
}

fn get(revision: &str, session: &str, last_event_id: &str) -> RawRequest<'static> {
    let mut request = RawRequest::new("GET", "/mcp")
        .header("Accept", "text/event-stream")
        .header("Mcp-Session-Id", session)
        .header("Last-Event-ID", last_event_id);
    if revision != "2025-03-26" {
        request = request.header("MCP-Protocol-Version", revision);
    }
    request
}

/// The next event with data (a priming event has none).
async fn next_message(stream: &mut RawStream) -> Option<(SseEvent, Value)> {
    loop {
        let event = stream.event().await?;
        if event.data.is_empty() {
            continue;
        }
        let message = serde_json::from_str(&event.data).unwrap();
        return Some((event, message));
    }
}

fn call(id: u64, n: u32) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "paced", "arguments": {"n": n}, "_meta": {"progressToken": "p"}}})
}

/// Starts a call of 10 steps on `at`, reads 2 progress events and drops the stream: the id of
/// the last event read.
async fn start_and_drop(at: &Running, revision: &str, session: &str, gate: &Gate) -> String {
    // The head goes out with the first message: let the first step go.
    gate.0.add_permits(1);
    let mut stream = post(revision, Some(session), &call(7, 10))
        .open(at.addr)
        .await;
    assert_eq!(stream.status, 200, "{revision}");
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    let mut last = None;
    for step in 1..=2 {
        if step > 1 {
            gate.0.add_permits(1);
        }
        let (event, message) = next_message(&mut stream).await.unwrap();
        assert_eq!(message["method"], "notifications/progress", "{revision}");
        assert_eq!(
            message["params"]["progress"].as_f64(),
            Some(f64::from(step)),
            "{revision}"
        );
        last = Some(event.id.expect("every event of a POST stream has an id"));
    }
    drop(stream);
    last.unwrap()
}

#[tokio::test]
async fn a_dropped_post_stream_resumes_on_another_worker() {
    for meeting in meetings().await {
        for revision in REVISIONS {
            eprintln!("row: {} {revision}", meeting.name());
            resume_row(&meeting, revision).await;
        }
    }
}

async fn resume_row(meeting: &Meeting, revision: &str) {
    let gate = Gate(Arc::new(Semaphore::new(0)));
    let a = Running::start(server(meeting.hub().await, &gate), config()).await;
    let b = Running::start(server(meeting.hub().await, &gate), config()).await;
    let session = initialize(&a, revision).await;
    let last = start_and_drop(&a, revision, &session, &gate).await;
    // Three steps while nobody listens: replayed from the log.
    gate.0.add_permits(3);
    let mut resumed = get(revision, &session, &last).open(b.addr).await;
    assert_eq!(resumed.status, 200, "{revision}");
    let mut previous = last;
    for step in 3..=10 {
        if step > 5 {
            // The rest while the resumed stream follows the live call.
            gate.0.add_permits(1);
        }
        let (event, message) = next_message(&mut resumed).await.unwrap();
        assert_eq!(message["method"], "notifications/progress", "{revision}");
        assert_eq!(
            message["params"]["progress"].as_f64(),
            Some(f64::from(step)),
            "{revision}"
        );
        let id = event.id.expect("a resumed event has an id");
        assert_ne!(id, previous);
        previous = id;
    }
    let (_, done) = next_message(&mut resumed).await.unwrap();
    assert_eq!(done["id"], 7, "{revision}");
    assert_eq!(
        done["result"]["content"][0]["text"], "paced 10",
        "{revision}"
    );
    // The call ended: so does its stream.
    assert!(resumed.event().await.is_none(), "{revision}");
    // Resuming again from the middle, on the first worker, replays the same tail.
    let mut again = get(revision, &session, &previous).open(a.addr).await;
    assert_eq!(again.status, 200);
    let (_, done) = next_message(&mut again).await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "paced 10");
    assert!(again.event().await.is_none());
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn another_session_gets_nothing_of_the_call() {
    for meeting in meetings().await {
        eprintln!("row: {}", meeting.name());
        let revision = "2025-11-25";
        let gate = Gate(Arc::new(Semaphore::new(0)));
        let a = Running::start(server(meeting.hub().await, &gate), config()).await;
        let b = Running::start(server(meeting.hub().await, &gate), config()).await;
        let session = initialize(&a, revision).await;
        let other = initialize(&b, revision).await;
        let last = start_and_drop(&a, revision, &session, &gate).await;
        gate.0.add_permits(8);
        for at in [&a, &b] {
            let stolen = get(revision, &other, &last).send(at.addr).await;
            assert_eq!(
                stolen.status,
                400,
                "{}",
                String::from_utf8_lossy(&stolen.body)
            );
            let body = String::from_utf8_lossy(&stolen.body);
            assert!(
                !body.contains("paced") && !body.contains("progress"),
                "{body}"
            );
        }
        // The call's own session still gets it.
        let mut own = get(revision, &session, &last).open(b.addr).await;
        let mut steps = 0;
        let done = loop {
            let (_, message) = next_message(&mut own).await.unwrap();
            if message.get("id").is_some() {
                break message;
            }
            steps += 1;
        };
        assert_eq!(steps, 8);
        assert_eq!(done["result"]["content"][0]["text"], "paced 10");
        a.stop().await;
        b.stop().await;
    }
}

/// A worker on its own runtime, so that killing it ends every task it started (its calls,
/// its hub connections) at once, as a crash would.
struct Doomed {
    runtime: tokio::runtime::Runtime,
    running: Option<Running>,
}

impl Doomed {
    async fn start(meeting: &Meeting, gate: &Gate) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let handle = runtime.handle().clone();
        let running = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    handle.block_on(async {
                        let hub = meeting.hub().await;
                        Running::start(server(hub, gate), config()).await
                    })
                })
                .join()
                .unwrap()
        });
        Self {
            runtime,
            running: Some(running),
        }
    }

    fn kill(mut self) {
        self.running.take();
        self.runtime.shutdown_background();
    }
}

#[tokio::test]
async fn a_call_whose_worker_died_ends_with_an_error() {
    for meeting in meetings().await {
        for revision in REVISIONS {
            eprintln!("row: {} {revision}", meeting.name());
            dead_worker_row(&meeting, revision).await;
        }
    }
}

async fn dead_worker_row(meeting: &Meeting, revision: &str) {
    let gate = Gate(Arc::new(Semaphore::new(0)));
    let doomed = Doomed::start(meeting, &gate).await;
    let b = Running::start(server(meeting.hub().await, &gate), config()).await;
    let a = doomed.running.as_ref().unwrap();
    let session = initialize(a, revision).await;
    let last = start_and_drop(a, revision, &session, &gate).await;
    let mut resumed = get(revision, &session, &last).open(b.addr).await;
    assert_eq!(resumed.status, 200);
    let killed = Instant::now();
    doomed.kill();
    let (event, error) = next_message(&mut resumed).await.unwrap();
    let waited = killed.elapsed();
    assert_eq!(error["id"], 7, "{revision}: {error}");
    assert_eq!(error["error"]["code"], -32603, "{revision}: {error}");
    assert!(event.id.is_none());
    // The documented bound (1.5 leases), with room for a loaded machine.
    assert!(
        waited < LEASE * 3 / 2 + Duration::from_secs(3),
        "the error came after {waited:?}"
    );
    assert!(resumed.event().await.is_none());
    // Nothing is left waiting on the gate.
    gate.0.close();
    b.stop().await;
}

#[tokio::test]
async fn the_client_library_finishes_a_call_whose_post_stream_was_closed() {
    let gate = Gate(Arc::new(Semaphore::new(0)));
    let hub: Arc<dyn Hub> = Arc::new(MemoryHub::new(HubConfig::new()));
    let running = Running::start(
        server(hub, &gate),
        config()
            .post_stream_poll_after(Some(Duration::ZERO))
            .sse_retry(10),
    )
    .await;
    let client = mcp_client::Client::builder()
        .timeout(WAIT)
        .revision(mcp_client::Revision::V2025_11_25)
        .connect_http(&running.url("/mcp"))
        .await
        .unwrap();
    gate.0.add_permits(10);
    let seen = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counter = seen.clone();
    let result = client
        .call_tool_with(
            "paced",
            json!({"n": 10}),
            mcp_client::CallOptions::new().on_progress(move |_| {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }),
        )
        .await
        .unwrap();
    assert_eq!(result["content"][0]["text"], "paced 10");
    assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), 10);
    client.close().await.unwrap();
    running.stop().await;
}

/// A TCP proxy in front of `upstream` that cuts the first connection whose responses carry a
/// second `notifications/progress` (no clean end of the body: the socket closes mid-stream),
/// then lets the gate's other 8 steps go.
async fn cutting_proxy(
    upstream: std::net::SocketAddr,
    gate: Gate,
) -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cut = Arc::new(AtomicBool::new(false));
    let flag = cut.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = tokio::net::TcpStream::connect(upstream).await.unwrap();
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            let up = tokio::spawn(async move {
                let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
            });
            let cut = flag.clone();
            let gate = gate.clone();
            tokio::spawn(async move {
                let mut seen = 0;
                let mut buffer = vec![0u8; 16 * 1024];
                loop {
                    let n = match server_read.read(&mut buffer).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if client_write.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                    let text = String::from_utf8_lossy(&buffer[..n]);
                    seen += text.matches("notifications/progress").count();
                    if seen >= 2 && !cut.swap(true, Ordering::SeqCst) {
                        // Both halves dropped: the client's connection closes mid-body.
                        up.abort();
                        drop(client_write);
                        gate.0.add_permits(8);
                        return;
                    }
                }
                up.abort();
            });
        }
    });
    (addr, cut)
}

#[tokio::test]
async fn the_client_library_finishes_a_call_whose_connection_was_cut() {
    let gate = Gate(Arc::new(Semaphore::new(2)));
    let hub: Arc<dyn Hub> = Arc::new(MemoryHub::new(HubConfig::new()));
    let running = Running::start(server(hub, &gate), config().sse_retry(10)).await;
    let (proxy, cut) = cutting_proxy(running.addr, gate.clone()).await;
    let client = mcp_client::Client::builder()
        .timeout(WAIT)
        .revision(mcp_client::Revision::V2025_11_25)
        .connect_http(&format!("http://{proxy}/mcp"))
        .await
        .unwrap();
    let seen = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counter = seen.clone();
    let result = client
        .call_tool_with(
            "paced",
            json!({"n": 10}),
            mcp_client::CallOptions::new().on_progress(move |_| {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }),
        )
        .await
        .unwrap();
    assert!(
        cut.load(std::sync::atomic::Ordering::SeqCst),
        "the proxy cut the stream"
    );
    assert_eq!(result["content"][0]["text"], "paced 10");
    assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), 10);
    running.stop().await;
}

#[tokio::test]
async fn with_poll_after_a_post_stream_ends_after_its_priming_event_and_get_reads_the_rest() {
    for meeting in meetings().await {
        eprintln!("row: {}", meeting.name());
        poll_after_row(&meeting).await;
    }
}

async fn poll_after_row(meeting: &Meeting) {
    let revision = "2025-11-25";
    let gate = Gate(Arc::new(Semaphore::new(1)));
    let running = Running::start(
        server(meeting.hub().await, &gate),
        config().post_stream_poll_after(Some(Duration::ZERO)),
    )
    .await;
    let session = initialize(&running, revision).await;
    let posted = post(revision, Some(&session), &call(9, 3))
        .send(running.addr)
        .await;
    assert_eq!(posted.status, 200);
    // The whole body: the priming event alone, whose id the client resumes from.
    let events = posted.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(events[0].data.is_empty() && events[0].retry.is_some());
    let priming = events[0].id.clone().unwrap();
    gate.0.add_permits(2);
    let mut rest = get(revision, &session, &priming).open(running.addr).await;
    for step in 1..=3 {
        let (event, message) = next_message(&mut rest).await.unwrap();
        assert_eq!(
            message["params"]["progress"].as_f64(),
            Some(f64::from(step))
        );
        assert!(event.id.is_some());
    }
    let (_, done) = next_message(&mut rest).await.unwrap();
    assert_eq!(done["id"], 9);
    assert_eq!(done["result"]["content"][0]["text"], "paced 3");
    assert!(rest.event().await.is_none());
    running.stop().await;
}
