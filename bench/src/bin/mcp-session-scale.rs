//! `mcp-session-scale`: what one `initialize` costs when the endpoint holds few sessions and
//! when it holds many (issue 27: the same within 1.5x at 100 and at 100,000 sessions).
//!
//! ```text
//! mcp-session-scale [--small 100] [--large 100000] [--batch 1000] [--rounds 5]
//! ```
//!
//! In process, without sockets (what is measured is the endpoint's session bookkeeping, not
//! the network): our HTTP endpoint on the memory store, driven through
//! [`HttpEndpoint::handle`] on one thread. For each size it opens sessions up to that count
//! (not measured), then measures `rounds` batches of `batch` `initialize` requests
//! (2025-11-25, each minting a session), ending the batch's sessions after each batch (not
//! measured) so the count stays at the size. Prints one JSON line: the median microseconds
//! per `initialize` at each size and their ratio.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use mcp_server::Server;
use mcp_server::http::{HttpConfig, HttpEndpoint};

struct Options {
    small: usize,
    large: usize,
    batch: usize,
    rounds: usize,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        small: 100,
        large: 100_000,
        batch: 1000,
        rounds: 5,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args
            .next()
            .ok_or(format!("{arg} needs a value"))?
            .parse::<usize>()
            .map_err(|e| format!("{arg}: {e}"))?
            .max(1);
        match arg.as_str() {
            "--small" => options.small = value,
            "--large" => options.large = value,
            "--batch" => options.batch = value,
            "--rounds" => options.rounds = value,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(options)
}

const INITIALIZE: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-session-scale","version":"1"}}}"#;

/// Sends one `initialize`; the new session's id.
async fn initialize(endpoint: &HttpEndpoint) -> Result<String, String> {
    let request = http::Request::post("/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from_static(INITIALIZE)))
        .map_err(|e| e.to_string())?;
    let response = endpoint.handle(request).await;
    let status = response.status();
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let _ = response.into_body().collect().await;
    id.ok_or_else(|| format!("initialize answered {status} without a session"))
}

/// Ends session `id`.
async fn delete(endpoint: &HttpEndpoint, id: &str) -> Result<(), String> {
    let request = http::Request::delete("/mcp")
        .header("host", "127.0.0.1")
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-11-25")
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let response = endpoint.handle(request).await;
    if response.status() == http::StatusCode::NO_CONTENT {
        Ok(())
    } else {
        Err(format!("DELETE answered {}", response.status()))
    }
}

/// Opens sessions until the endpoint holds `size`, then the median microseconds per
/// `initialize` over `rounds` batches.
async fn at_size(
    endpoint: &HttpEndpoint,
    open: &mut usize,
    size: usize,
    options: &Options,
) -> Result<f64, String> {
    while *open < size {
        initialize(endpoint).await?;
        *open += 1;
    }
    let mut per_call = Vec::with_capacity(options.rounds);
    let mut minted = Vec::with_capacity(options.batch);
    // One more batch than measured: the first warms the allocator and caches up.
    for round in 0..=options.rounds {
        minted.clear();
        let started = Instant::now();
        for _ in 0..options.batch {
            minted.push(initialize(endpoint).await?);
        }
        let elapsed = started.elapsed();
        if round > 0 {
            per_call.push(elapsed.as_secs_f64() * 1e6 / options.batch as f64);
        }
        for id in &minted {
            delete(endpoint, id).await?;
        }
    }
    per_call.sort_by(f64::total_cmp);
    Ok(per_call[per_call.len() / 2])
}

async fn run(options: Options) -> Result<(), String> {
    let server = Server::builder("mcp-session-scale", env!("CARGO_PKG_VERSION"))
        .build()
        .map_err(|e| e.to_string())?;
    let config = HttpConfig::new()
        .max_sessions(options.large + options.batch + 1)
        // One client makes every session: no per-address quota.
        .max_sessions_per_peer(usize::MAX)
        .session_ttl(Duration::from_secs(3600));
    let endpoint = HttpEndpoint::new(server, config);
    let mut open = 0;
    let small_us = at_size(&endpoint, &mut open, options.small, &options).await?;
    let large_us = at_size(&endpoint, &mut open, options.large, &options).await?;
    let report = serde_json::json!({
        "small": options.small,
        "large": options.large,
        "batch": options.batch,
        "rounds": options.rounds,
        "small_us": small_us,
        "large_us": large_us,
        "ratio": large_us / small_us,
    });
    println!("{report}");
    Ok(())
}

fn main() -> ExitCode {
    let result = options().and_then(|options| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(run(options))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp-session-scale: {err}");
            ExitCode::FAILURE
        }
    }
}
