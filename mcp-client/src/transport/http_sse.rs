//! HTTP+SSE, the transport of 2024-11-05: a `GET` stream for everything the server says, and
//! POSTs to the URI the stream names in its first `endpoint` event.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::uri::PathAndQuery;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::pool::{Pool, PooledBody};
use super::streamable::{
    DEFAULT_MAX_MESSAGE_SIZE, content_type, error_chain, new_pool, origin_of, read_bounded,
    status_error,
};
use super::{
    BoxFuture, Delivery, Inbound, MessageStream, Outbound, OutboundKind, Router, Transport,
    TransportError, TransportInfo,
};
use mcp_wire::sse::SseDecoder;

/// Builds an [`HttpSse`] transport.
#[derive(Debug, Clone)]
pub struct HttpSseBuilder {
    uri: Uri,
    headers: HeaderMap,
    max_message_size: usize,
    endpoint_timeout: Duration,
}

impl HttpSseBuilder {
    /// Adds a header sent on the `GET` and on every POST, such as `Authorization`.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// The largest SSE event accepted. Default is 16 MiB.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// How long to wait for the `endpoint` event after the stream opens. Default is 10 seconds.
    pub fn endpoint_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint_timeout = timeout;
        self
    }

    /// Opens the stream and waits for the `endpoint` event.
    pub async fn connect(self) -> Result<HttpSse, TransportError> {
        let pool = new_pool(&self.uri, None, None);
        self.connect_with(pool).await
    }

    pub(crate) async fn connect_with(self, pool: Pool) -> Result<HttpSse, TransportError> {
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.method_mut() = Method::GET;
        *request.uri_mut() = self.uri.clone();
        for (name, value) in &self.headers {
            request.headers_mut().append(name, value.clone());
        }
        request
            .headers_mut()
            .insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let response = pool.request(request).await?;
        if !response.status().is_success() {
            return Err(status_error(response, self.max_message_size).await);
        }
        if content_type(response.headers()).as_deref() != Some("text/event-stream") {
            return Err(TransportError::Protocol(
                "the SSE endpoint is not text/event-stream".into(),
            ));
        }
        let router = Router::new();
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let reader = tokio::spawn(read_stream(
            response.into_body(),
            SseDecoder::new().with_max_event_size(self.max_message_size),
            router.clone(),
            endpoint_tx,
        ));
        let endpoint = match tokio::time::timeout(self.endpoint_timeout, endpoint_rx).await {
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
                reader,
                max_message_size: self.max_message_size,
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

async fn read_stream(
    mut body: PooledBody,
    mut decoder: SseDecoder,
    router: Router,
    endpoint: oneshot::Sender<String>,
) {
    let mut endpoint = Some(endpoint);
    let error = loop {
        match decoder.next() {
            Some(Ok(event)) => {
                match event.event().unwrap_or("message") {
                    "endpoint" => {
                        if let Some(tx) = endpoint.take() {
                            let _ = tx.send(event.into_data());
                        }
                    }
                    "message" if !event.data().is_empty() => {
                        let event_id = Some(decoder.last_event_id())
                            .filter(|id| !id.is_empty())
                            .map(str::to_owned);
                        match super::parse_message(event.data().as_bytes()) {
                            Ok(message) => router.dispatch(Inbound { message, event_id }),
                            Err(e) => {
                                tracing::warn!(error = %e, "unreadable message on the SSE stream")
                            }
                        }
                    }
                    _ => {}
                }
                continue;
            }
            None => {}
            Some(Err(e)) => break Some(TransportError::Protocol(format!("SSE stream: {e}"))),
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    decoder.push(&data);
                }
            }
            Some(Err(e)) => break Some(TransportError::Http(error_chain(&e))),
            None => break None,
        }
    };
    router.close(error);
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
    reader: JoinHandle<()>,
    max_message_size: usize,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl HttpSse {
    /// A builder for the stream at `uri` (`http://host:port/sse`).
    pub fn builder(uri: Uri) -> HttpSseBuilder {
        HttpSseBuilder {
            uri,
            headers: HeaderMap::new(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            endpoint_timeout: Duration::from_secs(10),
        }
    }

    /// The URI messages are POSTed to, from the `endpoint` event.
    pub fn endpoint(&self) -> &Uri {
        &self.shared.endpoint
    }

    async fn post(&self, message: Outbound) -> Result<Delivery, TransportError> {
        let pending = match &message.kind {
            OutboundKind::Request(id) => Some(self.shared.router.register(id.clone())),
            _ => None,
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
        let response = self.shared.pool.request(request).await?;
        if !response.status().is_success() {
            return Err(status_error(response, self.shared.max_message_size).await);
        }
        let _ = read_bounded(response.into_body(), 64 * 1024).await;
        Ok(match pending {
            Some(stream) => Delivery::Stream(stream),
            None => Delivery::Accepted,
        })
    }
}

impl Transport for HttpSse {
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>> {
        Box::pin(self.post(message))
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
            self.shared.router.close(None);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
