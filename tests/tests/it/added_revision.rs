//! A revision is data (issue 28): a synthetic revision, `2099-01-01`, is declared here and
//! nowhere else: 2026-07-28 with its date and one flag changed (no cache hints). Our server
//! serves it beside the published ones, our client negotiates it, and everything works over
//! Streamable HTTP and over in-memory pipes (no socket): negotiation, `tools/list`,
//! `tools/call`, a question asked mid-call, a tool error and a protocol error.

use std::future::Future;
use std::time::Duration;

use mcp_adapters::{AdapterSet, Descriptor, Revision};
use mcp_client::transport::{Stdio, StreamableHttp};
use mcp_client::{Answer, Asks, Client, ClientBuilder, QuestionKind};
use mcp_server::{StdioConfig, serve_stdio_with};
use mcp_tests::fixture::{self, Backing};
use mcp_tests::pairing::HttpServer;
use mcp_tests::recording::{Log, Recording};
use mcp_tests::schema::Schemas;
use serde_json::{Value, json};

/// The synthetic revision: 2026-07-28 with another date and without cache hints.
static V2099_01_01: Descriptor = {
    let mut next = Revision::V2026_07_28.descriptor().derive("2099-01-01");
    next.features.cache_hints = false;
    next
};

fn next() -> Revision {
    Revision::from_descriptor(&V2099_01_01)
}

/// Every published revision and the synthetic one.
fn with_next() -> AdapterSet {
    AdapterSet::new(Revision::ALL.into_iter().chain([next()])).unwrap()
}

fn builder() -> ClientBuilder {
    Client::builder()
        .client_info("added-revision", "0")
        .remember_era(false)
        .timeout(Duration::from_secs(15))
        .revisions(with_next())
        .on_ask(Asks::all(), |q| {
            let answer = match q.kind() {
                QuestionKind::Elicitation => Answer::accept(json!({})),
                _ => Answer::cancel(),
            };
            async move { answer }
        })
}

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("no answer within 30 s")
}

fn text(result: &Value) -> &str {
    result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Everything the test asks of one connected client.
async fn exercise(client: &Client, log: &Log) {
    assert_eq!(client.revision(), next());
    let server = client.server().expect("described");
    assert!(
        server.supported_versions.iter().any(|v| v == "2099-01-01"),
        "{:?}",
        server.supported_versions
    );

    let tools = within(client.list_tools()).await.unwrap();
    assert!(tools.iter().any(|t| t["name"] == "deploy"), "{tools:?}");

    let sum = within(client.call_tool("add", json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    assert_eq!(sum["structuredContent"], json!({"sum": 5}), "{sum}");

    // The question comes back as an `input_required` result (the MRTR mechanism the revision
    // kept from 2026-07-28), and the client calls again with the answer.
    let deployed = within(client.call_tool("deploy", json!({"service": "web"})))
        .await
        .unwrap();
    assert_eq!(text(&deployed), "deployed web", "{deployed}");

    let failed = within(client.call_tool("boom", json!({}))).await.unwrap();
    assert_eq!(failed["isError"], true, "{failed}");

    let unknown = within(client.call_tool("no-such-tool", json!({})))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Some(-32602), "{unknown}");

    let messages = log.messages();
    // Every request named the synthetic revision, and the flag that differs shows: the
    // list results carry no cache hints (2026-07-28's would).
    for wire in messages.iter().filter(|w| w.from_client) {
        if let Some(version) = wire
            .message
            .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        {
            assert_eq!(version, "2099-01-01", "{}", wire.message);
        }
    }
    let list = messages
        .iter()
        .find(|w| !w.from_client && w.message.pointer("/result/tools").is_some())
        .expect("a tools/list result");
    assert!(
        list.message["result"].get("ttlMs").is_none(),
        "{}",
        list.message
    );
    assert_eq!(list.message["result"]["resultType"], "complete");

    // The messages have 2026-07-28's shapes, but for the cache hints the revision dropped
    // (which 2026-07-28's schema requires on those results).
    if let Some(schemas) = Schemas::shared() {
        let problems: Vec<String> = log
            .violations(schemas, Revision::V2026_07_28, &["no-such-tool"])
            .unwrap()
            .into_iter()
            .filter(|p| {
                !p.contains(r#""ttlMs" is a required property"#)
                    && !p.contains(r#""cacheScope" is a required property"#)
            })
            .collect();
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_synthetic_revision_over_streamable_http() {
    let server = HttpServer::serve(fixture::server_with(Backing::default(), with_next()))
        .await
        .unwrap();
    let transport = StreamableHttp::builder(server.url("/mcp").unwrap()).build();
    let (transport, log) = Recording::new(transport);
    let client = within(builder().connect(transport)).await.unwrap();
    exercise(&client, &log).await;
    let methods = log.methods(true);
    assert_eq!(methods[0], "server/discover", "{methods:?}");
    within(client.close()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_synthetic_revision_without_a_socket() {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    let server = fixture::server_with(Backing::default(), with_next());
    let serving = tokio::spawn(serve_stdio_with(
        server,
        server_read,
        server_write,
        StdioConfig::default(),
    ));
    let (client_read, client_write) = tokio::io::split(client_end);
    let transport = Stdio::from_pipes(client_read, client_write, 1 << 20);
    let (transport, log) = Recording::new(transport);
    let client = within(builder().connect(transport)).await.unwrap();
    exercise(&client, &log).await;
    within(client.close()).await.unwrap();
    within(serving).await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_the_synthetic_revision_gets_the_newest_published_one() {
    let server = HttpServer::serve(fixture::server_with(Backing::default(), with_next()))
        .await
        .unwrap();
    let transport = StreamableHttp::builder(server.url("/mcp").unwrap()).build();
    let client = within(
        Client::builder()
            .remember_era(false)
            .timeout(Duration::from_secs(15))
            .connect(transport),
    )
    .await
    .unwrap();
    assert_eq!(client.revision(), Revision::LATEST);
    within(client.close()).await.unwrap();
}
