//! An upstream client per downstream session ([`GatewayBuilder::start_per_session`]): for a
//! stdio upstream, one child process each.
//!
//! The first client (given at start) lists the catalog, follows the upstream's changes and
//! serves the requests that come in no session (stdio, 2026-07-28). Each downstream session
//! gets a client of its own at its first forwarded request, kept while the session lives and
//! is used: it is closed (a stdio child: its stdin closed, then killed after the client's grace)
//! when the session ends (its client ended it, or it expired), when it was idle for the idle
//! setting, or when the gateway stops. A client found closed by a forwarded request (its child
//! exited) is replaced at the session's next request. At most `max` clients exist at once, the
//! first one included; a session that would need one more is refused.
//!
//! [`GatewayBuilder::start_per_session`]: crate::GatewayBuilder::start_per_session

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use mcp_client::Client;
use mcp_server::{Exchange, SessionRef};
use tokio::sync::{OnceCell, Semaphore};

use crate::link::{Busy, Link, Routed, SessionLinks};
use crate::relay::QuestionRelay;

/// Makes one upstream client, with the relay given installed on its builder; the error's text
/// when it cannot.
pub(crate) type Connect =
    Arc<dyn Fn(QuestionRelay) -> BoxFuture<'static, Result<Client, String>> + Send + Sync>;

/// The clients of the downstream sessions.
pub(crate) struct Children {
    connect: Connect,
    /// The most clients at once, the first (shared) one included.
    max: usize,
    idle: Duration,
    /// Questions are relayed (each client gets a relay of its own).
    relayed: bool,
    permits: Arc<Semaphore>,
    call_timeout: Option<Duration>,
    sessions: Mutex<HashMap<SessionRef, Arc<Slot>>>,
}

impl std::fmt::Debug for Children {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Children")
            .field("max", &self.max)
            .field("idle", &self.idle)
            .field("sessions", &self.count())
            .finish_non_exhaustive()
    }
}

/// One session's client: made once (concurrent first requests wait for the same one).
struct Slot {
    link: OnceCell<Arc<Link>>,
    /// Forwarded requests using it now.
    busy: AtomicUsize,
    /// When the last of them ended (or the slot was made).
    last_used: Mutex<Instant>,
}

/// Keeps a session's client busy (not idle) while a forwarded request uses it.
pub(crate) struct InUse {
    slot: Option<Arc<Slot>>,
}

impl Drop for InUse {
    fn drop(&mut self) {
        if let Some(slot) = &self.slot {
            *slot
                .last_used
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Instant::now();
            slot.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Why a downstream session has no upstream client.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChildError {
    /// Every client the limit allows is in use by other sessions.
    #[error(
        "the gateway serves its maximum of {0} upstream connections (one per downstream session, \
         the shared one included); this session is refused until another ends or is idle"
    )]
    Full(usize),
    /// The client could not be made (the child did not start, or did not answer).
    #[error("the upstream could not be started for this session: {0}")]
    Connect(String),
}

impl Children {
    pub(crate) fn new(
        connect: Connect,
        max: usize,
        idle: Duration,
        relayed: bool,
        permits: Arc<Semaphore>,
        call_timeout: Option<Duration>,
    ) -> Self {
        Self {
            connect,
            max,
            idle,
            relayed,
            permits,
            call_timeout,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Makes a client and its link (with a relay of its own when questions are relayed).
    async fn make(&self) -> Result<Link, String> {
        let relay = QuestionRelay::new();
        let client = (self.connect)(relay.clone()).await?;
        let in_flight = self.relayed.then_some(relay.in_flight);
        Ok(Link::with_permits(
            client,
            self.permits.clone(),
            self.call_timeout,
            in_flight,
        ))
    }

    /// How many session clients exist now (the shared one not counted).
    pub(crate) fn count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionRef, Arc<Slot>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The client of `ex`'s session, made on its first request; `None` when the request
    /// came in no session (the shared client serves it).
    pub(crate) async fn for_exchange(
        &self,
        ex: &Exchange,
    ) -> Result<Option<(Arc<Link>, InUse)>, ChildError> {
        let Some(session) = ex.session() else {
            return Ok(None);
        };
        let mut replaced = None;
        let slot = {
            let mut sessions = self.lock();
            // A client found closed (its child exited) is replaced, in the same place.
            if let Some(old) = sessions.get(&session)
                && old.link.get().is_some_and(|link| link.is_closed())
            {
                replaced = sessions.remove(&session);
                let slot = Arc::new(Slot {
                    link: OnceCell::new(),
                    busy: AtomicUsize::new(0),
                    last_used: Mutex::new(Instant::now()),
                });
                sessions.insert(session.clone(), slot);
            }
            match sessions.get(&session) {
                Some(slot) => slot.clone(),
                None => {
                    // The shared client counts toward the limit.
                    if sessions.len() + 1 >= self.max {
                        return Err(ChildError::Full(self.max));
                    }
                    let slot = Arc::new(Slot {
                        link: OnceCell::new(),
                        busy: AtomicUsize::new(0),
                        last_used: Mutex::new(Instant::now()),
                    });
                    sessions.insert(session.clone(), slot.clone());
                    slot
                }
            }
        };
        if let Some(link) = replaced.and_then(|old| old.link.get().cloned()) {
            tracing::debug!("a session's upstream connection closed; starting another");
            tokio::spawn(async move { close(&link).await });
        }
        slot.busy.fetch_add(1, Ordering::AcqRel);
        let in_use = InUse {
            slot: Some(slot.clone()),
        };
        let made = slot
            .link
            .get_or_try_init(|| async { self.make().await.map(Arc::new) })
            .await;
        match made {
            Ok(link) => Ok(Some((link.clone(), in_use))),
            Err(e) => {
                drop(in_use);
                let mut sessions = self.lock();
                if sessions
                    .get(&session)
                    .is_some_and(|s| Arc::ptr_eq(s, &slot))
                {
                    sessions.remove(&session);
                }
                Err(ChildError::Connect(e))
            }
        }
    }

    /// Takes out the clients to close: of the sessions that ended, and those idle for the idle
    /// setting with no request in flight.
    async fn expired(&self) -> Vec<Arc<Link>> {
        let candidates: Vec<(SessionRef, Arc<Slot>)> = self
            .lock()
            .iter()
            .map(|(session, slot)| (session.clone(), slot.clone()))
            .collect();
        let mut out = Vec::new();
        for (session, slot) in candidates {
            if slot.link.get().is_none() {
                // Still starting.
                continue;
            }
            let idle = slot.busy.load(Ordering::Acquire) == 0
                && slot
                    .last_used
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .elapsed()
                    >= self.idle;
            let closed = slot.link.get().is_some_and(|link| link.is_closed());
            let ended = !idle
                && !closed
                && slot.busy.load(Ordering::Acquire) == 0
                && !session.is_live().await;
            if !(idle || closed || ended) {
                continue;
            }
            let mut sessions = self.lock();
            // Not taken if a request started using it meanwhile.
            if slot.busy.load(Ordering::Acquire) == 0
                && sessions
                    .get(&session)
                    .is_some_and(|s| Arc::ptr_eq(s, &slot))
            {
                sessions.remove(&session);
                drop(sessions);
                if let Some(link) = slot.link.get() {
                    tracing::debug!(
                        reason = if idle {
                            "idle"
                        } else if closed {
                            "closed"
                        } else {
                            "session ended"
                        },
                        "closing a session's upstream connection"
                    );
                    out.push(link.clone());
                }
            }
        }
        out
    }

    /// Takes out every session client (the gateway stops).
    pub(crate) fn drain(&self) -> Vec<Arc<Link>> {
        self.lock()
            .drain()
            .filter_map(|(_, slot)| slot.link.get().cloned())
            .collect()
    }

    /// How often the reaper looks: a quarter of the idle setting, between 10 ms and 5 s.
    fn tick(&self) -> Duration {
        (self.idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(5))
    }
}

impl SessionLinks for Children {
    fn link_for<'a>(&'a self, ex: &'a Exchange) -> BoxFuture<'a, Result<Routed, String>> {
        Box::pin(async move {
            match self.for_exchange(ex).await {
                Ok(found) => Ok(found.map(|(link, in_use)| (link, Box::new(in_use) as Busy))),
                Err(e) => Err(e.to_string()),
            }
        })
    }
}

/// Closes the session clients that ended or idled, while the gateway lives.
pub(crate) async fn reap(children: Weak<Children>) {
    loop {
        let Some(tick) = children.upgrade().map(|c| c.tick()) else {
            return;
        };
        tokio::time::sleep(tick).await;
        let Some(strong) = children.upgrade() else {
            return;
        };
        let expired = strong.expired().await;
        drop(strong);
        for link in expired {
            close(&link).await;
        }
    }
}

/// Ends one client (a stdio child: stdin closed, killed after the grace).
pub(crate) async fn close(link: &Link) {
    if let Err(e) = link.client.close().await {
        tracing::debug!(error = %e, "closing an upstream connection");
    }
}
