//! Rate limits (issue 50): every revision refuses a call past its budget with the documented
//! JSON-RPC error and runs no handler; HTTP answers 429 with `Retry-After`; the budget is
//! shared by every worker on a hub, within the documented lease bound, and one caller's
//! budget leaves another's alone.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_server::http::{HttpConfig, TrustedProxy};
use mcp_server::{RATE_LIMITED_CODE, RateLimit, Revision, Server, Tool};
use raw_http::{RawRequest, Running};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::backends::{Backend, Place};
use crate::{raw_http, support};

#[derive(Deserialize, JsonSchema)]
struct Empty {}

/// A server whose `count` tool counts its runs, under `limits`, with `lease`.
fn server(
    runs: &Arc<AtomicUsize>,
    limits: &[&str],
    lease: u32,
    hub: Option<Arc<dyn mcp_hub::Hub>>,
) -> Server {
    let counted = runs.clone();
    let mut builder = Server::builder("limited", "1.0")
        .tool(Tool::new("count", move |_: Empty| {
            let counted = counted.clone();
            async move { counted.fetch_add(1, Ordering::SeqCst).to_string() }
        }))
        .tool(Tool::new("other", |_: Empty| async { "other".to_owned() }))
        .rate_limit_lease(lease);
    for limit in limits {
        builder = builder.rate_limit(RateLimit::parse(limit).unwrap());
    }
    if let Some(hub) = hub {
        builder = builder.state_store(hub.clone()).event_log(hub);
    }
    builder.build().unwrap()
}

fn assert_rate_limited(error: &Value, limit: &str) {
    assert_eq!(error["code"], json!(RATE_LIMITED_CODE), "{error}");
    assert_eq!(error["data"]["limit"], json!(limit), "{error}");
    let wait = error["data"]["retryAfterMs"]
        .as_u64()
        .expect("retryAfterMs");
    assert!(wait > 0 && wait <= 3_600_000, "{error}");
}

#[tokio::test]
async fn every_revision_refuses_past_the_budget_and_runs_no_handler() {
    for revision in Revision::ALL {
        let runs = Arc::new(AtomicUsize::new(0));
        let server = server(&runs, &["tools/call=2/1m"], 1, None);
        let mut client = support::Client::new(&server, revision, json!({})).await;
        for _ in 0..2 {
            client
                .ok("tools/call", json!({"name": "count", "arguments": {}}))
                .await;
        }
        // The third is refused (the message is schema-checked by the client as a JSON-RPC
        // error of this revision), and the tool does not run.
        let error = client
            .err("tools/call", json!({"name": "count", "arguments": {}}))
            .await;
        assert_rate_limited(&error, "tools/call");
        assert_eq!(runs.load(Ordering::SeqCst), 2, "{revision}");
        // Another method has no rule: served.
        client.ok("tools/list", json!({})).await;
    }
}

#[tokio::test]
async fn a_tool_rule_applies_to_that_tool_only() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs, &["count=1/1h"], 1, None);
    let mut client = support::Client::new(&server, Revision::V2025_11_25, json!({})).await;
    client
        .ok("tools/call", json!({"name": "count", "arguments": {}}))
        .await;
    let error = client
        .err("tools/call", json!({"name": "count", "arguments": {}}))
        .await;
    assert_rate_limited(&error, "count");
    for _ in 0..3 {
        client
            .ok("tools/call", json!({"name": "other", "arguments": {}}))
            .await;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

const ACCEPT: &str = "application/json, text/event-stream";

/// A `tools/call count` POST of `revision` (2025-11-25 with `session`, or 2026-07-28), from
/// the client address `client` as a trusted proxy reports it.
fn call(revision: Revision, session: Option<&str>, client: &str) -> RawRequest<'static> {
    let mut params = json!({"name": "count", "arguments": {}});
    let mut request = RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT)
        .header("X-Forwarded-For", client);
    if revision != Revision::V2025_03_26 {
        request = request.header("MCP-Protocol-Version", revision.as_str());
    }
    if revision == Revision::V2026_07_28 {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": revision.as_str(),
            "io.modelcontextprotocol/clientCapabilities": {}});
        request = request
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "count");
    }
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    request.json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}))
}

async fn open_session(addr: std::net::SocketAddr, revision: Revision, client: &str) -> String {
    let init = RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT)
        .header("X-Forwarded-For", client)
        .json(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision.as_str(), "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        )
        .send(addr)
        .await;
    assert_eq!(init.status, 200);
    let session = init.header("mcp-session-id").unwrap().to_owned();
    let mut done = RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT)
        .header("Mcp-Session-Id", &session)
        .header("X-Forwarded-For", client);
    if revision != Revision::V2025_03_26 {
        done = done.header("MCP-Protocol-Version", revision.as_str());
    }
    let done = done
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send(addr)
        .await;
    assert_eq!(done.status, 202);
    session
}

fn config() -> HttpConfig {
    HttpConfig::new().trusted_proxies(["127.0.0.1".parse::<TrustedProxy>().unwrap()])
}

#[tokio::test]
async fn http_answers_429_with_retry_after_and_each_address_has_its_own_budget() {
    for revision in [
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ] {
        let runs = Arc::new(AtomicUsize::new(0));
        // `initialize` counts too on 2025-11-25: the budget leaves room for it.
        let running = Running::start(server(&runs, &["*=3/1m"], 1, None), config()).await;
        let stateless = revision == Revision::V2026_07_28;
        let session = if stateless {
            None
        } else {
            Some(open_session(running.addr, revision, "10.0.0.1").await)
        };
        let mut statuses = Vec::new();
        for _ in 0..4 {
            let response = call(revision, session.as_deref(), "10.0.0.1")
                .send(running.addr)
                .await;
            statuses.push(response.status);
            if response.status == 429 {
                let seconds: u64 = response.header("retry-after").unwrap().parse().unwrap();
                assert!((1..=60).contains(&seconds), "{seconds}");
                let body = response.json();
                support::check(revision, "JSONRPCMessage", &body);
                assert_rate_limited(&body["error"], "*");
                assert_eq!(body["id"], json!(9));
            }
        }
        // With sessions, `initialize` took one of the three.
        let admitted = if stateless { 3 } else { 2 };
        assert_eq!(
            statuses.iter().filter(|s| **s == 200).count(),
            admitted,
            "{revision}: {statuses:?}"
        );
        assert_eq!(statuses.last(), Some(&429), "{revision}: {statuses:?}");
        assert_eq!(runs.load(Ordering::SeqCst), admitted, "{revision}");
        // Another address behind the same proxy: a budget of its own.
        let session = if stateless {
            None
        } else {
            Some(open_session(running.addr, revision, "10.0.0.2").await)
        };
        let other = call(revision, session.as_deref(), "10.0.0.2")
            .send(running.addr)
            .await;
        assert_eq!(other.status, 200, "{revision}");
    }
}

#[tokio::test]
async fn http_sse_refuses_the_post_with_429() {
    let runs = Arc::new(AtomicUsize::new(0));
    let running = Running::start(server(&runs, &["tools/call=1/1m"], 1, None), config()).await;
    let mut stream = RawRequest::new("GET", "/sse")
        .header("Accept", "text/event-stream")
        .header("X-Forwarded-For", "10.0.0.3")
        .open(running.addr)
        .await;
    let endpoint = stream.event().await.expect("the endpoint event");
    let path = endpoint.data.trim().to_owned();
    let post = |body: Value| {
        RawRequest::new("POST", &path)
            .header("X-Forwarded-For", "10.0.0.3")
            .json(&body)
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .send(running.addr)
    .await;
    assert_eq!(init.status, 202);
    stream.event().await.expect("the initialize result");
    let done = post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send(running.addr)
        .await;
    assert_eq!(done.status, 202);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "count", "arguments": {}}});
    assert_eq!(post(body.clone()).send(running.addr).await.status, 202);
    let refused = post(body).send(running.addr).await;
    assert_eq!(refused.status, 429);
    assert!(refused.header("retry-after").is_some());
    assert_rate_limited(&refused.json()["error"], "tools/call");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// Who sends in [`shared_budget_row`]: a principal by its token (every worker verifies it),
/// or an address a trusted proxy reports.
#[derive(Clone, Copy)]
enum Sender {
    Principal(&'static str),
    Address(&'static str),
}

/// A `tools/call count` of 2026-07-28 from `sender`.
fn call_as(sender: Sender) -> RawRequest<'static> {
    match sender {
        Sender::Principal(token) => call(Revision::V2026_07_28, None, "10.9.9.9")
            .header("Authorization", &format!("Bearer {token}")),
        Sender::Address(address) => call(Revision::V2026_07_28, None, address),
    }
}

const ISSUER: &str = "https://auth.example.test";

/// A resource server for `resource` that knows the tokens `alice` and `bob` (each the
/// principal of that name), valid for every resource in `audience`.
fn auth(resource: &str, audience: &[String]) -> mcp_server::auth::ResourceServer {
    use mcp_auth::{Audience, Claims, ScopeSet};
    let exp = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
        + 3600;
    let claims = |sub: &str| Claims {
        iss: Some(ISSUER.into()),
        sub: Some(sub.into()),
        aud: Some(Audience::Many(audience.to_vec())),
        exp: Some(exp),
        scope: ScopeSet::parse("mcp:read"),
        ..Claims::default()
    };
    mcp_server::auth::ResourceServer::builder(resource, ISSUER)
        .verifier(
            mcp_server::auth::StaticTokens::new()
                .token("alice", claims("alice"))
                .token("bob", claims("bob")),
        )
        .build()
        .unwrap()
}

/// Three workers on one place; one caller (a principal through all three, or an address) sends
/// as fast as it can through all three for `RUN`; the admitted calls stay within the budget
/// over the run plus three leases, and another caller is served meanwhile.
async fn shared_budget_row(hubs: [Arc<dyn mcp_hub::Hub>; 3], principals: bool) {
    const RUN: Duration = Duration::from_secs(10);
    const COUNT: u64 = 100;
    const PERIOD: Duration = Duration::from_secs(5);
    const LEASE: u32 = 5;
    let runs = Arc::new(AtomicUsize::new(0));
    let spec = format!("count={COUNT}/{}s", PERIOD.as_secs());
    let mut listeners = Vec::new();
    for _ in 0..3 {
        listeners.push(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let resources: Vec<String> = listeners
        .iter()
        .map(|l| format!("http://{}/mcp", l.local_addr().unwrap()))
        .collect();
    let mut workers = Vec::new();
    for ((hub, listener), resource) in hubs.into_iter().zip(listeners).zip(&resources) {
        let mut config = config();
        if principals {
            config = config.auth(auth(resource, &resources));
        }
        let server = server(&runs, &[spec.as_str()], LEASE, Some(hub));
        workers.push(Running::start_listener(listener, server, config).await);
    }
    let (first, second) = if principals {
        (Sender::Principal("alice"), Sender::Principal("bob"))
    } else {
        (Sender::Address("10.1.0.1"), Sender::Address("10.1.0.2"))
    };
    let addrs: Vec<_> = workers.iter().map(|w| w.addr).collect();
    let started = Instant::now();
    let mut admitted = 0u64;
    let mut refused = 0u64;
    let mut i = 0;
    while started.elapsed() < RUN {
        let status = call_as(first).send(addrs[i % 3]).await.status;
        i += 1;
        match status {
            200 => admitted += 1,
            429 => refused += 1,
            other => panic!("unexpected status {other}"),
        }
    }
    let elapsed = started.elapsed();
    // The bucket starts full and refills COUNT per PERIOD; each worker may hold a lease and a
    // half (the next one is taken when half of the current one is left).
    let refilled = (elapsed.as_secs_f64() / PERIOD.as_secs_f64() * COUNT as f64).ceil() as u64;
    let held = 3 * (u64::from(LEASE) + u64::from(LEASE) / 2);
    let bound = COUNT + refilled + held;
    assert!(
        admitted <= bound,
        "{admitted} admitted in {elapsed:?}, bound {bound} ({refused} refused)"
    );
    assert!(
        refused > 0,
        "the budget was never reached ({admitted} admitted)"
    );
    // At least the budget the run allows, minus the leases left unspent.
    assert!(
        admitted + held >= COUNT + refilled.saturating_sub(COUNT),
        "{admitted} admitted in {elapsed:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst) as u64, admitted);
    // Another caller is unaffected, on every worker.
    for addr in &addrs {
        assert_eq!(call_as(second).send(*addr).await.status, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_share_one_budget_on_the_memory_hub() {
    let hub: Arc<dyn mcp_hub::Hub> =
        Arc::new(mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default()));
    shared_budget_row([hub.clone(), hub.clone(), hub.clone()], false).await;
    shared_budget_row([hub.clone(), hub.clone(), hub], true).await;
}

async fn place_row(place: &Place) {
    let hubs = [place.hub().await, place.hub().await, place.hub().await];
    shared_budget_row(hubs, true).await;
}

macro_rules! backend_test {
    ($name:ident, $backend:literal) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let backend = Backend::all()
                .find(|b| format!("{b:?}") == $backend)
                .expect("the backend exists");
            if let Some(place) = backend.place().await {
                place_row(&place).await;
            }
        }
    };
}

backend_test!(three_workers_share_one_budget_on_redis, "redis");
backend_test!(three_workers_share_one_budget_on_postgres, "postgres");
backend_test!(three_workers_share_one_budget_on_sqlite, "sqlite");

#[tokio::test]
async fn limits_are_written_name_count_period() {
    for good in [
        "tools/call=600/1m",
        "deploy=5/1m",
        "initialize=30/1m",
        "*=10/10s",
    ] {
        RateLimit::parse(good).unwrap();
    }
    let err = RateLimit::parse("tools/call=600").unwrap_err();
    assert!(err.to_string().contains("NAME=COUNT/PERIOD"), "{err}");
}

/// A state store that fails every operation while `down` is set, else the memory hub's.
struct Flaky {
    inner: mcp_hub::MemoryHub,
    down: std::sync::atomic::AtomicBool,
}

impl Flaky {
    fn fail<T>(&self) -> Option<Result<T, mcp_hub::StoreError>> {
        self.down.load(Ordering::SeqCst).then(|| {
            Err(mcp_hub::StoreError::Backend(
                mcp_hub::BackendError::connection("the store is stopped"),
            ))
        })
    }
}

impl mcp_hub::StateStore for Flaky {
    fn create<'a>(
        &'a self,
        key: &'a mcp_hub::Key,
        value: bytes::Bytes,
        ttl: Duration,
    ) -> futures::future::BoxFuture<'a, Result<u64, mcp_hub::StoreError>> {
        Box::pin(async move {
            match self.fail() {
                Some(failed) => failed,
                None => self.inner.create(key, value, ttl).await,
            }
        })
    }

    fn get<'a>(
        &'a self,
        key: &'a mcp_hub::Key,
    ) -> futures::future::BoxFuture<'a, Result<Option<mcp_hub::Record>, mcp_hub::StoreError>> {
        Box::pin(async move {
            match self.fail() {
                Some(failed) => failed,
                None => self.inner.get(key).await,
            }
        })
    }

    fn save<'a>(
        &'a self,
        key: &'a mcp_hub::Key,
        value: bytes::Bytes,
        expected_version: u64,
        ttl: Duration,
    ) -> futures::future::BoxFuture<'a, Result<u64, mcp_hub::StoreError>> {
        Box::pin(async move {
            match self.fail() {
                Some(failed) => failed,
                None => self.inner.save(key, value, expected_version, ttl).await,
            }
        })
    }

    fn touch<'a>(
        &'a self,
        key: &'a mcp_hub::Key,
        ttl: Duration,
    ) -> futures::future::BoxFuture<'a, Result<(), mcp_hub::StoreError>> {
        Box::pin(async move {
            match self.fail() {
                Some(failed) => failed,
                None => self.inner.touch(key, ttl).await,
            }
        })
    }

    fn delete<'a>(
        &'a self,
        key: &'a mcp_hub::Key,
    ) -> futures::future::BoxFuture<'a, Result<bool, mcp_hub::StoreError>> {
        Box::pin(async move {
            match self.fail() {
                Some(failed) => failed,
                None => self.inner.delete(key).await,
            }
        })
    }
}

#[tokio::test]
async fn with_the_store_down_the_limits_fail_open_by_default_or_closed_when_asked() {
    use mcp_server::OnHubFailure;
    for mode in [OnHubFailure::Open, OnHubFailure::Closed] {
        let store = Arc::new(Flaky {
            inner: mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default()),
            down: std::sync::atomic::AtomicBool::new(false),
        });
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        let server = Server::builder("limited", "1.0")
            .tool(Tool::new("count", move |_: Empty| {
                let counted = counted.clone();
                async move { counted.fetch_add(1, Ordering::SeqCst).to_string() }
            }))
            .rate_limit(RateLimit::parse("tools/call=2/1m").unwrap())
            .rate_limit_lease(1)
            .rate_limit_on_hub_failure(mode)
            .state_store(store.clone())
            .build()
            .unwrap();
        // 2026-07-28: nothing else of the request touches the store.
        let mut client = support::Client::new(&server, Revision::V2026_07_28, json!({})).await;
        let count = json!({"name": "count", "arguments": {}});
        store.down.store(true, Ordering::SeqCst);
        match mode {
            OnHubFailure::Open => {
                // The worker's own budget, with the same rule: two, then refused.
                client.ok("tools/call", count.clone()).await;
                client.ok("tools/call", count.clone()).await;
                let error = client.err("tools/call", count.clone()).await;
                assert_rate_limited(&error, "tools/call");
                assert_eq!(runs.load(Ordering::SeqCst), 2);
            }
            _ => {
                let error = client.err("tools/call", count.clone()).await;
                assert_ne!(error["code"], json!(RATE_LIMITED_CODE), "{error}");
                assert!(
                    error["message"]
                        .as_str()
                        .unwrap()
                        .contains("cannot be checked"),
                    "{error}"
                );
                assert_eq!(runs.load(Ordering::SeqCst), 0);
            }
        }
        // The store is back: the shared budget (untouched while it was down) serves again.
        store.down.store(false, Ordering::SeqCst);
        client.ok("tools/call", count).await;
    }
}

#[cfg(feature = "metrics")]
#[tokio::test]
async fn refusals_are_counted_by_limit() {
    let metrics = mcp_server::Metrics::new();
    let server = Server::builder("limited", "1.0")
        .tool(Tool::new("other", |_: Empty| async { "other".to_owned() }))
        .rate_limit(RateLimit::parse("tools/call=1/1m").unwrap())
        .rate_limit(RateLimit::parse("deploy=1/1m").unwrap())
        .rate_limit_lease(1)
        .metrics(&metrics)
        .build()
        .unwrap();
    // Every configured limit is exported from the start.
    let text = metrics.render();
    assert!(
        text.contains(r#"mcp_rate_limited_total{limit="tools/call"} 0"#),
        "{text}"
    );
    assert!(
        text.contains(r#"mcp_rate_limited_total{limit="deploy"} 0"#),
        "{text}"
    );
    let mut client = support::Client::new(&server, Revision::V2026_07_28, json!({})).await;
    let call = json!({"name": "other", "arguments": {}});
    client.ok("tools/call", call.clone()).await;
    client.err("tools/call", call.clone()).await;
    client.err("tools/call", call).await;
    let text = metrics.render();
    assert!(
        text.contains(r#"mcp_rate_limited_total{limit="tools/call"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(r#"mcp_refusals_total{reason="rate_limited"} 2"#),
        "{text}"
    );
}

/// Our client against our server: it waits out a refusal and succeeds when the budget has
/// room again, on every revision and both HTTP transports; with retries off it returns
/// `RateLimited` with the server's wait.
#[tokio::test]
async fn our_client_waits_for_the_budget_or_reports_rate_limited() {
    use mcp_client::{Client, ErrorKind, RateLimitRetry};
    let runs = Arc::new(AtomicUsize::new(0));
    let running = Running::start(server(&runs, &["tools/list=1/300ms"], 1, None), config()).await;
    for revision in Revision::ALL {
        let http_sse = revision == Revision::V2024_11_05;
        let retried = Arc::new(AtomicUsize::new(0));
        let counted = retried.clone();
        let builder = Client::builder()
            .revision(revision)
            .timeout(Duration::from_secs(10))
            .rate_limit_retry(RateLimitRetry::new().on_retry(move |error, wait| {
                assert_eq!(error.kind(), ErrorKind::RateLimited);
                assert!(wait <= Duration::from_secs(1), "{wait:?}");
                counted.fetch_add(1, Ordering::SeqCst);
            }));
        let client = if http_sse {
            builder.connect_sse(&running.url("/sse")).await.unwrap()
        } else {
            builder.connect_http(&running.url("/mcp")).await.unwrap()
        };
        // The first list spends the budget (or finds it spent by the revision before: then
        // it waits too); the second waits for the next token.
        client.list_tools().await.unwrap();
        client.list_tools().await.unwrap();
        assert!(
            retried.load(Ordering::SeqCst) >= 1,
            "{revision}: never waited"
        );
        client.close().await.unwrap();

        let builder = Client::builder()
            .revision(revision)
            .timeout(Duration::from_secs(10))
            .rate_limit_retry(RateLimitRetry::off());
        let client = if http_sse {
            builder.connect_sse(&running.url("/sse")).await.unwrap()
        } else {
            builder.connect_http(&running.url("/mcp")).await.unwrap()
        };
        let mut refused = None;
        for _ in 0..3 {
            if let Err(error) = client.list_tools().await {
                refused = Some(error);
                break;
            }
        }
        let error = refused.expect("a list within the budget's period is refused");
        assert_eq!(error.kind(), ErrorKind::RateLimited, "{revision}: {error}");
        assert_eq!(error.rate_limit(), Some("tools/list"), "{revision}");
        let wait = error.retry_after().expect("the server's wait");
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        client.close().await.unwrap();
    }
}

/// Over stdio the refusal is the JSON-RPC error alone, and the next call past the wait is
/// served.
#[tokio::test]
async fn stdio_refuses_with_the_json_rpc_error() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    let runs = Arc::new(AtomicUsize::new(0));
    let server = server(&runs, &["tools/call=1/1h"], 1, None);
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_side);
    let serving = tokio::spawn(mcp_server::serve_stdio_with(
        server,
        server_read,
        server_write,
        mcp_server::StdioConfig::default(),
    ));
    let (client_read, mut client_write) = tokio::io::split(client_side);
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    let mut send = async |message: Value| {
        let mut line = message.to_string();
        line.push('\n');
        client_write.write_all(line.as_bytes()).await.unwrap();
    };
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    for id in [1, 2] {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "count", "arguments": {}, "_meta": meta}}))
        .await;
        let line = tokio::time::timeout(raw_http::WAIT, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let response: Value = serde_json::from_str(&line).unwrap();
        support::check(Revision::V2026_07_28, "JSONRPCMessage", &response);
        assert_eq!(response["id"], json!(id));
        if id == 2 {
            assert_rate_limited(&response["error"], "tools/call");
        } else {
            assert!(response.get("result").is_some(), "{response}");
        }
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    drop(lines);
    serving.abort();
}

/// A `redis-server` of the test's own on a free port (data in memory only); killed when
/// dropped. `None` after a notice when `redis-server` cannot run outside CI.
struct OwnRedis {
    child: std::process::Child,
    port: u16,
}

impl OwnRedis {
    fn start() -> Option<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(err) if std::env::var("CI").as_deref() != Ok("true") => {
                eprintln!("notice: cannot run redis-server ({err}); skipping");
                return None;
            }
            Err(err) => panic!("cannot run redis-server with CI=true: {err}"),
        };
        let redis = Self { child, port };
        // Answers PING before the test goes on (bounded).
        let started = Instant::now();
        loop {
            use std::io::{Read as _, Write as _};
            let answered = std::net::TcpStream::connect(("127.0.0.1", port)).and_then(|mut s| {
                s.set_read_timeout(Some(Duration::from_millis(200)))?;
                s.write_all(b"PING\r\n")?;
                let mut buf = [0u8; 7];
                s.read_exact(&mut buf)?;
                Ok(&buf == b"+PONG\r\n")
            });
            if answered.unwrap_or(false) {
                return Some(redis);
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not answer on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops the server for good (SIGKILL), and waits until it is gone.
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_stopped_the_limits_fail_open_or_closed_as_configured() {
    use mcp_server::OnHubFailure;
    for mode in [OnHubFailure::Open, OnHubFailure::Closed] {
        let Some(mut redis) = OwnRedis::start() else {
            return;
        };
        let hub = mcp_hub::ConnectOptions::new()
            .prefix(format!("mcp-rate-test:{}", std::process::id()))
            .connect(&redis.url())
            .await
            .unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        // The store is Redis; the event log stays in memory, so only the limits need Redis.
        let server = Server::builder("limited", "1.0")
            .tool(Tool::new("count", move |_: Empty| {
                let counted = counted.clone();
                async move { counted.fetch_add(1, Ordering::SeqCst).to_string() }
            }))
            .rate_limit(RateLimit::parse("tools/call=2/1m").unwrap())
            .rate_limit_lease(1)
            .rate_limit_on_hub_failure(mode)
            .state_store(hub)
            .build()
            .unwrap();
        let mut client = support::Client::new(&server, Revision::V2026_07_28, json!({})).await;
        let count = json!({"name": "count", "arguments": {}});
        // Served from Redis while it runs: one token of two spent there.
        client.ok("tools/call", count.clone()).await;
        redis.stop();
        match mode {
            OnHubFailure::Open => {
                // This worker's own budget, with the same rule (two), then refused.
                client.ok("tools/call", count.clone()).await;
                client.ok("tools/call", count.clone()).await;
                let error = client.err("tools/call", count.clone()).await;
                assert_rate_limited(&error, "tools/call");
                assert_eq!(runs.load(Ordering::SeqCst), 3);
            }
            _ => {
                let error = client.err("tools/call", count.clone()).await;
                assert_ne!(error["code"], json!(RATE_LIMITED_CODE), "{error}");
                assert!(
                    error["message"]
                        .as_str()
                        .unwrap()
                        .contains("cannot be checked"),
                    "{error}"
                );
                assert_eq!(runs.load(Ordering::SeqCst), 1);
            }
        }
    }
}
