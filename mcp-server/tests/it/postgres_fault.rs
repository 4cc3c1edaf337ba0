//! PostgreSQL taken down and started again under a running server (issue 32), on a private
//! cluster: `initdb` in a temporary folder, `pg_ctl` on a free loopback port. Two faults, a
//! row each: stopped with `-m immediate` (as a crash) then started, with requests made while
//! it is down; and `pg_ctl restart -m fast`. While the database goes away and comes back:
//!
//! - (a) a pending ask (`deploy` waiting for its answer) outlives the outage: answered after
//!   it, the call completes, within a bound;
//! - (b) a GET stream resumes with `Last-Event-ID` on the same server, replaying exactly what
//!   followed the last event read;
//! - (c) sessions saved in a loop across the outage: every one acknowledged is served after
//!   it, every failure is a clean HTTP error within a bound;
//! - events published straight on the hub in a loop across the outage: none acknowledged is
//!   lost or read twice;
//! - the same server (never restarted) serves new sessions, asks and streams afterwards, its
//!   waits woken through `LISTEN` again: after recovery, answers and updates are made on a
//!   second worker with its own hub, and fallback polling is set far beyond every bound.
//!
//! `initdb` refuses to run as root: as root the cluster runs as the user
//! `MCP_POSTGRES_TEST_USER` (default `postgres`) through `runuser`. Without `initdb` and
//! `pg_ctl` on the `PATH` the test prints a notice and passes, unless `CI=true`.
#![cfg(feature = "postgres")]

use crate::raw_http;

include!("../../src/bin/demo/registry.rs");

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use mcp_hub::{Cursor, EventLog, Namespace, PostgresConfig, PostgresHub};
use mcp_server::http::HttpConfig;
use raw_http::{RawRequest, RawStream, Running};
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long the hub may take per operation; every bound below is a multiple of it.
const COMMAND_TIMEOUT: Duration = Duration::from_millis(500);
/// The most a request may take while the database is down or coming back.
const REQUEST_BOUND: Duration = Duration::from_secs(5);
/// A guard against a hung test, never a synchronisation.
const LIMIT: Duration = Duration::from_secs(60);

/// A private PostgreSQL cluster in its own folder; stopped and removed when dropped.
struct Cluster {
    base: PathBuf,
    port: u16,
    run_as: Option<String>,
}

impl Cluster {
    /// Creates and starts a cluster, or returns `None` (after a notice) when it cannot be run
    /// and this is not CI.
    async fn start() -> Option<Self> {
        match Self::try_start().await {
            Ok(cluster) => Some(cluster),
            Err(err) if std::env::var("CI").as_deref() != Ok("true") => {
                eprintln!("notice: cannot run a private PostgreSQL ({err}); skipping");
                None
            }
            Err(err) => panic!("cannot run a private PostgreSQL with CI=true: {err}"),
        }
    }

    async fn try_start() -> Result<Self, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let base = std::env::temp_dir().join(format!(
            "mcp-pg-fault-{}-{}",
            std::process::id(),
            nanos % 1_000_000_000
        ));
        std::fs::create_dir_all(&base).map_err(|e| e.to_string())?;
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
            .unwrap_or(false);
        let run_as = root.then(|| {
            std::env::var("MCP_POSTGRES_TEST_USER").unwrap_or_else(|_| "postgres".to_owned())
        });
        let cluster = Self { base, port, run_as };
        if let Some(user) = &cluster.run_as {
            let status = tokio::process::Command::new("chown")
                .arg(user)
                .arg(&cluster.base)
                .status()
                .await
                .map_err(|e| format!("chown: {e}"))?;
            if !status.success() {
                return Err(format!("chown to {user} failed"));
            }
        }
        let data = cluster.data();
        cluster
            .run(
                "initdb",
                &[
                    "-D",
                    &data,
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "--no-sync",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ],
            )
            .await?;
        cluster.up().await?;
        Ok(cluster)
    }

    fn data(&self) -> String {
        self.base.join("data").display().to_string()
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs a PostgreSQL program (as the cluster's user when root) and waits for it.
    async fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let mut command = match &self.run_as {
            Some(user) => {
                let mut command = tokio::process::Command::new("runuser");
                command.args(["-u", user, "--", program]);
                command
            }
            None => tokio::process::Command::new(program),
        };
        let output = command
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .map_err(|e| format!("{program}: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    /// The server's options: loopback only, its port, its socket in its own folder. `fsync`
    /// is off: the faults are of the database process, not of the machine, and the operating
    /// system keeps what was written.
    fn options(&self) -> String {
        format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off",
            self.port,
            self.base.display()
        )
    }

    /// Starts the cluster and waits until it accepts connections (`pg_ctl -w`).
    async fn up(&self) -> Result<(), String> {
        let options = self.options();
        let log = self.base.join("log").display().to_string();
        let data = self.data();
        self.run(
            "pg_ctl",
            &[
                "-D", &data, "-l", &log, "-o", &options, "-w", "-t", "60", "start",
            ],
        )
        .await
    }

    /// Stops the cluster at once, as a crash would (`-m immediate`: no checkpoint, recovery
    /// from the WAL on the next start).
    async fn down(&self) -> Result<(), String> {
        let data = self.data();
        self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"])
            .await
    }
}

impl Cluster {
    /// Restarts the cluster: fast shutdown (sessions terminated, a checkpoint), then start.
    async fn restart(&self) -> Result<(), String> {
        let options = self.options();
        let log = self.base.join("log").display().to_string();
        let data = self.data();
        self.run(
            "pg_ctl",
            &[
                "-D", &data, "-l", &log, "-o", &options, "-m", "fast", "-w", "-t", "60", "restart",
            ],
        )
        .await
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.data();
        let args = ["-D", data.as_str(), "-m", "immediate", "-w", "stop"];
        let _ = match &self.run_as {
            Some(user) => std::process::Command::new("runuser")
                .args(["-u", user, "--", "pg_ctl"])
                .args(args)
                .output(),
            None => std::process::Command::new("pg_ctl").args(args).output(),
        };
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

fn initialize() -> RawRequest<'static> {
    RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT_BOTH)
        .json(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "pg-fault", "version": "1"}}}),
        )
}

fn post(session: &str, body: &Value) -> RawRequest<'static> {
    RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT_BOTH)
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", session)
        .json(body)
}

/// A new session on `at`, initialized; panics unless it works.
async fn session(at: &Running) -> String {
    let init = initialize().send(at.addr).await;
    assert_eq!(init.status, 200, "{}", String::from_utf8_lossy(&init.body));
    let session = init.header("mcp-session-id").unwrap().to_owned();
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&session, &done).send(at.addr).await.status, 202);
    session
}

/// `tools/list` on `session`: the HTTP status.
async fn list_status(at: &Running, session: &str) -> u16 {
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    post(session, &list).send(at.addr).await.status
}

/// [`touch_config`] by address.
async fn touch_config_at(addr: std::net::SocketAddr, session: &str) -> bool {
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "touch", "arguments": {}}});
    let done = post(session, &call).send(addr).await;
    done.status == 200
        && done
            .messages()
            .iter()
            .any(|m| m["result"]["content"][0]["text"] == "touched config://app")
}

/// Calls the `touch` tool; whether the update was acknowledged (published).
async fn touch_config(at: &Running, session: &str) -> bool {
    touch_config_at(at.addr, session).await
}

async fn get_stream(at: &Running, session: &str, last_event_id: Option<&str>) -> RawStream {
    let mut request = RawRequest::new("GET", "/mcp")
        .header("Accept", "text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", session);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    let stream = request.open(at.addr).await;
    assert_eq!(stream.status, 200);
    stream
}

/// The next event carrying a message: its id and the message.
async fn next_update(stream: &mut RawStream) -> (Option<String>, Value) {
    loop {
        let event = stream.event().await.expect("the stream goes on");
        if !event.data.is_empty() {
            return (event.id, serde_json::from_str(&event.data).unwrap());
        }
    }
}

/// What a loop running across the outage saw.
#[derive(Default, Clone)]
struct Progress<T> {
    acknowledged: Vec<T>,
    errors: usize,
    slowest: Duration,
}

/// Runs `step` until `stop`, reporting acknowledged results and failures; a failing step is
/// followed by a short pause (so a loop against a dead database does not spin), which is not
/// a synchronisation.
fn across_outage<T, F, Fut>(
    stop: Arc<AtomicBool>,
    mut step: F,
) -> (watch::Receiver<Progress<T>>, tokio::task::JoinHandle<()>)
where
    T: Clone + Send + Sync + 'static,
    F: FnMut(u64) -> Fut + Send + 'static,
    Fut: Future<Output = Option<T>> + Send,
{
    let (report, progress) = watch::channel(Progress::<T> {
        acknowledged: Vec::new(),
        errors: 0,
        slowest: Duration::ZERO,
    });
    let task = tokio::spawn(async move {
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let began = Instant::now();
            let outcome = step(n).await;
            let took = began.elapsed();
            let failed = outcome.is_none();
            report.send_modify(|p| {
                p.slowest = p.slowest.max(took);
                match outcome {
                    Some(value) => p.acknowledged.push(value),
                    None => p.errors += 1,
                }
            });
            if failed {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    (progress, task)
}

/// How the database goes away and comes back.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// `pg_ctl stop -m immediate` (a crash), requests made while it is down, then `start`.
    CrashThenStart,
    /// `pg_ctl restart -m fast`: sessions terminated, a clean shutdown, back at once.
    FastRestart,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_down_and_up_under_a_pending_ask_a_stream_and_session_saves() {
    let Some(cluster) = Cluster::start().await else {
        return;
    };
    // One cluster, one row per fault; each row has its own hub and server.
    for fault in [Fault::CrashThenStart, Fault::FastRestart] {
        eprintln!("row: {fault:?}");
        fault_row(&cluster, fault).await;
    }
}

async fn fault_row(cluster: &Cluster, fault: Fault) {
    // Worker A's fallback polling (while its LISTEN connection is down) every 30 s, far beyond
    // every bound below: a wait on A that ends within its bound after recovery, for something
    // published by worker B, was woken through A's listener, so it reconnected by itself.
    let config = PostgresConfig::new()
        .command_timeout(COMMAND_TIMEOUT)
        .fallback_poll(Duration::from_secs(30))
        .pool_size(8);
    let hub = Arc::new(PostgresHub::connect(&cluster.url(), config).await.unwrap());
    let server = build_demo("pg-fault", |builder| {
        builder.state_store(hub.clone()).event_log(hub.clone())
    })
    .unwrap();
    // Sessions are minted in a loop from one address for the whole outage: every one must
    // stay, so the per-address quota (which would end the oldest idle ones) is off.
    let config = || {
        HttpConfig::new()
            .session_cache(Duration::ZERO)
            .max_sessions_per_peer(usize::MAX)
    };
    let at = Running::start(server, config()).await;
    // A second worker with its own hub: after recovery, answers and updates are made there,
    // so what A waits for can only reach it through NOTIFY (or a 30 s fallback poll).
    let hub_b = Arc::new(
        PostgresHub::connect(
            &cluster.url(),
            PostgresConfig::new().command_timeout(COMMAND_TIMEOUT),
        )
        .await
        .unwrap(),
    );
    let server_b = build_demo("pg-fault", |builder| {
        builder.state_store(hub_b.clone()).event_log(hub_b)
    })
    .unwrap();
    let b = Running::start(server_b, config()).await;

    // (b) A session subscribed to config://app, its GET stream, two updates read.
    let main = session(&at).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
        "params": {"uri": "config://app"}});
    assert_eq!(post(&main, &subscribe).send(at.addr).await.status, 200);
    let mut stream = get_stream(&at, &main, None).await;
    let mut read = Vec::new();
    for _ in 0..2 {
        assert!(touch_config(&at, &main).await);
        let (id, update) = next_update(&mut stream).await;
        assert_eq!(update["method"], "notifications/resources/updated");
        read.push(id.expect("an event id"));
    }
    let last_read = read[1].clone();

    // (a) A call waiting for its answer.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"service": "web"}}});
    let mut asking = post(&main, &call).open(at.addr).await;
    let question = asking.message().await.expect("a question");
    assert_eq!(question["method"], "elicitation/create");

    // (c) Sessions saved in a loop, and events published straight on the hub in a loop.
    let stop = Arc::new(AtomicBool::new(false));
    let addr = at.addr;
    let (sessions, saver) = across_outage(stop.clone(), move |_| async move {
        let init = initialize().send(addr).await;
        match init.status {
            200 => init.header("mcp-session-id").map(str::to_owned),
            status => {
                assert!(
                    status >= 500,
                    "a failed save is a server error: {status} {}",
                    String::from_utf8_lossy(&init.body)
                );
                None
            }
        }
    });
    let namespace = format!("{fault:?}");
    let topic = Namespace::new(&namespace).topic("events");
    let start = hub.position(&topic).await.unwrap();
    let (events, publisher) = across_outage(stop.clone(), {
        let (hub, topic) = (hub.clone(), topic.clone());
        move |n| {
            let (hub, topic) = (hub.clone(), topic.clone());
            async move {
                let message = Bytes::from(format!("event {n}"));
                let cursor = hub.publish(&topic, message.clone()).await.ok()?;
                Some((cursor, message))
            }
        }
    });
    let mut sessions_seen = sessions.clone();
    let mut events_seen = events.clone();
    tokio::time::timeout(LIMIT, sessions_seen.wait_for(|p| p.acknowledged.len() >= 5))
        .await
        .unwrap()
        .unwrap();
    tokio::time::timeout(LIMIT, events_seen.wait_for(|p| p.acknowledged.len() >= 20))
        .await
        .unwrap()
        .unwrap();

    // The call's stream is read from now on: its end (a result or a failure) is timed.
    let ask_ended = tokio::spawn(async move {
        let message = asking.message().await;
        (message, Instant::now())
    });

    let down_since = Instant::now();
    let touched_during = match fault {
        Fault::CrashThenStart => {
            // Down: both loops see failures, each bounded.
            cluster.down().await.unwrap();
            tokio::time::timeout(LIMIT, sessions_seen.wait_for(|p| p.errors > 0))
                .await
                .expect("a session save fails while the database is down")
                .unwrap();
            tokio::time::timeout(LIMIT, events_seen.wait_for(|p| p.errors > 0))
                .await
                .expect("a publish fails while the database is down")
                .unwrap();
            // A touch while down is answered in time (acknowledged or not).
            let began = Instant::now();
            let touched = touch_config(&at, &main).await;
            assert!(
                began.elapsed() < REQUEST_BOUND,
                "took {:?}",
                began.elapsed()
            );
            // Up again, same port and data; the server is not restarted.
            cluster.up().await.unwrap();
            touched
        }
        Fault::FastRestart => {
            // A touch runs while the cluster restarts.
            let touching = tokio::spawn({
                let main = main.clone();
                async move {
                    let began = Instant::now();
                    (touch_config_at(addr, &main).await, began.elapsed())
                }
            });
            cluster.restart().await.unwrap();
            let (touched, took) = touching.await.unwrap();
            assert!(took < REQUEST_BOUND, "took {took:?}");
            touched
        }
    };
    let outage = down_since.elapsed();
    let (sessions_before, events_before) = (
        sessions.borrow().acknowledged.len(),
        events.borrow().acknowledged.len(),
    );
    tokio::time::timeout(
        LIMIT,
        sessions_seen.wait_for(|p| p.acknowledged.len() >= sessions_before + 5),
    )
    .await
    .expect("session saves succeed again")
    .unwrap();
    tokio::time::timeout(
        LIMIT,
        events_seen.wait_for(|p| p.acknowledged.len() >= events_before + 20),
    )
    .await
    .expect("publishes succeed again")
    .unwrap();
    let recovered_after = down_since.elapsed();
    stop.store(true, Ordering::Relaxed);
    saver.await.unwrap();
    publisher.await.unwrap();

    // (a) The ask: its wait outlives the outage (the exchange polls again while the hub is
    // away), so, answered now, it completes within the bound of its answer.
    let answer = json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {}}});
    let answered_at = Instant::now();
    let answered = post(&main, &answer).send(b.addr).await.status;
    assert_eq!(answered, 202, "the answer is accepted after recovery");
    let (outcome, ended_at) = tokio::time::timeout(REQUEST_BOUND, ask_ended)
        .await
        .expect("the pending ask ends in time")
        .unwrap();
    let outcome = outcome.expect("the call ends with a message");
    assert_eq!(outcome["id"], 7, "{outcome}");
    assert_eq!(
        outcome["result"]["content"][0]["text"], "deployed web",
        "the pending ask completes: {outcome}"
    );
    let ask_took = ended_at.duration_since(answered_at);
    assert!(
        ask_took < REQUEST_BOUND,
        "completed {ask_took:?} after its answer"
    );

    // (b) The stream: whatever the old one did, a new one resumes after the last event read.
    // The old stream either ended (the client then resumes) or goes on: it never hangs
    // silently while updates are published.
    assert!(touch_config(&b, &main).await);
    match tokio::time::timeout(REQUEST_BOUND, stream.event()).await {
        Ok(None) => {}
        Ok(Some(event)) => assert!(event.id.is_some(), "{event:?}"),
        Err(_) => panic!("the old GET stream neither ended nor delivered the update"),
    }
    drop(stream);
    let acknowledged_touches = 2 + usize::from(touched_during);
    assert!(
        touch_config(&b, &main).await,
        "a touch after recovery is published"
    );
    let mut resumed = get_stream(&at, &main, Some(&last_read)).await;
    let mut ids = Vec::new();
    // One more, after the stream is open: the stream must yield at least every acknowledged
    // touch since `last_read` (the one during the fault if it was acknowledged, the three
    // after recovery), each once, none read before, each with its id.
    assert!(touch_config(&b, &main).await);
    loop {
        let (id, update) = next_update(&mut resumed).await;
        assert_eq!(
            update["method"], "notifications/resources/updated",
            "{update}"
        );
        let id = id.expect("a replayed event carries its id, a resync would not");
        assert!(
            !read.contains(&id),
            "event {id} was read before and came again"
        );
        assert!(!ids.contains(&id), "event {id} came twice");
        ids.push(id);
        if ids.len() > acknowledged_touches {
            break;
        }
    }

    // (c) Every acknowledged session is served; the events read back are exactly ordered.
    let acknowledged_sessions = sessions.borrow().acknowledged.clone();
    for id in &acknowledged_sessions {
        assert_eq!(
            list_status(&at, id).await,
            200,
            "acknowledged session {id} lost"
        );
    }
    let stored = read_all(&hub, &topic, start).await;
    let stored_cursors: HashSet<Cursor> = stored.iter().map(|(c, _)| *c).collect();
    assert_eq!(stored_cursors.len(), stored.len(), "no event is read twice");
    for (cursor, message) in &events.borrow().acknowledged {
        assert!(
            stored.iter().any(|(c, m)| c == cursor && m == message),
            "acknowledged event {cursor} lost"
        );
    }
    let slowest_save = sessions.borrow().slowest;
    let slowest_publish = events.borrow().slowest;
    assert!(slowest_save < REQUEST_BOUND, "a save took {slowest_save:?}");
    assert!(
        slowest_publish < REQUEST_BOUND,
        "a publish took {slowest_publish:?}"
    );

    // The same server works as new: a session, an ask answered, a stream.
    let fresh = session(&at).await;
    let mut asking = post(&fresh, &call).open(at.addr).await;
    let question = asking.message().await.unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {}}});
    assert_eq!(post(&fresh, &answer).send(b.addr).await.status, 202);
    let done = tokio::time::timeout(REQUEST_BOUND, asking.message())
        .await
        .expect("a new ask completes in time, woken without a timer")
        .unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "deployed web");

    eprintln!(
        "{fault:?}: outage {outage:?}, recovered {recovered_after:?} after the stop; {} saves and {} \
         publishes failed, {} and {} acknowledged; slowest save {slowest_save:?}, slowest \
         publish {slowest_publish:?}; the pending ask completed \
         {ask_took:?} after its answer; touch during the fault acknowledged: {touched_during}",
        sessions.borrow().errors,
        events.borrow().errors,
        acknowledged_sessions.len(),
        events.borrow().acknowledged.len(),
    );
    at.stop().await;
    b.stop().await;
}

/// Every event of `topic` after `after`, oldest first.
async fn read_all(
    hub: &PostgresHub,
    topic: &mcp_hub::Topic,
    mut after: Cursor,
) -> Vec<(Cursor, Bytes)> {
    let mut all = Vec::new();
    loop {
        let batch = hub.poll(topic, after, Duration::ZERO).await.unwrap();
        let Some(last) = batch.last() else { return all };
        after = last.cursor;
        all.extend(batch.into_iter().map(|event| (event.cursor, event.payload)));
    }
}
