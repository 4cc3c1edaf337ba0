//! Issue 50's retry contract, from the client's side, against a small hyper server on 127.0.0.1
//! (Streamable HTTP, 2025-11-25; HTTP+SSE, 2024-11-05, at `/sse`): it answers the first N POSTs of one method with a refusal
//! (429 + `Retry-After` + the JSON-RPC error `-31429`, or a bare 429) and then serves normally.
//! The client waits and succeeds, gives up past its bounds with `RateLimited`, reads a bare 429,
//! and does not retry a tool call it cannot tell is safe to repeat.
//!
//! The waits the server asks for are 50 ms (or 0 s): nothing sleeps to synchronise, and the
//! only clock is the guard against hangs ([`within`]).

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mcp_client::rate_limit::RATE_LIMITED;
use mcp_client::{Client, ErrorKind, RateLimitRetry, Revision};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

type Body = BoxBody<Bytes, Infallible>;

/// A guard against hangs: far longer than anything below takes.
async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("hung")
}

/// How the stub refuses.
#[derive(Clone, Copy)]
enum Refusal {
    /// 429, `Retry-After` (whole seconds, rounded up) and the JSON-RPC error with
    /// `retryAfterMs` and `limit`.
    Contract { retry_after_ms: u64 },
    /// 429 with an empty body, and a `Retry-After` when given.
    Bare { retry_after_s: Option<u64> },
}

struct Stub {
    url: String,
    /// The method whose first `refusals` POSTs are refused.
    method: &'static str,
    refusals: AtomicUsize,
    refusal: Refusal,
    /// Every JSON-RPC method POSTed, in order.
    seen: Mutex<Vec<String>>,
    /// The open HTTP+SSE stream, where the answers to `/messages` POSTs go.
    sse: Mutex<Option<mpsc::UnboundedSender<Bytes>>>,
}

impl Stub {
    async fn start(method: &'static str, refusals: usize, refusal: Refusal) -> Arc<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stub = Arc::new(Self {
            url: format!("http://{}/mcp", listener.local_addr().unwrap()),
            method,
            refusals: AtomicUsize::new(refusals),
            refusal,
            seen: Mutex::new(Vec::new()),
            sse: Mutex::new(None),
        });
        let serving = stub.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let stub = serving.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let stub = stub.clone();
                        async move { Ok::<_, Infallible>(stub.answer(request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
        });
        stub
    }

    /// How many POSTs of `method` arrived.
    fn count(&self, method: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|m| *m == method)
            .count()
    }

    /// The HTTP+SSE stream's URL.
    fn sse_url(&self) -> String {
        self.url.replace("/mcp", "/sse")
    }

    async fn answer(&self, request: Request<Incoming>) -> Response<Body> {
        let path = request.uri().path().to_owned();
        if request.method() == hyper::Method::GET && path == "/sse" {
            // HTTP+SSE: the stream opens with the endpoint the client POSTs to.
            let (tx, rx) = mpsc::unbounded_channel();
            let _ = tx.send(Bytes::from_static(b"event: endpoint\ndata: /messages\n\n"));
            *self.sse.lock().unwrap() = Some(tx);
            let frames = futures::stream::unfold(rx, |mut rx| async move {
                let data = rx.recv().await?;
                Some((Ok::<_, Infallible>(hyper::body::Frame::data(data)), rx))
            });
            let mut response = Response::new(StreamBody::new(frames).boxed());
            response
                .headers_mut()
                .insert("content-type", "text/event-stream".parse().unwrap());
            return response;
        }
        if request.method() != hyper::Method::POST {
            return reply(StatusCode::METHOD_NOT_ALLOWED, &[], Bytes::new());
        }
        let body = request.into_body().collect().await.unwrap().to_bytes();
        let message: Value = serde_json::from_slice(&body).unwrap();
        let method = message["method"].as_str().unwrap_or("").to_owned();
        self.seen.lock().unwrap().push(method.clone());
        let id = message.get("id").cloned();
        let Some(id) = id else {
            return reply(StatusCode::ACCEPTED, &[], Bytes::new());
        };
        if method == self.method
            && self
                .refusals
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            return self.refuse(&id);
        }
        let result = match method.as_str() {
            "initialize" => json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "limited", "version": "1"},
            }),
            "tools/list" => json!({"tools": [
                {"name": "lookup", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
                {"name": "deploy", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}},
            ]}),
            "tools/call" => json!({"content": [{"type": "text", "text": "done"}]}),
            _ => json!({}),
        };
        let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if path == "/messages" {
            // HTTP+SSE: the answer comes on the stream; the POST is only accepted.
            let event = format!("event: message\ndata: {body}\n\n");
            if let Some(tx) = self.sse.lock().unwrap().as_ref() {
                let _ = tx.send(Bytes::from(event));
            }
            return reply(StatusCode::ACCEPTED, &[], Bytes::new());
        }
        reply(
            StatusCode::OK,
            &[("content-type", "application/json")],
            Bytes::from(body.to_string()),
        )
    }

    fn refuse(&self, id: &Value) -> Response<Body> {
        match self.refusal {
            Refusal::Contract { retry_after_ms } => {
                let seconds = retry_after_ms.div_ceil(1000).to_string();
                let body = json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": RATE_LIMITED,
                    "message": "rate limited: too many calls of tools/call",
                    "data": {"retryAfterMs": retry_after_ms, "limit": "tools/call"},
                }});
                reply(
                    StatusCode::TOO_MANY_REQUESTS,
                    &[
                        ("content-type", "application/json"),
                        ("retry-after", seconds.as_str()),
                    ],
                    Bytes::from(body.to_string()),
                )
            }
            Refusal::Bare { retry_after_s } => {
                let seconds = retry_after_s.map(|s| s.to_string());
                let headers: Vec<(&str, &str)> = seconds
                    .iter()
                    .map(|s| ("retry-after", s.as_str()))
                    .collect();
                reply(StatusCode::TOO_MANY_REQUESTS, &headers, Bytes::new())
            }
        }
    }
}

fn reply(status: StatusCode, headers: &[(&str, &str)], body: Bytes) -> Response<Body> {
    let mut response = Response::builder().status(status);
    for (name, value) in headers {
        response = response.header(*name, *value);
    }
    response.body(Full::new(body).boxed()).unwrap()
}

const FIFTY_MS: Refusal = Refusal::Contract { retry_after_ms: 50 };

async fn connect(stub: &Stub, retry: RateLimitRetry) -> Client {
    Client::builder()
        .revision(Revision::V2025_11_25)
        .rate_limit_retry(retry)
        .connect_http(&stub.url)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_read_only_tool_call_waits_and_succeeds() {
    within(async {
        let stub = Stub::start("tools/call", 2, FIFTY_MS).await;
        let retries = Arc::new(Mutex::new(Vec::new()));
        let seen = retries.clone();
        let retry = RateLimitRetry::new().on_retry(move |error, wait| {
            seen.lock().unwrap().push((
                error.rate_limit().map(str::to_owned),
                error.retry_after(),
                wait,
            ));
        });
        let client = connect(&stub, retry).await;
        client.list_tools().await.unwrap();
        let result = client.call_tool("lookup", json!({})).await.unwrap();
        assert_eq!(result["content"][0]["text"], "done");
        assert_eq!(stub.count("tools/call"), 3);
        let retries = retries.lock().unwrap().clone();
        assert_eq!(retries.len(), 2);
        for (limit, asked, wait) in retries {
            assert_eq!(limit.as_deref(), Some("tools/call"));
            assert_eq!(asked, Some(Duration::from_millis(50)));
            // The server's wait plus up to 10% jitter.
            assert!(wait >= Duration::from_millis(50) && wait <= Duration::from_millis(55));
        }
    })
    .await;
}

#[tokio::test]
async fn past_the_attempts_it_returns_rate_limited_with_the_wait() {
    within(async {
        let stub = Stub::start("tools/call", 10, FIFTY_MS).await;
        let client = connect(&stub, RateLimitRetry::new().max_attempts(3)).await;
        client.list_tools().await.unwrap();
        let error = client.call_tool("lookup", json!({})).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(error.retry_after(), Some(Duration::from_millis(50)));
        assert_eq!(error.rate_limit(), Some("tools/call"));
        assert_eq!(error.http_status(), Some(429));
        assert_eq!(error.code(), Some(RATE_LIMITED));
        assert_eq!(stub.count("tools/call"), 3);
    })
    .await;
}

#[tokio::test]
async fn a_wait_past_the_total_bound_is_not_started() {
    within(async {
        let stub = Stub::start(
            "tools/call",
            1,
            Refusal::Contract {
                retry_after_ms: 60_000,
            },
        )
        .await;
        let retry = RateLimitRetry::new().max_wait(Duration::from_secs(1));
        let client = connect(&stub, retry).await;
        client.list_tools().await.unwrap();
        let error = client.call_tool("lookup", json!({})).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(error.retry_after(), Some(Duration::from_secs(60)));
        assert_eq!(stub.count("tools/call"), 1);
        assert!(
            error.to_string().contains("the server asked to wait 60 s"),
            "{error}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_bare_429_is_understood() {
    within(async {
        // Its Retry-After is the wait; no limit is named.
        let stub = Stub::start(
            "tools/call",
            1,
            Refusal::Bare {
                retry_after_s: Some(7),
            },
        )
        .await;
        let client = connect(&stub, RateLimitRetry::off()).await;
        let error = client.call_tool("lookup", json!({})).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
        assert_eq!(error.rate_limit(), None);
        assert_eq!(error.http_status(), Some(429));
        assert_eq!(error.rpc(), None);
        // Without Retry-After, the policy's default wait is used, and the call succeeds.
        let stub = Stub::start(
            "tools/call",
            1,
            Refusal::Bare {
                retry_after_s: None,
            },
        )
        .await;
        let retry = RateLimitRetry::new()
            .default_wait(Duration::from_millis(20))
            .retry_tool_calls(true);
        let client = connect(&stub, retry).await;
        client.call_tool("deploy", json!({})).await.unwrap();
        assert_eq!(stub.count("tools/call"), 2);
    })
    .await;
}

#[tokio::test]
async fn a_tool_call_not_known_to_be_idempotent_is_not_retried_by_default() {
    within(async {
        let stub = Stub::start("tools/call", 1, FIFTY_MS).await;
        let client = connect(&stub, RateLimitRetry::new()).await;
        client.list_tools().await.unwrap();
        let error = client.call_tool("deploy", json!({})).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(error.retry_after(), Some(Duration::from_millis(50)));
        assert_eq!(stub.count("tools/call"), 1);
        // Without a tools/list, even a read-only tool is not known to be safe to repeat.
        let stub = Stub::start("tools/call", 1, FIFTY_MS).await;
        let client = connect(&stub, RateLimitRetry::new()).await;
        let error = client.call_tool("lookup", json!({})).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(stub.count("tools/call"), 1);
        // Asked for: retried.
        let stub = Stub::start("tools/call", 1, FIFTY_MS).await;
        let client = connect(&stub, RateLimitRetry::new().retry_tool_calls(true)).await;
        client.call_tool("deploy", json!({})).await.unwrap();
        assert_eq!(stub.count("tools/call"), 2);
    })
    .await;
}

#[tokio::test]
async fn other_requests_and_the_handshake_are_retried() {
    within(async {
        let stub = Stub::start("tools/list", 2, FIFTY_MS).await;
        let client = connect(&stub, RateLimitRetry::new()).await;
        assert_eq!(client.list_tools().await.unwrap().len(), 2);
        assert_eq!(stub.count("tools/list"), 3);
        // A refused initialize (a bare 429, as some transports send it): connect waits.
        let stub = Stub::start(
            "initialize",
            1,
            Refusal::Bare {
                retry_after_s: Some(0),
            },
        )
        .await;
        let client = connect(&stub, RateLimitRetry::new()).await;
        client.list_tools().await.unwrap();
        assert_eq!(stub.count("initialize"), 2);
        // With retries off, the connect fails with RateLimited.
        let stub = Stub::start(
            "initialize",
            1,
            Refusal::Bare {
                retry_after_s: Some(3),
            },
        )
        .await;
        let error = Client::builder()
            .revision(Revision::V2025_11_25)
            .rate_limit_retry(RateLimitRetry::off())
            .connect_http(&stub.url)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
    })
    .await;
}

#[tokio::test]
async fn over_http_sse_a_refused_post_is_retried_and_then_given_up() {
    within(async {
        // The refusal of a POST to the endpoint: 429 and the error as its body.
        let stub = Stub::start("tools/call", 1, FIFTY_MS).await;
        let client = Client::builder()
            .rate_limit_retry(RateLimitRetry::new().retry_tool_calls(true))
            .connect_sse(&stub.sse_url())
            .await
            .unwrap();
        let result = client.call_tool("deploy", json!({})).await.unwrap();
        assert_eq!(result["content"][0]["text"], "done");
        assert_eq!(stub.count("tools/call"), 2);
        // Refused every time: RateLimited, with the wait and the limit.
        let stub = Stub::start("tools/call", 10, FIFTY_MS).await;
        let client = Client::builder()
            .rate_limit_retry(RateLimitRetry::new().max_attempts(2).retry_tool_calls(true))
            .connect_sse(&stub.sse_url())
            .await
            .unwrap();
        let error = client.call_tool("deploy", json!({})).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::RateLimited);
        assert_eq!(error.retry_after(), Some(Duration::from_millis(50)));
        assert_eq!(error.rate_limit(), Some("tools/call"));
        assert_eq!(stub.count("tools/call"), 2);
    })
    .await;
}
