//! A small MCP-over-HTTP client for the soak harness: one keep-alive HTTP/1.1 connection
//! (hyper's `client::conn::http1`), the handshake, requests with the session headers, and
//! replies read whole or event by event.

use std::{net::SocketAddr, time::Duration};

use bytes::Bytes;
use http::{
    Method, Request, Response, StatusCode,
    header::{ACCEPT, CONTENT_TYPE, HOST},
};
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, client::conn::http1::SendRequest};
use hyper_util::rt::TokioIo;
use mcp_wire::sse::SseDecoder;
use serde_json::{Value, json};
use tokio::net::TcpStream;

/// Errors are reported as text: every failure is counted or written to the report, never
/// matched on.
pub(crate) type Res<T> = Result<T, String>;

/// One HTTP/1.1 connection to the server under test.
pub(crate) struct Conn {
    host: String,
    sender: SendRequest<Full<Bytes>>,
}

/// A peer's protocol state: its revision and, after the handshake, its session.
#[derive(Clone, Debug)]
pub(crate) struct Peer {
    /// The revision sent in `initialize` and in `MCP-Protocol-Version`.
    pub(crate) revision: &'static str,
    /// The `Mcp-Session-Id` the server gave, if any.
    pub(crate) session: Option<String>,
}

impl Conn {
    /// Connects to `addr` and completes the HTTP/1.1 handshake.
    pub(crate) async fn open(addr: SocketAddr) -> Res<Self> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        Self::over(stream, addr).await
    }

    /// A connection to `addr` from the local address `source` (another loopback address, so
    /// that the server counts it as another client than the probe's).
    pub(crate) async fn open_from(addr: SocketAddr, source: std::net::IpAddr) -> Res<Self> {
        let socket = if source.is_ipv4() {
            tokio::net::TcpSocket::new_v4()
        } else {
            tokio::net::TcpSocket::new_v6()
        }
        .map_err(|e| format!("socket: {e}"))?;
        socket
            .bind(SocketAddr::new(source, 0))
            .map_err(|e| format!("bind {source}: {e}"))?;
        let stream = socket
            .connect(addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        Self::over(stream, addr).await
    }

    async fn over(stream: TcpStream, addr: SocketAddr) -> Res<Self> {
        let _ = stream.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("http handshake: {e}"))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Self {
            host: addr.to_string(),
            sender,
        })
    }

    /// Sends one request to `/mcp` with `peer`'s headers.
    pub(crate) async fn send(
        &mut self,
        method: Method,
        peer: &Peer,
        body: Option<Bytes>,
        last_event_id: Option<&str>,
    ) -> Res<Response<Incoming>> {
        self.sender
            .ready()
            .await
            .map_err(|e| format!("connection: {e}"))?;
        let mut builder = Request::builder()
            .method(method)
            .uri("/mcp")
            .header(HOST, &self.host)
            .header(ACCEPT, "application/json, text/event-stream");
        if body.is_some() {
            builder = builder.header(CONTENT_TYPE, "application/json");
        }
        if let Some(session) = &peer.session {
            builder = builder.header("mcp-session-id", session);
            if peer.revision >= "2025-06-18" {
                builder = builder.header("mcp-protocol-version", peer.revision);
            }
        }
        if let Some(id) = last_event_id {
            builder = builder.header("last-event-id", id);
        }
        let request = builder
            .body(Full::new(body.unwrap_or_default()))
            .map_err(|e| format!("request: {e}"))?;
        self.sender
            .send_request(request)
            .await
            .map_err(|e| format!("send: {e}"))
    }

    /// POSTs `body` and reads the whole reply (bounded by `limit`); the status and the
    /// JSON-RPC messages in it.
    pub(crate) async fn post(
        &mut self,
        peer: &Peer,
        body: Bytes,
        limit: Duration,
    ) -> Res<(StatusCode, Vec<Value>)> {
        let work = async {
            let response = self.send(Method::POST, peer, Some(body), None).await?;
            read_messages(response).await
        };
        tokio::time::timeout(limit, work)
            .await
            .map_err(|_| format!("no complete reply within {limit:?}"))?
    }

    /// `DELETE /mcp` for `peer`'s session; the status.
    pub(crate) async fn delete(&mut self, peer: &Peer) -> Res<StatusCode> {
        let response = self.send(Method::DELETE, peer, None, None).await?;
        let status = response.status();
        let _ = response.into_body().collect().await;
        Ok(status)
    }
}

/// Reads a whole reply: its status and its messages (JSON or SSE; batches flattened).
pub(crate) async fn read_messages(response: Response<Incoming>) -> Res<(StatusCode, Vec<Value>)> {
    let status = response.status();
    let sse = is_sse(&response);
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    let mut out = Vec::new();
    if sse {
        let mut decoder = SseDecoder::new();
        decoder.push(&body);
        for event in decoder.flatten() {
            push_messages(event.data().as_bytes(), &mut out);
        }
    } else if !body.is_empty() {
        push_messages(&body, &mut out);
    }
    Ok((status, out))
}

/// Whether a reply is an SSE stream.
pub(crate) fn is_sse<B>(response: &Response<B>) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// Parses one JSON-RPC message or batch into `out` (unparsable text is skipped).
pub(crate) fn push_messages(bytes: &[u8], out: &mut Vec<Value>) {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Array(items)) => out.extend(items),
        Ok(value) => out.push(value),
        Err(_) => {}
    }
}

/// Whether `message` is a response (a result or an error with an id).
pub(crate) fn is_response(message: &Value) -> bool {
    message.get("id").is_some()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// The `initialize` request for `revision`.
pub(crate) fn initialize_body(revision: &str) -> Bytes {
    Bytes::from(
        json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": revision,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "mcp-soak", "version": "0"}
            }
        })
        .to_string(),
    )
}

/// `initialize` and `notifications/initialized` on `conn`; the session.
pub(crate) async fn handshake(conn: &mut Conn, revision: &'static str) -> Res<Peer> {
    let mut peer = Peer {
        revision,
        session: None,
    };
    let response = tokio::time::timeout(
        Duration::from_secs(5),
        conn.send(Method::POST, &peer, Some(initialize_body(revision)), None),
    )
    .await
    .map_err(|_| "initialize: no reply within 5 s".to_owned())??;
    peer.session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (status, messages) = tokio::time::timeout(Duration::from_secs(5), read_messages(response))
        .await
        .map_err(|_| "initialize: reply body not complete within 5 s".to_owned())??;
    if status != StatusCode::OK || !messages.iter().any(|m| m.get("result").is_some()) {
        return Err(format!("initialize: HTTP {status}"));
    }
    let initialized =
        Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let (status, _) = conn
        .post(&peer, initialized, Duration::from_secs(5))
        .await?;
    if !status.is_success() {
        return Err(format!("notifications/initialized: HTTP {status}"));
    }
    Ok(peer)
}

/// A `tools/call` request.
pub(crate) fn tool_call(
    id: &Value,
    name: &str,
    arguments: Value,
    progress: Option<&Value>,
) -> Value {
    let mut params = json!({"name": name, "arguments": arguments});
    if let Some(token) = progress {
        params["_meta"] = json!({"progressToken": token});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// A streamed reply read chunk by chunk, decoded as SSE.
pub(crate) struct EventStream {
    body: Incoming,
    decoder: SseDecoder,
}

impl EventStream {
    /// Wraps a reply's body.
    pub(crate) fn new(response: Response<Incoming>) -> Self {
        Self {
            body: response.into_body(),
            decoder: SseDecoder::new().with_max_event_size(8 * 1024 * 1024),
        }
    }

    /// Reads the next chunk of the body into the decoder: its size, `Ok(None)` at the end.
    pub(crate) async fn chunk(&mut self) -> Res<Option<usize>> {
        loop {
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(format!("stream: {e}")),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.decoder.push(&data);
                        return Ok(Some(data.len()));
                    }
                }
            }
        }
    }

    /// The next complete event, if one is buffered: its id and data.
    pub(crate) fn event(&mut self) -> Option<(Option<String>, String)> {
        loop {
            match self.decoder.next()? {
                Ok(event) => {
                    let id = event.id().map(str::to_owned);
                    return Some((id, event.into_data()));
                }
                Err(_) => continue,
            }
        }
    }
}
