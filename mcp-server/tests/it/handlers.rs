//! Handler shapes: a tool and a prompt that take nothing (`async fn() -> R`), served with the
//! `NoArgs` input schema on every revision over real HTTP with our client.

use crate::raw_http;

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

/// Takes two different state types: no server has both (a server has one state).
async fn both(
    mcp_server::State(_counter): mcp_server::State<Counter>,
    mcp_server::State(limit): mcp_server::State<u32>,
    _: mcp_server::NoArgs,
) -> String {
    limit.to_string()
}

#[test]
fn every_state_type_a_handler_takes_is_checked_at_build() {
    // The first part's type is the server's; the second is not, and is named.
    let second = Server::builder("state", "1.0")
        .with_state(Counter::default())
        .tool(Tool::new("both", both))
        .build()
        .unwrap_err();
    assert!(second.to_string().contains("State<u32>"), "{second}");
    let first = Server::builder("state", "1.0")
        .with_state(7u32)
        .tool(Tool::new("both", both))
        .build()
        .unwrap_err();
    assert!(first.to_string().contains("Counter"), "{first}");
}

/// Who calls, as a part of the call a handler takes (a user's own [`FromExchange`]).
struct CalledOn(String);

impl mcp_server::FromExchange for CalledOn {
    fn from_exchange(ex: &mcp_server::Exchange) -> Self {
        Self(ex.revision().to_string())
    }
}

/// Takes no input, two parts and the exchange: publishes that `memo://count` changed.
async fn touch(
    notifier: mcp_server::Notifier,
    mcp_server::State(counter): mcp_server::State<Counter>,
    ex: mcp_server::Exchange,
) -> Result<String, String> {
    counter.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    notifier
        .resource_updated("memo://count")
        .await
        .map_err(|e| e.to_string())?;
    Ok(format!("touched on {}", ex.revision()))
}

/// Takes only a part: no input, no exchange.
async fn count(mcp_server::State(counter): mcp_server::State<Counter>) -> String {
    counter
        .0
        .load(std::sync::atomic::Ordering::SeqCst)
        .to_string()
}

async fn where_am_i(CalledOn(revision): CalledOn, by: By) -> String {
    format!("{} on {revision}", by.by)
}

async fn count_prompt(mcp_server::State(counter): mcp_server::State<Counter>) -> String {
    let n = counter.0.load(std::sync::atomic::Ordering::SeqCst);
    format!("The count is {n}.")
}

async fn read_count(
    mcp_server::State(counter): mcp_server::State<Counter>,
    request: mcp_server::ResourceRequest,
) -> String {
    let n = counter.0.load(std::sync::atomic::Ordering::SeqCst);
    format!("{} = {n}", request.uri)
}

async fn read_item(
    mcp_server::State(counter): mcp_server::State<Counter>,
    request: mcp_server::ResourceRequest,
    ex: mcp_server::Exchange,
) -> String {
    let n = counter.0.load(std::sync::atomic::Ordering::SeqCst);
    format!(
        "{} of {n} on {}",
        request.var("id").unwrap_or("?"),
        ex.revision()
    )
}

fn parts_server(counter: Counter) -> Server {
    Server::builder("parts", "1.0")
        .with_state(counter)
        .tool(Tool::new("touch", touch))
        .tool(Tool::new("count", count))
        .tool(Tool::new("where", where_am_i))
        .prompt(Prompt::new("count", count_prompt))
        .resource(mcp_server::Resource::new(
            "memo://count",
            "count",
            read_count,
        ))
        .resource_template(mcp_server::ResourceTemplate::new(
            "memo://items/{id}",
            "item",
            read_item,
        ))
        .build()
        .unwrap()
}

#[tokio::test]
async fn tools_prompts_and_resources_take_state_the_notifier_and_parts_of_their_own() {
    use futures::StreamExt as _;

    let counter = Counter::default();
    let running = Running::start(parts_server(counter.clone()), HttpConfig::new()).await;
    let client = Client::builder()
        .timeout(WAIT)
        .connect_http(&running.url("/mcp"))
        .await
        .unwrap();
    let mut listener = tokio::time::timeout(
        WAIT,
        client.listen(mcp_client::Subscriptions::new().resource("memo://count")),
    )
    .await
    .unwrap()
    .unwrap();
    let touched = client.call_tool("touch", json!({})).await.unwrap();
    assert_eq!(
        touched["content"][0]["text"], "touched on 2026-07-28",
        "{touched}"
    );
    // The Notifier the handler took published to the server's event log, which the listen
    // stream delivers.
    let note = tokio::time::timeout(WAIT, listener.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(note.method, "notifications/resources/updated", "{note:?}");
    assert_eq!(
        note.params.as_ref().unwrap()["uri"],
        "memo://count",
        "{note:?}"
    );
    let counted = client.call_tool("count", json!({})).await.unwrap();
    assert_eq!(counted["content"][0]["text"], "1", "{counted}");
    let located = client.call_tool("where", json!({"by": 4})).await.unwrap();
    assert_eq!(
        located["content"][0]["text"], "4 on 2026-07-28",
        "{located}"
    );
    let prompt = client.get_prompt("count", json!({})).await.unwrap();
    assert_eq!(
        prompt["messages"][0]["content"]["text"], "The count is 1.",
        "{prompt}"
    );
    let read = client.read_resource("memo://count").await.unwrap();
    assert_eq!(read["contents"][0]["text"], "memo://count = 1", "{read}");
    let item = client.read_resource("memo://items/7").await.unwrap();
    assert_eq!(
        item["contents"][0]["text"], "7 of 1 on 2026-07-28",
        "{item}"
    );
    // Parts are not arguments: the tools' input schemas hold only their input, and only the
    // tool that takes the Exchange can ask (no mcpAnswers/mcpState added on any revision).
    let tools = client.list_tools().await.unwrap();
    for tool in &tools {
        let properties = tool["inputSchema"]["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let expected: Vec<&str> = if tool["name"] == "where" {
            vec!["by"]
        } else {
            vec![]
        };
        assert_eq!(
            properties.keys().map(String::as_str).collect::<Vec<_>>(),
            expected,
            "{tool}"
        );
    }
    client.close().await.unwrap();
}

#[test]
fn a_prompt_or_resource_taking_state_the_server_lacks_is_refused_at_build() {
    let prompt = Server::builder("state", "1.0")
        .prompt(Prompt::new("count", count_prompt))
        .build()
        .unwrap_err();
    assert!(
        prompt.to_string().contains("prompt \"count\" takes State<"),
        "{prompt}"
    );
    let resource = Server::builder("state", "1.0")
        .with_state(1u8)
        .resource(mcp_server::Resource::new(
            "memo://count",
            "count",
            read_count,
        ))
        .build()
        .unwrap_err();
    assert!(
        resource.to_string().contains("resource \"memo://count\""),
        "{resource}"
    );
    let template = Server::builder("state", "1.0")
        .resource_template(mcp_server::ResourceTemplate::new(
            "memo://items/{id}",
            "item",
            read_item,
        ))
        .build()
        .unwrap_err();
    assert!(
        template.to_string().contains("resource template"),
        "{template}"
    );
}
