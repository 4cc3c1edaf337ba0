//! `mcp call` on a tool the server runs as a task (the Tasks extension), against our
//! conformance target's fixtures: the task's status on stderr while it runs, its result on
//! stdout; Ctrl-C cancels the task on the server before `mcp` exits.

mod support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;
use support::{Running, mcp};

/// `conformance-target` on 127.0.0.1:0 (the suite's fixtures), killed when dropped.
struct Target {
    child: Child,
    url: String,
}

impl Target {
    fn start() -> Self {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            .args([
                "build",
                "-p",
                "mcp-conformance-peers",
                "--bin",
                "conformance-target",
                "--message-format=json",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stderr(Stdio::inherit())
            .output()
            .expect("cargo runs");
        assert!(
            output.status.success(),
            "building conformance-target failed"
        );
        let binary = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| m["target"]["name"] == "conformance-target")
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .expect("cargo names the conformance-target binary");
        let mut child = Command::new(binary)
            .args(["--addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("conformance-target starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("conformance-target prints its URL");
        let url = line
            .trim()
            .strip_prefix("conformance-target listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Self { child, url }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
