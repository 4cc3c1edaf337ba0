//! Watching every JSON-RPC message a client exchanges ([`crate::ClientBuilder::on_message`]).
//!
//! [`Observed`] wraps a transport and hands each message to a callback on its way out (the body
//! the client sends) and on its way in (every message of every response stream, the incoming
//! channel and the standalone stream, unparsed JSON answers, and the body of an HTTP error
//! status). The wrapper is only put in
//! place when a callback is set, so a client without one pays nothing.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
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

/// The callback [`crate::ClientBuilder::on_message`] installs.
pub(crate) type MessageFn = Arc<dyn Fn(Direction, &Value) + Send + Sync>;

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

    fn bytes(observer: &MessageFn, direction: Direction, body: &Bytes) {
        // A body that is not JSON is shown as the text it is.
        let value = serde_json::from_slice(body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()));
        observer(direction, &value);
    }

    fn stream(observer: &MessageFn, stream: MessageStream) -> MessageStream {
        let observer = observer.clone();
        Box::pin(stream.inspect(move |item| {
            if let Ok(inbound) = item {
                let value = serde_json::to_value(&inbound.message).unwrap_or(Value::Null);
                observer(Direction::Received, &value);
            }
        }))
    }
}

impl Transport for Observed {
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>> {
        Self::bytes(&self.observer, Direction::Sent, &message.body);
        Box::pin(async move {
            let delivery = match self.inner.send(message).await {
                Ok(delivery) => delivery,
                Err(error) => {
                    // An HTTP error's body often is the JSON-RPC error answering the message
                    // (a refused probe, an unknown session): shown as received.
                    if let TransportError::Status { status, body, .. } = &error {
                        let value = serde_json::from_slice(body).unwrap_or_else(|_| {
                            Value::String(format!(
                                "HTTP {status}: {}",
                                String::from_utf8_lossy(body)
                            ))
                        });
                        (self.observer)(Direction::Received, &value);
                    }
                    return Err(error);
                }
            };
            Ok(match delivery {
                Delivery::Stream(stream) => Delivery::Stream(Self::stream(&self.observer, stream)),
                Delivery::Json(body) => {
                    Self::bytes(&self.observer, Direction::Received, &body);
                    Delivery::Json(body)
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
