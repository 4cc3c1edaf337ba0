//! The attacks. Each starts its own server processes (killed when they go out of scope),
//! runs under a [`Measure`], and returns its [`Outcome`].

use std::{
    collections::HashSet,
    io::{ErrorKind, Read as _, Write as _},
    net::{SocketAddr, TcpStream as StdStream},
    process::Stdio,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{
    Measure, Options, Outcome, Proc, Redis, Report, Res,
    client::{self, Conn, EventStream},
    command, fresh_client, start_demo,
};

/// Calls in the progress-flood batch (issue 27, defect 1).
const BATCH: u64 = 256;
/// Steps per `count` call (the demo's maximum).
const STEPS: u64 = 10_000;
/// Steps per `count` call in a quick run (`--quick`, CI: debug binaries, 5 s attacks): a
/// batch of the full size cannot be read to its end within the drain time there, which
/// reported every result as lost although none was.
const QUICK_STEPS: u64 = 1_000;

/// The steps of each `count` call of the progress attacks.
fn steps(options: &Options) -> u64 {
    if options.quick { QUICK_STEPS } else { STEPS }
}
/// The slow reader's rate.
const SLOW_BYTES_PER_S: f64 = 64.0 * 1024.0;
/// How long a stream may take to be read to its end once the attack is over.
const DRAIN: Duration = Duration::from_secs(20);

/// Runs the attack `options` names.
pub(super) async fn run(options: &Options) -> Res<Report> {
    let name = options.attack.as_str();
    match name {
        "progress-stdio" => return progress_stdio(options).await,
        "redis-restart" => return redis_restart(options).await,
        "worker-kill" => return worker_kill(options).await,
        _ => {}
    }
    let (demo, addr) = start_demo(options, None).await?;
    let measure = Measure::start(demo.pid, Some(addr)).await;
    let outcome = match name {
        "baseline" => baseline(options).await,
        "progress-slow" => progress_http(addr, options, false).await,
        "progress-fast" => progress_http(addr, options, true).await,
        "unanswered-replies" => unanswered_replies(addr, options).await,
        "session-churn" => session_churn(addr, options).await,
        "session-flood" => session_flood(addr, options).await,
        "idle-connections" => idle_connections(addr, options).await,
        "slowloris" => slowloris(addr, options).await,
        "slow-readers" => slow_readers(addr, options).await,
        other => Err(format!("unknown attack {other}")),
    };
    Ok(finish(measure, name, outcome).await)
}

async fn finish(measure: Measure, name: &str, outcome: Res<Outcome>) -> Report {
    let outcome = outcome.unwrap_or_else(|error| Outcome {
        error: Some(error),
        ..Outcome::default()
    });
    measure.finish(name, outcome).await
}

fn deadline(options: &Options) -> Instant {
    Instant::now() + Duration::from_secs_f64(options.seconds)
}

async fn baseline(options: &Options) -> Res<Outcome> {
    tokio::time::sleep(Duration::from_secs_f64(options.seconds)).await;
    Ok(Outcome {
        what: "no attack: the probe alone".to_owned(),
        ..Outcome::default()
    })
}

/// The batch of `count` calls of `steps` steps with progress tokens, ids
/// `first..first + size`.
fn progress_batch(first: u64, size: u64, steps: u64) -> Bytes {
    let calls: Vec<Value> = (first..first + size)
        .map(|i| {
            client::tool_call(
                &json!(i),
                "count",
                json!({"n": steps}),
                Some(&json!(format!("p{i}"))),
            )
        })
        .collect();
    Bytes::from(Value::Array(calls).to_string())
}

/// The batch size used when the server refuses [`BATCH`] calls at once (its default limit of
/// calls in flight per session).
const SMALLER_BATCH: u64 = 64;

/// Counts the messages in one event or line: responses (their ids into `ids`), progress and
/// other notifications.
#[derive(Debug, Default)]
struct Tally {
    ids: HashSet<String>,
    progress: u64,
    other: u64,
}

impl Tally {
    fn add(&mut self, data: &str) {
        if data.contains("\"notifications/progress\"") {
            self.progress += 1;
        } else if data.contains("\"notifications/") {
            self.other += 1;
        } else {
            let mut messages = Vec::new();
            client::push_messages(data.as_bytes(), &mut messages);
            for message in messages.iter().filter(|m| client::is_response(m)) {
                self.ids.insert(message["id"].to_string());
            }
        }
    }
}

/// Issue 27, defect 1: a 2025-03-26 batch of 256 `count` calls with progress tokens (64 when
/// the server refuses 256 in flight on one session); the client reads at 64 KiB/s (slow) or at
/// full speed, repeating the batch until the attack's time is up (at most 20 batches); the
/// last is read to its end at full speed.
async fn progress_http(addr: SocketAddr, options: &Options, fast: bool) -> Res<Outcome> {
    let mut conn = Conn::open(addr).await?;
    let peer = client::handshake(&mut conn, "2025-03-26").await?;
    let end = deadline(options);
    let mut tally = Tally::default();
    let mut expected = 0;
    let mut notes = Vec::new();
    let mut bytes = 0u64;
    let rounds = 20;
    let mut size = BATCH;
    let mut next_id = 1;
    let mut round = 0;
    while round < rounds {
        if round > 0 && Instant::now() >= end {
            break;
        }
        let response = conn
            .send(
                Method::POST,
                &peer,
                Some(progress_batch(next_id, size, steps(options))),
                None,
            )
            .await?;
        next_id += size;
        if response.status() == StatusCode::SERVICE_UNAVAILABLE && size > SMALLER_BATCH {
            let _ = client::read_messages(response).await;
            notes.push(format!(
                "a batch of {size} was refused with HTTP 503 (calls in flight per session); batches of {SMALLER_BATCH} instead"
            ));
            size = SMALLER_BATCH;
            continue;
        }
        if response.status() != StatusCode::OK {
            return Err(format!("the batch got HTTP {}", response.status()));
        }
        round += 1;
        expected += size;
        if !client::is_sse(&response) {
            let (_, messages) = client::read_messages(response).await?;
            for message in messages.iter().filter(|m| client::is_response(m)) {
                tally.ids.insert(message["id"].to_string());
            }
            continue;
        }
        let mut stream = EventStream::new(response);
        let drain_end = end.max(Instant::now()) + DRAIN;
        loop {
            let now = Instant::now();
            let Some(left) = drain_end.checked_duration_since(now) else {
                notes.push(format!(
                    "round {round}: not read to its end within the drain time"
                ));
                break;
            };
            match tokio::time::timeout(left, stream.chunk()).await {
                Err(_) => {
                    notes.push(format!(
                        "round {round}: not read to its end within the drain time"
                    ));
                    break;
                }
                Ok(Err(error)) => {
                    notes.push(format!("round {round}: {error}"));
                    break;
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(n))) => {
                    bytes += n as u64;
                    while let Some((_, data)) = stream.event() {
                        tally.add(&data);
                    }
                    if !fast && Instant::now() < end {
                        tokio::time::sleep(Duration::from_secs_f64(n as f64 / SLOW_BYTES_PER_S))
                            .await;
                    }
                }
            }
        }
    }
    let delivered = tally.ids.len() as u64;
    notes.push(format!(
        "{expected} calls: {delivered} results, {} progress and {} other notifications, {:.1} MiB read",
        tally.progress,
        tally.other,
        bytes as f64 / 1048576.0
    ));
    Ok(Outcome {
        what: if fast {
            format!(
                "2025-03-26 batches of {size} `count` ({} steps, progress tokens) one after another, read at full speed",
                steps(options)
            )
        } else {
            format!(
                "2025-03-26 batches of {size} `count` ({} steps, progress tokens) one after another, read at 64 KiB/s",
                steps(options)
            )
        },
        connections_opened: Some(1),
        sessions: Some(1),
        expected: Some(expected),
        lost: Some(expected.saturating_sub(delivered)),
        notes,
        ..Outcome::default()
    })
}

/// Defect 1 on stdio: the same batch to `mcp-stdio-demo`, read at 64 KiB/s, then drained.
async fn progress_stdio(options: &Options) -> Res<Report> {
    let mut child = command(options, &options.stdio_demo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", options.stdio_demo.display()))?;
    let pid = child.id().ok_or("the stdio demo exited at once")?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let _guard = Proc { child, pid };
    let mut line = client::initialize_body("2025-03-26").to_vec();
    line.push(b'\n');
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    stdin
        .write_all(&line)
        .await
        .map_err(|e| format!("stdin: {e}"))?;
    let measure = Measure::start(pid, None).await;
    let outcome = async {
        let mut batch = progress_batch(1, BATCH, steps(options)).to_vec();
        batch.push(b'\n');
        stdin.write_all(&batch).await.map_err(|e| format!("stdin: {e}"))?;
        let end = deadline(options);
        let drain_end = end + DRAIN;
        let mut tally = Tally::default();
        let mut pending = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        let mut bytes = 0u64;
        let mut notes = Vec::new();
        while tally.ids.len() < (BATCH + 1) as usize {
            let Some(left) = drain_end.checked_duration_since(Instant::now()) else {
                notes.push("not read to its end within the drain time".to_owned());
                break;
            };
            let n = match tokio::time::timeout(left, stdout.read(&mut buf)).await {
                Err(_) => {
                    notes.push("not read to its end within the drain time".to_owned());
                    break;
                }
                Ok(Err(e)) => return Err(format!("stdout: {e}")),
                Ok(Ok(0)) => {
                    notes.push("the server closed its stdout".to_owned());
                    break;
                }
                Ok(Ok(n)) => n,
            };
            bytes += n as u64;
            pending.extend_from_slice(&buf[..n]);
            let mut start = 0;
            while let Some(offset) = pending[start..].iter().position(|&b| b == b'\n') {
                if let Ok(text) = std::str::from_utf8(&pending[start..start + offset]) {
                    tally.add(text);
                }
                start += offset + 1;
            }
            pending.drain(..start);
            if Instant::now() < end {
                tokio::time::sleep(Duration::from_secs_f64(n as f64 / SLOW_BYTES_PER_S)).await;
            }
        }
        // The initialize reply (id 0) is not one of the batch's.
        let delivered = tally.ids.iter().filter(|id| id.as_str() != "0").count() as u64;
        notes.push(format!(
            "{BATCH} calls: {delivered} results, {} progress and {} other notifications, {:.1} MiB read",
            tally.progress,
            tally.other,
            bytes as f64 / 1048576.0
        ));
        Ok(Outcome {
            what: format!("stdio: a 2025-03-26 batch of {BATCH} `count` ({} steps, progress tokens), read at 64 KiB/s", steps(options)),
            sessions: Some(1),
            expected: Some(BATCH),
            lost: Some(BATCH.saturating_sub(delivered)),
            notes,
            ..Outcome::default()
        })
    }
    .await;
    Ok(finish(measure, "progress-stdio", outcome).await)
}

/// Defect 2: 100 JSON-RPC responses of 1 MiB each to questions never asked, on one session.
async fn unanswered_replies(addr: SocketAddr, options: &Options) -> Res<Outcome> {
    let mut conn = Conn::open(addr).await?;
    let peer = client::handshake(&mut conn, "2025-11-25").await?;
    let pad = "x".repeat(1024 * 1024);
    let mut statuses = std::collections::BTreeMap::<String, u64>::new();
    let end = deadline(options);
    for k in 0..100 {
        let body =
            json!({"jsonrpc": "2.0", "id": format!("mcp-q-soak-{k}"), "result": {"pad": pad}});
        let status = match conn
            .post(
                &peer,
                Bytes::from(body.to_string()),
                Duration::from_secs(10),
            )
            .await
        {
            Ok((status, _)) => status.as_u16().to_string(),
            Err(error) => {
                conn = Conn::open(addr).await?;
                error
            }
        };
        *statuses.entry(status).or_default() += 1;
    }
    if let Some(left) = end.checked_duration_since(Instant::now()) {
        tokio::time::sleep(left).await;
    }
    Ok(Outcome {
        what: "100 responses of 1 MiB to questions never asked (2025-11-25, one session)"
            .to_owned(),
        connections_opened: Some(1),
        sessions: Some(1),
        notes: vec![format!("replies: {statuses:?}")],
        ..Outcome::default()
    })
}

/// Defect 3: sessions created and deleted in a loop, each with a cancellation (a payload on
/// the session's cancel topic) and a call.
async fn session_churn(addr: SocketAddr, options: &Options) -> Res<Outcome> {
    let end = deadline(options);
    let workers = 4;
    let limit_each = 50_000u64;
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..workers {
        tasks.spawn(async move {
            let (mut created, mut deleted, mut errors) = (0u64, 0u64, 0u64);
            let mut first_error = None;
            let mut conn: Option<Conn> = None;
            let reason = "r".repeat(1024);
            while Instant::now() < end && created < limit_each {
                let cycle = async {
                    if conn.is_none() {
                        conn = Some(Conn::open(addr).await?);
                    }
                    let Some(c) = conn.as_mut() else {
                        return Err("no connection".to_owned());
                    };
                    let peer = client::handshake(c, "2025-11-25").await?;
                    created += 1;
                    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": format!("gone-{w}-{created}"), "reason": reason}});
                    c.post(
                        &peer,
                        Bytes::from(cancel.to_string()),
                        Duration::from_secs(5),
                    )
                    .await?;
                    let call = client::tool_call(&json!(1), "add", json!({"a": 1, "b": 2}), None);
                    c.post(&peer, Bytes::from(call.to_string()), Duration::from_secs(5))
                        .await?;
                    let status = c.delete(&peer).await?;
                    if status.is_success() {
                        deleted += 1;
                        Ok(())
                    } else {
                        Err(format!("DELETE: HTTP {status}"))
                    }
                };
                if let Err(error) = cycle.await {
                    errors += 1;
                    first_error.get_or_insert(error);
                    conn = None;
                }
            }
            (created, deleted, errors, first_error)
        });
    }
    let (mut created, mut deleted, mut errors, mut first) = (0, 0, 0, None);
    while let Some(done) = tasks.join_next().await {
        if let Ok((c, d, e, f)) = done {
            created += c;
            deleted += d;
            errors += e;
            first = first.or(f);
        }
    }
    let mut notes = vec![format!(
        "{created} sessions created, {deleted} deleted, {errors} failed cycles (each: initialize, a 1 KiB cancellation, a call, DELETE)"
    )];
    if let Some(error) = first {
        notes.push(format!("first failure: {error}"));
    }
    Ok(Outcome {
        what: "sessions created and deleted in a loop (4 connections)".to_owned(),
        connections_opened: Some(workers),
        sessions: Some(created),
        notes,
        ..Outcome::default()
    })
}

/// The address the attacks that hold many sessions come from: another loopback address
/// (127.0.0.2) than the probe's and the fresh client's, so the server's per-address session
/// quota (issue 47) counts them as another client, as it would a real one.
fn attacker_source(addr: SocketAddr) -> std::net::IpAddr {
    if addr.ip().is_loopback() && addr.is_ipv4() {
        std::net::IpAddr::from([127, 0, 0, 2])
    } else {
        addr.ip()
    }
}

/// Defect 4: many `initialize` handshakes, sessions left open, from another loopback address
/// (127.0.0.2) than the probe's and the fresh client's: the server's per-address quota makes
/// the flood end only its own sessions (issue 47), so both must be served throughout.
async fn session_flood(addr: SocketAddr, options: &Options) -> Res<Outcome> {
    let source = attacker_source(addr);
    let end = deadline(options);
    let target: u64 = if options.quick { 10_000 } else { 50_000 };
    let workers = 8u64;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers {
        tasks.spawn(async move {
            let (mut created, mut errors) = (0u64, 0u64);
            let mut first_error = None;
            let mut conn: Option<Conn> = None;
            while Instant::now() < end && created < target / workers {
                let step = async {
                    if conn.is_none() {
                        conn = Some(Conn::open_from(addr, source).await?);
                    }
                    let Some(c) = conn.as_mut() else {
                        return Err("no connection".to_owned());
                    };
                    client::handshake(c, "2025-11-25").await.map(drop)
                };
                match step.await {
                    Ok(()) => created += 1,
                    Err(error) => {
                        errors += 1;
                        first_error.get_or_insert(error);
                        conn = None;
                    }
                }
            }
            (created, errors, first_error)
        });
    }
    let (mut created, mut errors, mut first) = (0, 0, None);
    while let Some(done) = tasks.join_next().await {
        if let Ok((c, e, f)) = done {
            created += c;
            errors += e;
            first = first.or(f);
        }
    }
    let mut notes = vec![format!(
        "{created} of {target} sessions opened, {errors} failed"
    )];
    if let Some(error) = first {
        notes.push(format!("first failure: {error}"));
    }
    Ok(Outcome {
        what: format!(
            "up to {target} `initialize` handshakes (8 connections from {source}), sessions left open"
        ),
        connections_opened: Some(workers),
        sessions: Some(created),
        notes,
        ..Outcome::default()
    })
}

/// The soft limit on our open files.
fn open_file_limit() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            limits
                .lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(1024)
}

/// Whether the server still holds `stream` open: a read would block (no EOF, no reset).
fn still_open(mut stream: &StdStream) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return false,
            // The server said something (a 408?); read on to see whether it closed.
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
}

fn connect_std(addr: SocketAddr) -> Option<StdStream> {
    let stream = StdStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_nonblocking(true).ok()?;
    Some(stream)
}

/// Defect 5: idle sockets that never send a byte, held past the server's timeouts.
async fn idle_connections(addr: SocketAddr, options: &Options) -> Res<Outcome> {
    let wanted: u64 = if options.quick { 2_000 } else { 5_000 };
    let budget = open_file_limit().saturating_sub(256);
    let count = wanted.min(budget);
    let mut sockets = Vec::new();
    let mut failed = 0u64;
    for i in 0..count {
        match connect_std(addr) {
            Some(s) => sockets.push(s),
            None => failed += 1,
        }
        if i % 200 == 199 {
            // Let the server's accept loop and the probe run.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let opened = sockets.len() as u64;
    let hold = Duration::from_secs_f64(options.hold.max(options.seconds));
    tokio::time::sleep(hold).await;
    let held = sockets.iter().filter(|s| still_open(s)).count() as u64;
    let fresh = fresh_client(addr).await.is_ok();
    let mut notes = vec![format!(
        "{opened} of {count} connected ({failed} failed), {held} still open after {:.0} s; a new client {} while they were held",
        hold.as_secs_f64(),
        if fresh {
            "was served"
        } else {
            "was NOT served"
        }
    )];
    if count < wanted {
        notes.push(format!(
            "capped at {count} by this process's open-file limit"
        ));
    }
    Ok(Outcome {
        what: format!(
            "{count} idle TCP connections, held {:.0} s",
            hold.as_secs_f64()
        ),
        connections_opened: Some(opened),
        connections_held: Some(held),
        fresh_client: Some(fresh),
        notes,
        ..Outcome::default()
    })
}

/// Defect 5: 200 connections sending a request's headers at one byte per second.
async fn slowloris(addr: SocketAddr, options: &Options) -> Res<Outcome> {
    const CONNECTIONS: usize = 200;
    let mut sockets: Vec<Option<StdStream>> = (0..CONNECTIONS).map(|_| connect_std(addr)).collect();
    let opened = sockets.iter().flatten().count() as u64;
    let head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for stream in sockets.iter_mut() {
        if let Some(s) = stream
            && s.write_all(head).is_err()
        {
            *stream = None;
        }
    }
    let hold = Duration::from_secs_f64(options.hold.max(options.seconds));
    let end = Instant::now() + hold;
    let trickle = b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    let mut tick = 0usize;
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let byte = [trickle[tick % trickle.len()]];
        tick += 1;
        for stream in sockets.iter_mut() {
            if let Some(s) = stream
                && (s.write(&byte).is_err() || !still_open(s))
            {
                *stream = None;
            }
        }
    }
    let held = sockets.iter().flatten().filter(|s| still_open(s)).count() as u64;
    let fresh = fresh_client(addr).await.is_ok();
    Ok(Outcome {
        what: format!(
            "{CONNECTIONS} connections sending headers at 1 byte/s for {:.0} s",
            hold.as_secs_f64()
        ),
        connections_opened: Some(opened),
        connections_held: Some(held),
        fresh_client: Some(fresh),
        notes: vec![format!(
            "{held} of {opened} still open at the end; a new client {}",
            if fresh {
                "was served"
            } else {
                "was NOT served"
            }
        )],
        ..Outcome::default()
    })
}

/// Slow readers: sessions that subscribe to `config://app`, open a GET stream and a `count`
/// call stream and never read either, while another session calls `touch` (an update for
/// every subscriber) every 5 ms.
async fn slow_readers(addr: SocketAddr, options: &Options) -> Res<Outcome> {
    let sessions = if options.quick { 20 } else { 100 };
    // From another address than the probe's: 100 sessions of one client address are that
    // address's whole quota, and a new one would end the probe's idle session.
    let source = attacker_source(addr);
    let mut held_streams = Vec::new();
    let mut failures = 0u64;
    let mut first_error = None;
    for k in 0..sessions {
        let opened = async {
            let mut conn = Conn::open_from(addr, source).await?;
            let peer = client::handshake(&mut conn, "2025-11-25").await?;
            let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
                "params": {"uri": "config://app"}});
            conn.post(
                &peer,
                Bytes::from(subscribe.to_string()),
                Duration::from_secs(5),
            )
            .await?;
            let get = tokio::time::timeout(
                Duration::from_secs(5),
                conn.send(Method::GET, &peer, None, None),
            )
            .await
            .map_err(|_| "GET: no reply within 5 s".to_owned())??;
            let mut call_conn = Conn::open_from(addr, source).await?;
            let call = client::tool_call(
                &json!(2),
                "count",
                json!({"n": STEPS}),
                Some(&json!(format!("s{k}"))),
            );
            let streamed = tokio::time::timeout(
                Duration::from_secs(5),
                call_conn.send(
                    Method::POST,
                    &peer,
                    Some(Bytes::from(call.to_string())),
                    None,
                ),
            )
            .await
            .map_err(|_| "count: no reply within 5 s".to_owned())??;
            Ok::<_, String>([(conn, get), (call_conn, streamed)])
        };
        match opened.await {
            Ok(pair) => held_streams.extend(pair),
            Err(error) => {
                failures += 1;
                first_error.get_or_insert(error);
            }
        }
    }
    let opened = held_streams.len() as u64;
    let end = deadline(options);
    let mut touches = 0u64;
    // The session that publishes is a client of its own (a third address): the readers'
    // address holds its whole quota of sessions, every one of them busy.
    let publisher = match source {
        std::net::IpAddr::V4(v4) if v4.is_loopback() => std::net::IpAddr::from([127, 0, 0, 3]),
        other => other,
    };
    let mut conn = Conn::open_from(addr, publisher).await?;
    let peer = client::handshake(&mut conn, "2025-11-25").await?;
    while Instant::now() < end && touches < 100_000 {
        let call = client::tool_call(&json!(touches), "touch", json!({}), None);
        if conn
            .post(&peer, Bytes::from(call.to_string()), Duration::from_secs(2))
            .await
            .is_ok()
        {
            touches += 1;
        } else {
            conn = Conn::open_from(addr, publisher).await?;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Still open: the stream has data waiting or nothing yet (not ended, not failed).
    let mut held = 0u64;
    for (_, response) in held_streams {
        let mut stream = EventStream::new(response);
        match tokio::time::timeout(Duration::from_millis(20), stream.chunk()).await {
            Err(_) | Ok(Ok(Some(_))) => held += 1,
            Ok(Ok(None)) | Ok(Err(_)) => {}
        }
    }
    let mut notes = vec![format!(
        "{opened} unread streams ({sessions} GET streams and {sessions} `count` streams), {held} still open at the end; {touches} `touch` calls"
    )];
    if let Some(error) = first_error {
        notes.push(format!("{failures} session(s) not set up; first: {error}"));
    }
    Ok(Outcome {
        what: format!(
            "{sessions} sessions with an unread GET stream and an unread `count` stream, updates every 5 ms"
        ),
        connections_opened: Some(opened + 1),
        connections_held: Some(held),
        sessions: Some(sessions as u64 + 1),
        notes,
        ..Outcome::default()
    })
}

/// Reads `stream` until a message with `method` arrives (its id) or a response (`Err`).
async fn read_until_question(stream: &mut EventStream, limit: Duration) -> Res<Value> {
    let end = Instant::now() + limit;
    loop {
        while let Some((_, data)) = stream.event() {
            let mut messages = Vec::new();
            client::push_messages(data.as_bytes(), &mut messages);
            for message in messages {
                if message["method"] == "elicitation/create" {
                    return Ok(message["id"].clone());
                }
                if client::is_response(&message) {
                    return Err(format!("the call ended before asking: {message}"));
                }
            }
        }
        let left = end
            .checked_duration_since(Instant::now())
            .ok_or("no question in time")?;
        match tokio::time::timeout(left, stream.chunk()).await {
            Err(_) => return Err("no question in time".to_owned()),
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => return Err("the stream ended before a question".to_owned()),
            Ok(Err(error)) => return Err(error),
        }
    }
}

/// Reads `stream` until the call's response: its result text, or why there is none.
async fn read_until_response(stream: &mut EventStream, limit: Duration) -> Res<Value> {
    let end = Instant::now() + limit;
    loop {
        while let Some((_, data)) = stream.event() {
            let mut messages = Vec::new();
            client::push_messages(data.as_bytes(), &mut messages);
            if let Some(message) = messages.into_iter().find(client::is_response) {
                return Ok(message);
            }
        }
        let left = end
            .checked_duration_since(Instant::now())
            .ok_or("no response in time")?;
        match tokio::time::timeout(left, stream.chunk()).await {
            Err(_) => return Err("no response in time".to_owned()),
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => return Err("the stream ended without a response".to_owned()),
            Ok(Err(error)) => return Err(error),
        }
    }
}

/// Redis killed (SIGKILL) and restarted while `deploy` calls wait for their answers; then the
/// answers are sent. Redis keeps an fsynced append-only file, so nothing it acknowledged is
/// gone after the restart: every call is expected to finish with its result.
async fn redis_restart(options: &Options) -> Res<Report> {
    let mut redis = Redis::start(options).await?;
    let (demo, addr) = start_demo(options, Some(&redis.url())).await?;
    let measure = Measure::start(demo.pid, Some(addr)).await;
    let outcome = async {
        let end = deadline(options);
        let per_cycle = if options.quick { 5 } else { 10 };
        let (mut expected, mut completed, mut errors, mut hung, mut cycles) = (0u64, 0u64, 0u64, 0u64, 0u64);
        let mut notes = Vec::new();
        while cycles < 10 && (cycles == 0 || Instant::now() < end) {
            cycles += 1;
            let mut pending = Vec::new();
            for k in 0..per_cycle {
                let mut conn = Conn::open(addr).await?;
                let peer = client::handshake(&mut conn, "2025-11-25").await?;
                let call = client::tool_call(&json!(1), "deploy", json!({"service": format!("svc-{cycles}-{k}")}), None);
                let response = conn
                    .send(Method::POST, &peer, Some(Bytes::from(call.to_string())), None)
                    .await?;
                let mut stream = EventStream::new(response);
                let question = read_until_question(&mut stream, Duration::from_secs(5)).await?;
                pending.push((conn, peer, stream, question));
            }
            expected += per_cycle;
            redis.kill().await;
            tokio::time::sleep(Duration::from_millis(500)).await;
            redis.spawn().await?;
            for (_, peer, stream, question) in &mut pending {
                let answer = json!({"jsonrpc": "2.0", "id": question, "result": {"action": "accept", "content": {}}});
                let mut sent = false;
                for _ in 0..20 {
                    let attempt = async {
                        let mut conn = Conn::open(addr).await?;
                        conn.post(peer, Bytes::from(answer.to_string()), Duration::from_secs(5)).await
                    };
                    match attempt.await {
                        Ok((status, _)) if status.is_success() => {
                            sent = true;
                            break;
                        }
                        _ => tokio::time::sleep(Duration::from_millis(200)).await,
                    }
                }
                if !sent {
                    notes.push("an answer was refused 20 times".to_owned());
                }
                match read_until_response(stream, Duration::from_secs(15)).await {
                    Ok(message) if message["result"]["content"][0]["text"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("deployed")) => completed += 1,
                    Ok(message) => {
                        errors += 1;
                        if errors == 1 {
                            notes.push(format!("first failed call: {message}"));
                        }
                    }
                    Err(error) => {
                        hung += 1;
                        if hung == 1 {
                            notes.push(format!("first call without a result: {error}"));
                        }
                    }
                }
            }
        }
        notes.insert(0, format!(
            "{cycles} kill/restart cycle(s), {expected} asks pending across them: {completed} completed, {errors} ended in an error, {hung} without a response"
        ));
        Ok(Outcome {
            what: format!("Redis killed and restarted while {per_cycle} `deploy` asks wait, per cycle"),
            sessions: Some(expected),
            expected: Some(expected),
            lost: Some(expected - completed),
            notes,
            ..Outcome::default()
        })
    }
    .await;
    // The new client at the end is tried while Redis runs: the attack is its restarts.
    let report = finish(measure, "redis-restart", outcome).await;
    drop(redis);
    Ok(report)
}

/// Two demo workers on one Redis; a session subscribed to `config://app` holds a GET stream
/// on worker A while another session calls `touch` on worker B every 20 ms; halfway, A is
/// killed (SIGKILL) and the stream is resumed on B with `Last-Event-ID`. Every update
/// published is expected on the stream.
async fn worker_kill(options: &Options) -> Res<Report> {
    let redis = Redis::start(options).await?;
    let (mut worker_a, addr_a) = start_demo(options, Some(&redis.url())).await?;
    let (worker_b, addr_b) = start_demo(options, Some(&redis.url())).await?;
    let measure = Measure::start(worker_b.pid, Some(addr_b)).await;
    let outcome = async {
        let mut conn = Conn::open(addr_a).await?;
        let peer = client::handshake(&mut conn, "2025-11-25").await?;
        let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
            "params": {"uri": "config://app"}});
        conn.post(&peer, Bytes::from(subscribe.to_string()), Duration::from_secs(5))
            .await?;
        let mut get_conn = Conn::open(addr_a).await?;
        let response = get_conn.send(Method::GET, &peer, None, None).await?;
        if response.status() != StatusCode::OK {
            return Err(format!("GET on worker A: HTTP {}", response.status()));
        }
        let mut stream = EventStream::new(response);
        let seconds = options.seconds.max(2.0);
        let end = Instant::now() + Duration::from_secs_f64(seconds);
        let kill_at = Instant::now() + Duration::from_secs_f64(seconds / 2.0);
        let toucher = tokio::spawn(async move {
            let mut touched = 0u64;
            let mut failed = 0u64;
            let mut conn = Conn::open(addr_b).await?;
            let peer = client::handshake(&mut conn, "2025-11-25").await?;
            while Instant::now() < end && touched < 10_000 {
                let call = client::tool_call(&json!(touched), "touch", json!({}), None);
                match conn
                    .post(&peer, Bytes::from(call.to_string()), Duration::from_secs(2))
                    .await
                {
                    Ok((status, messages))
                        if status.is_success()
                            && messages.iter().any(|m| {
                                m["result"]["content"][0]["text"] == "touched config://app"
                            }) =>
                    {
                        touched += 1;
                    }
                    _ => failed += 1,
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok::<_, String>((touched, failed))
        });
        let mut received = 0u64;
        let mut last_id: Option<String> = None;
        let mut notes = Vec::new();
        let count = |stream: &mut EventStream, received: &mut u64, last: &mut Option<String>| {
            while let Some((id, data)) = stream.event() {
                if id.is_some() {
                    *last = id;
                }
                if data.contains("notifications/resources/updated") {
                    *received += 1;
                }
            }
        };
        // Phase 1: read on A until the kill.
        while let Some(left) = kill_at.checked_duration_since(Instant::now()) {
            match tokio::time::timeout(left, stream.chunk()).await {
                Err(_) => break,
                Ok(Ok(Some(_))) => count(&mut stream, &mut received, &mut last_id),
                Ok(Ok(None)) | Ok(Err(_)) => {
                    notes.push("worker A's stream ended before the kill".to_owned());
                    break;
                }
            }
        }
        let before = received;
        worker_a.kill().await;
        while let Ok(Ok(Some(_))) = tokio::time::timeout(Duration::from_millis(50), stream.chunk()).await {
            count(&mut stream, &mut received, &mut last_id);
        }
        drop(stream);
        // Phase 2: resume on B.
        let mut resume_conn = Conn::open(addr_b).await?;
        let response = resume_conn
            .send(Method::GET, &peer, None, last_id.as_deref())
            .await?;
        let status = response.status();
        let mut resumed = EventStream::new(response);
        let (touched, failed) = toucher.await.map_err(|e| format!("toucher: {e}"))??;
        let grace = Instant::now() + Duration::from_secs(2);
        if status == StatusCode::OK {
            while let Some(left) = grace.checked_duration_since(Instant::now()) {
                match tokio::time::timeout(left, resumed.chunk()).await {
                    Err(_) => break,
                    Ok(Ok(Some(_))) => count(&mut resumed, &mut received, &mut last_id),
                    Ok(Ok(None)) | Ok(Err(_)) => break,
                }
                if received >= touched {
                    break;
                }
            }
        } else {
            notes.push(format!("the resumed GET on worker B got HTTP {status}"));
        }
        notes.insert(0, format!(
            "{touched} updates published ({failed} touch calls failed); {received} received ({before} on A before the kill, {} after resuming on B with Last-Event-ID {})",
            received - before,
            last_id.as_deref().unwrap_or("(none)")
        ));
        Ok(Outcome {
            what: "worker A killed under a GET stream, resumed on worker B with Last-Event-ID".to_owned(),
            connections_opened: Some(4),
            sessions: Some(2),
            expected: Some(touched),
            lost: Some(touched.saturating_sub(received)),
            notes,
            ..Outcome::default()
        })
    }
    .await;
    let report = finish(measure, "worker-kill", outcome).await;
    drop((worker_a, worker_b, redis));
    Ok(report)
}
