//! The soak and abuse harness behind `mcp-soak` (driven by `cargo xtask soak`).
//!
//! One run is one attack against fresh server processes this program starts itself (so every
//! process it starts is killed on every exit path: `kill_on_drop`, and the attack's scope
//! owns them). While the attack runs, a probe client on its own thread and its own connection
//! and session calls `tools/call add` every few milliseconds and records the latency, and a
//! sampler thread reads the server's `VmRSS` every 50 ms. The report is one JSON line.
//!
//! Everything is on 127.0.0.1; every loop is bounded in count and in time.

mod attacks;
mod client;

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use bytes::Bytes;
use mcp_bench::histogram::Histogram;
use serde::Serialize;
use serde_json::json;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

pub(crate) use client::Res;

/// Every attack, in the order the harness runs them.
pub(crate) const ATTACKS: [&str; 12] = [
    "baseline",
    "progress-slow",
    "progress-fast",
    "progress-stdio",
    "unanswered-replies",
    "session-churn",
    "session-flood",
    "idle-connections",
    "slowloris",
    "slow-readers",
    "redis-restart",
    "worker-kill",
];

/// The command line of one run.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// Which attack.
    pub(crate) attack: String,
    /// The HTTP demo server binary (`mcp-demo`).
    pub(crate) demo: PathBuf,
    /// The stdio demo server binary (`mcp-stdio-demo`).
    pub(crate) stdio_demo: PathBuf,
    /// How long the attack runs.
    pub(crate) seconds: f64,
    /// How long connection floods are held (past the server's timeouts).
    pub(crate) hold: f64,
    /// Smaller counts (CI).
    pub(crate) quick: bool,
    /// Pin servers to core 0 with `taskset` (when it exists).
    pub(crate) pin: bool,
}

impl Options {
    /// Parses the arguments after the program name.
    pub(crate) fn parse(args: impl Iterator<Item = String>) -> Res<Self> {
        let mut options = Self {
            attack: String::new(),
            demo: PathBuf::from("mcp-demo"),
            stdio_demo: PathBuf::from("mcp-stdio-demo"),
            seconds: 5.0,
            hold: 20.0,
            quick: false,
            pin: false,
        };
        let mut args = args;
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
            match arg.as_str() {
                "--attack" => options.attack = value()?,
                "--demo" => options.demo = PathBuf::from(value()?),
                "--stdio-demo" => options.stdio_demo = PathBuf::from(value()?),
                "--seconds" => options.seconds = seconds(&value()?)?,
                "--hold" => options.hold = seconds(&value()?)?,
                "--quick" => options.quick = true,
                "--pin" => options.pin = true,
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        if !ATTACKS.contains(&options.attack.as_str()) {
            return Err(format!("--attack must be one of {}", ATTACKS.join(", ")));
        }
        Ok(options)
    }
}

fn seconds(value: &str) -> Res<f64> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 600.0)
        .ok_or_else(|| format!("`{value}` is not a duration in seconds (0-600)"))
}

/// What one attack measured; printed as one JSON line.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Report {
    /// The attack's name.
    pub(crate) attack: String,
    /// What the attack did, in a few words.
    pub(crate) what: String,
    /// How long the attack ran (s), setup and drain included.
    pub(crate) seconds: f64,
    /// The server's RSS before the attack (KiB).
    pub(crate) idle_rss_kib: u64,
    /// The highest RSS sampled during the attack (KiB).
    pub(crate) peak_rss_kib: u64,
    /// The RSS at the end (KiB).
    pub(crate) end_rss_kib: u64,
    /// Connections the attacker opened.
    pub(crate) connections_opened: Option<u64>,
    /// Of those, still open at the end (not closed by the server).
    pub(crate) connections_held: Option<u64>,
    /// Sessions the attacker created.
    pub(crate) sessions: Option<u64>,
    /// Messages whose delivery the design promises, expected.
    pub(crate) expected: Option<u64>,
    /// Of those, never delivered.
    pub(crate) lost: Option<u64>,
    /// Probe calls made.
    pub(crate) probe_calls: u64,
    /// Probe calls that failed (error, timeout, bad reply).
    pub(crate) probe_failures: u64,
    /// Probe latency percentiles (ms), failures included at the time they took.
    pub(crate) probe_p50_ms: Option<f64>,
    /// 99th percentile.
    pub(crate) probe_p99_ms: Option<f64>,
    /// Maximum.
    pub(crate) probe_max_ms: Option<f64>,
    /// The first probe failure.
    pub(crate) probe_first_error: Option<String>,
    /// Whether a client connecting after the attack (new connection, new session) was served.
    pub(crate) fresh_client: Option<bool>,
    /// Anything else worth telling.
    pub(crate) notes: Vec<String>,
    /// Why the attack stopped before its end, if it did.
    pub(crate) error: Option<String>,
}

/// What the attack itself reports; the measuring wrapper adds RSS and the probe.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) what: String,
    pub(crate) connections_opened: Option<u64>,
    pub(crate) connections_held: Option<u64>,
    pub(crate) sessions: Option<u64>,
    pub(crate) expected: Option<u64>,
    pub(crate) lost: Option<u64>,
    pub(crate) fresh_client: Option<bool>,
    pub(crate) notes: Vec<String>,
    pub(crate) error: Option<String>,
}

/// Runs the attack `options` names.
pub(crate) async fn run(options: &Options) -> Res<Report> {
    attacks::run(options).await
}

/// A child process killed when dropped.
pub(crate) struct Proc {
    child: Child,
    /// Its process id.
    pub(crate) pid: u32,
}

impl Proc {
    /// Kills it now (SIGKILL) and reaps it.
    pub(crate) async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }
}

fn command(options: &Options, program: &Path) -> Command {
    let mut command = if options.pin {
        let mut c = Command::new("taskset");
        c.args(["-c", "0"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    command.kill_on_drop(true).stdin(Stdio::null());
    command
}

/// Starts `mcp-demo --addr 127.0.0.1:0` (with `--redis URL`) and reads its address.
pub(crate) async fn start_demo(options: &Options, redis: Option<&str>) -> Res<(Proc, SocketAddr)> {
    let mut command = command(options, &options.demo);
    command
        .args(["--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(url) = redis {
        command.args(["--redis", url]);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", options.demo.display()))?;
    let pid = child.id().ok_or("the demo exited at once")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let proc = Proc { child, pid };
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .map_err(|_| "the demo did not print its address within 30 s".to_owned())?
        .map_err(|e| format!("reading the demo's stdout: {e}"))?
        .ok_or("the demo exited before printing its address")?;
    let addr = line
        .rsplit("http://")
        .next()
        .and_then(|a| a.trim().parse::<SocketAddr>().ok())
        .ok_or_else(|| format!("cannot read an address in `{line}`"))?;
    Ok((proc, addr))
}

/// A `redis-server` of our own on a free loopback port, with its data in its own folder
/// (append-only, fsync always, so a restart keeps what it acknowledged).
pub(crate) struct Redis {
    proc: Option<Proc>,
    /// Its port.
    pub(crate) port: u16,
    dir: PathBuf,
    pin: bool,
}

impl Redis {
    /// Starts one.
    pub(crate) async fn start(options: &Options) -> Res<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("a free port: {e}"))?
            .port();
        let dir =
            std::env::temp_dir().join(format!("mcp-soak-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut redis = Self {
            proc: None,
            port,
            dir,
            pin: options.pin,
        };
        redis.spawn().await?;
        Ok(redis)
    }

    /// Its URL.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Starts (again) on the same port and waits until it answers PING.
    pub(crate) async fn spawn(&mut self) -> Res<()> {
        let mut command = if self.pin {
            let mut c = Command::new("taskset");
            c.args(["-c", "0", "redis-server"]);
            c
        } else {
            Command::new("redis-server")
        };
        let child = command
            .args(["--bind", "127.0.0.1", "--port"])
            .arg(self.port.to_string())
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .kill_on_drop(true)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start redis-server: {e}"))?;
        let pid = child.id().unwrap_or(0);
        self.proc = Some(Proc { child, pid });
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if ping(self.port).await {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err("redis-server did not answer within 10 s".to_owned())
    }

    /// Kills it (SIGKILL).
    pub(crate) async fn kill(&mut self) {
        if let Some(mut proc) = self.proc.take() {
            proc.kill().await;
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        // The child is killed by kill_on_drop; its folder is ours to remove.
        self.proc = None;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn ping(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    if stream.write_all(b"PING\r\n").await.is_err() {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(
        tokio::time::timeout(Duration::from_secs(1), stream.read(&mut buf)).await,
        Ok(Ok(n)) if buf[..n].starts_with(b"+PONG")
    )
}

/// A `/proc/<pid>/status` field in KiB.
pub(crate) fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

/// Samples a process's RSS every 50 ms on its own thread; keeps the peak.
struct Sampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    handle: Option<thread::JoinHandle<()>>,
}

impl Sampler {
    fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(status_kib(pid, "VmRSS:").unwrap_or(0)));
        let handle = {
            let (stop, peak) = (stop.clone(), peak.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(kib) = status_kib(pid, "VmRSS:") {
                        peak.fetch_max(kib, Ordering::Relaxed);
                    }
                    thread::sleep(Duration::from_millis(50));
                }
            })
        };
        Self {
            stop,
            peak,
            handle: Some(handle),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The probe's figures.
#[derive(Debug, Default)]
struct ProbeStats {
    histogram: Histogram,
    failures: u64,
    first_error: Option<String>,
}

/// The probe: its own thread and current-thread runtime (so the attacker's work on the main
/// runtime does not delay it), its own connection and session; `tools/call add` every
/// `interval`, each bounded by 2 s.
struct Probe {
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<ProbeStats>>,
}

/// Time between probe calls.
const PROBE_INTERVAL: Duration = Duration::from_millis(5);
/// The longest a probe call may take before it counts as failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

impl Probe {
    fn start(addr: SocketAddr) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            match runtime {
                Ok(runtime) => runtime.block_on(probe_loop(addr, flag)),
                Err(e) => ProbeStats {
                    failures: 1,
                    first_error: Some(format!("probe runtime: {e}")),
                    ..ProbeStats::default()
                },
            }
        });
        Self {
            stop,
            handle: Some(handle),
        }
    }

    fn finish(mut self) -> ProbeStats {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

async fn probe_loop(addr: SocketAddr, stop: Arc<AtomicBool>) -> ProbeStats {
    let mut stats = ProbeStats::default();
    let mut state: Option<(client::Conn, client::Peer)> = None;
    let mut id = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let result = tokio::time::timeout(PROBE_TIMEOUT, async {
            if state.is_none() {
                let mut conn = client::Conn::open(addr).await?;
                let peer = client::handshake(&mut conn, "2025-11-25").await?;
                state = Some((conn, peer));
            }
            let Some((conn, peer)) = state.as_mut() else {
                return Err("no connection".to_owned());
            };
            id += 1;
            let call = client::tool_call(&json!(id), "add", json!({"a": 2, "b": 3}), None);
            let (status, messages) = conn
                .post(peer, Bytes::from(call.to_string()), PROBE_TIMEOUT)
                .await?;
            let ok = messages
                .iter()
                .any(|m| m.get("result").is_some_and(|r| r["isError"] != json!(true)));
            if status.is_success() && ok {
                Ok(())
            } else {
                Err(format!("add: HTTP {status}, {} message(s)", messages.len()))
            }
        })
        .await
        .unwrap_or_else(|_| Err(format!("no reply within {PROBE_TIMEOUT:?}")));
        stats
            .histogram
            .record(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
        if let Err(error) = result {
            stats.failures += 1;
            stats.first_error.get_or_insert(error);
            state = None;
        }
        tokio::time::sleep_until((started + PROBE_INTERVAL).into()).await;
    }
    stats
}

/// Whether a brand-new client (new connection, new session, one call) is served within 3 s;
/// why not.
pub(crate) async fn fresh_client(addr: SocketAddr) -> Res<()> {
    let work = async {
        let mut conn = client::Conn::open(addr).await?;
        let peer = client::handshake(&mut conn, "2025-11-25").await?;
        let call = client::tool_call(&json!(1), "add", json!({"a": 1, "b": 1}), None);
        let (status, messages) = conn
            .post(&peer, Bytes::from(call.to_string()), Duration::from_secs(3))
            .await?;
        if status.is_success() && messages.iter().any(|m| m.get("result").is_some()) {
            Ok(())
        } else {
            Err(format!("add: HTTP {status}"))
        }
    };
    tokio::time::timeout(Duration::from_secs(3), work)
        .await
        .unwrap_or_else(|_| Err("not served within 3 s".to_owned()))
}

/// The measuring around an attack: idle RSS, the sampler and the probe.
pub(crate) struct Measure {
    pid: u32,
    addr: Option<SocketAddr>,
    idle_kib: u64,
    started: Instant,
    sampler: Sampler,
    probe: Option<Probe>,
}

impl Measure {
    /// Lets the server settle, reads its idle RSS, and starts sampling (and probing `addr`).
    pub(crate) async fn start(pid: u32, addr: Option<SocketAddr>) -> Self {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let idle_kib = status_kib(pid, "VmRSS:").unwrap_or(0);
        Self {
            pid,
            addr,
            idle_kib,
            started: Instant::now(),
            sampler: Sampler::start(pid),
            probe: addr.map(Probe::start),
        }
    }

    /// Stops measuring and builds the report.
    pub(crate) async fn finish(self, attack: &str, outcome: Outcome) -> Report {
        let seconds = self.started.elapsed().as_secs_f64();
        let stats = self.probe.map(Probe::finish);
        let mut notes = outcome.notes;
        let fresh = match (outcome.fresh_client, self.addr) {
            (Some(fresh), _) => Some(fresh),
            (None, Some(addr)) => match fresh_client(addr).await {
                Ok(()) => Some(true),
                Err(error) => {
                    notes.push(format!("the new client at the end: {error}"));
                    Some(false)
                }
            },
            (None, None) => None,
        };
        let end_kib = status_kib(self.pid, "VmRSS:").unwrap_or(0);
        let peak_kib = self.sampler.finish().max(end_kib);
        let ms = |ns: u64| ns as f64 / 1e6;
        let mut report = Report {
            attack: attack.to_owned(),
            what: outcome.what,
            seconds,
            idle_rss_kib: self.idle_kib,
            peak_rss_kib: peak_kib,
            end_rss_kib: end_kib,
            connections_opened: outcome.connections_opened,
            connections_held: outcome.connections_held,
            sessions: outcome.sessions,
            expected: outcome.expected,
            lost: outcome.lost,
            fresh_client: fresh,
            notes,
            error: outcome.error,
            ..Report::default()
        };
        if let Some(stats) = stats {
            report.probe_calls = stats.histogram.count();
            report.probe_failures = stats.failures;
            if stats.histogram.count() > 0 {
                report.probe_p50_ms = Some(ms(stats.histogram.quantile(0.5)));
                report.probe_p99_ms = Some(ms(stats.histogram.quantile(0.99)));
                report.probe_max_ms = Some(ms(stats.histogram.max()));
            }
            report.probe_first_error = stats.first_error;
        }
        report
    }
}
