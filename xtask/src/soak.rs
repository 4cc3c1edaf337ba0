//! `cargo xtask soak [--quick] [--seconds N] [--enforce] [--attacks a,b] [--out PATH]`: the soak
//! and abuse harness (issue 27).
//!
//! 1. Builds `mcp-soak` (package `mcp-bench`), `mcp-demo` and `mcp-stdio-demo` optimized, in the
//!    one release build it shares with `cargo xtask bench` (`build::release`; the `release`
//!    profile, or with `--quick` the debug binaries of the test build).
//! 2. Runs every attack as its own `mcp-soak --attack NAME` process (pinned to core 1 with
//!    `taskset` when there are two cores; it pins the servers it starts to core 0). `mcp-soak`
//!    starts fresh server processes for the attack (and its own `redis-server` on a free
//!    loopback port for the Redis attacks, never the shared one) and kills them on every exit
//!    path; this task kills `mcp-soak` itself if it outlives its time.
//! 3. Judges each attack against the bounds of issue 27 (RSS at most 64 MiB above idle, the
//!    probe's p99 under 10 ms with no failed call, no message lost where the design promises
//!    delivery, no connection held past the server's timeouts by the connection floods) and
//!    writes the `## Soak` section of `docs/reliability.md` between the
//!    `<!-- soak:begin -->` and `<!-- soak:end -->` markers, keeping every other section
//!    (`--quick` writes `target/soak/reliability-quick.md` instead, and a run of some of the
//!    attacks, `--attacks a,b`, `target/soak/reliability-partial.md`).
//!
//! A missed bound fails the task only with `--enforce`; an attack that could not run at all
//! (the harness broke) always fails it. `--quick` (CI): 5 s per attack, smaller floods and shorter progress calls; the
//! full run: 30 s per attack. The connection floods are held past the longest of the server's
//! timeouts (read from the source's `DEFAULT_*` constants), at most 90 s.

use std::{
    fmt::Write as _,
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::bench::{command_exists, cpu_model, date, loadavg, target_dir};

/// The attacks, in order, as `mcp-soak` names them.
const ATTACKS: [&str; 12] = [
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

/// Issue 27's bounds.
const RSS_BOUND_MIB: f64 = 64.0;
const P99_BOUND_MS: f64 = 10.0;

const BEGIN: &str = "<!-- soak:begin -->";
const END: &str = "<!-- soak:end -->";

struct Settings {
    quick: bool,
    seconds: f64,
    enforce: bool,
    attacks: Vec<String>,
    out: Option<PathBuf>,
}

impl Settings {
    fn parse(args: &[String]) -> Result<Self> {
        let quick = args.iter().any(|a| a == "--quick");
        let mut settings = Self {
            quick,
            seconds: if quick { 5.0 } else { 30.0 },
            enforce: false,
            attacks: ATTACKS.iter().map(|a| (*a).to_owned()).collect(),
            out: None,
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = || {
                args.next()
                    .cloned()
                    .with_context(|| format!("{arg} needs a value"))
            };
            match arg.as_str() {
                "--quick" => {}
                "--enforce" => settings.enforce = true,
                "--seconds" => {
                    let v = value()?;
                    settings.seconds = v
                        .parse::<f64>()
                        .ok()
                        .filter(|s| s.is_finite() && *s >= 1.0 && *s <= 600.0)
                        .with_context(|| format!("--seconds: `{v}` is not 1-600 seconds"))?;
                }
                "--attacks" => {
                    let v = value()?;
                    let chosen: Vec<String> = v.split(',').map(str::to_owned).collect();
                    if let Some(bad) = chosen.iter().find(|a| !ATTACKS.contains(&a.as_str())) {
                        bail!(
                            "--attacks: unknown attack `{bad}` (known: {})",
                            ATTACKS.join(", ")
                        );
                    }
                    settings.attacks = chosen;
                }
                "--out" => settings.out = Some(PathBuf::from(value()?)),
                other => bail!(
                    "unknown option `{other}`; usage: cargo xtask soak [--quick] [--seconds N] [--enforce] [--attacks a,b] [--out PATH]"
                ),
            }
        }
        Ok(settings)
    }
}

/// One attack's row: its report, or why it has none.
struct Row {
    attack: String,
    report: Result<Value, String>,
}

/// Runs the harness.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let settings = Settings::parse(args)?;
    let root = crate::workspace_root();
    let target = target_dir(&root)?;
    let started = Instant::now();
    let profile = crate::build::Release::for_run(settings.quick);
    crate::build::release(profile)?;
    let build = started.elapsed();
    let bin = target.join(profile.profile());
    let log_dir = target.join("soak-logs");
    fs::create_dir_all(&log_dir).with_context(|| format!("creating {}", log_dir.display()))?;
    let limits = limits(&root);
    let pin = command_exists("taskset", &["--version"]).is_some()
        && thread::available_parallelism().map_or(1, usize::from) >= 2;
    let redis = command_exists("redis-server", &["--version"]).is_some();
    let load_before = loadavg();
    let measuring = Instant::now();
    let mut rows = Vec::new();
    for attack in &settings.attacks {
        let report = if !redis && (attack == "redis-restart" || attack == "worker-kill") {
            Err("skipped: redis-server is not installed".to_owned())
        } else {
            let hold = hold_seconds(&limits, settings.seconds, attack);
            run_attack(&bin, &log_dir, attack, &settings, hold, pin)
        };
        match &report {
            Ok(r) => eprintln!("xtask soak: {attack}: {}", verdict(r).1),
            Err(why) => eprintln!("xtask soak: {attack}: {why}"),
        }
        rows.push(Row {
            attack: attack.clone(),
            report,
        });
    }
    let wall = measuring.elapsed();
    // The raw reports, kept whatever happens to the Markdown.
    let raw: String = rows
        .iter()
        .map(|r| match &r.report {
            Ok(report) => format!("{report}\n"),
            Err(why) => format!(
                "{}\n",
                serde_json::json!({"attack": r.attack, "failed": why})
            ),
        })
        .collect();
    let raw_path = log_dir.join("reports.jsonl");
    if let Err(error) = fs::write(&raw_path, raw) {
        eprintln!("xtask soak: could not keep {}: {error}", raw_path.display());
    }
    let holds = (
        hold_seconds(&limits, settings.seconds, "idle-connections"),
        hold_seconds(&limits, settings.seconds, "slowloris"),
    );
    let section = render(
        &settings,
        &rows,
        &limits,
        holds,
        pin,
        &load_before,
        wall,
        &root,
    );
    // Only a full run of every attack replaces the published section; a quick run or a
    // chosen few attacks go to `target/soak`.
    let every_attack = settings.attacks.len() == ATTACKS.len();
    let out = settings.out.clone().unwrap_or_else(|| {
        if settings.quick {
            target.join("soak").join("reliability-quick.md")
        } else if !every_attack {
            target.join("soak").join("reliability-partial.md")
        } else {
            root.join("docs").join("reliability.md")
        }
    });
    write_section(&out, &section)?;
    eprintln!(
        "xtask soak: wrote {} (build {:.0} s, attacks {:.0} s)",
        out.display(),
        build.as_secs_f64(),
        wall.as_secs_f64()
    );
    let broken: Vec<&str> = rows
        .iter()
        .filter(|r| matches!(&r.report, Err(why) if !why.starts_with("skipped")))
        .map(|r| r.attack.as_str())
        .collect();
    if !broken.is_empty() {
        bail!("attack(s) could not run: {}", broken.join(", "));
    }
    let missed: Vec<&str> = rows
        .iter()
        .filter(|r| r.report.as_ref().is_ok_and(|r| !verdict(r).0))
        .map(|r| r.attack.as_str())
        .collect();
    if !missed.is_empty() {
        if settings.enforce {
            bail!("bound(s) missed under: {}", missed.join(", "));
        }
        eprintln!(
            "xtask soak: bound(s) missed under {} (not enforced; pass --enforce to fail)",
            missed.join(", ")
        );
    }
    Ok(())
}

/// Runs one `mcp-soak`; its JSON report. It is killed if it outlives its time.
fn run_attack(
    bin: &Path,
    log_dir: &Path,
    attack: &str,
    settings: &Settings,
    hold: f64,
    pin: bool,
) -> Result<Value, String> {
    let log_path = log_dir.join(format!("{attack}.log"));
    let log = fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let soak = bin.join("mcp-soak");
    let mut command = if pin {
        let mut c = Command::new("taskset");
        c.args(["-c", "1"]).arg(&soak);
        c
    } else {
        Command::new(&soak)
    };
    command
        .args(["--attack", attack])
        .arg("--demo")
        .arg(bin.join("mcp-demo"))
        .arg("--stdio-demo")
        .arg(bin.join("mcp-stdio-demo"))
        .args(["--seconds", &settings.seconds.to_string()])
        .args(["--hold", &hold.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log);
    if settings.quick {
        command.arg("--quick");
    }
    if pin {
        command.arg("--pin");
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", soak.display()))?;
    // Setup, drain (20 s at most per stream), the fresh-client check: generous, but bounded.
    let limit = Duration::from_secs_f64(settings.seconds.max(hold) * 2.0 + 120.0);
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() > deadline => {
                // mcp-soak kills its servers when it exits, but not when it is killed: stop
                // them first, by their ids.
                for pid in descendants(child.id()) {
                    let _ = Command::new("kill")
                        .args(["-s", "KILL", &pid.to_string()])
                        .status();
                }
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("did not finish within {limit:?}; killed"));
            }
            Ok(None) => thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let mut stdout = String::new();
    if let Some(mut out) = child.stdout.take() {
        use std::io::Read as _;
        let _ = out.read_to_string(&mut stdout);
    }
    if !status.success() {
        let said = fs::read_to_string(&log_path).unwrap_or_default();
        let last = said.lines().last().unwrap_or("").trim().to_owned();
        return Err(format!("mcp-soak failed ({status}): {last}"));
    }
    serde_json::from_str(stdout.trim()).map_err(|e| format!("unreadable report `{stdout}`: {e}"))
}

/// Every process below `root` (children first found, then theirs), from `/proc`.
fn descendants(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            // The fields after the command name (which may hold spaces) start after ')'.
            let ppid = fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    stat.rsplit_once(')')
                        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                        .and_then(|p| p.parse::<u32>().ok())
                });
            if let Some(ppid) = ppid {
                parents.push((pid, ppid));
            }
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// A limit in force: a `DEFAULT_*` (or `MAX_*`) constant of the server, its value and its doc.
struct Limit {
    name: String,
    value: String,
    doc: String,
    file: String,
}

/// The server's documented defaults, read from its source (the demo uses the defaults: its
/// `HttpConfig::default()` and the builder's defaults).
fn limits(root: &Path) -> Vec<Limit> {
    let mut files = Vec::new();
    collect_rs(&root.join("mcp-server").join("src"), &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        let rel = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .to_string_lossy()
            .into_owned();
        if rel.contains("/bin/") || rel.contains("/auth") {
            continue;
        }
        let mut doc = Vec::new();
        for line in text.lines() {
            let trimmed = line.trim();
            if let Some(d) = trimmed.strip_prefix("///") {
                doc.push(d.trim().to_owned());
                continue;
            }
            let decl = trimmed
                .strip_prefix("pub const ")
                .or_else(|| trimmed.strip_prefix("pub(crate) const "));
            if let Some(decl) = decl
                && let Some((name, rest)) = decl.split_once(':')
                && (name.starts_with("DEFAULT_") || name.starts_with("MAX_"))
                && let Some((_, value)) = rest.split_once('=')
            {
                let first = doc
                    .join(" ")
                    .split(". ")
                    .next()
                    .unwrap_or("")
                    .trim_end_matches('.')
                    .to_owned();
                out.push(Limit {
                    name: name.trim().to_owned(),
                    value: value.trim().trim_end_matches(';').to_owned(),
                    doc: first,
                    file: rel.clone(),
                });
            }
            if !trimmed.starts_with("#[") {
                doc.clear();
            }
        }
    }
    out
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Seconds in a `Duration::from_secs(N)` / `from_millis(N)` expression.
fn duration_seconds(value: &str) -> Option<f64> {
    let number = |prefix: &str| {
        value
            .split_once(prefix)
            .and_then(|(_, rest)| rest.split(')').next())
            .and_then(|n| n.replace('_', "").trim().parse::<f64>().ok())
    };
    number("from_secs(").or_else(|| number("from_millis(").map(|ms| ms / 1000.0))
}

/// How long a connection flood is held: 5 s past the timeout that should close it (the
/// header-read timeout for slowloris; for idle sockets the longest connection timeout in force:
/// header read, idle, keep-alive), at least the attack time, at most 90 s.
fn hold_seconds(limits: &[Limit], seconds: f64, attack: &str) -> f64 {
    let timeout = |name: &str| {
        limits
            .iter()
            .filter(|l| l.name.contains(name))
            .filter_map(|l| duration_seconds(&l.value))
            .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))))
    };
    let header = timeout("HEADER_READ_TIMEOUT");
    let longest = ["TIMEOUT", "KEEP_ALIVE", "IDLE"]
        .iter()
        .filter_map(|n| timeout(n))
        .fold(0.0_f64, f64::max);
    let wait = match (attack, header) {
        ("slowloris", Some(header)) => header,
        _ => longest,
    };
    (wait + 5.0).max(seconds).min(90.0)
}

fn number(report: &Value, key: &str) -> Option<f64> {
    report[key].as_f64()
}

fn mib(kib: f64) -> f64 {
    kib / 1024.0
}

/// Whether the attack's row meets every bound, and the verdict's text.
fn verdict(report: &Value) -> (bool, String) {
    let mut missed = Vec::new();
    let idle = number(report, "idle_rss_kib").unwrap_or(0.0);
    let peak = number(report, "peak_rss_kib").unwrap_or(0.0);
    if mib(peak - idle) > RSS_BOUND_MIB {
        missed.push(format!("RSS +{:.0} MiB", mib(peak - idle)));
    }
    if let Some(p99) = number(report, "probe_p99_ms")
        && p99 >= P99_BOUND_MS
    {
        missed.push(format!("p99 {p99:.1} ms"));
    }
    if let Some(failures) = report["probe_failures"].as_u64()
        && failures > 0
    {
        missed.push(format!("{failures} probe call(s) failed"));
    }
    if let Some(lost) = report["lost"].as_u64()
        && lost > 0
    {
        missed.push(format!("{lost} lost"));
    }
    let attack = report["attack"].as_str().unwrap_or("");
    if matches!(attack, "idle-connections" | "slowloris")
        && let Some(held) = report["connections_held"].as_u64()
        && held > 0
    {
        missed.push(format!("{held} connection(s) held past the timeouts"));
    }
    if let Some(error) = report["error"].as_str() {
        missed.push(format!("the attack stopped early ({error})"));
    }
    if report["fresh_client"] == Value::Bool(false) {
        // A session flood ends only the flooding address's own idle sessions (issue 47), so a
        // new client is served after it like after every other attack.
        missed.push("a new client was refused".to_owned());
    }
    if missed.is_empty() {
        (true, "met".to_owned())
    } else {
        (false, format!("missed: {}", missed.join(", ")))
    }
}

fn cell(value: Option<String>) -> String {
    value.unwrap_or_else(|| "-".to_owned())
}

fn count(report: &Value, key: &str) -> String {
    cell(report[key].as_u64().map(thousands))
}

fn thousands(n: u64) -> String {
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

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(root)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

#[allow(clippy::too_many_arguments)]
fn render(
    settings: &Settings,
    rows: &[Row],
    limits: &[Limit],
    holds: (f64, f64),
    pin: bool,
    load_before: &str,
    wall: Duration,
    root: &Path,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Soak\n");
    let _ = writeln!(
        s,
        "Generated by `cargo xtask soak{}` (issue 27): every attack against a fresh release `mcp-demo` (memory store unless the attack needs Redis), on 127.0.0.1 only.\n",
        if settings.quick { " --quick" } else { "" }
    );
    let commit =
        git(root, &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    let dirty = git(root, &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|s| !s.is_empty());
    let _ = writeln!(s, "| | |\n| --- | --- |");
    let _ = writeln!(s, "| date | {} |", date());
    let _ = writeln!(
        s,
        "| code | {commit}{} |",
        if dirty {
            " (with uncommitted changes in the work tree)"
        } else {
            ""
        }
    );
    let _ = writeln!(s, "| CPU | {} |", cpu_model());
    let _ = writeln!(
        s,
        "| cores | {} |",
        thread::available_parallelism().map_or(1, usize::from)
    );
    let _ = writeln!(
        s,
        "| load average before / after | {load_before} / {} |",
        loadavg()
    );
    let _ = writeln!(
        s,
        "| settings | {:.0} s per attack{}, idle connections held {:.0} s, slowloris {:.0} s, {} |",
        settings.seconds,
        if settings.quick {
            " (--quick: smaller floods, shorter progress calls)"
        } else {
            ""
        },
        holds.0,
        holds.1,
        if pin {
            "servers pinned to core 0, mcp-soak (attacker and probe) to core 1"
        } else {
            "not pinned"
        }
    );
    let _ = writeln!(s, "| wall time | {:.0} s |\n", wall.as_secs_f64());

    let _ = writeln!(s, "### Bounds\n");
    let _ = writeln!(
        s,
        "- RSS: the peak (`VmRSS` sampled every 50 ms) at most {RSS_BOUND_MIB:.0} MiB above the idle RSS measured just before the attack."
    );
    let _ = writeln!(
        s,
        "- Other clients: a probe on its own thread, connection and session (2025-11-25) calls `tools/call add` every 5 ms throughout; its p99 must stay under {P99_BOUND_MS:.0} ms with no failed call (2 s timeout), and a new client (new connection, `initialize`, one call) must be served at the end. Under `redis-restart` the same bound holds: the probe's session is served from the worker's copy while Redis is away (`HttpConfig::session_cache`)."
    );
    let _ = writeln!(
        s,
        "- Messages lost must be 0 where the design promises delivery: results (never dropped; progress and log notifications are lossy by design and not counted), a pushed question's call finishing after its answer, and notifications replayed by `Last-Event-ID` on another worker."
    );
    let _ = writeln!(
        s,
        "- Connection floods (idle sockets, slowloris): no connection still held after the server's timeouts.\n"
    );

    let _ = writeln!(s, "### Results\n");
    let _ = writeln!(
        s,
        "| attack | duration s | idle RSS MiB | peak above idle MiB | bound MiB | connections held / opened | sessions | probe p50 / p99 / max ms | probe failures | lost / promised | verdict |"
    );
    let _ = writeln!(
        s,
        "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --- |"
    );
    for row in rows {
        match &row.report {
            Ok(r) => {
                let idle = number(r, "idle_rss_kib").unwrap_or(0.0);
                let peak = number(r, "peak_rss_kib").unwrap_or(0.0);
                let held = match (
                    r["connections_held"].as_u64(),
                    r["connections_opened"].as_u64(),
                ) {
                    (Some(h), Some(o)) => format!("{} / {}", thousands(h), thousands(o)),
                    (None, Some(o)) => format!("- / {}", thousands(o)),
                    _ => "-".to_owned(),
                };
                let probe = match (
                    number(r, "probe_p50_ms"),
                    number(r, "probe_p99_ms"),
                    number(r, "probe_max_ms"),
                ) {
                    (Some(a), Some(b), Some(c)) => format!("{a:.2} / {b:.2} / {c:.1}"),
                    _ => "n/a (no other clients)".to_owned(),
                };
                let lost = match (r["lost"].as_u64(), r["expected"].as_u64()) {
                    (Some(l), Some(e)) => format!("{} / {}", thousands(l), thousands(e)),
                    _ => "-".to_owned(),
                };
                let failures = if r["probe_p50_ms"].is_null() {
                    "-".to_owned()
                } else {
                    count(r, "probe_failures")
                };
                let _ = writeln!(
                    s,
                    "| `{}` | {:.1} | {:.1} | {:.1} | {RSS_BOUND_MIB:.0} | {held} | {} | {probe} | {failures} | {lost} | {} |",
                    row.attack,
                    number(r, "seconds").unwrap_or(0.0),
                    mib(idle),
                    mib(peak - idle),
                    count(r, "sessions"),
                    verdict(r).1
                );
            }
            Err(why) => {
                let _ = writeln!(
                    s,
                    "| `{}` | | | | | | | | | | {} |",
                    row.attack,
                    why.replace('|', "/")
                );
            }
        }
    }
    let _ = writeln!(s, "\n### What each attack did\n");
    for row in rows {
        match &row.report {
            Ok(r) => {
                let mut line = format!("- `{}`:", row.attack);
                if let Some(what) = r["what"].as_str().filter(|w| !w.is_empty()) {
                    let _ = write!(line, " {what}.");
                }
                if let Some(error) = r["error"].as_str() {
                    let _ = write!(line, " The attack stopped early: {error}.");
                }
                if let Some(notes) = r["notes"].as_array() {
                    for note in notes.iter().filter_map(Value::as_str) {
                        let _ = write!(line, " {}.", note.trim_end_matches('.').replace('|', "/"));
                    }
                }
                if let Some(error) = r["probe_first_error"].as_str() {
                    let _ = write!(line, " First probe failure: {error}.");
                }
                if r["fresh_client"] == Value::Bool(false) {
                    line.push_str(" A new client was not served at the end.");
                }
                let _ = writeln!(s, "{line}");
            }
            Err(why) => {
                let _ = writeln!(s, "- `{}`: {why}.", row.attack);
            }
        }
    }
    let _ = writeln!(s, "\n### Limits in force\n");
    let _ = writeln!(
        s,
        "The demo runs with the defaults: `HttpConfig::default()`, the `ServerBuilder` defaults and (stdio) `StdioConfig::default()`. These are the `DEFAULT_*` and `MAX_*` constants in `mcp-server/src` when the run was made:\n"
    );
    if limits.is_empty() {
        let _ = writeln!(s, "(none found)");
    } else {
        let _ = writeln!(
            s,
            "| constant | value | where | what |\n| --- | --- | --- | --- |"
        );
        for l in limits {
            let _ = writeln!(
                s,
                "| `{}` | `{}` | `{}` | {} |",
                l.name,
                l.value,
                l.file,
                l.doc.replace('|', "/")
            );
        }
    }
    let _ = writeln!(
        s,
        "\nRun it again with `cargo xtask soak` (30 s per attack; `--seconds N` to change it), or `cargo xtask soak --quick` (CI: 5 s per attack, smaller floods, progress calls of 1,000 steps, writes `target/soak/reliability-quick.md`); `--attacks a,b` runs some of them (and writes `target/soak/reliability-partial.md`); `--enforce` fails the task when a bound is missed."
    );
    s
}

/// Replaces the soak section of `path` (between the markers), keeping everything else; adds
/// it at the end when the markers are missing, and creates the file when it is.
fn write_section(path: &Path, section: &str) -> Result<()> {
    let block = format!("{BEGIN}\n{section}{END}\n");
    let existing = fs::read_to_string(path).unwrap_or_default();
    let text = match (existing.find(BEGIN), existing.find(END)) {
        (Some(begin), Some(end)) if end > begin => {
            let after = &existing[end + END.len()..];
            let after = after.strip_prefix('\n').unwrap_or(after);
            format!("{}{block}{after}", &existing[..begin])
        }
        _ if existing.trim().is_empty() => format!("# Reliability\n\n{block}"),
        _ => format!("{}\n\n{block}", existing.trim_end()),
    };
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    // Written beside it and renamed, so a failed write (a full disk) never truncates the file
    // and the other sections with it.
    let partial = path.with_extension("md.partial");
    fs::write(&partial, text).with_context(|| format!("writing {}", partial.display()))?;
    fs::rename(&partial, path).with_context(|| format!("replacing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_replaces_only_its_markers() {
        let dir = std::env::temp_dir().join(format!("xtask-soak-{}", std::process::id()));
        let path = dir.join("reliability.md");
        let _ = fs::remove_dir_all(&dir);
        write_section(&path, "## Soak\none\n").unwrap();
        let first = fs::read_to_string(&path).unwrap();
        assert!(first.starts_with("# Reliability\n"));
        let with_other = format!("{first}\n## Fuzzing\nkept\n");
        fs::write(&path, with_other).unwrap();
        write_section(&path, "## Soak\ntwo\n").unwrap();
        let second = fs::read_to_string(&path).unwrap();
        assert!(second.contains("two") && !second.contains("one"));
        assert!(second.contains("## Fuzzing\nkept"));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn durations_are_read() {
        assert_eq!(duration_seconds("Duration::from_secs(15)"), Some(15.0));
        assert_eq!(duration_seconds("Duration::from_millis(2_500)"), Some(2.5));
        assert_eq!(duration_seconds("4 * 1024"), None);
    }

    #[test]
    fn verdicts() {
        let ok = serde_json::json!({"attack": "baseline", "idle_rss_kib": 10240, "peak_rss_kib": 12288,
            "probe_p99_ms": 1.0, "probe_failures": 0, "fresh_client": true});
        assert!(verdict(&ok).0);
        let bad = serde_json::json!({"attack": "slowloris", "idle_rss_kib": 10240, "peak_rss_kib": 90000,
            "probe_p99_ms": 12.0, "probe_failures": 0, "connections_held": 3, "lost": 1});
        let (met, text) = verdict(&bad);
        assert!(!met);
        assert!(
            text.contains("RSS")
                && text.contains("p99")
                && text.contains("held")
                && text.contains("lost")
        );
        // A backend outage is held to the same bound.
        let outage = serde_json::json!({"attack": "redis-restart", "idle_rss_kib": 10240,
            "peak_rss_kib": 12288, "probe_p99_ms": 900.0, "probe_max_ms": 1200.0,
            "probe_failures": 1, "lost": 0, "fresh_client": true});
        assert!(!verdict(&outage).0);
    }
}
