//! `mcp-load --ask` against our real HTTP server (memory store) on 127.0.0.1: every pushed
//! question is answered and every result checked, with no errors; a server whose tool never
//! asks is reported as errors, not a hang.

use std::time::Duration;

use mcp_bench::{
    Revision,
    ask::{self, CONFIRM_TOOL, CONFIRMED},
    load::{ArgsError, LoadConfig},
};
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use mcp_server::{Exchange, Question, Server, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

async fn confirm(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex.ask("go", Question::elicit("Go on?")).await?;
    Ok(if answer.accepted() {
        CONFIRMED
    } else {
        "declined"
    }
    .to_owned())
}

async fn never_asks(_: NoArgs) -> String {
    CONFIRMED.to_owned()
}

/// Serves `server` on a free port until the test's runtime ends; returns the `/mcp` URL.
async fn start(server: Server) -> String {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    tokio::spawn(serve_with_shutdown(
        listener,
        endpoint,
        std::future::pending(),
    ));
    format!("http://{addr}/mcp")
}

fn config(url: String) -> LoadConfig {
    let mut config = LoadConfig::new(url, Revision::V2025_11_25);
    config.ask = true;
    config.warmup = Duration::from_millis(50);
    config.duration = Duration::from_millis(300);
    config.timeout = Duration::from_secs(10);
    config
}

#[tokio::test]
async fn every_pushed_ask_is_answered_through_the_hub() {
    let server = Server::builder("ask-test", "0")
        .tool(Tool::new(CONFIRM_TOOL, confirm))
        .build()
        .expect("server");
    let report = ask::run(&config(start(server).await)).await.expect("run");
    assert_eq!(report.errors, 0, "first error: {:?}", report.first_error);
    assert!(report.asks > 0, "no ask answered: {report:?}");
    assert!(report.p50_ms > 0.0 && report.p99_ms >= report.p50_ms);
}

#[tokio::test]
async fn a_tool_that_never_asks_is_counted_as_errors() {
    let server = Server::builder("ask-test", "0")
        .tool(Tool::new(CONFIRM_TOOL, never_asks))
        .build()
        .expect("server");
    let report = ask::run(&config(start(server).await)).await.expect("run");
    assert_eq!(report.asks, 0);
    assert!(report.errors > 0);
    assert!(
        report
            .first_error
            .as_deref()
            .is_some_and(|e| e.contains("without pushing a question")),
        "{report:?}"
    );
}

#[test]
fn ask_needs_2025_11_25_over_streamable_http() {
    let args = |rev: &str| {
        LoadConfig::from_args([
            "--url",
            "http://127.0.0.1:1/mcp",
            "--revision",
            rev,
            "--ask",
        ])
    };
    assert!(args("2025-11-25").is_ok_and(|c| c.ask));
    assert_eq!(
        args("2026-07-28").unwrap_err(),
        ArgsError::AskNeeds2025_11_25
    );
}
