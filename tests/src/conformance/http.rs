//! A minimal HTTP/1.1 client for the checker: one connection per request, so every probe sees
//! exactly what the server does with it, and SSE bodies read event by event.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_wire::sse::{Event, SseDecoder};
use tokio::net::TcpStream;

/// How long one read may take before the checker gives up on it.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an HTTP exchange failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The URL is not `http://host:port/path`.
    #[error("invalid URL {0:?} (only http:// is supported)")]
    Url(String),
    /// Connecting, sending or reading failed.
    #[error("{0}")]
    Io(String),
    /// Nothing arrived in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

/// A response whose body has not been read yet.
#[derive(Debug)]
pub struct Response {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    body: Incoming,
}

impl Response {
    /// The `Content-Type` without parameters, lowercased.
    pub fn content_type(&self) -> Option<String> {
        let value = self
            .headers
            .get(http::header::CONTENT_TYPE)?
            .to_str()
            .ok()?;
        Some(value.split(';').next()?.trim().to_ascii_lowercase())
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// The whole body, within [`READ_TIMEOUT`].
    pub async fn bytes(self) -> Result<Bytes, HttpError> {
        match tokio::time::timeout(READ_TIMEOUT, self.body.collect()).await {
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(e)) => Err(HttpError::Io(e.to_string())),
            Err(_) => Err(HttpError::Timeout(READ_TIMEOUT)),
        }
    }

    /// Reads the body as a stream of SSE events.
    pub fn events(self) -> Events {
        Events {
            body: self.body,
            decoder: SseDecoder::new(),
            ended: false,
        }
    }
}

/// An SSE body read event by event.
#[derive(Debug)]
pub struct Events {
    body: Incoming,
    decoder: SseDecoder,
    ended: bool,
}

impl Events {
    /// The next event, `Ok(None)` when the stream ended, an error after `timeout` without one.
    pub async fn next(&mut self, timeout: Duration) -> Result<Option<Event>, HttpError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match self.decoder.next() {
                Some(Ok(event)) => return Ok(Some(event)),
                Some(Err(e)) => return Err(HttpError::Io(format!("malformed SSE: {e}"))),
                None if self.ended => return Ok(None),
                None => {}
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame()).await;
            match frame {
                Err(_) => return Err(HttpError::Timeout(timeout)),
                Ok(None) => {
                    self.ended = true;
                    self.decoder.push(b"\n\n");
                }
                Ok(Some(Err(e))) => return Err(HttpError::Io(e.to_string())),
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.decoder.push(&data);
                    }
                }
            }
        }
    }
}

/// Resolves `reference` (an absolute URL or a path) against `base`.
pub fn resolve(base: &Uri, reference: &str) -> Result<Uri, HttpError> {
    if reference.starts_with("http://") || reference.starts_with("https://") {
        return reference
            .parse()
            .map_err(|_| HttpError::Url(reference.to_owned()));
    }
    let authority = base
        .authority()
        .ok_or_else(|| HttpError::Url(base.to_string()))?;
    let path = if reference.starts_with('/') {
        reference.to_owned()
    } else {
        format!("/{reference}")
    };
    format!("http://{authority}{path}")
        .parse()
        .map_err(|_| HttpError::Url(reference.to_owned()))
}

/// Sends one request on a new connection and returns the response head.
pub async fn send(
    method: Method,
    url: &Uri,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Result<Response, HttpError> {
    if url.scheme_str() != Some("http") {
        return Err(HttpError::Url(url.to_string()));
    }
    let host = url.host().ok_or_else(|| HttpError::Url(url.to_string()))?;
    let port = url.port_u16().unwrap_or(80);
    let connect = TcpStream::connect((host, port));
    let stream = tokio::time::timeout(READ_TIMEOUT, connect)
        .await
        .map_err(|_| HttpError::Timeout(READ_TIMEOUT))?
        .map_err(|e| HttpError::Io(format!("connect {host}:{port}: {e}")))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| HttpError::Io(e.to_string()))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let path = url.path_and_query().map_or("/", |p| p.as_str());
    let authority = url.authority().map_or(host, |a| a.as_str());
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, authority);
    for (name, value) in headers {
        let name = HeaderName::try_from(*name).map_err(|e| HttpError::Io(e.to_string()))?;
        let value = HeaderValue::try_from(*value).map_err(|e| HttpError::Io(e.to_string()))?;
        request = request.header(name, value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| HttpError::Io(e.to_string()))?;
    let response = tokio::time::timeout(READ_TIMEOUT, sender.send_request(request))
        .await
        .map_err(|_| HttpError::Timeout(READ_TIMEOUT))?
        .map_err(|e| HttpError::Io(e.to_string()))?;
    let (parts, body) = response.into_parts();
    Ok(Response {
        status: parts.status,
        headers: parts.headers,
        body,
    })
}
