//! `notifications/cancelled` for calls that run in an earlier request of the same session.
//!
//! Each HTTP request gets a fresh [`Context`], so a cancellation POSTed later cannot find the
//! call through its own context. Calls of a session register their context here while they
//! run; a cancellation cancels the matching call on this worker and is published on the
//! session's cancel topic, which every worker with a running call of that session listens to.
//!
//! A worker keeps listening to a session's topic for [`LINGER`] (up to a quarter more) after
//! its last call there ends, so the calls of a busy session do not each start a listener (a hub
//! round trip and a task). No call reads the clock for it: a sweeper task, running while any
//! session is listened to, counts quarters of [`LINGER`] and drops the listeners idle for four
//! of them.

use crate::FastMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use mcp_hub::{EventLog, Subscription, Topic};
use mcp_wire::jsonrpc::{Decoded, Id, Message};
use mcp_wire::names::method;
use tokio::sync::{Notify, oneshot};

use crate::dispatch::Context;

/// How long a session's listener outlives its last call on this worker.
pub(crate) const LINGER: Duration = Duration::from_secs(30);

/// Above this many sessions with a listener, idle listeners are dropped at once.
const MAX_SESSIONS: usize = 4096;

/// The calls of each session running on this worker.
pub(crate) struct Cancels {
    sessions: Mutex<Sessions>,
    /// The most calls (requests with an id) of one session in flight here at once.
    max_calls: usize,
}

impl Default for Cancels {
    fn default() -> Self {
        Self::new(usize::MAX)
    }
}

/// A session has its maximum of calls in flight on this worker.
#[derive(Debug, thiserror::Error)]
#[error("the session has its maximum of {0} calls in flight")]
pub(crate) struct Busy(pub(crate) usize);

impl Busy {
    /// The failure the refused request gets: 503, retry later.
    pub(crate) fn failure(&self) -> mcp_adapters::Failure {
        mcp_adapters::Failure::unavailable(format!(
            "the session has its maximum of {} calls in flight; retry later",
            self.0
        ))
    }
}

#[derive(Default)]
struct Sessions {
    by_id: FastMap<String, SessionCalls>,
    /// The sweeper's passes so far (one per quarter of [`LINGER`]).
    epoch: u64,
    /// The sweeper task runs (it ends once no session is listened to).
    sweeping: bool,
}

struct SessionCalls {
    calls: Vec<(u64, Context)>,
    /// The calls (requests with an id) of the registered requests.
    in_flight: usize,
    next: u64,
    /// Since which sweeper pass ([`Sessions::epoch`]) no call of the session runs here.
    idle_since: Option<u64>,
    /// Dropped with the entry: the session's hub listener ends.
    _stop: oneshot::Sender<()>,
    /// The listener's task, so ending a session can wait until it no longer reads the topic.
    listener: Option<tokio::task::JoinHandle<()>>,
}

impl Sessions {
    /// The passes a session stays idle before its listener is dropped: it goes idle between
    /// two passes, so it lingers at least [`LINGER`] and less than five quarters of it.
    const IDLE_PASSES: u64 = 5;

    /// One sweeper pass: drops the listeners of sessions idle here for [`Self::IDLE_PASSES`]
    /// passes. Returns whether any session is still listened to.
    fn pass(&mut self) -> bool {
        self.epoch += 1;
        let epoch = self.epoch;
        self.by_id.retain(|_, calls| match calls.idle_since {
            None => true,
            Some(since) => epoch - since < Self::IDLE_PASSES,
        });
        self.sweeping = !self.by_id.is_empty();
        self.sweeping
    }

    /// Drops the listener of every idle session, when there are too many listened to.
    fn shed_when_crowded(&mut self) {
        if self.by_id.len() > MAX_SESSIONS {
            self.by_id.retain(|_, calls| calls.idle_since.is_none());
        }
    }
}

/// Keeps a call registered while it runs.
pub(crate) struct Registered {
    cancels: Arc<Cancels>,
    session: Arc<str>,
    key: u64,
    /// The calls this request counts for.
    count: usize,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut sessions = self.cancels.lock();
        let sessions = &mut *sessions;
        if let Some(calls) = sessions.by_id.get_mut(&*self.session) {
            calls.calls.retain(|(key, _)| *key != self.key);
            calls.in_flight = calls.in_flight.saturating_sub(self.count);
            if calls.calls.is_empty() {
                // The listener lingers for the session's next call (see `Sessions::pass`).
                calls.idle_since = Some(sessions.epoch);
            }
        }
    }
}

impl Cancels {
    /// Allows at most `max_calls` calls of one session in flight here at once.
    pub(crate) fn new(max_calls: usize) -> Self {
        Self {
            sessions: Mutex::default(),
            max_calls: max_calls.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `ctx` (serving a request of `session`) until the guard is dropped. The first
    /// call of a session on this worker starts listening to the session's cancel `topic`
    /// before this returns, so a cancellation published once the call runs is not missed.
    /// `topic` is only built for the first call (the others find the session listened to).
    ///
    /// `count` is the number of calls (requests with an id) the request holds; [`Busy`] when
    /// they would take the session past its maximum of calls in flight here (the request is
    /// then refused whole).
    pub(crate) async fn register(
        self: &Arc<Self>,
        log: &Arc<dyn EventLog>,
        topic: impl FnOnce() -> Topic,
        session: &Arc<str>,
        ctx: &Context,
        count: usize,
    ) -> Result<Registered, Busy> {
        if count > self.max_calls {
            return Err(Busy(self.max_calls));
        }
        {
            // Listened to already (every call but a session's first here): one lookup, no
            // key to allocate.
            let mut sessions = self.lock();
            sessions.shed_when_crowded();
            if let Some(calls) = sessions.by_id.get_mut(&**session) {
                return self.enlist(calls, session, ctx, count);
            }
        }
        // Boxed: a session's first call here is rare, and the subscription's state would
        // otherwise enlarge the future of every request.
        Box::pin(self.register_first(log, topic, session, ctx, count)).await
    }

    /// [`register`](Self::register) for the first call of `session` on this worker: starts
    /// listening to its cancel topic.
    async fn register_first(
        self: &Arc<Self>,
        log: &Arc<dyn EventLog>,
        topic: impl FnOnce() -> Topic,
        session: &Arc<str>,
        ctx: &Context,
        count: usize,
    ) -> Result<Registered, Busy> {
        let subscription = match Subscription::start(log.clone(), topic(), None).await {
            Ok(subscription) => Some(subscription),
            Err(err) => {
                tracing::warn!(%err, "cannot listen for cancellations of a session");
                None
            }
        };
        let mut sessions = self.lock();
        if !sessions.sweeping {
            sessions.sweeping = true;
            tokio::spawn(sweep(Arc::downgrade(self)));
        }
        // Another call of the session may have started listening meanwhile: then this
        // subscription is dropped unused.
        let calls = sessions
            .by_id
            .entry((**session).to_owned())
            .or_insert_with(|| {
                let (stop, stopped) = oneshot::channel();
                let listener = subscription.map(|subscription| {
                    tokio::spawn(listen(
                        Arc::downgrade(self),
                        subscription,
                        (**session).to_owned(),
                        stopped,
                    ))
                });
                SessionCalls {
                    calls: Vec::new(),
                    in_flight: 0,
                    next: 0,
                    idle_since: None,
                    _stop: stop,
                    listener,
                }
            });
        self.enlist(calls, session, ctx, count)
    }

    /// Adds `ctx` (`count` calls) to the running calls of its session, within the limit.
    fn enlist(
        self: &Arc<Self>,
        calls: &mut SessionCalls,
        session: &Arc<str>,
        ctx: &Context,
        count: usize,
    ) -> Result<Registered, Busy> {
        if calls.in_flight.saturating_add(count) > self.max_calls {
            return Err(Busy(self.max_calls));
        }
        calls.idle_since = None;
        calls.in_flight += count;
        let key = calls.next;
        calls.next += 1;
        calls.calls.push((key, ctx.clone()));
        Ok(Registered {
            cancels: self.clone(),
            session: session.clone(),
            key,
            count,
        })
    }

    /// Stops listening for the cancellations of `session` (it ended), unless a call of it
    /// still runs here.
    pub(crate) fn forget(&self, session: &str) {
        let mut sessions = self.lock();
        if sessions
            .by_id
            .get(session)
            .is_some_and(|calls| calls.calls.is_empty())
        {
            sessions.by_id.remove(session);
        }
    }

    /// The session ended: stops listening for its cancellations (unless a call of it still
    /// runs here) and waits until the listener no longer reads the session's topic, so the
    /// topic can be deleted without a waiting read bringing it back.
    pub(crate) async fn end(&self, session: &str) {
        let listener = {
            let mut sessions = self.lock();
            if !sessions
                .by_id
                .get(session)
                .is_some_and(|calls| calls.calls.is_empty())
            {
                return;
            }
            sessions
                .by_id
                .remove(session)
                .and_then(|mut calls| calls.listener.take())
        };
        if let Some(listener) = listener {
            listener.abort();
            let _ = listener.await;
        }
    }

    /// Cancels the call `id` of `session` if it runs on this worker; a cancellation with a
    /// `cause` (the span that sent it) leaves a span in that trace when it found the call.
    fn cancel_here(&self, session: &str, id: &Id, cause: Option<&str>) {
        let contexts: Vec<Context> = self
            .lock()
            .by_id
            .get(session)
            .map(|calls| calls.calls.iter().map(|(_, ctx)| ctx.clone()).collect())
            .unwrap_or_default();
        for ctx in contexts {
            if ctx.cancel(id) {
                let tag = crate::dispatch::telemetry::session_tag(session);
                crate::trace_link::cancelled_here(id, tag, cause);
            }
        }
    }

    /// Cancels the calls `cancelled` name in `session` here and on every other worker.
    pub(crate) async fn cancel(
        &self,
        log: &Arc<dyn EventLog>,
        topic: &Topic,
        session: &str,
        cancelled: &[Cancelled],
    ) {
        for Cancelled { id, cause } in cancelled {
            self.cancel_here(session, id, cause.as_deref());
            // A bare id, as every worker reads it, unless the cancellation has a cause.
            let payload = match cause {
                None => serde_json::to_vec(id),
                Some(cause) => serde_json::to_vec(&Relayed::Traced {
                    id: id.clone(),
                    traceparent: Some(cause.clone()),
                }),
            };
            let Ok(payload) = payload else {
                continue;
            };
            if let Err(err) = log.publish(topic, Bytes::from(payload)).await {
                tracing::warn!(%err, "could not publish a cancellation to the other workers");
            }
        }
    }
}

/// Every quarter of [`LINGER`], drops the listeners of sessions idle for long enough (see
/// [`Sessions::pass`]); ends once no session is listened to (the next one listened to starts
/// it again) or the cancels are gone.
async fn sweep(cancels: std::sync::Weak<Cancels>) {
    loop {
        tokio::time::sleep(LINGER / 4).await;
        let Some(cancels) = cancels.upgrade() else {
            return;
        };
        if !cancels.lock().pass() {
            return;
        }
    }
}

/// Cancels what the session's cancel topic names, until `stopped`.
async fn listen(
    cancels: std::sync::Weak<Cancels>,
    mut subscription: Subscription,
    session: String,
    stopped: oneshot::Receiver<()>,
) {
    let run = async {
        while let Some(Ok(event)) = subscription.next().await {
            let (id, cause) = match serde_json::from_slice::<Relayed>(&event.payload) {
                Ok(Relayed::Bare(id)) => (id, None),
                Ok(Relayed::Traced { id, traceparent }) => (id, traceparent),
                Err(_) => continue,
            };
            let Some(cancels) = cancels.upgrade() else {
                return;
            };
            cancels.cancel_here(&session, &id, cause.as_deref());
        }
    };
    tokio::select! {
        () = run => {}
        _ = stopped => {}
    }
}

/// Whether a body holds a request (something a later `notifications/cancelled` could name).
pub(crate) fn has_request(body: &mcp_adapters::DecodedBody) -> bool {
    body.items()
        .iter()
        .any(|item| matches!(item, mcp_adapters::Incoming::Call(call) if call.id.is_some()))
}

/// The requests of a body (calls with an id), and the first one's id.
pub(crate) fn requests(body: &mcp_adapters::DecodedBody) -> (usize, Option<Id>) {
    let mut ids = body.items().iter().filter_map(|item| match item {
        mcp_adapters::Incoming::Call(call) => call.id.as_ref(),
        _ => None,
    });
    let first = ids.next().cloned();
    (usize::from(first.is_some()) + ids.count(), first)
}

/// A cancellation of a session's call, as it travels on the session's cancel topic.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum Relayed {
    /// The request id alone (a cancellation outside any exported trace).
    Bare(Id),
    /// The request id and the `traceparent` of the span that sent the cancellation.
    Traced {
        id: Id,
        #[serde(default)]
        traceparent: Option<String>,
    },
}

/// A `notifications/cancelled` of a body: the request id it names, and the span that sent it
/// (its `_meta`'s `traceparent`, kept when spans are exported).
#[derive(Debug)]
pub(crate) struct Cancelled {
    pub(crate) id: Id,
    pub(crate) cause: Option<String>,
}

/// The cancellations (`notifications/cancelled`) of a body.
pub(crate) fn cancellations(decoded: &Decoded) -> Vec<Cancelled> {
    let cancelled = |message: &Message| match message {
        Message::Notification(n) if n.method == method::NOTIFICATION_CANCELLED => {
            let params = n.params.as_ref();
            let id = params
                .and_then(|p| p.get("requestId"))
                .and_then(|id| serde_json::from_value::<Id>(id.clone()).ok())?;
            Some(Cancelled {
                id,
                cause: crate::trace_link::carried(params),
            })
        }
        _ => None,
    };
    // A single message (the common case) needs no list of messages first.
    match decoded {
        Decoded::Single(Ok(message)) => cancelled(message).into_iter().collect(),
        Decoded::Single(Err(_)) => Vec::new(),
        Decoded::Batch(items) => items
            .iter()
            .filter_map(|i| i.as_ref().ok())
            .filter_map(cancelled)
            .collect(),
    }
}

/// Counts the calls of an endpoint that run outside a request future (an HTTP+SSE message's
/// task, a resumable POST stream's driver), so shutdown can wait for them.
#[derive(Default)]
pub(crate) struct Detached {
    running: AtomicUsize,
    idle: Notify,
}

/// One detached call; dropping it ends the count.
pub(crate) struct DetachedCall(Arc<Detached>);

impl Detached {
    /// Counts one more call until the returned guard drops.
    pub(crate) fn start(self: &Arc<Self>) -> DetachedCall {
        self.running.fetch_add(1, Ordering::AcqRel);
        DetachedCall(self.clone())
    }

    /// Waits until no detached call runs.
    pub(crate) async fn done(&self) {
        loop {
            let idle = self.idle.notified();
            if self.running.load(Ordering::Acquire) == 0 {
                return;
            }
            idle.await;
        }
    }
}

impl Drop for DetachedCall {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use mcp_hub::{MemoryHub, Namespace};

    use super::*;

    fn listened(cancels: &Cancels, session: &str) -> bool {
        cancels.lock().by_id.contains_key(session)
    }

    /// Cancels allowing 4 calls per session, an in-memory log, the session id and a context.
    fn setup(session: &str) -> (Arc<Cancels>, Arc<dyn EventLog>, Arc<str>, Context) {
        let log: Arc<dyn EventLog> = Arc::new(MemoryHub::default());
        (
            Arc::new(Cancels::new(4)),
            log,
            Arc::from(session),
            Context::connection(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_sessions_listener_lingers_at_least_linger_and_less_than_five_quarters() {
        let (cancels, log, session, ctx) = setup("s1");
        let topic = || Namespace::root().topic("mcp-cancel/s1");
        let registered = cancels
            .register(&log, topic, &session, &ctx, 1)
            .await
            .unwrap();
        // A running call keeps its session listened to, however long it runs.
        tokio::time::sleep(LINGER * 3).await;
        assert!(listened(&cancels, "s1"));
        drop(registered);
        tokio::time::sleep(LINGER - Duration::from_millis(1)).await;
        assert!(listened(&cancels, "s1"), "dropped before LINGER");
        tokio::time::sleep(LINGER / 4 + Duration::from_millis(2)).await;
        assert!(
            !listened(&cancels, "s1"),
            "kept past five quarters of LINGER"
        );
        // The sweeper ended with the last session, and starts again with the next one.
        assert!(!cancels.lock().sweeping);
        let again = cancels
            .register(&log, topic, &session, &ctx, 1)
            .await
            .unwrap();
        assert!(cancels.lock().sweeping);
        drop(again);
        tokio::time::sleep(LINGER * 2).await;
        assert!(!listened(&cancels, "s1"));
    }

    #[test]
    fn a_relayed_cancellation_is_a_bare_id_unless_it_has_a_cause() {
        // What every worker reads and writes without a trace: the id alone.
        for (payload, id) in [(r#""abc""#, Id::from("abc")), ("7", Id::Number(7))] {
            assert_eq!(
                serde_json::from_str::<Relayed>(payload).unwrap(),
                Relayed::Bare(id.clone())
            );
            assert_eq!(serde_json::to_string(&Relayed::Bare(id)).unwrap(), payload);
        }
        let traced =
            r#"{"id":7,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}"#;
        assert_eq!(
            serde_json::from_str::<Relayed>(traced).unwrap(),
            Relayed::Traced {
                id: Id::Number(7),
                traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
            }
        );
        // Anything else is no cancellation.
        assert!(serde_json::from_str::<Relayed>(r#"{"traceparent":"x"}"#).is_err());
        assert!(serde_json::from_str::<Relayed>("[7]").is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_in_the_meantime_keeps_the_listener() {
        let (cancels, log, session, ctx) = setup("s2");
        let topic = || Namespace::root().topic("mcp-cancel/s2");
        for _ in 0..8 {
            let registered = cancels
                .register(&log, topic, &session, &ctx, 1)
                .await
                .unwrap();
            drop(registered);
            tokio::time::sleep(LINGER / 2).await;
            assert!(listened(&cancels, "s2"));
        }
        // More calls than the session may have in flight are refused whole.
        assert!(
            cancels
                .register(&log, topic, &session, &ctx, 5)
                .await
                .is_err()
        );
    }
}
