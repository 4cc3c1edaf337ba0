//! `mcp-load`: the load generator. Prints one JSON line (see `mcp_bench::load::Report`).
//!
//! ```text
//! mcp-load --url URL --revision REV [--transport streamable|http+sse] [--concurrency N]
//!          [--warmup SECS] [--duration SECS] [--timeout SECS] [--fixed-reply]
//!          [--sessions N] [--ask [--answer-url URL]] [--tasks] [--header 'NAME: VALUE']...
//!          [--bearer TOKEN]
//! ```
//!
//! With `--sessions N` it opens N sessions and leaves them idle instead (see
//! `mcp_bench::load::open_sessions`), printing a `SessionsReport` line. With `--ask` (2025-11-25
//! only) it measures pushed asks answered through the server's hub instead (see
//! `mcp_bench::ask`), printing an `AskReport` line. With `--tasks` (2026-07-28 only) it
//! measures tasks created and completed per second instead (see `mcp_bench::tasks`), printing
//! a `TasksReport` line.
//!
//! Runs on a current-thread tokio runtime: the harness pins it to one core with `taskset`.

use std::process::ExitCode;

use mcp_bench::load::{self, LoadConfig};

fn main() -> ExitCode {
    let config = match LoadConfig::from_args(std::env::args().skip(1)) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("mcp-load: {error}");
            eprintln!(
                "usage: mcp-load --url URL --revision REV [--transport streamable|http+sse] \
                 [--concurrency N] [--warmup SECS] [--duration SECS] [--timeout SECS] \
                 [--fixed-reply] [--sessions N] [--ask [--answer-url URL]] [--tasks] \
                 [--header 'NAME: VALUE']... [--bearer TOKEN]"
            );
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("mcp-load: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let line = runtime.block_on(async {
        if config.tasks {
            mcp_bench::tasks::run(&config)
                .await
                .map(|r| serde_json::to_string(&r))
        } else if config.ask {
            mcp_bench::ask::run(&config)
                .await
                .map(|r| serde_json::to_string(&r))
        } else if config.sessions.is_some() {
            load::open_sessions(&config)
                .await
                .map(|r| serde_json::to_string(&r))
        } else {
            load::run(&config).await.map(|r| serde_json::to_string(&r))
        }
    });
    match line {
        Ok(line) => match line {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("mcp-load: {error}");
                ExitCode::FAILURE
            }
        },
        Err(error) => {
            eprintln!("mcp-load: {error}");
            ExitCode::FAILURE
        }
    }
}
