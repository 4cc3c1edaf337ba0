//! Streamable HTTP (2025-03-26 and later): one endpoint, a POST per message.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::TryFutureExt;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Body as _;

use super::pool::{Pool, PooledBody};
use super::tls::Https;
use super::{
    BoxFuture, Delivery, Inbound, MessageStream, Outbound, OutboundKind, Transport, TransportError,
    TransportInfo,
};
use mcp_wire::sse::{SseDecoder, SseError};

pub(crate) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");

/// The default limit on one message or SSE event: 16 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// Builds a [`StreamableHttp`] transport.
#[derive(Debug, Clone)]
pub struct StreamableHttpBuilder {
    uri: Uri,
    headers: HeaderMap,
    max_message_size: usize,
    connect_timeout: Option<Duration>,
    pool_idle_timeout: Option<Duration>,
    https: Option<Https>,
    on_response: Option<super::observe::ResponseFn>,
}

impl StreamableHttpBuilder {
    /// Adds a header sent on every request, such as `Authorization`.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// The largest message or SSE event accepted from the server.
    /// Default is 16 MiB ([`DEFAULT_MAX_MESSAGE_SIZE`]).
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// How long to wait for a TCP connection. Default is 10 seconds.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// How long an idle pooled connection is kept. Default is 90 seconds.
    pub fn pool_idle_timeout(mut self, timeout: Duration) -> Self {
        self.pool_idle_timeout = Some(timeout);
        self
    }

    /// How `https://` URLs are reached: trusted CAs, handshake timeout, proxy. Default is
    /// [`Https::default`] (web PKI roots, 10 s handshake, the proxy from the environment).
    pub fn https(mut self, https: Https) -> Self {
        self.https = Some(https);
        self
    }

    /// Called with the head of every HTTP response (status and headers), for a protocol
    /// view; see [`crate::ClientBuilder::on_http_response`].
    pub fn on_response(
        mut self,
        f: impl Fn(&super::HttpResponse<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.on_response = Some(super::observe::ResponseFn(Arc::new(f)));
        self
    }

    pub(crate) fn on_response_fn(mut self, f: Option<super::observe::ResponseFn>) -> Self {
        self.on_response = f;
        self
    }

    /// Builds the transport. It opens no connection until the first message.
    pub fn build(self) -> StreamableHttp {
        let pool = new_pool(
            &self.uri,
            self.connect_timeout,
            self.pool_idle_timeout,
            self.https.as_ref(),
        );
        StreamableHttp {
            shared: Arc::new(Shared {
                pool,
                origin: origin_of(&self.uri),
                uri: self.uri,
                headers: self.headers,
                session: Mutex::new(None),
                max_message_size: self.max_message_size,
                on_response: self.on_response,
            }),
        }
    }
}

pub(crate) fn new_pool(
    uri: &Uri,
    connect: Option<Duration>,
    idle: Option<Duration>,
    https: Option<&Https>,
) -> Pool {
    Pool::new(
        uri,
        connect.unwrap_or(Duration::from_secs(10)),
        idle.unwrap_or(Duration::from_secs(90)),
        https,
    )
}

pub(crate) fn origin_of(uri: &Uri) -> Option<String> {
    let scheme = uri.scheme_str()?;
    let authority = uri.authority()?;
    let port = authority
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    Some(format!(
        "{scheme}://{}:{port}",
        authority.host().to_ascii_lowercase()
    ))
}

/// The Streamable HTTP transport: every message is a POST to one endpoint, and each request's
/// answer is a JSON body or an SSE stream read event by event.
///
/// HTTP/1.1 over plain TCP for `http://` URLs; for `https://` URLs, TLS (rustls) with HTTP/2
/// or HTTP/1.1 as the server chooses by ALPN, configured with [`StreamableHttpBuilder::https`]
/// (one HTTP/2 connection carries every request). HTTP/1.1 keep-alive connections are pooled, `TCP_NODELAY` on: a connection is reused once
/// the body of its previous response has been read to the end, a response dropped early (a
/// cancelled call) closes its connection, and at most 32 idle connections are kept, each for
/// [`StreamableHttpBuilder::pool_idle_timeout`]. The session id
/// (`Mcp-Session-Id`) is adopted from whichever response carries one and sent on every later
/// request; [`Transport::close`] ends it with `DELETE`. Clones share the pool and the session.
#[derive(Debug, Clone)]
pub struct StreamableHttp {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    pool: Pool,
    uri: Uri,
    origin: Option<String>,
    headers: HeaderMap,
    session: Mutex<Option<HeaderValue>>,
    max_message_size: usize,
    on_response: Option<super::observe::ResponseFn>,
}

impl StreamableHttp {
    /// A builder for a transport posting to `uri` (`http://host:port/mcp` or
    /// `https://host/mcp`).
    pub fn builder(uri: Uri) -> StreamableHttpBuilder {
        StreamableHttpBuilder {
            uri,
            headers: HeaderMap::new(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            connect_timeout: None,
            pool_idle_timeout: None,
            https: None,
            on_response: None,
        }
    }

    /// A transport posting to `uri` with default settings.
    pub fn new(uri: Uri) -> Self {
        Self::builder(uri).build()
    }

    /// The endpoint this transport posts to.
    pub fn uri(&self) -> &Uri {
        &self.shared.uri
    }

    /// The HTTP version of the last connection opened (HTTP/2 when an `https://` server chose
    /// it by ALPN), or `None` before the first.
    pub fn http_version(&self) -> Option<http::Version> {
        self.shared.pool.http_version()
    }

    fn session(&self) -> Option<HeaderValue> {
        self.shared
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn adopt_session(&self, headers: &HeaderMap) {
        if let Some(id) = headers.get(SESSION_HEADER) {
            // Visible ASCII only (0x21-0x7E); ignore anything else rather than echo it.
            if !id.is_empty() && id.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b)) {
                *self
                    .shared
                    .session
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(id.clone());
            }
        }
    }

    fn request(&self, method: Method, headers: HeaderMap, body: Bytes) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = self.shared.uri.clone();
        // The message's headers are the base (no second map is built per request); a header
        // set for every request is added where the message has none of that name.
        let mut h = headers;
        // No `reserve` for the usual handful of headers: the map's first allocation holds them,
        // and reserving more reallocates it on every request.
        if !self.shared.headers.is_empty() {
            h.reserve(self.shared.headers.keys_len() + 3);
        }
        for name in self.shared.headers.keys() {
            if !h.contains_key(name) {
                for value in self.shared.headers.get_all(name) {
                    h.append(name.clone(), value.clone());
                }
            }
        }
        if let Some(session) = self.session() {
            h.insert(SESSION_HEADER, session);
        }
        *request.headers_mut() = h;
        request
    }

    /// POSTs `message`. The request is built and handed to the pool before the returned future
    /// is first polled, and the steps after the response are chained rather than awaited in one
    /// `async` block (which would hold the pool's future twice), so the future, boxed per call
    /// by [`Transport::send`], stays small.
    fn post(
        &self,
        message: Outbound,
    ) -> impl Future<Output = Result<Delivery, TransportError>> + Send + '_ {
        let mut request = self.request(Method::POST, message.headers, message.body);
        let h = request.headers_mut();
        h.insert(CONTENT_TYPE, JSON);
        h.insert(ACCEPT, ACCEPT_BOTH);
        let is_request = matches!(message.kind, OutboundKind::Request(_));
        let raw_answer = message.raw_answer;
        self.shared
            .pool
            .request(request)
            .and_then(move |response| self.answer(response, is_request, raw_answer))
    }

    /// What the response to a POST delivers.
    async fn answer(
        &self,
        response: http::Response<PooledBody>,
        is_request: bool,
        raw_answer: bool,
    ) -> Result<Delivery, TransportError> {
        self.adopt_session(response.headers());
        let status = response.status();
        super::observe::show_response(
            self.shared.on_response.as_ref(),
            &Method::POST,
            &self.shared.uri,
            status,
            response.headers(),
        );
        let limit = self.shared.max_message_size;
        if !status.is_success() {
            // Boxed: rare, and its future would otherwise make every call's larger.
            return Err(Box::pin(status_error(response, limit)).await);
        }
        if status == http::StatusCode::ACCEPTED || !is_request {
            // Drain what little there is so the connection returns to the pool.
            let _ = read_bounded(response.into_body(), 64 * 1024).await;
            return Ok(Delivery::Accepted);
        }
        // The two expected media types are told apart without allocating; anything else is
        // named in the error.
        // The exact values servers send are matched as bytes first, without checking the text.
        let json = match response
            .headers()
            .get(CONTENT_TYPE)
            .map(HeaderValue::as_bytes)
        {
            Some(b"application/json") => Some(true),
            Some(b"text/event-stream") => Some(false),
            _ => match media_type(response.headers()) {
                Some(m) if m.eq_ignore_ascii_case("application/json") => Some(true),
                Some(m) if m.eq_ignore_ascii_case("text/event-stream") => Some(false),
                _ => None,
            },
        };
        match json {
            Some(true) => {
                let body = read_bounded(response.into_body(), limit).await?;
                if raw_answer {
                    return Ok(Delivery::Json(super::RawAnswer(body)));
                }
                let message = super::parse_message(&body)?;
                Ok(Delivery::Stream(Box::pin(futures::stream::once(
                    async move { Ok(Inbound::new(message)) },
                ))))
            }
            Some(false) => Ok(Delivery::Stream(sse_stream(response.into_body(), limit))),
            None => {
                let what = media_type(response.headers())
                    .unwrap_or("none")
                    .to_ascii_lowercase();
                Err(TransportError::Protocol(format!(
                    "unexpected content type {what:?}"
                )))
            }
        }
    }
}

/// The media type of a response, lowercased and without parameters.
pub(crate) fn content_type(headers: &HeaderMap) -> Option<String> {
    media_type(headers).map(str::to_ascii_lowercase)
}

/// The media type of a response as sent (any case), without parameters.
fn media_type(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    Some(value.split(';').next().unwrap_or("").trim())
}

pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

pub(crate) async fn status_error(
    response: http::Response<PooledBody>,
    limit: usize,
) -> TransportError {
    let status = response.status().as_u16();
    let content_type = content_type(response.headers());
    let www_authenticate = www_authenticate(response.headers());
    let dpop_nonce = response
        .headers()
        .get("dpop-nonce")
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= 1024)
        .map(str::to_owned);
    let retry_after_secs = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::limited::parse_retry_after);
    let body = read_bounded(response.into_body(), limit.min(1024 * 1024))
        .await
        .unwrap_or_default();
    TransportError::Status {
        status,
        content_type,
        body,
        www_authenticate,
        dpop_nonce,
        retry_after_secs,
    }
}

/// The `WWW-Authenticate` challenges of a response, every header line joined with `, ` (as
/// RFC 9110 §5.3 allows), bounded to 8 KiB; `None` when there is none or it is not text.
pub(crate) fn www_authenticate(headers: &HeaderMap) -> Option<String> {
    let mut joined = String::new();
    for value in headers.get_all(http::header::WWW_AUTHENTICATE) {
        let text = value.to_str().ok()?;
        if joined.len() + text.len() + 2 > 8 * 1024 {
            break;
        }
        if !joined.is_empty() {
            joined.push_str(", ");
        }
        joined.push_str(text);
    }
    (!joined.is_empty()).then_some(joined)
}

/// Reads a whole body, failing once it passes `limit` bytes.
pub(crate) async fn read_bounded(
    mut body: PooledBody,
    limit: usize,
) -> Result<Bytes, TransportError> {
    // A declared length past the limit is refused before a byte of the body is read.
    if body.size_hint().lower() > limit as u64 {
        return Err(TransportError::TooLarge { limit });
    }
    // A body in one frame (the usual case) is handed back as that frame, without copying it;
    // the frames of a longer body are gathered.
    let mut first: Option<Bytes> = None;
    let mut out = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| TransportError::Http(error_chain(&e)))?;
        if let Ok(data) = frame.into_data() {
            let held = first.as_ref().map_or(0, Bytes::len) + out.len();
            if held + data.len() > limit {
                return Err(TransportError::TooLarge { limit });
            }
            match first.take() {
                None if out.is_empty() => first = Some(data),
                Some(previous) => {
                    out.reserve(previous.len() + data.len());
                    out.extend_from_slice(&previous);
                    out.extend_from_slice(&data);
                }
                None => out.extend_from_slice(&data),
            }
        }
        // A body whose length was declared ends with its last byte: no poll for the end.
        if body.is_end_stream() {
            break;
        }
    }
    Ok(first.unwrap_or_else(|| out.freeze()))
}

/// Reads an SSE body event by event, never waiting for the end of the body to hand out a
/// message: a question the server pushes arrives while the call is still open.
pub(crate) fn sse_stream(body: PooledBody, limit: usize) -> MessageStream {
    struct State {
        body: PooledBody,
        decoder: SseDecoder,
        done: bool,
    }
    let decoder = SseDecoder::new().with_max_event_size(limit);
    let state = State {
        body,
        decoder,
        done: false,
    };
    Box::pin(futures::stream::unfold(state, |mut s| async move {
        if s.done {
            return None;
        }
        loop {
            match s.decoder.next() {
                Some(Ok(event)) => {
                    if event.event().is_some_and(|kind| kind != "message")
                        || event.data().is_empty()
                    {
                        // Keep-alives and other event types carry no message.
                        continue;
                    }
                    let event_id = Some(s.decoder.last_event_id())
                        .filter(|id| !id.is_empty())
                        .map(str::to_owned);
                    let item = super::parse_message(event.data().as_bytes())
                        .map(|message| Inbound { message, event_id });
                    if item.is_err() {
                        s.done = true;
                    }
                    return Some((item, s));
                }
                Some(Err(SseError::EventTooLarge { limit, .. })) => {
                    s.done = true;
                    return Some((Err(TransportError::TooLarge { limit }), s));
                }
                Some(Err(e)) => {
                    s.done = true;
                    return Some((Err(TransportError::Protocol(e.to_string())), s));
                }
                None => {}
            }
            match s.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        s.decoder.push(&data);
                    }
                }
                Some(Err(e)) => {
                    s.done = true;
                    // A stream whose events carry ids may be resumed after a dropped
                    // connection as after a clean end (what is buffered of a cut event is
                    // sent again after the last id).
                    let last = s.decoder.last_event_id();
                    if !last.is_empty() {
                        tracing::debug!(error = %error_chain(&e), "an SSE stream was cut after an event id");
                        let error = TransportError::Interrupted {
                            last_event_id: last.to_owned(),
                            retry_ms: s.decoder.retry(),
                        };
                        return Some((Err(error), s));
                    }
                    return Some((Err(TransportError::Http(error_chain(&e))), s));
                }
                None => {
                    s.done = true;
                    if s.decoder.buffered_len() > 0 {
                        return Some((
                            Err(TransportError::Protocol(
                                "SSE stream ended mid-event".into(),
                            )),
                            s,
                        ));
                    }
                    let last = s.decoder.last_event_id();
                    if !last.is_empty() {
                        let error = TransportError::Interrupted {
                            last_event_id: last.to_owned(),
                            retry_ms: s.decoder.retry(),
                        };
                        return Some((Err(error), s));
                    }
                    return None;
                }
            }
        }
    }))
}

impl Transport for StreamableHttp {
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>> {
        Box::pin(self.post(message))
    }

    fn incoming(&self) -> Option<MessageStream> {
        None
    }

    fn open_stream(
        &self,
        headers: HeaderMap,
        last_event_id: Option<String>,
    ) -> BoxFuture<'_, Result<MessageStream, TransportError>> {
        Box::pin(async move {
            let mut request = self.request(Method::GET, headers, Bytes::new());
            request.headers_mut().insert(ACCEPT, EVENT_STREAM);
            if let Some(id) = last_event_id.and_then(|id| HeaderValue::try_from(id).ok()) {
                request.headers_mut().insert(LAST_EVENT_ID, id);
            }
            let response = self.shared.pool.request(request).await?;
            super::observe::show_response(
                self.shared.on_response.as_ref(),
                &Method::GET,
                &self.shared.uri,
                response.status(),
                response.headers(),
            );
            let limit = self.shared.max_message_size;
            if !response.status().is_success() {
                // Boxed: rare, and its future would otherwise make every call's larger.
                return Err(Box::pin(status_error(response, limit)).await);
            }
            if content_type(response.headers()).as_deref() != Some("text/event-stream") {
                return Err(TransportError::Protocol(
                    "GET stream is not text/event-stream".into(),
                ));
            }
            Ok(sse_stream(response.into_body(), limit))
        })
    }

    fn info(&self) -> TransportInfo {
        TransportInfo {
            request_streams: true,
            http: true,
            legacy_sse: false,
            origin: self.shared.origin.clone(),
        }
    }

    fn session_id(&self) -> Option<String> {
        self.session()
            .and_then(|v| v.to_str().ok().map(str::to_owned))
    }

    fn reset_session(&self) {
        *self
            .shared
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            if self.session().is_none() {
                return Ok(());
            }
            let request = self.request(Method::DELETE, HeaderMap::new(), Bytes::new());
            self.reset_session();
            let response = self.shared.pool.request(request).await?;
            let status = response.status();
            super::observe::show_response(
                self.shared.on_response.as_ref(),
                &Method::DELETE,
                &self.shared.uri,
                status,
                response.headers(),
            );
            let response_headers = &response.headers().clone();
            let _ = read_bounded(response.into_body(), 64 * 1024).await;
            // 405: the server does not let clients end sessions; 404: it already ended.
            if status.is_success() || status.as_u16() == 405 || status.as_u16() == 404 {
                Ok(())
            } else {
                Err(TransportError::Status {
                    status: status.as_u16(),
                    content_type: None,
                    body: Bytes::new(),
                    www_authenticate: www_authenticate(response_headers),
                    dpop_nonce: None,
                    retry_after_secs: None,
                })
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The future `send` boxes for every message stays within glibc's per-thread cache of small
    /// blocks (requests up to 1032 bytes): a larger block takes the allocator's slow path, about
    /// a thousand instructions more per call.
    #[test]
    fn the_future_boxed_per_message_is_small() {
        let transport = StreamableHttp::builder("http://127.0.0.1:1/mcp".parse().unwrap()).build();
        let message = Outbound {
            kind: OutboundKind::Request(mcp_wire::jsonrpc::Id::Number(1)),
            body: Bytes::new(),
            headers: HeaderMap::new(),
            raw_answer: true,
        };
        let size = size_of_val(&transport.post(message));
        assert!(size <= 1024, "{size} bytes");
    }
}
