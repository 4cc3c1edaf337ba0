//! The CLI's failures, their one-line rendering and their exit codes.

use mcp_client::transport::{CertificateRefusal, TransportError};
use mcp_client::{ErrorKind, Revision};

use crate::cli::TransportChoice;
use crate::exit;

/// Everything that makes `mcp` exit with a non-zero status.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// The command line is wrong: a missing URL, bad JSON, an unknown revision.
    #[error("{0}")]
    Usage(String),
    /// Connecting (spawning the command, the handshake, negotiation) failed.
    #[error("cannot connect to {target}: {source}")]
    Connect {
        /// The URL or command.
        target: String,
        /// The target is a command spoken to on stdio (not a URL).
        stdio: bool,
        /// The HTTP transport asked for (`--transport`), for the hints of a mix-up.
        transport: TransportChoice,
        /// The revision pinned (`--revision`), if any.
        revision: Option<Revision>,
        /// What the client said.
        #[source]
        source: mcp_client::Error,
    },
    /// A request failed after the client connected.
    #[error("{what} failed: {source}")]
    Request {
        /// What was asked, such as `tools/call "add"`.
        what: String,
        /// What the client said.
        #[source]
        source: mcp_client::Error,
    },
    /// The tool ran and reported an error (`isError: true`).
    #[error("tool {tool:?} reported an error: {message}")]
    ToolFailed {
        /// The tool's name.
        tool: String,
        /// The text of its content.
        message: String,
    },
    /// The server asked a question nobody could answer.
    #[error("the server asked {question:?} and nobody could answer")]
    Unanswered {
        /// The question's message.
        question: String,
    },
    /// The command's `--timeout` passed: it bounds the whole command, connecting included.
    #[error("{target} did not answer in time: --timeout {after:?} passed while {doing}")]
    Deadline {
        /// The URL or command.
        target: String,
        /// What the command was doing: connecting, the request.
        doing: String,
        /// The `--timeout`.
        after: std::time::Duration,
    },
    /// `mcp listen` lost the server and could not reconnect within `--reconnect-for`.
    #[error("lost the connection to {target} ({reason}) and could not reconnect within {tried:?}")]
    Lost {
        /// The URL or command.
        target: String,
        /// How the connection was lost.
        reason: String,
        /// How long reconnecting was tried.
        tried: std::time::Duration,
    },
    /// A file (or stdin) named for an argument (`key=@FILE`, `--args-json -`) could not be
    /// read.
    #[error("cannot read {name} for {argument}: {source}")]
    ArgumentFile {
        /// The file (`the file "x.txt"`) or `stdin`.
        name: String,
        /// The argument that named it, as typed.
        argument: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file (or stdin) named for an argument would take what `mcp` reads for one command's
    /// arguments past its cap.
    #[error(
        "{name} (for {argument}) is too large: mcp reads at most {cap} bytes for one command's arguments"
    )]
    ArgumentTooLarge {
        /// The file (`the file "x.txt"`) or `stdin`.
        name: String,
        /// The argument that named it, as typed.
        argument: String,
        /// The cap ([`crate::args::MAX_ARGUMENT_BYTES`]).
        cap: u64,
    },
    /// The user pressed Ctrl-C; the request in flight was cancelled.
    #[error("interrupted; the request in flight was cancelled")]
    Interrupted,
    /// Writing the output failed.
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
    /// `mcp proxy` could not listen, build its server from the upstream's catalog, or serve.
    #[error("the proxy: {0}")]
    Proxy(String),
    /// `mcp bench` was given a URL whose host is not a loopback address, without
    /// `--allow-remote`.
    #[error(
        "{url} is not on this machine: mcp bench loads only loopback addresses (127.0.0.0/8, [::1], localhost)"
    )]
    RemoteTarget {
        /// The URL given.
        url: String,
    },
    /// `mcp bench` ran, and measured calls failed or answered wrong (the report on stdout
    /// counts them by kind).
    #[error("{failed} of {calls} measured calls failed or answered wrong")]
    BenchFailed {
        /// The calls that failed.
        failed: u64,
        /// Every measured call.
        calls: u64,
    },
    /// `mcp bench` ran and no call was answered in the measured time.
    #[error("no call was answered in the measured time")]
    BenchEmpty,
}

impl CliError {
    /// The process exit code (see [`crate::exit`]).
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) | Self::ArgumentFile { .. } | Self::ArgumentTooLarge { .. } => {
                exit::USAGE
            }
            Self::Connect { source, .. } | Self::Request { source, .. } => kind_code(source.kind()),
            Self::ToolFailed { .. } | Self::BenchFailed { .. } => exit::TOOL_ERROR,
            Self::RemoteTarget { .. } => exit::USAGE,
            Self::BenchEmpty => exit::TIMEOUT,
            Self::Unanswered { .. } => exit::UNANSWERED,
            Self::Deadline { .. } => exit::TIMEOUT,
            Self::Interrupted => exit::INTERRUPTED,
            Self::Output(_) | Self::Lost { .. } | Self::Proxy(_) => exit::TRANSPORT,
        }
    }

    /// A short label for the start of the line: the JSON-RPC code, or the kind of failure.
    fn label(&self) -> String {
        match self {
            Self::Usage(_) => "usage".into(),
            Self::ArgumentFile { .. } | Self::ArgumentTooLarge { .. } => "input".into(),
            Self::Connect { source, .. } | Self::Request { source, .. }
                if source.is_rate_limited() =>
            {
                kind_label(source.kind()).into()
            }
            Self::Connect { source, .. } | Self::Request { source, .. } => {
                match (source.code(), source.http_status()) {
                    (Some(code), _) => code.to_string(),
                    (None, Some(status)) => format!("http {status}"),
                    (None, None) => kind_label(source.kind()).into(),
                }
            }
            Self::ToolFailed { .. } => "tool".into(),
            Self::Unanswered { .. } => "unanswered".into(),
            Self::Deadline { .. } => "timeout".into(),
            Self::Interrupted => "interrupted".into(),
            Self::Output(_) => "output".into(),
            Self::Lost { .. } => "transport".into(),
            Self::Proxy(_) => "proxy".into(),
            Self::RemoteTarget { .. } => "remote".into(),
            Self::BenchFailed { .. } | Self::BenchEmpty => "bench".into(),
        }
    }

    /// What to try next, when there is something useful to say.
    fn hint(&self) -> Option<&'static str> {
        let source = match self {
            Self::Usage(_) => return Some("see `mcp --help` or `mcp <COMMAND> --help`"),
            Self::ArgumentFile { .. } => {
                return Some(
                    "check the file's path; a value that starts with @ itself is written @@ (name=@@ada)",
                );
            }
            Self::ArgumentTooLarge { .. } => {
                return Some(
                    "pass a smaller file, or give the server the data another way (a resource, a URL)",
                );
            }
            Self::ToolFailed { message, .. } => {
                return message.contains("argument").then_some(
                    "check the arguments against `mcp tools` (--json shows the schemas)",
                );
            }
            Self::Unanswered { .. } => {
                return Some(
                    "answer with --answer '{...}' (or accept, decline, cancel), or run on a terminal",
                );
            }
            Self::Deadline { .. } => {
                return Some(
                    "raise --timeout, or check the server is answering (the time spent answering \
                     its questions on the terminal is not counted)",
                );
            }
            Self::Output(_) | Self::Interrupted | Self::Proxy(_) => return None,
            Self::RemoteTarget { .. } => {
                return Some(
                    "to load a server on another machine (one you are allowed to load), pass --allow-remote",
                );
            }
            Self::BenchFailed { .. } => {
                return Some(
                    "the report on stdout counts the errors by kind, with the first message of each",
                );
            }
            Self::BenchEmpty => {
                return Some(
                    "raise --duration or --call-timeout, or check the server is answering",
                );
            }
            Self::Lost { .. } => {
                return Some(
                    "is the server still running? (--reconnect-for sets how long listen keeps trying)",
                );
            }
            Self::Connect {
                source,
                stdio: true,
                ..
            } => return stdio_hint(source),
            Self::Connect {
                source,
                transport: TransportChoice::Sse,
                revision,
                target,
                ..
            } => {
                if let Some(hint) = sse_mix_up(source, *revision, target) {
                    return Some(hint);
                }
                source
            }
            Self::Connect { source, .. } | Self::Request { source, .. } => source,
        };
        if source.is_rate_limited() {
            let tool_call =
                matches!(self, Self::Request { what, .. } if what.starts_with("tools/call"));
            return Some(if tool_call {
                "try again after the wait the server asked for; to have mcp wait and retry this \
                 tool call, pass --retry-tool-calls (and --retry-rate-limited N, --timeout)"
            } else {
                "try again after the wait the server asked for, or let mcp wait longer: \
                 --retry-rate-limited N and --timeout SECS"
            });
        }
        if matches!(source.http_status(), Some(401)) && login_was_needed() {
            // The server wants a login and nobody was there to do it (no terminal).
            return Some(LOGIN_HINT);
        }
        let large = REQUEST_SIZE.load(std::sync::atomic::Ordering::SeqCst) >= LARGE_REQUEST;
        let dropped = matches!(
            transport_error(source),
            Some(TransportError::Http(_) | TransportError::Io(_) | TransportError::TooLarge { .. })
        );
        if matches!(source.http_status(), Some(413))
            || (large && (dropped || source.code() == Some(-32600)))
        {
            return Some(TOO_LARGE_HINT);
        }
        if let Some(code) = source.code() {
            let what = match self {
                Self::Request { what, .. } => what.as_str(),
                _ => "",
            };
            return match code {
                -32601 => Some("the server does not offer this: see `mcp discover`"),
                -32602 | -32002 if what.starts_with("resources/") => {
                    Some("list what exists with `mcp resources`")
                }
                -32602 if what.starts_with("prompts/") => {
                    Some("check the name and arguments against `mcp prompts`")
                }
                -32602 if what.starts_with("completion/") => Some(
                    "check the prompt's name and arguments against `mcp prompts`, or the \
                     template's URI against `mcp resources`",
                ),
                -32602 => Some("check the name and arguments against `mcp tools`"),
                _ => None,
            };
        }
        match transport_error(source) {
            Some(TransportError::Exited { stderr, .. }) if stderr.is_empty() => {
                return Some("run the command by itself to see why it ends");
            }
            Some(TransportError::Exited { .. }) => return None,
            Some(TransportError::Io(_)) => {
                return Some("the server's pipes failed: is it still running?");
            }
            Some(TransportError::Http(_)) => return Some("is the server running at that address?"),
            Some(TransportError::PlainHttp { .. }) => {
                return Some("the server speaks plain HTTP; use http:// instead of https://");
            }
            Some(TransportError::Certificate { refusal, .. }) => {
                return Some(match refusal {
                    CertificateRefusal::CaUsedAsServerCertificate => {
                        "the server presents a CA certificate (CA:TRUE) as its own and it is not \
                         pinned here: pass that very certificate with --cacert FILE to accept \
                         exactly it"
                    }
                    CertificateRefusal::WrongName => {
                        "the server's certificate is not for this host name: check the URL's \
                         host against the certificate's subject alternative names"
                    }
                    CertificateRefusal::Expired => {
                        "the server's certificate has expired or is not valid yet"
                    }
                    CertificateRefusal::NotTrusted => {
                        "the server's certificate is not trusted here: pass its CA, or the \
                         server's own certificate, with --cacert FILE"
                    }
                    _ => {
                        "the server's certificate was refused: pass its CA, or the server's own \
                         certificate, with --cacert FILE, and check the URL's host"
                    }
                });
            }
            _ => {}
        }
        if source.http_status().is_some_and(|s| s >= 500) {
            return Some("the server failed: its logs should say why");
        }
        if matches!(source.http_status(), Some(401 | 403)) {
            return Some(
                "the server wants credentials: pass them with -H \"Authorization: Bearer TOKEN\"",
            );
        }
        if matches!(source.http_status(), Some(404 | 405)) {
            return Some(
                "check the URL's path: Streamable HTTP is usually at /mcp, HTTP+SSE at /sse (with --transport sse)",
            );
        }
        match source.kind() {
            ErrorKind::Transport | ErrorKind::Closed => {
                Some("is the server running at that address, and is it an MCP endpoint?")
            }
            ErrorKind::Timeout => Some("raise --timeout, or check the server is answering"),
            ErrorKind::UnsupportedVersion => Some(
                "see which revisions it speaks with `mcp discover`, then pin one with --revision",
            ),
            ErrorKind::Protocol => {
                Some("check it is an MCP endpoint (`mcp discover`), or try --transport sse")
            }
            ErrorKind::Unsupported => {
                Some("pin another revision with --revision (see `mcp discover`)")
            }
            ErrorKind::InputRequired | ErrorKind::TooManyRounds => Some(
                "answer with --answer '{...}' (or accept, decline, cancel), or run on a terminal",
            ),
            ErrorKind::InvalidInput => Some("check the URL and the arguments"),
            ErrorKind::Tls => Some(
                "the server's certificate is not trusted here or not for this host name: pass its CA with --cacert FILE, and check the URL's host",
            ),
            ErrorKind::LimitExceeded => Some(
                "the server's list does not end (a fresh nextCursor on every page): report it to the server's authors",
            ),
            _ => None,
        }
    }

    /// The authorization server's refusal behind a failure (the user pressed Deny): said in
    /// one sentence of its own rather than through the layers it came up.
    fn denied(&self) -> Option<String> {
        let (Self::Connect { source, .. } | Self::Request { source, .. }) = self else {
            return None;
        };
        let Some(TransportError::Authorization(error)) = transport_error(source) else {
            return None;
        };
        let mcp_client::oauth::OAuthError::Denied { error, description } = error.as_ref() else {
            return None;
        };
        let description = description
            .as_deref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        let target = match self {
            Self::Connect { target, .. } => format!(" for {target}"),
            _ => String::new(),
        };
        Some(format!(
            "the authorization{target} was denied ({error}{description}); nothing was kept"
        ))
    }

    /// The one line printed on stderr: `mcp: error [LABEL]: MESSAGE (try: HINT)`.
    pub(crate) fn line(&self) -> String {
        if let Some(denied) = self.denied() {
            return format!(
                "mcp: error [denied]: {} (try: run `mcp login URL` again and approve)",
                one_line(&denied)
            );
        }
        let message = one_line(&self.to_string());
        match self.hint() {
            Some(hint) => format!("mcp: error [{}]: {message} (try: {hint})", self.label()),
            None => format!("mcp: error [{}]: {message}", self.label()),
        }
    }
}

/// The transport's own error behind a client failure, when there is one.
fn transport_error(error: &mcp_client::Error) -> Option<&TransportError> {
    std::error::Error::source(error)?.downcast_ref()
}

/// The exit code of a client failure.
fn kind_code(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::Rpc => exit::SERVER_ERROR,
        ErrorKind::Timeout => exit::TIMEOUT,
        ErrorKind::Transport | ErrorKind::Closed | ErrorKind::Tls => exit::TRANSPORT,
        ErrorKind::InputRequired | ErrorKind::TooManyRounds => exit::UNANSWERED,
        ErrorKind::InvalidInput => exit::USAGE,
        ErrorKind::RateLimited => exit::RATE_LIMITED,
        _ => exit::PROTOCOL,
    }
}

fn kind_label(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Rpc => "server",
        ErrorKind::Timeout => "timeout",
        ErrorKind::Transport => "transport",
        ErrorKind::Closed => "closed",
        ErrorKind::Protocol => "protocol",
        ErrorKind::UnsupportedVersion => "version",
        ErrorKind::TooManyRounds | ErrorKind::InputRequired => "unanswered",
        ErrorKind::Unsupported => "unsupported",
        ErrorKind::InvalidInput => "input",
        ErrorKind::LimitExceeded => "limit",
        ErrorKind::Tls => "tls",
        ErrorKind::RateLimited => "rate limited",
        _ => "client",
    }
}

/// `text` with every run of whitespace (newlines included) collapsed to one space.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What to try when `--transport sse` could not connect and the cause is a mix-up: a revision
/// HTTP+SSE does not carry, or a URL that is not an HTTP+SSE stream (a Streamable HTTP `/mcp`
/// endpoint refuses the bare GET).
fn sse_mix_up(
    source: &mcp_client::Error,
    revision: Option<Revision>,
    target: &str,
) -> Option<&'static str> {
    if revision.is_some_and(|r| !r.features().has_handshake) {
        return Some(
            "HTTP+SSE carries only the revisions with an initialize handshake (2024-11-05 to \
             2025-11-25), not this one: drop --transport sse and give the Streamable HTTP URL \
             (usually /mcp), or pin --revision 2025-11-25",
        );
    }
    let status = source.http_status()?;
    if !(400..500).contains(&status) || matches!(status, 401 | 403) {
        return None;
    }
    let path = target.split(['?', '#']).next().unwrap_or(target);
    Some(if path.trim_end_matches('/').ends_with("/mcp") {
        "this is a Streamable HTTP endpoint (/mcp), not an HTTP+SSE stream: drop --transport \
         sse (or use --transport streamable); HTTP+SSE servers are usually at /sse"
    } else {
        "the URL did not open an HTTP+SSE stream: for a Streamable HTTP endpoint (usually /mcp) \
         drop --transport sse; HTTP+SSE servers are usually at /sse"
    })
}

/// What to try when a command given with `--stdio` could not be spoken to: the URL hints
/// (paths, `--transport sse`) do not apply.
fn stdio_hint(source: &mcp_client::Error) -> Option<&'static str> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(source);
    while let Some(error) = cause {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::NotFound => {
                    return Some("no such command: check its name and PATH");
                }
                std::io::ErrorKind::PermissionDenied => {
                    return Some("the command is not executable");
                }
                // A broken pipe and the like: the command started and went away.
                _ => break,
            }
        }
        cause = error.source();
    }
    match source.kind() {
        ErrorKind::Transport | ErrorKind::Closed | ErrorKind::Protocol => Some(
            "the command ran but did not speak MCP on stdout: run it alone to see its messages (its stderr is shown above)",
        ),
        ErrorKind::Timeout => Some("raise --timeout, or check the command answers on stdout"),
        ErrorKind::UnsupportedVersion => Some(
            "see which revisions it speaks with `mcp discover --stdio ...`, then pin one with --revision",
        ),
        _ => None,
    }
}

/// The size of a request built from files or stdin (`key=@FILE`, `--args-json`), for the hint
/// of a server that refuses or drops a request that large.
static REQUEST_SIZE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Records the size of the arguments read from files or stdin.
pub(crate) fn note_request_size(bytes: usize) {
    REQUEST_SIZE.store(bytes, std::sync::atomic::Ordering::SeqCst);
}

/// Requests this large are said to be a likely cause when the server drops the connection
/// while the body is sent (a server that answers 413 early and closes).
const LARGE_REQUEST: usize = 1024 * 1024;

/// What to try when a large request failed: the server's body limit.
const TOO_LARGE_HINT: &str = "the request may be larger than the server accepts (mcp-server's \
    default limit is 4 MiB, HttpConfig::body_limit; for stdio, StdioConfig::max_line): send \
    less, or raise the server's limit";

/// Set when a login was needed and could not run in this process (no terminal).
static LOGIN_NEEDED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// What to do about a server's 401 when no login could run (no terminal).
pub(crate) const LOGIN_HINT: &str =
    "run `mcp login URL` on a terminal first, or use --client-credentials";

/// Records that a login was needed and could not run (for the error's hint).
pub(crate) fn note_login_needed() {
    LOGIN_NEEDED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether a login was needed and could not run in this process (for the error's hint).
pub(crate) fn login_was_needed() -> bool {
    LOGIN_NEEDED.load(std::sync::atomic::Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_single_and_carry_label_and_hint() {
        let usage = CliError::Usage("give a URL\nor --stdio".into());
        assert_eq!(usage.exit_code(), exit::USAGE);
        let line = usage.line();
        assert!(!line.contains('\n'));
        assert!(line.starts_with("mcp: error [usage]: give a URL or --stdio (try: "));
        let tool = CliError::ToolFailed {
            tool: "boom".into(),
            message: "it broke".into(),
        };
        assert_eq!(tool.exit_code(), exit::TOOL_ERROR);
        assert!(
            tool.line()
                .contains("[tool]: tool \"boom\" reported an error: it broke")
        );
    }
}
