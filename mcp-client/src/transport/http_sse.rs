//! HTTP+SSE, the transport of 2024-11-05: a `GET` stream for everything the server says, and
//! POSTs to the URI the stream names in its first `endpoint` event.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use futures::TryFutureExt;
use futures::future::Either;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::uri::PathAndQuery;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};
use http_body_util::Full;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::event_stream::{EventStream, Read, Reader};
use super::pool::Pool;
use super::router::{Pending, Routed};
use super::streamable::{
    DEFAULT_MAX_MESSAGE_SIZE, content_type, new_pool, origin_of, read_bounded, status_error,
};
use super::tls::Https;
use super::{
    BoxFuture, Delivery, MessageStream, Outbound, OutboundKind, Router, Transport, TransportError,
    TransportInfo,
};
use mcp_wire::sse::SseDecoder;

/// Builds an [`HttpSse`] transport.
#[derive(Debug, Clone)]
pub struct HttpSseBuilder {
    uri: Uri,
    headers: HeaderMap,
    /// Headers of the `GET` alone (the OAuth client's credentials for the stream).
    stream_headers: HeaderMap,
    max_message_size: usize,
    max_queued: usize,
    max_queued_bytes: usize,
    endpoint_timeout: Duration,
    https: Option<Https>,
    on_response: Option<super::observe::ResponseFn>,
}

impl HttpSseBuilder {
    /// Adds a header sent on the `GET` and on every POST, such as `Authorization`.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// Headers sent on the `GET` that opens the stream and not on the POSTs (the POSTs of an
    /// OAuth client carry their own credentials, made per request).
    pub(crate) fn stream_headers(mut self, headers: HeaderMap) -> Self {
        self.stream_headers = headers;
        self
    }

    /// The largest SSE event accepted. Default is 16 MiB.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// How many messages that are not responses (notifications, the server's requests) read
    /// from the stream wait at most for the client to take them. Default is 1,024
    /// ([`super::DEFAULT_MAX_QUEUED`]). Past it (or past [`HttpSseBuilder::max_queued_bytes`])
    /// they are dropped and counted; responses are never dropped. See [`Router`].
    pub fn max_queued(mut self, messages: usize) -> Self {
        self.max_queued = messages;
        self
    }

    /// How many bytes of such messages (counted as their event data) wait at most. Default is
    /// 16 MiB ([`super::DEFAULT_MAX_QUEUED_BYTES`]).
    pub fn max_queued_bytes(mut self, bytes: usize) -> Self {
        self.max_queued_bytes = bytes;
        self
    }

    /// How long [`HttpSseBuilder::connect`] waits, in all, for the stream to open and its
    /// `endpoint` event to arrive. Default is 10 seconds.
    pub fn endpoint_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint_timeout = timeout;
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

    /// Opens the stream and waits for the `endpoint` event.
    pub async fn connect(self) -> Result<HttpSse, TransportError> {
        let pool = new_pool(&self.uri, None, None, self.https.as_ref());
        self.connect_with(pool).await
    }

    pub(crate) async fn connect_with(self, pool: Pool) -> Result<HttpSse, TransportError> {
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.method_mut() = Method::GET;
        *request.uri_mut() = self.uri.clone();
        for (name, value) in &self.headers {
            request.headers_mut().append(name, value.clone());
        }
        for (name, value) in &self.stream_headers {
            request.headers_mut().insert(name, value.clone());
        }
        request
            .headers_mut()
            .insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let deadline = tokio::time::Instant::now() + self.endpoint_timeout;
        let response = match tokio::time::timeout_at(deadline, pool.request(request)).await {
            Ok(response) => response?,
            Err(_) => {
                return Err(TransportError::Protocol(format!(
                    "the SSE stream did not open within {:?}",
                    self.endpoint_timeout
                )));
            }
        };
        super::observe::show_response(
            self.on_response.as_ref(),
            &Method::GET,
            &self.uri,
            response.status(),
            response.headers(),
        );
        if !response.status().is_success() {
            return Err(status_error(response, self.max_message_size).await);
        }
        if content_type(response.headers()).as_deref() != Some("text/event-stream") {
            return Err(TransportError::Protocol(
                "the SSE endpoint is not text/event-stream".into(),
            ));
        }
        let router = Router::with_limits(self.max_queued, self.max_queued_bytes);
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let stream = EventStream::new(
            response.into_body(),
            SseDecoder::new().with_max_event_size(self.max_message_size),
            router.clone(),
            endpoint_tx,
        );
        let reader = tokio::spawn(stream.clone().run());
        let endpoint = match tokio::time::timeout_at(deadline, endpoint_rx).await {
            Ok(Ok(data)) => data,
            Ok(Err(_)) => {
                reader.abort();
                return Err(TransportError::Protocol(
                    "the stream ended before an endpoint event".into(),
                ));
            }
            Err(_) => {
                reader.abort();
                return Err(TransportError::Protocol(format!(
                    "no endpoint event within {:?}",
                    self.endpoint_timeout
                )));
            }
        };
        let endpoint = match resolve(&self.uri, &endpoint) {
            Ok(uri) => uri,
            Err(e) => {
                reader.abort();
                return Err(e);
            }
        };
        Ok(HttpSse {
            shared: Arc::new(Shared {
                pool,
                origin: origin_of(&self.uri),
                endpoint,
                headers: self.headers,
                router,
                stream,
                reader,
                max_message_size: self.max_message_size,
                on_response: self.on_response,
            }),
        })
    }
}

/// Resolves the `endpoint` event's data against the stream's URI. The endpoint must be on the
/// same origin: a server cannot send the client's messages elsewhere.
fn resolve(base: &Uri, data: &str) -> Result<Uri, TransportError> {
    let data = data.trim();
    let bad = || TransportError::Protocol(format!("bad endpoint {data:?}"));
    if data.contains("://") {
        let uri: Uri = data.parse().map_err(|_| bad())?;
        if origin_of(&uri) != origin_of(base) {
            return Err(TransportError::Protocol(format!(
                "endpoint {data:?} is on another origin"
            )));
        }
        return Ok(uri);
    }
    let path = if data.starts_with('/') {
        data.to_owned()
    } else {
        let base_path = base.path();
        let dir = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
        format!("{}{data}", if dir.is_empty() { "/" } else { dir })
    };
    let path: PathAndQuery = path.parse().map_err(|_| bad())?;
    let mut parts = base.clone().into_parts();
    parts.path_and_query = Some(path);
    Uri::from_parts(parts).map_err(|_| bad())
}

/// The request a success response in `text` answers, read from its text: the id of a text that
/// begins exactly as a success response to it (`{"jsonrpc":"2.0","id":N,"result":`, the shape
/// servers write, checked without reading the rest: see [`canonical_response_id`]), or else of
/// a text that [`success_response_id`] reads as one. `None` for anything else, which is parsed as
/// usual.
pub(super) fn response_id(text: &str) -> Option<i64> {
    canonical_response_id(text).or_else(|| success_response_id(text))
}

/// The id of a text that begins `{"jsonrpc":"2.0","id":N,"result":`, without spaces and with
/// `N` an integer written as JSON writes it (no leading zero, no `-0`) that fits an `i64`.
///
/// The server addressed such a text to request `N` as a success response, so it goes to that
/// request without the rest being read here: the request reads it whole, once (into the
/// caller's type, or as a message). When the rest is not what the beginning says (not JSON,
/// another member such as `method`, a second `id`), the request fails with a protocol error at
/// once instead of waiting for its timeout while the message is dropped.
fn canonical_response_id(text: &str) -> Option<i64> {
    const HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &str = r#","result":"#;
    let rest = text.strip_prefix(HEAD)?;
    let digits = rest.strip_prefix('-').unwrap_or(rest);
    let len = digits.bytes().take_while(u8::is_ascii_digit).count();
    let number = &digits[..len];
    let negative = digits.len() != rest.len();
    if number.is_empty()
        || (number.len() > 1 && number.starts_with('0'))
        || (negative && number == "0")
        || !digits[len..].starts_with(RESULT)
    {
        return None;
    }
    rest[..rest.len() - digits.len() + len].parse().ok()
}

/// The id of `text` when it is a success response that [`super::parse_message`] reads as one:
/// `jsonrpc` (exactly `"2.0"`, no escapes), a whole-number id that fits an `i64`, and a `result`
/// read the way a JSON value is read (same number range and nesting limit), without building it.
/// `None` for anything else (other members, duplicates, requests, errors), which is parsed as
/// usual.
fn success_response_id(text: &str) -> Option<i64> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Envelope<'a> {
        #[serde(borrow)]
        jsonrpc: &'a str,
        id: i64,
        #[serde(rename = "result")]
        _result: AnyValue,
    }
    let envelope: Envelope<'_> = serde_json::from_str(text).ok()?;
    (envelope.jsonrpc == "2.0").then_some(envelope.id)
}

/// Any JSON value, read as [`serde_json::Value`] reads one (through `deserialize_any`, so with
/// the same checks) and dropped as it is read.
struct AnyValue;

impl<'de> serde::Deserialize<'de> for AnyValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Self)
    }
}

impl<'de> serde::de::Visitor<'de> for AnyValue {
    type Value = Self;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<Self>()?.is_some() {}
        Ok(Self)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<Self, Self>()?.is_some() {}
        Ok(Self)
    }
}

/// The HTTP+SSE transport of 2024-11-05.
///
/// [`HttpSseBuilder::connect`] opens the `GET` stream and waits for its `endpoint` event; every
/// message is then POSTed there, and every answer arrives on the stream, routed to the request
/// that waits for it. Dropping the transport closes the stream.
#[derive(Debug, Clone)]
pub struct HttpSse {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    pool: Pool,
    origin: Option<String>,
    endpoint: Uri,
    headers: HeaderMap,
    router: Router,
    /// The event stream, read by the requests waiting on it and else by `reader`.
    stream: Arc<EventStream>,
    reader: JoinHandle<()>,
    max_message_size: usize,
    on_response: Option<super::observe::ResponseFn>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl HttpSse {
    /// A builder for the stream at `uri` (`http://host:port/sse` or `https://host/sse`; see
    /// [`HttpSseBuilder::https`]).
    pub fn builder(uri: Uri) -> HttpSseBuilder {
        HttpSseBuilder {
            uri,
            headers: HeaderMap::new(),
            stream_headers: HeaderMap::new(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_queued: super::DEFAULT_MAX_QUEUED,
            max_queued_bytes: super::DEFAULT_MAX_QUEUED_BYTES,
            endpoint_timeout: Duration::from_secs(10),
            https: None,
            on_response: None,
        }
    }

    /// The URI messages are POSTed to, from the `endpoint` event.
    pub fn endpoint(&self) -> &Uri {
        &self.shared.endpoint
    }

    /// POSTs `message`. Everything up to handing the request to the pool happens before the
    /// returned future is first polled, so the future (boxed per call by [`Transport::send`])
    /// holds neither the message nor the request.
    ///
    /// A request whose caller reads its answer itself (`Outbound::raw_answer`) reads the event
    /// stream while it waits, from its first poll (the answer may come before the POST's own
    /// response), and gets a success response as its text ([`Delivery::Json`]).
    fn post(
        &self,
        message: Outbound,
    ) -> impl Future<Output = Result<Delivery, TransportError>> + Send + '_ {
        let router = &self.shared.router;
        let (mine, stream) = match &message.kind {
            OutboundKind::Request(id) if message.raw_answer => {
                (Some((id.clone(), router.register_raw(id.clone()))), None)
            }
            OutboundKind::Request(id) => (None, Some(router.register(id.clone()))),
            _ => (None, None),
        };
        let mut request = Request::new(Full::new(message.body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.shared.endpoint.clone();
        let h = request.headers_mut();
        for (name, value) in &self.shared.headers {
            h.append(name, value.clone());
        }
        for (name, value) in message.headers {
            if let Some(name) = name {
                h.insert(name, value);
            }
        }
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        // Chained rather than awaited in one `async` block, which would hold the pool's future
        // twice (once as captured, once as awaited).
        let max_message_size = self.shared.max_message_size;
        let shared = &self.shared;
        let posting = self
            .shared
            .pool
            .request(request)
            .and_then(move |response| async move {
                super::observe::show_response(
                    shared.on_response.as_ref(),
                    &Method::POST,
                    &shared.endpoint,
                    response.status(),
                    response.headers(),
                );
                if !response.status().is_success() {
                    // Boxed: rare, and its future would otherwise make every call's larger.
                    return Err(Box::pin(status_error(response, max_message_size)).await);
                }
                let _ = read_bounded(response.into_body(), 64 * 1024).await;
                Ok(())
            });
        match mine {
            Some((id, pending)) => Either::Left(Lead {
                posting,
                posted: false,
                pending,
                reader: Reader::new(&self.shared.stream, id),
                answer: None,
            }),
            None => Either::Right(posting.map_ok(move |()| match stream {
                Some(stream) => Delivery::Stream(stream),
                None => Delivery::Accepted,
            })),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request that reads its own answer: POSTs it and, from the first poll until the answer
    /// is there, reads the event stream for everyone (see [`EventStream`]).
    struct Lead<'a, F> {
        #[pin]
        posting: F,
        posted: bool,
        pending: Pending,
        reader: Reader<'a>,
        // The success response, read off the stream before the POST was answered.
        answer: Option<Bytes>,
    }
}

impl<F: Future<Output = Result<(), TransportError>>> Future for Lead<'_, F> {
    type Output = Result<Delivery, TransportError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if this.answer.is_none() {
            match this.reader.read(cx) {
                Read::Mine(text) => {
                    this.pending.settle();
                    this.reader.leave();
                    *this.answer = Some(text);
                }
                // The end was routed: `pending` has the error.
                Read::Ended => this.reader.leave(),
                Read::Pending => {}
            }
        }
        if !*this.posted {
            ready!(this.posting.poll(cx))?;
            *this.posted = true;
        }
        if let Some(text) = this.answer.take() {
            return Poll::Ready(Ok(Delivery::Json(super::RawAnswer(text))));
        }
        let routed = ready!(Pin::new(this.pending).poll(cx));
        this.reader.leave();
        Poll::Ready(Ok(match routed {
            Routed::Raw(text) => Delivery::Json(super::RawAnswer(text)),
            Routed::Message(item) => {
                Delivery::Stream(Box::pin(futures::stream::once(async move { item })))
            }
        }))
    }
}

impl Transport for HttpSse {
    fn send_uri(&self) -> Option<String> {
        Some(self.shared.endpoint.to_string())
    }

    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>> {
        Box::pin(self.post(message))
    }

    fn dropped(&self) -> u64 {
        self.shared.router.dropped()
    }

    fn incoming(&self) -> Option<MessageStream> {
        self.shared.router.incoming()
    }

    fn info(&self) -> TransportInfo {
        TransportInfo {
            request_streams: false,
            http: true,
            legacy_sse: true,
            origin: self.shared.origin.clone(),
        }
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            self.shared.reader.abort();
            self.shared.stream.close();
            Ok(())
        })
    }
}

#[cfg(test)]
#[path = "http_sse_stream_tests.rs"]
mod stream_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_wire::jsonrpc::Id;

    #[test]
    fn a_response_is_routed_by_its_text_only_when_it_parses_as_a_success_response() {
        let cases: &[(&str, Option<i64>)] = &[
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"a":[1,"x\"y",null,true,2.5]}}"#,
                Some(7),
            ),
            (r#" {"result":{},"id":-3,"jsonrpc":"2.0"} "#, Some(-3)),
            (r#"{"jsonrpc":"2.0","id":7,"result":1e400}"#, None),
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"a":1},"extra":1}"#,
                None,
            ),
            (r#"{"jsonrpc":"2.0","id":7,"id":8,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":7,"result":{},"result":{}}"#, None),
            (
                r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}"#,
                None,
            ),
            (r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, None),
            (r#"{"jsonrpc":"1.0","id":7,"result":{}}"#, None),
            (r#"{"jsonrpc":"2\u002e0","id":7,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":"7","result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":7.0,"result":{}}"#, None),
            (
                r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":{}}"#,
                None,
            ),
            (r#"{"jsonrpc":"2.0","id":7,"result":{}"#, None),
            (r#"{"jsonrpc":"2.0","id":7,"result":{}} x"#, None),
        ];
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        for (text, expected) in cases.iter().copied().chain([(deep.as_str(), None)]) {
            // Spaced out of the canonical beginning, so only the exact check can route it.
            let text = &text.replacen(r#"{"jsonrpc":"#, r#"{ "jsonrpc":"#, 1);
            assert_eq!(canonical_response_id(text), None, "{text}");
            assert_eq!(response_id(text), expected, "{text}");
            // What the text routes: exactly what parsing it reads as a success response.
            let parsed = match crate::transport::parse_message(text.as_bytes()) {
                Ok(mcp_wire::jsonrpc::Message::Response(r)) if r.outcome.is_ok() => r.id,
                _ => None,
            };
            if let Some(id) = expected {
                assert_eq!(parsed, Some(Id::Number(id)), "{text}");
            }
        }
    }

    #[test]
    fn a_text_that_begins_as_a_success_response_is_routed_by_its_beginning() {
        let cases: &[(&str, Option<i64>)] = &[
            (r#"{"jsonrpc":"2.0","id":7,"result":{}}"#, Some(7)),
            (r#"{"jsonrpc":"2.0","id":0,"result":{}}"#, Some(0)),
            (r#"{"jsonrpc":"2.0","id":-12,"result":{}}"#, Some(-12)),
            (
                r#"{"jsonrpc":"2.0","id":9223372036854775807,"result":{}}"#,
                Some(i64::MAX),
            ),
            (
                r#"{"jsonrpc":"2.0","id":-9223372036854775808,"result":{}}"#,
                Some(i64::MIN),
            ),
            // The rest is not read: the request it names reads it, and fails on it.
            (r#"{"jsonrpc":"2.0","id":7,"result":{"#, Some(7)),
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{},"method":"m"}"#,
                Some(7),
            ),
            (r#"{"jsonrpc":"2.0","id":7,"result":{},"id":8}"#, Some(7)),
            // Not the canonical beginning: left to the exact check.
            (r#"{"jsonrpc":"2.0","id":07,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":-0,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":-,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":7.0,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":7e0,"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":7 ,"result":{}}"#, None),
            (
                r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":{}}"#,
                None,
            ),
            (r#"{"jsonrpc":"2.0","id":7,"error":{}}"#, None),
            (r#"{"jsonrpc":"2.0","id":"7","result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","method":"m","id":7,"result":{}}"#, None),
        ];
        for &(text, expected) in cases {
            assert_eq!(canonical_response_id(text), expected, "{text}");
        }
    }

    fn result_pieces() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            Just("["),
            Just("]"),
            Just("{"),
            Just("}"),
            Just("\"a\""),
            Just("\""),
            Just("\\"),
            Just("u"),
            Just("d800"),
            Just("00e9"),
            Just(":"),
            Just(","),
            Just("1"),
            Just("0"),
            Just("-"),
            Just("."),
            Just("e"),
            Just("E400"),
            Just("null"),
            Just("\u{1}"),
            Just(" "),
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|parts| parts.concat())
    }

    proptest::proptest! {
        #[test]
        fn what_the_exact_check_routes_parses_as_that_success_response(result in result_pieces()) {
            let text = format!(r#"{{ "jsonrpc":"2.0","id":7,"result":{result}}}"#);
            let parsed = match crate::transport::parse_message(text.as_bytes()) {
                Ok(mcp_wire::jsonrpc::Message::Response(r)) if r.outcome.is_ok() => r.id,
                _ => None,
            };
            // Routed by its text exactly when parsing reads it as this success response.
            proptest::prop_assert_eq!(response_id(&text).map(Id::Number), parsed);
        }

        #[test]
        fn what_begins_as_a_success_response_parses_as_that_response_or_not_at_all(
            result in result_pieces(),
        ) {
            let text = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result}}}"#);
            proptest::prop_assert_eq!(response_id(&text), Some(7));
            // Never another message (a request, another id, an error response): the request it
            // is routed to gets either its response or a protocol error.
            match crate::transport::parse_message(text.as_bytes()) {
                Ok(mcp_wire::jsonrpc::Message::Response(r)) => {
                    proptest::prop_assert_eq!(r.id, Some(Id::Number(7)));
                    proptest::prop_assert!(r.outcome.is_ok());
                }
                Ok(other) => proptest::prop_assert!(false, "parsed as {other:?}"),
                Err(_) => {}
            }
        }
    }

    #[test]
    fn endpoint_resolution() {
        let base: Uri = "http://127.0.0.1:8080/app/sse".parse().unwrap();
        let cases: &[(&str, Option<&str>)] = &[
            (
                "/messages?session_id=1",
                Some("http://127.0.0.1:8080/messages?session_id=1"),
            ),
            (
                "messages?s=2",
                Some("http://127.0.0.1:8080/app/messages?s=2"),
            ),
            ("http://127.0.0.1:8080/m", Some("http://127.0.0.1:8080/m")),
            ("http://evil.example:8080/m", None),
            ("/bad path", None),
        ];
        for (data, expected) in cases {
            let got = resolve(&base, data).ok().map(|u| u.to_string());
            assert_eq!(got.as_deref(), *expected, "{data}");
        }
    }
    /// The future `send` boxes for every message stays within glibc's per-thread cache of small
    /// blocks (requests up to 1032 bytes): a larger block takes the allocator's slow path, about
    /// a thousand instructions more per call.
    #[tokio::test]
    async fn the_future_boxed_per_message_is_small() {
        // A stream that names its endpoint and stays open.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri: Uri = format!("http://{}/sse", listener.local_addr().unwrap())
            .parse()
            .unwrap();
        let server = tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            while !head.ends_with(b"\r\n\r\n") {
                let mut byte = [0u8];
                if socket.read(&mut byte).await.unwrap() == 0 {
                    return;
                }
                head.push(byte[0]);
            }
            let event = "event: endpoint\ndata: /messages\n\n";
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
                event.len()
            );
            socket.write_all(reply.as_bytes()).await.unwrap();
            // Held open until the test ends.
            let _ = socket.read(&mut [0u8; 1]).await;
        });
        let transport = HttpSse::builder(uri).connect().await.unwrap();
        for raw_answer in [true, false] {
            let message = Outbound {
                kind: OutboundKind::Request(Id::Number(1)),
                body: Bytes::new(),
                headers: HeaderMap::new(),
                raw_answer,
            };
            let size = size_of_val(&transport.post(message));
            assert!(size <= 1024, "{size} bytes");
        }
        server.abort();
    }
}
