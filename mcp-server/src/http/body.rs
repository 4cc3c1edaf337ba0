//! The response body: empty, one buffer, or an SSE stream with keep-alive comments.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, Stream};
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

/// The body of every response the endpoint sends: nothing, one JSON buffer, or an SSE stream.
///
/// Implements [`hyper::body::Body`] with `Bytes` frames and no error, so it can be returned
/// from hyper services, axum handlers and tower stacks as it is.
pub struct HttpBody {
    kind: Kind,
}

enum Kind {
    Full(Option<Bytes>),
    Stream(Pin<Box<SseStream>>),
}

impl fmt::Debug for HttpBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Full(bytes) => f
                .debug_tuple("HttpBody::Full")
                .field(&bytes.as_ref().map_or(0, Bytes::len))
                .finish(),
            Kind::Stream(_) => f.write_str("HttpBody::Stream"),
        }
    }
}

impl HttpBody {
    /// An empty body.
    pub fn empty() -> Self {
        Self {
            kind: Kind::Full(None),
        }
    }

    /// A body of one buffer.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        Self {
            kind: Kind::Full((!bytes.is_empty()).then_some(bytes)),
        }
    }

    pub(crate) fn sse(stream: SseStream) -> Self {
        Self {
            kind: Kind::Stream(Box::pin(stream)),
        }
    }
}

impl Body for HttpBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.kind {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Stream(stream) => stream
                .as_mut()
                .poll_next(cx)
                .map(|item| item.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.kind, Kind::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Kind::Stream(_) => SizeHint::default(),
        }
    }
}

/// The keep-alive comment.
const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// An SSE stream: the events of `source`, a keep-alive comment whenever it is idle for the
/// interval, and an end when the endpoint closes (`closing`) if the stream is long-lived.
pub(crate) struct SseStream {
    source: BoxStream<'static, Bytes>,
    interval: Duration,
    sleep: Pin<Box<Sleep>>,
    closing: Option<BoxFuture<'static, ()>>,
    done: bool,
}

impl SseStream {
    pub(crate) fn new(source: BoxStream<'static, Bytes>, interval: Duration) -> Self {
        Self {
            source,
            interval,
            sleep: Box::pin(tokio::time::sleep(interval)),
            closing: None,
            done: false,
        }
    }

    /// Ends the stream when `closing` turns true (graceful shutdown of a long-lived stream).
    pub(crate) fn until_closing(mut self, mut closing: watch::Receiver<bool>) -> Self {
        self.closing = Some(Box::pin(async move {
            let _ = closing.wait_for(|c| *c).await;
        }));
        self
    }
}

impl Stream for SseStream {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(closing) = this.closing.as_mut()
            && closing.as_mut().poll(cx).is_ready()
        {
            this.done = true;
            return Poll::Ready(None);
        }
        match this.source.as_mut().poll_next(cx) {
            Poll::Ready(Some(bytes)) => {
                let next = Instant::now() + this.interval;
                this.sleep.as_mut().reset(next);
                Poll::Ready(Some(bytes))
            }
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => {
                if this.sleep.as_mut().poll(cx).is_ready() {
                    let next = Instant::now() + this.interval;
                    this.sleep.as_mut().reset(next);
                    // Register the timer again for the next keep-alive.
                    let _ = this.sleep.as_mut().poll(cx);
                    return Poll::Ready(Some(Bytes::from_static(KEEP_ALIVE)));
                }
                Poll::Pending
            }
        }
    }
}

/// One SSE event carrying a JSON message: `data: <json>\n\n`, with an optional
/// `event:` name and `id:`. The JSON is compact (no newline), so one `data:` line holds it.
pub(crate) fn event(name: Option<&str>, id: Option<&str>, json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + 32);
    if let Some(name) = name {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The priming event of SSE polling: an id, `retry`, and empty data.
pub(crate) fn priming(id: &str, retry_ms: u64) -> Bytes {
    Bytes::from(format!("id: {id}\nretry: {retry_ms}\ndata:\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_framed() {
        assert_eq!(&event(None, None, b"{}")[..], b"data: {}\n\n");
        assert_eq!(
            &event(Some("message"), Some("1-2"), b"{}")[..],
            b"event: message\nid: 1-2\ndata: {}\n\n"
        );
        assert_eq!(&priming("0-1", 500)[..], b"id: 0-1\nretry: 500\ndata:\n\n");
    }
}
