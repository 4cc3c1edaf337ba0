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
