//! `mcp call` on a tool the server runs as a task (the Tasks extension), against our
//! conformance target's fixtures: the task's status on stderr while it runs, its result on
//! stdout; Ctrl-C cancels the task on the server before `mcp` exits.

use crate::support;

use support::{Running, Target, mcp};

#[test]
fn a_task_shows_its_status_then_its_result() {
    let target = Target::start();
    let run = mcp(&[
        "call",
        &target.url,
        "slow_compute",
        "seconds=0.3",
        "label=cli",
        "--timeout",
        "30",
    ]);
    assert!(run.ok().contains("computed cli"), "{}", run.stdout);
    assert!(run.stderr.contains(": working"), "{}", run.stderr);
}

#[test]
fn ctrl_c_cancels_the_task_on_the_server() {
    let target = Target::start();
    let running = Running::start(&[
        "call",
        &target.url,
        "slow_compute",
        "seconds=120",
        "--timeout",
        "60",
    ]);
    let line = running.wait_for_stderr(": working");
    let id = line
        .split_whitespace()
        .skip_while(|w| *w != "task")
        .nth(1)
        .map(|w| w.trim_end_matches(':').to_owned())
        .unwrap_or_else(|| panic!("no task id in {line:?}"));
    running.interrupt();
    let run = running.finish();
    assert_ne!(run.code, 0, "{run:#?}");
    // The task was cancelled on the server before mcp exited.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = runtime.block_on(async {
        let client = mcp_client::Client::builder()
            .revision(mcp_client::Revision::V2026_07_28)
            .tasks(mcp_client::TaskPolling::new())
            .connect_http(&target.url)
            .await
            .unwrap();
        client.get_task(&id).await.unwrap().status()
    });
    assert_eq!(status, mcp_client::TaskStatus::Cancelled, "task {id}");
}

/// The README's line: the demo's `slow` tool is a task on 2026-07-28, so `mcp call` shows its
/// status while it works, then its result.
#[test]
fn the_demo_slow_tool_runs_as_a_task() {
    let demo = support::Demo::start_with(&[]);
    let run = mcp(&[
        "call",
        &demo.mcp(),
        "slow",
        "seconds=0.3",
        "--revision",
        "2026-07-28",
        "--timeout",
        "30",
    ]);
    assert!(run.ok().contains("worked 0.3s"), "{}", run.stdout);
    assert!(run.stderr.contains(": working"), "{}", run.stderr);
}
