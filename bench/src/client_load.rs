//! The client rows: the load of [`crate::load`], but every call goes through our `mcp-client`
//! ([`mcp_client::Client::call_tool_as`], reading the result into the few members the check
//! needs).
//!
//! Each worker has its own [`Client`] (its own connection or child process, and session),
//! pinned to the configured revision, and calls `add {a: 2, b: 3}` one call at a time; every
//! result is checked as in [`crate::reply`]. Compared with `mcp-load` against the same server
//! in the same round, this is the client's overhead over a raw hyper loop.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
    },
    time::Instant,
};

use mcp_client::{
    Client,
    transport::{Stderr, Stdio},
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{
    Transport,
    load::{
        self, LoadConfig, LoadError, MAX_OPEN_FAILURES, MEASURE, REOPEN_BACKOFF, Report, STOP,
        Stats,
    },
    reply::AddResult,
    request::{ADD_A, ADD_B},
};

/// Runs the load described by `config` through our client and reports it.
///
/// [`LoadConfig::fixed_reply`] and [`LoadConfig::sessions`] do not apply: the target must
/// answer like a server (the echo floor does).
pub async fn run(config: &LoadConfig) -> Result<Report, LoadError> {
    if config.transport == Transport::Stdio && config.command.is_empty() {
        return Err(LoadError::NoCommand);
    }
    let shared = Arc::new(config.clone());
    let phase = Arc::new(AtomicU8::new(load::WARMUP));
    let workers: Vec<_> = (0..config.concurrency.max(1))
        .map(|_| tokio::spawn(worker(shared.clone(), phase.clone())))
        .collect();
    let measured = load::timeline(config, &phase).await;
    let mut total = Stats::new();
    for worker in workers {
        match worker.await {
            Ok(stats) => total.merge(stats),
            Err(join) => total.error(format!("worker failed: {join}")),
        }
    }
    Ok(load::report(config, &total, measured))
}

async fn worker(config: Arc<LoadConfig>, phase: Arc<AtomicU8>) -> Stats {
    let mut stats = Stats::new();
    let mut open_failures = 0;
    let arguments = json!({"a": ADD_A, "b": ADD_B});
    while phase.load(Ordering::Relaxed) != STOP {
        let client = match tokio::time::timeout(config.timeout, connect(&config)).await {
            Ok(Ok(client)) => client,
            Ok(Err(error)) => {
                stats.error(format!("connect: {error}"));
                open_failures += 1;
                if open_failures >= MAX_OPEN_FAILURES {
                    break;
                }
                tokio::time::sleep(REOPEN_BACKOFF).await;
                continue;
            }
            Err(_) => {
                stats.error("connect: timed out".to_owned());
                break;
            }
        };
        open_failures = 0;
        loop {
            let before = phase.load(Ordering::Relaxed);
            if before == STOP {
                break;
            }
            let started = Instant::now();
            // No timeout of its own around the call: the client bounds every call by
            // `config.timeout` (set in `connect`), and fails it with a timeout error.
            let outcome = call(&client, &config, &arguments).await;
            let elapsed = started.elapsed();
            let checked = outcome.and_then(|result| result.check().map_err(|e| e.to_string()));
            match checked {
                Ok(()) => {
                    if before == MEASURE && phase.load(Ordering::Relaxed) == MEASURE {
                        stats.calls += 1;
                        stats
                            .latency
                            .record(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
                    }
                }
                Err(error) => {
                    stats.error(error);
                    break;
                }
            }
        }
        let _ = client.close().await;
    }
    stats
}

async fn connect(config: &LoadConfig) -> Result<Client, String> {
    let revision = mcp_client::Revision::parse(config.revision.as_str())
        .ok_or_else(|| format!("revision {} unknown to mcp-client", config.revision))?;
    let builder = Client::builder()
        .client_info("mcp-bench-client", env!("CARGO_PKG_VERSION"))
        .revision(revision)
        .timeout(config.timeout);
    let client = match config.transport {
        Transport::HttpSse => builder.connect_sse(&config.url).await,
        Transport::Stdio => {
            let (program, args) = config.command.split_first().ok_or("no command")?;
            let command = Stdio::builder(program).args(args).stderr(Stderr::Null);
            builder.connect_stdio(command).await
        }
        _ => builder.connect_http(&config.url).await,
    };
    client.map_err(|e| e.to_string())
}

/// One `add` call. Over HTTP (Streamable HTTP, and HTTP+SSE) the client reads the result
/// straight into an [`AddResult`] ([`Client::call_tool_as`]), the type the load generator
/// checks raw replies with; stdio hands the client a parsed message, so the result [`Value`] is
/// read into it instead.
async fn call(
    client: &Client,
    config: &LoadConfig,
    arguments: &Value,
) -> Result<AddResult, String> {
    if config.transport != Transport::Stdio {
        client
            .call_tool_as("add", arguments)
            .await
            .map_err(|e| e.to_string())
    } else {
        let result = client
            .call_tool("add", arguments)
            .await
            .map_err(|e| e.to_string())?;
        AddResult::deserialize(&result).map_err(|e| format!("malformed result: {e}"))
    }
}
