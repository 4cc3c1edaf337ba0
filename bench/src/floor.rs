//! The floor: a bare hyper 1 HTTP/1.1 server with no protocol at all, the best any MCP server
//! on hyper could do on this machine.
//!
//! - `POST` to any path except `/messages`: reads the body and answers `200` with one fixed
//!   JSON-RPC result ([`FLOOR_BODY`] by default, the size of an `add` reply).
//! - `GET /sse`: the 2024-11-05 HTTP+SSE shape, for the floor of that transport: an event
//!   stream that opens with `event: endpoint` naming `/messages?session_id=<n>`; a `POST` there
//!   is answered `202` and puts the fixed result on that stream as an `event: message`.
//! - Anything else: `405`.
//!
//! Every accepted connection gets `TCP_NODELAY`.
//! [`serve_stdio`] is the stdio floor: the same fixed reply for every line on stdin.

use std::{
    collections::HashMap,
    convert::Infallible,
    pin::Pin,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    task::{Context, Poll},
};

use bytes::Bytes;
use http::{
    HeaderValue, Method, Request, Response, StatusCode,
    header::{CACHE_CONTROL, CONTENT_TYPE},
};
use http_body_util::BodyExt;
use hyper::{
    body::{Body, Frame, Incoming, SizeHint},
    server::conn::http1,
    service::service_fn,
};
use hyper_util::rt::TokioIo;
use tokio::{net::TcpListener, sync::mpsc};

/// The default fixed reply: an `add` result with structured content and its JSON text, as a
/// 2025-era server sends it (130 bytes).
pub const FLOOR_BODY: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"sum\":5}"}],"structuredContent":{"sum":5},"isError":false}}"#;

/// Events buffered per HTTP+SSE stream before a POST waits.
const STREAM_BUFFER: usize = 64;

/// Serves the floor on `listener` until an accept error that is not transient.
///
/// `body` is the fixed JSON-RPC reply.
pub async fn serve(listener: TcpListener, body: Bytes) -> std::io::Result<()> {
    let floor = Arc::new(Floor::new(body));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) if is_transient(&error) => continue,
            Err(error) => return Err(error),
        };
        stream.set_nodelay(true)?;
        let floor = floor.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| floor.clone().handle(request));
            // A connection error only ends that connection.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The stdio floor: answers every line read from `input` with `body` and a newline on
/// `output`, flushed, until `input` ends. Blank lines get no answer.
pub fn serve_stdio(
    input: impl std::io::BufRead,
    mut output: impl std::io::Write,
    body: &[u8],
) -> std::io::Result<()> {
    let mut reply = body.to_vec();
    reply.push(b'\n');
    for line in input.split(b'\n') {
        if line?.trim_ascii().is_empty() {
            continue;
        }
        output.write_all(&reply)?;
        output.flush()?;
    }
    Ok(())
}

fn is_transient(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionReset, Interrupted};
    matches!(
        error.kind(),
        ConnectionAborted | ConnectionReset | Interrupted
    )
}

/// The floor's shared state.
#[derive(Debug)]
struct Floor {
    json: Bytes,
    sse_message: Bytes,
    streams: Mutex<HashMap<u64, mpsc::Sender<Bytes>>>,
    next_stream: AtomicU64,
}

impl Floor {
    fn new(json: Bytes) -> Self {
        let mut sse_message = b"event: message\ndata: ".to_vec();
        sse_message.extend_from_slice(&json);
        sse_message.extend_from_slice(b"\n\n");
        Self {
            json,
            sse_message: sse_message.into(),
            streams: Mutex::new(HashMap::new()),
            next_stream: AtomicU64::new(1),
        }
    }

    async fn handle(
        self: Arc<Self>,
        request: Request<Incoming>,
    ) -> Result<Response<FloorBody>, Infallible> {
        let (parts, body) = request.into_parts();
        let response = match (parts.method, parts.uri.path()) {
            (Method::GET, "/sse") => self.open_stream(),
            (Method::POST, "/messages") => {
                let stream = parts.uri.query().and_then(session_of);
                if body.collect().await.is_err() {
                    return Ok(status(StatusCode::BAD_REQUEST));
                }
                match stream.and_then(|id| self.sender(id)) {
                    Some(sender) if sender.send(self.sse_message.clone()).await.is_ok() => {
                        status(StatusCode::ACCEPTED)
                    }
                    _ => status(StatusCode::NOT_FOUND),
                }
            }
            (Method::POST, _) => {
                if body.collect().await.is_err() {
                    return Ok(status(StatusCode::BAD_REQUEST));
                }
                let mut response = Response::new(FloorBody::Full(Some(self.json.clone())));
                response
                    .headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                response
            }
            _ => status(StatusCode::METHOD_NOT_ALLOWED),
        };
        Ok(response)
    }

    fn open_stream(self: Arc<Self>) -> Response<FloorBody> {
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = mpsc::channel(STREAM_BUFFER);
        let endpoint = format!("event: endpoint\ndata: /messages?session_id={id}\n\n");
        // The channel is new and empty, so this cannot fail.
        let _ = sender.try_send(Bytes::from(endpoint));
        self.lock().insert(id, sender);
        let guard = StreamGuard { floor: self, id };
        let mut response = Response::new(FloorBody::Stream {
            receiver,
            _guard: guard,
        });
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    }

    fn sender(&self, id: u64) -> Option<mpsc::Sender<Bytes>> {
        self.lock().get(&id).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, mpsc::Sender<Bytes>>> {
        self.streams.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The stream id in `session_id=<n>` of a query string.
fn session_of(query: &str) -> Option<u64> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("session_id="))
        .and_then(|id| id.parse().ok())
}

fn status(code: StatusCode) -> Response<FloorBody> {
    let mut response = Response::new(FloorBody::Full(None));
    *response.status_mut() = code;
    response
}

/// Forgets an HTTP+SSE stream when its response body is dropped (the client went away).
#[derive(Debug)]
struct StreamGuard {
    floor: Arc<Floor>,
    id: u64,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.floor.lock().remove(&self.id);
    }
}

/// A response body: fixed bytes, or an event stream fed by POSTs.
#[derive(Debug)]
enum FloorBody {
    Full(Option<Bytes>),
    Stream {
        receiver: mpsc::Receiver<Bytes>,
        _guard: StreamGuard,
    },
}

impl Body for FloorBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Self::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Self::Stream { receiver, .. } => receiver
                .poll_recv(cx)
                .map(|chunk| chunk.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Self::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Self::Stream { .. } => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::{Checked, check_add_reply};

    #[test]
    fn default_body_passes_the_check() {
        assert_eq!(
            check_add_reply(FLOOR_BODY.as_bytes(), None),
            Ok(Checked::Passed)
        );
    }

    #[test]
    fn stdio_floor_answers_each_line() {
        let mut out = Vec::new();
        serve_stdio(&b"{\"a\":1}\n\n{\"b\":2}\n{\"c\":3}"[..], &mut out, b"R").expect("in memory");
        assert_eq!(out, b"R\nR\nR\n");
    }

    #[test]
    fn session_ids_from_queries() {
        let table = [
            ("session_id=7", Some(7)),
            ("x=1&session_id=12", Some(12)),
            ("session_id=abc", None),
            ("sessionid=1", None),
            ("", None),
        ];
        for (query, expected) in table {
            assert_eq!(session_of(query), expected, "{query:?}");
        }
    }
}
