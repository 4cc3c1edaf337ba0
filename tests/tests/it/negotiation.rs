//! Our client negotiating with our server (issue 10): from each starting point (every
//! revision, modern only, legacy only, HTTP+SSE only), over stdio and HTTP, and recovering a
//! lost session. Every recorded message is validated against the official schema.

use std::future::Future;
use std::time::Duration;

use mcp_adapters::{AdapterSet, Revision};
use mcp_client::transport::{Stderr, Stdio, StreamableHttp};
use mcp_client::{Client, ClientBuilder};
use mcp_tests::fixture::{self, Backing};
use mcp_tests::pairing::HttpServer;
use mcp_tests::recording::{Log, Recording};
use mcp_tests::schema::Schemas;
use serde_json::{Value, json};

fn builder() -> ClientBuilder {
    Client::builder()
        .client_info("mcp-tests", "0")
        .remember_era(false)
        .timeout(Duration::from_secs(15))
        .probe_timeout(Duration::from_secs(5))
}

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("no answer within 30 s")
}

fn validate(log: &Log, revision: Revision) {
    let Some(schemas) = Schemas::shared() else {
        return;
    };
    let problems = log.violations(schemas, revision, &[]).unwrap();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn text(result: &Value) -> &str {
    result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

async fn echo_works(client: &Client) {
    let result = within(client.call_tool("echo", json!({"text": "negotiated"})))
        .await
        .unwrap();
    assert_eq!(text(&result), "negotiated", "{result}");
}

/// (revisions the server serves, the revision the client must end up speaking).
fn starting_points() -> Vec<(&'static str, AdapterSet, Revision)> {
    vec![
        ("every revision", AdapterSet::all(), Revision::V2026_07_28),
        (
            "modern only",
            AdapterSet::new([Revision::V2026_07_28]).unwrap(),
            Revision::V2026_07_28,
        ),
        (
            "legacy only",
            AdapterSet::new([
                Revision::V2025_11_25,
                Revision::V2025_06_18,
                Revision::V2025_03_26,
                Revision::V2024_11_05,
            ])
            .unwrap(),
            Revision::V2025_11_25,
        ),
        (
            "2025-06-18 only",
            AdapterSet::new([Revision::V2025_06_18]).unwrap(),
            Revision::V2025_06_18,
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_negotiates_from_each_starting_point() {
    for (name, revisions, expected) in starting_points() {
        let list = revisions.versions();
        let transport = Stdio::builder(env!("CARGO_BIN_EXE_pairing-server"))
            .arg("--revisions")
            .arg(list.join(","))
            .stderr(Stderr::Inherit)
            .spawn()
            .unwrap();
        let (transport, log) = Recording::new(transport);
        let client = within(builder().connect(transport)).await.unwrap();
        assert_eq!(client.revision(), expected, "{name}");
        echo_works(&client).await;
        let methods = log.methods(true);
        assert_eq!(methods[0], "server/discover", "{name}: {methods:?}");
        if expected == Revision::V2026_07_28 {
            assert!(
                !methods.iter().any(|m| m == "initialize"),
                "{name}: {methods:?}"
            );
        } else {
            assert!(
                methods.iter().any(|m| m == "initialize"),
                "{name}: {methods:?}"
            );
        }
        within(client.close()).await.unwrap();
        validate(&log, expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_negotiates_from_each_starting_point() {
    for (name, revisions, expected) in starting_points() {
        let server = HttpServer::serve(fixture::server_with(Backing::default(), revisions))
            .await
            .unwrap();
        let transport = StreamableHttp::builder(server.url("/mcp").unwrap()).build();
        let (transport, log) = Recording::new(transport);
        let client = within(builder().connect(transport)).await.unwrap();
        assert_eq!(client.revision(), expected, "{name}");
        echo_works(&client).await;
        let methods = log.methods(true);
        assert_eq!(methods[0], "server/discover", "{name}: {methods:?}");
        within(client.close()).await.unwrap();
        validate(&log, expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_http_falls_back_to_http_sse_where_only_that_answers() {
    // The URL of the HTTP+SSE stream: a POST there is refused, so the client falls back to GET.
    let server = HttpServer::serve(fixture::server(Backing::default()))
        .await
        .unwrap();
    let url = server.url("/sse").unwrap().to_string();
    let client = within(builder().connect_http(&url)).await.unwrap();
    assert!(
        client.revision() < Revision::V2026_07_28,
        "speaks {}",
        client.revision()
    );
    echo_works(&client).await;
    within(client.close()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_session_is_initialized_again_and_the_call_retried() {
    for revision in [
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
    ] {
        let server = HttpServer::serve(fixture::server(Backing::default()))
            .await
            .unwrap();
        let uri = server.url("/mcp").unwrap();
        let (transport, log) = Recording::new(StreamableHttp::builder(uri.clone()).build());
        let client = within(builder().revision(revision).connect(transport))
            .await
            .unwrap();
        echo_works(&client).await;
        let session = client.session_id().expect("a session was issued");
        // End the session behind the client's back.
        let ended = within(mcp_tests::conformance::http::send(
            http::Method::DELETE,
            &uri,
            &[
                ("mcp-session-id", session.as_str()),
                ("mcp-protocol-version", revision.as_str()),
            ],
            None,
        ))
        .await
        .unwrap();
        assert!(ended.status.is_success(), "DELETE gave {}", ended.status);
        echo_works(&client).await;
        assert_ne!(client.session_id(), Some(session), "{revision}");
        let initializes = log
            .methods(true)
            .iter()
            .filter(|m| *m == "initialize")
            .count();
        assert_eq!(initializes, 2, "{revision}: {:?}", log.methods(true));
        within(client.close()).await.unwrap();
        validate(&log, revision);
    }
}
