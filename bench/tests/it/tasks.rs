//! `mcp-load --tasks` against our real HTTP server on 127.0.0.1, with its tasks in the memory
//! store and in Redis (`MCP_REDIS_URL`, default `redis://127.0.0.1:6379`; skipped with a notice
//! when unreachable, a failure with `CI=true`): every task is created, read back completed and
//! its sum checked, with no errors; a tool that answers without a task is reported as errors,
//! not a hang; the arguments are checked.

use std::sync::Arc;
use std::time::Duration;

use mcp_bench::{
    Revision,
    load::{ArgsError, LoadConfig},
    tasks::{self, TASK_TOOL},
};
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use mcp_server::{Json, Server, TaskSupport, Tasks, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

async fn add(args: AddArgs) -> Json<Sum> {
    Json(Sum {
        sum: args.a + args.b,
    })
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
    let mut config = LoadConfig::new(url, Revision::V2026_07_28);
    config.tasks = true;
    config.concurrency = 4;
    config.warmup = Duration::from_millis(50);
    config.duration = Duration::from_millis(300);
    config.timeout = Duration::from_secs(10);
    config
}

fn task_server(hub: Option<Arc<dyn mcp_hub::Hub>>) -> Server {
    let mut builder = Server::builder("tasks-test", "0")
        .tasks(Tasks::new())
        .tool(Tool::new(TASK_TOOL, add).task_support(TaskSupport::Required));
    if let Some(hub) = hub {
        builder = builder.state_store(hub.clone()).event_log(hub);
    }
    builder.build().expect("server")
}

fn check(report: &tasks::TasksReport) {
    assert_eq!(report.errors, 0, "first error: {:?}", report.first_error);
    assert!(report.tasks > 0, "no task completed: {report:?}");
    assert!(report.tasks_per_s > 0.0);
    assert!(report.gets_per_task >= 1.0, "{report:?}");
    assert!(report.p50_ms > 0.0 && report.p99_ms >= report.p50_ms);
}

#[tokio::test]
async fn tasks_are_created_and_completed_through_the_memory_store() {
    let report = tasks::run(&config(start(task_server(None)).await))
        .await
        .expect("run");
    check(&report);
}

#[tokio::test]
async fn tasks_are_created_and_completed_through_the_redis_store() {
    let url = std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let prefix = format!("mcp-bench-tasks-test:{}", std::process::id());
    let hub = match mcp_hub::RedisHub::connect(&url, mcp_hub::RedisConfig::new().key_prefix(prefix))
        .await
    {
        Ok(hub) => hub,
        Err(err) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("notice: Redis at {url} is unreachable ({err}); skipping");
            return;
        }
        Err(err) => panic!("Redis at {url} is unreachable with CI=true: {err}"),
    };
    let report = tasks::run(&config(start(task_server(Some(Arc::new(hub)))).await))
        .await
        .expect("run");
    check(&report);
}

#[tokio::test]
async fn a_tool_that_answers_without_a_task_is_counted_as_errors() {
    let server = Server::builder("tasks-test", "0")
        .tasks(Tasks::new())
        .tool(Tool::new(TASK_TOOL, add))
        .build()
        .expect("server");
    let report = tasks::run(&config(start(server).await)).await.expect("run");
    assert_eq!(report.tasks, 0);
    assert!(report.errors > 0);
    assert!(
        report
            .first_error
            .as_deref()
            .is_some_and(|e| e.contains("not a CreateTaskResult")),
        "{report:?}"
    );
}

#[test]
fn tasks_need_2026_07_28_and_no_other_probe() {
    let parse = |extra: &[&str]| {
        let mut args = vec!["--url", "http://127.0.0.1:1/mcp", "--tasks"];
        args.extend_from_slice(extra);
        LoadConfig::from_args(args)
    };
    assert!(parse(&["--revision", "2026-07-28"]).is_ok_and(|c| c.tasks));
    assert_eq!(
        parse(&["--revision", "2025-11-25"]).err(),
        Some(ArgsError::TasksNeed2026_07_28)
    );
    assert_eq!(
        parse(&["--revision", "2026-07-28", "--sessions", "3"]).err(),
        Some(ArgsError::OneProbe)
    );
}
