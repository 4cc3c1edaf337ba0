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

/// An SSE stream: the events of `source`, a keep-alive comment when it stays idle, and an end
/// when the endpoint closes (`closing`) if the stream is long-lived.
///
/// Cheap per event: the keep-alive timer is not re-armed for every event (a tick that finds
/// events sent since the previous one sends nothing, so an idle stream gets a comment after
/// one to two intervals), and the closing signal is polled again only when it changed or the
/// stream is polled by another task.
pub(crate) struct SseStream {
    source: BoxStream<'static, Bytes>,
    interval: Duration,
    sleep: Pin<Box<Sleep>>,
    /// An event went out since the keep-alive timer was last armed.
    sent: bool,
    closing: Option<Closing>,
    done: bool,
    /// Keeps the stream counted in `mcp_open_streams` while it lives.
    #[cfg(feature = "metrics")]
    _counted: Option<crate::metrics::GaugeGuard>,
}

/// The endpoint's closing signal, as an SSE stream watches it.
struct Closing {
    /// Resolves when the signal turns true; polled to register the task's waker.
    wait: BoxFuture<'static, ()>,
    /// A second receiver of the same signal: has anything been sent since we last looked?
    peek: watch::Receiver<bool>,
    /// The waker `wait` was last polled with.
    registered: Option<std::task::Waker>,
}

impl Closing {
    /// The signal turned true. Polls `wait` only when the signal changed or the waker did.
    fn closed(&mut self, cx: &mut Context<'_>) -> bool {
        let changed = self.peek.has_changed().unwrap_or(true);
        if changed {
            self.peek.mark_unchanged();
        }
        let same_task = self
            .registered
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()));
        if !changed && same_task {
            return false;
        }
        if self.wait.as_mut().poll(cx).is_ready() {
            return true;
        }
        if !same_task {
            self.registered = Some(cx.waker().clone());
        }
        false
    }
}

impl SseStream {
    pub(crate) fn new(source: BoxStream<'static, Bytes>, interval: Duration) -> Self {
        Self {
            source,
            interval,
            sleep: Box::pin(tokio::time::sleep(interval)),
            sent: false,
            closing: None,
            done: false,
            #[cfg(feature = "metrics")]
            _counted: None,
        }
    }

    /// Counts the stream as open, of `kind`, in `server`'s metrics while it lives.
    #[cfg_attr(not(feature = "metrics"), allow(unused_mut, unused_variables))]
    pub(crate) fn counted(mut self, server: &crate::Server, kind: &'static str) -> Self {
        #[cfg(feature = "metrics")]
        {
            self._counted = server.settings().metrics.as_ref().map(|m| m.stream(kind));
        }
        self
    }

    /// Ends the stream when `closing` turns true (graceful shutdown of a long-lived stream).
    pub(crate) fn until_closing(mut self, closing: watch::Receiver<bool>) -> Self {
        let peek = closing.clone();
        let mut closing = closing;
        self.closing = Some(Closing {
            wait: Box::pin(async move {
                let _ = closing.wait_for(|c| *c).await;
            }),
            peek,
            registered: None,
        });
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
            && closing.closed(cx)
        {
            this.done = true;
            return Poll::Ready(None);
        }
        match this.source.as_mut().poll_next(cx) {
            Poll::Ready(Some(bytes)) => {
                this.sent = true;
                Poll::Ready(Some(bytes))
            }
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => loop {
                if this.sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let next = Instant::now() + this.interval;
                this.sleep.as_mut().reset(next);
                if !std::mem::take(&mut this.sent) {
                    // Idle for a whole interval. The loop polls the timer again to register
                    // it for the next one.
                    let _ = this.sleep.as_mut().poll(cx);
                    return Poll::Ready(Some(Bytes::from_static(KEEP_ALIVE)));
                }
                // Events went out during this interval: no comment; wait for the next tick.
            },
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

    use futures::StreamExt as _;

    const TICK: Duration = Duration::from_secs(10);

    fn stream() -> (futures::channel::mpsc::UnboundedSender<Bytes>, SseStream) {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        (tx, SseStream::new(rx.boxed(), TICK))
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_stream_gets_a_comment_every_interval() {
        let (_tx, mut sse) = stream();
        let start = Instant::now();
        for round in 1..=3 {
            assert_eq!(sse.next().await.as_deref(), Some(KEEP_ALIVE));
            assert_eq!(start.elapsed(), TICK * round);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_interval_sends_no_comment() {
        let (tx, mut sse) = stream();
        let start = Instant::now();
        tokio::time::sleep(TICK / 2).await;
        tx.unbounded_send(Bytes::from_static(b"data: 1\n\n"))
            .unwrap();
        assert_eq!(sse.next().await.as_deref(), Some(&b"data: 1\n\n"[..]));
        // The interval that carried an event ends without a comment; the next, idle, has one.
        assert_eq!(sse.next().await.as_deref(), Some(KEEP_ALIVE));
        assert_eq!(start.elapsed(), TICK * 2);
    }

    #[tokio::test(start_paused = true)]
    async fn closing_ends_the_stream_and_events_flow_until_then() {
        let (tx, sse) = stream();
        let (close, closing) = watch::channel(false);
        let mut sse = sse.until_closing(closing);
        for n in 0..3 {
            let event = Bytes::from(format!("data: {n}\n\n"));
            tx.unbounded_send(event.clone()).unwrap();
            assert_eq!(sse.next().await, Some(event));
        }
        // Another value that is not "closing" does not end it.
        close.send(false).unwrap();
        tx.unbounded_send(Bytes::from_static(b"data: x\n\n"))
            .unwrap();
        assert_eq!(sse.next().await.as_deref(), Some(&b"data: x\n\n"[..]));
        let ended = tokio::spawn(async move { sse.next().await });
        tokio::task::yield_now().await;
        close.send(true).unwrap();
        assert_eq!(ended.await.unwrap(), None);
    }
}
