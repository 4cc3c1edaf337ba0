//! Handler shapes: a tool and a prompt that take nothing (`async fn() -> R`), served with the
//! `NoArgs` input schema on every revision over real HTTP with our client.

#[path = "support/raw_http.rs"]
mod raw_http;

use mcp_client::{Client, Revision};
use mcp_server::http::HttpConfig;
use mcp_server::{Prompt, Server, Tool};
use raw_http::{Running, WAIT};
use serde_json::json;

fn server() -> Server {
    Server::builder("handlers", "1.0")
        .tool(Tool::new("now", || async { "12:00".to_owned() }))
        .prompt(Prompt::new("hello", || async { "Say hello.".to_owned() }))
        .build()
        .unwrap()
}

#[tokio::test]
async fn handlers_without_arguments_on_every_revision() {
    let running = Running::start(server(), HttpConfig::new()).await;
    for revision in Revision::ALL {
        let builder = Client::builder().timeout(WAIT).revision(revision);
        let client = if revision.features().http_sse {
            builder.connect_sse(&running.url("/sse")).await
        } else {
            builder.connect_http(&running.url("/mcp")).await
        }
        .unwrap();
        let tools = client.list_tools().await.unwrap();
        assert_eq!(tools.len(), 1, "{revision}: {tools:?}");
        assert_eq!(
            tools[0]["inputSchema"]["additionalProperties"], false,
            "{revision}: {tools:?}"
        );
        let now = client.call_tool("now", json!({})).await.unwrap();
        assert_eq!(now["content"][0]["text"], "12:00", "{revision}: {now}");
        // Arguments a tool without arguments does not take are refused as its input schema says.
        let extra = client.call_tool("now", json!({"x": 1})).await.unwrap();
        assert_eq!(extra["isError"], true, "{revision}: {extra}");

        let prompts = client.list_prompts().await.unwrap();
        assert!(
            prompts[0].get("arguments").is_none_or(|a| a == &json!([])),
            "{revision}: {prompts:?}"
        );
        let hello = client.get_prompt("hello", json!({})).await.unwrap();
        assert_eq!(
            hello["messages"][0]["content"]["text"], "Say hello.",
            "{revision}: {hello}"
        );
        client.close().await.unwrap();
    }
}

/// The shared state of the state tests: a counter behind an `Arc`.
#[derive(Clone, Default)]
struct Counter(std::sync::Arc<std::sync::atomic::AtomicU64>);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct By {
    /// How much to add.
    by: u64,
}

async fn bump(mcp_server::State(counter): mcp_server::State<Counter>, by: By) -> String {
    let now = counter
        .0
        .fetch_add(by.by, std::sync::atomic::Ordering::SeqCst)
        + by.by;
    now.to_string()
}

async fn peek(
    mcp_server::State(counter): mcp_server::State<Counter>,
    _: mcp_server::NoArgs,
    ex: mcp_server::Exchange,
) -> String {
    let seen = counter.0.load(std::sync::atomic::Ordering::SeqCst);
    format!("{seen} on {}", ex.revision())
}

#[tokio::test]
async fn handlers_take_the_servers_state() {
    let counter = Counter::default();
    let server = Server::builder("state", "1.0")
        .with_state(counter.clone())
        .tool(Tool::new("bump", bump))
        .tool(Tool::new("peek", peek))
        .build()
        .unwrap();
    let running = Running::start(server, HttpConfig::new()).await;
    let client = Client::builder()
        .timeout(WAIT)
        .connect_http(&running.url("/mcp"))
        .await
        .unwrap();
    let first = client.call_tool("bump", json!({"by": 2})).await.unwrap();
    assert_eq!(first["content"][0]["text"], "2", "{first}");
    let second = client.call_tool("bump", json!({"by": 3})).await.unwrap();
    assert_eq!(second["content"][0]["text"], "5", "{second}");
    // Every call shares the one state the builder got.
    assert_eq!(counter.0.load(std::sync::atomic::Ordering::SeqCst), 5);
    let peeked = client.call_tool("peek", json!({})).await.unwrap();
    assert_eq!(peeked["content"][0]["text"], "5 on 2026-07-28", "{peeked}");
    // The State argument is not part of the tool's input schema.
    let tools = client.list_tools().await.unwrap();
    let bump_tool = tools.iter().find(|t| t["name"] == "bump").unwrap();
    assert_eq!(
        bump_tool["inputSchema"]["required"],
        json!(["by"]),
        "{bump_tool}"
    );
    client.close().await.unwrap();
}

#[test]
fn a_state_of_another_type_is_refused_at_build() {
    let missing = Server::builder("state", "1.0")
        .tool(Tool::new("bump", bump))
        .build()
        .unwrap_err();
    assert!(missing.to_string().contains("State<"), "{missing}");
    let other = Server::builder("state", "1.0")
        .with_state(42u32)
        .tool(Tool::new("bump", bump))
        .build()
        .unwrap_err();
    assert!(other.to_string().contains("Counter"), "{other}");
}
