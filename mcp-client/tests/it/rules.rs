//! The client's obligations one by one, against the scripted server: retries happen once and
//! only once (re-initialize on 404, re-fetch on a header mismatch), the version header follows
//! `initialize` and never rides on it, the era is remembered per origin (HTTP+SSE included),
//! capabilities are declared only for callbacks present, the cache never keeps the result of a
//! retry and forgets lists on `list_changed`, and the typed view reads every call.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use mcp_client::{Answer, Asks, Client, ErrorKind, QuestionKind, Revision, Subscriptions};
use serde_json::{Value, json};
use support::{Config, Mock, within};

fn builder() -> mcp_client::ClientBuilder {
    Client::builder()
        .client_info("rules", "0.0.1")
        .remember_era(false)
        .timeout(Duration::from_secs(10))
}

fn roots() -> mcp_client::ClientBuilder {
    builder().on_ask(Asks::none().roots(), |q| async move {
        assert_eq!(q.kind(), QuestionKind::Roots);
        Answer::result(json!({"roots": []}))
    })
}

async fn connect(mock: &Mock, revision: Revision, b: mcp_client::ClientBuilder) -> Client {
    within(b.revision(revision).connect_http(&mock.mcp_url()))
        .await
        .unwrap()
}

fn count(mock: &Mock, method: &str) -> usize {
    mock.methods().iter().filter(|m| *m == method).count()
}

#[tokio::test]
async fn a_lost_session_is_reinitialized_once_and_then_the_404_is_reported() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2025_06_18, builder()).await;
    assert_eq!(count(&mock, "initialize"), 1);
    mock.forget_sessions_always();
    let error = within(client.call_tool("echo", json!({"text": "x"})))
        .await
        .unwrap_err();
    assert_eq!(error.http_status(), Some(404), "{error}");
    assert_eq!(error.code(), Some(-32001), "{error}");
    // One re-initialize, one retry of the call: no loop.
    assert_eq!(count(&mock, "initialize"), 2);
    assert_eq!(count(&mock, "tools/call"), 2);
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn the_version_header_follows_initialize_and_never_rides_on_it() {
    let mock = Mock::start(Config::all()).await;
    for revision in [Revision::V2025_11_25, Revision::V2025_06_18] {
        let client = connect(&mock, revision, builder()).await;
        within(client.call_tool("echo", json!({"text": "x"})))
            .await
            .unwrap();
        within(client.close()).await.unwrap();
    }
    let recorded = mock.recorded();
    let initializes: Vec<_> = recorded
        .iter()
        .filter(|r| r.body["method"] == "initialize")
        .collect();
    assert_eq!(initializes.len(), 2);
    for r in initializes {
        assert!(
            r.headers.get("mcp-protocol-version").is_none(),
            "initialize carries no version header"
        );
    }
    for r in recorded.iter().filter(|r| r.body["method"] != "initialize") {
        assert_eq!(
            r.headers["mcp-protocol-version"].to_str().unwrap(),
            r.revision,
            "{}",
            r.body
        );
    }
    // 2025-03-26 defines no version header at all.
    let client = connect(&mock, Revision::V2025_03_26, builder()).await;
    within(client.call_tool("echo", json!({"text": "x"})))
        .await
        .unwrap();
    let last = mock.recorded().pop().unwrap();
    assert_eq!(last.revision, "2025-03-26");
    assert!(last.headers.get("mcp-protocol-version").is_none());
}

#[tokio::test]
async fn a_header_mismatch_refetches_and_retries_once_only() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2026_07_28, builder()).await;
    within(client.list_tools()).await.unwrap();
    mock.reject_region_always();
    let lists = count(&mock, "tools/list");
    let calls = count(&mock, "tools/call");
    let error = within(client.call_tool("region", json!({"region": "eu"})))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(-32020), "{error}");
    assert_eq!(error.http_status(), Some(400));
    assert_eq!(
        count(&mock, "tools/call") - calls,
        2,
        "the call and one retry"
    );
    // One re-fetch of the (two-page) list.
    assert_eq!(count(&mock, "tools/list") - lists, 2);
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn a_tool_never_listed_gets_no_param_headers() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2026_07_28, builder()).await;
    // Not listed yet: the server rejects the missing Mcp-Param-Region; the client re-fetches the
    // tools and the retry carries the header.
    let result = within(client.call_tool("region", json!({"region": "us"})))
        .await
        .unwrap();
    assert_eq!(result["content"][0]["text"], "region us");
    let calls: Vec<_> = mock
        .recorded()
        .into_iter()
        .filter(|r| r.body["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2);
    assert!(calls[0].headers.get("mcp-param-region").is_none());
    assert_eq!(calls[1].headers["mcp-param-region"], "us");
}

#[tokio::test]
async fn the_era_is_remembered_per_origin_for_http_sse_too() {
    let mock = Mock::start(Config::sse_only()).await;
    let url = format!("{}/sse", mock.base);
    let first = within(Client::builder().connect_http(&url)).await.unwrap();
    assert_eq!(first.revision(), Revision::V2025_11_25);
    let recorded = mock.recorded().len();
    let second = within(Client::builder().connect_http(&url)).await.unwrap();
    assert_eq!(second.revision(), Revision::V2025_11_25);
    // The second client went straight to the HTTP+SSE stream: its first message is initialize,
    // with the revision the first one settled on, and no probe.
    let after = mock.recorded();
    assert_eq!(after[recorded].body["method"], "initialize");
    assert_eq!(
        after[recorded].body["params"]["protocolVersion"],
        "2025-11-25"
    );
    assert!(after.iter().all(|r| r.body["method"] != "server/discover"));
    // remember_era(false) forgets nothing but does not read the memory either: it probes.
    let third = within(builder().connect_http(&url)).await.unwrap();
    assert_eq!(third.revision(), Revision::V2025_11_25);
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn capabilities_are_declared_only_for_callbacks_present() {
    let mock = Mock::start(Config::all()).await;
    let cases = [
        (Asks::none().roots(), json!({"roots": {}})),
        (Asks::none().sampling(), json!({"sampling": {}})),
        (
            Asks::none().url_elicitation(),
            json!({"elicitation": {"url": {}}}),
        ),
        (
            Asks::all(),
            json!({"roots": {}, "sampling": {}, "elicitation": {"form": {}, "url": {}}}),
        ),
    ];
    for (asks, expected) in cases {
        for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
            let b = builder().on_ask(asks, |_| async { Answer::decline() });
            let client = connect(&mock, revision, b).await;
            within(client.call_tool("echo", json!({"text": "x"})))
                .await
                .unwrap();
            let r = mock.recorded().pop().unwrap();
            let declared = if revision == Revision::V2026_07_28 {
                r.body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"].clone()
            } else {
                mock.recorded()
                    .into_iter()
                    .rev()
                    .find(|r| r.body["method"] == "initialize")
                    .unwrap()
                    .body["params"]["capabilities"]
                    .clone()
            };
            assert_eq!(declared, expected, "{revision} {asks:?}");
        }
    }
    // 2025-06-18 has no URL mode: URL elicitation alone declares no elicitation at all.
    let b = builder().on_ask(Asks::none().url_elicitation(), |_| async {
        Answer::decline()
    });
    connect(&mock, Revision::V2025_06_18, b).await;
    let init = mock
        .recorded()
        .into_iter()
        .rev()
        .find(|r| r.body["method"] == "initialize")
        .unwrap();
    assert_eq!(init.body["params"]["capabilities"], json!({}));
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn the_result_of_a_retry_is_never_cached() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2026_07_28, roots()).await;
    let reads = || mock.reads.load(std::sync::atomic::Ordering::Relaxed);
    let first = within(client.read_resource("mem://ask")).await.unwrap();
    assert_eq!(first["contents"][0]["text"], "answered");
    assert_eq!(first["ttlMs"], 60_000, "a cacheable ttl, on a retry");
    assert_eq!(reads(), 2, "the request and its retry");
    within(client.read_resource("mem://ask")).await.unwrap();
    assert_eq!(reads(), 4, "the retry's result was not cached");
    // An ordinary read with the same ttl is cached.
    within(client.read_resource("mem://a")).await.unwrap();
    within(client.read_resource("mem://a")).await.unwrap();
    assert_eq!(reads(), 5);
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn list_changed_invalidates_cached_lists() {
    let mock = Mock::start(Config::all()).await;
    mock.set_list_ttl(60_000);
    let client = connect(&mock, Revision::V2026_07_28, builder()).await;
    within(client.list_tools()).await.unwrap();
    let lists = count(&mock, "tools/list");
    assert_eq!(lists, 2, "two pages");
    within(client.list_tools()).await.unwrap();
    assert_eq!(
        count(&mock, "tools/list"),
        lists,
        "both pages came from the cache"
    );
    let mut listener = within(client.listen(Subscriptions::new().tools_changed()))
        .await
        .unwrap();
    mock.publish("notifications/tools/list_changed", json!({}));
    within(listener.next()).await.unwrap();
    within(client.list_tools()).await.unwrap();
    assert_eq!(
        count(&mock, "tools/list"),
        lists + 2,
        "list_changed emptied the cache"
    );
    // Another list's change leaves the tools cached.
    mock.publish("notifications/prompts/list_changed", json!({}));
    within(client.list_tools()).await.unwrap();
    assert_eq!(count(&mock, "tools/list"), lists + 2);
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn nothing_is_cached_before_2026() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2025_11_25, builder()).await;
    let reads = || mock.reads.load(std::sync::atomic::Ordering::Relaxed);
    within(client.read_resource("mem://a")).await.unwrap();
    within(client.read_resource("mem://a")).await.unwrap();
    assert_eq!(reads(), 2);
}

#[tokio::test]
async fn the_typed_view_reads_every_call() {
    let mock = Mock::start(Config::all()).await;
    for revision in [Revision::V2026_07_28, Revision::V2025_06_18] {
        let client = connect(&mock, revision, builder()).await;
        let typed = client.typed();
        let tools = within(typed.list_tools()).await.unwrap();
        assert_eq!(tools[0].name, "echo");
        assert_eq!(tools[0].input_schema["type"], "object");
        let result = within(typed.call_tool("echo", json!({"text": "hi"})))
            .await
            .unwrap();
        assert_eq!(result.content[0].as_text(), Some("hi"));
        assert_eq!(result.is_error, None);
        let unknown = within(typed.call_tool("nope", json!({}))).await.unwrap();
        assert_eq!(unknown.is_error, Some(true));
        assert_eq!(
            within(typed.list_resources()).await.unwrap()[0].uri,
            "mem://a"
        );
        assert_eq!(
            within(typed.list_resource_templates()).await.unwrap()[0].uri_template,
            "mem://{x}"
        );
        let read = within(typed.read_resource("mem://a")).await.unwrap();
        assert_eq!(read.contents.len(), 1);
        assert_eq!(within(typed.list_prompts()).await.unwrap()[0].name, "greet");
        let prompt = within(typed.get_prompt("greet", json!({"who": "ann"})))
            .await
            .unwrap();
        assert_eq!(prompt.messages.len(), 1);
        let completion = within(typed.complete(
            json!({"type": "ref/prompt", "name": "greet"}),
            "who",
            "a",
            None,
        ))
        .await
        .unwrap();
        assert_eq!(completion.completion.values, ["alpha"]);
        // The raw result of the same call is still there, whole.
        let raw: Value = within(client.call_tool("echo", json!({"text": "hi"})))
            .await
            .unwrap();
        assert_eq!(raw["content"][0]["text"], "hi");
    }
    // A result of the wrong shape is a protocol error in the typed view only.
    mock.misbehave(support::Misbehaviour::WrongShape);
    let client = connect(&mock, Revision::V2025_11_25, builder()).await;
    within(client.call_tool("bad", json!({}))).await.unwrap();
    let error = within(client.typed().call_tool("bad", json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Protocol, "{error}");
}

#[tokio::test]
async fn the_notification_stream_starts_a_new_session_when_the_server_lost_it() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2025_11_25, builder()).await;
    let opened = mock.changed.notified();
    tokio::pin!(opened);
    opened.as_mut().enable();
    let mut listener = within(client.listen(Subscriptions::new().tools_changed()))
        .await
        .unwrap();
    within(opened).await;
    let first = client.session_id().unwrap();
    // The server forgets the session and drops the stream: the GET that reopens it meets 404.
    let reopened = mock.changed.notified();
    tokio::pin!(reopened);
    reopened.as_mut().enable();
    mock.expire_sessions();
    mock.drop_get_streams();
    within(reopened).await;
    assert_eq!(count(&mock, "initialize"), 2);
    assert_ne!(client.session_id().unwrap(), first);
    mock.publish("notifications/tools/list_changed", json!({}));
    assert_eq!(
        within(listener.next()).await.unwrap().method,
        "notifications/tools/list_changed"
    );
    // Calls use the new session without another initialize.
    within(client.call_tool("echo", json!({"text": "x"})))
        .await
        .unwrap();
    assert_eq!(count(&mock, "initialize"), 2);
    support::schema::validate(&mock.recorded());
}
