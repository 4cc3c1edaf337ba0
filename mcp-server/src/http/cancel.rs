//! `notifications/cancelled` for calls that run in an earlier request of the same session.
//!
//! Each HTTP request gets a fresh [`Context`], so a cancellation POSTed later cannot find the
//! call through its own context. Calls of a session register their context here while they
//! run; a cancellation cancels the matching call on this worker and is published on the
//! session's cancel topic, which every worker with a running call of that session listens to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use futures::StreamExt as _;
use mcp_hub::{EventLog, Subscription, Topic};
use mcp_wire::jsonrpc::{Decoded, Id, Message};
use mcp_wire::names::method;
use tokio::sync::oneshot;

use crate::dispatch::Context;

/// The calls of each session running on this worker.
#[derive(Default)]
pub(crate) struct Cancels {
    sessions: Mutex<HashMap<String, SessionCalls>>,
}

struct SessionCalls {
    calls: Vec<(u64, Context)>,
    next: u64,
    /// Dropped with the last call: the session's hub listener ends.
    _stop: oneshot::Sender<()>,
}

/// Keeps a call registered while it runs.
pub(crate) struct Registered {
    cancels: Arc<Cancels>,
    session: String,
    key: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut sessions = self.cancels.lock();
        if let Some(calls) = sessions.get_mut(&self.session) {
            calls.calls.retain(|(key, _)| *key != self.key);
            if calls.calls.is_empty() {
                sessions.remove(&self.session);
            }
        }
    }
}

impl Cancels {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, SessionCalls>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `ctx` (serving a request of `session`) until the guard is dropped. The first
    /// call of a session on this worker starts listening to the session's cancel `topic`
    /// before this returns, so a cancellation published once the call runs is not missed.
    pub(crate) async fn register(
        self: &Arc<Self>,
        log: &Arc<dyn EventLog>,
        topic: Topic,
        session: &str,
        ctx: &Context,
    ) -> Registered {
        let listening = self.lock().contains_key(session);
        let subscription = if listening {
            None
        } else {
            match Subscription::start(log.clone(), topic, None).await {
                Ok(subscription) => Some(subscription),
                Err(err) => {
                    tracing::warn!(%err, "cannot listen for cancellations of a session");
                    None
                }
            }
        };
        let mut sessions = self.lock();
        let calls = sessions.entry(session.to_owned()).or_insert_with(|| {
            let (stop, stopped) = oneshot::channel();
            if let Some(subscription) = subscription {
                tokio::spawn(listen(
                    Arc::downgrade(self),
                    subscription,
                    session.to_owned(),
                    stopped,
                ));
            }
            SessionCalls {
                calls: Vec::new(),
                next: 0,
                _stop: stop,
            }
        });
        let key = calls.next;
        calls.next += 1;
        calls.calls.push((key, ctx.clone()));
        Registered {
            cancels: self.clone(),
            session: session.to_owned(),
            key,
        }
    }

    /// Cancels the call `id` of `session` if it runs on this worker.
    fn cancel_here(&self, session: &str, id: &Id) {
        let contexts: Vec<Context> = self
            .lock()
            .get(session)
            .map(|calls| calls.calls.iter().map(|(_, ctx)| ctx.clone()).collect())
            .unwrap_or_default();
        for ctx in contexts {
            ctx.cancel(id);
        }
    }

    /// Cancels the calls `ids` of `session` here and on every other worker.
    pub(crate) async fn cancel(
        &self,
        log: &Arc<dyn EventLog>,
        topic: &Topic,
        session: &str,
        ids: &[Id],
    ) {
        for id in ids {
            self.cancel_here(session, id);
            let Ok(payload) = serde_json::to_vec(id) else {
                continue;
            };
            if let Err(err) = log.publish(topic, Bytes::from(payload)).await {
                tracing::warn!(%err, "could not publish a cancellation to the other workers");
            }
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
            let Ok(id) = serde_json::from_slice::<Id>(&event.payload) else {
                continue;
            };
            let Some(cancels) = cancels.upgrade() else {
                return;
            };
            cancels.cancel_here(&session, &id);
        }
    };
    tokio::select! {
        () = run => {}
        _ = stopped => {}
    }
}

/// The request ids the `notifications/cancelled` messages of a body name.
pub(crate) fn cancelled_ids(decoded: &Decoded) -> Vec<Id> {
    let messages: Vec<&Message> = match decoded {
        Decoded::Single(Ok(message)) => vec![message],
        Decoded::Single(Err(_)) => Vec::new(),
        Decoded::Batch(items) => items.iter().filter_map(|i| i.as_ref().ok()).collect(),
    };
    messages
        .into_iter()
        .filter_map(|message| match message {
            Message::Notification(n) if n.method == method::NOTIFICATION_CANCELLED => n
                .params
                .as_ref()
                .and_then(|p| p.get("requestId"))
                .and_then(|id| serde_json::from_value::<Id>(id.clone()).ok()),
            _ => None,
        })
        .collect()
}
