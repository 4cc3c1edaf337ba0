//! The HTTP+SSE event stream, read by whichever task waits on it.
//!
//! Every server message of a 2024-11-05 session comes on one `GET` stream. A task reading it and
//! handing each response to its request would cost every call a second task wake-up: the reader
//! wakes on the event, then wakes the call. Here a request that reads its own answer
//! ([`super::Outbound::raw_answer`]) reads the stream itself while it waits (routing whatever
//! else comes as the reader would) and takes its own response straight. A background task reads
//! whenever no request waits alone: notifications and requests from the server are never left
//! unread.
//!
//! Who reads is decided by who is woken. The stream is polled with one waker of its own, which
//! wakes the request waiting alone, or else the background task (several waiting requests
//! leave the reading to it: one its caller stopped polling must not hold up the others).
//! Whoever is woken reads until the stream has nothing more (so the stream's waker is
//! registered again before it stops); a request that leaves while a wake-up it got is still
//! unread passes it on.

use std::sync::{Arc, Mutex, TryLockError};
use std::task::{Context, Poll, Wake, Waker};

use bytes::Bytes;
use hyper::body::Body;
use tokio::sync::oneshot;

use super::pool::PooledBody;
use super::{Inbound, Router, TransportError, lock};
use mcp_wire::jsonrpc::Id;
use mcp_wire::sse::SseDecoder;

/// Frames read in one go before the reader yields (and wakes the next reader), so that a
/// server streaming without pause cannot hold one task forever.
const FRAMES_PER_READ: usize = 64;

/// The stream and who reads it.
pub(super) struct EventStream {
    /// The body and its decoder; `None` once the stream ended or was closed.
    reading: Mutex<Option<Reading>>,
    interest: Arc<Interest>,
    /// The waker the body is polled with: wakes whoever [`Interest`] names.
    waker: Waker,
    router: Router,
}

struct Reading {
    body: PooledBody,
    decoder: SseDecoder,
    /// Gets the first `endpoint` event's data.
    endpoint: Option<oneshot::Sender<String>>,
}

/// Who is woken when the stream has something.
struct Interest {
    state: Mutex<Waiters>,
}

struct Waiters {
    /// Requests waiting, each with its id and its task's waker.
    requests: Vec<(Id, Waker)>,
    /// The background task, woken when no request waits.
    background: Option<Waker>,
    /// A wake-up was given and nobody has read the stream since.
    unread: bool,
}

impl Waiters {
    /// Who reads next: the request waiting alone, or else the background task. With several
    /// requests waiting, none of them is made to read for the others: one that its caller
    /// stopped polling (without dropping it) would hold up every other.
    fn target(&self) -> Option<Waker> {
        match self.requests.as_slice() {
            [(_, waker)] => Some(waker.clone()),
            _ => self.background.clone(),
        }
    }
}

impl Interest {
    /// The stream has something (or a reader yielded): wake whoever reads now.
    fn notify(&self) {
        let target = {
            let mut state = lock(&self.state);
            state.unread = true;
            state.target()
        };
        if let Some(waker) = target {
            waker.wake();
        }
    }
}

impl Wake for Interest {
    fn wake(self: Arc<Self>) {
        self.notify();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.notify();
    }
}

/// What one read of the stream found.
pub(super) enum Read {
    /// The stream has nothing more for now.
    Pending,
    /// The success response to the reader's own request, as text.
    Mine(Bytes),
    /// The stream has ended (its end was routed: every waiting request got an error).
    Ended,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.interest.state);
        f.debug_struct("EventStream")
            .field("waiting", &state.requests.len())
            .field("unread", &state.unread)
            .finish_non_exhaustive()
    }
}

impl EventStream {
    pub(super) fn new(
        body: PooledBody,
        decoder: SseDecoder,
        router: Router,
        endpoint: oneshot::Sender<String>,
    ) -> Arc<Self> {
        let interest = Arc::new(Interest {
            state: Mutex::new(Waiters {
                requests: Vec::new(),
                background: None,
                // Nobody has polled the body yet.
                unread: true,
            }),
        });
        Arc::new(Self {
            reading: Mutex::new(Some(Reading {
                body,
                decoder,
                endpoint: Some(endpoint),
            })),
            waker: Waker::from(interest.clone()),
            interest,
            router,
        })
    }

    /// The background reader: reads whenever no request waits, until the stream ends.
    pub(super) async fn run(self: Arc<Self>) {
        std::future::poll_fn(|cx| {
            {
                let mut state = lock(&self.interest.state);
                match &state.background {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    _ => state.background = Some(cx.waker().clone()),
                }
            }
            match self.read(None) {
                Read::Ended => Poll::Ready(()),
                _ => Poll::Pending,
            }
        })
        .await;
    }

    /// Ends the stream: drops the body (closing its connection) and fails every waiting request.
    pub(super) fn close(&self) {
        let reading = lock(&self.reading).take();
        drop(reading);
        self.router.close(None);
    }

    /// Joins request `id` to the requests that read the stream while they wait (or refreshes its
    /// waker if it joined already), returning whether the stream may have something nobody read
    /// yet. When it has not, the stream's waker is registered (the last read ended with the
    /// stream pending, or is going on right now), so there is nothing to do until it wakes
    /// someone.
    fn join(&self, id: &Id, waker: &Waker) -> bool {
        let mut state = lock(&self.interest.state);
        match state.requests.iter_mut().find(|(known, _)| known == id) {
            Some((_, known)) => {
                if !known.will_wake(waker) {
                    *known = waker.clone();
                }
            }
            None => state.requests.push((id.clone(), waker.clone())),
        }
        state.unread
    }

    /// Request `id` stops reading the stream. A wake-up nobody acted on goes to the next reader.
    fn leave(&self, id: &Id) {
        let target = {
            let mut state = lock(&self.interest.state);
            if let Some(at) = state.requests.iter().position(|(known, _)| known == id) {
                state.requests.remove(at);
            }
            if state.unread { state.target() } else { None }
        };
        if let Some(waker) = target {
            waker.wake();
        }
    }

    /// Reads what the stream has, routing every message; a success response to `mine` is
    /// returned instead when it can go straight to its request (see [`Router::take_direct`]).
    /// Reads until the stream has nothing more, so that its waker is registered again, unless
    /// another task is reading it right now (it will do so).
    pub(super) fn read(&self, mine: Option<&Id>) -> Read {
        let mut guard = match self.reading.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Read::Pending,
        };
        let Some(reading) = guard.as_mut() else {
            return Read::Ended;
        };
        lock(&self.interest.state).unread = false;
        let mut cx = Context::from_waker(&self.waker);
        let mut found = None;
        let mut frames = 0;
        let end = loop {
            match self.route_events(reading, mine.filter(|_| found.is_none())) {
                Ok(Some(text)) => {
                    found = Some(text);
                    continue;
                }
                Ok(None) => {}
                Err(e) => break Some(e),
            }
            if frames == FRAMES_PER_READ {
                // Yield; the next reader (perhaps this one) carries on.
                self.interest.notify();
                break None;
            }
            match std::pin::Pin::new(&mut reading.body).poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    frames += 1;
                    if let Ok(data) = frame.into_data() {
                        reading.decoder.push(&data);
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    break Some(Some(TransportError::Http(super::streamable::error_chain(
                        &e,
                    ))));
                }
                Poll::Ready(None) => break Some(None),
                Poll::Pending => break None,
            }
        };
        let Some(error) = end else {
            return found.map_or(Read::Pending, Read::Mine);
        };
        *guard = None;
        drop(guard);
        self.router.close(error);
        // The background task (or a waiting request) sees the end.
        self.interest.notify();
        found.map_or(Read::Ended, Read::Mine)
    }

    /// Routes every event decoded so far, up to a success response to `mine` that can go to
    /// it straight (returned). `Err` when the stream cannot go on (with the error to fail the
    /// waiting requests with).
    fn route_events(
        &self,
        reading: &mut Reading,
        mine: Option<&Id>,
    ) -> Result<Option<Bytes>, Option<TransportError>> {
        while let Some(event) = reading.decoder.next() {
            let event = match event {
                Ok(event) => event,
                Err(e) => return Err(Some(TransportError::Protocol(format!("SSE stream: {e}")))),
            };
            match event.event().unwrap_or("message") {
                "endpoint" => {
                    if let Some(tx) = reading.endpoint.take() {
                        let _ = tx.send(event.into_data());
                    }
                }
                "message" if !event.data().is_empty() => {
                    let event_id = Some(reading.decoder.last_event_id())
                        .filter(|id| !id.is_empty())
                        .map(str::to_owned);
                    // A success response goes to its request by the id read from the text,
                    // which the request parses itself (or reads straight into its type).
                    if let Some(id) = super::http_sse::response_id(event.data()) {
                        let id = Id::Number(id);
                        let text = Bytes::from(event.into_data());
                        if mine == Some(&id) && self.router.take_direct(&id) {
                            return Ok(Some(text));
                        }
                        self.router.dispatch_response(id, text, event_id);
                        continue;
                    }
                    let size = event.data().len();
                    match super::parse_message(event.data().as_bytes()) {
                        Ok(message) => self
                            .router
                            .dispatch_sized(Inbound { message, event_id }, size),
                        Err(e) => {
                            tracing::warn!(error = %e, "unreadable message on the SSE stream")
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(None)
    }
}

/// A request's membership among the stream's readers; leaves on drop.
pub(super) struct Reader<'a> {
    stream: &'a EventStream,
    /// The request's id, which its success response answers.
    id: Id,
    joined: bool,
}

impl<'a> Reader<'a> {
    pub(super) fn new(stream: &'a EventStream, id: Id) -> Self {
        Self {
            stream,
            id,
            joined: false,
        }
    }

    /// Reads the stream for everyone, as a waiting request (joined with `cx`'s waker until
    /// [`Reader::leave`]), looking for the success response to this request.
    pub(super) fn read(&mut self, cx: &Context<'_>) -> Read {
        self.joined = true;
        if !self.stream.join(&self.id, cx.waker()) {
            return Read::Pending;
        }
        self.stream.read(Some(&self.id))
    }

    /// Stops reading.
    pub(super) fn leave(&mut self) {
        if std::mem::take(&mut self.joined) {
            self.stream.leave(&self.id);
        }
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        self.leave();
    }
}
