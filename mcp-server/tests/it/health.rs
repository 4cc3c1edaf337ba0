//! The liveness and readiness probes (`/healthz`, `/readyz`) and draining, on real sockets:
//! both probes answer outside the Host check; readiness reports a hub that fails, and reads
//! the hub once for a storm of probes; a draining endpoint keeps accepting (and reports not
//! ready) until its drain period ends, then stops accepting.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use mcp_hub::{Key, Record, StateStore, StoreError};
use mcp_server::Server;
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use raw_http::{RawRequest, Running, WAIT};
use serde_json::json;

use crate::raw_http;

fn server() -> Server {
    Server::builder("health", "1").build().unwrap()
}

async fn get(addr: std::net::SocketAddr, path: &str) -> raw_http::RawResponse {
    RawRequest::new("GET", path).send(addr).await
}

#[tokio::test]
async fn both_probes_answer_and_bypass_the_host_check() {
    // A listed public name: a probe by address would fail the Host check of /mcp.
    let running = Running::start(server(), HttpConfig::new().allowed_host("mcp.example.com")).await;
    let by_address = |path: &str| RawRequest::new("GET", path).header("Host", "10.0.0.7:8080");
    let live = by_address("/healthz").send(running.addr).await;
    assert_eq!(live.status, 200, "{live:?}");
    assert_eq!(live.body, b"ok\n");
    let ready = by_address("/readyz").send(running.addr).await;
    assert_eq!(ready.status, 200, "{ready:?}");
    assert_eq!(ready.json(), json!({"ready": true}));
    let head = RawRequest::new("HEAD", "/readyz").send(running.addr).await;
    assert_eq!(head.status, 200);
    let post = RawRequest::new("POST", "/healthz").send(running.addr).await;
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
    // The MCP path keeps its Host check.
    let mcp = by_address("/mcp").send(running.addr).await;
    assert_eq!(mcp.status, 403, "{mcp:?}");
    running.stop().await;
}

#[tokio::test]
async fn probe_paths_are_configurable_and_can_be_turned_off() {
    let config = HttpConfig::new()
        .liveness_path(Some("/live"))
        .readiness_path(None);
    let running = Running::start(server(), config).await;
    assert_eq!(get(running.addr, "/live").await.status, 200);
    assert_eq!(get(running.addr, "/healthz").await.status, 404);
    assert_eq!(get(running.addr, "/readyz").await.status, 404);
    running.stop().await;
}

/// A state store whose backend is down: every operation fails.
struct DownStore;

fn down<T>() -> BoxFuture<'static, Result<T, StoreError>> {
    Box::pin(async {
        Err(StoreError::Backend(mcp_hub::BackendError::connection(
            "test: the hub is down",
        )))
    })
}

impl StateStore for DownStore {
    fn create<'a>(
        &'a self,
        _: &'a Key,
        _: bytes::Bytes,
        _: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        down()
    }
    fn get<'a>(&'a self, _: &'a Key) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        down()
    }
    fn save<'a>(
        &'a self,
        _: &'a Key,
        _: bytes::Bytes,
        _: u64,
        _: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        down()
    }
    fn touch<'a>(&'a self, _: &'a Key, _: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        down()
    }
    fn delete<'a>(&'a self, _: &'a Key) -> BoxFuture<'a, Result<bool, StoreError>> {
        down()
    }
}

#[tokio::test]
async fn readiness_reports_a_hub_that_is_down() {
    let server = Server::builder("health", "1")
        .state_store(Arc::new(DownStore))
        .build()
        .unwrap();
    let running = Running::start(server, HttpConfig::new()).await;
    // Alive all the same: the process serves.
    assert_eq!(get(running.addr, "/healthz").await.status, 200);
    let ready = get(running.addr, "/readyz").await;
    assert_eq!(ready.status, 503, "{ready:?}");
    assert_eq!(
        ready.json(),
        json!({"ready": false, "reason": "the hub failed"})
    );
    assert!(
        !String::from_utf8_lossy(&ready.body).contains("test:"),
        "the backend's message is not sent"
    );
    running.stop().await;
}

#[tokio::test]
async fn a_draining_worker_reports_not_ready_before_it_stops_accepting() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = HttpConfig::new().drain_period(Duration::from_secs(3));
    let endpoint = HttpEndpoint::new(server(), config);
    let (signal, signalled) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(serve_with_shutdown(listener, endpoint.clone(), async {
        let _ = signalled.await;
    }));
    assert_eq!(get(addr, "/readyz").await.status, 200);
    assert!(!endpoint.is_draining());

    // SIGTERM in the demo: the shutdown signal resolves.
    signal.send(()).unwrap();
    let drained = tokio::time::timeout(WAIT, async {
        while !endpoint.is_draining() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(drained.is_ok(), "the signal begins draining");
    // A new connection is still accepted, and told: not ready.
    let ready = get(addr, "/readyz").await;
    assert_eq!(ready.status, 503, "{ready:?}");
    assert_eq!(ready.json(), json!({"ready": false, "reason": "draining"}));
    // MCP is served as before meanwhile, on a new connection too.
    let client = mcp_client::Client::builder()
        .timeout(WAIT)
        .connect_http(&format!("http://{addr}/mcp"))
        .await
        .unwrap();
    assert!(client.list_tools().await.unwrap().is_empty());
    drop(client);

    // Then the drain period ends and shutdown proceeds: the listener is gone.
    tokio::time::timeout(WAIT, serving)
        .await
        .expect("shutdown after the drain period")
        .unwrap()
        .unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn drain_on_the_endpoint_handle_stops_the_listener_after_the_period() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let endpoint = HttpEndpoint::new(
        server(),
        HttpConfig::new().drain_period(Duration::from_millis(200)),
    );
    let serving = tokio::spawn(serve_with_shutdown(
        listener,
        endpoint.clone(),
        std::future::pending(),
    ));
    assert_eq!(get(addr, "/readyz").await.status, 200);
    endpoint.drain();
    assert!(endpoint.is_draining());
    tokio::time::timeout(WAIT, serving)
        .await
        .expect("drain() shuts the listener down after the period")
        .unwrap()
        .unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

/// The memory hub's state store, counting reads.
struct CountingStore {
    inner: mcp_hub::MemoryHub,
    reads: std::sync::atomic::AtomicUsize,
}

impl StateStore for CountingStore {
    fn create<'a>(
        &'a self,
        key: &'a Key,
        value: bytes::Bytes,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.inner.create(key, value, ttl)
    }
    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.get(key)
    }
    fn save<'a>(
        &'a self,
        key: &'a Key,
        value: bytes::Bytes,
        version: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.inner.save(key, value, version, ttl)
    }
    fn touch<'a>(&'a self, key: &'a Key, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.touch(key, ttl)
    }
    fn delete<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.delete(key)
    }
}

#[tokio::test]
async fn a_storm_of_probes_reads_the_hub_once_per_interval() {
    let store = Arc::new(CountingStore {
        inner: mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default()),
        reads: Default::default(),
    });
    let server = Server::builder("health", "1")
        .state_store(store.clone())
        .build()
        .unwrap();
    let running = Running::start(server, HttpConfig::new()).await;
    let probes = (0..50).map(|_| get(running.addr, "/readyz"));
    for ready in futures::future::join_all(probes).await {
        assert_eq!(ready.status, 200, "{ready:?}");
    }
    // One read answers every probe of the same second (two if the storm straddled one).
    let reads = store.reads.load(std::sync::atomic::Ordering::SeqCst);
    assert!((1..=2).contains(&reads), "{reads} hub reads for 50 probes");
    running.stop().await;
}
