//! Two gateway workers in front of one upstream serve one downstream client alternately: every
//! request of the client goes to the other worker. With a shared hub, a question asked on one
//! worker (its request state kept in the hub) is finished on the other; with a hub each, it
//! is not. On a revision with sessions (2025-11-25) the session made on one worker is served
//! by the other, and the answer to a question pushed on one worker's stream is posted to the
//! other. Each worker has its own upstream connection. The Redis case is the issue's
//! acceptance test (two workers, each with a connection of its own, as two processes have).

mod support;

use support::serve;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, Uri};
use mcp_client::transport::{
    BoxFuture, Delivery, MessageStream, Outbound, StreamableHttp, Transport, TransportError,
    TransportInfo,
};
use mcp_client::{Answer, Asks, Client, Revision};
use mcp_gateway::{Gateway, QuestionRelay};
use mcp_hub::{ConnectOptions, Hub, HubConfig, MemoryHub};
use mcp_server::http::{HttpConfig, HttpEndpoint};
use mcp_server::{Exchange, Question, Server, Tool, ToolError};
use serde_json::json;

/// A bound on each step (not a synchronisation).
const STEP: Duration = Duration::from_secs(20);

/// Sends each message to the next of two Streamable HTTP endpoints in turn. The first
/// message (`initialize`, where the revision has it) goes to the first worker; the second
/// worker's endpoint is made at its first message with the session the first one got, as a
/// load balancer without affinity passes the client's `Mcp-Session-Id` on.
#[derive(Debug)]
struct Alternate {
    first: StreamableHttp,
    second_url: Uri,
    second: OnceLock<StreamableHttp>,
    next: AtomicUsize,
    sent: [AtomicUsize; 2],
}

impl Alternate {
    fn new(urls: &[String; 2]) -> Self {
        let uri = |url: &str| url.parse::<Uri>().expect("a URI");
        Self {
            first: StreamableHttp::builder(uri(&urls[0])).build(),
            second_url: uri(&urls[1]),
            second: OnceLock::new(),
            next: AtomicUsize::new(0),
            sent: [AtomicUsize::new(0), AtomicUsize::new(0)],
        }
    }

    fn second(&self) -> &StreamableHttp {
        self.second.get_or_init(|| {
            let mut builder = StreamableHttp::builder(self.second_url.clone());
            if let Some(session) = self.first.session_id() {
                builder = builder.header(
                    HeaderName::from_static("mcp-session-id"),
                    HeaderValue::from_str(&session).expect("a header value"),
                );
            }
            builder.build()
        })
    }
}

impl Transport for Alternate {
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>> {
        let worker = self.next.fetch_add(1, Ordering::Relaxed) % 2;
        self.sent[worker].fetch_add(1, Ordering::Relaxed);
        match worker {
            0 => self.first.send(message),
            _ => self.second().send(message),
        }
    }

    fn incoming(&self) -> Option<MessageStream> {
        None
    }

    fn open_stream(
        &self,
        headers: HeaderMap,
        last_event_id: Option<String>,
    ) -> BoxFuture<'_, Result<MessageStream, TransportError>> {
        self.first.open_stream(headers, last_event_id)
    }

    fn info(&self) -> TransportInfo {
        self.first.info()
    }

    fn session_id(&self) -> Option<String> {
        self.first.session_id()
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        self.first.close()
    }
}

async fn confirm(ex: Exchange) -> Result<String, ToolError> {
    let answer = ex.ask("sure", Question::elicit("Proceed?")).await?;
    Ok(if answer.accepted() {
        "confirmed".into()
    } else {
        "declined".into()
    })
}

/// A gateway worker in front of `upstream` with `hub`: the gateway (it follows the upstream
/// while kept) and its `/mcp` URL.
async fn worker(upstream: &str, hub: Arc<dyn Hub>) -> (Gateway, String) {
    let relay = QuestionRelay::new();
    let client = relay
        .install(Client::builder().timeout(STEP))
        .connect_http(upstream)
        .await
        .expect("the worker reaches the upstream");
    let gateway = Gateway::builder()
        .question_relay(relay)
        .hub(hub)
        .start(client)
        .await
        .expect("the worker starts");
    let endpoint = HttpEndpoint::new(gateway.server().clone(), HttpConfig::new());
    let base = serve(endpoint).await;
    (gateway, format!("{base}/mcp"))
}

/// Where the two workers keep their state.
#[derive(Clone, Copy, Debug)]
enum Hubs {
    /// One in-memory hub, shared.
    SharedMemory,
    /// An in-memory hub each.
    SeparateMemory,
    /// Redis (`MCP_REDIS_URL`, default `redis://127.0.0.1:6379`), a connection each, under a
    /// key prefix of this test's own.
    Redis,
}

fn redis_url() -> String {
    std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A Redis hub under `prefix`, or why not.
async fn redis_hub(prefix: &str) -> Result<Arc<dyn Hub>, String> {
    let options = ConnectOptions::new().prefix(prefix);
    let url = redis_url();
    match tokio::time::timeout(Duration::from_secs(10), options.connect(&url)).await {
        Ok(Ok(hub)) => Ok(hub),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no answer within 10 s".into()),
    }
}

/// The two workers' hubs; `None` when Redis is wanted and unreachable outside CI (with
/// `CI=true` that is a failure, never a silent skip).
async fn hubs(kind: Hubs) -> Option<[Arc<dyn Hub>; 2]> {
    let memory = || -> Arc<dyn Hub> { Arc::new(MemoryHub::new(HubConfig::default())) };
    match kind {
        Hubs::SharedMemory => {
            let hub = memory();
            Some([hub.clone(), hub])
        }
        Hubs::SeparateMemory => Some([memory(), memory()]),
        Hubs::Redis => {
            let prefix = format!("gateway-workers-{}", std::process::id());
            match (redis_hub(&prefix).await, redis_hub(&prefix).await) {
                (Ok(first), Ok(second)) => Some([first, second]),
                (Err(why), _) | (_, Err(why)) => {
                    assert!(
                        std::env::var("CI").as_deref() != Ok("true"),
                        "Redis at {} is unreachable with CI=true: {why}",
                        redis_url()
                    );
                    eprintln!(
                        "notice: Redis at {} is unreachable ({why}); skipped",
                        redis_url()
                    );
                    None
                }
            }
        }
    }
}

/// Calls `confirm` through two workers, alternately, from a client on `revision`; the result
/// text or the error.
async fn confirm_through(
    hubs: [Arc<dyn Hub>; 2],
    revision: Revision,
) -> (Result<String, String>, [usize; 2]) {
    let upstream = Server::builder("upstream", "1.0")
        .tool(Tool::new("confirm", confirm))
        .build()
        .expect("the upstream builds");
    let upstream = format!(
        "{}/mcp",
        serve(HttpEndpoint::new(upstream, HttpConfig::new())).await
    );
    let [first_hub, second_hub] = hubs;
    let (_first, first_url) = worker(&upstream, first_hub).await;
    let (_second, second_url) = worker(&upstream, second_hub).await;
    let transport = Arc::new(Alternate::new(&[first_url, second_url]));
    let client = Client::builder()
        .revision(revision)
        .timeout(STEP)
        .on_ask(Asks::none().elicitation(), |_question| async {
            Answer::accept(json!({}))
        })
        .connect(SharedTransport(transport.clone()))
        .await
        .expect("the client reaches the workers");
    let called = tokio::time::timeout(STEP, client.call_tool("confirm", json!({})))
        .await
        .expect("an answer within the bound");
    let text = called
        .map(|result| {
            result["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .map_err(|e| e.to_string());
    let sent = [
        transport.sent[0].load(Ordering::Relaxed),
        transport.sent[1].load(Ordering::Relaxed),
    ];
    (text, sent)
}

/// The alternating transport behind an `Arc`, so the test can read its counts.
#[derive(Debug)]
struct SharedTransport(Arc<Alternate>);

impl Transport for SharedTransport {
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>> {
        self.0.send(message)
    }

    fn incoming(&self) -> Option<MessageStream> {
        self.0.incoming()
    }

    fn open_stream(
        &self,
        headers: HeaderMap,
        last_event_id: Option<String>,
    ) -> BoxFuture<'_, Result<MessageStream, TransportError>> {
        self.0.open_stream(headers, last_event_id)
    }

    fn info(&self) -> TransportInfo {
        self.0.info()
    }

    fn session_id(&self) -> Option<String> {
        self.0.session_id()
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        self.0.close()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_shared_hub_a_question_asked_on_one_worker_finishes_on_the_other() {
    let hubs = hubs(Hubs::SharedMemory).await.expect("in memory");
    let (text, sent) = confirm_through(hubs, Revision::V2026_07_28).await;
    assert_eq!(text, Ok("confirmed".to_owned()), "sent {sent:?}");
    assert!(sent[0] > 0 && sent[1] > 0, "both workers served: {sent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_shared_hub_a_session_made_on_one_worker_is_served_by_the_other() {
    let hubs = hubs(Hubs::SharedMemory).await.expect("in memory");
    let (text, sent) = confirm_through(hubs, Revision::V2025_11_25).await;
    assert_eq!(text, Ok("confirmed".to_owned()), "sent {sent:?}");
    assert!(sent[0] > 1 && sent[1] > 1, "both workers served: {sent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_hub_each_the_other_worker_does_not_know_the_question() {
    let hubs = hubs(Hubs::SeparateMemory).await.expect("in memory");
    let (text, sent) = confirm_through(hubs, Revision::V2026_07_28).await;
    // The retry carrying the answer reaches the worker that did not ask.
    let refused = text.expect_err("the retry is refused");
    assert!(
        refused.contains("requestState"),
        "{refused} (sent {sent:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_on_redis_serve_one_client_alternately() {
    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let Some(hubs) = hubs(Hubs::Redis).await else {
            return;
        };
        let (text, sent) = confirm_through(hubs, revision).await;
        assert_eq!(
            text,
            Ok("confirmed".to_owned()),
            "{revision}: sent {sent:?}"
        );
        assert!(
            sent[0] > 0 && sent[1] > 0,
            "{revision}: both workers served: {sent:?}"
        );
    }
}
