//! Issue 31's acceptance for a dying worker, with the worker as a real OS process: worker A
//! runs in a child process (this test binary re-executed, running only
//! `worker_process_entry`) on the real Redis with a short lease; a task is created through A,
//! A's process is killed with SIGKILL while the handler runs, and worker B (in this process,
//! same Redis key prefix) reads the task as `failed` within the lease.
//!
//! Redis is at `MCP_REDIS_URL` (default `redis://127.0.0.1:6379`); with `CI=true` an
//! unreachable Redis fails the test, otherwise it prints a notice and passes.

use crate::backends;
use crate::raw_http;
use crate::support;

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use mcp_hub::{Hub, RedisConfig, RedisHub};
use mcp_server::http::HttpConfig;
use mcp_server::{
    Exchange, Interrupt, NoArgs, Revision, Server, TaskSupport, Tasks, Tool, ToolError,
};
use raw_http::{RawRequest, Running, WAIT};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt as _;

const TASKS: &str = "io.modelcontextprotocol/tasks";
/// Set in the child's environment: the Redis key prefix worker A uses.
const CHILD_PREFIX: &str = "MCP_TASKS_WORKER_PREFIX";
/// The lease both workers give their tasks.
const LEASE: Duration = Duration::from_millis(1000);
/// What B may take beyond the lease to notice (its polling interval, an HTTP round trip and
/// a loaded machine's scheduling).
const SLACK: Duration = Duration::from_millis(700);
const LISTENING: &str = "task worker listening on ";
const STARTED: &str = "task handler started";

/// A worker: a `hold` tool, run as a task, that runs until cancelled.
fn worker(hub: Arc<dyn Hub>) -> Server {
    let hold = |_: NoArgs, ex: Exchange| async move {
        // The parent reads this line from the child's stdout.
        println!("{STARTED}");
        ex.cancelled().await;
        Err::<String, _>(ToolError::from(Interrupt::Cancelled))
    };
    Server::builder("tasks-process", "1.0")
        .state_store(hub.clone())
        .event_log(hub)
        .tasks(Tasks::new().lease(LEASE))
        .tool(Tool::new("hold", hold).task_support(TaskSupport::Required))
        .build()
        .expect("a valid server")
}

/// Worker A, when this binary runs as the child: serves until its stdin closes (the parent
/// holds it open) or the bound runs out, unless killed first, which is the point.
#[test]
fn worker_process_entry() {
    let Ok(prefix) = std::env::var(CHILD_PREFIX) else {
        // An ordinary test run: nothing to do.
        return;
    };
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        let _ = closed_tx.send(());
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let hub = RedisHub::connect(
            &backends::redis_url(),
            RedisConfig::new().key_prefix(prefix),
        )
        .await
        .expect("Redis answered the parent, so it answers the child");
        let running = Running::start(worker(Arc::new(hub)), HttpConfig::new()).await;
        println!("{LISTENING}{}", running.addr);
        let _ = tokio::time::timeout(WAIT * 4, closed_rx).await;
    });
    runtime.shutdown_background();
}

static NEXT_ID: AtomicI64 = AtomicI64::new(1);

/// The result of a 2026-07-28 request over raw HTTP, the message validated (a task message
/// against the Tasks extension's schema too).
async fn rpc(addr: SocketAddr, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
    });
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut request = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method);
    if let Some(name) = &name {
        request = request.header("Mcp-Name", name);
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let response = request
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .send(addr)
        .await;
    let message = response
        .messages()
        .pop()
        .unwrap_or_else(|| panic!("{method}: no message ({})", response.status));
    support::check_task_reply(method, &message);
    assert_eq!(message["id"], json!(id));
    let result = message
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{method} failed: {message}"));
    support::check(Revision::V2026_07_28, "Result", &result);
    result
}

/// What follows `prefix` on the next line of the child's stdout that has it.
async fn line_after(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    prefix: &str,
) -> String {
    tokio::time::timeout(WAIT, async {
        loop {
            let line = lines
                .next_line()
                .await
                .expect("the child's stdout is readable")
                .unwrap_or_else(|| panic!("the worker exited before printing {prefix:?}"));
            // libtest may have printed the test's name on the same line first.
            if let Some(at) = line.find(prefix) {
                return line[at + prefix.len()..].trim().to_owned();
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the worker printed {prefix:?} in time"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_worker_process_fails_its_task_within_the_lease() {
    let Some(place) = backends::Backend::REDIS.place().await else {
        return;
    };
    let mut child = tokio::process::Command::new(std::env::current_exe().expect("this binary"))
        .args([
            "tasks_process::worker_process_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_PREFIX, place.prefix())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the worker process starts");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let a: SocketAddr = line_after(&mut lines, LISTENING)
        .await
        .parse()
        .expect("an address");
    let b = Running::start(worker(place.hub().await), HttpConfig::new()).await;

    // Created through A (durably, before the reply), read through B at once.
    let created = rpc(a, "tools/call", json!({"name": "hold", "arguments": {}})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("a task id").to_owned();
    line_after(&mut lines, STARTED).await;
    let seen = rpc(b.addr, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(seen["status"], "working", "{seen}");

    // SIGKILL: no shutdown path runs in A, its lease renewals simply stop.
    let killed = Instant::now();
    child.start_kill().expect("the kill is sent");
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("the worker died in time")
        .expect("its status");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(status.signal(), Some(9), "killed, not exited: {status}");
    }
    assert!(!status.success());

    // B reports `failed` once the lease runs out, and not much later.
    let failed = tokio::time::timeout(LEASE + WAIT, async {
        loop {
            let task = rpc(b.addr, "tasks/get", json!({"taskId": id})).await;
            if task["status"] != "working" {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the task left `working`");
    let elapsed = killed.elapsed();
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    support::check(Revision::V2026_07_28, "Error", &failed["error"]);
    assert!(
        failed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("worker")),
        "{failed}"
    );
    assert!(
        elapsed <= LEASE + SLACK,
        "failed {elapsed:?} after the kill, the lease is {LEASE:?}"
    );
    eprintln!("failed {elapsed:?} after the kill (lease {LEASE:?})");
    // Still failed for A's peers, and stays so.
    let again = rpc(b.addr, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(again["status"], "failed");
}
