//! The client against a scripted HTTP server: every revision, both HTTP transports, every ask
//! mechanism, negotiation from each starting point, sessions, cancellation, notifications, the
//! cache, and a misbehaving server. Every message the client sends is validated against the
//! revision's official schema.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use mcp_client::{
    Answer, Asks, CallOptions, Client, ErrorKind, QuestionKind, Revision, Subscriptions,
};
use serde_json::{Value, json};
use support::{Config, Misbehaviour, Mock, within};

fn builder() -> mcp_client::ClientBuilder {
    Client::builder()
        .client_info("tests", "0.0.1")
        .remember_era(false)
        .timeout(Duration::from_secs(10))
}

fn answering() -> mcp_client::ClientBuilder {
    builder().on_ask(Asks::all(), |q| async move {
        match q.kind() {
            QuestionKind::Roots => Answer::result(json!({"roots": []})),
            _ => Answer::accept(json!({"ok": true})),
        }
    })
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

async fn connect(mock: &Mock, revision: Revision, b: mcp_client::ClientBuilder) -> Client {
    let b = b.revision(revision);
    if Revision::V2024_11_05 == revision {
        within(b.connect_sse(&mock.sse_url())).await.unwrap()
    } else {
        within(b.connect_http(&mock.mcp_url())).await.unwrap()
    }
}

#[tokio::test]
async fn negotiates_from_each_starting_point() {
    let cases = [
        (
            "all revisions",
            Config::all(),
            "/mcp",
            Revision::V2026_07_28,
            vec!["server/discover"],
        ),
        (
            "modern only",
            Config::modern_only(),
            "/mcp",
            Revision::V2026_07_28,
            vec!["server/discover"],
        ),
        (
            "legacy only",
            Config::legacy_only(),
            "/mcp",
            Revision::V2025_11_25,
            vec!["server/discover", "initialize", "notifications/initialized"],
        ),
        (
            "HTTP+SSE only",
            Config::sse_only(),
            "/sse",
            Revision::V2025_11_25,
            vec!["initialize", "notifications/initialized"],
        ),
    ];
    for (name, config, path, expected, handshake) in cases {
        let mock = Mock::start(config).await;
        let client = within(builder().connect_http(&format!("{}{path}", mock.base)))
            .await
            .unwrap();
        assert_eq!(client.revision(), expected, "{name}");
        let tools = within(client.list_tools()).await.unwrap();
        assert!(tools.iter().any(|t| t["name"] == "echo"), "{name}");
        let result = within(client.call_tool("echo", json!({"text": "hi"})))
            .await
            .unwrap();
        assert_eq!(text(&result), "hi", "{name}");
        // The same arguments lent, twice.
        let arguments = json!({"text": "lent"});
        for _ in 0..2 {
            let result = within(client.call_tool("echo", &arguments)).await.unwrap();
            assert_eq!(text(&result), "lent", "{name}");
        }
        let methods = mock.methods();
        assert_eq!(
            methods[..handshake.len()],
            handshake[..],
            "{name}: {methods:?}"
        );
        support::schema::validate(&mock.recorded());
    }
}

#[tokio::test]
async fn a_recognized_modern_refusal_retries_with_a_mutual_version() {
    let config = Config {
        streamable: vec!["2025-06-18", "2025-03-26"],
        sse: false,
        refuse_modern: true,
    };
    let mock = Mock::start(config).await;
    let client = within(answering().connect_http(&mock.mcp_url()))
        .await
        .unwrap();
    assert_eq!(client.revision(), Revision::V2025_06_18);
    let methods = mock.methods();
    assert_eq!(
        methods[..3],
        ["server/discover", "initialize", "notifications/initialized"]
    );
    let initialize = mock
        .recorded()
        .into_iter()
        .find(|r| r.body["method"] == "initialize")
        .unwrap();
    assert_eq!(
        initialize.body["params"]["protocolVersion"], "2025-06-18",
        "the newest mutual version"
    );
    // Pushed asking works on what was negotiated.
    let result = within(client.call_tool("ask", json!({}))).await.unwrap();
    assert_eq!(text(&result), "answer=accept");
    support::schema::validate(&mock.recorded());
}

/// A server that refuses the first request with -32022 although its list names the version the
/// client sent (the official `request-metadata` scenario): the client retries once with it,
/// whether it negotiates or is pinned, and gives up when the refusal repeats.
#[tokio::test]
async fn a_refusal_naming_the_requested_version_is_retried_once() {
    for pinned in [false, true] {
        let mock = Mock::start(Config::modern_only()).await;
        mock.refuse_versions(1);
        let b = if pinned {
            builder().revision(Revision::V2026_07_28)
        } else {
            builder()
        };
        let client = within(b.connect_http(&mock.mcp_url())).await.unwrap();
        assert_eq!(client.revision(), Revision::V2026_07_28, "pinned: {pinned}");
        let tools = within(client.list_tools()).await.unwrap();
        assert!(!tools.is_empty());
        let discovers: Vec<_> = mock
            .recorded()
            .into_iter()
            .filter(|r| r.body["method"] == "server/discover")
            .collect();
        assert_eq!(discovers.len(), 2, "pinned: {pinned}");
        for d in &discovers {
            assert_eq!(d.headers["mcp-protocol-version"], support::MODERN);
            assert_eq!(
                d.body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
                support::MODERN
            );
        }
        support::schema::validate(&mock.recorded());
    }
    // Refused twice: one retry only, then a typed error.
    let mock = Mock::start(Config::modern_only()).await;
    mock.refuse_versions(2);
    let error = within(builder().connect_http(&mock.mcp_url()))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnsupportedVersion, "{error}");
    assert_eq!(mock.discovers.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert_eq!(mock.methods(), ["server/discover", "server/discover"]);
}

#[tokio::test]
async fn pushed_questions_arrive_on_the_http_sse_stream() {
    let mock = Mock::start(Config::sse_only()).await;
    let client = within(answering().connect_http(&mock.sse_url()))
        .await
        .unwrap();
    assert_eq!(client.revision(), Revision::V2025_11_25);
    let result = within(client.call_tool("ask", json!({}))).await.unwrap();
    assert_eq!(text(&result), "answer=accept");
    let mut listener = within(client.listen(Subscriptions::new().tools_changed()))
        .await
        .unwrap();
    mock.publish("notifications/tools/list_changed", json!({}));
    assert_eq!(
        within(listener.next()).await.unwrap().method,
        "notifications/tools/list_changed"
    );
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn remembers_the_era_per_origin() {
    let mock = Mock::start(Config::legacy_only()).await;
    let url = mock.mcp_url();
    let first = within(Client::builder().connect_http(&url)).await.unwrap();
    assert_eq!(first.revision(), Revision::V2025_11_25);
    let probes = mock
        .methods()
        .iter()
        .filter(|m| *m == "server/discover")
        .count();
    let second = within(Client::builder().connect_http(&url)).await.unwrap();
    assert_eq!(second.revision(), Revision::V2025_11_25);
    let after = mock
        .methods()
        .iter()
        .filter(|m| *m == "server/discover")
        .count();
    assert_eq!(
        (probes, after),
        (1, 1),
        "the second client must not probe again"
    );
}

#[tokio::test]
async fn every_call_type_on_every_revision() {
    let mock = Mock::start(Config::all()).await;
    for revision in Revision::ALL {
        let client = connect(&mock, revision, builder()).await;
        assert_eq!(client.revision(), revision);
        let tools = within(client.list_tools()).await.unwrap();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert!(names.starts_with(&["echo", "ask"]), "{revision}: {names:?}");
        let paged: Vec<_> = within(
            client
                .list_stream(mcp_client::ListKind::Tools)
                .collect::<Vec<_>>(),
        )
        .await;
        assert_eq!(paged.len(), tools.len(), "{revision}");
        assert!(paged.iter().all(Result::is_ok));
        assert_eq!(
            text(
                &within(client.call_tool("echo", json!({"text": "x"})))
                    .await
                    .unwrap()
            ),
            "x"
        );
        assert_eq!(
            within(client.list_resources()).await.unwrap()[0]["uri"],
            "mem://a"
        );
        assert_eq!(
            within(client.list_resource_templates()).await.unwrap()[0]["uriTemplate"],
            "mem://{x}"
        );
        let read = within(client.read_resource("mem://a")).await.unwrap();
        assert!(
            read["contents"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("read ")
        );
        assert_eq!(
            within(client.list_prompts()).await.unwrap()[0]["name"],
            "greet"
        );
        let prompt = within(client.get_prompt("greet", json!({"who": "bob"})))
            .await
            .unwrap();
        assert_eq!(prompt["messages"][0]["content"]["text"], "hello bob");
        let completion = within(client.complete(
            json!({"type": "ref/prompt", "name": "greet"}),
            "who",
            "a",
            None,
        ))
        .await
        .unwrap();
        assert_eq!(completion["completion"]["values"][0], "alpha");
        let ping = within(client.ping()).await;
        let set_level = within(client.set_log_level("info")).await;
        if revision == Revision::V2026_07_28 {
            assert_eq!(ping.unwrap_err().kind(), ErrorKind::Unsupported);
            assert_eq!(set_level.unwrap_err().kind(), ErrorKind::Unsupported);
        } else {
            ping.unwrap();
            set_level.unwrap();
        }
        within(client.close()).await.unwrap();
    }
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn asks_with_every_mechanism() {
    let mock = Mock::start(Config::all()).await;
    let expected = [
        (Revision::V2026_07_28, "a=accept b=0"),
        (Revision::V2025_11_25, "answer=accept"),
        (Revision::V2025_06_18, "answer=accept"),
        (Revision::V2025_03_26, "answer=accept"),
        (Revision::V2024_11_05, "answer=accept"),
    ];
    for (revision, want) in expected {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = asked.clone();
        let b = builder().on_ask(Asks::all(), move |q| {
            seen.lock().unwrap().push(q.kind());
            async move {
                match q.kind() {
                    QuestionKind::Roots => Answer::result(json!({"roots": []})),
                    _ => Answer::accept(json!({"ok": true})),
                }
            }
        });
        let client = connect(&mock, revision, b).await;
        let result = within(client.call_tool("ask", json!({}))).await.unwrap();
        assert_eq!(text(&result), want, "{revision}");
        assert!(!asked.lock().unwrap().is_empty(), "{revision}");
    }
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn a_pushed_question_without_a_callback_is_refused_not_accepted() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2025_06_18, builder()).await;
    let result = within(client.call_tool("ask", json!({}))).await.unwrap();
    assert_eq!(text(&result), "error=-32601");
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn mrtr_without_a_callback_is_a_typed_error() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2026_07_28, builder()).await;
    let error = within(client.call_tool("ask", json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InputRequired);
}

#[tokio::test]
async fn declares_only_the_capabilities_it_answers() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2026_07_28, builder()).await;
    within(client.list_tools()).await.unwrap();
    let b = builder().on_ask(Asks::none().elicitation(), |_| async { Answer::decline() });
    let client2 = connect(&mock, Revision::V2025_11_25, b).await;
    drop((client, client2));
    for r in mock.recorded() {
        let caps = r.body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"].clone();
        if !caps.is_null() {
            assert_eq!(caps, json!({}));
        }
        if r.body["method"] == "initialize" {
            assert_eq!(
                r.body["params"]["capabilities"],
                json!({"elicitation": {"form": {}}})
            );
        }
    }
}

#[tokio::test]
async fn progress_and_notifications_per_call() {
    let mock = Mock::start(Config::all()).await;
    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let notified = Arc::new(Mutex::new(0usize));
        let count = notified.clone();
        let b = builder().on_notification(move |_| *count.lock().unwrap() += 1);
        let client = connect(&mock, revision, b).await;
        let progress = Arc::new(Mutex::new(Vec::new()));
        let sink = progress.clone();
        let options = CallOptions::new()
            .on_progress(move |p| sink.lock().unwrap().push((p.progress, p.total)));
        let result = within(client.call_tool_with("progress", json!({}), options))
            .await
            .unwrap();
        assert_eq!(text(&result), "done");
        assert_eq!(
            *progress.lock().unwrap(),
            vec![(1.0, Some(2.0)), (2.0, Some(2.0))],
            "{revision}"
        );
        assert_eq!(*notified.lock().unwrap(), 2, "{revision}");
    }
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn cancellation_closes_the_stream_on_2026_and_notifies_before() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2026_07_28, builder()).await;
    let closed = mock.closed.notified();
    tokio::pin!(closed);
    closed.as_mut().enable();
    let options = CallOptions::new().timeout(Duration::from_millis(300));
    let error = within(client.call_tool_with("slow", json!({}), options))
        .await
        .unwrap_err();
    assert!(error.is_timeout());
    within(closed).await;
    assert_eq!(
        mock.closed_streams
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert!(
        mock.cancelled().is_empty(),
        "2026-07-28 over HTTP cancels by closing the stream only"
    );

    let client = connect(&mock, Revision::V2025_11_25, builder()).await;
    let cancelled = mock.cancel_seen.notified();
    tokio::pin!(cancelled);
    cancelled.as_mut().enable();
    let call = client.call_tool("slow", json!({}));
    // Dropping the call's future is the cancellation.
    let dropped = tokio::time::timeout(Duration::from_millis(300), call).await;
    assert!(dropped.is_err());
    within(cancelled).await;
    let cancelled = mock.cancelled();
    assert_eq!(cancelled.len(), 1);
    let id = mock
        .recorded()
        .iter()
        .rev()
        .find(|r| r.body["method"] == "tools/call")
        .map(|r| r.body["id"].clone())
        .unwrap();
    assert_eq!(cancelled[0]["requestId"], id);
    support::schema::validate(&mock.recorded());
}

/// A call that times out has told the server by the time it returns: its
/// `notifications/cancelled` is sent before the caller sees the timeout, so whatever the caller
/// sends next comes after it.
#[tokio::test]
async fn a_timed_out_call_has_sent_its_cancellation_when_it_returns() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2025_11_25, builder()).await;
    let options = CallOptions::new().timeout(Duration::from_millis(200));
    let error = within(client.call_tool_with("slow", json!({}), options))
        .await
        .unwrap_err();
    assert!(error.is_timeout());
    // No waiting here: the notification is already recorded.
    let cancelled = mock.cancelled();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    let id = mock
        .recorded()
        .iter()
        .rev()
        .find(|r| r.body["method"] == "tools/call")
        .map(|r| r.body["id"].clone())
        .unwrap();
    assert_eq!(cancelled[0]["requestId"], id);
}

#[tokio::test]
async fn reinitializes_after_a_lost_session_and_deletes_on_close() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2025_11_25, builder()).await;
    let first = client.session_id().unwrap();
    within(client.call_tool("echo", json!({"text": "1"})))
        .await
        .unwrap();
    mock.expire_sessions();
    let result = within(client.call_tool("echo", json!({"text": "2"})))
        .await
        .unwrap();
    assert_eq!(text(&result), "2");
    let second = client.session_id().unwrap();
    assert_ne!(first, second);
    assert_eq!(
        mock.methods().iter().filter(|m| *m == "initialize").count(),
        2
    );
    within(client.close()).await.unwrap();
    assert_eq!(mock.deleted(), vec![second]);
    let after = within(client.call_tool("echo", json!({})))
        .await
        .unwrap_err();
    assert!(after.is_closed());
    // Every request after initialize carried the negotiated version header.
    for r in mock
        .recorded()
        .iter()
        .filter(|r| r.body["method"] != "initialize")
    {
        assert_eq!(
            r.headers["mcp-protocol-version"], "2025-11-25",
            "{}",
            r.body
        );
    }
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn mirrors_headers_and_retries_once_on_a_mismatch() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2026_07_28, builder()).await;
    let tools = within(client.list_tools()).await.unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"region"));
    assert!(
        !names.contains(&"invalid"),
        "a tool with an invalid x-mcp-header is excluded"
    );
    let result = within(client.call_tool("region", json!({"region": "us-west1"})))
        .await
        .unwrap();
    assert_eq!(text(&result), "region us-west1");
    let call = mock
        .recorded()
        .into_iter()
        .rev()
        .find(|r| r.body["method"] == "tools/call")
        .unwrap();
    assert_eq!(call.headers["mcp-method"], "tools/call");
    assert_eq!(call.headers["mcp-name"], "region");
    assert_eq!(call.headers["mcp-protocol-version"], "2026-07-28");

    mock.set_region_header("Zone");
    let lists = mock.methods().iter().filter(|m| *m == "tools/list").count();
    let result = within(client.call_tool("region", json!({"region": "eu"})))
        .await
        .unwrap();
    assert_eq!(text(&result), "region eu");
    let relisted = mock.methods().iter().filter(|m| *m == "tools/list").count();
    assert!(
        relisted > lists,
        "the client re-fetched the tools after -32020"
    );
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn cache_honours_ttl_and_is_invalidated_by_notifications() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2026_07_28, builder()).await;
    let reads = || mock.reads.load(std::sync::atomic::Ordering::Relaxed);
    within(client.read_resource("mem://a")).await.unwrap();
    within(client.read_resource("mem://a")).await.unwrap();
    assert_eq!(
        reads(),
        1,
        "the second read came from the cache (ttlMs 60000)"
    );
    let mut listener = within(client.listen(Subscriptions::new().resource("mem://a")))
        .await
        .unwrap();
    assert_eq!(
        listener.accepted(),
        Some(&json!({"resourceSubscriptions": ["mem://a"]}))
    );
    mock.publish("notifications/resources/updated", json!({"uri": "mem://a"}));
    let n = within(listener.next()).await.unwrap();
    assert_eq!(n.method, "notifications/resources/updated");
    within(client.read_resource("mem://a")).await.unwrap();
    assert_eq!(reads(), 2, "resources/updated invalidated the cached read");
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn listens_on_2026_and_on_the_legacy_get_stream_with_resume() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2026_07_28, builder()).await;
    let mut listener = within(client.listen(Subscriptions::new().tools_changed()))
        .await
        .unwrap();
    assert_eq!(
        listener.accepted(),
        Some(&json!({"toolsListChanged": true}))
    );
    mock.publish("notifications/tools/list_changed", json!({}));
    assert_eq!(
        within(listener.next()).await.unwrap().method,
        "notifications/tools/list_changed"
    );

    let client = connect(&mock, Revision::V2025_11_25, builder()).await;
    let opened = mock.changed.notified();
    tokio::pin!(opened);
    opened.as_mut().enable();
    let mut listener = within(client.listen(Subscriptions::new().tools_changed()))
        .await
        .unwrap();
    within(opened).await;
    mock.publish("notifications/tools/list_changed", json!({}));
    assert_eq!(
        within(listener.next()).await.unwrap().method,
        "notifications/tools/list_changed"
    );
    // The server drops the stream; the client comes back with Last-Event-ID.
    let reopened = mock.changed.notified();
    tokio::pin!(reopened);
    reopened.as_mut().enable();
    mock.drop_get_streams();
    within(reopened).await;
    let ids = mock.last_event_ids();
    assert_eq!(ids.last().unwrap().as_deref(), Some("2"), "{ids:?}");
    support::schema::validate(&mock.recorded());
}

/// `listen` resolves once the standalone GET stream is open, and subscribes only then: an
/// update the server sends right after it answers `resources/subscribe` reaches the listener.
#[tokio::test]
async fn listen_opens_the_get_stream_before_subscribing() {
    for revision in [
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
    ] {
        let mock = Mock::start(Config::all()).await;
        mock.update_on_subscribe();
        let client = connect(&mock, revision, builder()).await;
        let mut listener = within(client.listen(Subscriptions::new().resource("mem://a")))
            .await
            .unwrap();
        assert_eq!(
            mock.open_streams().0,
            1,
            "{revision:?}: open when listen returns"
        );
        let update = within(listener.next()).await.unwrap();
        assert_eq!(update.method, "notifications/resources/updated");
        assert_eq!(update.params.unwrap()["uri"], "mem://a");
        // A second listener shares the open stream and returns at once.
        let _second = within(client.listen(Subscriptions::new().tools_changed()))
            .await
            .unwrap();
        assert_eq!(mock.open_streams().0, 1, "{revision:?}");
        support::schema::validate(&mock.recorded());
    }
}

/// A server that answers the GET with an error status offers no stream: `listen` still
/// resolves, and subscribes, instead of failing.
#[tokio::test]
async fn listen_resolves_when_the_server_refuses_the_get_stream() {
    for status in [
        http::StatusCode::METHOD_NOT_ALLOWED,
        http::StatusCode::BAD_REQUEST,
    ] {
        let mock = Mock::start(Config::all()).await;
        mock.refuse_get(status);
        let client = connect(&mock, Revision::V2025_11_25, builder()).await;
        within(client.listen(Subscriptions::new().resource("mem://a")))
            .await
            .unwrap();
        assert_eq!(mock.open_streams().0, 0);
        assert!(
            mock.methods().iter().any(|m| m == "resources/subscribe"),
            "{status}"
        );
    }
}

/// A new session (after a 404) is subscribed again to the URIs the listeners had subscribed.
#[tokio::test]
async fn a_new_session_subscribes_the_listeners_uris_again() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2025_11_25, builder()).await;
    let _listener =
        within(client.listen(Subscriptions::new().resource("mem://a").resource("mem://b")))
            .await
            .unwrap();
    let first = client.session_id().unwrap();
    mock.expire_sessions();
    within(client.call_tool("echo", json!({"text": "x"})))
        .await
        .unwrap();
    let second = client.session_id().unwrap();
    assert_ne!(first, second);
    let subscribed: Vec<(String, String)> = mock
        .recorded()
        .into_iter()
        .filter(|r| r.body["method"] == "resources/subscribe")
        .map(|r| {
            (
                r.headers["mcp-session-id"].to_str().unwrap().to_owned(),
                r.body["params"]["uri"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let on = |session: &str| {
        let mut uris: Vec<&str> = subscribed
            .iter()
            .filter(|(s, _)| s == session)
            .map(|(_, u)| u.as_str())
            .collect();
        uris.sort();
        uris
    };
    assert_eq!(on(&first), ["mem://a", "mem://b"]);
    assert_eq!(on(&second), ["mem://a", "mem://b"], "{subscribed:?}");
    support::schema::validate(&mock.recorded());
}

#[tokio::test]
async fn resumes_a_polled_post_stream_with_last_event_id() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2025_11_25, builder()).await;
    let result = within(client.call_tool("poll", json!({}))).await.unwrap();
    assert_eq!(text(&result), "polled");
    let call = mock
        .recorded()
        .into_iter()
        .rev()
        .find(|r| r.body["method"] == "tools/call")
        .unwrap();
    let expected = format!("p-{}", call.body["id"]);
    assert!(mock.replayed().contains(&expected), "{:?}", mock.replayed());
}

#[tokio::test]
async fn a_misbehaving_server_gets_typed_errors_and_no_hang() {
    let mock = Mock::start(Config::all()).await;
    let cases = [
        (Misbehaviour::WrongContentType, ErrorKind::Protocol, None),
        (Misbehaviour::GarbageJson, ErrorKind::Protocol, None),
        (Misbehaviour::TruncatedSse, ErrorKind::Protocol, None),
        (Misbehaviour::GarbageSseData, ErrorKind::Protocol, None),
        (Misbehaviour::Silent, ErrorKind::Timeout, None),
        (Misbehaviour::Http500, ErrorKind::Transport, Some(500)),
    ];
    for revision in [Revision::V2026_07_28, Revision::V2025_06_18] {
        let client = connect(&mock, revision, builder()).await;
        for (how, kind, status) in cases {
            mock.misbehave(how);
            let options = CallOptions::new().timeout(Duration::from_millis(500));
            let error = within(client.call_tool_with("bad", json!({}), options))
                .await
                .unwrap_err();
            assert_eq!(error.kind(), kind, "{revision} {how:?}: {error}");
            assert_eq!(error.http_status(), status, "{revision} {how:?}");
        }
        // The client still works afterwards.
        within(client.call_tool("echo", json!({"text": "ok"})))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn an_unknown_result_type_is_invalid_only_where_results_have_one() {
    let mock = Mock::start(Config::all()).await;
    mock.misbehave(Misbehaviour::UnknownResultType);
    let client = connect(&mock, Revision::V2026_07_28, builder()).await;
    let error = within(client.call_tool("bad", json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Protocol, "{error}");
    // Before 2026-07-28 results have no envelope: the field means nothing.
    let client = connect(&mock, Revision::V2025_11_25, builder()).await;
    within(client.call_tool("bad", json!({}))).await.unwrap();
}

#[tokio::test]
async fn connection_refused_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let error = within(builder().connect_http(&url)).await.unwrap_err();
    assert!(error.is_transport(), "{error}");
}

#[tokio::test]
async fn rpc_errors_carry_code_message_and_data() {
    let mock = Mock::start(Config::all()).await;
    let client = connect(&mock, Revision::V2026_07_28, answering()).await;
    let error = within(client.request("no/such/method", Some(json!({}))))
        .await
        .unwrap_err();
    assert!(error.is_rpc());
    assert_eq!(error.code(), Some(-32601));
    assert_eq!(error.message(), Some("unknown method"));
    assert_eq!(error.http_status(), Some(404));
}

/// `call_tool_as` reads the same result as `call_tool` on every revision, questions included
/// (they are answered, then the final result is read into the type), and a result that does not
/// fit the type is a protocol error.
#[tokio::test]
async fn call_tool_as_reads_what_call_tool_reads() {
    #[derive(serde::Deserialize)]
    struct Reply {
        content: Vec<Block>,
        #[serde(rename = "isError", default)]
        is_error: bool,
    }
    #[derive(serde::Deserialize)]
    struct Block {
        text: String,
    }
    let mock = Mock::start(Config::all()).await;
    for revision in [
        Revision::V2026_07_28,
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
        Revision::V2024_11_05,
    ] {
        let client = connect(&mock, revision, answering()).await;
        for (tool, arguments) in [("echo", json!({"text": "hi"})), ("ask", json!({}))] {
            let value = within(client.call_tool(tool, arguments.clone()))
                .await
                .unwrap();
            let typed: Reply = within(client.call_tool_as(tool, arguments.clone()))
                .await
                .unwrap();
            assert_eq!(typed.content[0].text, text(&value), "{revision} {tool}");
            assert_eq!(
                typed.is_error,
                value["isError"] == true,
                "{revision} {tool}"
            );
            let as_value: Value = within(client.call_tool_as(tool, arguments)).await.unwrap();
            assert_eq!(as_value, value, "{revision} {tool}");
        }
        let error = within(client.call_tool_as::<Vec<u8>>("echo", json!({"text": "x"})))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Protocol, "{revision}: {error}");
    }
    support::schema::validate(&mock.recorded());
}

/// The params of the last `tools/call` the mock received.
fn last_call_params(mock: &Mock) -> Value {
    mock.recorded()
        .into_iter()
        .rev()
        .find(|r| r.body["method"] == "tools/call")
        .map(|r| r.body["params"].clone())
        .unwrap()
}

#[tokio::test]
async fn a_tool_call_puts_its_name_arguments_and_meta_on_the_wire() {
    use mcp_wire::names::meta;
    let arguments = json!({"text": "a \"quoted\" ünï line\n", "n": [1, 2.5, null]});
    for revision in [
        Revision::V2026_07_28,
        Revision::V2025_11_25,
        Revision::V2025_03_26,
        Revision::V2024_11_05,
    ] {
        let mock = Mock::start(Config::all()).await;
        let client = connect(&mock, revision, builder()).await;
        let base_meta = (revision == Revision::V2026_07_28).then_some((
            meta::PROTOCOL_VERSION,
            meta::CLIENT_INFO,
            meta::CLIENT_CAPABILITIES,
        ));
        // The expected params: `arguments` only when not null, and on 2026-07-28 the
        // revision's `_meta` (and nothing else in it unless the call adds to it).
        let expect = |arguments: Option<&Value>, extra: Option<(&str, Value)>| {
            let mut params = json!({"name": "echo"});
            if let Some(arguments) = arguments {
                params["arguments"] = arguments.clone();
            }
            let mut own = serde_json::Map::new();
            if let Some((key, value)) = extra {
                own.insert(key.to_owned(), value);
            }
            if let Some((version, info, capabilities)) = base_meta {
                own.insert(version.into(), json!("2026-07-28"));
                own.insert(info.into(), json!({"name": "tests", "version": "0.0.1"}));
                own.insert(capabilities.into(), json!({}));
            }
            if !own.is_empty() {
                params["_meta"] = Value::Object(own);
            }
            params
        };

        let result: Value = within(client.call_tool_as("echo", arguments.clone()))
            .await
            .unwrap();
        assert_eq!(text(&result), "a \"quoted\" ünï line\n", "{revision:?}");
        assert_eq!(
            last_call_params(&mock),
            expect(Some(&arguments), None),
            "{revision:?}"
        );

        within(client.call_tool("echo", json!({"text": "x"})))
            .await
            .unwrap();
        assert_eq!(
            last_call_params(&mock),
            expect(Some(&json!({"text": "x"})), None),
            "{revision:?}"
        );

        let _ = within(client.call_tool("echo", Value::Null)).await;
        assert_eq!(last_call_params(&mock), expect(None, None), "{revision:?}");

        // A progress token goes into the request's `_meta`.
        let options = CallOptions::new().on_progress(|_| {});
        within(client.call_tool_with("echo", json!({"text": "p"}), options))
            .await
            .unwrap();
        let params = last_call_params(&mock);
        let token = params["_meta"][meta::PROGRESS_TOKEN].clone();
        assert!(!token.is_null(), "{revision:?}: {params}");
        assert_eq!(
            params,
            expect(
                Some(&json!({"text": "p"})),
                Some((meta::PROGRESS_TOKEN, token))
            ),
            "{revision:?}"
        );

        // The caller's own `_meta` entries with a token: each key once, the caller's over the
        // revision's entry of the same name (2026-07-28's client capabilities), the token over
        // the caller's.
        let options = CallOptions::new()
            .on_progress(|_| {})
            .meta("app/x", json!({"deep": [1, "two"]}))
            .meta(meta::PROGRESS_TOKEN, json!("theirs"))
            .meta(meta::CLIENT_CAPABILITIES, json!({"sampling": {}}));
        within(client.call_tool_with("echo", json!({"text": "m"}), options))
            .await
            .unwrap();
        let params = last_call_params(&mock);
        let token = params["_meta"][meta::PROGRESS_TOKEN].clone();
        assert!(!token.is_null() && token != json!("theirs"), "{params}");
        let mut want = expect(
            Some(&json!({"text": "m"})),
            Some((meta::PROGRESS_TOKEN, token)),
        );
        want["_meta"]["app/x"] = json!({"deep": [1, "two"]});
        want["_meta"][meta::CLIENT_CAPABILITIES] = json!({"sampling": {}});
        assert_eq!(params, want, "{revision:?}");
        support::schema::validate(&mock.recorded());
    }
}
