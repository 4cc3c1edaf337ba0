//! The Prometheus endpoint (feature `metrics`): after calls on two revisions its text parses,
//! counts what was served by revision, method and outcome, keeps made-up methods out of the
//! label space, and its histograms agree with the counters (that `mcp-demo` serves it on `--metrics` is tested in
//! the everymcp-demo crate).
#![cfg(feature = "metrics")]

use crate::raw_http;

include!("../../src/bin/demo/registry.rs");

use std::collections::BTreeMap;

use mcp_client::{Client, Revision};
use mcp_server::Metrics;
use mcp_server::http::{HttpConfig, serve_metrics};
use raw_http::{Running, WAIT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `GET /metrics` over a plain socket: the status line, the content type and the body.
async fn scrape(addr: std::net::SocketAddr) -> (String, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut raw))
        .await
        .unwrap()
        .unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_owned();
    let content_type = head
        .lines()
        .find_map(|l| l.strip_prefix("content-type: "))
        .unwrap_or_default()
        .to_owned();
    (status, content_type, body.to_owned())
}

/// The samples of an exposition: `name{labels}` (labels sorted as written) to value. Fails
/// on a line that is neither a comment nor a sample.
fn samples(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    assert!(
        text.trim_end().ends_with("# EOF"),
        "OpenMetrics ends with # EOF"
    );
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
        out.insert(series.to_owned(), value);
    }
    out
}

fn value(samples: &BTreeMap<String, f64>, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|(series, _)| {
            series.split('{').next() == Some(name)
                && labels
                    .iter()
                    .all(|(k, v)| series.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|(_, v)| *v)
        .sum()
}

#[tokio::test]
async fn the_endpoint_counts_calls_by_revision_method_and_outcome() {
    let metrics = Metrics::new();
    let server = demo_builder("metrics-test")
        .metrics(&metrics)
        .build()
        .unwrap();
    let running = Running::start(server.clone(), HttpConfig::new()).await;
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let client = Client::builder()
            .timeout(WAIT)
            .revision(revision)
            .connect_http(&running.url("/mcp"))
            .await
            .unwrap();
        for _ in 0..3 {
            client
                .call_tool("add", json!({"a": 1, "b": 2}))
                .await
                .unwrap();
        }
        let failed = client.call_tool("boom", json!({})).await.unwrap();
        assert_eq!(failed["isError"], true);
        assert!(client.call_tool("no-such-tool", json!({})).await.is_err());
    }
    // Made-up methods are counted as `other`, whatever their names.
    let ctx = mcp_server::Context::connection();
    for method in ["x/one", "x/two", "x/three"] {
        server
            .handle_all(
                json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {
                    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientCapabilities": {},
                              "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}}),
                &ctx,
            )
            .await;
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(serve_metrics(listener, metrics.clone(), async {
        let _ = stopped.await;
    }));
    let (status, content_type, body) = scrape(addr).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    let s = samples(&body);
    for revision in ["2025-11-25", "2026-07-28"] {
        let calls = |outcome| {
            value(
                &s,
                "mcp_requests_total",
                &[
                    ("revision", revision),
                    ("method", "tools/call"),
                    ("outcome", outcome),
                ],
            )
        };
        assert_eq!(calls("ok"), 3.0, "{revision}\n{body}");
        assert_eq!(calls("tool_error"), 1.0, "{revision}\n{body}");
        assert_eq!(calls("error"), 1.0, "{revision}\n{body}");
    }
    assert_eq!(
        value(&s, "mcp_requests_total", &[("method", "other")]),
        3.0,
        "{body}"
    );
    assert!(!body.contains("x/one"), "{body}");
    // One session on 2025-11-25 (2026-07-28 has none).
    assert_eq!(value(&s, "mcp_sessions_created_total", &[]), 1.0, "{body}");
    // The histogram of tools/call counts every call, and its buckets only grow.
    let total = value(&s, "mcp_requests_total", &[("method", "tools/call")]);
    let count = value(
        &s,
        "mcp_request_duration_seconds_count",
        &[("method", "tools/call")],
    );
    assert_eq!(count, total, "{body}");
    // Tool names are labels when the registry has the tool; made-up ones are `other`.
    let of_tool = |tool| {
        value(
            &s,
            "mcp_requests_total",
            &[("method", "tools/call"), ("tool", tool)],
        )
    };
    assert_eq!(of_tool("add"), 6.0, "{body}");
    assert_eq!(of_tool("boom"), 2.0, "{body}");
    assert_eq!(of_tool("other"), 2.0, "{body}");
    assert!(!body.contains("no-such-tool"), "{body}");
    // One histogram per method and tool (the `add` one here).
    let total = of_tool("add");
    let mut buckets: Vec<(f64, f64)> = s
        .iter()
        .filter(|(k, _)| {
            k.starts_with("mcp_request_duration_seconds_bucket{")
                && k.contains("tools/call")
                && k.contains("tool=\"add\"")
        })
        .map(|(k, v)| {
            let le = k.split("le=\"").nth(1).unwrap().split('"').next().unwrap();
            (le.parse::<f64>().unwrap_or(f64::INFINITY), *v)
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{buckets:?}");
    assert_eq!(buckets.last().unwrap(), &(f64::INFINITY, total));
    // Buckets reach minutes: a call that waited for a person still lands in one.
    assert!(
        buckets.iter().any(|(le, _)| le.is_finite() && *le >= 600.0),
        "{buckets:?}"
    );
    // Elsewhere: 404.
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 404"), "{raw}");
    stop.send(()).unwrap();
    served.await.unwrap().unwrap();
}

/// A state store whose `delete` always fails, as an unreachable backend would.
struct FailingDelete(std::sync::Arc<mcp_hub::MemoryHub>);

impl mcp_hub::StateStore for FailingDelete {
    fn create<'a>(
        &'a self,
        key: &'a mcp_hub::Key,
        value: bytes::Bytes,
        ttl: std::time::Duration,
    ) -> futures::future::BoxFuture<'a, Result<u64, mcp_hub::StoreError>> {
        self.0.create(key, value, ttl)
    }
    fn get<'a>(
        &'a self,
        key: &'a mcp_hub::Key,
    ) -> futures::future::BoxFuture<'a, Result<Option<mcp_hub::Record>, mcp_hub::StoreError>> {
        self.0.get(key)
    }
    fn save<'a>(
        &'a self,
        key: &'a mcp_hub::Key,
        value: bytes::Bytes,
        expected_version: u64,
        ttl: std::time::Duration,
    ) -> futures::future::BoxFuture<'a, Result<u64, mcp_hub::StoreError>> {
        self.0.save(key, value, expected_version, ttl)
    }
    fn touch<'a>(
        &'a self,
        key: &'a mcp_hub::Key,
        ttl: std::time::Duration,
    ) -> futures::future::BoxFuture<'a, Result<(), mcp_hub::StoreError>> {
        self.0.touch(key, ttl)
    }
    fn delete<'a>(
        &'a self,
        _: &'a mcp_hub::Key,
    ) -> futures::future::BoxFuture<'a, Result<bool, mcp_hub::StoreError>> {
        Box::pin(async {
            Err(mcp_hub::StoreError::Backend(
                mcp_hub::BackendError::connection("test: delete fails"),
            ))
        })
    }
}

/// Open event streams are counted by kind while they are open, and every hub operation and
/// backend failure is counted by operation.
#[tokio::test]
async fn streams_and_hub_operations_are_counted() {
    let metrics = Metrics::new();
    let hub = std::sync::Arc::new(mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default()));
    let server = demo_builder("metrics-streams")
        .state_store(std::sync::Arc::new(FailingDelete(hub.clone())))
        .event_log(hub)
        .metrics(&metrics)
        .build()
        .unwrap();
    let running = Running::start(server, HttpConfig::new()).await;
    let client = Client::builder()
        .timeout(WAIT)
        .revision(Revision::V2025_11_25)
        .connect_http(&running.url("/mcp"))
        .await
        .unwrap();
    let listener = client
        .listen(mcp_client::Subscriptions::new().tools_changed())
        .await
        .unwrap();
    // Answered with an event stream: counted from before its first byte.
    let s = samples(&metrics.render());
    assert_eq!(value(&s, "mcp_open_streams", &[("kind", "get")]), 1.0);
    client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    let s = samples(&metrics.render());
    assert!(value(&s, "mcp_hub_operations_total", &[("operation", "create")]) >= 1.0);
    assert!(
        value(&s, "mcp_hub_operations_total", &[("operation", "get")]) >= 1.0,
        "{s:?}"
    );
    assert_eq!(
        value(&s, "mcp_hub_errors_total", &[("operation", "create")]),
        0.0
    );
    drop(listener);
    // Ending the session deletes its record: the store fails, and the failure is counted.
    let _ = client.close().await;
    let s = samples(&metrics.render());
    assert!(value(&s, "mcp_hub_errors_total", &[("operation", "delete")]) >= 1.0);
    assert_eq!(
        value(&s, "mcp_hub_errors_total", &[("operation", "create")]),
        0.0
    );
}
