//! A stdio upstream is one child process per downstream session
//! (`GatewayBuilder::start_per_session`), on real sockets on 127.0.0.1 and real processes.
//!
//! The child is this test binary itself, started with `MCP_GATEWAY_TEST_CHILD` set: it then
//! serves MCP on stdio with one tool, `pid`, that answers its process id. (The file has no
//! libtest harness, so nothing but MCP reaches the child's stdout.)
//!
//! Checked: two downstream sessions get two children, and a request in no session (2026-07-28)
//! the shared one; at the limit a new session is refused with an error naming it; a session
//! that ends (its client's `DELETE`) has its child ended, which makes room; an idle child is
//! ended and the session's next call starts another; a child that exits is replaced at the
//! session's next call; closing the gateway ends every child.
//! Each end is awaited with a bounded deadline, never a sleep.

use std::future::Future;
use std::time::Duration;

use mcp_client::transport::Stdio;
use mcp_client::{Client, Revision};
use mcp_gateway::{Gateway, QuestionRelay};
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use mcp_server::{Server, Tool};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Set in the environment of the children this test starts.
const CHILD: &str = "MCP_GATEWAY_TEST_CHILD";

/// A bound on each step (not a synchronisation).
const STEP: Duration = Duration::from_secs(20);

async fn pid() -> String {
    std::process::id().to_string()
}

/// The child: an MCP server on stdio until its stdin closes.
fn child() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let server = Server::builder("pid-server", "1.0")
            .tool(Tool::new("pid", pid))
            .build()
            .expect("the child's server builds");
        let _ = mcp_server::serve_stdio(server).await;
    });
}

/// A gateway in front of children of this binary, served on 127.0.0.1: the gateway and its
/// `/mcp` URL.
/// Starts a child of this binary with `relay` installed.
async fn connect(relay: QuestionRelay) -> Result<Client, mcp_client::Error> {
    let exe = std::env::current_exe().expect("the test binary's path");
    relay
        .install(Client::builder().timeout(STEP))
        .connect_stdio(Stdio::builder(exe).env(CHILD, "1"))
        .await
}

async fn gateway(max_children: usize, idle: Duration) -> (Gateway, String) {
    let relay = QuestionRelay::new();
    let first = connect(relay.clone()).await.expect("the first child");
    let gateway = Gateway::builder()
        .question_relay(relay)
        .max_children(max_children)
        .child_idle(idle)
        .start_per_session(first, connect)
        .await
        .expect("the gateway starts");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let endpoint = HttpEndpoint::new(gateway.server().clone(), HttpConfig::new());
    tokio::spawn(serve_with_shutdown(
        listener,
        endpoint,
        std::future::pending::<()>(),
    ));
    (gateway, url)
}

/// A downstream client on `revision` (2025-11-25 has sessions, 2026-07-28 none).
async fn client(url: &str, revision: Revision) -> Client {
    Client::builder()
        .revision(revision)
        .timeout(STEP)
        .connect_http(url)
        .await
        .expect("the client reaches the gateway")
}

/// Calls `pid`: the child's process id, or the error text of a refused call.
async fn child_pid(client: &Client) -> Result<u32, String> {
    let result: Value = tokio::time::timeout(STEP, client.call_tool("pid", json!({})))
        .await
        .expect("an answer within the bound")
        .map_err(|e| e.to_string())?;
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    if result["isError"] == true {
        return Err(text.to_owned());
    }
    text.parse().map_err(|_| format!("not a pid: {result}"))
}

/// Whether process `pid` exists (a child that ended was waited for, so it is gone).
fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Waits until `done` holds, polling within [`STEP`]; panics with `what` after it.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + STEP;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {STEP:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn two_sessions_get_two_children_and_the_limit_refuses_a_third() {
    // The shared child and two sessions' children.
    let (gateway, url) = gateway(3, Duration::from_secs(600)).await;
    let first = client(&url, Revision::V2025_11_25).await;
    let second = client(&url, Revision::V2025_11_25).await;
    let sessionless = client(&url, Revision::V2026_07_28).await;
    let first_pid = child_pid(&first).await.expect("the first session's child");
    let second_pid = child_pid(&second)
        .await
        .expect("the second session's child");
    let shared_pid = child_pid(&sessionless).await.expect("the shared child");
    assert_ne!(first_pid, second_pid, "two sessions, two children");
    assert!(
        shared_pid != first_pid && shared_pid != second_pid,
        "no session: the shared child"
    );
    assert_eq!(
        child_pid(&first).await,
        Ok(first_pid),
        "a session keeps its child"
    );
    assert_eq!(gateway.session_upstreams(), 2);
    assert_ne!(std::process::id(), first_pid);

    // At the limit: a third session is refused, saying why.
    let third = client(&url, Revision::V2025_11_25).await;
    let refused = child_pid(&third).await.expect_err("refused at the limit");
    assert!(refused.contains("maximum of 3"), "{refused}");

    // The first session ends: its child ends, and the third session gets one.
    first.close().await.expect("the first session ends");
    until("the ended session's child exits", || !alive(first_pid)).await;
    until("the ended session's child is forgotten", || {
        gateway.session_upstreams() == 1
    })
    .await;
    let third_pid = child_pid(&third).await.expect("room for the third session");
    assert!(alive(third_pid) && alive(second_pid) && alive(shared_pid));

    // Closing the gateway ends every child.
    gateway.close().await.expect("the gateway closes");
    for pid in [second_pid, third_pid, shared_pid] {
        until("every child exits with the gateway", || !alive(pid)).await;
    }
}

async fn an_idle_child_is_ended_and_the_next_call_starts_another() {
    let (gateway, url) = gateway(4, Duration::from_millis(200)).await;
    let session = client(&url, Revision::V2025_11_25).await;
    let before = child_pid(&session).await.expect("a child");
    until("the idle child exits", || !alive(before)).await;
    until("the idle child is forgotten", || {
        gateway.session_upstreams() == 0
    })
    .await;
    let after = child_pid(&session)
        .await
        .expect("a new child for the session");
    assert_ne!(before, after);
    gateway.close().await.expect("the gateway closes");
    until("the child exits with the gateway", || !alive(after)).await;
}

async fn a_child_that_exits_is_replaced_at_the_sessions_next_call() {
    let (gateway, url) = gateway(4, Duration::from_secs(600)).await;
    let session = client(&url, Revision::V2025_11_25).await;
    let before = child_pid(&session).await.expect("a child");
    let killed = std::process::Command::new("kill")
        .args(["-9", &before.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    until("the killed child is gone", || !alive(before)).await;
    // The call that finds it gone fails, saying so; the next one starts another child.
    let failed = child_pid(&session).await.expect_err("the child is gone");
    assert!(failed.contains("upstream"), "{failed}");
    let after = child_pid(&session)
        .await
        .expect("a new child for the session");
    assert_ne!(before, after);
    assert_eq!(gateway.session_upstreams(), 1);
    gateway.close().await.expect("the gateway closes");
    until("the child exits with the gateway", || !alive(after)).await;
}

async fn settings_out_of_range_are_refused() {
    for (children, idle) in [(1, Duration::from_secs(1)), (2, Duration::ZERO)] {
        let first = connect(QuestionRelay::new()).await.expect("a child");
        let refused = Gateway::builder()
            .max_children(children)
            .child_idle(idle)
            .start_per_session(first, connect)
            .await
            .expect_err("refused");
        assert!(
            matches!(refused, mcp_gateway::GatewayError::InvalidSetting { .. }),
            "{refused}"
        );
    }
}

/// One test's future.
type Test = std::pin::Pin<Box<dyn Future<Output = ()>>>;
/// A test's name and its start.
type Case = (&'static str, fn() -> Test);

fn main() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let tests: [Case; 4] = [
        (
            "two_sessions_get_two_children_and_the_limit_refuses_a_third",
            || Box::pin(two_sessions_get_two_children_and_the_limit_refuses_a_third()),
        ),
        (
            "an_idle_child_is_ended_and_the_next_call_starts_another",
            || Box::pin(an_idle_child_is_ended_and_the_next_call_starts_another()),
        ),
        (
            "a_child_that_exits_is_replaced_at_the_sessions_next_call",
            || Box::pin(a_child_that_exits_is_replaced_at_the_sessions_next_call()),
        ),
        ("settings_out_of_range_are_refused", || {
            Box::pin(settings_out_of_range_are_refused())
        }),
    ];
    // A filter, as libtest takes one: run the tests whose name contains it.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    for (name, test) in tests {
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(test());
        println!("test {name} ... ok");
    }
}
