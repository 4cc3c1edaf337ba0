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
pub(crate) mod observe;
mod pool;
mod router;
mod stdio;
mod streamable;
mod tls;

pub use http_sse::{HttpSse, HttpSseBuilder};
pub use observe::{Direction, HttpResponse, Observation};
pub(crate) use observe::{MessageFn, Observed};
pub use router::{DEFAULT_MAX_QUEUED, DEFAULT_MAX_QUEUED_BYTES, Router};
pub use stdio::{DEFAULT_STDERR_TAIL, Stderr, Stdio, StdioBuilder};
pub use streamable::{DEFAULT_MAX_MESSAGE_SIZE, StreamableHttp, StreamableHttpBuilder};
pub use tls::{CertificateRefusal, DEFAULT_HANDSHAKE_TIMEOUT, Https, Proxy};

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
    /// The client reads the answer to this request itself: this crate's transports may hand
    /// back a single JSON body unparsed instead of a stream ([`StreamableHttp`] for
    /// `application/json` responses, [`HttpSse`] for a success response to the request, after
    /// waiting for it). Not visible outside the crate: other transports answer with a stream,
    /// which the client reads the same.
    pub(crate) raw_answer: bool,
}

impl Outbound {
    /// A message of `kind` with its serialized `body` and HTTP `headers` (which transports that
    /// are not HTTP ignore).
    ///
    /// ```
    /// use bytes::Bytes;
    /// use mcp_client::transport::{Outbound, OutboundKind};
    ///
    /// let ping = Outbound::new(
    ///     OutboundKind::Request(mcp_wire::jsonrpc::Id::Number(1)),
    ///     Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
    ///     http::HeaderMap::new(),
    /// );
    /// assert_eq!(ping.kind, OutboundKind::Request(mcp_wire::jsonrpc::Id::Number(1)));
    /// ```
    pub fn new(kind: OutboundKind, body: Bytes, headers: HeaderMap) -> Self {
        Self {
            kind,
            body,
            headers,
            raw_answer: false,
        }
    }
}

mod sealed {
    /// A response body handed back unparsed (see [`Delivery::Json`](super::Delivery::Json)):
    /// only this crate's transports make one, only this crate reads it.
    #[derive(Debug)]
    pub struct RawAnswer(pub(crate) bytes::Bytes);
}

pub(crate) use sealed::RawAnswer;

/// What the transport got back for an [`Outbound`].
#[non_exhaustive]
pub enum Delivery {
    /// The message was accepted and nothing more will come for it (a notification, a response,
    /// or HTTP `202 Accepted`).
    Accepted,
    /// Messages about this request, ending with its response. Dropping the stream stops reading
    /// it; on [`StreamableHttp`] that closes the response stream.
    Stream(MessageStream),
    /// The whole answer, one JSON-RPC message not yet parsed, which the client reads itself.
    /// Only this crate's transports give it, and only for a request the client marked so;
    /// other transports never see such a request.
    Json(RawAnswer),
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Accepted => f.write_str("Accepted"),
            Self::Stream(_) => f.write_str("Stream(..)"),
            Self::Json(body) => f.debug_tuple("Json").field(&body.0).finish(),
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

    /// How many messages from the server that are not responses (notifications, the server's
    /// requests) this transport dropped because they arrived faster than the client took them
    /// (a bounded queue, see [`Router`]). The default says none.
    fn dropped(&self) -> u64 {
        0
    }

    /// Forgets the session id, so the next request starts without one.
    fn reset_session(&self) {}

    /// The URI a [`send`](Self::send) goes to when it is not the one the transport was made
    /// with (the HTTP+SSE message endpoint the stream named): what a DPoP proof of the request
    /// names (RFC 9449 `htu`). The default says it is the transport's own URI.
    fn send_uri(&self) -> Option<String> {
        None
    }

    /// Ends the session (HTTP `DELETE`) or the connection (closes stdin and waits for the child).
    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>>;
}

/// Why a transport could not deliver a message or read an answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The server answered with an HTTP status that is not success. The body is kept (bounded),
    /// because a JSON-RPC error in it decides what the client does next. The message names the
    /// status and quotes the start of the body (see `status_text`).
    #[error("{}", status_text(*status, body))]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The response's `Content-Type`, if any.
        content_type: Option<String>,
        /// The response body, cut at the transport's message size limit.
        body: Bytes,
        /// The response's `WWW-Authenticate` challenges (a 401 or 403 from a protected
        /// server), every header line joined with `, `; what an OAuth client starts from.
        www_authenticate: Option<String>,
        /// The response's `DPoP-Nonce` (RFC 9449 §9), the nonce a DPoP proof must carry.
        dpop_nonce: Option<String>,
        /// The response's `Retry-After` in delay-seconds (a 429 or 503), when it has one (an
        /// HTTP date is not read).
        retry_after_secs: Option<u32>,
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
    /// TLS with an `https://` server failed: a certificate from an unknown CA, a name that does
    /// not match the host, a handshake that timed out, an unreadable CA file.
    #[error("TLS with {host} failed: {cause}")]
    Tls {
        /// The server's host name or address (or the CA file that could not be read).
        host: String,
        /// What went wrong, as rustls says it.
        cause: String,
    },
    /// An `https://` URL reached a server that answered the TLS handshake in plain HTTP (it
    /// serves `http://` on that port): the URL's scheme should be `http://`.
    #[error("TLS with {host} failed: the server answered in plain HTTP, not TLS")]
    PlainHttp {
        /// The server's host name or address.
        host: String,
    },
    /// The server's TLS certificate was refused: why ([`CertificateRefusal`]: not trusted, a
    /// CA certificate used as the server's own, another host name, expired), and rustls's words.
    #[error("TLS with {host} failed: {cause}")]
    Certificate {
        /// The server's host name or address.
        host: String,
        /// Why the certificate was refused.
        refusal: CertificateRefusal,
        /// What went wrong, as rustls says it.
        cause: String,
    },
    /// The transport is closed: the child exited, the SSE stream ended, `close` was called.
    #[error("transport closed")]
    Closed,
    /// The stdio server's command could not be started: no such program, or not executable.
    #[error("{}", spawn_text(program, source))]
    Spawn {
        /// The program, as given.
        program: String,
        /// Why it could not be started.
        #[source]
        source: std::io::Error,
    },
    /// The stdio server process ended while the client was connected: its exit status and,
    /// when its stderr was passed through with [`Stderr::Tee`], the end
    /// of what it wrote there.
    #[error("{}", exited_text(status, stderr))]
    Exited {
        /// The exit status, as the system describes it (`exit status: 3`, `signal: 9`).
        status: String,
        /// The last bytes of the child's stderr (bounded by
        /// [`StdioBuilder::stderr_tail`]), trimmed; empty
        /// when not captured or when it wrote nothing.
        stderr: String,
    },
    /// The server requires authorization and the OAuth client could not get a token it
    /// accepts (see [`crate::oauth`]).
    #[error("{0}")]
    Authorization(Box<crate::oauth_error::OAuthError>),
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

fn spawn_text(program: &str, source: &std::io::Error) -> String {
    match source.kind() {
        std::io::ErrorKind::NotFound => format!("command `{program}` not found"),
        std::io::ErrorKind::PermissionDenied => {
            format!("command `{program}` cannot be run: permission denied")
        }
        _ => format!("cannot start `{program}`: {source}"),
    }
}

fn exited_text(status: &str, stderr: &str) -> String {
    if stderr.is_empty() {
        format!("the server process ended ({status})")
    } else {
        format!("the server process ended ({status}); the end of its stderr: {stderr}")
    }
}

/// The longest excerpt of an HTTP error body quoted in an error message, in characters.
pub(crate) const EXCERPT_CHARS: usize = 200;

/// What the server said in an HTTP error body, for a person to read: the text of its first
/// bytes (invalid UTF-8 replaced), every run of whitespace or control characters collapsed to
/// one space, cut at [`EXCERPT_CHARS`] characters (with `…`). `None` for a body with no text.
pub(crate) fn excerpt(body: &[u8]) -> Option<String> {
    // Four bytes per character at most: what can be shown is in this prefix.
    let head = &body[..body.len().min(EXCERPT_CHARS * 4 + 4)];
    let text = String::from_utf8_lossy(head);
    let mut out = String::new();
    let mut chars = 0usize;
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            space = !out.is_empty();
            continue;
        }
        if chars == EXCERPT_CHARS {
            out.push('…');
            return Some(out);
        }
        if std::mem::take(&mut space) {
            out.push(' ');
            chars += 1;
            if chars == EXCERPT_CHARS {
                out.push('…');
                return Some(out);
            }
        }
        out.push(c);
        chars += 1;
    }
    if body.len() > head.len() {
        out.push('…');
    }
    (!out.is_empty()).then_some(out)
}

/// `HTTP 500 Internal Server Error`, the status and its reason phrase.
pub(crate) fn status_name(status: u16) -> String {
    let reason = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason());
    match reason {
        Some(reason) => format!("HTTP {status} {reason}"),
        None => format!("HTTP {status}"),
    }
}

/// The message of an HTTP error: the status, and what the server said in the body, if anything.
pub(crate) fn status_text(status: u16, body: &[u8]) -> String {
    match excerpt(body) {
        Some(said) => format!("{}; the server said: {said:?}", status_name(status)),
        None => format!("{} (empty body)", status_name(status)),
    }
}

/// Reads one JSON-RPC message a server sent; a batch or anything else is a protocol error.
pub(crate) fn parse_message(bytes: &[u8]) -> Result<Message, TransportError> {
    match jsonrpc::decode(bytes) {
        Decoded::Single(Ok(message)) => Ok(message),
        Decoded::Single(Err(e)) => Err(TransportError::Protocol(e.to_string())),
        Decoded::Batch(_) => Err(TransportError::Protocol("an unexpected batch".into())),
    }
}

/// A connection pool to the origin of `uri`, for the OAuth client's requests.
pub(crate) type PoolHandle = pool::Pool;

/// A pool for the origin of `uri`, with the transports' default timeouts.
pub(crate) fn pool_for(uri: &http::Uri, https: Option<&Https>) -> PoolHandle {
    streamable::new_pool(uri, None, None, https)
}

/// Reads a whole response body, failing past `limit` bytes.
pub(crate) async fn read_body(
    body: pool::PooledBody,
    limit: usize,
) -> Result<Bytes, TransportError> {
    streamable::read_bounded(body, limit).await
}

/// The origin key Streamable HTTP and HTTP+SSE transports report for `uri`.
pub(crate) fn streamable_origin(uri: &http::Uri) -> Option<String> {
    streamable::origin_of(uri)
}

/// The JSON-RPC error in an HTTP error body, when there is one.
pub(crate) fn refusal(content_type: Option<&str>, body: &[u8]) -> Option<jsonrpc::ErrorObject> {
    if body.is_empty() {
        return None;
    }
    let json_body = match content_type {
        Some("application/json") | None => body.to_vec(),
        Some("text/event-stream") => {
            let mut decoder = mcp_wire::sse::SseDecoder::new();
            decoder.push(body);
            decoder.push(b"\n\n");
            decoder.find_map(Result::ok)?.into_data().into_bytes()
        }
        Some(_) => return None,
    };
    match parse_message(&json_body).ok()? {
        Message::Response(r) => r.outcome.err(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn an_excerpt_is_the_text_on_one_line_and_bounded() {
        assert_eq!(excerpt(b""), None);
        assert_eq!(excerpt(b" \r\n\t"), None);
        assert_eq!(
            excerpt(b"  database\n\tis down \x00 \xff ").as_deref(),
            Some("database is down \u{fffd}")
        );
        let long = "word ".repeat(1_000);
        let cut = excerpt(long.as_bytes()).unwrap();
        assert_eq!(cut.chars().count(), EXCERPT_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(
            status_text(500, b"boom"),
            "HTTP 500 Internal Server Error; the server said: \"boom\""
        );
        assert_eq!(status_text(599, b""), "HTTP 599 (empty body)");
    }

    proptest! {
        #[test]
        fn an_excerpt_never_panics_and_stays_short(body in proptest::collection::vec(any::<u8>(), 0..2_000)) {
            if let Some(text) = excerpt(&body) {
                prop_assert!(text.chars().count() <= EXCERPT_CHARS + 1);
                prop_assert!(!text.contains('\n'));
            }
        }
    }
}
