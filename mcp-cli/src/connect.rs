//! Turning the command line into a connected [`Client`].

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Uri};
use mcp_client::oauth::{OAuth, OAuthConfig, OAuthTransport};
use mcp_client::trace::{TraceContext, TraceParent};
use mcp_client::transport::{Https, Stderr, Stdio, StreamableHttp};
use mcp_client::{
    Asks, Client, ClientBuilder, LogLevel, RateLimitRetry, Revision, TracePropagation,
};

use crate::args::{Canned, canned_answer, split_command};
use crate::ask::Asker;
use crate::cli::{Global, TransportChoice};
use crate::error::CliError;
use crate::ui::Ui;

/// The trace context of `--traceparent`, else with `-v` a new trace (random ids, sampled),
/// else none.
fn trace_context(global: &Global) -> Result<Option<TraceContext>, CliError> {
    if let Some(text) = &global.traceparent {
        let parent = TraceParent::parse(text.trim())
            .map_err(|e| CliError::Usage(format!("--traceparent {text:?}: {e}")))?;
        return Ok(Some(TraceContext::new(parent)));
    }
    if !global.verbose {
        return Ok(None);
    }
    new_trace()
        .map(Some)
        .ok_or_else(|| CliError::Usage("no random trace id from the system".into()))
}

/// A new trace: random trace and span ids, sampled (`None` when the system has no
/// randomness to give).
pub(crate) fn new_trace() -> Option<TraceContext> {
    let mut ids = [0u8; 24];
    getrandom::fill(&mut ids).ok()?;
    let (trace_id, span_id) = ids.split_at(16);
    TraceParent::new(
        trace_id.try_into().ok()?,
        span_id.try_into().ok()?,
        TraceParent::SAMPLED,
    )
    .map(TraceContext::new)
}

/// Where the server is.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// An HTTP URL.
    Url(String),
    /// A command to spawn: program and arguments.
    Stdio(Vec<String>),
}

impl Target {
    /// How the target is named in messages.
    pub(crate) fn name(&self) -> String {
        match self {
            Self::Url(url) => url.clone(),
            Self::Stdio(words) => format!("`{}`", words.join(" ")),
        }
    }
}

/// Everything needed to connect, read once from the global options.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) target: Target,
    pub(crate) transport: TransportChoice,
    pub(crate) revision: Option<Revision>,
    pub(crate) json: bool,
    pub(crate) timeout: Duration,
    pub(crate) log_level: LogLevel,
    /// `--retry-rate-limited`: retries of a rate-limited request.
    retry_rate_limited: u32,
    /// `--retry-tool-calls`: retry rate-limited tool calls not annotated idempotent.
    retry_tool_calls: bool,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// The trace context every request carries (`--traceparent`, or a new trace with `-v`).
    trace: Option<TraceContext>,
    https: Option<Https>,
    /// OAuth for a URL target.
    pub(crate) oauth: Option<OAuthConfig>,
    pub(crate) ui: Arc<Ui>,
    pub(crate) asker: Arc<Asker>,
}

impl Session {
    /// Reads the options and takes the target off the front of `words` (unless `--stdio`).
    pub(crate) fn new(global: &Global, words: &mut Vec<String>) -> Result<Self, CliError> {
        Self::new_for(global, words, false)
    }

    /// [`Session::new`]; `login`: a user is there to authorize even without a terminal
    /// (`mcp login`).
    pub(crate) fn new_for(
        global: &Global,
        words: &mut Vec<String>,
        login: bool,
    ) -> Result<Self, CliError> {
        if global.stdio.len() > 1 {
            return Err(CliError::Usage(
                "--stdio is given more than once (only mcp console offers several)".into(),
            ));
        }
        let target = match global.stdio.first() {
            Some(command) => Target::Stdio(split_command(command)?),
            None => {
                if words.is_empty() {
                    return Err(CliError::Usage(
                        "give the server's URL, or --stdio CMD to spawn it".into(),
                    ));
                }
                let url = words.remove(0);
                if !url.starts_with("http://") && !url.starts_with("https://") {
                    return Err(CliError::Usage(format!(
                        "{url:?} is not an http:// or https:// URL (for a local command use --stdio CMD)"
                    )));
                }
                Target::Url(url)
            }
        };
        let revision = match &global.revision {
            Some(text) => Some(Revision::parse(text).ok_or_else(|| {
                let known: Vec<&str> = Revision::ALL.iter().map(|r| r.as_str()).collect();
                CliError::Usage(format!(
                    "unknown revision {text:?}; known: {}",
                    known.join(", ")
                ))
            })?),
            None => None,
        };
        let timeout = Duration::try_from_secs_f64(global.timeout)
            .ok()
            .filter(|t| !t.is_zero())
            .ok_or_else(|| {
                CliError::Usage("--timeout must be a positive number of seconds".into())
            })?;
        let log_level: LogLevel = global
            .log_level
            .parse()
            .map_err(|_| CliError::Usage(format!("unknown log level {:?}", global.log_level)))?;
        let mut headers = Vec::new();
        for header in &global.headers {
            let (name, value) = header.split_once(':').ok_or_else(|| {
                CliError::Usage(format!("--header {header:?} is not \"Name: value\""))
            })?;
            let name = HeaderName::try_from(name.trim())
                .map_err(|e| CliError::Usage(format!("--header {header:?}: {e}")))?;
            let value = HeaderValue::try_from(value.trim())
                .map_err(|e| CliError::Usage(format!("--header {header:?}: {e}")))?;
            headers.push((name, value));
        }
        let trace = trace_context(global)?;
        let https = match &global.cacert {
            Some(path) => Some(
                Https::new()
                    .add_ca_file(path)
                    .map_err(|e| CliError::Usage(format!("--cacert: {e}")))?,
            ),
            None => None,
        };
        let canned = global
            .answer
            .iter()
            .map(|a| canned_answer(a))
            .collect::<Result<Vec<Canned>, _>>()?;
        let ui = Arc::new(Ui::new());
        let interactive = global.interactive || {
            use std::io::IsTerminal;
            std::io::stdin().is_terminal()
        };
        let asker = Arc::new(Asker::new(canned, interactive, ui.clone()));
        // An Authorization header given by hand replaces OAuth.
        let by_hand = headers
            .iter()
            .any(|(name, _)| *name == http::header::AUTHORIZATION);
        let oauth = match target {
            Target::Url(_) if !by_hand => Some(crate::auth::config(
                global,
                https.as_ref(),
                interactive || login,
            )?),
            _ => None,
        };
        if global.verbose
            && let Some(trace) = &trace
        {
            ui.note(&format!(
                "trace {} (requests carry traceparent {})",
                trace.traceparent.trace_id_hex(),
                trace.traceparent
            ));
        }
        Ok(Self {
            trace,
            oauth,
            target,
            transport: global.transport,
            revision,
            json: global.json,
            timeout,
            log_level,
            retry_rate_limited: global.retry_rate_limited,
            retry_tool_calls: global.retry_tool_calls,
            headers,
            https,
            ui,
            asker,
        })
    }

    /// The client builder with every option applied, pinned to `revision` when given.
    fn builder(&self, revision: Option<Revision>) -> ClientBuilder {
        let ui = self.ui.clone();
        let asker = self.asker.clone();
        let mut builder = Client::builder()
            .client_info("mcp-cli", env!("CARGO_PKG_VERSION"))
            .timeout(self.timeout)
            .log_level(self.log_level)
            .on_notification(move |n| ui.notification(n))
            .on_ask(Asks::none().elicitation().url_elicitation(), move |q| {
                asker.clone().answer(q)
            });
        // Tools the server runs as tasks (the Tasks extension) are followed to their result.
        builder = builder.tasks(mcp_client::TaskPolling::new());
        builder = builder.rate_limit_retry(self.rate_limit_retry());
        if let Some(revision) = revision {
            builder = builder.revision(revision);
        }
        for (name, value) in &self.headers {
            builder = builder.header(name.clone(), value.clone());
        }
        if let Some(https) = &self.https {
            builder = builder.https(https.clone());
        }
        if let Some(trace) = &self.trace {
            builder = builder.trace_context(TracePropagation::Context(trace.clone()));
        }
        if let Some(oauth) = &self.oauth {
            builder = builder.oauth(oauth.clone());
        }
        builder
    }

    /// How rate-limited requests are retried: `--retry-rate-limited` times, the waits within
    /// `--timeout`, each announced on stderr.
    fn rate_limit_retry(&self) -> RateLimitRetry {
        let ui = self.ui.clone();
        RateLimitRetry::new()
            .max_attempts(self.retry_rate_limited.saturating_add(1))
            .max_wait(self.timeout)
            .retry_tool_calls(self.retry_tool_calls)
            .on_retry(move |error, wait| ui.note(&retry_note(error, wait)))
    }

    /// The error of a command whose `--timeout` passed while `doing` (connecting, the request).
    pub(crate) fn deadline_passed(&self, doing: &str) -> CliError {
        CliError::Deadline {
            target: self.target.name(),
            doing: doing.to_owned(),
            after: self.timeout,
        }
    }

    /// Connects as the options say.
    pub(crate) async fn connect(&self) -> Result<Client, CliError> {
        self.connect_as(self.revision, self.transport, true).await
    }

    /// Connects pinned to `revision` (or negotiating) over `transport`. `remember` lets the
    /// client reuse what it learnt about the origin; `discover` turns it off so every probe
    /// starts from nothing.
    pub(crate) async fn connect_as(
        &self,
        revision: Option<Revision>,
        transport: TransportChoice,
        remember: bool,
    ) -> Result<Client, CliError> {
        self.connect_by(revision, transport, remember, |builder| builder)
            .await
    }

    /// Connects as the options say, with `configure` applied last to the client builder (`mcp
    /// proxy` relays the server's questions downstream instead of asking on the terminal).
    pub(crate) async fn connect_configured(
        &self,
        configure: impl FnOnce(ClientBuilder) -> ClientBuilder,
    ) -> Result<Client, CliError> {
        self.connect_by(self.revision, self.transport, true, configure)
            .await
    }

    async fn connect_by(
        &self,
        revision: Option<Revision>,
        transport: TransportChoice,
        remember: bool,
        configure: impl FnOnce(ClientBuilder) -> ClientBuilder,
    ) -> Result<Client, CliError> {
        let builder = configure(self.builder(revision).remember_era(remember));
        let connected = match &self.target {
            Target::Stdio(words) => {
                // Its stderr still reaches the terminal as it comes; its end explains an exit.
                let command = Stdio::builder(&words[0])
                    .args(&words[1..])
                    .stderr(Stderr::Tee);
                builder.connect_stdio(command).await
            }
            Target::Url(url) => match transport {
                TransportChoice::Auto => builder.connect_http(url).await,
                TransportChoice::Sse => builder.connect_sse(url).await,
                TransportChoice::Streamable => {
                    let uri: Uri = url
                        .parse()
                        .map_err(|e| CliError::Usage(format!("invalid URL {url:?}: {e}")))?;
                    let mut transport = StreamableHttp::builder(uri);
                    for (name, value) in &self.headers {
                        transport = transport.header(name.clone(), value.clone());
                    }
                    if let Some(https) = &self.https {
                        transport = transport.https(https.clone());
                    }
                    match &self.oauth {
                        Some(oauth) => {
                            let oauth = OAuth::new(oauth.clone(), url)
                                .map_err(|e| CliError::Usage(format!("{url:?}: {e}")))?;
                            builder
                                .connect(OAuthTransport::new(Arc::new(transport.build()), oauth))
                                .await
                        }
                        None => builder.connect(transport.build()).await,
                    }
                }
            },
        };
        connected.map_err(|source| CliError::Connect {
            target: self.target.name(),
            stdio: matches!(self.target, Target::Stdio(_)),
            transport,
            revision,
            source,
        })
    }
}

/// The line printed when a rate-limited request will be sent again:
/// `rate limited by the server (LIMIT), retrying in 2 s`.
pub(crate) fn retry_note(error: &mcp_client::Error, wait: Duration) -> String {
    let limit = error
        .rate_limit()
        .map(|name| format!(" ({name})"))
        .unwrap_or_default();
    format!(
        "rate limited by the server{limit}, retrying in {}",
        mcp_client::rate_limit::wait_text(wait)
    )
}
