//! `cargo xtask bench [--quick]`: the benchmark harness (issue 12).
//!
//! What it does, in order:
//!
//! 1. Builds the `mcp-bench` binaries in release mode (`mcp-load`, `mcp-floor`,
//!    `mcp-bench-server`, `mcp-bench-client`) and our stdio server (`mcp-stdio-demo`); the quick
//!    run builds the same set, so each finds the other's build warm.
//! 2. Prepares the peers in a cache folder outside the workspace (`$MCP_BENCH_CACHE`, default
//!    `<workspace>/../.mcp-bench-cache`), so their dependencies never reach ours: the rmcp peer
//!    (`bench/peers/rmcp-peer`, copied there and built with its own target folder) and the Python
//!    reference system (`aiohttp-tiny-mcp` 0.5.8 in a venv, serving `bench/peers/python/tiny_peer.py`).
//!    With `--quick` nothing is installed or built: a peer that is not cached is skipped.
//! 3. Starts every server row pinned to core 0 (`taskset -c 0`), each on its own port; a server
//!    that exits with code 3 is reported "not available" (our `mcp-bench-server` until our HTTP
//!    transport exists).
//! 4. For each revision and concurrency, runs rounds: in each round every server in turn
//!    (rotated each round: A B C, B C A, ...) gets one `mcp-load` run pinned to core 1.
//!    Ratios (share of the floor, ratio to rmcp) are taken within a round, then the median over
//!    rounds is reported, with the min-max spread of calls/s.
//! 5. Pushed asks: `mcp-load --ask` against our memory and Redis rows (2025-11-25: a question
//!    pushed on the call's stream, answered on another connection through the hub),
//!    answer-to-result p50/p99; on PostgreSQL and SQLite the answer goes to a second worker
//!    (another `mcp-bench-server` on the same hub, `mcp-load --answer-url`), so it crosses
//!    processes through the database.
//!    Tasks: `mcp-load --tasks` against our memory and Redis rows (2026-07-28, the Tasks
//!    extension, c=32): `tools/call add_task` creates a task, `tasks/get` reads it until
//!    completed; tasks created and completed per second, median over rounds.
//! 6. Idle memory: starts a fresh instance of every server but the floor, opens `--sessions`
//!    sessions (2025-11-25 handshakes over Streamable HTTP, left idle) and compares its RSS
//!    before and after. Then session scale: `mcp-session-scale` (in process, pinned to core 0)
//!    measures what one `initialize` costs on our endpoint holding 100 sessions and holding
//!    100,000 (10,000 with `--quick`); the target is the same cost within 1.5x.
//! 7. stdio: the raw driver against a process answering each request line (the raw pipe),
//!    against our stdio server, and our client against our stdio server.
//! 8. Client overhead: the raw hyper loop and our client (`mcp-bench-client`) against the same
//!    echo floor (`mcp-floor --echo`), rotated each round.
//! 9. Writes the report (`docs/benchmarks.md`, or `target/bench/benchmarks-quick.md` with
//!    `--quick`) and stops every server it started, on every path.
//!
//! `--quick` (CI) proves every kind of row once in well under two minutes with a warm build:
//! one round, 0.2 s warm-up + 0.5 s measured, one revision per transport kind (2024-11-05,
//! 2025-11-25, 2026-07-28) at c=32, 100 idle sessions on our rows only, peers only if cached;
//! it writes `target/bench/benchmarks-quick.md` and prints its wall time, with the release
//! build's share apart (on a clean clone the build is most of it).
//!
//! Our Redis rows use a `redis-server` the harness starts for them on a free port, pinned to
//! core 0 with the server it serves, so the store's work costs the server's core as the memory
//! store's does (and the load generator's core stays its own).
//!
//! Target rows (issues 29 and 32) are measured at c=32 on 2025-11-25 and 2026-07-28 only
//! (2025-11-25 only with `--quick`), against our memory row in the same round:
//! `ours-postgres` (sessions in the PostgreSQL at `MCP_POSTGRES_URL`, default
//! `postgres://postgres@127.0.0.1:5432/test`, tables under `mcp_bench`; it is not started by
//! the harness, and with `CI=true` a PostgreSQL that does not answer fails the run),
//! `ours-sqlite` (a fresh SQLite file in the target folder) and `ours-jwt` (the memory store
//! behind a JWT resource server, `mcp-bench-server --auth-jwt`, with the token the server
//! writes at start sent by `mcp-load --bearer`), `ours-dpop` (the same with a DPoP-bound token,
//! `mcp-bench-server --auth-dpop`: `mcp-load --dpop-key` signs a proof per request, the server
//! checks one proof signature and records one `jti` per request) and `ours-metrics` (the memory store counting
//! into Prometheus metrics, `mcp-bench-server --metrics`, issue 33), and `ours-limits` /
//! `ours-limits-redis` (the memory and Redis stores with rate limits on `tools/call` and on the
//! `add` tool that the load never reaches, `mcp-bench-server --rate-limit`, issue 50: the
//! Redis one is read against our Redis row). They take no part in the idle-sessions step.
//!
//! Options: `--quick`, `--no-peers`, `--rounds N`, `--warmup SECS`, `--measure SECS`,
//! `--revisions A,B`, `--concurrency 1,32`, `--sessions N` (idle sessions per server, 0 to
//! skip; default 10,000, 100 with `--quick`), `--out PATH`, `--rows KEY,KEY` (only these
//! server rows besides the floor and our memory row, no stdio, client, idle or scale steps, and
//! the report in `target/bench/benchmarks-rows.md` unless `--out`), `--base-server PATH`
//! (another build's `mcp-bench-server`, e.g. of the commit before a change, measured as the
//! row `base-memory` in the same rounds as ours: a change's effect on the share of the floor,
//! read within one run).

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    fs,
    net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::interop::{TINY, TINY_VERSION, install_venv, venv_has};

/// Exit code of a server that cannot serve yet (`mcp_bench::EXIT_NOT_AVAILABLE`; xtask does not
/// depend on workspace crates).
const EXIT_NOT_AVAILABLE: i32 = 3;
/// The pinned rmcp version (kept in step with `bench/peers/rmcp-peer/Cargo.toml`).
const RMCP_VERSION: &str = "3.11.0";
/// The pinned Python reference system.
/// The revisions, oldest first; 2024-11-05 is measured over HTTP+SSE.
const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];
const LEGACY: &str = "2024-11-05";
/// `--quick`'s revisions: one per transport kind (HTTP+SSE, Streamable HTTP with a session,
/// stateless Streamable HTTP).
const QUICK_REVISIONS: [&str; 3] = [LEGACY, "2025-11-25", "2026-07-28"];
/// The idle-sessions target is stated for this many sessions (and 10 MB extra RSS).
const IDLE_TARGET_SESSIONS: usize = 10_000;
/// How long a server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs the task with the arguments after `bench`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let settings = Settings::parse(args)?;
    let root = workspace_root();
    let target_dir = target_dir(&root)?;
    ensure_two_cores()?;

    let started = Instant::now();
    let profile = crate::build::Release::for_run(settings.quick);
    cargo_build_bench(profile)?;
    // Reported apart from the measuring: on a clean clone (CI) the release build is most of it.
    let build = started.elapsed();
    let bin = target_dir.join(profile.profile());
    let cache = cache_dir(&root);
    let log_dir = target_dir.join("bench-logs");
    fs::create_dir_all(&log_dir).with_context(|| format!("creating {}", log_dir.display()))?;

    let postgres = postgres_url();
    let sqlite = log_dir.join("ours-sqlite.sqlite");
    for suffix in ["", "-wal", "-shm"] {
        let mut path = sqlite.clone().into_os_string();
        path.push(suffix);
        let _ = fs::remove_file(path);
    }
    let mut rows = vec![
        RowSpec::floor(&bin),
        RowSpec::ours(&bin, Store::Memory),
        RowSpec::ours(&bin, Store::Redis),
        RowSpec::ours(&bin, Store::Postgres(postgres)),
        RowSpec::ours(&bin, Store::Sqlite(sqlite)),
        RowSpec::jwt(&bin),
        RowSpec::dpop(&bin),
        RowSpec::metrics(&bin),
        RowSpec::traced(&bin),
        RowSpec::otel(&bin),
        RowSpec::limits(&bin, Store::Memory),
        RowSpec::limits(&bin, Store::Redis),
        RowSpec::proxy(&bin),
    ];
    if let Some(keep) = &settings.rows {
        rows.retain(|r| {
            matches!(r.key, "floor" | "ours-memory") || keep.iter().any(|k| k == r.key)
        });
    }
    if let Some(program) = &settings.base_server {
        rows.push(RowSpec::base(program));
    }
    let mut notes = Vec::new();
    if settings.peers && settings.rows.is_none() {
        match prepare_rmcp(&root, &cache, settings.quick) {
            Ok(program) => {
                rows.push(RowSpec::rmcp(&program, RmcpMode::Session));
                rows.push(RowSpec::rmcp(&program, RmcpMode::Stateless));
            }
            Err(why) => notes.push(format!("rmcp peer skipped: {why:#}")),
        }
        match prepare_python(&root, &cache, settings.quick) {
            Ok((python, script)) => rows.push(RowSpec::python(&python, &script)),
            Err(why) => notes.push(format!("aiohttp-tiny-mcp peer skipped: {why:#}")),
        }
    } else {
        notes.push("peers skipped (--no-peers)".to_owned());
    }
    for note in &notes {
        eprintln!("xtask bench: {note}");
    }

    let load_before = loadavg();
    // Servers are stopped when `servers` is dropped, on every path out of this function.
    let servers = Servers::start(rows, &log_dir)?;
    require_postgres_in_ci(&servers)?;
    let results = measure(&settings, &bin, &servers)?;
    let asks = measure_asks(&settings, &bin, &servers, &log_dir)?;
    let tasks = measure_tasks(&settings, &bin, &servers)?;
    let every_step = settings.rows.is_none();
    let idle = if every_step {
        idle_sessions(&settings, &bin, &servers, &log_dir)?
    } else {
        Vec::new()
    };
    let scale = every_step.then(|| session_scale(&settings, &bin)).flatten();
    let stdio_rows = if every_step {
        stdio_rows(&bin)
    } else {
        Vec::new()
    };
    let stdio = if every_step {
        measure_stdio(&settings, &bin, &stdio_rows)?
    } else {
        Results::new()
    };
    let (client, client_note) = if every_step {
        measure_client(&settings, &bin, &log_dir)?
    } else {
        (Results::new(), None)
    };
    if let Some(note) = client_note {
        eprintln!("xtask bench: {note}");
        notes.push(note);
    }
    let load_after = loadavg();
    let peak_rss: BTreeMap<&str, Option<f64>> = servers
        .rows
        .iter()
        .map(|row| {
            (
                row.spec.key,
                row.running().and_then(|r| status_kib(r.pid, "VmHWM:")),
            )
        })
        .map(|(key, kib)| (key, kib.map(|k| k as f64 / 1024.0)))
        .collect();
    let rows: Vec<RowInfo> = servers
        .rows
        .iter()
        .map(|row| RowInfo {
            key: row.spec.key,
            label: row.spec.label.clone(),
            command: row.spec.command_line(),
            unavailable: row.state.as_ref().err().cloned(),
        })
        .collect();
    drop(servers);
    let stdio_info: Vec<RowInfo> = stdio_rows
        .iter()
        .map(|row| RowInfo {
            key: row.key,
            label: row.label.clone(),
            command: row.command.as_ref().map_or_else(String::clone, |c| {
                let mut line =
                    format!("taskset -c 1 {} --transport stdio --command \"", row.driver);
                for (i, part) in c.iter().enumerate() {
                    if i > 0 {
                        line.push(' ');
                    }
                    line.push_str(
                        Path::new(part)
                            .file_name()
                            .map_or(part.as_str(), |n| n.to_str().unwrap_or(part)),
                    );
                }
                line.push('"');
                line
            }),
            unavailable: row.command.as_ref().err().cloned(),
        })
        .collect();

    let report = Report {
        client: &client,
        stdio: &stdio,
        stdio_rows: &stdio_info,
        settings: &settings,
        rows: &rows,
        results: &results,
        idle: &idle,
        scale: scale.as_ref(),
        asks: &asks,
        tasks: &tasks,
        notes: &notes,
        peak_rss: &peak_rss,
        load_before,
        load_after,
        wall: started.elapsed(),
        build,
    };
    let markdown = report.markdown();
    let out = settings.out.clone().unwrap_or_else(|| {
        if settings.rows.is_some() {
            target_dir.join("bench").join("benchmarks-rows.md")
        } else if settings.quick {
            target_dir.join("bench").join("benchmarks-quick.md")
        } else {
            root.join("docs").join("benchmarks.md")
        }
    });
    if let Some(parent) = out.parent() {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    fs::write(&out, &markdown).with_context(|| format!("writing {}", out.display()))?;
    println!(
        "{}{}{}{}{}{}{}",
        report.tables(),
        report.idle_table(),
        report.scale_table(),
        report.ask_table(),
        report.task_table(),
        report.stdio_tables(),
        report.client_tables()
    );
    println!(
        "xtask bench: wrote {}; wall time {:.0} s ({:.0} s building the release binaries, {:.0} s \
         measuring)",
        out.display(),
        started.elapsed().as_secs_f64(),
        build.as_secs_f64(),
        started.elapsed().saturating_sub(build).as_secs_f64()
    );
    report.check_floor()
}

/// What to measure and how.
#[derive(Debug)]
struct Settings {
    quick: bool,
    peers: bool,
    rounds: usize,
    warmup: f64,
    measure: f64,
    revisions: Vec<&'static str>,
    concurrencies: Vec<u32>,
    /// Idle sessions opened per server after the throughput rounds (0: skipped).
    sessions: usize,
    out: Option<PathBuf>,
    /// `--rows`: only these server rows (besides the floor and our memory row).
    rows: Option<Vec<String>>,
    /// `--base-server PATH`: another build's `mcp-bench-server` (e.g. of an earlier commit),
    /// measured as the row `base-memory` beside ours in the same rounds.
    base_server: Option<PathBuf>,
}

impl Settings {
    fn parse(args: &[String]) -> Result<Self> {
        let quick = args.iter().any(|a| a == "--quick");
        let mut settings = if quick {
            // Every kind of row once, in well under two minutes: one revision per transport
            // kind (HTTP+SSE, Streamable HTTP with sessions, stateless), one concurrency,
            // short runs, a few idle sessions.
            Self {
                quick,
                peers: true,
                rounds: 1,
                warmup: 0.2,
                measure: 0.5,
                revisions: QUICK_REVISIONS.to_vec(),
                concurrencies: vec![32],
                sessions: 100,
                out: None,
                rows: None,
                base_server: None,
            }
        } else {
            Self {
                quick,
                peers: true,
                // Five shorter rounds rather than three of 2 s: on a host whose speed drifts
                // (the floor's rounds spread up to 1.4x within one cell on 2026-12-04), the two
                // runs of a same-round ratio sit closer in time, and the median has more pairs.
                rounds: 5,
                warmup: 0.5,
                measure: 1.5,
                revisions: REVISIONS.to_vec(),
                concurrencies: vec![1, 32],
                sessions: IDLE_TARGET_SESSIONS,
                out: None,
                rows: None,
                base_server: None,
            }
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = || {
                it.next()
                    .with_context(|| format!("{arg} needs a value"))
                    .cloned()
            };
            match arg.as_str() {
                "--quick" => {}
                "--no-peers" => settings.peers = false,
                "--rounds" => settings.rounds = positive(&value()?, arg)?,
                "--warmup" => settings.warmup = seconds(&value()?, arg, true)?,
                "--measure" => settings.measure = seconds(&value()?, arg, false)?,
                "--out" => settings.out = Some(PathBuf::from(value()?)),
                "--base-server" => settings.base_server = Some(PathBuf::from(value()?)),
                "--rows" => {
                    settings.rows = Some(
                        value()?
                            .split(',')
                            .map(|key| {
                                ROW_ORDER
                                    .into_iter()
                                    .find(|known| *known == key)
                                    .map(str::to_owned)
                                    .with_context(|| format!("unknown row `{key}`"))
                            })
                            .collect::<Result<_>>()?,
                    );
                }
                "--sessions" => {
                    let v = value()?;
                    settings.sessions = if v == "0" { 0 } else { positive(&v, arg)? };
                }
                "--revisions" => {
                    settings.revisions = value()?
                        .split(',')
                        .map(|r| {
                            REVISIONS
                                .into_iter()
                                .find(|known| *known == r)
                                .with_context(|| format!("unknown revision `{r}`"))
                        })
                        .collect::<Result<_>>()?;
                }
                "--concurrency" => {
                    settings.concurrencies = value()?
                        .split(',')
                        .map(|c| positive(c, arg).map(|c| c as u32))
                        .collect::<Result<_>>()?;
                }
                other => bail!(
                    "unknown option `{other}`; usage: cargo xtask bench [--quick] [--no-peers] \
                     [--rounds N] [--warmup SECS] [--measure SECS] [--revisions A,B] \
                     [--concurrency 1,32] [--sessions N] [--out PATH] [--rows KEY,KEY] \
                     [--base-server PATH]"
                ),
            }
        }
        Ok(settings)
    }
}

fn positive(value: &str, flag: &str) -> Result<usize> {
    value
        .parse::<usize>()
        .ok()
        .filter(|n| *n > 0 && *n <= 10_000)
        .with_context(|| format!("{flag}: `{value}` is not a positive integer"))
}

fn seconds(value: &str, flag: &str, zero_ok: bool) -> Result<f64> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (*s > 0.0 || (zero_ok && *s == 0.0)) && *s <= 600.0)
        .with_context(|| format!("{flag}: `{value}` is not a duration in seconds"))
}

fn workspace_root() -> PathBuf {
    // xtask lives one level below the workspace root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

pub(crate) fn target_dir(root: &Path) -> Result<PathBuf> {
    let output = crate::cargo_command()
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: Value =
        serde_json::from_slice(&output.stdout).context("parsing cargo metadata")?;
    metadata["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .context("cargo metadata has no target_directory")
}

fn ensure_two_cores() -> Result<()> {
    if command_exists("taskset", &["--version"]).is_none() {
        bail!("taskset is required (util-linux): the harness always pins servers and load");
    }
    let cores = thread::available_parallelism().map_or(1, usize::from);
    if cores < 2 {
        bail!("the harness needs 2 cores (server on core 0, load on core 1); this has {cores}");
    }
    Ok(())
}

/// Builds the harness, our client's rows (feature `client`) and our stdio server
/// (`mcp-stdio-demo`), optimized: the one release build `bench` shares with `soak`
/// (`crate::build::release`, the union of their packages and features), so either finds the
/// other's build warm and `.ci/run` builds it once. `--quick` runs the debug binaries of
/// the test build (it measures nothing), the full run builds with `release`.
fn cargo_build_bench(profile: crate::build::Release) -> Result<()> {
    crate::build::release(profile)
}

fn cache_dir(root: &Path) -> PathBuf {
    std::env::var_os("MCP_BENCH_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("..").join(".mcp-bench-cache"))
}

/// Runs `program args` quietly; its trimmed stdout if it succeeds.
pub(crate) fn command_exists(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Copies `from` to `to` when the contents differ (so an unchanged peer is not rebuilt);
/// returns whether it wrote.
fn sync_file(from: &Path, to: &Path) -> Result<bool> {
    let wanted = fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    if fs::read(to).ok().as_deref() == Some(&wanted[..]) {
        return Ok(false);
    }
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    fs::write(to, wanted).with_context(|| format!("writing {}", to.display()))?;
    Ok(true)
}

/// Makes sure the rmcp peer is built in the cache; returns its binary.
fn prepare_rmcp(root: &Path, cache: &Path, quick: bool) -> Result<PathBuf> {
    let source = root.join("bench/peers/rmcp-peer");
    let dir = cache.join("rmcp-peer");
    let program = dir.join("target/release/rmcp-peer");
    let files = ["Cargo.toml", "Cargo.lock", "src/main.rs"];
    if quick {
        let current = files.iter().all(|f| {
            !source.join(f).exists() || fs::read(source.join(f)).ok() == fs::read(dir.join(f)).ok()
        });
        if !program.exists() || !current {
            bail!(
                "not built in {} (run `cargo xtask bench` once)",
                dir.display()
            );
        }
        return Ok(program);
    }
    for file in files {
        if source.join(file).exists() {
            sync_file(&source.join(file), &dir.join(file))?;
        }
    }
    eprintln!(
        "xtask bench: building the rmcp {RMCP_VERSION} peer in {}",
        dir.display()
    );
    let locked = source.join("Cargo.lock").exists();
    let mut args = vec!["build", "--release"];
    if locked {
        args.push("--locked");
    }
    let status = crate::cargo_command()
        .args(&args)
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .status()
        .context("running cargo build for the rmcp peer")?;
    if !status.success() {
        bail!("cargo build of the rmcp peer failed ({status})");
    }
    if !locked {
        // Keep the resolved versions with the peer's sources for the next run.
        let _ = sync_file(&dir.join("Cargo.lock"), &source.join("Cargo.lock"));
    }
    Ok(program)
}

/// Makes sure the Python venv with the reference system exists in the cache; returns the
/// interpreter and the server script.
fn prepare_python(root: &Path, cache: &Path, quick: bool) -> Result<(PathBuf, PathBuf)> {
    let script = cache.join("tiny_peer.py");
    let python = if quick {
        let python = cache.join("py-venv/bin/python");
        if !venv_has(&python, TINY, TINY_VERSION) {
            bail!(
                "not installed in {} (run `cargo xtask bench` once)",
                cache.join("py-venv").display()
            );
        }
        python
    } else {
        install_venv(cache, "py-venv", TINY, TINY_VERSION)?
    };
    sync_file(&root.join("bench/peers/python/tiny_peer.py"), &script)?;
    Ok((python, script))
}

/// The store behind our server's row.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Store {
    Memory,
    Redis,
    /// The PostgreSQL at this URL (not started by the harness).
    Postgres(String),
    /// A SQLite file at this path.
    Sqlite(PathBuf),
}

/// The target rows (`RowSpec::focus`): measured in a few cells only, left out of the headline.
const FOCUS_KEYS: [&str; 10] = [
    "ours-postgres",
    "ours-sqlite",
    "ours-jwt",
    "ours-dpop",
    "ours-metrics",
    "ours-traced",
    "ours-otel",
    "ours-limits",
    "ours-limits-redis",
    "ours-proxy",
];

/// The PostgreSQL of our PostgreSQL row: `MCP_POSTGRES_URL`, as in the tests and `.ci/run`.
fn postgres_url() -> String {
    std::env::var("MCP_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// With `CI=true` a PostgreSQL row that could not start fails the run instead of being
/// reported "not available".
fn require_postgres_in_ci(servers: &Servers) -> Result<()> {
    if std::env::var("CI").as_deref() != Ok("true") {
        return Ok(());
    }
    for row in &servers.rows {
        if row.spec.key == "ours-postgres"
            && let Err(why) = &row.state
        {
            bail!(
                "ours-postgres did not start ({why}); CI=true needs PostgreSQL at \
                 MCP_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test, trust auth, \
                 database `test`; `.ci/run` starts one)"
            );
        }
    }
    Ok(())
}

/// How a row's pushed asks are measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AskMode {
    /// Not measured.
    None,
    /// The answer is POSTed to the server that asked (the hub within one process, or Redis).
    SameWorker,
    /// The answer is POSTed to a second worker on the same hub.
    OtherWorker,
}

/// The revisions of the target rows (`RowSpec::focus`), at c=32.
const FOCUS_REVISIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];
/// The concurrency of the target rows.
const FOCUS_CONCURRENCY: u32 = 32;

/// rmcp's two configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RmcpMode {
    Session,
    Stateless,
}

/// Which comparisons a row takes part in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Floor,
    Ours,
    Rmcp,
    Peer,
}

/// A server row: how to start it and what it serves.
#[derive(Debug)]
struct RowSpec {
    key: &'static str,
    label: String,
    role: Role,
    program: PathBuf,
    /// Arguments before `--port <port>`.
    args: Vec<String>,
    /// Serves 2024-11-05 over HTTP+SSE at `/sse`.
    legacy_sse: bool,
    /// Needs a Redis server; its URL is passed as `--redis-url`.
    needs_redis: bool,
    /// The load generator's `--fixed-reply` (the floor).
    fixed_reply: bool,
    /// A target row: measured at c=32 on [`FOCUS_REVISIONS`] only (the first with
    /// `--quick`), and not in the idle-sessions step.
    focus: bool,
    /// Started with `--auth-jwt FILE`; the token it writes is sent with `mcp-load --bearer`.
    jwt: bool,
    /// With `jwt`: started with `--auth-dpop FILE` instead; the token is DPoP-bound and
    /// `mcp-load --dpop-key FILE.dpop-key` signs a proof per request.
    dpop: bool,
    /// How its pushed asks are measured.
    ask: AskMode,
    /// The launch arguments as the report shows them, when they differ from `args` (no
    /// database URL, no local path).
    shown_args: Option<Vec<String>>,
    /// `mcp proxy` in front of our memory-store server (its upstream, started first on the
    /// same core): listens with `--addr 127.0.0.1:PORT` and reaches the upstream with
    /// `--upstream http://127.0.0.1:UPORT/mcp`.
    proxy: bool,
    /// The load generator's arguments besides the harness's own (`--traceparent`).
    load_args: Vec<String>,
    /// Started with `--otlp-endpoint http://127.0.0.1:SPORT`, an OTLP/HTTP sink (`mcp-floor
    /// --body ''`, started first on the same core) that takes every export.
    otlp_sink: bool,
}

/// The trace context the traced rows' calls carry (`mcp-load --traceparent`, sampled).
const BENCH_TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

impl RowSpec {
    fn floor(bin: &Path) -> Self {
        Self {
            key: "floor",
            label: "bare hyper 1 server, fixed JSON body (the floor)".to_owned(),
            role: Role::Floor,
            program: bin.join("mcp-floor"),
            args: Vec::new(),
            legacy_sse: true,
            needs_redis: false,
            fixed_reply: true,
            focus: false,
            jwt: false,
            dpop: false,
            ask: AskMode::None,
            shown_args: None,
            proxy: false,
            load_args: Vec::new(),
            otlp_sink: false,
        }
    }

    fn ours(bin: &Path, store: Store) -> Self {
        let (key, store_name, args, shown_args, focus, ask) = match &store {
            Store::Memory | Store::Redis => {
                let (key, name) = if store == Store::Memory {
                    ("ours-memory", "memory")
                } else {
                    ("ours-redis", "redis")
                };
                let args = vec!["--store".to_owned(), name.to_owned()];
                (key, name, args, None, false, AskMode::SameWorker)
            }
            Store::Postgres(url) => (
                "ours-postgres",
                "PostgreSQL",
                vec!["--hub".to_owned(), url.clone()],
                Some(vec!["--hub".to_owned(), "$MCP_POSTGRES_URL".to_owned()]),
                true,
                AskMode::OtherWorker,
            ),
            Store::Sqlite(path) => (
                "ours-sqlite",
                "SQLite",
                vec!["--hub".to_owned(), format!("sqlite:{}", path.display())],
                Some(vec!["--hub".to_owned(), "sqlite:FILE".to_owned()]),
                true,
                AskMode::OtherWorker,
            ),
        };
        Self {
            key,
            label: format!("mcp-server, {store_name} store"),
            role: Role::Ours,
            program: bin.join("mcp-bench-server"),
            args,
            legacy_sse: true,
            needs_redis: store == Store::Redis,
            fixed_reply: false,
            focus,
            jwt: false,
            dpop: false,
            ask,
            shown_args,
            proxy: false,
            load_args: Vec::new(),
            otlp_sink: false,
        }
    }

    /// Another build's `mcp-bench-server` (`--base-server`), on the memory store: the same
    /// rounds measure it beside ours, so a change's effect on the share of the floor is read
    /// within one run.
    fn base(program: &Path) -> Self {
        Self {
            key: "base-memory",
            label: format!(
                "mcp-server of another build (`--base-server {}`), memory store",
                program.display()
            ),
            program: program.to_owned(),
            ask: AskMode::None,
            shown_args: None,
            ..Self::ours(program.parent().unwrap_or(Path::new(".")), Store::Memory)
        }
    }

    /// Our memory row behind a JWT resource server (`--auth-jwt`).
    fn jwt(bin: &Path) -> Self {
        Self {
            key: "ours-jwt",
            label: "mcp-server, memory store, JWT-protected (local JWKS)".to_owned(),
            jwt: true,
            focus: true,
            ask: AskMode::None,
            ..Self::ours(bin, Store::Memory)
        }
    }

    /// Our memory row behind a resource server that accepts a DPoP-bound JWT
    /// (`--auth-dpop`): one proof signature check and one replay record per request.
    fn dpop(bin: &Path) -> Self {
        Self {
            key: "ours-dpop",
            label: "mcp-server, memory store, DPoP-bound JWT (local JWKS, a proof per request)"
                .to_owned(),
            dpop: true,
            ..Self::jwt(bin)
        }
    }

    /// Our memory row counting into Prometheus metrics (`mcp-bench-server --metrics`).
    fn metrics(bin: &Path) -> Self {
        let mut row = Self::ours(bin, Store::Memory);
        row.args.push("--metrics".to_owned());
        Self {
            key: "ours-metrics",
            label: "mcp-server, memory store, Prometheus metrics on".to_owned(),
            focus: true,
            ask: AskMode::None,
            ..row
        }
    }

    /// Our memory row with every call carrying a trace context in its `_meta`
    /// (`mcp-load --traceparent`), no exporter: what propagation costs the server.
    fn traced(bin: &Path) -> Self {
        Self {
            key: "ours-traced",
            label: "mcp-server, memory store, calls carrying a trace context (no exporter)"
                .to_owned(),
            focus: true,
            ask: AskMode::None,
            load_args: vec!["--traceparent".to_owned(), BENCH_TRACEPARENT.to_owned()],
            ..Self::ours(bin, Store::Memory)
        }
    }

    /// [`RowSpec::traced`] with every request span exported over OTLP/HTTP to a local sink
    /// (`mcp-bench-server --otlp-endpoint`).
    fn otel(bin: &Path) -> Self {
        Self {
            key: "ours-otel",
            label: "mcp-server, memory store, every request span exported over OTLP/HTTP"
                .to_owned(),
            otlp_sink: true,
            ..Self::traced(bin)
        }
    }

    /// Our memory or Redis row with rate limits the load never reaches
    /// (`mcp-bench-server --rate-limit`): one on every `tools/call`, one on the `add` tool,
    /// each with the default lease, so the row measures what checking them costs.
    fn limits(bin: &Path, store: Store) -> Self {
        let (key, name) = if store == Store::Redis {
            ("ours-limits-redis", "Redis")
        } else {
            ("ours-limits", "memory")
        };
        let mut row = Self::ours(bin, store);
        row.args.extend(
            [
                "--rate-limit",
                "tools/call=1000000000/1m",
                "--rate-limit",
                "add=1000000000/1m",
            ]
            .map(str::to_owned),
        );
        Self {
            key,
            label: format!("mcp-server, {name} store, rate limits on (never reached)"),
            focus: true,
            ask: AskMode::None,
            ..row
        }
    }

    /// `mcp proxy` (the gateway, issue 48) serving our memory-store server again: the load
    /// goes to the proxy, which forwards each call with our client over HTTP on loopback.
    /// Both processes share core 0, as a server and its Redis do.
    fn proxy(bin: &Path) -> Self {
        Self {
            key: "ours-proxy",
            label: "mcp proxy in front of mcp-server (memory store), HTTP upstream on loopback"
                .to_owned(),
            program: bin.join("mcp"),
            args: vec!["proxy".to_owned()],
            focus: true,
            ask: AskMode::None,
            proxy: true,
            ..Self::ours(bin, Store::Memory)
        }
    }

    /// Whether the row is measured at `revision` and `concurrency` in this run.
    fn measured_in(&self, revision: &str, concurrency: u32, quick: bool) -> bool {
        if self.endpoint(revision).is_none() {
            return false;
        }
        if !self.focus {
            return true;
        }
        concurrency == FOCUS_CONCURRENCY
            && if quick {
                revision == FOCUS_REVISIONS[0]
            } else {
                FOCUS_REVISIONS.contains(&revision)
            }
    }

    fn rmcp(program: &Path, mode: RmcpMode) -> Self {
        let (key, label, mode_name) = match mode {
            RmcpMode::Session => (
                "rmcp-session",
                format!("rmcp {RMCP_VERSION}, sessions (its default), SSE replies"),
                "session",
            ),
            RmcpMode::Stateless => (
                "rmcp-stateless",
                format!("rmcp {RMCP_VERSION}, stateless, JSON replies (its fastest)"),
                "stateless",
            ),
        };
        Self {
            key,
            label,
            role: Role::Rmcp,
            program: program.to_path_buf(),
            args: vec!["--mode".to_owned(), mode_name.to_owned()],
            legacy_sse: false,
            needs_redis: false,
            fixed_reply: false,
            focus: false,
            jwt: false,
            dpop: false,
            ask: AskMode::None,
            shown_args: None,
            proxy: false,
            load_args: Vec::new(),
            otlp_sink: false,
        }
    }

    fn python(python: &Path, script: &Path) -> Self {
        Self {
            key: "tiny",
            label: format!("{TINY} {TINY_VERSION} (the Python reference system)"),
            role: Role::Peer,
            program: python.to_path_buf(),
            args: vec![script.display().to_string()],
            legacy_sse: true,
            needs_redis: false,
            fixed_reply: false,
            focus: false,
            jwt: false,
            dpop: false,
            ask: AskMode::None,
            shown_args: None,
            proxy: false,
            load_args: Vec::new(),
            otlp_sink: false,
        }
    }

    /// The path and transport measured on `revision`, or `None` if the row does not serve it.
    fn endpoint(&self, revision: &str) -> Option<(&'static str, &'static str)> {
        if revision == LEGACY {
            self.legacy_sse.then_some(("/sse", "http+sse"))
        } else {
            Some(("/mcp", "streamable"))
        }
    }

    /// The launch command as written in the report.
    fn command_line(&self) -> String {
        let program = self
            .program
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let mut line = format!("taskset -c 0 {program}");
        for arg in self.shown_args.as_ref().unwrap_or(&self.args) {
            let arg = Path::new(arg)
                .file_name()
                .filter(|_| arg.contains('/'))
                .map_or_else(|| arg.clone(), |n| n.to_string_lossy().into_owned());
            line.push(' ');
            line.push_str(&arg);
        }
        if self.proxy {
            line.push_str(
                " --upstream http://127.0.0.1:UPORT/mcp --addr 127.0.0.1:PORT (upstream: \
                 taskset -c 0 mcp-bench-server --store memory --port UPORT)",
            );
            return line;
        }
        line.push_str(" --port PORT");
        if self.otlp_sink {
            line.push_str(
                " --otlp-endpoint http://127.0.0.1:SPORT (sink: taskset -c 0 mcp-floor --body '' \
                 --port SPORT)",
            );
        }
        if !self.load_args.is_empty() {
            line.push_str(&format!(" (load: mcp-load {})", self.load_args.join(" ")));
        }
        if self.dpop {
            line.push_str(" --auth-dpop TOKEN_FILE");
        } else if self.jwt {
            line.push_str(" --auth-jwt TOKEN_FILE");
        }
        if self.needs_redis {
            line.push_str(" --redis-url redis://127.0.0.1:RPORT");
        }
        line
    }
}

/// A child process killed and reaped when dropped.
#[derive(Debug)]
struct ChildGuard {
    name: String,
    child: Child,
}

impl ChildGuard {
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait()
            && let Err(error) = self.child.kill()
        {
            eprintln!("xtask bench: could not stop {}: {error}", self.name);
        }
        let _ = self.child.wait();
    }
}

/// A started server.
#[derive(Debug)]
struct Running {
    port: u16,
    pid: u32,
    /// The access token a JWT-protected server wrote at start.
    bearer: Option<String>,
    /// The DPoP key file a DPoP-protected server wrote at start.
    dpop_key: Option<PathBuf>,
    _child: ChildGuard,
    _redis: Option<ChildGuard>,
    /// The server behind a proxy row (stopped after the proxy: fields drop in order).
    upstream: Option<Box<Self>>,
    /// The OTLP sink of a span-export row (stopped after the server).
    _sink: Option<Box<Self>>,
}

/// A row and whether its server runs.
#[derive(Debug)]
struct Row {
    spec: RowSpec,
    state: Result<Running, String>,
}

impl Row {
    fn running(&self) -> Option<&Running> {
        self.state.as_ref().ok()
    }
}

/// Every row; dropping it stops every server.
#[derive(Debug)]
struct Servers {
    rows: Vec<Row>,
}

impl Servers {
    fn start(specs: Vec<RowSpec>, log_dir: &Path) -> Result<Self> {
        let mut servers = Self { rows: Vec::new() };
        for spec in specs {
            // Our Redis row waits for our memory row: if our server is not available, neither
            // is it, and Redis need not be started.
            let ours_unavailable = servers
                .rows
                .iter()
                .find(|r| r.spec.role == Role::Ours)
                .and_then(|r| r.state.as_ref().err())
                .filter(|_| spec.role == Role::Ours)
                .cloned();
            let state = match ours_unavailable {
                Some(why) => Err(why),
                None => start_server(&spec, log_dir, spec.key),
            };
            match &state {
                Ok(running) => eprintln!(
                    "xtask bench: {} on 127.0.0.1:{} (pid {})",
                    spec.key, running.port, running.pid
                ),
                Err(why) => eprintln!("xtask bench: {}: {why}", spec.key),
            }
            servers.rows.push(Row { spec, state });
        }
        if servers
            .rows
            .iter()
            .all(|r| r.spec.role != Role::Floor || r.running().is_none())
        {
            bail!("the floor server did not start; see {}", log_dir.display());
        }
        Ok(servers)
    }
}

/// A free port on 127.0.0.1 (bound, then released for the server to take).
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// Starts `spec` pinned to core 0 and waits until it accepts connections.
/// `Err` is the reason the row is not available.
/// `log_name` names its stderr log in `log_dir`.
fn start_server(spec: &RowSpec, log_dir: &Path, log_name: &str) -> Result<Running, String> {
    let redis = if spec.needs_redis {
        Some(start_redis(log_dir)?)
    } else {
        None
    };
    let upstream = if spec.proxy {
        let bin = spec.program.parent().unwrap_or(Path::new("."));
        let server = RowSpec::ours(bin, Store::Memory);
        Some(Box::new(start_server(
            &server,
            log_dir,
            &format!("{log_name}-upstream"),
        )?))
    } else {
        None
    };
    let sink = if spec.otlp_sink {
        let bin = spec.program.parent().unwrap_or(Path::new("."));
        let sink = RowSpec {
            args: vec!["--body".to_owned(), String::new()],
            ..RowSpec::floor(bin)
        };
        Some(Box::new(start_server(
            &sink,
            log_dir,
            &format!("{log_name}-sink"),
        )?))
    } else {
        None
    };
    let port = free_port().map_err(|e| e.to_string())?;
    let log_path = log_dir.join(format!("{log_name}.log"));
    let log = fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut command = Command::new("taskset");
    command
        .arg("-c")
        .arg("0")
        .arg(&spec.program)
        .args(&spec.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    match &upstream {
        Some(upstream) => command
            .arg("--upstream")
            .arg(format!("http://127.0.0.1:{}/mcp", upstream.port))
            .arg("--addr")
            .arg(format!("127.0.0.1:{port}")),
        None => command.arg("--port").arg(port.to_string()),
    };
    if let Some(sink) = &sink {
        command
            .arg("--otlp-endpoint")
            .arg(format!("http://127.0.0.1:{}", sink.port));
    }
    if let Some((_, redis_port)) = &redis {
        command
            .arg("--redis-url")
            .arg(format!("redis://127.0.0.1:{redis_port}"));
    }
    let token_file = log_dir.join(format!("{log_name}.token"));
    if spec.jwt {
        let _ = fs::remove_file(&token_file);
        let flag = if spec.dpop {
            "--auth-dpop"
        } else {
            "--auth-jwt"
        };
        command.arg(flag).arg(&token_file);
    }
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", spec.program.display()))?;
    let mut guard = ChildGuard {
        name: spec.key.to_owned(),
        child,
    };
    wait_ready(&mut guard, port, &log_path)?;
    // The server writes its token before it binds its port.
    let bearer = if spec.jwt {
        let token = fs::read_to_string(&token_file)
            .map_err(|e| format!("reading the token {}: {e}", token_file.display()))?;
        Some(token.trim().to_owned())
    } else {
        None
    };
    let dpop_key = spec.dpop.then(|| {
        let mut path = token_file.clone().into_os_string();
        path.push(".dpop-key");
        PathBuf::from(path)
    });
    Ok(Running {
        port,
        pid: guard.pid(),
        bearer,
        dpop_key,
        _child: guard,
        _redis: redis.map(|(guard, _)| guard),
        upstream,
        _sink: sink,
    })
}

fn start_redis(log_dir: &Path) -> Result<(ChildGuard, u16), String> {
    if command_exists("redis-server", &["--version"]).is_none() {
        return Err("redis-server is not installed".to_owned());
    }
    let port = free_port().map_err(|e| e.to_string())?;
    let log_path = log_dir.join("redis.log");
    let log = fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let child = Command::new("taskset")
        .args(["-c", "0", "redis-server", "--bind", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .args(["--save", "", "--appendonly", "no"])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start redis-server: {e}"))?;
    let mut guard = ChildGuard {
        name: "redis-server".to_owned(),
        child,
    };
    wait_ready(&mut guard, port, &log_path)?;
    Ok((guard, port))
}

fn wait_ready(guard: &mut ChildGuard, port: u16, log: &Path) -> Result<(), String> {
    let deadline = Instant::now() + START_TIMEOUT;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    loop {
        match guard.child.try_wait() {
            Ok(Some(status)) => {
                let said = fs::read_to_string(log).unwrap_or_default();
                let said = said.lines().last().unwrap_or("").trim().to_owned();
                return Err(if status.code() == Some(EXIT_NOT_AVAILABLE) {
                    format!("not available ({said})")
                } else {
                    format!("exited at start ({status}): {said}")
                });
            }
            Ok(None) => {}
            Err(error) => return Err(error.to_string()),
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "did not accept connections within {START_TIMEOUT:?}"
            ));
        }
        // Polling a child process for readiness; not a test.
        thread::sleep(Duration::from_millis(50));
    }
}

/// One `mcp-load` run.
#[derive(Clone, Debug)]
struct Sample {
    calls_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
    first_error: Option<String>,
    rss_mib: Option<f64>,
    /// The server's CPU time per call, in microseconds: its user and system time over the
    /// whole run (warm-up included) divided by the calls the measured rate gives that time.
    cpu_us_per_call: Option<f64>,
    /// The same for the server behind a proxy row.
    upstream_cpu_us_per_call: Option<f64>,
}

/// Samples per (revision, concurrency, row key), one slot per round.
type Results = BTreeMap<(&'static str, u32), BTreeMap<&'static str, Vec<Option<Sample>>>>;

fn measure(settings: &Settings, bin: &Path, servers: &Servers) -> Result<Results> {
    let load = bin.join("mcp-load");
    let mut results = Results::new();
    for &revision in &settings.revisions {
        for &concurrency in &settings.concurrencies {
            let active: Vec<&Row> = servers
                .rows
                .iter()
                .filter(|r| {
                    r.running().is_some()
                        && r.spec.measured_in(revision, concurrency, settings.quick)
                })
                .collect();
            let cell = results.entry((revision, concurrency)).or_default();
            for row in &servers.rows {
                // A target row appears only in its own cells.
                if !row.spec.focus || row.spec.measured_in(revision, concurrency, settings.quick) {
                    cell.insert(row.spec.key, vec![None; settings.rounds]);
                }
            }
            for round in 0..settings.rounds {
                for i in 0..active.len() {
                    let row = active[(i + round) % active.len()];
                    let sample = load_once(&load, row, revision, concurrency, settings)?;
                    eprintln!(
                        "xtask bench: {revision} c={concurrency} round {} {:<15} {:>9.0} calls/s  p50 {:.3} ms  p99 {:.3} ms  errors {}",
                        round + 1,
                        row.spec.key,
                        sample.calls_per_s,
                        sample.p50_ms,
                        sample.p99_ms,
                        sample.errors
                    );
                    if let Some(slot) = cell.get_mut(row.spec.key) {
                        slot[round] = Some(sample);
                    }
                }
            }
        }
    }
    Ok(results)
}

fn load_once(
    load: &Path,
    row: &Row,
    revision: &str,
    concurrency: u32,
    settings: &Settings,
) -> Result<Sample> {
    let running = row.running().context("row not running")?;
    let (path, transport) = row.spec.endpoint(revision).context("revision not served")?;
    let mut command = Command::new("taskset");
    command
        .args(["-c", "1"])
        .arg(load)
        .arg("--url")
        .arg(format!("http://127.0.0.1:{}{path}", running.port))
        .args(["--revision", revision, "--transport", transport])
        .arg("--concurrency")
        .arg(concurrency.to_string())
        .arg("--warmup")
        .arg(settings.warmup.to_string())
        .arg("--duration")
        .arg(settings.measure.to_string());
    if row.spec.fixed_reply {
        command.arg("--fixed-reply");
    }
    command.args(&row.spec.load_args);
    if let Some(token) = &running.bearer {
        command.arg("--bearer").arg(token);
    }
    if let Some(key) = &running.dpop_key {
        command.arg("--dpop-key").arg(key);
    }
    let upstream_pid = running.upstream.as_ref().map(|u| u.pid);
    let before = (cpu_seconds(running.pid), upstream_pid.and_then(cpu_seconds));
    let mut sample = run_load(&mut command, Some(running.pid))?;
    let calls = sample.calls_per_s * (settings.warmup + settings.measure);
    let per_call = |before: Option<f64>, pid: Option<u32>| {
        let spent = cpu_seconds(pid?)? - before?;
        (calls > 0.0).then(|| spent / calls * 1e6)
    };
    sample.cpu_us_per_call = per_call(before.0, Some(running.pid));
    sample.upstream_cpu_us_per_call = per_call(before.1, upstream_pid);
    Ok(sample)
}

/// The user and system CPU time of `pid` so far, in seconds (`/proc/<pid>/stat`, at the
/// kernel's 100 ticks per second).
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces), from the third: utime is the
    // 14th field and stime the 15th.
    let mut rest = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .skip(11);
    let utime: u64 = rest.next()?.parse().ok()?;
    let stime: u64 = rest.next()?.parse().ok()?;
    Some((utime + stime) as f64 / CLOCK_TICKS)
}

/// `sysconf(_SC_CLK_TCK)`: 100 on every Linux architecture this harness runs on.
const CLOCK_TICKS: f64 = 100.0;

/// Runs one `mcp-load` and reads its report; `pid` is the server whose RSS is sampled after.
fn run_load(command: &mut Command, pid: Option<u32>) -> Result<Sample> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .context("running mcp-load")?;
    if !output.status.success() {
        bail!(
            "mcp-load failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let report: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "parsing the mcp-load report `{}`",
            String::from_utf8_lossy(&output.stdout)
        )
    })?;
    let number = |key: &str| report[key].as_f64().unwrap_or(0.0);
    Ok(Sample {
        calls_per_s: number("calls_per_s"),
        p50_ms: number("p50_ms"),
        p99_ms: number("p99_ms"),
        errors: report["errors"].as_u64().unwrap_or(0),
        first_error: report["first_error"].as_str().map(str::to_owned),
        rss_mib: pid
            .and_then(|pid| status_kib(pid, "VmRSS:"))
            .map(|k| k as f64 / 1024.0),
        cpu_us_per_call: None,
        upstream_cpu_us_per_call: None,
    })
}

/// A `/proc/<pid>/status` field in KiB.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

/// A stdio pairing: the server command `mcp-load` spawns (pinned to core 0) and drives over
/// its pipes, one call at a time.
#[derive(Debug)]
struct StdioRow {
    key: &'static str,
    label: String,
    /// The command, or why the row is not available.
    command: Result<Vec<String>, String>,
    /// The driver binary: `mcp-load` (raw) or `mcp-bench-client` (our client).
    driver: &'static str,
    fixed_reply: bool,
}

fn stdio_rows(bin: &Path) -> Vec<StdioRow> {
    let pinned = |program: &Path, args: &[&str]| {
        let mut command = vec!["taskset".to_owned(), "-c".to_owned(), "0".to_owned()];
        command.push(program.display().to_string());
        command.extend(args.iter().map(|a| (*a).to_owned()));
        command
    };
    let demo = bin.join("mcp-stdio-demo");
    let ours = if demo.exists() {
        Ok(pinned(&demo, &[]))
    } else {
        Err("mcp-stdio-demo was not built".to_owned())
    };
    let client = if bin.join("mcp-bench-client").exists() {
        ours.clone()
    } else {
        Err("mcp-bench-client was not built (feature `client`)".to_owned())
    };
    vec![
        StdioRow {
            key: "floor",
            label: "raw pipe: raw driver and a process answering every line with a fixed reply"
                .to_owned(),
            command: Ok(pinned(&bin.join("mcp-floor"), &["--stdio"])),
            driver: "mcp-load",
            fixed_reply: true,
        },
        StdioRow {
            key: "ours-stdio",
            label: "raw driver and mcp-server (mcp-stdio-demo)".to_owned(),
            command: ours,
            driver: "mcp-load",
            fixed_reply: false,
        },
        StdioRow {
            key: "ours-client-stdio",
            label: "mcp-client and mcp-server (mcp-stdio-demo)".to_owned(),
            command: client,
            driver: "mcp-bench-client",
            fixed_reply: false,
        },
    ]
}

/// Runs the stdio pairings at concurrency 1, rounds rotated as for HTTP.
fn measure_stdio(settings: &Settings, bin: &Path, rows: &[StdioRow]) -> Result<Results> {
    let mut results = Results::new();
    let active: Vec<&StdioRow> = rows.iter().filter(|r| r.command.is_ok()).collect();
    for &revision in &settings.revisions {
        let cell = results.entry((revision, 1)).or_default();
        for row in rows {
            cell.insert(row.key, vec![None; settings.rounds]);
        }
        for round in 0..settings.rounds {
            for i in 0..active.len() {
                let row = active[(i + round) % active.len()];
                let Ok(command) = &row.command else { continue };
                let mut load = Command::new("taskset");
                load.args(["-c", "1"])
                    .arg(bin.join(row.driver))
                    .args(["--transport", "stdio", "--revision", revision])
                    .arg("--command")
                    .arg(command.join(" "))
                    .arg("--warmup")
                    .arg(settings.warmup.to_string())
                    .arg("--duration")
                    .arg(settings.measure.to_string());
                if row.fixed_reply {
                    load.arg("--fixed-reply");
                }
                let sample = run_load(&mut load, None)?;
                eprintln!(
                    "xtask bench: stdio {revision} round {} {:<11} {:>9.0} calls/s  p50 {:.3} ms  p99 {:.3} ms  errors {}",
                    round + 1,
                    row.key,
                    sample.calls_per_s,
                    sample.p50_ms,
                    sample.p99_ms,
                    sample.errors
                );
                if let Some(slot) = cell.get_mut(row.key) {
                    slot[round] = Some(sample);
                }
            }
        }
    }
    Ok(results)
}

/// The client rows: the raw hyper loop (`mcp-load`, key `floor`) and our client
/// (`mcp-bench-client`, key `ours-client`) against the same echo floor, rotated each round.
/// Returns the results and, when the rows cannot run, why.
fn measure_client(
    settings: &Settings,
    bin: &Path,
    log_dir: &Path,
) -> Result<(Results, Option<String>)> {
    let mut results = Results::new();
    let client = bin.join("mcp-bench-client");
    if !client.exists() {
        let why = "client rows skipped: mcp-bench-client was not built (feature `client`)";
        return Ok((results, Some(why.to_owned())));
    }
    let mut spec = RowSpec::floor(bin);
    spec.key = "echo-floor";
    spec.args = vec!["--echo".to_owned()];
    let server = match start_server(&spec, log_dir, "echo-floor") {
        Ok(server) => server,
        Err(why) => {
            return Ok((
                results,
                Some(format!("client rows skipped: echo floor: {why}")),
            ));
        }
    };
    let drivers = [("floor", bin.join("mcp-load")), ("ours-client", client)];
    for &revision in &settings.revisions {
        let (path, transport) = if revision == LEGACY {
            ("/sse", "http+sse")
        } else {
            ("/mcp", "streamable")
        };
        for &concurrency in &settings.concurrencies {
            let cell = results.entry((revision, concurrency)).or_default();
            for (key, _) in &drivers {
                cell.insert(*key, vec![None; settings.rounds]);
            }
            for round in 0..settings.rounds {
                for i in 0..drivers.len() {
                    let (key, driver) = &drivers[(i + round) % drivers.len()];
                    let mut load = Command::new("taskset");
                    load.args(["-c", "1"])
                        .arg(driver)
                        .arg("--url")
                        .arg(format!("http://127.0.0.1:{}{path}", server.port))
                        .args(["--revision", revision, "--transport", transport])
                        .arg("--concurrency")
                        .arg(concurrency.to_string())
                        .arg("--warmup")
                        .arg(settings.warmup.to_string())
                        .arg("--duration")
                        .arg(settings.measure.to_string());
                    let sample = run_load(&mut load, None)?;
                    eprintln!(
                        "xtask bench: client {revision} c={concurrency} round {} {:<11} {:>9.0} calls/s  p50 {:.3} ms  p99 {:.3} ms  errors {}",
                        round + 1,
                        key,
                        sample.calls_per_s,
                        sample.p50_ms,
                        sample.p99_ms,
                        sample.errors
                    );
                    if let Some(slot) = cell.get_mut(key) {
                        slot[round] = Some(sample);
                    }
                }
            }
        }
    }
    drop(server);
    Ok((results, None))
}

/// One server's idle-sessions measurement.
#[derive(Clone, Debug)]
struct IdleSample {
    key: &'static str,
    requested: usize,
    opened: u64,
    with_session_id: u64,
    errors: u64,
    first_error: Option<String>,
    before_kib: u64,
    after_kib: u64,
}

impl IdleSample {
    /// Extra resident memory per session that got an id, in bytes.
    fn bytes_per_session(&self) -> Option<f64> {
        (self.with_session_id > 0).then(|| {
            self.after_kib.saturating_sub(self.before_kib) as f64 * 1024.0
                / self.with_session_id as f64
        })
    }
}

/// What one `initialize` costs on our endpoint at a small and a large session count.
#[derive(Clone, Debug)]
struct ScaleSample {
    small: u64,
    large: u64,
    small_us: f64,
    large_us: f64,
}

/// The session count the session-scale target is stated for (and `--quick`'s).
const SCALE_TARGET_SESSIONS: usize = 100_000;
const SCALE_QUICK_SESSIONS: usize = 10_000;

/// Runs `mcp-session-scale` once: 100 against 100,000 sessions (10,000 with `--quick`).
/// `None` (after a notice) when it fails: the report says the target is pending.
fn session_scale(settings: &Settings, bin: &Path) -> Option<ScaleSample> {
    let (large, batch, rounds) = if settings.quick {
        (SCALE_QUICK_SESSIONS, 200, 3)
    } else {
        (SCALE_TARGET_SESSIONS, 1000, 5)
    };
    let output = Command::new("taskset")
        .args(["-c", "0"])
        .arg(bin.join("mcp-session-scale"))
        .args(["--small", "100", "--large"])
        .arg(large.to_string())
        .arg("--batch")
        .arg(batch.to_string())
        .arg("--rounds")
        .arg(rounds.to_string())
        .stdin(Stdio::null())
        .output();
    let report: Value = match output {
        Ok(output) if output.status.success() => match serde_json::from_slice(&output.stdout) {
            Ok(report) => report,
            Err(err) => {
                eprintln!("xtask bench: session scale: unreadable report: {err}");
                return None;
            }
        },
        Ok(output) => {
            eprintln!(
                "xtask bench: session scale failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
            return None;
        }
        Err(err) => {
            eprintln!("xtask bench: session scale: {err}");
            return None;
        }
    };
    let sample = ScaleSample {
        small: report["small"].as_u64().unwrap_or(0),
        large: report["large"].as_u64().unwrap_or(0),
        small_us: report["small_us"].as_f64().unwrap_or(0.0),
        large_us: report["large_us"].as_f64().unwrap_or(0.0),
    };
    eprintln!(
        "xtask bench: session scale: initialize {:.1} us at {} sessions, {:.1} us at {}",
        sample.small_us, sample.small, sample.large_us, sample.large
    );
    Some(sample)
}

/// Pushed asks answered through one of our servers' hubs.
#[derive(Clone, Debug)]
struct AskSample {
    key: &'static str,
    /// Answered through a second worker on the same hub.
    other_worker: bool,
    /// Answered asks, summed over rounds.
    asks: u64,
    /// Medians over rounds.
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    errors: u64,
    first_error: Option<String>,
}

/// The revision of the pushed asks: the newest that pushes questions on the call's stream.
const ASK_REVISION: &str = "2025-11-25";

/// Runs `mcp-load --ask` against our running servers (memory, Redis, PostgreSQL and SQLite
/// stores), alternating them each round: answer-to-result latency of a question pushed on the
/// call's stream. On PostgreSQL and SQLite the answers go to a second worker on the same hub,
/// started here (pinned to core 0 too) and stopped at the end.
fn measure_asks(
    settings: &Settings,
    bin: &Path,
    servers: &Servers,
    log_dir: &Path,
) -> Result<Vec<AskSample>> {
    let ours: Vec<&Row> = servers
        .rows
        .iter()
        .filter(|r| {
            r.spec.role == Role::Ours && r.spec.ask != AskMode::None && r.running().is_some()
        })
        .collect();
    // The second worker of each row that answers through another worker.
    let mut answerers: Vec<Option<Result<Running, String>>> = Vec::new();
    for row in &ours {
        answerers.push((row.spec.ask == AskMode::OtherWorker).then(|| {
            let answerer = start_server(&row.spec, log_dir, &format!("{}-answerer", row.spec.key));
            match &answerer {
                Ok(running) => eprintln!(
                    "xtask bench: {} second worker on 127.0.0.1:{} (pid {})",
                    row.spec.key, running.port, running.pid
                ),
                Err(why) => eprintln!("xtask bench: {} second worker: {why}", row.spec.key),
            }
            answerer
        }));
    }
    // Per row: asks, p50s, p99s, errors, first error.
    type Tally = (u64, Vec<f64>, Vec<f64>, u64, Option<String>);
    let mut per_row: Vec<Tally> = vec![(0, Vec::new(), Vec::new(), 0, None); ours.len()];
    for round in 0..settings.rounds {
        for i in 0..ours.len() {
            let index = (i + round) % ours.len();
            let row = ours[index];
            let Some(running) = row.running() else {
                continue;
            };
            let mut command = Command::new("taskset");
            command
                .args(["-c", "1"])
                .arg(bin.join("mcp-load"))
                .arg("--url")
                .arg(format!("http://127.0.0.1:{}/mcp", running.port))
                .args(["--revision", ASK_REVISION, "--ask"])
                .arg("--warmup")
                .arg(settings.warmup.to_string())
                .arg("--duration")
                .arg(settings.measure.to_string());
            match &answerers[index] {
                None => {}
                Some(Ok(answerer)) => {
                    command
                        .arg("--answer-url")
                        .arg(format!("http://127.0.0.1:{}/mcp", answerer.port));
                }
                Some(Err(why)) => bail!("{}: the second worker did not start: {why}", row.spec.key),
            }
            let output = command
                .stdin(Stdio::null())
                .output()
                .context("running mcp-load --ask")?;
            if !output.status.success() {
                bail!(
                    "mcp-load --ask failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            let report: Value =
                serde_json::from_slice(&output.stdout).context("parsing the ask report")?;
            let asks = report["asks"].as_u64().unwrap_or(0);
            let errors = report["errors"].as_u64().unwrap_or(0);
            eprintln!(
                "xtask bench: ask {ASK_REVISION} round {} {:<15} {:>7} asks  p50 {:.3} ms  p99 {:.3} ms  errors {errors}",
                round + 1,
                row.spec.key,
                asks,
                report["p50_ms"].as_f64().unwrap_or(0.0),
                report["p99_ms"].as_f64().unwrap_or(0.0),
            );
            let entry = &mut per_row[index];
            entry.0 += asks;
            if asks > 0 {
                entry.1.push(report["p50_ms"].as_f64().unwrap_or(0.0));
                entry.2.push(report["p99_ms"].as_f64().unwrap_or(0.0));
            }
            entry.3 += errors;
            if entry.4.is_none() {
                entry.4 = report["first_error"].as_str().map(str::to_owned);
            }
        }
    }
    Ok(ours
        .iter()
        .zip(per_row)
        .map(|(row, (asks, p50, p99, errors, first_error))| AskSample {
            key: row.spec.key,
            other_worker: row.spec.ask == AskMode::OtherWorker,
            asks,
            p50_ms: median(p50),
            p99_ms: median(p99),
            errors,
            first_error,
        })
        .collect())
}

/// Tasks created and completed through one of our servers' task stores.
#[derive(Clone, Debug)]
struct TaskSample {
    key: &'static str,
    /// Tasks per second, per round.
    per_s: Vec<f64>,
    /// Medians over rounds.
    gets_per_task: Option<f64>,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    errors: u64,
    first_error: Option<String>,
}

/// The revision of the task rows: the Tasks extension is a 2026-07-28 one.
const TASK_REVISION: &str = "2026-07-28";
/// The workers of the task rows, each creating and reading one task at a time.
const TASK_CONCURRENCY: u32 = 32;
/// The rows whose task stores are measured.
const TASK_ROWS: [&str; 2] = ["ours-memory", "ours-redis"];

/// Runs `mcp-load --tasks` against our running memory and Redis rows, alternating them each
/// round: tasks created (`tools/call add_task`, a `CreateTaskResult`) and read back completed
/// (`tasks/get`) per second.
fn measure_tasks(settings: &Settings, bin: &Path, servers: &Servers) -> Result<Vec<TaskSample>> {
    let ours: Vec<&Row> = TASK_ROWS
        .iter()
        .filter_map(|key| {
            servers
                .rows
                .iter()
                .find(|r| r.spec.key == *key && r.running().is_some())
        })
        .collect();
    let mut samples: Vec<TaskSample> = ours
        .iter()
        .map(|row| TaskSample {
            key: row.spec.key,
            per_s: Vec::new(),
            gets_per_task: None,
            p50_ms: None,
            p99_ms: None,
            errors: 0,
            first_error: None,
        })
        .collect();
    // Per row: gets per task, p50s, p99s.
    let mut spreads: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)> =
        vec![(Vec::new(), Vec::new(), Vec::new()); ours.len()];
    for round in 0..settings.rounds {
        for i in 0..ours.len() {
            let index = (i + round) % ours.len();
            let row = ours[index];
            let Some(running) = row.running() else {
                continue;
            };
            let output = Command::new("taskset")
                .args(["-c", "1"])
                .arg(bin.join("mcp-load"))
                .arg("--url")
                .arg(format!("http://127.0.0.1:{}/mcp", running.port))
                .args(["--revision", TASK_REVISION, "--tasks"])
                .arg("--concurrency")
                .arg(TASK_CONCURRENCY.to_string())
                .arg("--warmup")
                .arg(settings.warmup.to_string())
                .arg("--duration")
                .arg(settings.measure.to_string())
                .stdin(Stdio::null())
                .output()
                .context("running mcp-load --tasks")?;
            if !output.status.success() {
                bail!(
                    "mcp-load --tasks failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            let report: Value =
                serde_json::from_slice(&output.stdout).context("parsing the tasks report")?;
            let tasks = report["tasks"].as_u64().unwrap_or(0);
            let per_s = report["tasks_per_s"].as_f64().unwrap_or(0.0);
            let errors = report["errors"].as_u64().unwrap_or(0);
            eprintln!(
                "xtask bench: tasks {TASK_REVISION} c={TASK_CONCURRENCY} round {} {:<15} {:>9.0} tasks/s  {:.2} gets/task  p50 {:.3} ms  p99 {:.3} ms  errors {errors}",
                round + 1,
                row.spec.key,
                per_s,
                report["gets_per_task"].as_f64().unwrap_or(0.0),
                report["p50_ms"].as_f64().unwrap_or(0.0),
                report["p99_ms"].as_f64().unwrap_or(0.0),
            );
            let sample = &mut samples[index];
            sample.per_s.push(per_s);
            if tasks > 0 {
                let spread = &mut spreads[index];
                spread
                    .0
                    .push(report["gets_per_task"].as_f64().unwrap_or(0.0));
                spread.1.push(report["p50_ms"].as_f64().unwrap_or(0.0));
                spread.2.push(report["p99_ms"].as_f64().unwrap_or(0.0));
            }
            sample.errors += errors;
            if sample.first_error.is_none() {
                sample.first_error = report["first_error"].as_str().map(str::to_owned);
            }
        }
    }
    for (sample, (gets, p50, p99)) in samples.iter_mut().zip(spreads) {
        sample.gets_per_task = median(gets);
        sample.p50_ms = median(p50);
        sample.p99_ms = median(p99);
    }
    Ok(samples)
}

/// The revision of the idle sessions: the newest with a handshake.
const IDLE_REVISION: &str = "2025-11-25";

/// Opens the idle sessions on a fresh instance of each server (started for this and stopped
/// after), so the memory the throughput rounds left behind, or freed and kept for reuse, does
/// not blur the difference.
fn idle_sessions(
    settings: &Settings,
    bin: &Path,
    servers: &Servers,
    log_dir: &Path,
) -> Result<Vec<IdleSample>> {
    let mut samples = Vec::new();
    if settings.sessions == 0 {
        return Ok(samples);
    }
    for row in &servers.rows {
        // The quick run proves the measurement works on our rows only.
        if row.running().is_none()
            || row.spec.focus
            || row.spec.role == Role::Floor
            || (settings.quick && row.spec.role != Role::Ours)
        {
            continue;
        }
        let running = match start_server(&row.spec, log_dir, &format!("{}-idle", row.spec.key)) {
            Ok(running) => running,
            Err(why) => {
                eprintln!("xtask bench: idle sessions {}: {why}", row.spec.key);
                continue;
            }
        };
        // Before: the freshly started server, ready to accept connections.
        let before = status_kib(running.pid, "VmRSS:").unwrap_or(0);
        let output = Command::new("taskset")
            .args(["-c", "1"])
            .arg(bin.join("mcp-load"))
            .arg("--url")
            .arg(format!("http://127.0.0.1:{}/mcp", running.port))
            .args(["--revision", IDLE_REVISION, "--concurrency", "4"])
            .arg("--sessions")
            .arg(settings.sessions.to_string())
            .stdin(Stdio::null())
            .output()
            .context("running mcp-load --sessions")?;
        if !output.status.success() {
            bail!(
                "mcp-load --sessions failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let report: Value =
            serde_json::from_slice(&output.stdout).context("parsing the sessions report")?;
        let after = status_kib(running.pid, "VmRSS:").unwrap_or(0);
        let count = |key: &str| report[key].as_u64().unwrap_or(0);
        let sample = IdleSample {
            key: row.spec.key,
            requested: settings.sessions,
            opened: count("opened"),
            with_session_id: count("with_session_id"),
            errors: count("errors"),
            first_error: report["first_error"].as_str().map(str::to_owned),
            before_kib: before,
            after_kib: after,
        };
        eprintln!(
            "xtask bench: idle sessions {:<15} opened {} (with id {}), RSS {} -> {} KiB, errors {}",
            sample.key, sample.opened, sample.with_session_id, before, after, sample.errors
        );
        samples.push(sample);
    }
    Ok(samples)
}

pub(crate) fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| {
            let parts: Vec<&str> = s.split_whitespace().take(3).collect();
            (parts.len() == 3).then(|| parts.join(" "))
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// The bare floor's rate on a quiet machine of this kind: issue 12's orientation figure of 92k
/// calls/s at c=32 (clean runs here did 113-153k). None at c=1: the issue's 36k has not been
/// reached by this harness on this host (10-12k in every run, clean ones included: at c=1 a
/// call is a round trip between the two cores), so c=1 is judged by its spread alone.
fn floor_reference(concurrency: u32) -> Option<f64> {
    (concurrency == 32).then_some(92_000.0)
}

/// A floor round more than this far apart from another of the same cell (max / min) marks the
/// run as noisy: nothing of ours changes between the floor's rounds.
const FLOOR_SPREAD_LIMIT: f64 = 1.25;

/// A floor median below this share of [`floor_reference`] marks the run as noisy: the machine
/// was slow, whatever its load average said.
const FLOOR_LEVEL_LIMIT: f64 = 0.7;

/// Why the floor's own figures say the run was noisy: one line per cell where its rounds spread
/// past [`FLOOR_SPREAD_LIMIT`] or its median fell below [`FLOOR_LEVEL_LIMIT`] of the reference.
/// The load average alone misses a host that is slow or unsteady at a low load.
fn floor_noise(results: &Results) -> Vec<String> {
    let mut reasons = Vec::new();
    for ((revision, concurrency), cell) in results {
        let Some((level, min, max)) = summarise(cell, "floor").calls else {
            continue;
        };
        let mut why = Vec::new();
        if min > 0.0 && max / min > FLOOR_SPREAD_LIMIT {
            why.push(format!(
                "its rounds spread from {} to {} calls/s ({:.2}x)",
                thousands(min),
                thousands(max),
                max / min
            ));
        }
        if let Some(reference) = floor_reference(*concurrency)
            && level < FLOOR_LEVEL_LIMIT * reference
        {
            why.push(format!(
                "its median, {} calls/s, is {:.0}% of the {} expected here",
                thousands(level),
                100.0 * level / reference,
                thousands(reference)
            ));
        }
        if !why.is_empty() {
            reasons.push(format!(
                "floor, {revision} c={concurrency}: {}",
                why.join("; ")
            ));
        }
    }
    reasons
}

/// The summary of one row in one cell.
#[derive(Debug, Default)]
struct RowSummary {
    calls: Option<(f64, f64, f64)>,
    p50: Option<f64>,
    p99: Option<f64>,
    of_floor: Option<f64>,
    vs_rmcp: Option<f64>,
    rss: Option<f64>,
    errors: u64,
    first_error: Option<String>,
}

/// Summarises a row: medians over rounds; ratios per round (same round), then their median.
fn summarise(cell: &BTreeMap<&str, Vec<Option<Sample>>>, key: &str) -> RowSummary {
    let Some(samples) = cell.get(key) else {
        return RowSummary::default();
    };
    let present: Vec<&Sample> = samples.iter().flatten().collect();
    if present.is_empty() {
        return RowSummary::default();
    }
    let calls: Vec<f64> = present.iter().map(|s| s.calls_per_s).collect();
    let min = calls.iter().copied().fold(f64::INFINITY, f64::min);
    let max = calls.iter().copied().fold(0.0, f64::max);
    let per_round = |reference: &dyn Fn(usize) -> Option<f64>| {
        let ratios: Vec<f64> = samples
            .iter()
            .enumerate()
            .filter_map(|(round, s)| {
                let s = s.as_ref()?;
                let r = reference(round)?;
                (r > 0.0).then(|| s.calls_per_s / r)
            })
            .collect();
        median(ratios)
    };
    let calls_in = |key: &str, round: usize| {
        cell.get(key)
            .and_then(|s| s.get(round))
            .and_then(Option::as_ref)
            .map(|s| s.calls_per_s)
    };
    let of_floor = per_round(&|round| calls_in("floor", round));
    let vs_rmcp = per_round(&|round| {
        let session = calls_in("rmcp-session", round);
        let stateless = calls_in("rmcp-stateless", round);
        match (session, stateless) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    });
    RowSummary {
        calls: median(calls).map(|m| (m, min, max)),
        p50: median(present.iter().map(|s| s.p50_ms).collect()),
        p99: median(present.iter().map(|s| s.p99_ms).collect()),
        of_floor,
        vs_rmcp,
        rss: median(present.iter().filter_map(|s| s.rss_mib).collect()),
        errors: present.iter().map(|s| s.errors).sum(),
        first_error: present.iter().find_map(|s| s.first_error.clone()),
    }
}

/// What the report says about a row besides its samples.
#[derive(Debug)]
struct RowInfo {
    key: &'static str,
    label: String,
    command: String,
    unavailable: Option<String>,
}

/// Everything the report is written from.
struct Report<'a> {
    settings: &'a Settings,
    rows: &'a [RowInfo],
    results: &'a Results,
    stdio: &'a Results,
    stdio_rows: &'a [RowInfo],
    client: &'a Results,
    idle: &'a [IdleSample],
    scale: Option<&'a ScaleSample>,
    asks: &'a [AskSample],
    tasks: &'a [TaskSample],
    notes: &'a [String],
    peak_rss: &'a BTreeMap<&'a str, Option<f64>>,
    load_before: String,
    load_after: String,
    wall: Duration,
    /// The part of [`wall`](Self::wall) spent building the release binaries.
    build: Duration,
}

/// Row order and labels in the tables (taken from the first cell that has the row).
const ROW_ORDER: [&str; 17] = [
    "floor",
    "ours-memory",
    "base-memory",
    "ours-redis",
    "ours-postgres",
    "ours-sqlite",
    "ours-jwt",
    "ours-dpop",
    "ours-metrics",
    "ours-traced",
    "ours-otel",
    "ours-limits",
    "ours-limits-redis",
    "ours-proxy",
    "rmcp-session",
    "rmcp-stateless",
    "tiny",
];

impl Report<'_> {
    fn markdown(&self) -> String {
        let mut md = String::new();
        let s = self.settings;
        let ours_measured = self.results.values().any(|cell| {
            ["ours-memory", "ours-redis"]
                .iter()
                .any(|k| cell.get(k).is_some_and(|v| v.iter().any(Option::is_some)))
        });
        let _ = writeln!(md, "# Benchmarks\n");
        if s.quick {
            let _ = writeln!(
                md,
                "**Quick run** (`cargo xtask bench --quick`): one short round of every kind of row, to prove the harness works. \
                 These figures are not measurements.\n"
            );
        }
        if !ours_measured {
            let _ = writeln!(
                md,
                "**Partial:** our server's rows are pending: `mcp-bench-server` reports that our HTTP transport (issue 7) is not available yet. \
                 The floor and the peers below were measured in full.\n"
            );
        }
        let _ = writeln!(
            md,
            "Generated by `cargo xtask bench{}`.\n",
            if s.quick { " --quick" } else { "" }
        );
        let busy = |load: &str| {
            load.split_whitespace()
                .next()
                .and_then(|l| l.parse::<f64>().ok())
                .is_some_and(|l| l > 1.5)
        };
        let loaded = busy(&self.load_before) || busy(&self.load_after);
        let floor_noise = floor_noise(self.results);
        if loaded || !floor_noise.is_empty() {
            let _ = writeln!(md, "**Noisy run.**");
            if loaded {
                let _ = writeln!(
                    md,
                    "- The load average shows other processes competing for the two cores during this run \
                     (pinning keeps our processes on their cores, not the others off them)."
                );
            }
            if !floor_noise.is_empty() {
                let _ = writeln!(
                    md,
                    "- The bare floor, which does not change between rounds, was slow or unsteady \
                     (rounds spread over {FLOOR_SPREAD_LIMIT}x, or a median at c=32 under {:.0}% of the issue's orientation figure):",
                    100.0 * FLOOR_LEVEL_LIMIT
                );
                for reason in &floor_noise {
                    let _ = writeln!(md, "  - {reason}");
                }
            }
            let _ = writeln!(
                md,
                "\nAbsolute figures, c=1 above all, are lower and more spread than on a quiet machine; \
                 the same-round ratios are the figures to read.\n"
            );
        }
        let _ = writeln!(md, "## Machine and run\n");
        let _ = writeln!(md, "| | |\n| --- | --- |");
        let _ = writeln!(md, "| date | {} |", date());
        let _ = writeln!(md, "| CPU | {} |", cpu_model());
        let _ = writeln!(
            md,
            "| cores (`nproc`) | {} |",
            command_exists("nproc", &[]).unwrap_or_default()
        );
        let _ = writeln!(
            md,
            "| kernel | {} |",
            command_exists("uname", &["-sr"]).unwrap_or_default()
        );
        let _ = writeln!(
            md,
            "| rustc | {} |",
            command_exists("rustc", &["--version"]).unwrap_or_default()
        );
        let _ = writeln!(
            md,
            "| load average (1, 5, 15 min) before / after | {} / {} |",
            self.load_before, self.load_after
        );
        let _ = writeln!(
            md,
            "| settings | {} round(s), {} s warm-up + {} s measured per run, concurrency {:?} |",
            s.rounds, s.warmup, s.measure, s.concurrencies
        );
        let _ = writeln!(
            md,
            "| wall time | {:.0} s ({:.0} s of it building the release binaries) |\n",
            self.wall.as_secs_f64(),
            self.build.as_secs_f64()
        );
        let _ = writeln!(md, "## Method\n");
        let _ = writeln!(
            md,
            "- Every server is pinned to core 0 (`taskset -c 0`) and the load generator to core 1 (`taskset -c 1`), on 127.0.0.1.\n\
             - The load generator (`mcp-load`, release build, current-thread tokio runtime) runs C workers, each on its own keep-alive HTTP/1.1 connection \
             (hyper `client::conn::http1`, `TCP_NODELAY`) with its own session where the revision has one: `initialize` + `notifications/initialized` \
             and the session header on 2024-11-05 to 2025-11-25, per-request `_meta` and the `MCP-Protocol-Version`/`Mcp-Method`/`Mcp-Name` headers on 2026-07-28. \
             Then `tools/call add {{a: 2, b: 3}}` in a loop; every reply is parsed (JSON or SSE) and its sum checked; failures are counted as errors.\n\
             - 2024-11-05 is measured over HTTP+SSE (`GET /sse`, POSTs to the `endpoint` event's URL, replies on the stream); rmcp has no HTTP+SSE transport, so it has no 2024-11-05 row.\n\
             - The floor is a bare hyper 1 HTTP/1.1 server answering any POST with a fixed 130-byte JSON-RPC `add` result (and, for 2024-11-05, the same over an HTTP+SSE stream).\n\
             - Rounds alternate the servers (rotated each round: A B C, B C A, ...). Calls/s is the median over rounds with the min-max spread; \
             p50/p99 are medians of the per-round latency percentiles. \
             \"of floor\" and \"vs rmcp\" are ratios taken within each round, then the median: \"vs rmcp\" divides by the faster rmcp mode of that round.\n\
             - Our Redis rows use a `redis-server` the harness starts for them (`--save \"\" --appendonly no`, a free port), pinned to core 0 with the server it serves, \
             so the store's work costs the server's core as the memory store's does and the load generator keeps core 1.\n\
             - The target rows (`ours-postgres`, `ours-sqlite`, `ours-jwt`, `ours-dpop`, `ours-metrics`, `ours-limits`, `ours-limits-redis`) run at c=32 on {} only and are read as a ratio to our memory row in the same round (`ours-limits-redis` to our Redis row). \
             PostgreSQL is the one at `MCP_POSTGRES_URL` (not started by the harness: it shares core 0 or 1 with whatever it is scheduled on, and it persists what it is given); \
             SQLite is a fresh file in the target folder; `ours-jwt` is the memory store behind `mcp_server::auth::ResourceServer` with a `JwtVerifier` on a fixed local key set \
             (ES256, generated at start) and every request carries `Authorization: Bearer` with a token signed by that key (verified once, then cached by the server); \
             `ours-dpop` binds that token to a second key (`cnf.jkt`) and every request carries `Authorization: DPoP` and a fresh ES256 proof, signed by the load generator \
             (on its core) and checked by the server (one signature check and one replay record in the memory store per request).\n\
             - RSS is the server's resident set after each run (median); the peak is `VmHWM` at the end.\n\
             - Absolute numbers move between runs on this shared machine; compare servers only within one run.\n\
             - At c=1 every call waits for two cross-core wakeups, so c=1 figures measure wakeup latency as much as CPU cost \
             (on a virtual machine an idle core's wakeup is slow); read them as ratios.\n",
            if s.quick {
                FOCUS_REVISIONS[0].to_owned()
            } else {
                FOCUS_REVISIONS.join(" and ")
            }
        );
        let _ = writeln!(md, "## Commands\n");
        let _ = writeln!(
            md,
            "```sh\ncargo xtask bench            # this report\ncargo xtask bench --quick    # CI: every kind of row once (2024-11-05, 2025-11-25, 2026-07-28 at c=32, short runs), peers only if cached\n```\n"
        );
        let _ = writeln!(
            md,
            "Each run: `taskset -c 1 mcp-load --url http://127.0.0.1:PORT/mcp --revision REV --concurrency C --warmup {} --duration {}` \
            (`/sse --transport http+sse` for 2024-11-05; `--fixed-reply` for the floor; `--bearer TOKEN` for `ours-jwt`, with `--dpop-key FILE` for `ours-dpop`). Servers:\n",
            s.warmup, s.measure
        );
        for row in self.rows {
            let _ = writeln!(md, "- `{}` ({}): `{}`", row.key, row.label, row.command);
        }
        let _ = writeln!(
            md,
            "\nstdio pairings (one call at a time over the child's pipes):\n"
        );
        for row in self.stdio_rows.iter().filter(|r| r.unavailable.is_none()) {
            let _ = writeln!(md, "- `{}` ({}): `{}`", row.key, row.label, row.command);
        }
        let _ = writeln!(md);
        let unavailable: Vec<String> = self
            .rows
            .iter()
            .chain(self.stdio_rows)
            .filter_map(|r| Some(format!("`{}`: {}", r.key, r.unavailable.as_deref()?)))
            .collect();
        if !self.notes.is_empty() || !unavailable.is_empty() {
            let _ = writeln!(md, "Notes:\n");
            for note in self.notes.iter().chain(&unavailable) {
                let _ = writeln!(md, "- {note}");
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md, "## Results\n");
        md.push_str(&self.tables());
        md.push_str(&self.peak_table());
        md.push_str(&self.idle_table());
        md.push_str(&self.scale_table());
        md.push_str(&self.ask_table());
        md.push_str(&self.task_table());
        md.push_str(&self.stdio_tables());
        md.push_str(&self.client_tables());
        md.push_str(&self.targets());
        md
    }

    fn label(&self, key: &str) -> String {
        self.rows
            .iter()
            .find(|r| r.key == key)
            .map_or_else(|| key.to_owned(), |r| r.label.clone())
    }

    fn unavailable(&self, key: &str) -> Option<&str> {
        self.rows
            .iter()
            .find(|r| r.key == key)
            .and_then(|r| r.unavailable.as_deref())
    }

    fn tables(&self) -> String {
        let mut md = String::new();
        for ((revision, concurrency), cell) in self.results {
            let transport = if *revision == LEGACY {
                "HTTP+SSE"
            } else {
                "Streamable HTTP"
            };
            let _ = writeln!(md, "### {revision}, c={concurrency} ({transport})\n");
            let _ = writeln!(
                md,
                "| server | calls/s (median, min-max) | p50 ms | p99 ms | of floor | vs rmcp | RSS MiB | errors |\n| --- | --: | --: | --: | --: | --: | --: | --: |"
            );
            for key in ROW_ORDER {
                let label = self.label(key);
                if self.unavailable(key).is_some() {
                    let _ = writeln!(md, "| {label} | not available (see notes) | | | | | | |");
                    continue;
                }
                if !cell.contains_key(key) {
                    continue;
                }
                let row = summarise(cell, key);
                let Some((calls, min, max)) = row.calls else {
                    let why = if key.starts_with("rmcp") && *revision == LEGACY {
                        "n/a (no HTTP+SSE transport)"
                    } else {
                        "n/a"
                    };
                    let _ = writeln!(md, "| {label} | {why} | | | | | | |");
                    continue;
                };
                let pct = |v: Option<f64>| {
                    v.map_or_else(|| "-".to_owned(), |v| format!("{:.0}%", v * 100.0))
                };
                let ratio =
                    |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}x"));
                let errors = match (&row.first_error, row.errors) {
                    (Some(first), n) if n > 0 => format!("**{n}** ({})", first.replace('|', "/")),
                    (_, n) => n.to_string(),
                };
                let _ = writeln!(
                    md,
                    "| {label} | {} ({}-{}) | {:.3} | {:.3} | {} | {} | {} | {errors} |",
                    thousands(calls),
                    thousands(min),
                    thousands(max),
                    row.p50.unwrap_or(0.0),
                    row.p99.unwrap_or(0.0),
                    pct(row.of_floor),
                    ratio(row.vs_rmcp),
                    row.rss
                        .map_or_else(|| "-".to_owned(), |r| format!("{r:.1}")),
                );
            }
            let _ = writeln!(md);
        }
        md
    }

    fn stdio_tables(&self) -> String {
        let mut md = String::new();
        let label = |key: &str| {
            self.stdio_rows
                .iter()
                .find(|r| r.key == key)
                .map_or_else(|| key.to_owned(), |r| r.label.clone())
        };
        for ((revision, _), cell) in self.stdio {
            let _ = writeln!(md, "### {revision}, stdio (c=1)\n");
            let _ = writeln!(
                md,
                "| pairing | calls/s (median, min-max) | p50 ms | p99 ms | of raw pipe | errors |\n| --- | --: | --: | --: | --: | --: |"
            );
            for row_info in self.stdio_rows {
                let key = row_info.key;
                if row_info.unavailable.is_some() {
                    let _ = writeln!(md, "| {} | not available (see notes) | | | | |", label(key));
                    continue;
                }
                let row = summarise(cell, key);
                let Some((calls, min, max)) = row.calls else {
                    continue;
                };
                let errors = match (&row.first_error, row.errors) {
                    (Some(first), n) if n > 0 => format!("**{n}** ({})", first.replace('|', "/")),
                    (_, n) => n.to_string(),
                };
                let _ = writeln!(
                    md,
                    "| {} | {} ({}-{}) | {:.3} | {:.3} | {} | {errors} |",
                    label(key),
                    thousands(calls),
                    thousands(min),
                    thousands(max),
                    row.p50.unwrap_or(0.0),
                    row.p99.unwrap_or(0.0),
                    row.of_floor
                        .map_or_else(|| "-".to_owned(), |v| format!("{:.0}%", v * 100.0)),
                );
            }
            let _ = writeln!(md);
        }
        md
    }

    fn client_tables(&self) -> String {
        let mut md = String::new();
        if self.client.is_empty() {
            return md;
        }
        let _ = writeln!(
            md,
            "### Client overhead: the raw hyper loop (`mcp-load`) and our client (`mcp-bench-client`) against the same echo floor (`mcp-floor --echo`)\n\n\
             | revision | c | raw loop calls/s | mcp-client calls/s (median, min-max) | mcp-client p50 / p99 ms | of the raw loop | errors |\n\
             | --- | --: | --: | --: | --: | --: | --: |"
        );
        for ((revision, concurrency), cell) in self.client {
            let raw = summarise(cell, "floor");
            let ours = summarise(cell, "ours-client");
            let (Some((raw_calls, ..)), Some((calls, min, max))) = (raw.calls, ours.calls) else {
                continue;
            };
            let errors = raw.errors + ours.errors;
            let first = ours.first_error.or(raw.first_error).unwrap_or_default();
            let errors = if errors > 0 {
                format!("**{errors}** ({})", first.replace('|', "/"))
            } else {
                "0".to_owned()
            };
            let _ = writeln!(
                md,
                "| {revision} | {concurrency} | {} | {} ({}-{}) | {:.3} / {:.3} | {} | {errors} |",
                thousands(raw_calls),
                thousands(calls),
                thousands(min),
                thousands(max),
                ours.p50.unwrap_or(0.0),
                ours.p99.unwrap_or(0.0),
                ours.of_floor
                    .map_or_else(|| "-".to_owned(), |v| format!("{:.0}%", v * 100.0)),
            );
        }
        md.push('\n');
        md
    }

    fn peak_table(&self) -> String {
        let mut md = String::from(
            "### Peak RSS over the whole run\n\n| server | peak RSS MiB |\n| --- | --: |\n",
        );
        for key in ROW_ORDER {
            if let Some(Some(peak)) = self.peak_rss.get(key) {
                let _ = writeln!(md, "| {} | {peak:.1} |", self.label(key));
            }
        }
        md.push('\n');
        md
    }

    fn ask_table(&self) -> String {
        if self.asks.is_empty() {
            return String::new();
        }
        let mut md = format!(
            "### Pushed ask answered through the hub ({ASK_REVISION}, Streamable HTTP, one at a time)\n\n\
             `tools/call confirm` pushes `elicitation/create` on the call's event stream; the answer is POSTed on a \
             second connection and reaches the waiting handler through the server's hub; latency is from the answer \
             POST being sent to the call's result being read. On PostgreSQL and SQLite the answer goes to a second \
             worker (another `mcp-bench-server` on the same database, `mcp-load --answer-url`), so it crosses processes \
             through the database; on memory and Redis it goes to the worker that asked.\n\n\
             | server | answered by | asks answered | answer-to-result p50 ms | p99 ms | errors |\n\
             | --- | --- | --: | --: | --: | --: |\n"
        );
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
        for sample in self.asks {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {}{} |",
                self.label(sample.key),
                if sample.other_worker {
                    "another worker"
                } else {
                    "the same worker"
                },
                thousands(sample.asks as f64),
                ms(sample.p50_ms),
                ms(sample.p99_ms),
                sample.errors,
                sample
                    .first_error
                    .as_deref()
                    .map_or_else(String::new, |e| format!(" (first: {e})")),
            );
        }
        md.push('\n');
        md
    }

    fn task_table(&self) -> String {
        if self.tasks.is_empty() {
            return String::new();
        }
        let mut md = format!(
            "### Tasks created and completed per second ({TASK_REVISION}, Tasks extension, Streamable HTTP, c={TASK_CONCURRENCY})\n\n\
             Each worker calls `tools/call add_task` (a tool that requires a task): the server stores the task before its \
             `CreateTaskResult`, runs `add` as the task, and the worker reads it with `tasks/get` (`Mcp-Name: <taskId>`) \
             until it is `completed`, its sum checked. Latency is from the `tools/call` being sent to the `completed` read.\n\n\
             | server | tasks created and completed per second (median) | min-max | tasks/get per task | create-to-completed p50 ms | p99 ms | errors |\n\
             | --- | --: | --: | --: | --: | --: | --: |\n"
        );
        let num = |v: Option<f64>, digits: usize| {
            v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
        };
        for sample in self.tasks {
            let min = sample.per_s.iter().copied().reduce(f64::min);
            let max = sample.per_s.iter().copied().reduce(f64::max);
            let spread = match (min, max) {
                (Some(min), Some(max)) => format!("{}-{}", thousands(min), thousands(max)),
                _ => "-".to_owned(),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {spread} | {} | {} | {} | {}{} |",
                self.label(sample.key),
                median(sample.per_s.clone()).map_or_else(|| "-".to_owned(), thousands),
                num(sample.gets_per_task, 2),
                num(sample.p50_ms, 3),
                num(sample.p99_ms, 3),
                sample.errors,
                sample
                    .first_error
                    .as_deref()
                    .map_or_else(String::new, |e| format!(
                        " (first: {})",
                        e.replace('|', "/")
                    )),
            );
        }
        md.push('\n');
        md
    }

    fn idle_table(&self) -> String {
        if self.idle.is_empty() {
            return String::new();
        }
        let mut md = format!(
            "### Idle sessions ({IDLE_REVISION} handshakes over Streamable HTTP, left idle, on a freshly started server)\n\n\
             | server | sessions opened | with a session id | RSS before MiB | RSS after MiB | extra MiB | bytes per session | errors |\n\
             | --- | --: | --: | --: | --: | --: | --: | --: |\n"
        );
        for sample in self.idle {
            let extra = sample.after_kib.saturating_sub(sample.before_kib) as f64 / 1024.0;
            let errors = match (&sample.first_error, sample.errors) {
                (Some(first), n) if n > 0 => format!("**{n}** ({})", first.replace('|', "/")),
                (_, n) => n.to_string(),
            };
            let _ = writeln!(
                md,
                "| {} | {} of {} | {} | {:.1} | {:.1} | {extra:.1} | {} | {errors} |",
                self.label(sample.key),
                thousands(sample.opened as f64),
                thousands(sample.requested as f64),
                thousands(sample.with_session_id as f64),
                sample.before_kib as f64 / 1024.0,
                sample.after_kib as f64 / 1024.0,
                sample
                    .bytes_per_session()
                    .map_or_else(|| "- (no sessions kept)".to_owned(), thousands),
            );
        }
        md.push('\n');
        md
    }

    /// Our figures against the issue's targets, one line per target with the worst figure
    /// and each revision's, marked met, missed or pending.
    fn targets(&self) -> String {
        let mut md = String::from("## Targets\n\n");
        if self.settings.quick {
            md.push_str(
                "Quick run: these lines prove the report is complete; the figures are not measurements.\n\n",
            );
        }
        md.push_str("| target | figure | status |\n| --- | --- | --- |\n");
        for line in [
            self.server_target(1, 0.85),
            self.server_target(32, 0.75),
            self.redis_target(),
            self.store_target("ours-postgres", "PostgreSQL", Some(0.85)),
            self.store_target("ours-sqlite", "SQLite", None),
            self.store_target(
                "ours-jwt",
                "JWT-protected server (memory store)",
                Some(0.90),
            ),
            self.store_target(
                "ours-dpop",
                "DPoP-protected server (memory store, a proof per request)",
                None,
            ),
            self.store_target(
                "ours-metrics",
                "Server with Prometheus metrics on (memory store)",
                Some(0.97),
            ),
            self.store_target(
                "ours-traced",
                "Calls carrying a trace context in `_meta`, no exporter (memory store)",
                Some(0.97),
            ),
            self.store_target(
                "ours-otel",
                "Every request span exported over OTLP/HTTP to a local sink (memory store)",
                Some(0.90),
            ),
            self.store_target(
                "ours-limits",
                "Server with rate limits on, never reached (memory store)",
                Some(0.97),
            ),
            self.base_target(
                "ours-limits-redis",
                "ours-redis",
                "Server with rate limits on, never reached (Redis store), against the Redis store",
                Some(0.90),
            ),
            self.proxy_target(),
            self.proxy_cpu_target(),
            self.idle_target(),
            self.scale_target(),
            self.stdio_target(),
            self.client_target(),
            self.ask_target(),
            self.postgres_ask_target(),
        ] {
            let _ = writeln!(md, "{line}");
        }
        md.push('\n');
        md.push_str(&self.headline());
        md
    }

    /// Our server (memory store) against the floor at `concurrency` on every revision.
    fn server_target(&self, concurrency: u32, goal: f64) -> String {
        let target = format!(
            ">= {:.0}% of the floor at c={concurrency} on every revision",
            goal * 100.0
        );
        let shares = |key: &str| -> Vec<(String, f64)> {
            self.results
                .iter()
                .filter(|((_, c), _)| *c == concurrency)
                .filter_map(|((revision, _), cell)| {
                    Some(((*revision).to_owned(), summarise(cell, key).of_floor?))
                })
                .collect()
        };
        if !self.results.keys().any(|(_, c)| *c == concurrency) {
            return format!(
                "| {target} | - | not measured (this run has no c={concurrency} cells) |"
            );
        }
        let memory = shares("ours-memory");
        let Some(worst) = lowest(&memory) else {
            return format!("| {target} | - | pending (our server's row not measured) |");
        };
        let mut figure = format!(
            "memory store: lowest {} ({}); {}",
            percent(worst.1),
            worst.0,
            per_item(&memory, percent)
        );
        let redis = shares("ours-redis");
        if let Some(r) = lowest(&redis) {
            let _ = write!(
                figure,
                ". Redis store: lowest {} ({}); {}",
                percent(r.1),
                r.0,
                per_item(&redis, percent)
            );
        }
        let status = judged(worst.1 >= goal, memory.len(), REVISIONS.len(), "revisions");
        format!("| {target} | {figure} | {status} |")
    }

    /// Our Redis row against our memory row, same round, in every cell.
    fn redis_target(&self) -> String {
        let target =
            "Redis store within 25% of the memory store (Redis / memory calls/s, same round)";
        let ratios: Vec<(String, f64)> = self
            .results
            .iter()
            .filter_map(|((revision, c), cell)| {
                Some((
                    format!("{revision} c={c}"),
                    same_round_ratio(cell, "ours-redis", "ours-memory")?,
                ))
            })
            .collect();
        let Some(worst) = lowest(&ratios) else {
            return format!("| {target} | - | pending (our Redis row not measured) |");
        };
        let cells = REVISIONS.len() * 2;
        format!(
            "| {target} | worst {} ({}); {} | {} |",
            percent(worst.1),
            worst.0,
            per_item(&ratios, percent),
            judged(worst.1 >= 0.75, ratios.len(), cells, "cells")
        )
    }

    /// A target row against our memory row at c=32, same round, in each of its cells;
    /// `goal` is the lowest ratio that meets the target (`None`: measured, no target).
    fn store_target(&self, key: &str, what: &str, goal: Option<f64>) -> String {
        self.base_target(key, "ours-memory", what, goal)
    }

    /// `key`'s calls/s against `base`'s in the same round, at c=32 on the focus revisions.
    fn base_target(&self, key: &str, base: &str, what: &str, goal: Option<f64>) -> String {
        let against = if base == "ours-memory" {
            "the memory store"
        } else {
            base
        };
        let target = match goal {
            Some(goal) => format!(
                "{what} within {:.0}% of {against} at c={FOCUS_CONCURRENCY} ({key} / {base} calls/s, same round)",
                (1.0 - goal) * 100.0
            ),
            None => format!(
                "{what} against {against} at c={FOCUS_CONCURRENCY} ({key} / {base} calls/s, same round)"
            ),
        };
        if let Some(why) = self.unavailable(key) {
            return format!(
                "| {target} | - | not available: {} |",
                why.replace('|', "/")
            );
        }
        let ratios = self.focus_ratios(key, base, |s| Some(s.calls_per_s));
        let Some(worst) = lowest(&ratios) else {
            return format!("| {target} | - | pending (row not measured) |");
        };
        let figure = format!(
            "worst {} ({}); {}",
            percent(worst.1),
            worst.0,
            per_item(&ratios, percent)
        );
        let status = match goal {
            Some(goal) => judged(
                worst.1 >= goal,
                ratios.len(),
                FOCUS_REVISIONS.len(),
                "revisions",
            ),
            None => "measured (no numeric target)".to_owned(),
        };
        format!("| {target} | {figure} | {status} |")
    }

    /// Per focus revision at c=32, the median of `figure(key) / figure(base)` within a round.
    fn focus_ratios(
        &self,
        key: &str,
        base: &str,
        figure: fn(&Sample) -> Option<f64>,
    ) -> Vec<(String, f64)> {
        self.results
            .iter()
            .filter(|((_, c), _)| *c == FOCUS_CONCURRENCY)
            .filter_map(|((revision, _), cell)| {
                Some(((*revision).to_owned(), same_round(cell, key, base, figure)?))
            })
            .collect()
    }

    /// `tools/call` through the proxy against the direct call (the memory row), same round,
    /// at c=32 on the focus revisions: at least 40%.
    fn proxy_target(&self) -> String {
        self.proxy_line(
            "`tools/call` through `mcp proxy` (HTTP upstream on loopback, both on core 0) at \
             least 40% of the direct call's calls/s at c=32 (ours-proxy / ours-memory, same round)",
            |s| Some(s.calls_per_s),
            |worst| worst >= 0.40,
            percent,
        )
    }

    /// The proxy's own CPU per call against our server's (the memory row), same round, at
    /// c=32 on the focus revisions: at most twice.
    fn proxy_cpu_target(&self) -> String {
        self.proxy_line(
            "`mcp proxy`'s own CPU per call at most 2x our server's at c=32 (ours-proxy / \
             ours-memory CPU time per call, same round)",
            |s| s.cpu_us_per_call,
            |worst| worst <= 2.0,
            |r| format!("{r:.2}x"),
        )
    }

    /// A target line of the proxy row: `figure` of ours-proxy against ours-memory, the median
    /// of the same-round ratios per focus revision; the worst is the one `met` likes least.
    fn proxy_line(
        &self,
        target: &str,
        figure: fn(&Sample) -> Option<f64>,
        met: fn(f64) -> bool,
        show: fn(f64) -> String,
    ) -> String {
        if let Some(why) = self.unavailable("ours-proxy") {
            return format!(
                "| {target} | - | not available: {} |",
                why.replace('|', "/")
            );
        }
        let ratios = self.focus_ratios("ours-proxy", "ours-memory", figure);
        let Some(worst) = ratios
            .iter()
            .find(|(_, r)| !met(*r))
            .or_else(|| ratios.first())
        else {
            return format!("| {target} | - | pending (row not measured) |");
        };
        let all_met = ratios.iter().all(|(_, r)| met(*r));
        let figure = format!(
            "{} ({}){}; {}",
            show(worst.1),
            worst.0,
            if all_met { "" } else { ", missed" },
            per_item(&ratios, show)
        );
        let status = judged(all_met, ratios.len(), FOCUS_REVISIONS.len(), "revisions");
        format!("| {target} | {figure} | {status} |")
    }

    /// The pushed ask answered through another worker on PostgreSQL: p50 under 5 ms.
    fn postgres_ask_target(&self) -> String {
        let target = "pushed ask answered through another worker on PostgreSQL: p50 < 5 ms";
        match self.asks.iter().find(|s| s.key == "ours-postgres") {
            Some(AskSample {
                p50_ms: Some(p50),
                p99_ms,
                errors,
                ..
            }) => format!(
                "| {target} | p50 {p50:.3} ms, p99 {} ms, {errors} error(s) | {} |",
                p99_ms.map_or_else(|| "-".to_owned(), |p| format!("{p:.3}")),
                if *p50 < 5.0 && *errors == 0 {
                    "met"
                } else {
                    "**missed**"
                }
            ),
            _ => format!("| {target} | - | pending (row not measured) |"),
        }
    }

    /// The session-scale measurement.
    fn scale_table(&self) -> String {
        let Some(scale) = self.scale else {
            return String::new();
        };
        format!(
            "### Session scale (our endpoint in process, memory store, one thread; 2025-11-25 `initialize`, median of batches)\n\n\
             | sessions held | microseconds per initialize |\n\
             | --: | --: |\n\
             | {} | {:.1} |\n\
             | {} | {:.1} |\n\n",
            thousands(scale.small as f64),
            scale.small_us,
            thousands(scale.large as f64),
            scale.large_us,
        )
    }

    /// `initialize` at 100,000 sessions against at 100.
    fn scale_target(&self) -> String {
        let target = "initialize at 100,000 sessions within 1.5x of at 100";
        let Some(scale) = self.scale else {
            return format!("| {target} | - | pending (not measured) |");
        };
        let ratio = scale.large_us / scale.small_us.max(f64::MIN_POSITIVE);
        let figure = format!(
            "{:.1} us at {} sessions, {:.1} us at {} ({ratio:.2}x)",
            scale.small_us,
            thousands(scale.small as f64),
            scale.large_us,
            thousands(scale.large as f64)
        );
        let status = if scale.large as usize >= SCALE_TARGET_SESSIONS {
            (if ratio <= 1.5 { "met" } else { "**missed**" }).to_owned()
        } else {
            format!(
                "not judged (the target is for {} sessions)",
                thousands(SCALE_TARGET_SESSIONS as f64)
            )
        };
        format!("| {target} | {figure} | {status} |")
    }

    /// Idle sessions on our server: extra RSS for the target's 10,000 sessions.
    fn idle_target(&self) -> String {
        let target = "10,000 idle legacy sessions <= 10 MB extra RSS";
        let Some(memory) = self.idle.iter().find(|s| s.key == "ours-memory") else {
            return format!("| {target} | - | pending (our server's row not measured) |");
        };
        let Some(per) = memory.bytes_per_session() else {
            return format!("| {target} | no session ids | **missed** |");
        };
        let extra = |s: &IdleSample| s.after_kib.saturating_sub(s.before_kib) as f64 * 1024.0;
        let mut figure = format!(
            "memory store: {:.1} MB extra over {} sessions ({} bytes per session)",
            extra(memory) / 1e6,
            thousands(memory.with_session_id as f64),
            thousands(per)
        );
        if let Some(redis) = self.idle.iter().find(|s| s.key == "ours-redis") {
            let _ = write!(
                figure,
                "; Redis store: {:.1} MB extra over {} sessions (the records live in Redis)",
                extra(redis) / 1e6,
                thousands(redis.with_session_id as f64)
            );
        }
        // A few sessions cost whole pages and allocator arenas: too few to project from.
        let status = if memory.with_session_id as usize >= IDLE_TARGET_SESSIONS {
            (if extra(memory) <= 10e6 && memory.errors == 0 {
                "met"
            } else {
                "**missed**"
            })
            .to_owned()
        } else {
            format!(
                "not judged (the target is for {} sessions)",
                thousands(IDLE_TARGET_SESSIONS as f64)
            )
        };
        format!("| {target} | {figure} | {status} |")
    }

    /// Our stdio pairings against the raw pipe; judged on our client with our server (what an
    /// application sees), the raw driver with our server shown beside it.
    fn stdio_target(&self) -> String {
        let target = "stdio >= 70% of the raw pipe";
        let shares = |key: &str| -> Vec<(String, f64)> {
            self.stdio
                .iter()
                .filter_map(|((revision, _), cell)| {
                    Some(((*revision).to_owned(), summarise(cell, key).of_floor?))
                })
                .collect()
        };
        let client = shares("ours-client-stdio");
        let server = shares("ours-stdio");
        let describe = |name: &str, v: &[(String, f64)]| {
            lowest(v).map(|w| {
                format!(
                    "{name}: lowest {} ({}); {}",
                    percent(w.1),
                    w.0,
                    per_item(v, percent)
                )
            })
        };
        let figure: Vec<String> = [
            describe("our client and server", &client),
            describe("raw driver and our server", &server),
        ]
        .into_iter()
        .flatten()
        .collect();
        let judged_on = if client.is_empty() { &server } else { &client };
        match lowest(judged_on) {
            None => format!("| {target} | - | pending (our stdio rows not measured) |"),
            Some(w) => {
                let mut status = judged(w.1 >= 0.70, judged_on.len(), REVISIONS.len(), "revisions");
                if client.is_empty() {
                    status.push_str(" (server side only: the client pairing did not run)");
                }
                format!("| {target} | {} | {status} |", figure.join(". "))
            }
        }
    }

    /// Our client against the raw hyper loop on the same echo floor.
    fn client_target(&self) -> String {
        let target = "our client >= 90% of the raw hyper client loop";
        let shares: Vec<(String, f64)> = self
            .client
            .iter()
            .filter_map(|((revision, c), cell)| {
                Some((
                    format!("{revision} c={c}"),
                    summarise(cell, "ours-client").of_floor?,
                ))
            })
            .collect();
        match lowest(&shares) {
            None => format!("| {target} | - | pending (client rows not run) |"),
            Some(w) => format!(
                "| {target} | lowest {} ({}); {} | {} |",
                percent(w.1),
                w.0,
                per_item(&shares, percent),
                judged(w.1 >= 0.90, shares.len(), REVISIONS.len() * 2, "cells")
            ),
        }
    }

    /// The pushed-ask latency (no numeric target).
    fn ask_target(&self) -> String {
        let target = "pushed ask answered through the hub (memory, Redis: the same worker; \
             PostgreSQL, SQLite: another worker): answer-to-result p50/p99";
        let figures: Vec<String> = self
            .asks
            .iter()
            .filter_map(|s| {
                Some(format!(
                    "{}: {:.3} / {:.3} ms",
                    s.key.trim_start_matches("ours-"),
                    s.p50_ms?,
                    s.p99_ms?
                ))
            })
            .collect();
        if figures.is_empty() {
            format!("| {target} | - | not measured (our server's rows not available) |")
        } else {
            format!(
                "| {target} | {} | measured (no numeric target) |",
                figures.join("; ")
            )
        }
    }

    /// The peers' shares of the floor, for the README's headline.
    fn headline(&self) -> String {
        let mut md = String::from(
            "## Headline ratios (share of the floor, median over revisions 2025-03-26 to 2026-07-28)\n\n",
        );
        for key in ROW_ORDER.iter().skip(1).filter(|k| !FOCUS_KEYS.contains(k)) {
            for &concurrency in &self.settings.concurrencies {
                let shares: Vec<f64> = self
                    .results
                    .iter()
                    .filter(|((revision, c), _)| *c == concurrency && *revision != LEGACY)
                    .filter_map(|(_, cell)| summarise(cell, key).of_floor)
                    .collect();
                if let Some(m) = median(shares) {
                    let _ = writeln!(
                        md,
                        "- {}, c={concurrency}: {:.0}% of the floor",
                        self.label(key),
                        m * 100.0
                    );
                }
            }
        }
        md.push('\n');
        md
    }

    /// Fails when the floor (HTTP or stdio), which must always work, had errors or no calls.
    fn check_floor(&self) -> Result<()> {
        for ((revision, concurrency), cell) in self.results.iter().chain(self.stdio) {
            let floor = summarise(cell, "floor");
            match floor.calls {
                Some((calls, ..)) if calls > 0.0 && floor.errors == 0 => {}
                _ => bail!(
                    "the floor failed on {revision} c={concurrency}: {} error(s), first: {}",
                    floor.errors,
                    floor.first_error.unwrap_or_default()
                ),
            }
        }
        Ok(())
    }
}

/// The lowest figure and what it belongs to.
fn lowest(figures: &[(String, f64)]) -> Option<&(String, f64)> {
    figures.iter().min_by(|a, b| a.1.total_cmp(&b.1))
}

/// `a 62%, b 55%, ...`
fn per_item(figures: &[(String, f64)], show: fn(f64) -> String) -> String {
    figures
        .iter()
        .map(|(name, v)| format!("{name} {}", show(*v)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// "met" or "**missed**"; a target met on fewer `what` than it names says so.
fn judged(ok: bool, measured: usize, wanted: usize, what: &str) -> String {
    match (ok, measured >= wanted) {
        (false, _) => "**missed**".to_owned(),
        (true, true) => "met".to_owned(),
        (true, false) => format!("met on the {measured} {what} measured (of {wanted})"),
    }
}

/// `key`'s calls/s over `reference`'s, taken within each round, then the median.
fn same_round_ratio(
    cell: &BTreeMap<&str, Vec<Option<Sample>>>,
    key: &str,
    reference: &str,
) -> Option<f64> {
    same_round(cell, key, reference, |s| Some(s.calls_per_s))
}

/// The median over rounds of `figure(key) / figure(reference)`, each ratio within a round.
fn same_round(
    cell: &BTreeMap<&str, Vec<Option<Sample>>>,
    key: &str,
    reference: &str,
    figure: impl Fn(&Sample) -> Option<f64>,
) -> Option<f64> {
    let (ours, theirs) = (cell.get(key)?, cell.get(reference)?);
    median(
        ours.iter()
            .zip(theirs)
            .filter_map(|(a, b)| {
                let (a, b) = (figure(a.as_ref()?)?, figure(b.as_ref()?)?);
                (b > 0.0).then(|| a / b)
            })
            .collect(),
    )
}

fn thousands(value: f64) -> String {
    let n = value.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub(crate) fn date() -> String {
    command_exists("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| "unknown".to_owned())
}

pub(crate) fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0]), Some(3.0));
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn thousands_separators() {
        for (value, text) in [
            (0.0, "0"),
            (999.4, "999"),
            (1000.0, "1,000"),
            (36_512.6, "36,513"),
            (1_234_567.0, "1,234,567"),
        ] {
            assert_eq!(thousands(value), text);
        }
    }

    fn sample(calls_per_s: f64) -> Option<Sample> {
        Some(Sample {
            calls_per_s,
            p50_ms: 0.1,
            p99_ms: 0.2,
            errors: 0,
            first_error: None,
            rss_mib: Some(4.0),
            cpu_us_per_call: None,
            upstream_cpu_us_per_call: None,
        })
    }

    #[test]
    fn the_floor_marks_a_run_noisy_when_slow_or_unsteady() {
        let cell = |floor: Vec<Option<Sample>>| {
            let mut cell = BTreeMap::new();
            cell.insert("floor", floor);
            cell.insert("ours-memory", vec![sample(1.0)]);
            cell
        };
        // Concurrency, the floor's rounds, words the reason holds (none: no reason).
        type Case = (u32, Vec<Option<Sample>>, &'static [&'static str]);
        let cases: [Case; 6] = [
            // Steady and at its level: nothing to say.
            (32, vec![sample(95e3), sample(100e3), sample(90e3)], &[]),
            // One slow round among steady ones.
            (
                32,
                vec![sample(95e3), sample(60e3), sample(100e3)],
                &["spread", "1.67x"],
            ),
            // Steady but slow.
            (
                32,
                vec![sample(50e3), sample(52e3), None],
                &["median", "55%"],
            ),
            // At c=1 only the spread counts: a single slow round says nothing.
            (1, vec![sample(9e3)], &[]),
            (1, vec![sample(6.5e3), sample(10e3)], &["spread", "1.54x"]),
            // No reference for other concurrencies, and steady.
            (8, vec![sample(10e3), sample(11e3)], &[]),
        ];
        for (concurrency, floor, expected) in cases {
            let mut results = Results::new();
            results.insert(("2025-11-25", concurrency), cell(floor));
            let reasons = floor_noise(&results);
            if expected.is_empty() {
                assert!(reasons.is_empty(), "{reasons:?}");
                continue;
            }
            assert_eq!(reasons.len(), 1, "{reasons:?}");
            assert!(reasons[0].starts_with(&format!("floor, 2025-11-25 c={concurrency}: ")));
            for word in expected {
                assert!(reasons[0].contains(word), "{word}: {reasons:?}");
            }
        }
    }

    #[test]
    fn ratios_are_taken_within_a_round() {
        // The floor swings between rounds; the peer tracks it at half its rate.
        let mut cell = BTreeMap::new();
        cell.insert("floor", vec![sample(100.0), sample(200.0), sample(50.0)]);
        cell.insert("tiny", vec![sample(50.0), sample(100.0), sample(25.0)]);
        cell.insert("rmcp-session", vec![sample(10.0), sample(20.0), None]);
        cell.insert(
            "rmcp-stateless",
            vec![sample(25.0), sample(10.0), sample(5.0)],
        );
        let tiny = summarise(&cell, "tiny");
        assert_eq!(tiny.of_floor, Some(0.5));
        assert_eq!(tiny.calls, Some((50.0, 25.0, 100.0)));
        // Per round: 50/25, 100/20, 25/5.
        assert_eq!(tiny.vs_rmcp, Some(5.0));
        let floor = summarise(&cell, "floor");
        assert_eq!(floor.of_floor, Some(1.0));
        assert!(summarise(&cell, "ours-memory").calls.is_none());
    }

    #[test]
    fn redis_ratio_is_taken_within_a_round() {
        let mut cell = BTreeMap::new();
        cell.insert("ours-memory", vec![sample(100.0), sample(200.0), None]);
        cell.insert(
            "ours-redis",
            vec![sample(90.0), sample(100.0), sample(80.0)],
        );
        // Rounds 1 and 2 only: 0.9 and 0.5.
        assert_eq!(
            same_round_ratio(&cell, "ours-redis", "ours-memory"),
            Some(0.7)
        );
        assert_eq!(same_round_ratio(&cell, "ours-redis", "floor"), None);
    }

    #[test]
    fn target_status() {
        assert_eq!(judged(true, 5, 5, "revisions"), "met");
        assert_eq!(judged(false, 2, 5, "revisions"), "**missed**");
        assert_eq!(
            judged(true, 3, 5, "revisions"),
            "met on the 3 revisions measured (of 5)"
        );
        let figures = vec![("a".to_owned(), 0.62), ("b".to_owned(), 0.555)];
        assert_eq!(lowest(&figures).map(|f| f.0.as_str()), Some("b"));
        assert_eq!(per_item(&figures, percent), "a 62%, b 56%");
    }

    #[test]
    fn settings_parse() {
        let args: Vec<String> = [
            "--quick",
            "--rounds",
            "2",
            "--revisions",
            "2025-11-25,2026-07-28",
            "--concurrency",
            "1,8",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let settings = Settings::parse(&args).expect("valid");
        assert!(settings.quick);
        assert_eq!(settings.rounds, 2);
        assert_eq!(settings.revisions, vec!["2025-11-25", "2026-07-28"]);
        assert_eq!(settings.concurrencies, vec![1, 8]);
        assert_eq!(settings.measure, 0.5);
        let quick = Settings::parse(&["--quick".to_owned()]).expect("valid");
        assert_eq!(quick.revisions, QUICK_REVISIONS.to_vec());
        assert_eq!(quick.concurrencies, vec![32]);
        let full = Settings::parse(&[]).expect("valid");
        assert_eq!(full.revisions, REVISIONS.to_vec());
        assert_eq!(full.sessions, IDLE_TARGET_SESSIONS);
        for bad in [
            &["--rounds", "0"][..],
            &["--revisions", "2025-01-01"],
            &["--measure"],
            &["--what"],
        ] {
            let args: Vec<String> = bad.iter().map(|s| (*s).to_owned()).collect();
            assert!(Settings::parse(&args).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn endpoints_per_row() {
        let bin = Path::new("/bin");
        let floor = RowSpec::floor(bin);
        let rmcp = RowSpec::rmcp(bin, RmcpMode::Stateless);
        assert_eq!(floor.endpoint(LEGACY), Some(("/sse", "http+sse")));
        assert_eq!(floor.endpoint("2026-07-28"), Some(("/mcp", "streamable")));
        assert_eq!(rmcp.endpoint(LEGACY), None);
        assert_eq!(rmcp.endpoint("2025-03-26"), Some(("/mcp", "streamable")));
        assert_eq!(
            RowSpec::ours(bin, Store::Redis).command_line(),
            "taskset -c 0 mcp-bench-server --store redis --port PORT --redis-url redis://127.0.0.1:RPORT"
        );
    }

    #[test]
    fn cpu_time_is_read_from_proc() {
        let pid = std::process::id();
        let before = cpu_seconds(pid).unwrap();
        // Spend some CPU time: the reading may not go back.
        let mut x = 0u64;
        for i in 0..50_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        assert!(x != 1);
        assert!(cpu_seconds(pid).unwrap() > before);
        assert_eq!(cpu_seconds(u32::MAX), None);
    }

    #[test]
    fn target_rows() {
        let bin = Path::new("/bin");
        let postgres = RowSpec::ours(
            bin,
            Store::Postgres("postgres://user:secret@db:5432/test".to_owned()),
        );
        let sqlite = RowSpec::ours(bin, Store::Sqlite(PathBuf::from("/tmp/x/hub.sqlite")));
        let jwt = RowSpec::jwt(bin);
        // The report names neither the database URL nor a local path.
        assert_eq!(
            postgres.command_line(),
            "taskset -c 0 mcp-bench-server --hub $MCP_POSTGRES_URL --port PORT"
        );
        assert_eq!(
            sqlite.command_line(),
            "taskset -c 0 mcp-bench-server --hub sqlite:FILE --port PORT"
        );
        assert_eq!(
            jwt.command_line(),
            "taskset -c 0 mcp-bench-server --store memory --port PORT --auth-jwt TOKEN_FILE"
        );
        assert_eq!(
            RowSpec::dpop(bin).command_line(),
            "taskset -c 0 mcp-bench-server --store memory --port PORT --auth-dpop TOKEN_FILE"
        );
        assert_eq!(
            RowSpec::proxy(bin).command_line(),
            "taskset -c 0 mcp proxy --upstream http://127.0.0.1:UPORT/mcp --addr 127.0.0.1:PORT \
             (upstream: taskset -c 0 mcp-bench-server --store memory --port UPORT)"
        );
        assert_eq!(
            RowSpec::traced(bin).command_line(),
            format!(
                "taskset -c 0 mcp-bench-server --store memory --port PORT (load: mcp-load \
                 --traceparent {BENCH_TRACEPARENT})"
            )
        );
        assert_eq!(
            RowSpec::otel(bin).command_line(),
            format!(
                "taskset -c 0 mcp-bench-server --store memory --port PORT --otlp-endpoint \
                 http://127.0.0.1:SPORT (sink: taskset -c 0 mcp-floor --body '' --port SPORT) \
                 (load: mcp-load --traceparent {BENCH_TRACEPARENT})"
            )
        );
        assert_eq!(postgres.args[1], "postgres://user:secret@db:5432/test");
        assert_eq!(sqlite.args[1], "sqlite:/tmp/x/hub.sqlite");
        assert_eq!(
            (postgres.ask, sqlite.ask, jwt.ask),
            (AskMode::OtherWorker, AskMode::OtherWorker, AskMode::None)
        );
        // Target rows: c=32 on their revisions only; the first one alone with --quick.
        for row in [&postgres, &sqlite, &jwt] {
            assert!(row.measured_in("2025-11-25", 32, true));
            assert!(!row.measured_in("2026-07-28", 32, true));
            assert!(row.measured_in("2026-07-28", 32, false));
            assert!(!row.measured_in("2025-11-25", 1, false));
            assert!(!row.measured_in(LEGACY, 32, false));
        }
        let memory = RowSpec::ours(bin, Store::Memory);
        assert!(memory.measured_in(LEGACY, 1, true));
        assert_eq!(memory.ask, AskMode::SameWorker);
        let rows = Settings::parse(&["--rows".to_owned(), "ours-jwt,ours-sqlite".to_owned()])
            .expect("valid");
        assert_eq!(
            rows.rows,
            Some(vec!["ours-jwt".to_owned(), "ours-sqlite".to_owned()])
        );
        assert!(Settings::parse(&["--rows".to_owned(), "ours-nope".to_owned()]).is_err());
        let base = Settings::parse(&[
            "--base-server".to_owned(),
            "old/mcp-bench-server".to_owned(),
        ])
        .unwrap();
        assert_eq!(
            base.base_server,
            Some(PathBuf::from("old/mcp-bench-server"))
        );
        let row = RowSpec::base(Path::new("old/mcp-bench-server"));
        assert_eq!(row.key, "base-memory");
        assert_eq!(row.program, Path::new("old/mcp-bench-server"));
        assert_eq!(row.args, ["--store", "memory"]);
    }
}
