//! `mcp`: a command-line client for trying any MCP server, built on `mcp-client`.
//!
//! ```text
//! mcp tools     <URL | --stdio CMD>                  the tools, as a table
//! mcp call      <URL | --stdio CMD> TOOL [ARGS]...   call a tool (JSON, key=value, key:=string)
//! mcp resources <URL | --stdio CMD>                  resources and resource templates
//! mcp read      <URL | --stdio CMD> URI              read a resource
//! mcp prompts   <URL | --stdio CMD>                  the prompts
//! mcp prompt    <URL | --stdio CMD> NAME [k=v]...    get a prompt
//! mcp complete  <URL | --stdio CMD> --prompt NAME --arg k=v   complete an argument
//! mcp discover  <URL | --stdio CMD>                  what the server is, which revisions it speaks
//! mcp listen    <URL | --stdio CMD> [--resource URI] notifications as they come
//! mcp login     <URL>                                authorize with a protected server now
//! mcp logout    <URL>                                forget the tokens kept for a server
//! mcp auth      status                               the OAuth tokens kept
//! mcp console   [URL] [--stdio CMD]... [--no-open]   a console in the browser (see below)
//! mcp proxy     <--upstream URL | --stdio CMD> [--addr HOST:PORT | --stdio-front]
//!                                                    serve a server on every revision and transport
//! mcp bench     <URL | --stdio CMD> <--tool NAME [ARGS]... | --read URI> [--concurrency N]
//!               [--duration SECS | --count N] [--expect-text S | --expect-json PTR=V]...
//!                                                    load-test a server (see below)
//! ```
//!
//! Every command takes `--revision VERSION` (speak only that revision; default: negotiate as
//! the spec's dual-era client does), `--json` (one JSON document on stdout; `listen` prints one
//! line per notification), `--transport auto|streamable|sse` (default `auto`: Streamable HTTP,
//! falling back to HTTP+SSE), `--timeout SECS` (the whole command, connecting
//! included: one deadline, default 60; the time a person spends answering a question on the
//! terminal is not counted), `--log-level LEVEL`
//! (asked of the server, default `info`), `-H "Name: value"` (HTTP headers) and `--answer`.
//!
//! **Output.** Results go to stdout: aligned tables for lists, the text of a tool result,
//! resource contents as they are. Everything else goes to stderr: progress (a bar when stderr
//! is a terminal, `progress N/TOTAL message` lines otherwise), the server's log messages as
//! `[level] logger: message`, notes starting with `mcp: `, and errors.
//!
//! **Questions.** When the server asks (form or URL elicitation, whatever mechanism the
//! revision uses: MRTR, a pushed request, or the argument convention), the CLI shows the message
//! and asks accept, decline or cancel, then one prompt per field of the requested schema
//! (strings, numbers, integers, booleans, enums with numbered choices, multi-select enums),
//! with defaults and required fields enforced. It prompts when stdin is a terminal, or always
//! with `--interactive`. `--answer` answers without asking: `accept`, `decline`, `cancel`, a
//! JSON object of field values (accept with that content) or a whole `{"action": ...}` result;
//! repeat it for several questions (the last one is reused).
//!
//! **Console.** `mcp console [URL] [--stdio CMD]...` serves a page on 127.0.0.1 (a random port
//! and a random token in the fragment of the URL it prints and opens, `/#token=...`; `--no-open`
//! or `--no-browser` only prints it) that connects, lists, calls tools from forms generated
//! from their schemas, reads, answers the server's questions in a dialog, shows progress, logs
//! and every JSON-RPC message, and compares the server on every revision side by side. The page
//! sends the token in the `X-Mcp-Console-Token` header, the only place the API takes it from (no
//! cookie); the browser is opened on a private launch file, so the token is on no command line.
//! The page runs only the commands given with `--stdio` (`--allow-any-stdio`, unsafe, lifts
//! that). Requests without the token or from another origin are refused; everything it keeps is
//! bounded (`mcp console --help`).
//!
//! **Bench.** `mcp bench` drives the server through `mcp-client` (so any revision and
//! transport): `--sessions K` clients (default 1) shared by `--concurrency N` callers (default
//! 8, at most 1024), each making one call at a time, the tool with its arguments or a resource
//! read (`--read URI`); `--warmup SECS` (default 1, not counted), then `--duration SECS`
//! (default 10) or `--count N` calls; each call bounded by `--call-timeout` (default 10 s).
//! Every reply is checked (`isError`, `--expect-text`, `--expect-json POINTER=VALUE`) and
//! failures are counted by kind (timeout, transport, `json-rpc CODE`, tool error, wrong answer,
//! rate limited: never retried). Latencies go into a fixed-memory histogram (percentiles within
//! 1.6%). The report (throughput, percentiles, errors by kind, the negotiated revision, the
//! transport, the server's name and version) goes to stdout, `--json` as one object; a
//! progress line goes to stderr on a terminal or with `--progress`. A URL whose host is not a
//! loopback address is refused unless `--allow-remote` is given. It exits 1 when a measured
//! call failed.
//!
//! **Errors** are one line on stderr: `mcp: error [LABEL]: MESSAGE (try: WHAT TO TRY)`, where
//! the label is the server's JSON-RPC code when it sent one, and the process exits with one of
//! the codes in [`exit`].

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Feature badges on docs.rs (nightly rustdoc, `--cfg docsrs`) for feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]
mod args;
mod ask;
mod auth;
mod bench;
mod cli;
mod commands;
mod connect;
mod console;
mod error;
mod interrupt;
mod output;
mod proxy;
mod ui;

use std::process::ExitCode;

use clap::Parser;

/// The exit codes of `mcp` (also listed by `mcp --help`).
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// The tool ran and reported an error (`isError: true`); its text is on the error line.
    /// `mcp bench`: measured calls failed or answered wrong (the report counts them by kind).
    pub const TOOL_ERROR: u8 = 1;
    /// Usage: bad arguments, bad JSON, an unknown revision or log level.
    pub const USAGE: u8 = 2;
    /// The server could not be reached: connection refused, the command did not start or
    /// exited, the stream closed.
    pub const TRANSPORT: u8 = 3;
    /// The server refused the request with a JSON-RPC error.
    pub const SERVER_ERROR: u8 = 4;
    /// Protocol: no revision in common, an unreadable reply, an operation the revision lacks.
    pub const PROTOCOL: u8 = 5;
    /// A request timed out (see `--timeout`); `mcp bench`: no call was answered in the
    /// measured time.
    pub const TIMEOUT: u8 = 6;
    /// The server asked a question nobody could answer: no terminal and no `--answer`.
    pub const UNANSWERED: u8 = 7;
    /// Rate limited: the server refused the request for now (HTTP 429, or the JSON-RPC error
    /// `-31429`) and kept refusing after `--retry-rate-limited` retries, or asked for a wait
    /// past `--timeout`; the error line names the wait it asked for.
    pub const RATE_LIMITED: u8 = 8;
    /// Interrupted by Ctrl-C (SIGINT); the request in flight was cancelled on the server and
    /// the session closed. `mcp listen` ends with [`OK`] instead: Ctrl-C is how it stops.
    pub const INTERRUPTED: u8 = 130;
}

/// Runs `mcp` with the process's arguments and returns its exit code.
///
/// Builds a single-threaded tokio runtime; call it from `main`, not from inside a runtime.
pub fn run() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp: error [runtime]: cannot start the async runtime: {e}");
            return ExitCode::from(exit::TRANSPORT);
        }
    };
    let result = runtime.block_on(commands::run(&cli.global, cli.command));
    // A prompt may still be blocked reading the terminal (Ctrl-C while it waited): dropping
    // the runtime would wait for that read, so the runtime is let go without waiting for its
    // blocking threads; the process exits and ends them.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::from(exit::OK),
        // The reader of stdout went away (`mcp tools URL | head -1`): nothing left to say.
        Err(error::CliError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::from(exit::OK)
        }
        Err(e) => {
            eprintln!("{}", e.line());
            ExitCode::from(e.exit_code())
        }
    }
}

// The README's examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
