//! The floor: a bare hyper 1 HTTP/1.1 server with no protocol at all, the best any MCP server
//! on hyper could do on this machine.
//!
//! - `POST` to any path except `/messages`: reads the body and answers `200` with one fixed
//!   JSON-RPC result ([`FLOOR_BODY`] by default, the size of an `add` reply).
//! - `GET /sse`: the 2024-11-05 HTTP+SSE shape, for the floor of that transport: an event
//!   stream that opens with `event: endpoint` naming `/messages?session_id=<n>`; a `POST` there
//!   is answered `202` and, when it has an `"id":` (a request, not a notification), puts the
//!   fixed result on that stream as an `event: message`.
//! - Anything else: `405`.
//!
//! With [`ReplyMode::Echo`] the replies carry the request's id (see there), so a real client
//! can use the floor.
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

/// How the floor answers a POST.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplyMode {
    /// Every POST gets the fixed body, byte for byte (the floor of the server tables).
    #[default]
    Fixed,
    /// Just enough for a real client: the request's `id` is copied into the fixed body,
    /// `initialize` gets a minimal result naming the requested `protocolVersion`,
    /// `server/discover` a minimal result naming the `_meta` protocol version, and a message
    /// without an id (a notification) gets `202`. Found by scanning the raw body, not by parsing
    /// it (the floor of the client tables).
    Echo,
}

/// Serves the floor on `listener` until an accept error that is not transient.
///
/// `body` is the fixed JSON-RPC reply; it must contain `"id":`.
pub async fn serve(listener: TcpListener, body: Bytes, mode: ReplyMode) -> std::io::Result<()> {
    let floor = Arc::new(Floor::new(body, mode));
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

/// The stdio floor: answers every request line read from `input` with `body` and a newline
/// on `output`, flushed, until `input` ends. Lines without an `"id":` (notifications) and blank
/// lines get no answer.
pub fn serve_stdio(
    input: impl std::io::BufRead,
    mut output: impl std::io::Write,
    body: &[u8],
) -> std::io::Result<()> {
    let mut reply = body.to_vec();
    reply.push(b'\n');
    for line in input.split(b'\n') {
        if id_span(&line?).is_none() {
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
    mode: ReplyMode,
    /// The fixed body around its id value, for [`ReplyMode::Echo`].
    before_id: Bytes,
    after_id: Bytes,
    streams: Mutex<HashMap<u64, mpsc::Sender<Bytes>>>,
    next_stream: AtomicU64,
}

impl Floor {
    fn new(json: Bytes, mode: ReplyMode) -> Self {
        let (before_id, after_id) = match id_span(&json) {
            Some((start, end)) => (json.slice(..start), json.slice(end..)),
            None => (json.clone(), Bytes::new()),
        };
        Self {
            sse_message: sse_event(&json),
            json,
            mode,
            before_id,
            after_id,
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
                let Ok(body) = body.collect().await else {
                    return Ok(status(StatusCode::BAD_REQUEST));
                };
                let Some(sender) = stream.and_then(|id| self.sender(id)) else {
                    return Ok(status(StatusCode::NOT_FOUND));
                };
                let event = self.sse_reply(&body.to_bytes());
                if let Some(event) = event
                    && sender.send(event).await.is_err()
                {
                    return Ok(status(StatusCode::NOT_FOUND));
                }
                status(StatusCode::ACCEPTED)
            }
            (Method::POST, _) => {
                let Ok(body) = body.collect().await else {
                    return Ok(status(StatusCode::BAD_REQUEST));
                };
                let reply = match self.mode {
                    ReplyMode::Fixed => self.json.clone(),
                    ReplyMode::Echo => match self.echo(&body.to_bytes()) {
                        Some(reply) => reply,
                        None => return Ok(status(StatusCode::ACCEPTED)),
                    },
                };
                let mut response = Response::new(FloorBody::Full(Some(reply)));
                response
                    .headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                response
            }
            _ => status(StatusCode::METHOD_NOT_ALLOWED),
        };
        Ok(response)
    }

    /// The event an HTTP+SSE POST of `request` puts on its stream; `None` for a notification,
    /// which gets no reply.
    fn sse_reply(&self, request: &[u8]) -> Option<Bytes> {
        match self.mode {
            ReplyMode::Fixed => id_span(request).map(|_| self.sse_message.clone()),
            ReplyMode::Echo => self.echo(request).map(|reply| sse_event(&reply)),
        }
    }

    /// The [`ReplyMode::Echo`] reply to `request`; `None` for a notification.
    fn echo(&self, request: &[u8]) -> Option<Bytes> {
        let (start, end) = id_span(request)?;
        let id = &request[start..end];
        let mut reply = Vec::with_capacity(self.json.len() + 64);
        if find(request, br#""method":"initialize""#).is_some() {
            let version = string_after(request, br#""protocolVersion":""#).unwrap_or(b"2025-03-26");
            reply.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
            reply.extend_from_slice(id);
            reply.extend_from_slice(br#","result":{"protocolVersion":""#);
            reply.extend_from_slice(version);
            reply.extend_from_slice(
                br#"","capabilities":{"tools":{}},"serverInfo":{"name":"mcp-floor","version":"0"}}}"#,
            );
        } else if find(request, br#""method":"server/discover""#).is_some() {
            let version = string_after(request, br#""io.modelcontextprotocol/protocolVersion":""#)
                .unwrap_or(b"2026-07-28");
            reply.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
            reply.extend_from_slice(id);
            reply
                .extend_from_slice(br#","result":{"resultType":"complete","supportedVersions":[""#);
            reply.extend_from_slice(version);
            reply.extend_from_slice(
                br#""],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-floor","version":"0"}}}}"#,
            );
        } else {
            reply.extend_from_slice(&self.before_id);
            reply.extend_from_slice(id);
            reply.extend_from_slice(&self.after_id);
        }
        Some(reply.into())
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

/// `data` framed as an SSE `message` event.
fn sse_event(data: &[u8]) -> Bytes {
    let mut event = Vec::with_capacity(data.len() + 24);
    event.extend_from_slice(b"event: message\ndata: ");
    event.extend_from_slice(data);
    event.extend_from_slice(b"\n\n");
    event.into()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The byte range of the value of the first `"id":` in `json` (a number, or a string with its
/// quotes).
fn id_span(json: &[u8]) -> Option<(usize, usize)> {
    let key = br#""id":"#;
    let mut start = find(json, key)? + key.len();
    while json.get(start).is_some_and(u8::is_ascii_whitespace) {
        start += 1;
    }
    let rest = json.get(start..)?;
    let len = if rest.first() == Some(&b'"') {
        let mut escaped = false;
        let close = rest.iter().skip(1).position(|&b| {
            let done = b == b'"' && !escaped;
            escaped = b == b'\\' && !escaped;
            done
        })?;
        close + 2
    } else {
        rest.iter()
            .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
            .unwrap_or(rest.len())
    };
    (len > 0 && rest[..len] != *b"null").then_some((start, start + len))
}

/// The characters of the string that follows `key` (which ends with its opening quote).
fn string_after<'a>(json: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let start = find(json, key)? + key.len();
    let len = json
        .get(start..)?
        .iter()
        .position(|&b| b == b'"' || b == b'\\')?;
    Some(&json[start..start + len])
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
        let input =
            b"{\"id\":1}\n\n{\"method\":\"notifications/initialized\"}\n{\"id\":2}\n{\"id\":3}";
        serve_stdio(&input[..], &mut out, b"R").expect("in memory");
        assert_eq!(out, b"R\nR\nR\n");
    }

    #[test]
    fn sse_replies_only_to_requests() {
        let notification = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let request = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}}"#;
        for mode in [ReplyMode::Fixed, ReplyMode::Echo] {
            let floor = Floor::new(Bytes::from_static(FLOOR_BODY.as_bytes()), mode);
            assert_eq!(floor.sse_reply(notification), None, "{mode:?}");
            let event = floor.sse_reply(request).expect("a reply");
            assert!(event.starts_with(b"event: message\ndata: {"), "{mode:?}");
            assert!(event.ends_with(b"}\n\n"), "{mode:?}");
        }
    }

    #[test]
    fn id_spans() {
        let table: [(&[u8], Option<&[u8]>); 8] = [
            (br#"{"jsonrpc":"2.0","id":17,"method":"x"}"#, Some(b"17")),
            (br#"{"id": "a\"b","method":"x"}"#, Some(br#""a\"b""#)),
            (br#"{"method":"x","id":3}"#, Some(b"3")),
            (br#"{"id":null}"#, None),
            (
                br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                None,
            ),
            (br#"{"id":"#, None),
            (br#"{"id":"unterminated"#, None),
            (b"", None),
        ];
        for (json, expected) in table {
            let got = id_span(json).map(|(s, e)| &json[s..e]);
            assert_eq!(got, expected, "{}", String::from_utf8_lossy(json));
        }
    }

    #[test]
    fn echo_replies() {
        let floor = Floor::new(Bytes::from_static(FLOOR_BODY.as_bytes()), ReplyMode::Echo);
        let reply = floor
            .echo(br#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{}}"#)
            .expect("a request");
        assert_eq!(check_add_reply(&reply, Some(42)), Ok(Checked::Passed));
        assert_eq!(reply.len(), FLOOR_BODY.len() + 1);
        let init = floor
            .echo(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#)
            .expect("a request");
        assert_eq!(
            crate::reply::check_initialize_reply(&init, crate::Revision::V2025_06_18),
            Ok(Checked::Passed)
        );
        let discover = floor
            .echo(br#"{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#)
            .expect("a request");
        let discover: serde_json::Value = serde_json::from_slice(&discover).expect("JSON");
        assert_eq!(discover["id"], "d");
        assert_eq!(discover["result"]["supportedVersions"][0], "2026-07-28");
        assert_eq!(
            floor.echo(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
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
