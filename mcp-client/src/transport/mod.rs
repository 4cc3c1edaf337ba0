//! The transport seam, and the three transports the client ships.
//!
//! A [`Transport`] moves one JSON-RPC message at a time to the server and hands back what
//! the server says about it. Everything revision-specific (which headers, which `_meta`, how to
//! cancel) is decided above the transport, by the client; the transport only carries bytes and
//! the HTTP headers the client asks for.
//!
//! | transport | per-request streams | standalone notification stream |
//! | --- | --- | --- |
//! | [`StreamableHttp`] | yes: each POST's response is its own stream | `GET` on the endpoint |
//! | [`HttpSse`] (2024-11-05) | no: every answer arrives on the one `GET` stream | the same stream |
//! | [`Stdio`] | no: one pair of pipes | the same pipes |
//!
//! To bring your own transport, implement [`Transport`]. A connection-shaped transport (one
//! duplex channel, like stdio or a WebSocket) can use [`Router`] to route responses to the
//! request that is waiting for them.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use futures::Stream;
use http::HeaderMap;

use mcp_wire::jsonrpc::{self, Decoded, Id, Message};

mod event_stream;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod http_sse;
mod pool;
mod router;
mod stdio;
mod streamable;

pub use http_sse::{HttpSse, HttpSseBuilder};
pub use router::Router;
pub use stdio::{Stderr, Stdio, StdioBuilder};
pub use streamable::{DEFAULT_MAX_MESSAGE_SIZE, StreamableHttp, StreamableHttpBuilder};

/// Locks `mutex`, going on after a panic elsewhere: nothing the crate keeps under a lock can be
/// left half-changed by one.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A boxed, sendable future, as the [`Transport`] methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A stream of messages from the server.
pub type MessageStream = Pin<Box<dyn Stream<Item = Result<Inbound, TransportError>> + Send>>;

/// One message from the server, with where it sat in its stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    /// The message.
    pub message: Message,
    /// The SSE event id it carried, when it came on an SSE stream that numbers its events.
    pub event_id: Option<String>,
}

impl Inbound {
    /// A message without an event id.
    pub fn new(message: Message) -> Self {
        Self {
            message,
            event_id: None,
        }
    }
}

/// What kind of message an [`Outbound`] carries.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutboundKind {
    /// A request; the server will answer with a response carrying this id.
    Request(Id),
    /// A notification; there is no answer.
    Notification,
    /// The client's answer to a request the server pushed; there is no answer to it.
    Response,
}

/// One JSON-RPC message on its way to the server.
#[derive(Debug, Clone)]
pub struct Outbound {
    /// What the body is.
    pub kind: OutboundKind,
    /// The serialized JSON-RPC message, a single line of JSON.
    pub body: Bytes,
    /// HTTP headers for this message (`MCP-Protocol-Version`, `Mcp-Method` ...). Transports that
    /// are not HTTP ignore them.
    pub headers: HeaderMap,
    /// The caller reads the answer to this request itself: a transport may hand back a single
    /// JSON body unparsed, as [`Delivery::Json`], instead of a stream. Transports that have no
    /// such body ignore it ([`StreamableHttp`] honours it for `application/json` responses,
    /// [`HttpSse`] for a success response to the request, after waiting for it).
    pub raw_answer: bool,
}

/// What the transport got back for an [`Outbound`].
#[non_exhaustive]
pub enum Delivery {
    /// The message was accepted and nothing more will come for it (a notification, a response,
    /// or HTTP `202 Accepted`).
    Accepted,
    /// Messages about this request, ending with its response. Dropping the stream stops reading
    /// it; on [`StreamableHttp`] that closes the response stream.
    Stream(MessageStream),
    /// The whole answer, one JSON-RPC message not yet parsed: only for an [`Outbound`] that set
    /// [`Outbound::raw_answer`].
    Json(Bytes),
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Accepted => f.write_str("Accepted"),
            Self::Stream(_) => f.write_str("Stream(..)"),
            Self::Json(body) => f.debug_tuple("Json").field(body).finish(),
        }
    }
}

/// What a transport is like, as the client needs to know it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransportInfo {
    /// Each request's answer comes on a stream of its own, and closing that stream is how the
    /// server learns the client went away (Streamable HTTP).
    pub request_streams: bool,
    /// The transport speaks HTTP, so the client sends the revision's HTTP headers.
    pub http: bool,
    /// The transport is the 2024-11-05 HTTP+SSE transport, which cannot carry 2026-07-28.
    pub legacy_sse: bool,
    /// The key under which the client remembers which revision the server speaks: the origin for
    /// HTTP (`http://host:port`), `None` for a transport that is one server process.
    pub origin: Option<String>,
}

impl TransportInfo {
    /// A connection-shaped transport that is not HTTP (stdio, a socket, an in-memory pipe).
    pub fn connection() -> Self {
        Self {
            request_streams: false,
            http: false,
            legacy_sse: false,
            origin: None,
        }
    }
}

/// Carries JSON-RPC messages between the client and one server.
///
/// The client calls [`Transport::send`] once per message, from many tasks at once. Responses to
/// requests come back on the [`Delivery::Stream`] returned for that request; messages not tied
/// to a request the client is waiting for (requests the server pushes on a shared channel,
/// notifications) come on [`Transport::incoming`].
pub trait Transport: fmt::Debug + Send + Sync + 'static {
    /// Sends one message.
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>>;

    /// The stream of messages not tied to a request, taken once by the client. `None` when the
    /// transport has no such channel or it was already taken.
    fn incoming(&self) -> Option<MessageStream>;

    /// Opens a standalone stream of server messages (the `GET` stream of Streamable HTTP),
    /// resuming after `last_event_id` when given. The default says the transport has none.
    fn open_stream(
        &self,
        headers: HeaderMap,
        last_event_id: Option<String>,
    ) -> BoxFuture<'_, Result<MessageStream, TransportError>> {
        let _ = (headers, last_event_id);
        Box::pin(async { Err(TransportError::Unsupported("a standalone stream")) })
    }

    /// What this transport is like.
    fn info(&self) -> TransportInfo;

    /// The session id the server issued, on transports that have sessions.
    fn session_id(&self) -> Option<String> {
        None
    }

    /// Forgets the session id, so the next request starts without one.
    fn reset_session(&self) {}

    /// Ends the session (HTTP `DELETE`) or the connection (closes stdin and waits for the child).
    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>>;
}

/// Why a transport could not deliver a message or read an answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The server answered with an HTTP status that is not success. The body is kept (bounded),
    /// because a JSON-RPC error in it decides what the client does next.
    #[error("HTTP status {status}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The response's `Content-Type`, if any.
        content_type: Option<String>,
        /// The response body, cut at the transport's message size limit.
        body: Bytes,
    },
    /// The server sent bytes this transport cannot read: a wrong content type, a truncated SSE
    /// stream, a line that is not a JSON-RPC message.
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// A message or frame was larger than the configured limit.
    #[error("message larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// An I/O error: the child process's pipes, a socket.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The HTTP client failed: connection refused, reset, or a malformed response.
    #[error("HTTP error: {0}")]
    Http(String),
    /// The transport is closed: the child exited, the SSE stream ended, `close` was called.
    #[error("transport closed")]
    Closed,
    /// The transport cannot do this.
    #[error("not supported by this transport: {0}")]
    Unsupported(&'static str),
    /// An SSE stream whose events carry ids ended cleanly: the server may want the client to
    /// resume it with `GET` and `Last-Event-ID` (SSE polling, 2025-11-25). The last item of such
    /// a stream.
    #[error("the SSE stream ended after event {last_event_id:?}")]
    Interrupted {
        /// The id of the last event received.
        last_event_id: String,
        /// The reconnection time the server asked for (`retry:`), in milliseconds.
        retry_ms: Option<u64>,
    },
}

/// Reads one JSON-RPC message a server sent; a batch or anything else is a protocol error.
pub(crate) fn parse_message(bytes: &[u8]) -> Result<Message, TransportError> {
    match jsonrpc::decode(bytes) {
        Decoded::Single(Ok(message)) => Ok(message),
        Decoded::Single(Err(e)) => Err(TransportError::Protocol(e.to_string())),
        Decoded::Batch(_) => Err(TransportError::Protocol("an unexpected batch".into())),
    }
}

/// The origin key Streamable HTTP and HTTP+SSE transports report for `uri`.
pub(crate) fn streamable_origin(uri: &http::Uri) -> Option<String> {
    streamable::origin_of(uri)
}
