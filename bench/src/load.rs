//! The load generator behind the `mcp-load` binary.
//!
//! [`run`] starts [`LoadConfig::concurrency`] workers on the current tokio runtime (the binary
//! uses a current-thread runtime, pinned to one core by the harness).
//! Each worker opens its own keep-alive HTTP/1.1 connection with hyper's `client::conn::http1`
//! (no pool) and `TCP_NODELAY`, does the revision's handshake, then calls
//! `tools/call add {a: 2, b: 3}` one at a time until the run ends:
//!
//! - 2025-03-26 to 2025-11-25 (Streamable HTTP): `initialize` (the reply must name the
//!   revision), `notifications/initialized`, then calls; the `Mcp-Session-Id` from the
//!   `initialize` reply, if any, is echoed on every later POST, and so is `MCP-Protocol-Version`
//!   from 2025-06-18 on.
//! - 2026-07-28 (Streamable HTTP): no handshake; every call carries `params._meta` and the
//!   `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers.
//! - 2024-11-05 (HTTP+SSE): a `GET` opens the event stream on one connection, its `endpoint`
//!   event names the POST URL, and POSTs go on a second connection; replies are read from the
//!   stream. Handshake as above.
//!
//! Replies are JSON or SSE and every one is checked ([`crate::reply`]).
//! A failed call (transport, HTTP status, content type, reply check, or
//! [`LoadConfig::timeout`]) counts as an error, and the worker reconnects and handshakes again.
//! Latencies go into a [`Histogram`] per worker; the run has a warm-up phase that is not
//! counted, then a measured phase.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{
    HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri,
    header::{ACCEPT, CONTENT_TYPE, HOST},
};
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, client::conn::http1::SendRequest};
use hyper_util::rt::TokioIo;
use mcp_wire::sse::SseDecoder;
use serde::Serialize;
use tokio::net::TcpStream;

use crate::{
    Revision, Transport,
    histogram::Histogram,
    reply::{self, Checked, ReplyError},
    request,
};

/// The settings of one load run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadConfig {
    /// The URL: the MCP endpoint for Streamable HTTP, the SSE stream (`GET`) for HTTP+SSE.
    /// Only `http://` is supported. Unused with [`Transport::Stdio`].
    pub url: String,
    /// The server to spawn for [`Transport::Stdio`]: program and arguments.
    /// Default is empty.
    pub command: Vec<String>,
    /// The revision spoken.
    pub revision: Revision,
    /// The transport. Default is the revision's [`Revision::default_transport`].
    pub transport: Transport,
    /// Workers, each with its own connection and session. Default is 1.
    pub concurrency: usize,
    /// Time run before measuring. Default is 1 s.
    pub warmup: Duration,
    /// Time measured. Default is 3 s.
    pub duration: Duration,
    /// The longest a handshake or a call may take before it counts as an error.
    /// Default is 10 s.
    pub timeout: Duration,
    /// The target answers every POST with one fixed body (the floor): handshake replies are not
    /// checked and reply ids are not compared; sums still are. Default is `false`.
    pub fixed_reply: bool,
    /// Instead of calling `add`, open this many sessions (handshakes over Streamable HTTP, on
    /// [`concurrency`](Self::concurrency) connections) and leave them idle; see
    /// [`open_sessions`]. Default is `None`.
    pub sessions: Option<usize>,
    /// Instead of calling `add`, measure pushed asks answered through the hub (2025-11-25,
    /// Streamable HTTP, one at a time; see [`crate::ask`]). Default is `false`.
    pub ask: bool,
    /// With [`ask`](Self::ask): where the answers are POSTed, when not to [`url`](Self::url)
    /// (another worker sharing the server's hub). Default is `None`.
    pub answer_url: Option<String>,
    /// Instead of calling `add`, create tasks and read them until completed (2026-07-28,
    /// Streamable HTTP, the Tasks extension; see [`crate::tasks`]). Default is `false`.
    pub tasks: bool,
    /// Header lines sent on every request besides the protocol's own, as `(name, value)`
    /// (`--header`, `--bearer`). Default is empty.
    pub headers: Vec<(String, String)>,
    /// `--dpop-key FILE`: the DPoP key (PKCS#8 DER, base64url, as `mcp-bench-server
    /// --auth-dpop` writes it) the `--bearer` token is bound to. The token is then sent as
    /// `Authorization: DPoP` with a fresh proof per Streamable HTTP POST (RFC 9449). Default is
    /// `None`.
    pub dpop_key: Option<String>,
    /// `--traceparent TP`: every call carries this W3C trace context in its `_meta` (what a
    /// client that propagates traces sends). Default is `None`.
    pub traceparent: Option<String>,
}

impl LoadConfig {
    /// A configuration with the defaults documented on each field.
    pub fn new(url: impl Into<String>, revision: Revision) -> Self {
        Self {
            url: url.into(),
            command: Vec::new(),
            revision,
            transport: revision.default_transport(),
            concurrency: 1,
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs(3),
            timeout: Duration::from_secs(10),
            fixed_reply: false,
            traceparent: None,
            sessions: None,
            ask: false,
            answer_url: None,
            tasks: false,
            headers: Vec::new(),
            dpop_key: None,
        }
    }

    /// Parses the `mcp-load` command line (without the program name).
    ///
    /// `--url URL --revision REV [--transport streamable|http+sse] [--concurrency N]
    /// [--warmup SECS] [--duration SECS] [--timeout SECS] [--fixed-reply] [--sessions N]
    /// [--ask [--answer-url URL]] [--tasks] [--header 'NAME: VALUE']... [--bearer TOKEN]`, or
    /// `--transport stdio --command "PROGRAM ARGS..."` instead of `--url` (the command is split
    /// on whitespace; concurrency 1 only).
    ///
    /// `--sessions` needs a revision with a handshake and Streamable HTTP. `--header` may be
    /// repeated; `--bearer TOKEN` is `--header 'Authorization: Bearer TOKEN'`.
    pub fn from_args<I, S>(args: I) -> Result<Self, ArgsError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut url = None;
        let mut command = Vec::new();
        let mut revision = None;
        let mut transport = None;
        let mut concurrency = None;
        let mut warmup = None;
        let mut duration = None;
        let mut timeout = None;
        let mut sessions = None;
        let mut fixed_reply = false;
        let mut traceparent = None;
        let mut ask = false;
        let mut tasks = false;
        let mut answer_url = None;
        let mut headers = Vec::new();
        let mut dpop_key = None;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let arg = arg.as_ref();
            if arg == "--fixed-reply" {
                fixed_reply = true;
                continue;
            }
            if arg == "--ask" {
                ask = true;
                continue;
            }
            if arg == "--tasks" {
                tasks = true;
                continue;
            }
            let value = args
                .next()
                .ok_or_else(|| ArgsError::MissingValue(arg.to_owned()))?;
            let value = value.as_ref();
            let bad = || ArgsError::BadValue {
                flag: arg.to_owned(),
                value: value.to_owned(),
            };
            match arg {
                "--url" => url = Some(value.to_owned()),
                "--command" => command = value.split_whitespace().map(str::to_owned).collect(),
                "--revision" => revision = Some(value.parse().map_err(|_| bad())?),
                "--transport" => transport = Some(value.parse().map_err(|_| bad())?),
                "--concurrency" => {
                    concurrency = Some(value.parse().ok().filter(|&c| c > 0).ok_or_else(bad)?);
                }
                "--warmup" => warmup = Some(seconds(value).ok_or_else(bad)?),
                "--duration" => {
                    duration = Some(seconds(value).filter(|d| !d.is_zero()).ok_or_else(bad)?);
                }
                "--sessions" => {
                    sessions = Some(value.parse().ok().filter(|&n| n > 0).ok_or_else(bad)?);
                }
                "--timeout" => {
                    timeout = Some(seconds(value).filter(|d| !d.is_zero()).ok_or_else(bad)?);
                }
                "--answer-url" => answer_url = Some(value.to_owned()),
                "--header" => {
                    let (name, field) = value.split_once(':').ok_or_else(bad)?;
                    let (name, field) = (name.trim(), field.trim());
                    if HeaderName::try_from(name).is_err() || HeaderValue::from_str(field).is_err()
                    {
                        return Err(bad());
                    }
                    headers.push((name.to_owned(), field.to_owned()));
                }
                "--dpop-key" => dpop_key = Some(value.to_owned()),
                "--traceparent" => {
                    mcp_wire::trace::TraceParent::parse(value).map_err(|_| bad())?;
                    traceparent = Some(value.to_owned());
                }
                "--bearer" => {
                    let field = format!("Bearer {value}");
                    HeaderValue::from_str(&field).map_err(|_| bad())?;
                    headers.push(("authorization".to_owned(), field));
                }
                _ => return Err(ArgsError::UnknownFlag(arg.to_owned())),
            }
        }
        let revision: Revision = revision.ok_or(ArgsError::Required("--revision"))?;
        let transport = transport.unwrap_or(revision.default_transport());
        let url = match (url, transport) {
            (Some(url), _) => url,
            (None, Transport::Stdio) => String::new(),
            (None, _) => return Err(ArgsError::Required("--url")),
        };
        if transport == Transport::Stdio && command.is_empty() {
            return Err(ArgsError::Required("--command"));
        }
        let mut config = Self::new(url, revision);
        config.transport = transport;
        config.command = command;
        config.concurrency = concurrency.unwrap_or(config.concurrency);
        config.warmup = warmup.unwrap_or(config.warmup);
        config.duration = duration.unwrap_or(config.duration);
        config.timeout = timeout.unwrap_or(config.timeout);
        config.fixed_reply = fixed_reply;
        config.traceparent = traceparent;
        config.sessions = sessions;
        config.ask = ask;
        config.tasks = tasks;
        config.headers = headers;
        config.dpop_key = dpop_key;
        if answer_url.is_some() && !ask {
            return Err(ArgsError::AnswerUrlNeedsAsk);
        }
        config.answer_url = answer_url;
        if ask && (revision != Revision::V2025_11_25 || config.transport != Transport::Streamable) {
            return Err(ArgsError::AskNeeds2025_11_25);
        }
        if tasks && (revision != Revision::V2026_07_28 || config.transport != Transport::Streamable)
        {
            return Err(ArgsError::TasksNeed2026_07_28);
        }
        if tasks && (ask || sessions.is_some()) {
            return Err(ArgsError::OneProbe);
        }
        if config.transport == Transport::Stdio && config.concurrency != 1 {
            return Err(ArgsError::StdioConcurrency);
        }
        if sessions.is_some()
            && (!revision.has_handshake() || config.transport != Transport::Streamable)
        {
            return Err(ArgsError::SessionsNeedHandshake);
        }
        Ok(config)
    }
}

fn seconds(value: &str) -> Option<Duration> {
    value
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// A bad `mcp-load` command line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgsError {
    /// A flag that `mcp-load` does not know.
    #[error("unknown flag `{0}`")]
    UnknownFlag(String),
    /// `--ask` with a revision other than 2025-11-25 or a transport other than Streamable HTTP.
    #[error("--ask needs --revision 2025-11-25 over Streamable HTTP")]
    AskNeeds2025_11_25,
    /// `--tasks` with a revision other than 2026-07-28 or a transport other than Streamable
    /// HTTP.
    #[error("--tasks needs --revision 2026-07-28 over Streamable HTTP")]
    TasksNeed2026_07_28,
    /// `--tasks` with `--ask` or `--sessions`.
    #[error("--tasks, --ask and --sessions are separate probes")]
    OneProbe,
    /// A flag at the end of the line without its value.
    #[error("`{0}` needs a value")]
    MissingValue(String),
    /// A value that does not parse or is out of range.
    #[error("bad value `{value}` for `{flag}`")]
    BadValue {
        /// The flag.
        flag: String,
        /// Its value.
        value: String,
    },
    /// A required flag is missing.
    #[error("`{0}` is required")]
    Required(&'static str),
    /// `--concurrency` above 1 with stdio (one pipe, one call at a time).
    #[error("stdio runs one call at a time: `--concurrency` must be 1")]
    StdioConcurrency,
    /// `--sessions` with 2026-07-28 or HTTP+SSE.
    #[error("`--sessions` needs a revision with a handshake, over Streamable HTTP")]
    SessionsNeedHandshake,
    /// `--answer-url` without `--ask`.
    #[error("`--answer-url` needs `--ask`")]
    AnswerUrlNeedsAsk,
}

/// A load run that could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The URL is not `http://host:port/path`.
    #[error("bad URL `{0}`: expected http://host:port/path")]
    BadUrl(String),
    /// stdio without a command to spawn.
    #[error("no command to spawn for stdio")]
    NoCommand,
    /// The `--dpop-key` file cannot be read or is not a key.
    #[error("DPoP key: {0}")]
    DpopKey(String),
}

/// Why one call (or one handshake) failed; counted, never fatal to the run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// Connecting failed.
    #[error("connect: {0}")]
    Connect(#[source] std::io::Error),
    /// HTTP failed (connection closed, protocol error).
    #[error("http: {0}")]
    Http(#[from] hyper::Error),
    /// An unexpected HTTP status.
    #[error("HTTP status {0}")]
    Status(StatusCode),
    /// A reply that is neither JSON nor an event stream.
    #[error("unexpected content type `{0}`")]
    ContentType(String),
    /// The reply failed its check.
    #[error(transparent)]
    Reply(#[from] ReplyError),
    /// A JSON reply that is a request or notification rather than a response.
    #[error("JSON reply is not a response")]
    NotAResponse,
    /// The event stream ended before the reply arrived.
    #[error("event stream ended without the reply")]
    StreamEnded,
    /// The HTTP+SSE stream did not start with a usable `endpoint` event.
    #[error("bad endpoint event: {0}")]
    Endpoint(String),
    /// Spawning or talking to the stdio child failed, or it closed its stdout.
    #[error("stdio: {0}")]
    Stdio(#[source] std::io::Error),
    /// The call took longer than [`LoadConfig::timeout`].
    #[error("timed out")]
    Timeout,
}

/// The result of a run, printed by `mcp-load` as one JSON line.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// The target URL.
    pub url: String,
    /// The revision spoken.
    pub revision: &'static str,
    /// The transport.
    pub transport: &'static str,
    /// Workers.
    pub concurrency: usize,
    /// The measured time, in seconds.
    pub duration_s: f64,
    /// Calls that passed their check during the measured time.
    pub calls: u64,
    /// Failed calls and handshakes, warm-up included.
    pub errors: u64,
    /// `calls / duration_s`.
    pub calls_per_s: f64,
    /// Median latency of the passed calls, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile latency, in milliseconds.
    pub p99_ms: f64,
    /// The slowest passed call, in milliseconds.
    pub max_ms: f64,
    /// The first error seen, if any.
    pub first_error: Option<String>,
}

/// The result of [`open_sessions`], printed by `mcp-load --sessions` as one JSON line.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SessionsReport {
    /// The target URL.
    pub url: String,
    /// The revision of the handshakes.
    pub revision: &'static str,
    /// Sessions asked for.
    pub requested: usize,
    /// Handshakes that completed.
    pub opened: u64,
    /// Completed handshakes whose `initialize` reply carried an `Mcp-Session-Id` (a server
    /// without sessions keeps nothing, and answers none).
    pub with_session_id: u64,
    /// Failed handshakes.
    pub errors: u64,
    /// Wall time, in seconds.
    pub duration_s: f64,
    /// The first error seen, if any.
    pub first_error: Option<String>,
}

/// Opens [`LoadConfig::sessions`] sessions with `initialize` + `notifications/initialized`
/// over [`LoadConfig::concurrency`] keep-alive connections, and leaves them idle (no `DELETE`):
/// the harness compares the server's RSS before and after.
///
/// A connection that fails is reopened; [`LoadConfig::timeout`] bounds each handshake.
pub async fn open_sessions(config: &LoadConfig) -> Result<SessionsReport, LoadError> {
    let target = Arc::new(Target::of(&config.url, config)?);
    let requested = config.sessions.unwrap_or(0);
    let remaining = Arc::new(std::sync::atomic::AtomicUsize::new(requested));
    let started = Instant::now();
    let workers: Vec<_> = (0..config.concurrency.max(1))
        .map(|_| {
            let target = target.clone();
            let remaining = remaining.clone();
            let (revision, timeout) = (config.revision, config.timeout);
            tokio::spawn(async move {
                let mut tally = SessionTally::default();
                let mut buf = Vec::with_capacity(512);
                let mut conn: Option<StreamableConn> = None;
                let mut failures_in_a_row = 0;
                let take = || {
                    remaining
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                        .is_ok()
                };
                while failures_in_a_row < MAX_OPEN_FAILURES && take() {
                    let attempt = async {
                        if conn.is_none() {
                            conn = Some(StreamableConn {
                                sender: target.connect().await?,
                                target: target.clone(),
                                revision,
                                session: None,
                                decoder: SseDecoder::new(),
                                next_id: 1,
                                fixed_reply: false,
                            });
                        }
                        let Some(c) = conn.as_mut() else {
                            return Err(CallError::StreamEnded);
                        };
                        c.handshake(&mut buf, Expect::Initialize(revision)).await?;
                        Ok(c.session.is_some())
                    };
                    match tokio::time::timeout(timeout, attempt)
                        .await
                        .unwrap_or(Err(CallError::Timeout))
                    {
                        Ok(with_id) => {
                            failures_in_a_row = 0;
                            tally.opened += 1;
                            tally.with_session_id += u64::from(with_id);
                        }
                        Err(error) => {
                            failures_in_a_row += 1;
                            tally.errors += 1;
                            tally.first_error.get_or_insert(error.to_string());
                            conn = None;
                        }
                    }
                }
                tally
            })
        })
        .collect();
    let mut total = SessionTally::default();
    for worker in workers {
        match worker.await {
            Ok(tally) => {
                total.opened += tally.opened;
                total.with_session_id += tally.with_session_id;
                total.errors += tally.errors;
                if total.first_error.is_none() {
                    total.first_error = tally.first_error;
                }
            }
            Err(join) => {
                total.errors += 1;
                total
                    .first_error
                    .get_or_insert(format!("worker failed: {join}"));
            }
        }
    }
    Ok(SessionsReport {
        url: config.url.clone(),
        revision: config.revision.as_str(),
        requested,
        opened: total.opened,
        with_session_id: total.with_session_id,
        errors: total.errors,
        duration_s: started.elapsed().as_secs_f64(),
        first_error: total.first_error,
    })
}

/// What one [`open_sessions`] worker counted.
#[derive(Debug, Default)]
struct SessionTally {
    opened: u64,
    with_session_id: u64,
    errors: u64,
    first_error: Option<String>,
}

pub(crate) const WARMUP: u8 = 0;
pub(crate) const MEASURE: u8 = 1;
pub(crate) const STOP: u8 = 2;

/// Runs the load described by `config` and reports it.
///
/// Must be called inside a tokio runtime with the time and IO drivers enabled.
pub async fn run(config: &LoadConfig) -> Result<Report, LoadError> {
    let target = Arc::new(if config.transport == Transport::Stdio {
        if config.command.is_empty() {
            return Err(LoadError::NoCommand);
        }
        Target::none()
    } else {
        Target::of(&config.url, config)?
    });
    let command = Arc::new(config.command.clone());
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let workers: Vec<_> = (0..config.concurrency.max(1))
        .map(|_| {
            let worker = Worker {
                target: target.clone(),
                command: command.clone(),
                phase: phase.clone(),
                revision: config.revision,
                transport: config.transport,
                timeout: config.timeout,
                fixed_reply: config.fixed_reply,
                traceparent: config.traceparent.as_deref().map(Arc::from),
            };
            tokio::spawn(worker.run())
        })
        .collect();
    let measured = timeline(config, &phase).await;
    let mut total = Stats::new();
    for worker in workers {
        match worker.await {
            Ok(stats) => total.merge(stats),
            Err(join) => total.error(format!("worker failed: {join}")),
        }
    }
    Ok(report(config, &total, measured))
}

/// Waits out the warm-up, measures, and tells the workers to stop; returns the measured time.
pub(crate) async fn timeline(config: &LoadConfig, phase: &AtomicU8) -> Duration {
    tokio::time::sleep(config.warmup).await;
    phase.store(MEASURE, Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(config.duration).await;
    phase.store(STOP, Ordering::Relaxed);
    started.elapsed()
}

/// The report of a run from its merged counts.
pub(crate) fn report(config: &LoadConfig, total: &Stats, measured: Duration) -> Report {
    let secs = measured.as_secs_f64();
    let ms = |ns: u64| (ns as f64 / 1e3).round() / 1e3;
    Report {
        url: if config.transport == Transport::Stdio {
            format!("stdio:{}", config.command.join(" "))
        } else {
            config.url.clone()
        },
        revision: config.revision.as_str(),
        transport: config.transport.as_str(),
        concurrency: config.concurrency,
        duration_s: secs,
        calls: total.calls,
        errors: total.errors,
        calls_per_s: total.calls as f64 / secs,
        p50_ms: ms(total.latency.quantile(0.5)),
        p99_ms: ms(total.latency.quantile(0.99)),
        max_ms: ms(total.latency.max()),
        first_error: total.first_error.clone(),
    }
}

/// Where requests go.
#[derive(Debug)]
pub(crate) struct Target {
    /// `host:port`, to connect to.
    authority: String,
    /// The `Host` header.
    pub(crate) host: HeaderValue,
    /// The request target of the URL.
    pub(crate) path: Uri,
    /// Sent on every request ([`LoadConfig::headers`]).
    pub(crate) extra: Vec<(HeaderName, HeaderValue)>,
    /// Signs a DPoP proof per POST ([`LoadConfig::dpop_key`]).
    pub(crate) dpop: Option<crate::dpop::Prover>,
}

impl Target {
    /// A placeholder for stdio runs, which connect nowhere.
    fn none() -> Self {
        Self {
            authority: String::new(),
            host: HeaderValue::from_static(""),
            path: Uri::default(),
            extra: Vec::new(),
            dpop: None,
        }
    }

    pub(crate) fn parse(url: &str) -> Result<Self, LoadError> {
        let bad = || LoadError::BadUrl(url.to_owned());
        let uri: Uri = url.parse().map_err(|_| bad())?;
        if uri.scheme_str() != Some("http") {
            return Err(bad());
        }
        let authority = uri.authority().ok_or_else(bad)?;
        let port = authority.port_u16().unwrap_or(80);
        let host = authority.host();
        let path = uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .map_err(|_| bad())?;
        Ok(Self {
            authority: format!("{host}:{port}"),
            host: HeaderValue::from_str(authority.as_str()).map_err(|_| bad())?,
            path,
            extra: Vec::new(),
            dpop: None,
        })
    }

    /// The target of `url` with `config`'s extra headers (checked when the arguments were
    /// parsed; a header that does not parse is left out).
    pub(crate) fn of(url: &str, config: &LoadConfig) -> Result<Self, LoadError> {
        let mut target = Self::parse(url)?;
        target.extra = config
            .headers
            .iter()
            .filter_map(|(name, value)| {
                Some((
                    HeaderName::try_from(name.as_str()).ok()?,
                    HeaderValue::from_str(value).ok()?,
                ))
            })
            .collect();
        if let Some(file) = &config.dpop_key {
            let mut prover = crate::dpop::Prover::load(file, url).map_err(LoadError::DpopKey)?;
            for (name, value) in &mut target.extra {
                if *name == http::header::AUTHORIZATION {
                    *value = prover.authorization(value).map_err(LoadError::DpopKey)?;
                }
            }
            target.dpop = Some(prover);
        }
        Ok(target)
    }

    /// Adds the extra headers to a request's.
    pub(crate) fn add_extra(&self, headers: &mut HeaderMap) {
        for (name, value) in &self.extra {
            headers.insert(name.clone(), value.clone());
        }
    }

    pub(crate) async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, CallError> {
        let stream = TcpStream::connect(&self.authority)
            .await
            .map_err(CallError::Connect)?;
        stream.set_nodelay(true).map_err(CallError::Connect)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            // The connection ends when the worker drops its sender or the server closes; either
            // way the worker sees it on its next request.
            let _ = connection.await;
        });
        Ok(sender)
    }
}

/// What a worker counted.
#[derive(Debug)]
pub(crate) struct Stats {
    pub(crate) latency: Histogram,
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    pub(crate) first_error: Option<String>,
}

impl Stats {
    pub(crate) fn new() -> Self {
        Self {
            latency: Histogram::new(),
            calls: 0,
            errors: 0,
            first_error: None,
        }
    }

    pub(crate) fn error(&mut self, message: String) {
        self.errors += 1;
        self.first_error.get_or_insert(message);
    }

    pub(crate) fn merge(&mut self, other: Self) {
        self.latency.merge(&other.latency);
        self.calls += other.calls;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

/// One worker: a connection (two for HTTP+SSE) and a loop of calls.
struct Worker {
    target: Arc<Target>,
    command: Arc<Vec<String>>,
    phase: Arc<AtomicU8>,
    revision: Revision,
    transport: Transport,
    timeout: Duration,
    fixed_reply: bool,
    traceparent: Option<Arc<str>>,
}

/// Consecutive failed connection attempts after which a worker gives up.
pub(crate) const MAX_OPEN_FAILURES: u32 = 3;
/// The pause between failed connection attempts.
pub(crate) const REOPEN_BACKOFF: Duration = Duration::from_millis(50);

impl Worker {
    async fn run(self) -> Stats {
        let mut stats = Stats::new();
        let mut buf = Vec::with_capacity(512);
        let mut open_failures = 0;
        while self.phase() != STOP {
            let opened = tokio::time::timeout(self.timeout, self.open(&mut buf)).await;
            let mut session = match opened.unwrap_or(Err(CallError::Timeout)) {
                Ok(session) => session,
                Err(error) => {
                    stats.error(format!("handshake: {error}"));
                    open_failures += 1;
                    if open_failures >= MAX_OPEN_FAILURES {
                        break;
                    }
                    tokio::time::sleep(REOPEN_BACKOFF).await;
                    continue;
                }
            };
            open_failures = 0;
            loop {
                let before = self.phase();
                if before == STOP {
                    break;
                }
                let started = Instant::now();
                let outcome = tokio::time::timeout(
                    self.timeout,
                    session.call(&mut buf, self.traceparent.as_deref()),
                )
                .await;
                let elapsed = started.elapsed();
                match outcome.unwrap_or(Err(CallError::Timeout)) {
                    Ok(()) => {
                        if before == MEASURE && self.phase() == MEASURE {
                            stats.calls += 1;
                            stats
                                .latency
                                .record(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
                        }
                    }
                    Err(error) => {
                        stats.error(error.to_string());
                        break;
                    }
                }
            }
        }
        stats
    }

    fn phase(&self) -> u8 {
        self.phase.load(Ordering::Relaxed)
    }

    async fn open(&self, buf: &mut Vec<u8>) -> Result<Session, CallError> {
        let expect_init = if self.fixed_reply {
            Expect::Anything
        } else {
            Expect::Initialize(self.revision)
        };
        match self.transport {
            Transport::Streamable => {
                let mut conn = StreamableConn {
                    sender: self.target.connect().await?,
                    target: self.target.clone(),
                    revision: self.revision,
                    session: None,
                    decoder: SseDecoder::new(),
                    next_id: 1,
                    fixed_reply: self.fixed_reply,
                };
                if self.revision.has_handshake() {
                    conn.handshake(buf, expect_init).await?;
                }
                Ok(Session::Streamable(conn))
            }
            Transport::Stdio => {
                let mut conn = StdioConn::spawn(&self.command, self.revision, self.fixed_reply)?;
                if self.revision.has_handshake() {
                    request::write_initialize(buf, self.revision);
                    conn.send(buf).await?;
                    conn.next_reply(expect_init).await?;
                    conn.send(request::INITIALIZED).await?;
                }
                Ok(Session::Stdio(conn))
            }
            Transport::HttpSse => {
                let mut conn = SseConn::open(&self.target, self.revision, self.fixed_reply).await?;
                request::write_initialize(buf, self.revision);
                conn.post(buf).await?;
                conn.next_reply(expect_init).await?;
                conn.post(request::INITIALIZED).await?;
                Ok(Session::HttpSse(conn))
            }
        }
    }
}

const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");
const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const ACCEPT_SSE: HeaderValue = HeaderValue::from_static("text/event-stream");
const TOOLS_CALL: HeaderValue = HeaderValue::from_static("tools/call");
const ADD: HeaderValue = HeaderValue::from_static("add");

/// An open, handshaken connection.
enum Session {
    Streamable(StreamableConn),
    HttpSse(SseConn),
    Stdio(StdioConn),
}

impl Session {
    async fn call(&mut self, buf: &mut Vec<u8>, trace: Option<&str>) -> Result<(), CallError> {
        match self {
            Self::Streamable(conn) => {
                let id = conn.next_id;
                conn.next_id += 1;
                request::write_add_call(buf, conn.revision, id, trace);
                let response = conn.post(buf, PostKind::Call).await?;
                let expect = Expect::Add((!conn.fixed_reply).then_some(id));
                read_reply(response, &mut conn.decoder, expect).await
            }
            Self::Stdio(conn) => {
                let id = conn.next_id;
                conn.next_id += 1;
                request::write_add_call(buf, conn.revision, id, trace);
                conn.send(buf).await?;
                conn.next_reply(Expect::Add((!conn.fixed_reply).then_some(id)))
                    .await
            }
            Self::HttpSse(conn) => {
                let id = conn.next_id;
                conn.next_id += 1;
                request::write_add_call(buf, conn.revision, id, trace);
                conn.post(buf).await?;
                conn.next_reply(Expect::Add((!conn.fixed_reply).then_some(id)))
                    .await
            }
        }
    }
}

/// What a reply must be.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// The `initialize` result for this revision.
    Initialize(Revision),
    /// The `add` result, with this id if given.
    Add(Option<u64>),
    /// Any response (the floor's handshake).
    Anything,
}

impl Expect {
    fn check(self, message: &[u8]) -> Result<Checked, ReplyError> {
        match self {
            Self::Initialize(revision) => reply::check_initialize_reply(message, revision),
            Self::Add(id) => reply::check_add_reply(message, id),
            Self::Anything => Ok(Checked::Passed),
        }
    }
}

/// Which POST of the Streamable HTTP exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PostKind {
    Initialize,
    Initialized,
    Call,
}

/// A Streamable HTTP connection.
struct StreamableConn {
    sender: SendRequest<Full<Bytes>>,
    target: Arc<Target>,
    revision: Revision,
    session: Option<HeaderValue>,
    decoder: SseDecoder,
    next_id: u64,
    fixed_reply: bool,
}

impl StreamableConn {
    /// Opens a new session on this connection: `initialize` (remembering the
    /// `Mcp-Session-Id` of its reply, if any) and `notifications/initialized`.
    async fn handshake(&mut self, buf: &mut Vec<u8>, expect: Expect) -> Result<(), CallError> {
        self.session = None;
        self.next_id = 1;
        request::write_initialize(buf, self.revision);
        let response = self.post(buf, PostKind::Initialize).await?;
        self.session = response.headers().get(MCP_SESSION_ID).cloned();
        read_reply(response, &mut self.decoder, expect).await?;
        let response = self
            .post(request::INITIALIZED, PostKind::Initialized)
            .await?;
        expect_accepted(response).await
    }

    async fn post(&mut self, body: &[u8], kind: PostKind) -> Result<Response<Incoming>, CallError> {
        let mut request = Request::new(Full::new(Bytes::copy_from_slice(body)));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.target.path.clone();
        let headers = request.headers_mut();
        headers.insert(HOST, self.target.host.clone());
        headers.insert(CONTENT_TYPE, APPLICATION_JSON);
        headers.insert(ACCEPT, ACCEPT_BOTH);
        self.target.add_extra(headers);
        if let Some(prover) = &self.target.dpop {
            headers.insert("dpop", prover.proof());
        }
        if let Some(session) = &self.session {
            headers.insert(MCP_SESSION_ID, session.clone());
        }
        if kind != PostKind::Initialize && self.revision.sends_version_header() {
            headers.insert(MCP_PROTOCOL_VERSION, version_header(self.revision));
        }
        if kind == PostKind::Call && !self.revision.has_handshake() {
            headers.insert(MCP_METHOD, TOOLS_CALL);
            headers.insert(MCP_NAME, ADD);
        }
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let ok = match kind {
            PostKind::Initialized => status.is_success(),
            PostKind::Initialize | PostKind::Call => status == StatusCode::OK,
        };
        if !ok {
            return Err(CallError::Status(status));
        }
        Ok(response)
    }
}

/// Drains the body of an accepted notification POST.
async fn expect_accepted(response: Response<Incoming>) -> Result<(), CallError> {
    response.into_body().collect().await?;
    Ok(())
}

fn version_header(revision: Revision) -> HeaderValue {
    HeaderValue::from_static(revision.as_str())
}

/// Reads a JSON or SSE reply to the end of its body and checks it.
async fn read_reply(
    response: Response<Incoming>,
    decoder: &mut SseDecoder,
    expect: Expect,
) -> Result<(), CallError> {
    match ReplyKind::of(response.headers())? {
        ReplyKind::Json => {
            let body = response.into_body().collect().await?.to_bytes();
            match expect.check(&body)? {
                Checked::Passed => Ok(()),
                Checked::NotAResponse => Err(CallError::NotAResponse),
            }
        }
        ReplyKind::Sse => {
            decoder.reset_stream();
            let mut body = response.into_body();
            let mut passed = false;
            // Read to the end even after the reply, so the connection can be reused.
            while let Some(frame) = body.frame().await {
                let Ok(data) = frame?.into_data() else {
                    continue;
                };
                decoder.push(&data);
                for event in &mut *decoder {
                    let Ok(event) = event else {
                        return Err(CallError::Reply(ReplyError::Malformed(
                            "oversized SSE event".into(),
                        )));
                    };
                    if passed || !is_message(event.event()) || event.data().is_empty() {
                        continue;
                    }
                    passed = expect.check(event.data().as_bytes())? == Checked::Passed;
                }
            }
            if passed {
                Ok(())
            } else {
                Err(CallError::StreamEnded)
            }
        }
    }
}

/// Whether an SSE event type carries a JSON-RPC message (`message`, the default).
fn is_message(event_type: Option<&str>) -> bool {
    matches!(event_type, None | Some("" | "message"))
}

/// How a reply body is framed.
enum ReplyKind {
    Json,
    Sse,
}

impl ReplyKind {
    fn of(headers: &HeaderMap) -> Result<Self, CallError> {
        let content_type = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case("application/json") {
            Ok(Self::Json)
        } else if essence.eq_ignore_ascii_case("text/event-stream") {
            Ok(Self::Sse)
        } else {
            Err(CallError::ContentType(content_type.to_owned()))
        }
    }
}

/// A 2024-11-05 HTTP+SSE session: the event stream and a connection for POSTs.
struct SseConn {
    /// The stream's connection; kept so hyper does not close it while the stream is read.
    _stream_sender: SendRequest<Full<Bytes>>,
    sender: SendRequest<Full<Bytes>>,
    stream: Incoming,
    decoder: SseDecoder,
    host: HeaderValue,
    extra: Vec<(HeaderName, HeaderValue)>,
    post_path: Uri,
    revision: Revision,
    next_id: u64,
    fixed_reply: bool,
}

impl SseConn {
    async fn open(
        target: &Target,
        revision: Revision,
        fixed_reply: bool,
    ) -> Result<Self, CallError> {
        let mut get_sender = target.connect().await?;
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.uri_mut() = target.path.clone();
        request.headers_mut().insert(HOST, target.host.clone());
        request.headers_mut().insert(ACCEPT, ACCEPT_SSE);
        target.add_extra(request.headers_mut());
        get_sender.ready().await?;
        let response = get_sender.send_request(request).await?;
        if response.status() != StatusCode::OK {
            return Err(CallError::Status(response.status()));
        }
        if !matches!(ReplyKind::of(response.headers())?, ReplyKind::Sse) {
            return Err(CallError::ContentType("not text/event-stream".into()));
        }
        let mut conn = Self {
            _stream_sender: get_sender,
            sender: target.connect().await?,
            stream: response.into_body(),
            decoder: SseDecoder::new(),
            host: target.host.clone(),
            extra: target.extra.clone(),
            post_path: Uri::default(),
            revision,
            next_id: 1,
            fixed_reply,
        };
        let endpoint = conn.next_event_of("endpoint").await?;
        conn.post_path = post_path(&endpoint)?;
        Ok(conn)
    }

    /// Reads events until one of type `kind`, returning its data.
    async fn next_event_of(&mut self, kind: &str) -> Result<String, CallError> {
        loop {
            for event in &mut self.decoder {
                let Ok(event) = event else { continue };
                if event.event() == Some(kind) {
                    return Ok(event.into_data());
                }
            }
            self.pull().await?;
        }
    }

    /// Reads events until the reply, skipping other messages and events.
    async fn next_reply(&mut self, expect: Expect) -> Result<(), CallError> {
        loop {
            for event in &mut self.decoder {
                let Ok(event) = event else {
                    return Err(CallError::Reply(ReplyError::Malformed(
                        "oversized SSE event".into(),
                    )));
                };
                if !is_message(event.event()) || event.data().is_empty() {
                    continue;
                }
                if expect.check(event.data().as_bytes())? == Checked::Passed {
                    return Ok(());
                }
            }
            self.pull().await?;
        }
    }

    /// Pushes the next chunk of the stream into the decoder.
    async fn pull(&mut self) -> Result<(), CallError> {
        loop {
            match self.stream.frame().await {
                None => return Err(CallError::StreamEnded),
                Some(frame) => {
                    if let Ok(data) = frame?.into_data() {
                        self.decoder.push(&data);
                        return Ok(());
                    }
                }
            }
        }
    }

    /// POSTs one message and drains the (ignored) answer body.
    async fn post(&mut self, body: &[u8]) -> Result<(), CallError> {
        let mut request = Request::new(Full::new(Bytes::copy_from_slice(body)));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.post_path.clone();
        let headers = request.headers_mut();
        headers.insert(HOST, self.host.clone());
        headers.insert(CONTENT_TYPE, APPLICATION_JSON);
        for (name, value) in &self.extra {
            headers.insert(name.clone(), value.clone());
        }
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        if !response.status().is_success() {
            return Err(CallError::Status(response.status()));
        }
        response.into_body().collect().await?;
        Ok(())
    }
}

/// A stdio server: a child process, killed when this is dropped.
struct StdioConn {
    _child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
    line: Vec<u8>,
    revision: Revision,
    next_id: u64,
    fixed_reply: bool,
}

/// The longest reply line read from a stdio server.
const MAX_LINE: usize = 1 << 20;

impl StdioConn {
    fn spawn(command: &[String], revision: Revision, fixed_reply: bool) -> Result<Self, CallError> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| CallError::Stdio(std::io::ErrorKind::InvalidInput.into()))?;
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(CallError::Stdio)?;
        let missing = || CallError::Stdio(std::io::ErrorKind::BrokenPipe.into());
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        Ok(Self {
            _child: child,
            stdin,
            stdout: tokio::io::BufReader::new(stdout),
            line: Vec::with_capacity(512),
            revision,
            next_id: 1,
            fixed_reply,
        })
    }

    /// Writes one message and its newline in one write.
    async fn send(&mut self, message: &[u8]) -> Result<(), CallError> {
        use tokio::io::AsyncWriteExt as _;
        self.line.clear();
        self.line.extend_from_slice(message);
        self.line.push(b'\n');
        self.stdin
            .write_all(&self.line)
            .await
            .map_err(CallError::Stdio)
    }

    /// Reads lines until the reply, skipping requests and notifications.
    async fn next_reply(&mut self, expect: Expect) -> Result<(), CallError> {
        use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
        loop {
            self.line.clear();
            let read = (&mut self.stdout)
                .take(MAX_LINE as u64)
                .read_until(b'\n', &mut self.line)
                .await
                .map_err(CallError::Stdio)?;
            if read == 0 {
                return Err(CallError::Stdio(std::io::ErrorKind::UnexpectedEof.into()));
            }
            let message = self.line.trim_ascii();
            if message.is_empty() {
                continue;
            }
            if expect.check(message)? == Checked::Passed {
                return Ok(());
            }
        }
    }
}

/// The request target for POSTs from an `endpoint` event's data: an absolute URL's path and
/// query, or an absolute path.
fn post_path(endpoint: &str) -> Result<Uri, CallError> {
    let endpoint = endpoint.trim();
    let bad = || CallError::Endpoint(endpoint.to_owned());
    if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        let uri: Uri = endpoint.parse().map_err(|_| bad())?;
        let path = uri.path_and_query().ok_or_else(bad)?;
        return path.as_str().parse().map_err(|_| bad());
    }
    if endpoint.starts_with('/') {
        return endpoint.parse().map_err(|_| bad());
    }
    Err(bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_parse_with_defaults() {
        let config = LoadConfig::from_args([
            "--url",
            "http://127.0.0.1:9/mcp",
            "--revision",
            "2026-07-28",
        ])
        .expect("valid");
        assert_eq!(
            config,
            LoadConfig::new("http://127.0.0.1:9/mcp", Revision::V2026_07_28)
        );
        assert_eq!(config.concurrency, 1);
        assert_eq!(config.transport, Transport::Streamable);

        let config = LoadConfig::from_args([
            "--url",
            "http://h:1/sse",
            "--revision",
            "2024-11-05",
            "--concurrency",
            "32",
            "--warmup",
            "0.3",
            "--duration",
            "1",
            "--timeout",
            "2.5",
            "--fixed-reply",
        ])
        .expect("valid");
        assert_eq!(config.transport, Transport::HttpSse);
        assert_eq!(config.concurrency, 32);
        assert_eq!(config.warmup, Duration::from_millis(300));
        assert_eq!(config.duration, Duration::from_secs(1));
        assert_eq!(config.timeout, Duration::from_millis(2500));
        assert!(config.fixed_reply);
    }

    #[test]
    fn headers_and_answer_url() {
        let config = LoadConfig::from_args([
            "--url",
            "http://127.0.0.1:1/mcp",
            "--revision",
            "2025-11-25",
            "--header",
            "X-Trace: on",
            "--bearer",
            "abc.def.ghi",
            "--ask",
            "--answer-url",
            "http://127.0.0.1:2/mcp",
        ])
        .expect("valid");
        assert_eq!(
            config.headers,
            vec![
                ("X-Trace".to_owned(), "on".to_owned()),
                ("authorization".to_owned(), "Bearer abc.def.ghi".to_owned()),
            ]
        );
        assert_eq!(config.answer_url.as_deref(), Some("http://127.0.0.1:2/mcp"));
        let target = Target::of(&config.url, &config).expect("valid");
        let mut headers = HeaderMap::new();
        target.add_extra(&mut headers);
        assert_eq!(headers["x-trace"], "on");
        assert_eq!(headers["authorization"], "Bearer abc.def.ghi");
        let base = ["--url", "http://h:1/", "--revision", "2025-11-25"];
        for (extra, expected) in [
            (
                &["--answer-url", "http://h:2/"][..],
                ArgsError::AnswerUrlNeedsAsk,
            ),
            (
                &["--header", "no colon"],
                ArgsError::BadValue {
                    flag: "--header".into(),
                    value: "no colon".into(),
                },
            ),
            (
                &["--header", "bad name: x"],
                ArgsError::BadValue {
                    flag: "--header".into(),
                    value: "bad name: x".into(),
                },
            ),
            (
                &["--bearer", "new\nline"],
                ArgsError::BadValue {
                    flag: "--bearer".into(),
                    value: "new\nline".into(),
                },
            ),
        ] {
            let args: Vec<&str> = base.iter().chain(extra).copied().collect();
            assert_eq!(LoadConfig::from_args(args), Err(expected), "{extra:?}");
        }
    }

    #[test]
    fn bad_args() {
        let cases: [(&[&str], ArgsError); 10] = [
            (
                &["--transport", "stdio", "--revision", "2025-03-26"],
                ArgsError::Required("--command"),
            ),
            (
                &[
                    "--transport",
                    "stdio",
                    "--command",
                    "x",
                    "--revision",
                    "2025-03-26",
                    "--concurrency",
                    "2",
                ],
                ArgsError::StdioConcurrency,
            ),
            (
                &[
                    "--url",
                    "http://h:1/",
                    "--revision",
                    "2026-07-28",
                    "--sessions",
                    "5",
                ],
                ArgsError::SessionsNeedHandshake,
            ),
            (
                &[
                    "--url",
                    "http://h:1/",
                    "--revision",
                    "2024-11-05",
                    "--sessions",
                    "5",
                ],
                ArgsError::SessionsNeedHandshake,
            ),
            (&["--revision", "2025-03-26"], ArgsError::Required("--url")),
            (&["--url", "http://h:1/"], ArgsError::Required("--revision")),
            (&["--url"], ArgsError::MissingValue("--url".into())),
            (&["--bogus", "1"], ArgsError::UnknownFlag("--bogus".into())),
            (
                &["--concurrency", "0"],
                ArgsError::BadValue {
                    flag: "--concurrency".into(),
                    value: "0".into(),
                },
            ),
            (
                &["--duration", "-1"],
                ArgsError::BadValue {
                    flag: "--duration".into(),
                    value: "-1".into(),
                },
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(
                LoadConfig::from_args(args.iter().copied()),
                Err(expected),
                "{args:?}"
            );
        }
    }

    #[test]
    fn urls() {
        let target = Target::parse("http://127.0.0.1:8080/mcp?x=1").expect("valid");
        assert_eq!(target.authority, "127.0.0.1:8080");
        assert_eq!(target.host, "127.0.0.1:8080");
        assert_eq!(target.path, "/mcp?x=1");
        let target = Target::parse("http://localhost").expect("valid");
        assert_eq!(target.authority, "localhost:80");
        assert_eq!(target.path, "/");
        for bad in ["https://h/mcp", "h:1/mcp", "", "http://"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn endpoint_events() {
        let table = [
            ("/messages?session_id=abc", Some("/messages?session_id=abc")),
            ("http://127.0.0.1:1/m?s=1", Some("/m?s=1")),
            (" /messages \n", Some("/messages")),
            ("messages", None),
            ("", None),
        ];
        for (data, expected) in table {
            let got = post_path(data).ok().map(|u| u.to_string());
            assert_eq!(got.as_deref(), expected, "{data:?}");
        }
    }

    #[test]
    fn reply_kinds() {
        let table = [
            ("application/json", Some(true)),
            ("Application/JSON; charset=utf-8", Some(true)),
            ("text/event-stream", Some(false)),
            ("text/plain", None),
            ("", None),
        ];
        for (content_type, json) in table {
            let mut headers = HeaderMap::new();
            if !content_type.is_empty() {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
            }
            let got = ReplyKind::of(&headers)
                .ok()
                .map(|k| matches!(k, ReplyKind::Json));
            assert_eq!(got, json, "{content_type:?}");
        }
    }
}
