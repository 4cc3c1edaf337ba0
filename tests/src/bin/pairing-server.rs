//! The pairing fixture server on stdio.
//!
//! ```text
//! pairing-server [--store memory|redis|postgres|sqlite] [--redis-url URL] [--redis-prefix PREFIX]
//!                [--place PLACE] [--revisions 2026-07-28,2025-11-25,...]
//! ```
//!
//! `--store redis` keeps request state and question replies in Redis (default URL
//! `MCP_REDIS_URL`, else `redis://127.0.0.1:6379`), under `PREFIX` (default `mcp-pairing`). `--revisions` limits the
//! revisions served (default: all). `--store postgres` (on `MCP_POSTGRES_URL`) and `--store sqlite`
//! (a file in the temporary folder) keep them under `PLACE`, the case's own table prefix or file.

use mcp_adapters::{AdapterSet, Revision};
use mcp_tests::fixture::{self, Backing};

fn usage(problem: &str) -> ! {
    eprintln!("pairing-server: {problem}");
    eprintln!(
        "usage: pairing-server [--store memory|redis] [--redis-url URL] [--redis-prefix PREFIX] [--revisions R,R,...]"
    );
    std::process::exit(2);
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut store = "memory".to_owned();
    let mut url = mcp_tests::pairing::redis_url();
    let mut prefix = "mcp-pairing".to_owned();
    let mut place = "pairing".to_owned();
    let mut revisions = AdapterSet::all();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "--store" => store = value(),
            "--redis-url" => url = value(),
            "--redis-prefix" => prefix = value(),
            "--place" => place = value(),
            "--revisions" => {
                let list = value();
                let parsed: Vec<Revision> = list
                    .split(',')
                    .map(|r| {
                        Revision::parse(r.trim())
                            .unwrap_or_else(|| usage(&format!("unknown revision {r:?}")))
                    })
                    .collect();
                revisions = AdapterSet::new(parsed).unwrap_or_else(|e| usage(&e.to_string()));
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    let backing = match store.as_str() {
        "memory" => Backing::default(),
        "redis" => match mcp_hub::ConnectOptions::new()
            .prefix(prefix)
            .connect(&url)
            .await
        {
            Ok(hub) => Backing {
                store: Some(hub.clone()),
                log: Some(hub),
            },
            Err(err) => {
                eprintln!("pairing-server: Redis at {url}: {err}");
                std::process::exit(1);
            }
        },
        "postgres" | "sqlite" => {
            let store = mcp_tests::pairing::Store::parse(&store).unwrap_or_else(|| usage("store"));
            match mcp_tests::pairing::sql_hub(store, &place).await {
                Ok(Some(hub)) => Backing {
                    store: Some(hub.clone()),
                    log: Some(hub),
                },
                Ok(None) => usage("store"),
                Err(err) => {
                    eprintln!("pairing-server: {err}");
                    std::process::exit(1);
                }
            }
        }
        other => usage(&format!("unknown store {other:?}")),
    };
    if let Err(err) = mcp_server::serve_stdio(fixture::server_with(backing, revisions)).await {
        eprintln!("pairing-server: {err}");
        std::process::exit(1);
    }
}
