//! The upstream restarts (a new process on the same address, with a changed catalog): the
//! gateway follows its notifications again and lists it again, so the downstream client hears
//! of the change and sees the new catalog.

use std::time::Duration;

use futures::StreamExt as _;
use mcp_client::{Client, Revision, Subscriptions};
use mcp_gateway::Gateway;
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use mcp_server::{Server, Tool};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A bound on each step (not a synchronisation).
const STEP: Duration = Duration::from_secs(30);

async fn before() -> String {
    "before".into()
}

async fn after() -> String {
    "after".into()
}

/// Serves `server` on `listener` until `stop` fires; the task ends once it has stopped.
fn serve(
    listener: TcpListener,
    server: Server,
    stop: oneshot::Receiver<()>,
) -> tokio::task::JoinHandle<()> {
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    tokio::spawn(async move {
        let _ = serve_with_shutdown(listener, endpoint, async {
            let _ = stop.await;
        })
        .await;
    })
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_upstream_restart_the_gateway_follows_and_lists_it_again() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let first = Server::builder("upstream", "1")
        .tool(Tool::new("before", before))
        .build()
        .expect("builds");
    let (stop, stopped) = oneshot::channel();
    let running = serve(listener, first, stopped);

    let upstream = Client::builder()
        .revision(Revision::V2026_07_28)
        .timeout(STEP)
        .connect_http(&format!("http://{addr}/mcp"))
        .await
        .expect("the gateway reaches the upstream");
    let gateway = Gateway::builder()
        .start(upstream)
        .await
        .expect("the gateway starts");
    let front = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let front_url = format!("http://{}/mcp", front.local_addr().expect("address"));
    let endpoint = HttpEndpoint::new(gateway.server().clone(), HttpConfig::new());
    tokio::spawn(serve_with_shutdown(
        front,
        endpoint,
        std::future::pending::<()>(),
    ));
    let client = Client::builder()
        .revision(Revision::V2026_07_28)
        .timeout(STEP)
        .connect_http(&front_url)
        .await
        .expect("the client reaches the gateway");
    let mut changes = client
        .listen(Subscriptions::new().tools_changed())
        .await
        .expect("listening");

    // The upstream stops (its streams end) and another takes its address, with another tool.
    let _ = stop.send(());
    tokio::time::timeout(STEP, running)
        .await
        .expect("the upstream stops")
        .expect("its task ends");
    let listener = TcpListener::bind(addr)
        .await
        .expect("the same address again");
    let second = Server::builder("upstream", "2")
        .tool(Tool::new("before", before))
        .tool(Tool::new("after", after))
        .build()
        .expect("builds");
    let (_keep, never) = oneshot::channel();
    let _running = serve(listener, second, never);

    tokio::time::timeout(STEP, async {
        while let Some(notification) = changes.next().await {
            if notification.method == "notifications/tools/list_changed" {
                return;
            }
        }
        panic!("the listener ended: {:?}", changes.end());
    })
    .await
    .expect("the downstream client hears of the new catalog");
    let tools = client.list_tools().await.expect("tools/list");
    assert!(names(&tools).contains(&"after"), "{:?}", names(&tools));
    let called = client
        .call_tool("after", serde_json::json!({}))
        .await
        .expect("the new tool through the gateway");
    assert_eq!(called["content"][0]["text"], "after");
    drop(gateway);
}
