//! Watching every JSON-RPC message a client exchanges ([`crate::ClientBuilder::on_message`]).
//!
//! [`Observed`] wraps a transport and hands each message to a callback on its way out (the body
//! the client sends) and on its way in (every message of every response stream, the incoming
//! channel and the standalone stream, unparsed JSON answers, and the body of an HTTP error
//! status). The wrapper is only put in
//! place when a callback is set, so a client without one pays nothing.

use std::fmt;
use std::sync::Arc;

use futures::StreamExt;
use http::HeaderMap;
use serde_json::Value;

use super::{
    BoxFuture, Delivery, MessageStream, Outbound, Transport, TransportError, TransportInfo,
};

/// Which way a message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Direction {
    /// From the client to the server.
    Sent,
    /// From the server to the client.
    Received,
}

/// One message seen by [`crate::ClientBuilder::on_message`].
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    direction: Direction,
    message: &'a Value,
    headers: Option<&'a HeaderMap>,
    http_status: Option<u16>,
}

impl<'a> Observation<'a> {
    /// Which way the message went.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The JSON-RPC message (a string when the body was not JSON).
    pub fn message(&self) -> &'a Value {
        self.message
    }

    /// For a sent message, the per-message HTTP headers the client asked the transport to add
    /// (`MCP-Protocol-Version`, `Mcp-Method` ...; transports add their own, such as the session
    /// id and the builder's headers, which are not shown). `None` for a received message.
    pub fn headers(&self) -> Option<&'a HeaderMap> {
        self.headers
    }

    /// For a received message that was the body of an HTTP error status, that status.
    pub fn http_status(&self) -> Option<u16> {
        self.http_status
    }
}

/// The head of one HTTP response, seen by [`crate::ClientBuilder::on_http_response`]: every
/// response of the Streamable HTTP and HTTP+SSE transports (a POST's, a stream's `GET`, the
/// session's `DELETE`), before its body is read.
#[derive(Debug, Clone, Copy)]
pub struct HttpResponse<'a> {
    pub(crate) method: &'a http::Method,
    pub(crate) url: &'a http::Uri,
    pub(crate) status: u16,
    pub(crate) headers: &'a HeaderMap,
}

impl<'a> HttpResponse<'a> {
    /// The request's method.
    pub fn method(&self) -> &'a http::Method {
        self.method
    }

    /// The request's URL.
    pub fn url(&self) -> &'a http::Uri {
        self.url
    }

    /// The response's status.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The response's headers.
    pub fn headers(&self) -> &'a HeaderMap {
        self.headers
    }
}

/// The callback [`crate::ClientBuilder::on_http_response`] installs.
#[derive(Clone)]
pub(crate) struct ResponseFn(pub(crate) Arc<dyn Fn(&HttpResponse<'_>) + Send + Sync>);

impl fmt::Debug for ResponseFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResponseFn")
    }
}

/// Shows `hook` a response head, when there is a hook.
pub(crate) fn show_response(
    hook: Option<&ResponseFn>,
    method: &http::Method,
    url: &http::Uri,
    status: http::StatusCode,
    headers: &HeaderMap,
) {
    if let Some(hook) = hook {
        (hook.0)(&HttpResponse {
            method,
            url,
            status: status.as_u16(),
            headers,
        });
    }
}

/// The callback [`crate::ClientBuilder::on_message`] installs.
pub(crate) type MessageFn = Arc<dyn Fn(&Observation<'_>) + Send + Sync>;

fn received(observer: &MessageFn, message: &Value, http_status: Option<u16>) {
    observer(&Observation {
        direction: Direction::Received,
        message,
        headers: None,
        http_status,
    });
}

/// A body as JSON, or as the text it is when it is not JSON.
fn body_value(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// A transport whose messages are shown to a callback on the way through.
pub(crate) struct Observed {
    inner: Arc<dyn Transport>,
    observer: MessageFn,
}

impl fmt::Debug for Observed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observed")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl Observed {
    /// Wraps `inner`.
    pub(crate) fn new(inner: Arc<dyn Transport>, observer: MessageFn) -> Self {
        Self { inner, observer }
    }

    fn stream(observer: &MessageFn, stream: MessageStream) -> MessageStream {
        let observer = observer.clone();
        Box::pin(stream.inspect(move |item| {
            if let Ok(inbound) = item {
                let value = serde_json::to_value(&inbound.message).unwrap_or(Value::Null);
                received(&observer, &value, None);
            }
        }))
    }
}

impl Transport for Observed {
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>> {
        (self.observer)(&Observation {
            direction: Direction::Sent,
            message: &body_value(&message.body),
            headers: Some(&message.headers),
            http_status: None,
        });
        Box::pin(async move {
            let delivery = match self.inner.send(message).await {
                Ok(delivery) => delivery,
                Err(error) => {
                    // An HTTP error's body often is the JSON-RPC error answering the message
                    // (a refused probe, an unknown session): shown as received.
                    if let TransportError::Status { status, body, .. } = &error {
                        received(&self.observer, &body_value(body), Some(*status));
                    }
                    return Err(error);
                }
            };
            Ok(match delivery {
                Delivery::Stream(stream) => Delivery::Stream(Self::stream(&self.observer, stream)),
                Delivery::Json(super::RawAnswer(body)) => {
                    received(&self.observer, &body_value(&body), None);
                    Delivery::Json(super::RawAnswer(body))
                }
                other => other,
            })
        })
    }

    fn incoming(&self) -> Option<MessageStream> {
        self.inner
            .incoming()
            .map(|stream| Self::stream(&self.observer, stream))
    }

    fn open_stream(
        &self,
        headers: HeaderMap,
        last_event_id: Option<String>,
    ) -> BoxFuture<'_, Result<MessageStream, TransportError>> {
        Box::pin(async move {
            let stream = self.inner.open_stream(headers, last_event_id).await?;
            Ok(Self::stream(&self.observer, stream))
        })
    }

    fn info(&self) -> TransportInfo {
        self.inner.info()
    }

    fn session_id(&self) -> Option<String> {
        self.inner.session_id()
    }

    fn dropped(&self) -> u64 {
        self.inner.dropped()
    }

    fn reset_session(&self) {
        self.inner.reset_session();
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        self.inner.close()
    }
}
