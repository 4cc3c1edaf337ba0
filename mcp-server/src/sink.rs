//! The queue a call's messages take before its response: notifications and pushed requests,
//! from the handler (any task) to the call's [`Reply`](crate::Reply) stream.
//!
//! One small allocation per call (a channel would take two, one of them over a kilobyte,
//! for a queue that most calls never use). The queue allocates only when something is sent.
//!
//! The queue is bounded ([`ServerBuilder::max_queued_messages`](crate::ServerBuilder::max_queued_messages)),
//! so a client that reads slowly, or a handler that reports faster than any client reads, costs
//! O(limit) memory. What happens at the limit depends on the message:
//!
//! - progress is coalesced: when the queue is full, a newer progress notification replaces the
//!   newest one still queued for its token (the values the client sees still only grow); when
//!   none for the token waits, the new one is dropped (a later one gets through once the client
//!   reads);
//! - log messages are dropped while the queue is full;
//! - everything else (pushed questions, `subscriptions/listen` acknowledgements and changes) is
//!   never dropped: its sender waits for room ([`Sink::send_wait`]), which is backpressure up to
//!   the handler.
//!
//! Dropped messages are counted; the count is logged when the call ends.
//!
//! The call's cancellation signal ([`CancelHandle`]) lives here too: the call of a
//! single-message body takes the one in its queue's allocation ([`Sink::cancel_handle`]), the
//! calls of a batch, which share a queue, one each.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use mcp_wire::jsonrpc::Id;
use serde_json::Value;
use tokio::sync::Notify;

/// The default of [`ServerBuilder::max_queued_messages`](crate::ServerBuilder::max_queued_messages).
pub(crate) const DEFAULT_MAX_QUEUED: usize = 64;

/// The sending side; clones share the queue.
#[derive(Clone, Debug)]
pub(crate) struct Sink(Arc<Shared>);

/// The receiving side. Dropping it closes the queue: later sends fail.
#[derive(Debug)]
pub(crate) struct Drain(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Woken when room is made (a message taken) or the queue closes.
    room: Notify,
    capacity: usize,
    /// The cancellation of the call that takes it ([`Sink::cancel_handle`]).
    cancel: CancelState,
}

/// A cancellation signal shared by a call and whoever may cancel it (clones share it).
#[derive(Clone, Debug)]
pub(crate) struct CancelHandle(Signal);

#[derive(Clone, Debug)]
enum Signal {
    /// A signal of its own: one small allocation.
    Own(Arc<CancelState>),
    /// The one in a call's queue, in the queue's allocation.
    Queue(Arc<Shared>),
}

#[derive(Debug, Default)]
struct CancelState {
    cancelled: std::sync::atomic::AtomicBool,
    /// Wakes whoever waits in [`CancelHandle::cancelled`].
    waiters: Notify,
}

impl Default for CancelHandle {
    fn default() -> Self {
        Self(Signal::Own(Arc::default()))
    }
}

impl CancelHandle {
    /// A signal of its own.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> &CancelState {
        match &self.0 {
            Signal::Own(state) => state,
            Signal::Queue(shared) => &shared.cancel,
        }
    }

    pub(crate) fn cancel(&self) {
        let state = self.state();
        if !state
            .cancelled
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            state.waiters.notify_waiters();
        }
    }

    /// The call was cancelled.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.state()
            .cancelled
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Waits until the call is cancelled.
    pub(crate) async fn cancelled(&self) {
        let state = self.state();
        loop {
            let notified = state.waiters.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the check, so a cancel between the two is not missed.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Queued>,
    waker: Option<Waker>,
    closed: bool,
    /// Progress and log messages dropped at the limit.
    dropped: u64,
}

#[derive(Debug)]
struct Queued {
    message: Value,
    /// The progress token, for a progress notification (which a newer one replaces).
    progress: Option<Id>,
}

/// What a lossy message is, for the policy at the limit.
#[derive(Debug)]
pub(crate) enum Lossy<'a> {
    /// A progress notification for this token: coalesced.
    Progress(&'a Id),
    /// A log message: dropped while the queue is full.
    Log,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent whatever panicked while holding the lock.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A new queue holding at most `capacity` messages (at least 1).
pub(crate) fn queue(capacity: usize) -> (Sink, Drain) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        room: Notify::new(),
        capacity: capacity.max(1),
        cancel: CancelState::default(),
    });
    (Sink(shared.clone()), Drain(shared))
}

impl Sink {
    /// The cancellation signal kept in this queue's allocation, for the one call that has the
    /// queue to itself (a batch's calls share a queue and take [`CancelHandle::new`] each).
    pub(crate) fn cancel_handle(&self) -> CancelHandle {
        CancelHandle(Signal::Queue(self.0.clone()))
    }

    /// Queues a progress or log message by the lossy policy (see the module docs). Returns
    /// whether it was queued (or replaced the one queued for its token).
    pub(crate) fn send_lossy(&self, message: Value, kind: Lossy<'_>) -> bool {
        let waker = {
            let mut state = self.0.lock();
            if state.closed {
                return false;
            }
            if state.queue.len() >= self.0.capacity {
                state.dropped += 1;
                // Full: a newer progress value replaces the newest one still queued for its
                // token (so the values the client sees still only grow).
                if let Lossy::Progress(token) = kind
                    && let Some(queued) = state
                        .queue
                        .iter_mut()
                        .rev()
                        .find(|q| q.progress.as_ref() == Some(token))
                {
                    queued.message = message;
                    return true;
                }
                return false;
            }
            let progress = match kind {
                Lossy::Progress(token) => Some(token.clone()),
                Lossy::Log => None,
            };
            state.queue.push_back(Queued { message, progress });
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// Queues `message`, waiting while the queue is full; gives it back when the receiving
    /// side is gone (before or while waiting).
    pub(crate) async fn send_wait(&self, message: Value) -> Result<(), Value> {
        let mut message = Some(message);
        loop {
            let room = self.0.room.notified();
            let mut room = std::pin::pin!(room);
            // Registered before the check, so room made right after it still wakes us.
            room.as_mut().enable();
            let waker = {
                let mut state = self.0.lock();
                if let Some(message) = message.take_if(|_| state.closed) {
                    return Err(message);
                }
                if state.queue.len() < self.0.capacity
                    && let Some(message) = message.take()
                {
                    state.queue.push_back(Queued {
                        message,
                        progress: None,
                    });
                    Some(state.waker.take())
                } else {
                    None
                }
            };
            match waker {
                Some(waker) => {
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                    return Ok(());
                }
                None => room.await,
            }
        }
    }
}

impl Drain {
    /// The next queued message, or `Pending` (woken by the next send) when there is none.
    pub(crate) fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Value> {
        let mut state = self.0.lock();
        if let Some(message) = self.take(&mut state) {
            return Poll::Ready(message);
        }
        match &state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// The next queued message, if any.
    pub(crate) fn try_recv(&self) -> Option<Value> {
        let mut state = self.0.lock();
        self.take(&mut state)
    }

    fn take(&self, state: &mut State) -> Option<Value> {
        let full = state.queue.len() >= self.0.capacity;
        let queued = state.queue.pop_front()?;
        if full {
            // A sender may be waiting for room.
            self.0.room.notify_waiters();
        }
        Some(queued.message)
    }
}

impl Drop for Drain {
    fn drop(&mut self) {
        let dropped = {
            let mut state = self.0.lock();
            state.closed = true;
            state.queue.clear();
            state.waker = None;
            state.dropped
        };
        self.0.room.notify_waiters();
        if dropped > 0 {
            tracing::debug!(
                dropped,
                limit = self.0.capacity,
                "progress or log messages of a call were coalesced or dropped: its client read slower than its handler reported"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    use serde_json::json;

    use super::*;

    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn noop() -> Context<'static> {
        Context::from_waker(Waker::noop())
    }

    #[test]
    fn messages_come_out_in_order_and_a_send_wakes_the_receiver() {
        let (sink, drain) = queue(8);
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(drain.poll_recv(&mut cx).is_pending());
        assert!(sink.send_lossy(json!(1), Lossy::Log));
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert!(sink.clone().send_lossy(json!(2), Lossy::Log));
        // Woken once per registration, not once per message.
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert_eq!(drain.poll_recv(&mut cx), Poll::Ready(json!(1)));
        assert_eq!(drain.try_recv(), Some(json!(2)));
        assert_eq!(drain.try_recv(), None);
    }

    #[test]
    fn sends_fail_once_the_receiver_is_gone() {
        let (sink, drain) = queue(8);
        assert!(sink.send_lossy(json!("kept until the drop"), Lossy::Log));
        drop(drain);
        assert!(!sink.send_lossy(json!("late"), Lossy::Log));
        let waited = futures::executor::block_on(sink.send_wait(json!("late")));
        assert_eq!(waited, Err(json!("late")));
    }

    #[test]
    fn at_the_limit_progress_for_a_token_is_coalesced_to_the_newest() {
        let (sink, drain) = queue(4);
        let (a, b) = (Id::from("a"), Id::from("b"));
        // With room, every message is queued.
        assert!(sink.send_lossy(json!("a1"), Lossy::Progress(&a)));
        assert!(sink.send_lossy(json!("a2"), Lossy::Progress(&a)));
        assert!(sink.send_lossy(json!("log"), Lossy::Log));
        assert!(sink.send_lossy(json!("b1"), Lossy::Progress(&b)));
        // Full: the newest queued value of the token is replaced, the rest stays in order.
        for n in 3..10_000 {
            assert!(sink.send_lossy(json!(format!("a{n}")), Lossy::Progress(&a)));
        }
        assert!(!sink.send_lossy(json!("c1"), Lossy::Progress(&Id::from("c"))));
        let got: Vec<Value> = std::iter::from_fn(|| drain.try_recv()).collect();
        assert_eq!(
            got,
            [json!("a1"), json!("a9999"), json!("log"), json!("b1")]
        );
        assert_eq!(drain.0.lock().dropped, 9_998);
        // Once read, the next progress queues again.
        assert!(sink.send_lossy(json!("a10000"), Lossy::Progress(&a)));
        assert_eq!(drain.try_recv(), Some(json!("a10000")));
    }

    #[test]
    fn a_full_queue_drops_logs_and_new_tokens_but_never_grows() {
        let (sink, drain) = queue(3);
        for n in 0..1000 {
            sink.send_lossy(json!(n), Lossy::Log);
            sink.send_lossy(json!(n), Lossy::Progress(&Id::Number(n)));
        }
        let got: Vec<Value> = std::iter::from_fn(|| drain.try_recv()).collect();
        assert_eq!(got, [json!(0), json!(0), json!(1)]);
        assert_eq!(drain.0.lock().dropped, 1997);
    }

    #[test]
    fn a_message_that_must_arrive_waits_for_room_and_is_never_dropped() {
        let (sink, drain) = queue(2);
        assert!(sink.send_lossy(json!("p"), Lossy::Log));
        futures::executor::block_on(sink.send_wait(json!("q1"))).unwrap();
        let mut waiting = Box::pin(sink.send_wait(json!("q2")));
        assert!(waiting.as_mut().poll(&mut noop()).is_pending());
        assert!(waiting.as_mut().poll(&mut noop()).is_pending());
        assert_eq!(drain.try_recv(), Some(json!("p")));
        assert_eq!(waiting.as_mut().poll(&mut noop()), Poll::Ready(Ok(())));
        let got: Vec<Value> = std::iter::from_fn(|| drain.try_recv()).collect();
        assert_eq!(got, [json!("q1"), json!("q2")]);
    }

    #[test]
    fn a_waiting_sender_gets_its_message_back_when_the_receiver_goes() {
        let (sink, drain) = queue(1);
        futures::executor::block_on(sink.send_wait(json!(1))).unwrap();
        let mut waiting = Box::pin(sink.send_wait(json!(2)));
        assert!(waiting.as_mut().poll(&mut noop()).is_pending());
        drop(drain);
        assert_eq!(
            waiting.as_mut().poll(&mut noop()),
            Poll::Ready(Err(json!(2)))
        );
    }
}
