//! Calls one tool in a loop: the client's per-call path, for profiling.
//!
//! ```text
//! cargo run --release -p everymcp-client --example call_loop -- URL [REVISION] [CALLS]
//! ```
//!
//! Connects to the Streamable HTTP endpoint `URL` pinned to `REVISION` (default 2026-07-28),
//! calls `add {a: 2, b: 3}` `CALLS` times (default 1000) one after another on a single-threaded
//! runtime, and closes. Run it twice under `valgrind --tool=callgrind` with different `CALLS`:
//! the difference in instructions divided by the difference in calls is the cost of one call,
//! free of the connect and the runtime's start-up. `mcp-floor --echo` (package `mcp-bench`) is a
//! server that answers it.

use std::process::ExitCode;

use mcp_client::{Client, Revision};
use serde_json::json;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(url) = args.next() else {
        eprintln!("usage: call_loop URL [REVISION] [CALLS]");
        return ExitCode::from(2);
    };
    let revision = args
        .next()
        .map_or(Some(Revision::V2026_07_28), |r| Revision::parse(&r));
    let calls: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let Some(revision) = revision else {
        eprintln!("unknown revision");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        let client = Client::builder()
            .revision(revision)
            .remember_era(false)
            .connect_http(&url)
            .await?;
        let arguments = json!({"a": 2, "b": 3});
        for _ in 0..calls {
            client.call_tool("add", arguments.clone()).await?;
        }
        client.close().await
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("call_loop: {e}");
            ExitCode::FAILURE
        }
    }
}
