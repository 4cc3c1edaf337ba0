//! `mcp bench`: a load tester for any MCP server, on any revision and transport.
//!
//! The server is driven through `mcp-client`, connected as every other command connects
//! (`--revision`, `--transport`, `-H`, `--cacert`, OAuth, `--stdio CMD`): `--sessions K`
//! clients (one by default), shared by `--concurrency N` callers, caller `i` on session
//! `i mod K`. Each caller makes one call at a time (the tool with its arguments, or a resource
//! read) and checks every reply. The callers run for `--warmup` seconds (not counted), then for
//! `--duration` seconds or until `--count` calls have been made. Each call is bounded by
//! `--call-timeout`.
//!
//! What is counted: a call is made in the measured phase and, with `--duration`, answered
//! before it ends (the calls in flight at the end are dropped, which cancels them on the
//! server). Latency percentiles are of the calls that succeeded, from a fixed-memory histogram
//! ([`histogram`]); throughput is the successful calls per measured second. Failed calls are
//! counted by kind ([`check::Failure`]).
//!
//! The clients of a run differ from `mcp call`'s in four ways, so that the server is measured
//! as it answers: a rate-limited call is not retried (it counts as `rate limited`), the
//! 2026-07-28 result cache is off (every read reaches the server), the server's log messages
//! are not shown, and its questions are answered from `--answer` only, never prompted (a
//! question without an answer fails its call).

mod check;
mod histogram;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use mcp_client::{Client, ClientBuilder, RateLimitRetry};
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::args::{Sources, canned_answer, tool_arguments};
use crate::ask::Asker;
use crate::cli::{BenchArgs, Global, TransportChoice};
use crate::connect::{Session, Target};
use crate::error::CliError;
use crate::interrupt::Interrupt;
use crate::output::{print, print_json, text_of};

use check::{Expect, Failure};
use histogram::Histogram;

/// The most callers one run may have (`--concurrency`).
pub(crate) const MAX_CONCURRENCY: usize = 1024;

/// The most sessions (clients; for stdio, child processes) one run may open (`--sessions`).
pub(crate) const MAX_SESSIONS: usize = 64;

/// The most kinds of error the report tells apart; the calls failing in any further kind (a
/// server answering with ever new JSON-RPC codes) are counted together as `other`.
const MAX_ERROR_KINDS: usize = 32;

/// How often the progress line is redrawn on a terminal.
const REDRAW: Duration = Duration::from_millis(250);

/// How often a progress line is printed when stderr is not a terminal (`--progress`).
const PROGRESS_LINE: Duration = Duration::from_secs(1);

/// What each call does.
#[derive(Debug)]
enum Operation {
    /// `tools/call` of this tool with these arguments.
    Tool { name: String, arguments: Value },
    /// `resources/read` of this URI.
    Read { uri: String },
}

impl Operation {
    async fn call(&self, client: &Client) -> Result<Value, mcp_client::Error> {
        match self {
            Self::Tool { name, arguments } => client.call_tool(name, arguments).await,
            Self::Read { uri } => client.read_resource(uri).await,
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Tool { name, .. } => format!("tools/call {name:?}"),
            Self::Read { uri } => format!("resources/read {uri:?}"),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Self::Tool { name, arguments } => {
                json!({"method": "tools/call", "tool": name, "arguments": arguments})
            }
            Self::Read { uri } => json!({"method": "resources/read", "uri": uri}),
        }
    }
}

/// When the run stops measuring.
#[derive(Debug, Clone, Copy)]
enum Stop {
    /// After this long.
    After(Duration),
    /// After this many calls.
    Count(u64),
}

/// The run, as read from the command line.
#[derive(Debug)]
struct Plan {
    operation: Operation,
    expects: Vec<Expect>,
    concurrency: usize,
    sessions: usize,
    warmup: Duration,
    stop: Stop,
    call_timeout: Duration,
    progress: bool,
}

/// Runs `mcp bench`.
pub(crate) async fn run(global: &Global, args: BenchArgs) -> Result<(), CliError> {
    let mut words = args.rest.words.clone();
    let mut session = Session::new(global, &mut words)?;
    // Questions from the server are answered from --answer only: many calls run at once under
    // a progress line, so nobody is prompted, and nothing is printed per question.
    let canned = global
        .answer
        .iter()
        .map(|a| canned_answer(a))
        .collect::<Result<Vec<_>, _>>()?;
    session.asker = Arc::new(Asker::quiet(canned, session.ui.clone()));
    if let Target::Url(url) = &session.target
        && !args.allow_remote
    {
        refuse_remote(url)?;
    }
    if args.args_json.as_deref() == Some("-") && global.interactive {
        return Err(CliError::Usage(
            "--args-json - reads stdin, so --interactive cannot prompt on it: answer with \
             --answer, or give the arguments in a file (--args-json @FILE)"
                .into(),
        ));
    }
    let plan = plan(args, &words)?;
    let mut interrupt = Interrupt::install();
    let Connected { clients, fell_back } = tokio::select! {
        connected = connect(&session, plan.sessions) => connected?,
        () = interrupt.wait() => return Err(CliError::Interrupted),
    };
    let driven = drive(&plan, &clients, &mut interrupt).await;
    // What the server is, before the sessions close.
    let about = About::of(&session, &clients[0], fell_back);
    close(&session, &clients).await;
    let report = Report {
        about,
        plan: &plan,
        tally: driven.tally,
        measured: driven.measured,
        interrupted: driven.interrupted,
    };
    if session.json {
        print_json(&report.to_json())?;
    } else {
        print(&report.to_text())?;
    }
    let tally = &report.tally;
    if report.interrupted {
        Err(CliError::Interrupted)
    } else if tally.failed > 0 {
        Err(CliError::BenchFailed {
            failed: tally.failed,
            calls: tally.ok + tally.failed,
        })
    } else if tally.ok == 0 {
        Err(CliError::BenchEmpty)
    } else {
        Ok(())
    }
}

/// Refuses a URL whose host is not a loopback address (127.0.0.0/8, `::1`, `localhost`).
fn refuse_remote(url: &str) -> Result<(), CliError> {
    let parsed =
        url::Url::parse(url).map_err(|e| CliError::Usage(format!("invalid URL {url:?}: {e}")))?;
    if mcp_client::oauth::is_loopback(&parsed) {
        Ok(())
    } else {
        Err(CliError::RemoteTarget {
            url: url.to_owned(),
        })
    }
}

/// Reads and checks the options.
fn plan(args: BenchArgs, words: &[String]) -> Result<Plan, CliError> {
    let operation = match (args.tool, args.read) {
        (Some(name), None) => {
            let mut sources = Sources::default();
            let json = match &args.args_json {
                Some(given) => Some(sources.args_json(given)?),
                None => None,
            };
            let arguments = tool_arguments(words, json, &mut sources)?;
            Operation::Tool { name, arguments }
        }
        (None, Some(uri)) => {
            if let Some(extra) = words.first() {
                return Err(CliError::Usage(format!(
                    "mcp bench --read takes no argument {extra:?}"
                )));
            }
            Operation::Read { uri }
        }
        _ => {
            return Err(CliError::Usage(
                "mcp bench needs --tool NAME [ARGS]... or --read URI".into(),
            ));
        }
    };
    let mut expects = Vec::new();
    if let Some(text) = args.expect_text {
        expects.push(Expect::Text(text));
    }
    for given in &args.expect_json {
        expects.push(Expect::json(given)?);
    }
    if args.concurrency == 0 || args.concurrency > MAX_CONCURRENCY {
        return Err(CliError::Usage(format!(
            "--concurrency must be 1 to {MAX_CONCURRENCY}, got {}",
            args.concurrency
        )));
    }
    if args.sessions == 0 || args.sessions > MAX_SESSIONS.min(args.concurrency) {
        return Err(CliError::Usage(format!(
            "--sessions must be 1 to {} (at most --concurrency, and {MAX_SESSIONS}), got {}",
            MAX_SESSIONS.min(args.concurrency),
            args.sessions
        )));
    }
    let stop = match (args.count, args.duration) {
        (Some(0), _) => return Err(CliError::Usage("--count must be at least 1".into())),
        (Some(count), _) => Stop::Count(count),
        (None, duration) => Stop::After(seconds("--duration", duration.unwrap_or(10.0), false)?),
    };
    Ok(Plan {
        operation,
        expects,
        concurrency: args.concurrency,
        sessions: args.sessions,
        warmup: seconds("--warmup", args.warmup, true)?,
        stop,
        call_timeout: seconds("--call-timeout", args.call_timeout, false)?,
        progress: args.progress || std::io::stderr().is_terminal(),
    })
}

/// `value` seconds of the option `flag`: finite, positive (or zero when `zero` allows it), and
/// at most a day.
fn seconds(flag: &str, value: f64, zero: bool) -> Result<Duration, CliError> {
    const DAY: Duration = Duration::from_secs(24 * 60 * 60);
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| (zero || !d.is_zero()) && *d <= DAY)
        .ok_or_else(|| {
            let least = if zero { "0" } else { "more than 0" };
            CliError::Usage(format!(
                "{flag} must be {least} and at most 86400 seconds, got {value}"
            ))
        })
}

/// The open clients, and whether the first one ended on HTTP+SSE after `--transport auto`.
struct Connected {
    clients: Vec<Client>,
    fell_back: bool,
}

/// Opens `sessions` clients, one after the other, each within `--timeout`.
async fn connect(session: &Session, sessions: usize) -> Result<Connected, CliError> {
    let mut clients = Vec::with_capacity(sessions);
    let fell_back = Arc::new(AtomicBool::new(false));
    for i in 0..sessions {
        // Only the first session of an automatic choice is watched (a check per response).
        let watched =
            (i == 0 && session.transport == TransportChoice::Auto).then(|| fell_back.clone());
        let configure = |builder: ClientBuilder| match (&session.target, watched) {
            (Target::Url(url), Some(flag)) => watch_fallback(for_load(builder), url, flag),
            _ => for_load(builder),
        };
        let connected =
            tokio::time::timeout(session.timeout, session.connect_configured(configure))
                .await
                .map_err(|_| session.deadline_passed("connecting"));
        match connected {
            Ok(Ok(client)) => clients.push(client),
            Ok(Err(e)) | Err(e) => {
                close(session, &clients).await;
                return Err(e);
            }
        }
    }
    Ok(Connected {
        clients,
        fell_back: fell_back.load(Ordering::Relaxed),
    })
}

/// Sets `flag` when the client speaks HTTP+SSE: that transport posts its messages to the
/// endpoint its stream named (another path than the URL given), which answers 202 Accepted,
/// where Streamable HTTP posts to the URL given. `--transport auto` falls back to HTTP+SSE
/// without saying so; this is how the report names the transport it ended on.
fn watch_fallback(builder: ClientBuilder, url: &str, flag: Arc<AtomicBool>) -> ClientBuilder {
    let given = url
        .parse::<http::Uri>()
        .map(|uri| uri.path().to_owned())
        .unwrap_or_default();
    builder.on_http_response(move |response| {
        if response.method() == http::Method::POST
            && response.status() == 202
            && response.url().path() != given
        {
            flag.store(true, Ordering::Relaxed);
        }
    })
}

/// The client settings of a load run: the server is measured as it answers.
fn for_load(builder: ClientBuilder) -> ClientBuilder {
    builder
        .rate_limit_retry(RateLimitRetry::new().max_attempts(1))
        .cache_capacity(0)
        .on_notification(|_| {})
}

/// Closes every client, each within `--timeout`.
async fn close(session: &Session, clients: &[Client]) {
    let closing = clients
        .iter()
        .map(|client| tokio::time::timeout(session.timeout, client.close()));
    futures::future::join_all(closing).await;
}

/// One kind of error: how many calls failed so, and the first one's message.
#[derive(Debug)]
struct Kind {
    count: u64,
    first: String,
}

/// What the measured calls did.
#[derive(Debug)]
struct Tally {
    ok: u64,
    failed: u64,
    latency: Histogram,
    errors: BTreeMap<String, Kind>,
}

impl Tally {
    fn new() -> Self {
        Self {
            ok: 0,
            failed: 0,
            latency: Histogram::new(),
            errors: BTreeMap::new(),
        }
    }

    fn success(&mut self, took: Duration) {
        self.ok += 1;
        self.latency
            .record(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
    }

    fn failure(&mut self, failure: Failure) {
        self.failed += 1;
        let key =
            if self.errors.len() >= MAX_ERROR_KINDS && !self.errors.contains_key(&failure.kind) {
                "other".to_owned()
            } else {
                failure.kind
            };
        self.errors
            .entry(key)
            .or_insert_with(|| Kind {
                count: 0,
                first: failure.message,
            })
            .count += 1;
    }
}

/// The state the callers share (they all run on this task: no locks).
struct Shared<'a> {
    plan: &'a Plan,
    /// When the warm-up ends and measuring starts.
    measure_from: Instant,
    /// With `--duration`: when measuring ends.
    measure_until: Option<Instant>,
    /// With `--count`: the calls not yet started.
    tickets: Cell<u64>,
    /// When the last counted call ended.
    last_counted: Cell<Option<Instant>>,
    tally: RefCell<Tally>,
}

impl Shared<'_> {
    fn measuring(&self, now: Instant) -> bool {
        now >= self.measure_from && self.measure_until.is_none_or(|until| now < until)
    }
}

/// How the callers ran.
struct Driven {
    tally: Tally,
    /// The measured time.
    measured: Duration,
    /// Ctrl-C ended the run early.
    interrupted: bool,
}

/// Runs the callers through the warm-up and the measured phase, drawing the progress line.
async fn drive(plan: &Plan, clients: &[Client], interrupt: &mut Interrupt) -> Driven {
    let start = Instant::now();
    let measure_from = start + plan.warmup;
    let measure_until = match plan.stop {
        Stop::After(duration) => Some(measure_from + duration),
        Stop::Count(_) => None,
    };
    let shared = Shared {
        plan,
        measure_from,
        measure_until,
        tickets: Cell::new(match plan.stop {
            Stop::Count(count) => count,
            Stop::After(_) => 0,
        }),
        last_counted: Cell::new(None),
        tally: RefCell::new(Tally::new()),
    };
    let mut callers: FuturesUnordered<_> = (0..plan.concurrency)
        .map(|i| caller(&shared, &clients[i % clients.len()]))
        .collect();
    let mut progress = Progress::new(plan.progress);
    let mut ticks = tokio::time::interval(progress.every());
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let end = async {
        match measure_until {
            Some(until) => tokio::time::sleep_until(until).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(end);
    let mut interrupted = false;
    loop {
        tokio::select! {
            done = callers.next() => if done.is_none() { break },
            () = &mut end => break,
            _ = ticks.tick() => progress.draw(&shared, start),
            () = interrupt.wait() => {
                interrupted = true;
                break;
            }
        }
    }
    // Calls still in flight are dropped (cancelled on the server): they are not counted.
    drop(callers);
    progress.clear();
    let ended = Instant::now();
    let measured = match (measure_until, shared.last_counted.get()) {
        (Some(until), _) => until.min(ended).saturating_duration_since(measure_from),
        (None, Some(last)) => last.saturating_duration_since(measure_from),
        (None, None) => ended.saturating_duration_since(measure_from),
    };
    Driven {
        tally: shared.tally.into_inner(),
        measured,
        interrupted,
    }
}

/// One caller: a call at a time until the run stops.
async fn caller(shared: &Shared<'_>, client: &Client) {
    let plan = shared.plan;
    loop {
        let now = Instant::now();
        let measuring = shared.measuring(now);
        if measuring && shared.measure_until.is_none() {
            // --count: take a ticket, or stop when none is left.
            let left = shared.tickets.get();
            if left == 0 {
                return;
            }
            shared.tickets.set(left - 1);
        } else if !measuring && shared.measure_until.is_some_and(|until| now >= until) {
            return;
        }
        let outcome = tokio::time::timeout(plan.call_timeout, plan.operation.call(client)).await;
        let ended = Instant::now();
        let checked = match outcome {
            Err(_) => Err(Failure::timed_out(plan.call_timeout)),
            Ok(Err(error)) => Err(Failure::of_client(&error)),
            Ok(Ok(result)) => check::check(&result, &plan.expects),
        };
        let failed = checked.is_err();
        // Counted when made in the measured phase and, with --duration, answered in it.
        if measuring && shared.measuring(ended) {
            let mut tally = shared.tally.borrow_mut();
            match checked {
                Ok(()) => tally.success(ended - now),
                Err(failure) => tally.failure(failure),
            }
            shared.last_counted.set(Some(ended));
        }
        if failed {
            // A failure may come back at once (a closed session): let the timers and the
            // progress line run before the next call.
            tokio::task::yield_now().await;
        }
    }
}

/// The live progress line on stderr: redrawn in place on a terminal, one line a second
/// otherwise (`--progress`), nothing when neither.
struct Progress {
    on: bool,
    terminal: bool,
    drawn: bool,
}

impl Progress {
    fn new(on: bool) -> Self {
        Self {
            on,
            terminal: std::io::stderr().is_terminal(),
            drawn: false,
        }
    }

    fn every(&self) -> Duration {
        if self.terminal { REDRAW } else { PROGRESS_LINE }
    }

    fn draw(&mut self, shared: &Shared<'_>, start: Instant) {
        if !self.on {
            return;
        }
        let now = Instant::now();
        let line = if now < shared.measure_from {
            format!(
                "warming up {:.1}s/{:.1}s",
                (now - start).as_secs_f64(),
                shared.plan.warmup.as_secs_f64()
            )
        } else {
            let elapsed = now - shared.measure_from;
            let tally = shared.tally.borrow();
            let of = match shared.plan.stop {
                Stop::After(d) => format!("{:.1}s/{:.0}s", elapsed.as_secs_f64(), d.as_secs_f64()),
                Stop::Count(n) => format!("{}/{n} calls", tally.ok + tally.failed),
            };
            let rate = tally.ok as f64 / elapsed.as_secs_f64().max(1e-3);
            format!(
                "{of}  {} ok  {rate:.0} calls/s  p50 {}  p99 {}  errors {}",
                tally.ok,
                millis(tally.latency.quantile(0.5)),
                millis(tally.latency.quantile(0.99)),
                tally.failed
            )
        };
        let mut stderr = std::io::stderr().lock();
        let _ = if self.terminal {
            write!(stderr, "\r\x1b[2K{line}")
        } else {
            writeln!(stderr, "mcp: {line}")
        };
        let _ = stderr.flush();
        self.drawn = true;
    }

    /// Removes the line from the terminal.
    fn clear(&mut self) {
        if self.terminal && self.drawn {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[2K");
            let _ = stderr.flush();
        }
    }
}

/// Microseconds as milliseconds with three decimals: `1.234 ms`.
fn millis(micros: u64) -> String {
    format!("{:.3} ms", micros as f64 / 1000.0)
}

/// What was loaded: the target, the transport, the negotiated revision, the server.
struct About {
    target: String,
    transport: &'static str,
    revision: String,
    server_name: String,
    server_version: String,
}

impl About {
    fn of(session: &Session, client: &Client, fell_back: bool) -> Self {
        let info = client
            .server()
            .and_then(|d| d.server_info)
            .unwrap_or(Value::Null);
        Self {
            target: session.target.name(),
            transport: transport_name(&session.target, session.transport, fell_back),
            revision: client.revision().as_str().to_owned(),
            server_name: text_of(&info, "name").to_owned(),
            server_version: text_of(&info, "version").to_owned(),
        }
    }
}

/// The transport spoken: with `--transport auto`, HTTP+SSE when the client fell back to it
/// (see [`watch_fallback`]), Streamable HTTP otherwise.
fn transport_name(target: &Target, transport: TransportChoice, fell_back: bool) -> &'static str {
    match (target, transport) {
        (Target::Stdio(_), _) => "stdio",
        (Target::Url(_), TransportChoice::Streamable) => "streamable-http",
        (Target::Url(_), TransportChoice::Sse) => "http+sse",
        (Target::Url(_), TransportChoice::Auto) if fell_back => "http+sse",
        (Target::Url(_), TransportChoice::Auto) => "streamable-http",
    }
}

/// The final report.
struct Report<'a> {
    about: About,
    plan: &'a Plan,
    tally: Tally,
    measured: Duration,
    interrupted: bool,
}

impl Report<'_> {
    /// Successful calls per measured second.
    fn throughput(&self) -> f64 {
        let secs = self.measured.as_secs_f64();
        if secs > 0.0 {
            self.tally.ok as f64 / secs
        } else {
            0.0
        }
    }

    fn to_text(&self) -> String {
        let about = &self.about;
        let plan = self.plan;
        let tally = &self.tally;
        let latency = &tally.latency;
        let server = match (about.server_name.as_str(), about.server_version.as_str()) {
            ("", _) => "(no serverInfo)".to_owned(),
            (name, version) => format!("{name} {version}").trim_end().to_owned(),
        };
        let length = match plan.stop {
            Stop::After(_) => format!("{:.1} s measured", self.measured.as_secs_f64()),
            Stop::Count(n) => format!("{n} calls in {:.1} s measured", self.measured.as_secs_f64()),
        };
        let sessions = if plan.sessions == 1 {
            "1 session".to_owned()
        } else {
            format!("{} sessions", plan.sessions)
        };
        let mut rows = vec![
            ("target", format!("{} ({})", about.target, about.transport)),
            ("server", server),
            ("revision", about.revision.clone()),
            (
                "load",
                format!(
                    "{}, {} callers on {sessions}, {length} after {:.1} s warm-up{}",
                    plan.operation.describe(),
                    plan.concurrency,
                    plan.warmup.as_secs_f64(),
                    if self.interrupted {
                        " (interrupted)"
                    } else {
                        ""
                    }
                ),
            ),
            (
                "calls",
                format!(
                    "{}: {} ok, {} errors",
                    tally.ok + tally.failed,
                    tally.ok,
                    tally.failed
                ),
            ),
            ("throughput", format!("{:.1} calls/s", self.throughput())),
            (
                "latency",
                if latency.count() == 0 {
                    "(no successful call)".to_owned()
                } else {
                    format!(
                        "p50 {}  p90 {}  p99 {}  max {}",
                        millis(latency.quantile(0.5)),
                        millis(latency.quantile(0.9)),
                        millis(latency.quantile(0.99)),
                        millis(latency.max())
                    )
                },
            ),
        ];
        if tally.errors.is_empty() {
            rows.push(("errors", "none".to_owned()));
        }
        for (i, (kind, seen)) in tally.errors.iter().enumerate() {
            rows.push((
                if i == 0 { "errors" } else { "" },
                format!("{kind}: {} (first: {})", seen.count, seen.first),
            ));
        }
        let mut text = String::new();
        for (label, value) in rows {
            text.push_str(&format!("{label:<12}{value}\n"));
        }
        text
    }

    fn to_json(&self) -> Value {
        let about = &self.about;
        let plan = self.plan;
        let tally = &self.tally;
        let latency = &tally.latency;
        let mut by_kind = Map::new();
        let mut first = Map::new();
        for (kind, seen) in &tally.errors {
            by_kind.insert(kind.clone(), json!(seen.count));
            first.insert(kind.clone(), json!(seen.first));
        }
        let count = match plan.stop {
            Stop::Count(n) => json!(n),
            Stop::After(_) => Value::Null,
        };
        json!({
            "target": about.target,
            "transport": about.transport,
            "revision": about.revision,
            "server": {"name": about.server_name, "version": about.server_version},
            "operation": plan.operation.to_json(),
            "concurrency": plan.concurrency,
            "sessions": plan.sessions,
            "warmup_s": plan.warmup.as_secs_f64(),
            "measured_s": self.measured.as_secs_f64(),
            "count": count,
            "interrupted": self.interrupted,
            "calls": tally.ok + tally.failed,
            "ok": tally.ok,
            "errors": tally.failed,
            "errors_by_kind": by_kind,
            "first_errors": first,
            "throughput": self.throughput(),
            "latency_us": {
                "p50": latency.quantile(0.5),
                "p90": latency.quantile(0.9),
                "p99": latency.quantile(0.99),
                "max": latency.max(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_pass_without_allow_remote() {
        for url in [
            "http://127.0.0.1:8080/mcp",
            "http://127.1.2.3/mcp",
            "http://[::1]:9/mcp",
            "http://localhost:8080/mcp",
            "https://LOCALHOST/mcp",
        ] {
            assert!(refuse_remote(url).is_ok(), "{url} is loopback");
        }
        for url in [
            "http://10.0.0.1/mcp",
            "https://example.com/mcp",
            "http://localhost.example.com/mcp",
            "http://0.0.0.0:8080/mcp",
            "http://[::ffff:127.0.0.1]/mcp",
        ] {
            assert!(
                matches!(refuse_remote(url), Err(CliError::RemoteTarget { .. })),
                "{url} is refused"
            );
        }
        assert!(matches!(refuse_remote("http://"), Err(CliError::Usage(_))));
    }

    #[test]
    fn error_kinds_are_bounded() {
        let mut tally = Tally::new();
        for code in 0..100 {
            tally.failure(Failure {
                kind: format!("json-rpc {code}"),
                message: "no".into(),
            });
        }
        assert_eq!(tally.failed, 100);
        assert_eq!(tally.errors.len(), MAX_ERROR_KINDS + 1);
        assert_eq!(tally.errors["other"].count, 100 - MAX_ERROR_KINDS as u64);
        // A kind already seen keeps its own count.
        tally.failure(Failure {
            kind: "json-rpc 0".into(),
            message: "again".into(),
        });
        assert_eq!(tally.errors["json-rpc 0"].count, 2);
        assert_eq!(tally.errors["json-rpc 0"].first, "no");
    }

    #[test]
    fn seconds_are_bounded() {
        assert_eq!(seconds("--warmup", 0.0, true).ok(), Some(Duration::ZERO));
        assert!(seconds("--duration", 0.0, false).is_err());
        assert!(seconds("--duration", -1.0, false).is_err());
        assert!(seconds("--duration", f64::NAN, false).is_err());
        assert!(seconds("--duration", 1e300, false).is_err());
        assert!(seconds("--duration", 86_401.0, false).is_err());
        assert_eq!(
            seconds("--duration", 2.5, false).ok(),
            Some(Duration::from_millis(2500))
        );
    }
}
