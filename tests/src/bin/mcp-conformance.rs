//! `mcp-conformance`: probes an MCP server over HTTP on every revision it claims.
//!
//! ```text
//! mcp-conformance --url http://127.0.0.1:8080/mcp [--sse-url http://127.0.0.1:8080/sse]
//!                 [--revision 2025-06-18]... [--schemas DIR] [--quiet]
//! ```
//!
//! Prints one line per check (`PASS`, `FAIL` or `SKIP`), then `N passed, M failed`. Exits with 1
//! when a check failed, 2 on a usage error. Replies are validated against the official
//! `schema.json` files in `--schemas` (default: `MCP_SPEC_SCHEMAS`, else
//! `../shared/spec-schemas` beside the workspace); without them, schema checks are skipped.

use std::path::PathBuf;

use mcp_adapters::Revision;
use mcp_tests::conformance::{self, Options, Verdict};
use mcp_tests::schema::{Schemas, default_dir};

const USAGE: &str =
    "usage: mcp-conformance --url URL [--sse-url URL] [--revision R]... [--schemas DIR] [--quiet]";

fn usage(problem: &str) -> ! {
    eprintln!("mcp-conformance: {problem}");
    eprintln!("{USAGE}");
    std::process::exit(2);
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut options = Options::default();
    let mut schemas_dir: Option<PathBuf> = None;
    let mut quiet = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "--url" => {
                let url = value();
                options.url = Some(
                    url.parse()
                        .unwrap_or_else(|_| usage(&format!("invalid URL {url:?}"))),
                );
            }
            "--sse-url" => {
                let url = value();
                options.sse_url = Some(
                    url.parse()
                        .unwrap_or_else(|_| usage(&format!("invalid URL {url:?}"))),
                );
            }
            "--revision" => {
                let r = value();
                options.revisions.push(
                    Revision::parse(&r)
                        .unwrap_or_else(|| usage(&format!("unknown revision {r:?}"))),
                );
            }
            "--schemas" => schemas_dir = Some(PathBuf::from(value())),
            "--quiet" => quiet = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    if options.url.is_none() && options.sse_url.is_none() {
        usage("give --url or --sse-url");
    }
    options.schemas = match Schemas::open(schemas_dir.unwrap_or_else(default_dir)) {
        Ok(schemas) => schemas,
        Err(e) => {
            eprintln!("mcp-conformance: {e}");
            std::process::exit(2);
        }
    };
    let report = conformance::run(&options).await;
    for check in &report.checks {
        if quiet && matches!(check.verdict, Verdict::Pass(_) | Verdict::Skip(_)) {
            continue;
        }
        println!("{check}");
    }
    println!("{} passed, {} failed", report.passed(), report.failed());
    if report.failed() > 0 {
        std::process::exit(1);
    }
}
