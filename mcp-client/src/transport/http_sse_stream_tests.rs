//! The HTTP+SSE transport's event stream, read by the requests waiting on it: against a scripted
//! server on 127.0.0.1 that writes each answer on the stream before it answers the POST, with
//! notifications around it, out of order across concurrent requests. (A unit test: the
//! requests whose answer the client reads itself are marked only inside the crate.)

use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::transport::{Delivery, HttpSse, Outbound, OutboundKind, RawAnswer, Transport};
use bytes::Bytes;
use futures::channel::mpsc;
use futures::{StreamExt, future};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_wire::jsonrpc::{Id, Message};
use serde_json::{Value, json};
use tokio::net::TcpListener;

type Body = BoxBody<Bytes, Infallible>;
type Events = mpsc::UnboundedSender<Result<Frame<Bytes>, Infallible>>;

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("timed out")
}

/// The server's side: the open stream, to write events on.
#[derive(Clone, Default)]
struct Server {
    stream: Arc<Mutex<Option<Events>>>,
}

impl Server {
    fn event(&self, message: &Value) {
        let text = format!("event: message\ndata: {message}\n\n");
        if let Some(tx) = self.stream.lock().unwrap().as_ref() {
            let _ = tx.unbounded_send(Ok(Frame::data(Bytes::from(text))));
        }
    }

    /// Ends the stream.
    fn end(&self) {
        self.stream.lock().unwrap().take();
    }

    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        if request.method() == Method::GET {
            let (tx, rx) = mpsc::unbounded();
            let endpoint = "event: endpoint\ndata: /messages?session=1\n\n";
            tx.unbounded_send(Ok(Frame::data(Bytes::from(endpoint))))
                .unwrap();
            *self.stream.lock().unwrap() = Some(tx);
            return Response::builder()
                .header("content-type", "text/event-stream")
                .body(BodyExt::boxed(StreamBody::new(rx)))
                .unwrap();
        }
        let body = request.into_body().collect().await.unwrap().to_bytes();
        let message: Value = serde_json::from_slice(&body).unwrap();
        let id = message["id"].clone();
        match message["method"].as_str() {
            // Each answer goes on the stream before the POST is answered, after a notification.
            Some("add") => {
                let n = id.as_i64().unwrap();
                self.event(&json!({"jsonrpc": "2.0", "method": "notifications/before", "params": {"n": n}}));
                self.event(&json!({"jsonrpc": "2.0", "id": id, "result": {"sum": n + 1}}));
            }
            Some("fail") => {
                self.event(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "no"}}));
            }
            Some("push") => {
                self.event(
                    &json!({"jsonrpc": "2.0", "method": "notifications/pushed", "params": {}}),
                );
            }
            // Answered from another task, usually after the POST.
            Some("late") => {
                let server = self.clone();
                tokio::spawn(async move {
                    tokio::task::yield_now().await;
                    server.event(&json!({"jsonrpc": "2.0", "id": id, "result": {"late": true}}));
                });
            }
            // Never answered: the stream ends instead.
            Some("hang") => {}
            other => panic!("unexpected {other:?}"),
        }
        Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Full::new(Bytes::from_static(b"Accepted")).boxed())
            .unwrap()
    }
}

async fn start() -> (Server, Uri) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::default();
    let serving = server.clone();
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let server = serving.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let server = server.clone();
                    async move { Ok::<_, Infallible>(server.handle(request).await) }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(socket), service)
                    .await;
            });
        }
    });
    (server, format!("http://{addr}/sse").parse().unwrap())
}

fn request(id: i64, method: &str, raw_answer: bool) -> Outbound {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method});
    Outbound {
        kind: OutboundKind::Request(Id::Number(id)),
        body: Bytes::from(body.to_string()),
        headers: HeaderMap::new(),
        raw_answer,
    }
}

fn notification(method: &str) -> Outbound {
    let body = json!({"jsonrpc": "2.0", "method": method});
    Outbound {
        kind: OutboundKind::Notification,
        body: Bytes::from(body.to_string()),
        headers: HeaderMap::new(),
        raw_answer: false,
    }
}

/// The answer a delivery holds, as a value.
async fn answer(delivery: Delivery) -> Value {
    match delivery {
        Delivery::Json(RawAnswer(text)) => serde_json::from_slice(&text).unwrap(),
        Delivery::Stream(mut stream) => {
            let inbound = stream.next().await.unwrap().unwrap();
            serde_json::to_value(&inbound.message).unwrap()
        }
        other => panic!("no answer: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_requests_read_the_stream_for_each_other_and_for_the_notifications() {
    let (server, uri) = start().await;
    let transport = within(HttpSse::builder(uri).connect()).await.unwrap();
    let mut incoming = transport.incoming().unwrap();
    // The notifications, read as a client reads them: one at a time, before polling again.
    let seen = tokio::spawn(async move {
        let mut methods = Vec::new();
        while let Some(Ok(inbound)) = incoming.next().await {
            if let Message::Notification(n) = inbound.message {
                methods.push(n.method.clone());
                if n.method == "notifications/pushed" {
                    break;
                }
            }
        }
        methods
    });
    for round in 0..20 {
        // Requests reading their own answers, one that does not, one that fails, at once.
        let base = round * 100;
        let mut sends = Vec::new();
        for i in 0..8 {
            sends.push(transport.send(request(base + i, "add", true)));
        }
        sends.push(transport.send(request(base + 50, "add", false)));
        sends.push(transport.send(request(base + 60, "fail", true)));
        sends.push(transport.send(request(base + 70, "late", true)));
        let answers = within(future::join_all(sends)).await;
        let mut values = Vec::new();
        for delivery in answers {
            values.push(answer(delivery.unwrap()).await);
        }
        for (i, value) in values[..8].iter().enumerate() {
            let n = base + i as i64;
            assert_eq!(value["id"], n, "{value}");
            assert_eq!(value["result"]["sum"], n + 1, "{value}");
        }
        assert_eq!(values[8]["result"]["sum"], base + 51, "{}", values[8]);
        assert_eq!(values[9]["error"]["code"], -32602, "{}", values[9]);
        assert_eq!(values[10]["result"]["late"], true, "{}", values[10]);
    }
    // Nobody waits now: the background reader takes what the server pushes.
    let delivery = within(transport.send(notification("push"))).await.unwrap();
    assert!(matches!(delivery, Delivery::Accepted));
    let methods = within(seen).await.unwrap();
    assert_eq!(methods.len(), 20 * 9 + 1, "{methods:?}");
    assert_eq!(methods.last().map(|m| &**m), Some("notifications/pushed"));
    drop(server);
}

#[tokio::test]
async fn a_request_waiting_when_the_stream_ends_fails() {
    let (server, uri) = start().await;
    let transport = within(HttpSse::builder(uri).connect()).await.unwrap();
    let waiting = transport.send(request(1, "hang", true));
    // The stream ends while the request waits (before its POST is answered or after: it fails
    // either way, as it was registered when sent).
    let ending = async { server.end() };
    let (delivery, ()) = within(future::join(waiting, ending)).await;
    let error = match delivery {
        Ok(Delivery::Stream(mut stream)) => stream.next().await.unwrap().unwrap_err(),
        Ok(other) => panic!("{other:?}"),
        Err(error) => error,
    };
    assert!(!error.to_string().is_empty());
    // Later requests fail at once.
    let later = within(transport.send(request(2, "add", true))).await;
    let failed = match later {
        Ok(Delivery::Stream(mut stream)) => stream.next().await.unwrap().is_err(),
        Ok(_) => false,
        Err(_) => true,
    };
    assert!(failed);
}

#[tokio::test]
async fn a_waiting_request_its_caller_stopped_polling_holds_up_no_other() {
    let (_server, uri) = start().await;
    let transport = within(HttpSse::builder(uri).connect()).await.unwrap();
    // Sent and polled once, by a caller that will not poll it again (its waker does nothing),
    // and not dropped either.
    let mut forgotten = transport.send(request(1, "hang", true));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(forgotten.as_mut().poll(&mut cx).is_pending());
    // Answered on the stream from another task, mostly after the POST was answered: were the
    // stream's wake-ups to go to the forgotten request, these would wait for nothing.
    for id in 2..22 {
        // The deadline is looked at first: a timeout that polls the request when it fires
        // would wake the stream itself.
        let delivery = tokio::select! {
            biased;
            () = tokio::time::sleep(Duration::from_secs(3)) => panic!("request {id} held up"),
            delivery = transport.send(request(id, "late", true)) => delivery.unwrap(),
        };
        let value = answer(delivery).await;
        assert_eq!(value["result"]["late"], true, "{value}");
    }
    drop(forgotten);
}
