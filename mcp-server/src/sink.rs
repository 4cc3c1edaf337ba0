//! The queue a call's messages take before its response: notifications and pushed requests,
//! from the handler (any task) to the call's [`Reply`](crate::Reply) stream.
//!
//! One small allocation per call (a channel would take two, one of them over a kilobyte,
//! for a queue that most calls never use). The queue allocates only when something is sent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use serde_json::Value;

/// The sending side; clones share the queue.
#[derive(Clone, Debug)]
pub(crate) struct Sink(Arc<Shared>);

/// The receiving side. Dropping it closes the queue: later sends fail.
#[derive(Debug)]
pub(crate) struct Drain(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Value>,
    waker: Option<Waker>,
    closed: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent whatever panicked while holding the lock.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A new queue.
pub(crate) fn queue() -> (Sink, Drain) {
    let shared = Arc::new(Shared::default());
    (Sink(shared.clone()), Drain(shared))
}

impl Sink {
    /// Queues `message`; gives it back when the receiving side is gone.
    pub(crate) fn send(&self, message: Value) -> Result<(), Value> {
        let waker = {
            let mut state = self.0.lock();
            if state.closed {
                return Err(message);
            }
            state.queue.push_back(message);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }
}

impl Drain {
    /// The next queued message, or `Pending` (woken by the next send) when there is none.
    pub(crate) fn poll_recv(&self, cx: &mut Context<'_>) -> Poll<Value> {
        let mut state = self.0.lock();
        if let Some(message) = state.queue.pop_front() {
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
        self.0.lock().queue.pop_front()
    }
}

impl Drop for Drain {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.closed = true;
        state.queue.clear();
        state.waker = None;
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

    #[test]
    fn messages_come_out_in_order_and_a_send_wakes_the_receiver() {
        let (sink, drain) = queue();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(drain.poll_recv(&mut cx).is_pending());
        sink.send(json!(1)).unwrap();
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        sink.clone().send(json!(2)).unwrap();
        // Woken once per registration, not once per message.
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert_eq!(drain.poll_recv(&mut cx), Poll::Ready(json!(1)));
        assert_eq!(drain.try_recv(), Some(json!(2)));
        assert_eq!(drain.try_recv(), None);
    }

    #[test]
    fn sends_fail_once_the_receiver_is_gone() {
        let (sink, drain) = queue();
        sink.send(json!("kept until the drop")).unwrap();
        drop(drain);
        assert_eq!(sink.send(json!("late")), Err(json!("late")));
    }
}
