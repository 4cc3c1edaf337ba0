//! Routing responses to waiting requests on a connection-shaped transport.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use tokio::sync::{mpsc, oneshot};

use super::{Inbound, MessageStream, TransportError};
use mcp_wire::jsonrpc::{Id, Message, Response};

/// What one request gets: its response as a message (or why there is none), or, for a request
/// registered with [`Router::register_raw`], the text of a success response to it, not parsed.
pub(crate) enum Routed {
    Message(Result<Inbound, TransportError>),
    Raw(Bytes),
}

/// Where one request's answer goes: exactly one item, so a oneshot, much cheaper to make per
/// request than a channel.
type Sender = oneshot::Sender<Routed>;

/// A request waiting for its answer.
struct Slot {
    tx: Sender,
    /// It takes a success response as text ([`Routed::Raw`]).
    raw: bool,
}

/// One entry of the incoming queue: a message for its reader (with the size it was counted
/// at), or a response to hand to its request once the reader got this far.
enum Queued {
    Message(Result<Inbound, TransportError>, usize),
    Response(Sender, Routed),
}

/// How many messages the incoming queue holds by default: see [`Router::with_limits`].
pub const DEFAULT_MAX_QUEUED: usize = 1024;
/// How many bytes of messages the incoming queue holds by default: see [`Router::with_limits`].
pub const DEFAULT_MAX_QUEUED_BYTES: usize = 16 * 1024 * 1024;

/// Routes messages read from one duplex channel to the requests waiting for them.
///
/// A connection-shaped transport (stdio, HTTP+SSE, your own socket) reads every server message
/// from one place. It calls [`Router::register`] before sending a request and returns the stream
/// it gets as the request's [`super::Delivery::Stream`]; its reader calls [`Router::dispatch`]
/// for each message. A response goes to the stream of the request it answers; everything else
/// goes to [`Router::incoming`]. Dropping a request's stream unregisters it.
///
/// Order is kept across the two: once [`Router::incoming`] was taken, a response reaches its
/// request's stream only after the incoming stream's reader has taken every message read before
/// it (the response is queued behind them and handed over when the reader polls past it;
/// when the reader has already handled everything, it goes to its request at once). A
/// reader that handles each notification before polling again (as the client does) has thus
/// handled every notification sent before a response, a call's progress included, by the time
/// the call sees its response. The incoming stream must therefore be polled while requests
/// wait; dropping it hands every queued response over at once.
///
/// **Bounded.** The incoming queue holds at most [`DEFAULT_MAX_QUEUED`] messages and
/// [`DEFAULT_MAX_QUEUED_BYTES`] bytes of them (set both with [`Router::with_limits`]), whatever
/// the server sends and however slowly the incoming stream is read, before it is taken too. A
/// notification or a server request that arrives while the queue is full is dropped and counted
/// ([`Router::dropped`]): such messages are lossy under a flood (a request so dropped gets no
/// answer). Responses to the client's own requests are never dropped: each goes to the slot its
/// request registered, queued behind the messages read before it, so what they hold is bounded
/// by the requests in flight.
#[derive(Clone)]
pub struct Router {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Entries of the incoming queue the reader has not got past: queued ones, and the message
    /// it took last until it polls again (then it has handled that message). Incremented under
    /// the state lock, decremented by the reader. At zero a response goes straight to its
    /// request: nothing read before it is left to handle.
    unhandled: Arc<AtomicUsize>,
    /// What the queue holds of messages (responses not counted), and its bounds.
    queue: Arc<QueueCount>,
}

/// The messages (not responses) in the incoming queue, their bytes, and the ones dropped because
/// it was full. Incremented under the state lock, decremented by the reader.
struct QueueCount {
    messages: AtomicUsize,
    bytes: AtomicUsize,
    dropped: AtomicU64,
    max_messages: usize,
    max_bytes: usize,
}

impl QueueCount {
    /// Whether a message of `size` bytes fits: under both limits, or the queue is empty (a
    /// message larger than the byte limit still passes alone; its size is bounded by the
    /// transport's message size limit).
    fn admits(&self, size: usize) -> bool {
        let messages = self.messages.load(Ordering::Acquire);
        let bytes = self.bytes.load(Ordering::Acquire);
        messages < self.max_messages
            && (messages == 0 || bytes.saturating_add(size) <= self.max_bytes)
    }

    fn add(&self, size: usize) {
        self.messages.fetch_add(1, Ordering::AcqRel);
        self.bytes.fetch_add(size, Ordering::AcqRel);
    }

    fn remove(&self, size: usize) {
        self.messages.fetch_sub(1, Ordering::AcqRel);
        self.bytes.fetch_sub(size, Ordering::AcqRel);
    }
}

struct State {
    /// Hashed with foldhash: ids are the client's own, so there is nothing to defend against.
    pending: HashMap<Id, Slot, foldhash::fast::RandomState>,
    incoming: Option<mpsc::UnboundedSender<Queued>>,
    incoming_rx: Option<mpsc::UnboundedReceiver<Queued>>,
    closed: bool,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("Router")
            .field("pending", &state.pending.len())
            .field("closed", &state.closed)
            .finish()
    }
}

impl Default for Router {
    fn default() -> Self {
        Self::new()
    }
}

impl Router {
    /// A router with nothing pending, and the default bounds of the incoming queue
    /// ([`DEFAULT_MAX_QUEUED`] messages, [`DEFAULT_MAX_QUEUED_BYTES`] bytes).
    pub fn new() -> Self {
        Self::with_limits(DEFAULT_MAX_QUEUED, DEFAULT_MAX_QUEUED_BYTES)
    }

    /// A router whose incoming queue holds at most `messages` messages and `bytes` bytes of
    /// them (as counted by [`Router::dispatch_sized`]); past either, notifications and server
    /// requests are dropped and counted. `messages` is at least 1.
    ///
    /// ```
    /// use mcp_client::transport::Router;
    ///
    /// let router = Router::with_limits(256, 4 << 20);
    /// assert_eq!(router.dropped(), 0);
    /// ```
    pub fn with_limits(messages: usize, bytes: usize) -> Self {
        // Unbounded as a channel, bounded by the count kept beside it: a response must always
        // find room behind the messages queued before it, and never wait for it.
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    pending: HashMap::default(),
                    incoming: Some(tx),
                    incoming_rx: Some(rx),
                    closed: false,
                }),
                unhandled: Arc::new(AtomicUsize::new(0)),
                queue: Arc::new(QueueCount {
                    messages: AtomicUsize::new(0),
                    bytes: AtomicUsize::new(0),
                    dropped: AtomicU64::new(0),
                    max_messages: messages.max(1),
                    max_bytes: bytes,
                }),
            }),
        }
    }

    /// How many notifications and server requests were dropped because the incoming queue was
    /// full.
    pub fn dropped(&self) -> u64 {
        self.shared.queue.dropped.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the map inconsistent; keep going.
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a request about to be sent; its response will come on the returned stream.
    /// After [`Router::close`] the stream yields [`TransportError::Closed`] at once.
    pub fn register(&self, id: Id) -> MessageStream {
        Box::pin(self.register_slot(id, false))
    }

    /// [`Router::register`] for a request whose caller reads a success response itself: such a
    /// response, routed with [`Router::dispatch_response`], comes as [`Routed::Raw`]; anything
    /// else (an error response, a failure) as [`Routed::Message`].
    pub(crate) fn register_raw(&self, id: Id) -> Pending {
        self.register_slot(id, true)
    }

    fn register_slot(&self, id: Id, raw: bool) -> Pending {
        let (tx, rx) = oneshot::channel();
        let mut state = self.lock();
        if state.closed {
            let _ = tx.send(Routed::Message(Err(TransportError::Closed)));
        } else {
            state.pending.insert(id.clone(), Slot { tx, raw });
        }
        drop(state);
        Pending {
            rx,
            id: Some(id),
            router: self.clone(),
        }
    }

    /// The stream of messages no request is waiting for. Returns `Some` once.
    pub fn incoming(&self) -> Option<MessageStream> {
        let rx = self.lock().incoming_rx.take()?;
        Some(Box::pin(Incoming {
            rx,
            unhandled: self.shared.unhandled.clone(),
            queue: self.shared.queue.clone(),
            holding: false,
        }))
    }

    /// Routes one message read from the channel. A message for the incoming stream counts
    /// against the queue's message limit only; a reader that knows the size of what it read
    /// calls [`Router::dispatch_sized`].
    pub fn dispatch(&self, inbound: Inbound) {
        self.dispatch_sized(inbound, 0);
    }

    /// [`Router::dispatch`] for a message that was `size` bytes on the wire: a message for the
    /// incoming stream counts against both limits of the queue, and is dropped (and counted in
    /// [`Router::dropped`]) when it does not fit.
    pub fn dispatch_sized(&self, inbound: Inbound, size: usize) {
        let mut state = self.lock();
        match &inbound.message {
            Message::Response(Response { id: Some(id), .. }) => {
                if let Some(slot) = state.pending.remove(id) {
                    state.deliver(
                        &self.shared.unhandled,
                        slot.tx,
                        Routed::Message(Ok(inbound)),
                    );
                } else {
                    tracing::debug!(%id, "response to a request nobody waits for");
                }
            }
            Message::Response(Response { id: None, .. }) => {
                // The server could not tell which request failed: fail every waiting one rather
                // than leave it hanging until its timeout.
                let waiting: Vec<Sender> = state.pending.drain().map(|(_, slot)| slot.tx).collect();
                for tx in waiting {
                    let routed = Routed::Message(Ok(inbound.clone()));
                    state.deliver(&self.shared.unhandled, tx, routed);
                }
            }
            _ => {
                if let Some(tx) = &state.incoming {
                    let queue = &self.shared.queue;
                    if !queue.admits(size) {
                        let dropped = queue.dropped.fetch_add(1, Ordering::Relaxed);
                        if dropped == 0 {
                            tracing::warn!(
                                max_messages = queue.max_messages,
                                max_bytes = queue.max_bytes,
                                "the server sends faster than the client reads: messages \
                                 that are not responses are dropped while the queue is full"
                            );
                        }
                        return;
                    }
                    // Counted before it can be taken, so the counts never go below zero.
                    self.shared.unhandled.fetch_add(1, Ordering::AcqRel);
                    queue.add(size);
                    if tx.send(Queued::Message(Ok(inbound), size)).is_err() {
                        self.shared.unhandled.fetch_sub(1, Ordering::AcqRel);
                        queue.remove(size);
                    }
                }
            }
        }
    }

    /// Routes a success response to request `id`, as its text, not yet parsed: the reader has
    /// seen that the text is one, or begins as one, addressed to `id`. A request registered with
    /// [`Router::register_raw`] gets the text as it is (and reads it itself); any other gets the
    /// parsed message, as from [`Router::dispatch`], or a protocol error when the text turns out
    /// not to be that response.
    pub(crate) fn dispatch_response(&self, id: Id, text: Bytes, event_id: Option<String>) {
        let mut state = self.lock();
        let Some(slot) = state.pending.remove(&id) else {
            tracing::debug!(%id, "response to a request nobody waits for");
            return;
        };
        if slot.raw {
            state.deliver(&self.shared.unhandled, slot.tx, Routed::Raw(text));
            return;
        }
        // Parsed without holding the lock.
        drop(state);
        let routed = match super::parse_message(&text) {
            Ok(Message::Response(response)) if response.id.as_ref() == Some(&id) => {
                let message = Message::Response(response);
                Routed::Message(Ok(Inbound { message, event_id }))
            }
            parsed => {
                let error = match parsed {
                    Err(e) => e,
                    Ok(_) => TransportError::Protocol(
                        "a message that began as a response to this request is not one".into(),
                    ),
                };
                tracing::warn!(%id, error = %error, "unreadable response");
                Routed::Message(Err(error))
            }
        };
        self.lock().deliver(&self.shared.unhandled, slot.tx, routed);
    }

    /// Takes the slot of request `id`, registered with [`Router::register_raw`], for a reader
    /// that hands the success response it read to that request itself (the request reading its
    /// own stream): `true` when the slot was there and the response may go to it at once, with
    /// no message read before it still waiting for the incoming stream's reader (see
    /// [`State::deliver`]). The request's [`Pending`] must then be [`Pending::settle`]d.
    pub(crate) fn take_direct(&self, id: &Id) -> bool {
        let mut state = self.lock();
        let queued = state.incoming.is_some()
            && state.incoming_rx.is_none()
            && self.shared.unhandled.load(Ordering::Acquire) > 0;
        if queued || !state.pending.get(id).is_some_and(|slot| slot.raw) {
            return false;
        }
        state.pending.remove(id);
        true
    }

    /// Ends every waiting request with `error` (or [`TransportError::Closed`]) and ends the
    /// incoming stream. Later registrations fail at once.
    pub fn close(&self, error: Option<TransportError>) {
        let mut state = self.lock();
        state.closed = true;
        let mut error = error;
        for (_, slot) in state.pending.drain() {
            let e = error.take().unwrap_or(TransportError::Closed);
            let _ = slot.tx.send(Routed::Message(Err(e)));
        }
        state.incoming = None;
    }

    fn unregister(&self, id: &Id) {
        self.lock().pending.remove(id);
    }
}

impl State {
    /// Hands `response` to its request: behind the messages the incoming stream's reader has
    /// not handled yet, or at once when it has handled everything (or nobody reads it).
    fn deliver(&self, unhandled: &AtomicUsize, tx: Sender, response: Routed) {
        let queued = match (&self.incoming, self.incoming_rx.is_none()) {
            (Some(incoming), true) if unhandled.load(Ordering::Acquire) > 0 => {
                unhandled.fetch_add(1, Ordering::AcqRel);
                let sent = incoming.send(Queued::Response(tx, response));
                if sent.is_err() {
                    unhandled.fetch_sub(1, Ordering::AcqRel);
                }
                sent
            }
            _ => Err(mpsc::error::SendError(Queued::Response(tx, response))),
        };
        if let Err(mpsc::error::SendError(Queued::Response(tx, response))) = queued {
            let _ = tx.send(response);
        }
    }
}

/// One request's wait for its answer: a stream of one item ([`Router::register`]), or a future
/// of what was routed to it ([`Router::register_raw`]). Dropping it unregisters the request.
pub(crate) struct Pending {
    rx: oneshot::Receiver<Routed>,
    id: Option<Id>,
    router: Router,
}

impl Pending {
    /// The request got its answer another way ([`Router::take_direct`]): nothing is left to
    /// wait for or to unregister.
    pub(crate) fn settle(&mut self) {
        self.id = None;
    }
}

impl Future for Pending {
    type Output = Routed;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Routed> {
        if self.id.is_none() {
            return Poll::Ready(Routed::Message(Err(TransportError::Closed)));
        }
        let routed = match Pin::new(&mut self.rx).poll(cx) {
            Poll::Ready(Ok(routed)) => routed,
            Poll::Ready(Err(_)) => Routed::Message(Err(TransportError::Closed)),
            Poll::Pending => return Poll::Pending,
        };
        // A response or an error ends the wait.
        self.id = None;
        Poll::Ready(routed)
    }
}

impl Stream for Pending {
    type Item = Result<Inbound, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.id.is_none() {
            return Poll::Ready(None);
        }
        Future::poll(self, cx).map(|routed| {
            Some(match routed {
                Routed::Message(item) => item,
                Routed::Raw(text) => super::parse_message(&text).map(Inbound::new),
            })
        })
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.router.unregister(&id);
        }
    }
}

struct Incoming {
    rx: mpsc::UnboundedReceiver<Queued>,
    unhandled: Arc<AtomicUsize>,
    queue: Arc<QueueCount>,
    /// The last item returned was a message, counted in `unhandled` until the next poll.
    holding: bool,
}

impl Stream for Incoming {
    type Item = Result<Inbound, TransportError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if std::mem::take(&mut self.holding) {
            // Polled again: the message returned last has been handled.
            self.unhandled.fetch_sub(1, Ordering::AcqRel);
        }
        loop {
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(Queued::Message(item, size))) => {
                    self.queue.remove(size);
                    self.holding = true;
                    return Poll::Ready(Some(item));
                }
                // Everything read before this response was handled: hand it over.
                Poll::Ready(Some(Queued::Response(tx, response))) => {
                    let _ = tx.send(response);
                    self.unhandled.fetch_sub(1, Ordering::AcqRel);
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        // Nobody reads any more: the responses still queued go to their requests now.
        self.rx.close();
        while let Ok(queued) = self.rx.try_recv() {
            match queued {
                Queued::Response(tx, response) => {
                    let _ = tx.send(response);
                }
                Queued::Message(_, size) => self.queue.remove(size),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::{FutureExt, StreamExt};
    use mcp_wire::jsonrpc::Notification;
    use serde_json::json;

    use super::*;

    fn response(id: Option<i64>) -> Inbound {
        Inbound::new(Message::Response(Response {
            id: id.map(Id::Number),
            outcome: Ok(json!({})),
        }))
    }

    #[tokio::test]
    async fn routes_by_id_and_the_rest_to_incoming() {
        let router = Router::new();
        let mut incoming = router.incoming().unwrap();
        assert!(router.incoming().is_none());
        let mut one = router.register(Id::Number(1));
        let mut two = router.register(Id::Number(2));
        router.dispatch(response(Some(2)));
        router.dispatch(Inbound::new(Message::Notification(Notification {
            method: "n".into(),
            params: None,
        })));
        router.dispatch(response(Some(1)));
        router.dispatch(response(Some(99)));
        // Reading the notification hands over the response queued before it.
        let n = incoming.next().await.unwrap().unwrap();
        assert_eq!(n.message.method(), Some("n"));
        assert_eq!(two.next().await.unwrap().unwrap(), response(Some(2)));
        assert!(two.next().await.is_none());
        // The response read after the notification waits until the reader polls past it.
        assert!(one.next().now_or_never().is_none());
        assert!(incoming.next().now_or_never().is_none());
        assert_eq!(one.next().await.unwrap().unwrap(), response(Some(1)));
    }

    #[tokio::test]
    async fn a_response_skips_the_queue_once_the_reader_handled_everything() {
        let router = Router::new();
        let mut incoming = router.incoming().unwrap();
        let mut one = router.register(Id::Number(1));
        // Nothing read before it: straight to the request, the reader is not involved.
        router.dispatch(response(Some(1)));
        let got = one.next().now_or_never().flatten().map(Result::unwrap);
        assert_eq!(got, Some(response(Some(1))));
        router.dispatch(Inbound::new(Message::Notification(Notification {
            method: "n".into(),
            params: None,
        })));
        let mut two = router.register(Id::Number(2));
        assert!(incoming.next().await.is_some());
        // The notification was taken but not yet handled (the reader has not polled again).
        router.dispatch(response(Some(2)));
        assert!(two.next().now_or_never().is_none());
        assert!(incoming.next().now_or_never().is_none());
        assert_eq!(two.next().await.unwrap().unwrap(), response(Some(2)));
        // Handled and polled past: the next response goes straight through again.
        let mut three = router.register(Id::Number(3));
        router.dispatch(response(Some(3)));
        let got = three.next().now_or_never().flatten().map(Result::unwrap);
        assert_eq!(got, Some(response(Some(3))));
    }

    #[tokio::test]
    async fn without_a_reader_of_incoming_responses_go_straight_through() {
        let router = Router::new();
        let mut one = router.register(Id::Number(1));
        router.dispatch(response(Some(1)));
        assert_eq!(one.next().await.unwrap().unwrap(), response(Some(1)));
        let incoming = router.incoming().unwrap();
        let mut two = router.register(Id::Number(2));
        router.dispatch(response(Some(2)));
        // Dropping the reader hands over what it had not reached.
        drop(incoming);
        assert_eq!(two.next().await.unwrap().unwrap(), response(Some(2)));
        let mut three = router.register(Id::Number(3));
        router.dispatch(response(Some(3)));
        assert_eq!(three.next().await.unwrap().unwrap(), response(Some(3)));
    }

    #[tokio::test]
    async fn null_id_fails_every_waiting_request_and_close_ends_all() {
        let router = Router::new();
        let mut one = router.register(Id::Number(1));
        let mut two = router.register(Id::Number(2));
        router.dispatch(response(None));
        assert_eq!(one.next().await.unwrap().unwrap(), response(None));
        assert_eq!(two.next().await.unwrap().unwrap(), response(None));
        let mut three = router.register(Id::Number(3));
        router.close(None);
        assert!(matches!(
            three.next().await,
            Some(Err(TransportError::Closed))
        ));
        let mut four = router.register(Id::Number(4));
        assert!(matches!(
            four.next().await,
            Some(Err(TransportError::Closed))
        ));
    }

    #[tokio::test]
    async fn a_response_as_text_goes_raw_only_to_a_raw_registration() {
        let router = Router::new();
        let text = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        let raw = router.register_raw(Id::Number(1));
        let mut stream = router.register(Id::Number(2));
        router.dispatch_response(Id::Number(1), text.clone(), None);
        assert!(matches!(raw.await, Routed::Raw(got) if got == text));
        let two = Bytes::from_static(br#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
        router.dispatch_response(Id::Number(2), two, Some("e".into()));
        let got = stream.next().await.unwrap().unwrap();
        assert_eq!(got.message, response(Some(2)).message);
        assert_eq!(got.event_id.as_deref(), Some("e"));
        // A text that began as a response to a request and is not one fails that request
        // rather than leaving it to its timeout.
        let mut five = router.register(Id::Number(5));
        let broken = Bytes::from_static(br#"{"jsonrpc":"2.0","id":5,"result":{},"method":"m"}"#);
        router.dispatch_response(Id::Number(5), broken, None);
        assert!(matches!(
            five.next().await,
            Some(Err(TransportError::Protocol(_)))
        ));
        assert!(router.lock().pending.is_empty());
        // An error response, or the end, reaches a raw registration as a message.
        let raw = router.register_raw(Id::Number(3));
        router.close(None);
        assert!(matches!(
            raw.await,
            Routed::Message(Err(TransportError::Closed))
        ));
    }

    fn note() -> Inbound {
        Inbound::new(Message::Notification(Notification {
            method: "n".into(),
            params: None,
        }))
    }

    #[tokio::test]
    async fn a_full_queue_drops_notifications_and_counts_them_but_never_a_response() {
        let router = Router::with_limits(4, 1 << 20);
        let mut incoming = router.incoming().unwrap();
        let mut one = router.register(Id::Number(1));
        for _ in 0..10 {
            router.dispatch(note());
        }
        assert_eq!(router.dropped(), 6);
        // The queue is full, and the response still gets its place behind what was kept.
        router.dispatch(response(Some(1)));
        for _ in 0..4 {
            let n = incoming.next().await.unwrap().unwrap();
            assert_eq!(n.message.method(), Some("n"));
        }
        assert!(incoming.next().now_or_never().is_none());
        assert_eq!(one.next().await.unwrap().unwrap(), response(Some(1)));
        // Taken off the queue: room again.
        router.dispatch(note());
        assert_eq!(router.dropped(), 6);
        assert!(incoming.next().await.is_some());
    }

    #[tokio::test]
    async fn the_queue_is_bounded_before_anyone_takes_it_and_in_bytes() {
        let router = Router::with_limits(100, 50);
        let mut one = router.register(Id::Number(1));
        router.dispatch_sized(note(), 30);
        // 60 bytes would pass the limit of 50.
        router.dispatch_sized(note(), 30);
        assert_eq!(router.dropped(), 1);
        router.dispatch_sized(note(), 20);
        assert_eq!(router.dropped(), 1);
        for _ in 0..1_000 {
            router.dispatch(note());
        }
        assert_eq!(router.lock().pending.len(), 1);
        // Nobody took the incoming stream yet: the response goes straight to its request.
        router.dispatch(response(Some(1)));
        assert_eq!(one.next().await.unwrap().unwrap(), response(Some(1)));
        let mut incoming = router.incoming().unwrap();
        let mut kept = 0;
        while incoming.next().now_or_never().flatten().is_some() {
            kept += 1;
        }
        assert_eq!(kept, 100, "30 + 20 bytes, then 98 counted without a size");
        assert_eq!(router.dropped(), 1 + 1_000 - 98);
        // Alone in the queue, a message larger than the byte limit still passes.
        router.dispatch_sized(note(), 500);
        assert_eq!(router.dropped(), 1 + 1_000 - 98);
    }

    #[tokio::test]
    async fn dropping_a_stream_unregisters_it() {
        let router = Router::new();
        drop(router.register(Id::Number(1)));
        assert!(router.lock().pending.is_empty());
    }
}
