//! Sessions as small records in the hub's state store, so that any worker serves any session.

use crate::FastMap;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use futures::StreamExt as _;
use mcp_adapters::{AdapterSet, ClientContext};
use mcp_hub::{EventLog, Key, Namespace, StateStore, StoreError, Subscription, Topic};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::dispatch::Context;
use crate::dispatch::session::{Session, stated_nothing};

use super::held::{Eviction, Full, Held, PeerKey, Place, Reservation};

/// The longest session id accepted from a client; longer ones cannot be ours.
const MAX_ID_LEN: usize = 128;

/// How many compare-and-set attempts a session update makes before giving up.
const SAVE_ATTEMPTS: usize = 8;

/// How many compare-and-set attempts counting a session for its principal makes: a burst of
/// one principal's sessions on several workers writes one index record, and each round of
/// conflicts lets one of them through.
const CLAIM_ATTEMPTS: usize = 64;

/// How long a worker waits before following session changes again after the feed failed.
const FEED_RETRY: Duration = Duration::from_secs(1);

/// What a session record holds (JSON in the store).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SessionRecord {
    /// The negotiated protocol version; `None` on an HTTP+SSE stream before `initialize`.
    #[serde(
        rename = "protocolVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) version: Option<String>,
    /// The client's `Implementation` from `initialize`.
    #[serde(
        rename = "clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) client_info: Option<Value>,
    /// The client's capabilities from `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) capabilities: Option<Map<String, Value>>,
    /// The level `logging/setLevel` set.
    #[serde(rename = "logLevel", default, skip_serializing_if = "Option::is_none")]
    pub(crate) log_level: Option<String>,
    /// Resource URIs the client subscribed to (`resources/subscribe`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) subscriptions: Vec<String>,
    /// The session is an HTTP+SSE stream (its messages go out through the hub topic of the
    /// stream), not a Streamable HTTP session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) sse: bool,
    /// The principal the session belongs to (a digest, see `auth::owner_digest`), when the
    /// endpoint has a resource server: another principal presenting the id is told the
    /// session does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<String>,
    /// `client_info` and `capabilities` as one shared [`ClientContext`], made when first
    /// needed (not stored).
    #[serde(skip)]
    pub(crate) client: SharedClient,
}

/// A lazily made, shared copy of a record's client. Not part of the record's value: every
/// record compares equal on it, and a clone starts without one.
#[derive(Default)]
pub(crate) struct SharedClient(std::sync::OnceLock<Arc<ClientContext>>);

impl Clone for SharedClient {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for SharedClient {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for SharedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedClient")
    }
}

impl SessionRecord {
    /// The session this record stores, for a [`Context`](crate::Context) to start from.
    pub(crate) fn load(&self, adapters: &AdapterSet) -> Session {
        // Built once per decoded record, then shared by every call of the session.
        let client = self
            .client
            .0
            .get_or_init(|| {
                Arc::new(ClientContext {
                    info: self.client_info.clone(),
                    capabilities: self.capabilities.clone(),
                })
            })
            .clone();
        Session {
            adapter: self.version.as_deref().and_then(|v| adapters.by_version(v)),
            client: (!stated_nothing(&client)).then_some(client),
            log_level: self.log_level.as_deref().and_then(|l| l.parse().ok()),
            subscriptions: self.subscriptions.iter().cloned().collect(),
            listeners: None,
        }
    }

    /// Whether [`absorb`](Self::absorb) would change anything (without copying the record).
    pub(crate) fn would_change(&self, now: &Session) -> bool {
        // The usual call's connection still holds this record's shared client: the same
        // object, so nothing to compare member by member.
        let same_client = self
            .client
            .0
            .get()
            .is_some_and(|shared| std::ptr::eq(&**shared, now.client()));
        now.adapter
            .is_some_and(|a| self.version.as_deref() != Some(a.version()))
            || (!same_client
                && ((now.client().info.is_some() && now.client().info != self.client_info)
                    || (now.client().capabilities.is_some()
                        && now.client().capabilities != self.capabilities)))
            || now
                .log_level
                .is_some_and(|l| self.log_level.as_deref() != Some(l.as_str()))
            || !now.subscriptions.iter().eq(self.subscriptions.iter())
    }

    /// Takes what a call changed from the connection state `now`; returns whether anything
    /// did ([`would_change`](Self::would_change) decides, so the two cannot disagree).
    pub(crate) fn absorb(&mut self, now: &Session) -> bool {
        if !self.would_change(now) {
            return false;
        }
        // The client may change below: the shared copy is built again when next asked for.
        self.client = SharedClient::default();
        if let Some(adapter) = now.adapter {
            self.version = Some(adapter.version().to_owned());
        }
        let client = now.client();
        if client.info.is_some() {
            self.client_info.clone_from(&client.info);
        }
        if client.capabilities.is_some() {
            self.capabilities.clone_from(&client.capabilities);
        }
        if let Some(level) = now.log_level {
            self.log_level = Some(level.as_str().to_owned());
        }
        // The connection started from the record's set, so a difference is a (un)subscribe.
        self.subscriptions = now.subscriptions.iter().cloned().collect();
        true
    }

    fn to_bytes(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }
}

/// A session read from the store.
#[derive(Clone, Debug)]
pub(crate) struct Loaded {
    /// The session id, shared with this worker's cache of decoded records (a request of a
    /// known session copies no id).
    pub(crate) id: Arc<str>,
    /// The decoded record, shared with this worker's cache of decoded records.
    pub(crate) record: Arc<SessionRecord>,
    pub(crate) version: u64,
}

/// The most decoded records a worker keeps; the cache is emptied when it is full. Small: it
/// serves the sessions that are calling now, and idle sessions must stay cheap (issue 12).
const MAX_CACHED: usize = 1024;

/// A decoded session record and the exact stored bytes and version it was decoded from.
struct Cached {
    /// The session id, the same text as the map's key; handed out with [`Loaded`].
    id: Arc<str>,
    version: u64,
    bytes: Bytes,
    record: Arc<SessionRecord>,
    /// Until when the record may be served without reading the store (see [`Feed`]); `None`:
    /// only reused when the store returns the same version and bytes again.
    trusted_until: Option<tokio::time::Instant>,
}

/// The records decoded by one worker, by session id.
type Decoded = Mutex<FastMap<Arc<str>, Cached>>;

/// The invalidation feed of a worker's session cache ([`HttpConfig::session_cache`]).
///
/// Every worker that writes or deletes a session record publishes the session id on one hub
/// topic of the namespace; every worker follows that topic and drops its copy. A record read
/// from the store is trusted (served from memory, without a store read) only while the feed is
/// subscribed and only if no invalidation arrived between the read and the moment it is
/// cached (the epoch), and at most for the configured time.
///
/// [`HttpConfig::session_cache`]: crate::http::HttpConfig::session_cache
struct Feed {
    /// The feed task was started.
    started: AtomicBool,
    /// The feed is subscribed: records read from now on may be trusted.
    live: AtomicBool,
    /// Bumped before each invalidation is applied and when the feed stops.
    epoch: AtomicU64,
    /// This worker's tag in invalidations, so it does not drop what it wrote itself.
    tag: String,
    /// Counts invalidations applied (tests wait on it) and turns on when the feed is live.
    seen: watch::Sender<(bool, u64)>,
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    /// No live session has that id.
    #[error("session not found")]
    NotFound,
    /// This worker holds [`HttpConfig::max_sessions`](crate::http::HttpConfig::max_sessions)
    /// sessions already.
    #[error("this server holds its maximum of {0} sessions")]
    Full(usize),
    /// The principal holds
    /// [`HttpConfig::max_sessions_per_principal`](crate::http::HttpConfig::max_sessions_per_principal)
    /// sessions already, on all workers together.
    #[error("this principal holds its maximum of {0} sessions")]
    PrincipalFull(usize),
    /// The peer (a client address) holds
    /// [`HttpConfig::max_sessions_per_peer`](crate::http::HttpConfig::max_sessions_per_peer)
    /// sessions on this worker already, every one of them busy.
    #[error("this client address holds its maximum of {0} sessions, all in use")]
    PeerFull(usize),
    /// The store failed.
    #[error("session store: {0}")]
    Store(#[from] StoreError),
    /// Other writers kept winning the compare-and-set.
    #[error("the session record kept changing under this update")]
    Contended,
    /// No randomness for a new id.
    #[error("no randomness for a session id: {0}")]
    Random(String),
}

impl SessionError {
    /// The failure a client is told: a full server or a store outage is 503 (retry later).
    pub(crate) fn failure(&self) -> mcp_adapters::Failure {
        match self {
            Self::NotFound => mcp_adapters::Failure::session_not_found(),
            Self::Full(_) => mcp_adapters::Failure::unavailable(
                "the server holds its maximum number of sessions, all in use; retry later",
            ),
            Self::PrincipalFull(max) => mcp_adapters::Failure::unavailable(format!(
                "this principal holds its maximum of {max} sessions; end one (DELETE) or retry once one expired"
            )),
            Self::PeerFull(max) => mcp_adapters::Failure::unavailable(format!(
                "this client address holds its maximum of {max} sessions, all in use; end one (DELETE) or retry later"
            )),
            _ => mcp_adapters::Failure::unavailable("the session store is unavailable"),
        }
    }

    /// A refusal the client is expected to meet (a limit, an unknown session), not a failure
    /// of the server worth an error line.
    pub(crate) fn is_expected(&self) -> bool {
        matches!(
            self,
            Self::NotFound | Self::Full(_) | Self::PrincipalFull(_) | Self::PeerFull(_)
        )
    }

    /// The seconds a refused client is told to wait (`Retry-After`) before it tries again:
    /// for a session limit whose sessions are all in use.
    pub(crate) fn retry_after(&self) -> Option<u64> {
        matches!(self, Self::Full(_) | Self::PeerFull(_)).then_some(SESSION_RETRY_AFTER)
    }
}

/// The `Retry-After` (seconds) of an `initialize` refused because every session it could take
/// the place of is in use: calls are usually short.
pub(crate) const SESSION_RETRY_AFTER: u64 = 2;

/// At most one log line per cause of a flood (an eviction, a refusal at a session limit) in
/// this time; the line says how many were not logged since the previous one.
const FLOOD_LOG_EVERY: Duration = Duration::from_secs(5);

/// A rate limit for the log lines of one cause.
#[derive(Default)]
pub(crate) struct Throttle {
    last: Mutex<Option<Instant>>,
    suppressed: AtomicU64,
}

impl Throttle {
    /// `Some(n)` when a line may be written at `now` (`n` lines were suppressed since the
    /// previous one), `None` when it is suppressed.
    pub(crate) fn permit(&self, now: Instant) -> Option<u64> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|at| now.saturating_duration_since(at) < FLOOD_LOG_EVERY) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *last = Some(now);
        Some(self.suppressed.swap(0, Ordering::Relaxed))
    }
}

/// The log throttles of a worker's sessions, one per cause.
#[derive(Default)]
struct FloodLog {
    evicted_cap: Throttle,
    evicted_peer: Throttle,
}

/// This worker's bookkeeping of the sessions it minted or renewed: when it last renewed each
/// one's TTL, and when to look whether it has ended (expired in the store, or deleted on
/// another worker) so its hub topics go with it.
///
/// Every operation is O(1) amortised, whatever the number of sessions: a hash map by id, and
/// a queue of checks in deadline order. Every check is queued one TTL after the time it is
/// queued at, so the queue is in deadline order by construction (a timer wheel with one
/// slot); a renewal queues a new check at most once per quarter of the TTL, and an outdated
/// check is skipped when it comes up (its ticket is no longer the session's), so the queue
/// holds at most about five checks per session.
#[derive(Default)]
struct Touches {
    by_id: FastMap<Arc<str>, Touch>,
    /// `(due, ticket, id)`, oldest first.
    checks: VecDeque<(Instant, u64, Arc<str>)>,
    next_ticket: u64,
    /// The sessions this worker minted that it has not seen end.
    minted: usize,
    /// The same sessions, busy or idle in least recently used order, for eviction.
    held: Held,
}

struct Touch {
    /// When this worker last renewed the session's TTL (read from tokio's clock, as the
    /// renewal check's `now` is).
    renewed: Instant,
    /// When the session's pending check was queued.
    queued: Instant,
    /// The pending check's ticket.
    ticket: u64,
    /// This worker minted the session (it counts against the limit here).
    minted: bool,
    /// Where [`Held`] keeps the session (minted here), so marking it busy looks no id up.
    place: Option<Place>,
}

impl Touches {
    /// Records a renewal of `id` at `now` (a new session when `minted`); queues a check when
    /// the pending one is older than `ttl / 4`. Returns `false` when the map is full and `id`
    /// is not in it (the session is then renewed on every use, which stays correct).
    fn renewed(&mut self, id: &str, now: Instant, ttl: Duration, minted: bool, cap: usize) -> bool {
        let ticket = self.next_ticket;
        if let Some(touch) = self.by_id.get_mut(id) {
            touch.renewed = now;
            if now.saturating_duration_since(touch.queued) < ttl / 4 {
                return true;
            }
            touch.queued = now;
            touch.ticket = ticket;
            self.next_ticket += 1;
            if let Some((key, _)) = self.by_id.get_key_value(id) {
                self.checks
                    .push_back((later(now, ttl), ticket, key.clone()));
            }
            return true;
        }
        if !minted && self.by_id.len() >= cap {
            return false;
        }
        self.insert(Arc::from(id), now, ttl, minted, None);
        true
    }

    /// Starts tracking session `key` (not tracked yet), renewed at `now`; `place` is where
    /// [`Held`] keeps it when this worker minted it.
    fn insert(
        &mut self,
        key: Arc<str>,
        now: Instant,
        ttl: Duration,
        minted: bool,
        place: Option<Place>,
    ) {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.minted += usize::from(minted);
        self.by_id.insert(
            key.clone(),
            Touch {
                renewed: now,
                queued: now,
                ticket,
                minted,
                place,
            },
        );
        self.checks.push_back((later(now, ttl), ticket, key));
    }

    /// Forgets `id` (it ended).
    fn remove(&mut self, id: &str) {
        if let Some(touch) = self.by_id.remove(id) {
            self.minted -= usize::from(touch.minted);
        }
        self.held.forget(id);
    }

    /// The checks due at `now` that are still the sessions' pending ones (at most `max`).
    fn due(&mut self, now: Instant, max: usize) -> Vec<(u64, Arc<str>)> {
        let mut due = Vec::new();
        while due.len() < max {
            match self.checks.front() {
                Some((at, _, _)) if *at <= now => {}
                _ => break,
            }
            let Some((_, ticket, id)) = self.checks.pop_front() else {
                break;
            };
            if self.by_id.get(&id).is_some_and(|t| t.ticket == ticket) {
                due.push((ticket, id));
            }
        }
        due
    }

    /// The session of a due check is still live (renewed by another worker): looks again
    /// one TTL from `now`, unless this worker renewed it meanwhile.
    fn requeue(&mut self, id: &Arc<str>, ticket: u64, now: Instant, ttl: Duration) {
        let next = self.next_ticket;
        let Some(touch) = self.by_id.get_mut(id) else {
            return;
        };
        if touch.ticket != ticket {
            return;
        }
        touch.ticket = next;
        touch.queued = now;
        self.next_ticket += 1;
        self.checks.push_back((later(now, ttl), next, id.clone()));
    }

    /// The session of a due check ended (unless this worker renewed it meanwhile): forgets
    /// it and returns whether it did.
    fn ended(&mut self, id: &Arc<str>, ticket: u64) -> bool {
        if self.by_id.get(id).is_none_or(|t| t.ticket != ticket) {
            return false;
        }
        self.remove(id);
        true
    }
}

/// A session kept busy on this worker (a request of it runs, or a stream of it is open):
/// never evicted while any hold of it lives.
pub(crate) struct Hold {
    touched: Arc<Mutex<Touches>>,
    place: Place,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.touched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .held
            .release(self.place);
    }
}

/// A place reserved for a session being minted, given back when dropped unfilled.
struct Reserved<'a> {
    sessions: &'a Sessions,
    reservation: Option<Reservation>,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if let Some(reservation) = self.reservation.take() {
            self.sessions.lock_touched().held.unreserve(reservation);
        }
    }
}

/// `now + ttl`, or a year from now when that cannot be represented.
fn later(now: Instant, ttl: Duration) -> Instant {
    now.checked_add(ttl)
        .or_else(|| now.checked_add(Duration::from_secs(365 * 86_400)))
        .unwrap_or(now)
}

/// How long a request waits for the session store when this worker holds a copy of the
/// session it can serve instead (with the session cache on): a store that fails or is slower
/// than this (restarting, failing over) leaves the session's clients served from the copy.
const STALE_WAIT: Duration = Duration::from_millis(3);

/// The most session checks one pass of the expiry task makes before it yields.
const CHECKS_PER_PASS: usize = 256;

/// The sessions of one endpoint: records in the state store, TTLs renewed lazily.
#[derive(Clone)]
pub(crate) struct Sessions {
    store: Arc<dyn StateStore>,
    namespace: Namespace,
    ttl: Duration,
    /// When this worker last renewed each session's TTL, and when to look whether it ended.
    touched: Arc<Mutex<Touches>>,
    /// The most sessions this worker mints and holds at once.
    max_sessions: usize,
    /// The most sessions one principal holds on all workers together (`usize::MAX`: no
    /// limit), counted in an index record per principal in the store.
    max_per_owner: usize,
    /// The most sessions without a principal one peer holds on this worker (`usize::MAX`:
    /// no limit).
    max_per_peer: usize,
    /// The rate limits of the log lines of evictions and refusals.
    flood: Arc<FloodLog>,
    /// The event log of the per-session topics (HTTP+SSE streams, cancellations), deleted
    /// with the session; `None` in tests of the cache alone.
    topics: Option<Arc<dyn EventLog>>,
    /// This worker's listeners of session cancel topics, stopped when a session ends.
    cancels: Option<Arc<super::cancel::Cancels>>,
    /// The expiry task was started.
    sweeping: Arc<AtomicBool>,
    /// Records this worker decoded, by session id. An entry is reused when the store returns
    /// the same version and the same bytes again, and served without a store read while it is
    /// trusted (see [`Feed`]).
    decoded: Arc<Decoded>,
    /// The event log invalidations travel on, and how long a record may be trusted; `None`
    /// when the cache is off (every load reads the store).
    cache: Option<(Arc<dyn EventLog>, Duration)>,
    feed: Arc<Feed>,
    /// Dropped with the last clone: the feed task ends.
    alive: Arc<watch::Sender<()>>,
    /// Where sessions refused at a limit are logged and counted by reason.
    refusals: Arc<crate::refusal::Refusals>,
    /// Where sessions created, ended and refused are counted.
    #[cfg(feature = "metrics")]
    metrics: Option<crate::Metrics>,
}

impl Sessions {
    /// The sessions of `namespace` in `store`; with `cache` (the event log and a trust time
    /// above zero) records are served from memory between changes, invalidated through the log.
    pub(crate) fn new(
        store: Arc<dyn StateStore>,
        namespace: Namespace,
        ttl: Duration,
        cache: Option<(Arc<dyn EventLog>, Duration)>,
    ) -> Self {
        let mut tag = [0u8; 12];
        // Without randomness the tag is empty: this worker then also drops what it wrote.
        let tag = getrandom::fill(&mut tag)
            .map(|()| URL_SAFE_NO_PAD.encode(tag))
            .unwrap_or_default();
        Self {
            store,
            namespace,
            ttl,
            touched: Arc::new(Mutex::new(Touches::default())),
            max_sessions: usize::MAX,
            max_per_owner: usize::MAX,
            max_per_peer: usize::MAX,
            flood: Arc::default(),
            topics: cache.as_ref().map(|(log, _)| log.clone()),
            cancels: None,
            sweeping: Arc::new(AtomicBool::new(false)),
            decoded: Arc::new(Mutex::new(FastMap::default())),
            cache: cache.filter(|(_, trust)| !trust.is_zero()),
            feed: Arc::new(Feed {
                started: AtomicBool::new(false),
                live: AtomicBool::new(false),
                epoch: AtomicU64::new(0),
                tag,
                seen: watch::channel((false, 0)).0,
            }),
            alive: Arc::new(watch::channel(()).0),
            refusals: Arc::default(),
            #[cfg(feature = "metrics")]
            metrics: None,
        }
    }

    /// The same sessions, noting refusals at a limit in `refusals` (the server's).
    pub(crate) fn noting(mut self, refusals: Arc<crate::refusal::Refusals>) -> Self {
        self.refusals = refusals;
        self
    }

    /// Where refusals of these sessions are noted.
    pub(crate) fn refusals(&self) -> &crate::refusal::Refusals {
        &self.refusals
    }

    /// The same sessions, counted into `metrics`.
    #[cfg(feature = "metrics")]
    pub(crate) fn metered(mut self, metrics: Option<crate::Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The same sessions, holding at most `max` sessions minted here, `per_owner` sessions
    /// of one principal on all workers and `per_peer` sessions without a principal of one
    /// peer here, and stopping `cancels`' listeners of a session when it ends.
    pub(crate) fn limited(
        mut self,
        max: usize,
        per_owner: usize,
        per_peer: usize,
        cancels: Arc<super::cancel::Cancels>,
    ) -> Self {
        self.max_sessions = max.max(1);
        self.max_per_owner = per_owner.max(1);
        self.max_per_peer = per_peer.max(1);
        self.cancels = Some(cancels);
        self
    }

    /// Marks session `id` busy on this worker until the returned hold drops (a request of it
    /// runs, a stream of it is open): a busy session is never evicted. `None` when this
    /// worker did not mint the session (it is not counted here).
    #[cfg(test)]
    pub(crate) fn hold(&self, id: &str) -> Option<Hold> {
        let place = self.lock_touched().held.hold(id)?;
        Some(Hold {
            touched: self.touched.clone(),
            place,
        })
    }

    /// How many sessions this worker holds (minted and not seen end, or being minted).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.lock_touched().held.count()
    }

    /// How many sessions this worker minted and has not seen end.
    #[cfg(test)]
    fn minted(&self) -> usize {
        self.lock_touched().minted
    }

    fn lock_touched(&self) -> std::sync::MutexGuard<'_, Touches> {
        self.touched.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts the expiry task once (the first session minted or renewed here; needs a
    /// runtime).
    fn start_sweep(&self) {
        if self.sweeping.load(Ordering::Acquire) || self.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let sweeper = Sweeper {
            store: self.store.clone(),
            namespace: self.namespace.clone(),
            ttl: self.ttl,
            touched: Arc::downgrade(&self.touched),
            decoded: Arc::downgrade(&self.decoded),
            topics: self.topics.clone(),
            cancels: self.cancels.clone(),
        };
        tokio::spawn(sweeper.run(self.alive.subscribe()));
    }

    /// The hub topic session invalidations travel on.
    fn changes_topic(&self) -> Topic {
        self.namespace.topic("mcp-session-changes")
    }

    /// Starts the invalidation feed once (the first load or write; needs a runtime).
    fn start_feed(&self) {
        let Some((log, _)) = &self.cache else { return };
        // A read first: every load calls this, and a write would bounce the cache line.
        if self.feed.started.load(Ordering::Acquire)
            || self.feed.started.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let feed = self.feed.clone();
        let decoded = Arc::downgrade(&self.decoded);
        let gone = self.alive.subscribe();
        tokio::spawn(run_feed(
            log.clone(),
            self.changes_topic(),
            feed,
            decoded,
            gone,
        ));
    }

    /// This worker's copy of session `id`, trusted or not, when the cache is on: what a
    /// request is served from while the store fails or does not answer within
    /// [`STALE_WAIT`]. A copy is dropped when an invalidation of the session arrives or the
    /// store says the session is gone, so it is the session as last seen here.
    fn copy(&self, id: &str) -> Option<Loaded> {
        self.cache.as_ref()?;
        let decoded = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        decoded.get(id).map(|cached| Loaded {
            id: cached.id.clone(),
            record: cached.record.clone(),
            version: cached.version,
        })
    }

    /// This worker's decoded record of session `id` when it is trusted at `now` (tokio's
    /// clock, so tests with paused time see trust end).
    fn trusted(&self, id: &str, now: tokio::time::Instant) -> Option<Loaded> {
        if !self.feed.live.load(Ordering::Acquire) {
            return None;
        }
        let decoded = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        let cached = decoded.get(id)?;
        let until = cached.trusted_until?;
        (now < until).then(|| Loaded {
            id: cached.id.clone(),
            record: cached.record.clone(),
            version: cached.version,
        })
    }

    /// The trust a record read now gets, if no invalidation arrives before it is cached:
    /// the feed's epoch, or `None` when records are not trusted.
    fn trust_epoch(&self) -> Option<u64> {
        self.cache.as_ref()?;
        self.feed
            .live
            .load(Ordering::Acquire)
            .then(|| self.feed.epoch.load(Ordering::Acquire))
    }

    /// Decodes the stored `record` of session `id`, reusing this worker's earlier decoding
    /// when the stored version and bytes are the same. `epoch` as in [`remember`](Self::remember).
    fn decode(
        &self,
        id: &str,
        record: mcp_hub::Record,
        epoch: Option<u64>,
    ) -> Result<Loaded, SessionError> {
        let decoded = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        let reused = decoded
            .get(id)
            .filter(|c| c.version == record.version && c.bytes == record.value)
            .map(|c| c.record.clone());
        drop(decoded);
        let parsed = match reused {
            Some(parsed) => parsed,
            None => Arc::new(
                serde_json::from_slice::<SessionRecord>(&record.value)
                    .map_err(|_| SessionError::NotFound)?,
            ),
        };
        let id = self.remember(id, record.version, record.value, parsed.clone(), epoch);
        Ok(Loaded {
            id,
            record: parsed,
            version: record.version,
        })
    }

    /// Remembers a record this worker read or stored. It is trusted when `epoch` is the feed's
    /// epoch from before the store operation and still is now (no invalidation came between).
    /// The id as the cache holds it (a record already cached keeps its id: no copy).
    fn remember(
        &self,
        id: &str,
        version: u64,
        bytes: Bytes,
        record: Arc<SessionRecord>,
        epoch: Option<u64>,
    ) -> Arc<str> {
        let mut decoded = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        if decoded.len() >= MAX_CACHED && !decoded.contains_key(id) {
            decoded.clear();
        }
        let trusted_until = match (epoch, &self.cache) {
            (Some(epoch), Some((_, trust)))
                if self.feed.live.load(Ordering::Acquire)
                    && self.feed.epoch.load(Ordering::Acquire) == epoch =>
            {
                Some(tokio::time::Instant::now() + *trust)
            }
            _ => None,
        };
        if let Some(cached) = decoded.get_mut(id) {
            cached.version = version;
            cached.bytes = bytes;
            cached.record = record;
            cached.trusted_until = trusted_until;
            return cached.id.clone();
        }
        let id: Arc<str> = Arc::from(id);
        decoded.insert(
            id.clone(),
            Cached {
                id: id.clone(),
                version,
                bytes,
                record,
                trusted_until,
            },
        );
        id
    }

    /// Tells the other workers that session `id` changed (or ended).
    async fn invalidate(&self, id: &str) {
        let Some((log, _)) = &self.cache else { return };
        let payload = Bytes::from(format!("{} {id}", self.feed.tag));
        if let Err(err) = log.publish(&self.changes_topic(), payload).await {
            tracing::warn!(%err, "could not publish a session change; other workers may serve the old record until their cache time passes");
        }
    }

    /// Waits until the invalidation feed is live and has applied at least `count`
    /// invalidations from other workers (tests).
    #[cfg(test)]
    async fn feed_seen(&self, count: u64) {
        self.start_feed();
        let mut seen = self.feed.seen.subscribe();
        let waited = seen.wait_for(|(live, n)| *live && *n >= count);
        let seen = tokio::time::timeout(Duration::from_secs(10), waited).await;
        assert!(
            matches!(seen, Ok(Ok(_))),
            "the feed did not apply {count} invalidations"
        );
    }

    fn forget(&self, id: &str) {
        self.decoded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    pub(crate) fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    fn key(&self, id: &str) -> Key {
        crate::exchange::session_key(&self.namespace, id)
    }

    /// The hub topic an HTTP+SSE stream's messages travel on.
    pub(crate) fn stream_topic(&self, id: &str) -> Topic {
        stream_topic(&self.namespace, id)
    }

    /// The hub topic the cancellations of a session's calls travel on between workers.
    pub(crate) fn cancel_topic(&self, id: &str) -> Topic {
        cancel_topic(&self.namespace, id)
    }

    /// Whether `id` could be a session id this server minted (visible ASCII, bounded).
    pub(crate) fn plausible(id: &str) -> bool {
        // Every byte looked at (no early exit), which the compiler turns into wide compares.
        !id.is_empty()
            && id.len() <= MAX_ID_LEN
            && id
                .bytes()
                .fold(true, |visible, b| visible & (b.wrapping_sub(0x21) < 0x5e))
    }

    /// Mints a session holding `record`, for `peer` (the client's address, counted only for a
    /// session without a principal).
    ///
    /// At this worker's maximum of sessions the least recently used idle one is ended to make
    /// room, and at the peer's maximum the peer's own least recently used idle one;
    /// [`SessionError::Full`] or [`SessionError::PeerFull`] when every candidate is busy.
    pub(crate) async fn create(
        &self,
        record: &SessionRecord,
        peer: Option<PeerKey>,
    ) -> Result<String, SessionError> {
        self.mint(record, peer, false).await.map(|(id, _)| id)
    }

    /// [`create`](Self::create), the new session busy from the start until the returned hold
    /// drops (an HTTP+SSE session, in use while its stream is open).
    pub(crate) async fn create_held(
        &self,
        record: &SessionRecord,
        peer: Option<PeerKey>,
    ) -> Result<(String, Option<Hold>), SessionError> {
        self.mint(record, peer, true).await
    }

    async fn mint(
        &self,
        record: &SessionRecord,
        peer: Option<PeerKey>,
        held: bool,
    ) -> Result<(String, Option<Hold>), SessionError> {
        let peer = peer.filter(|_| record.owner.is_none() && self.max_per_peer != usize::MAX);
        // A principal at its own limit is refused before anything is evicted for it (else each
        // of its refused attempts would end someone's idle session).
        let at_cap = self.lock_touched().held.count() >= self.max_sessions;
        if let Some(owner) = self.quota_owner(record.owner.as_deref())
            && at_cap
            && Box::pin(self.owner_full(owner)).await?
        {
            return Err(self.refuse_principal());
        }
        let reserved = self
            .lock_touched()
            .held
            .reserve(peer, self.max_sessions, self.max_per_peer);
        let (reservation, evicted) = match reserved {
            Ok(reserved) => reserved,
            Err(full) => return Err(self.refuse(full, peer)),
        };
        // Given back if the session is not minted (a store failure, the request dropped).
        let mut reservation = Reserved {
            sessions: self,
            reservation: Some(reservation),
        };
        if let Some((victim, why)) = evicted {
            Box::pin(self.evict(&victim, why, peer)).await;
        }
        self.start_feed();
        let value = record.to_bytes();
        loop {
            let mut bytes = [0u8; 24];
            getrandom::fill(&mut bytes).map_err(|e| SessionError::Random(e.to_string()))?;
            let id = URL_SAFE_NO_PAD.encode(bytes);
            match self
                .store
                .create(&self.key(&id), value.clone(), self.ttl)
                .await
            {
                Ok(version) => {
                    // Counted for its principal once it exists, so that another worker
                    // pruning the principal's index never drops it as ended.
                    if let Some(owner) = self.quota_owner(record.owner.as_deref())
                        && let Err(err) = self.claim(owner, &id).await
                    {
                        if let Err(store) = self.store.delete(&self.key(&id)).await {
                            tracing::warn!(%store, "could not remove a refused session's record");
                        }
                        if matches!(err, SessionError::PrincipalFull(_)) {
                            return Err(self.refuse_principal());
                        }
                        return Err(err);
                    }
                    // Tracked for renewal and held for eviction under one shared id.
                    let key: Arc<str> = Arc::from(id.as_str());
                    let hold = {
                        let mut touched = self.lock_touched();
                        let filled = reservation
                            .reservation
                            .take()
                            .and_then(|reservation| touched.held.fill(reservation, key.clone()));
                        let now = tokio::time::Instant::now().into_std();
                        touched.insert(key, now, self.ttl, true, filled);
                        let place = if held {
                            filled.and_then(|p| touched.held.hold_at(p))
                        } else {
                            None
                        };
                        place.map(|place| Hold {
                            touched: self.touched.clone(),
                            place,
                        })
                    };
                    self.start_sweep();
                    // A new id: no other worker holds it, so it is trusted as written.
                    let epoch = self.trust_epoch();
                    self.remember(&id, version, value, Arc::new(record.clone()), epoch);
                    tracing::debug!(
                        session = crate::dispatch::telemetry::session_tag(&id),
                        revision = record.version.as_deref().unwrap_or("-"),
                        "session created"
                    );
                    #[cfg(feature = "metrics")]
                    if let Some(metrics) = &self.metrics {
                        metrics.session_created();
                    }
                    return Ok((id, hold));
                }
                Err(StoreError::AlreadyExists) => continue,
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// The refusal of a principal's new session at its limit: counted, and logged at most
    /// once per [`FLOOD_LOG_EVERY`].
    fn refuse_principal(&self) -> SessionError {
        self.refusals.note(
            crate::refusal::Reason::MaxSessionsPerPrincipal,
            None,
            format_args!(
                "the principal holds its maximum of {} sessions; a new session is refused",
                self.max_per_owner
            ),
        );
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.metrics {
            metrics.limit_hit("max_sessions_per_principal");
        }
        SessionError::PrincipalFull(self.max_per_owner)
    }

    /// Whether `owner` holds its maximum of live sessions (its index read, and at the limit
    /// each listed session looked up, as [`claim`](Self::claim) does).
    async fn owner_full(&self, owner: &str) -> Result<bool, SessionError> {
        let Some(index) = self.store.get(&self.owner_key(owner)).await? else {
            return Ok(false);
        };
        let ids: Vec<String> = serde_json::from_slice(&index.value).unwrap_or_default();
        if ids.len() < self.max_per_owner {
            return Ok(false);
        }
        let reads = ids.iter().map(|id| {
            let key = self.key(id);
            async move { self.store.get(&key).await.map(|r| r.is_some()) }
        });
        let mut live = 0;
        for found in futures::future::join_all(reads).await {
            live += usize::from(found?);
        }
        Ok(live >= self.max_per_owner)
    }

    /// The refusal of a new session at a limit whose sessions are all busy: counted, and
    /// logged at most once per [`FLOOD_LOG_EVERY`].
    fn refuse(&self, full: Full, peer: Option<PeerKey>) -> SessionError {
        match full {
            Full::Cap => {
                self.refusals.note(
                    crate::refusal::Reason::MaxSessions,
                    None,
                    format_args!(
                        "this worker holds its maximum of {} sessions, every one in use; a new \
                         session is refused",
                        self.max_sessions
                    ),
                );
                #[cfg(feature = "metrics")]
                if let Some(metrics) = &self.metrics {
                    metrics.limit_hit("max_sessions");
                }
                SessionError::Full(self.max_sessions)
            }
            Full::Peer => {
                self.refusals.note(
                    crate::refusal::Reason::MaxSessionsPerPeer,
                    None,
                    format_args!(
                        "the client address {peer:?} holds its maximum of {} sessions, every one \
                         in use; a new session is refused",
                        self.max_per_peer
                    ),
                );
                #[cfg(feature = "metrics")]
                if let Some(metrics) = &self.metrics {
                    metrics.limit_hit("max_sessions_per_peer");
                }
                SessionError::PeerFull(self.max_per_peer)
            }
        }
    }

    /// Ends session `id`, idle and chosen to make room for a new one of `peer`: its record
    /// goes from the store (so no worker serves it any more: its client's next request gets
    /// the revision's unknown-session answer), with its hub topics and its place in its
    /// principal's count. Counted, and logged at most once per [`FLOOD_LOG_EVERY`] per cause.
    async fn evict(&self, id: &str, why: Eviction, peer: Option<PeerKey>) {
        let throttle = match why {
            Eviction::Cap => &self.flood.evicted_cap,
            Eviction::PeerQuota => &self.flood.evicted_peer,
        };
        if let Some(suppressed) = throttle.permit(Instant::now()) {
            match why {
                Eviction::Cap => tracing::warn!(
                    reason = why.label(),
                    limit = self.max_sessions,
                    suppressed,
                    "session limit reached; the least recently used idle session was ended for a new one"
                ),
                Eviction::PeerQuota => tracing::info!(
                    reason = why.label(),
                    limit = self.max_per_peer,
                    peer = ?peer,
                    suppressed,
                    "per-client-address session limit reached; the address's least recently used idle session was ended for its new one"
                ),
            }
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.metrics {
            metrics.session_evicted(why.label());
        }
        if let Err(err) = self.end(id).await {
            tracing::warn!(%err, "could not remove an evicted session's record; it expires with its TTL");
        }
    }

    /// The live session `id`: a trusted record from this worker's cache, else one store read;
    /// renews its TTL when this worker has not done so for a quarter of the TTL.
    pub(crate) async fn load(&self, id: &str) -> Result<Loaded, SessionError> {
        self.load_inner(id, false).await.map(|(loaded, _)| loaded)
    }

    /// [`load`](Self::load), the session busy on this worker (never evicted) from before it is
    /// read until the returned hold drops (`None` when another worker minted it). One lock
    /// serves both the renewal check and the hold.
    pub(crate) async fn load_held(&self, id: &str) -> Result<(Loaded, Option<Hold>), SessionError> {
        self.load_inner(id, true).await
    }

    /// [`load_held`](Self::load_held) without waiting, for the usual request: `Some` when
    /// this worker trusts its decoded record of `id` and the TTL needs no renewal yet; `None`
    /// when the store must be asked (then nothing is held).
    pub(crate) fn load_held_now(&self, id: &str) -> Option<(Loaded, Option<Hold>)> {
        if !Self::plausible(id) {
            return None;
        }
        // One clock read for the renewal check and the record's trust.
        let now = tokio::time::Instant::now();
        let (due, hold) = self.mark_busy(id, true, now);
        if due {
            return None;
        }
        self.start_feed();
        // Without a trusted record the hold drops here, released.
        let loaded = self.trusted(id, now)?;
        Some((loaded, hold))
    }

    /// Under one lock: whether session `id`'s TTL is due for renewal at `now`, and (when
    /// `hold`) the session marked busy on this worker until the returned hold drops.
    fn mark_busy(&self, id: &str, hold: bool, now: tokio::time::Instant) -> (bool, Option<Hold>) {
        let now = now.into_std();
        let mut guard = self.lock_touched();
        let touched = &mut *guard;
        let touch = touched.by_id.get(id);
        let due =
            touch.is_none_or(|touch| now.saturating_duration_since(touch.renewed) >= self.ttl / 4);
        // Held by the place the touch keeps (the sessions minted here): no second lookup.
        let place = match touch.and_then(|touch| touch.place) {
            Some(place) if hold => touched.held.hold_at(place),
            _ => None,
        };
        (
            due,
            place.map(|place| Hold {
                touched: self.touched.clone(),
                place,
            }),
        )
    }

    async fn load_inner(
        &self,
        id: &str,
        hold: bool,
    ) -> Result<(Loaded, Option<Hold>), SessionError> {
        if !Self::plausible(id) {
            return Err(SessionError::NotFound);
        }
        let now = tokio::time::Instant::now();
        let (due, hold) = self.mark_busy(id, hold, now);
        self.start_feed();
        // The store's paths are boxed: a trusted record (the usual request) awaits nothing,
        // and their state would otherwise enlarge the future of every request.
        let loaded = match self.trusted(id, now) {
            Some(loaded) => loaded,
            None => match Box::pin(self.read(id)).await? {
                Read::Fresh(loaded) => loaded,
                Read::Copy(copy) => return Ok((copy, hold)),
            },
        };
        if due {
            Box::pin(self.renew_ttl(id, loaded.record.owner.as_deref())).await?;
        }
        Ok((loaded, hold))
    }

    /// Reads session `id` from the store; this worker's copy of it when the store fails or
    /// is slow (and a copy is there).
    async fn read(&self, id: &str) -> Result<Read, SessionError> {
        let epoch = self.trust_epoch();
        let key = self.key(id);
        let read = self.store.get(&key);
        let found = match self.copy(id) {
            // A copy to fall back on: the store gets a moment, not its whole timeout.
            Some(copy) => match tokio::time::timeout(STALE_WAIT, read).await {
                Ok(Ok(found)) => found,
                Ok(Err(err)) => {
                    tracing::warn!(%err, "session store failed; serving this worker's copy");
                    return Ok(Read::Copy(copy));
                }
                Err(_) => {
                    tracing::debug!("session store slow; serving this worker's copy");
                    return Ok(Read::Copy(copy));
                }
            },
            None => read.await?,
        };
        let Some(record) = found else {
            self.forget(id);
            return Err(SessionError::NotFound);
        };
        Ok(Read::Fresh(self.decode(id, record, epoch)?))
    }

    /// Renews session `id`'s TTL (and its owner's count's); a failure other than a session
    /// gone is logged, not returned.
    async fn renew_ttl(&self, id: &str, owner: Option<&str>) -> Result<(), SessionError> {
        match self.store.touch(&self.key(id), self.ttl).await {
            Ok(()) => {
                self.remember_touch(id);
                self.touch_owner(owner).await;
            }
            Err(StoreError::NotFound) => {
                self.forget(id);
                return Err(SessionError::NotFound);
            }
            Err(err) => tracing::warn!(%err, "could not renew a session's TTL"),
        }
        Ok(())
    }

    /// Saves what a call changed in the connection state of `ctx` (log level, subscriptions,
    /// the client of a repeated `initialize`) to session `id`; no store operation when nothing
    /// changed.
    pub(crate) async fn save_changes(
        &self,
        id: &str,
        loaded: &Loaded,
        ctx: &Context,
    ) -> Result<(), SessionError> {
        if !ctx.inspect_session(|now| loaded.record.would_change(now)) {
            return Ok(());
        }
        self.update(id, loaded.clone(), |record| {
            ctx.inspect_session(|now| record.absorb(now))
        })
        .await
    }

    /// Applies `update` to the stored record with compare-and-set, re-reading on conflict.
    pub(crate) async fn update(
        &self,
        id: &str,
        mut loaded: Loaded,
        update: impl Fn(&mut SessionRecord) -> bool,
    ) -> Result<(), SessionError> {
        let key = self.key(id);
        for _ in 0..SAVE_ATTEMPTS {
            if !update(Arc::make_mut(&mut loaded.record)) {
                return Ok(());
            }
            let bytes = loaded.record.to_bytes();
            let epoch = self.trust_epoch();
            match self
                .store
                .save(&key, bytes.clone(), loaded.version, self.ttl)
                .await
            {
                Ok(version) => {
                    self.remember_touch(id);
                    self.touch_owner(loaded.record.owner.as_deref()).await;
                    self.remember(id, version, bytes, loaded.record, epoch);
                    self.invalidate(id).await;
                    return Ok(());
                }
                Err(StoreError::VersionConflict { .. }) => {
                    let epoch = self.trust_epoch();
                    let fresh = self.store.get(&key).await?.ok_or(SessionError::NotFound)?;
                    loaded = self.decode(id, fresh, epoch)?;
                }
                Err(StoreError::NotFound) => return Err(SessionError::NotFound),
                Err(err) => return Err(err.into()),
            }
        }
        Err(SessionError::Contended)
    }

    /// Renews the TTL of session `id` now.
    pub(crate) async fn renew(&self, id: &str) -> Result<(), SessionError> {
        match self.store.touch(&self.key(id), self.ttl).await {
            Ok(()) => {
                self.remember_touch(id);
                if self.max_per_owner != usize::MAX {
                    let owner = self.owner_of_session(id).await;
                    self.touch_owner(owner.as_deref()).await;
                }
                Ok(())
            }
            Err(StoreError::NotFound) => Err(SessionError::NotFound),
            Err(err) => Err(err.into()),
        }
    }

    /// Ends session `id` for its client; returns whether it was live. The session's hub
    /// topics (its HTTP+SSE stream, its cancellations) go with it.
    pub(crate) async fn delete(&self, id: &str) -> Result<bool, SessionError> {
        let deleted = self.end(id).await?;
        if deleted {
            tracing::debug!(
                session = crate::dispatch::telemetry::session_tag(id),
                "session ended"
            );
            #[cfg(feature = "metrics")]
            if let Some(metrics) = &self.metrics {
                metrics.session_ended();
            }
        }
        Ok(deleted)
    }

    /// Ends session `id` (see [`delete`](Self::delete)), uncounted.
    async fn end(&self, id: &str) -> Result<bool, SessionError> {
        if !Self::plausible(id) {
            return Ok(false);
        }
        // The principal's index loses the session too (read before the record goes).
        let owner = if self.max_per_owner == usize::MAX {
            None
        } else {
            self.owner_of_session(id).await
        };
        self.lock_touched().remove(id);
        self.forget(id);
        let deleted = self.store.delete(&self.key(id)).await?;
        self.invalidate(id).await;
        if let Some(owner) = &owner {
            self.release(owner, id).await;
        }
        if deleted {
            drop_topics(
                self.topics.as_ref(),
                self.cancels.as_ref(),
                &self.namespace,
                id,
            )
            .await;
        }
        Ok(deleted)
    }

    /// `owner` when its sessions are counted (a principal, with a per-principal limit).
    fn quota_owner<'a>(&self, owner: Option<&'a str>) -> Option<&'a str> {
        owner.filter(|_| self.max_per_owner != usize::MAX)
    }

    /// The key of the index of `owner`'s sessions: their ids, oldest first (JSON).
    fn owner_key(&self, owner: &str) -> Key {
        self.namespace.key(&joined("mcp-session-owner/", owner))
    }

    /// The owner digest of session `id`: from this worker's copy, else from the store.
    async fn owner_of_session(&self, id: &str) -> Option<String> {
        if let Some(copy) = self.copy(id) {
            return copy.record.owner.clone();
        }
        let record = self.store.get(&self.key(id)).await.ok()??;
        serde_json::from_slice::<SessionRecord>(&record.value)
            .ok()?
            .owner
    }

    /// Counts session `id` for `owner`, unless `owner` holds its maximum of live sessions
    /// already ([`SessionError::PrincipalFull`]). At the limit, the ids of sessions that ended
    /// (expired, or deleted where the index could not be written) are dropped first: one store
    /// read each, at most the limit's number of reads.
    async fn claim(&self, owner: &str, id: &str) -> Result<(), SessionError> {
        let key = self.owner_key(owner);
        for _ in 0..CLAIM_ATTEMPTS {
            let current = self.store.get(&key).await?;
            let mut ids: Vec<String> = current
                .as_ref()
                .and_then(|record| serde_json::from_slice(&record.value).ok())
                .unwrap_or_default();
            ids.retain(|other| other != id);
            if ids.len() >= self.max_per_owner {
                let reads = ids.iter().map(|other| {
                    let key = self.key(other);
                    async move { self.store.get(&key).await.map(|r| r.is_some()) }
                });
                let live = futures::future::join_all(reads).await;
                let mut kept = Vec::with_capacity(ids.len());
                for (other, live) in ids.into_iter().zip(live) {
                    if live? {
                        kept.push(other);
                    }
                }
                ids = kept;
                if ids.len() >= self.max_per_owner {
                    return Err(SessionError::PrincipalFull(self.max_per_owner));
                }
            }
            ids.push(id.to_owned());
            let value = Bytes::from(serde_json::to_vec(&ids).unwrap_or_default());
            let written = match &current {
                Some(record) => self
                    .store
                    .save(&key, value, record.version, self.ttl)
                    .await
                    .map(drop),
                None => self.store.create(&key, value, self.ttl).await.map(drop),
            };
            match written {
                Ok(()) => return Ok(()),
                // Another worker wrote the index (or it expired) meanwhile: read it again.
                Err(
                    StoreError::VersionConflict { .. }
                    | StoreError::AlreadyExists
                    | StoreError::NotFound,
                ) => {}
                Err(err) => return Err(err.into()),
            }
        }
        Err(SessionError::Contended)
    }

    /// Removes session `id` from `owner`'s index (best effort: an id left behind is dropped
    /// when the principal next reaches its limit).
    async fn release(&self, owner: &str, id: &str) {
        let key = self.owner_key(owner);
        for _ in 0..CLAIM_ATTEMPTS {
            let Ok(Some(record)) = self.store.get(&key).await else {
                return;
            };
            let mut ids: Vec<String> = serde_json::from_slice(&record.value).unwrap_or_default();
            let before = ids.len();
            ids.retain(|other| other != id);
            if ids.len() == before {
                return;
            }
            // Compare-and-set, also when it empties the index (a delete could drop a session
            // another worker just counted); an empty index expires with its TTL.
            let value = Bytes::from(serde_json::to_vec(&ids).unwrap_or_default());
            let written = self
                .store
                .save(&key, value, record.version, self.ttl)
                .await
                .map(drop);
            match written {
                Err(StoreError::VersionConflict { .. }) => {}
                Err(StoreError::NotFound) | Ok(()) => return,
                Err(err) => {
                    tracing::warn!(%err, "could not update a principal's session index");
                    return;
                }
            }
        }
    }

    /// Renews the TTL of `owner`'s index with one of its sessions', so that the index lives as
    /// long as the sessions it counts.
    async fn touch_owner(&self, owner: Option<&str>) {
        let Some(owner) = self.quota_owner(owner) else {
            return;
        };
        match self.store.touch(&self.owner_key(owner), self.ttl).await {
            Ok(()) | Err(StoreError::NotFound) => {}
            Err(err) => tracing::warn!(%err, "could not renew a principal's session index"),
        }
    }

    fn remember_touch(&self, id: &str) {
        self.remember_renewal(id, false);
    }

    /// Records that this worker renewed (or, when `minted`, created) session `id` now.
    fn remember_renewal(&self, id: &str, minted: bool) {
        // Sessions of other workers are tracked up to as many again as this worker may mint.
        let cap = self.max_sessions.saturating_mul(2);
        let tracked = self.lock_touched().renewed(
            id,
            tokio::time::Instant::now().into_std(),
            self.ttl,
            minted,
            cap,
        );
        if tracked {
            self.start_sweep();
        }
    }
}

/// The hub topic an HTTP+SSE stream's messages travel on.
fn stream_topic(namespace: &Namespace, id: &str) -> Topic {
    namespace.topic(&joined("mcp-sse/", id))
}

/// The hub topic the cancellations of a session's calls travel on between workers.
fn cancel_topic(namespace: &Namespace, id: &str) -> Topic {
    namespace.topic(&joined("mcp-cancel/", id))
}

/// Removes what session `id` kept in the hub: this worker's listener of its cancel topic
/// first (a waiting read would bring the topic back), then its cancel and stream topics.
async fn drop_topics(
    log: Option<&Arc<dyn EventLog>>,
    cancels: Option<&Arc<super::cancel::Cancels>>,
    namespace: &Namespace,
    id: &str,
) {
    if let Some(cancels) = cancels {
        cancels.end(id).await;
    }
    let Some(log) = log else { return };
    for topic in [cancel_topic(namespace, id), stream_topic(namespace, id)] {
        if let Err(err) = log.delete(&topic).await {
            tracing::warn!(%err, "could not delete an ended session's topic");
        }
    }
}

/// The expiry task of a worker's sessions: when a session this worker minted or renewed has
/// not been renewed here for a TTL, it looks the session up in the store; one that is gone
/// (expired, or deleted on another worker) is forgotten, no longer counts against the limit,
/// and its hub topics are deleted. One still live is looked at again a TTL later.
struct Sweeper {
    store: Arc<dyn StateStore>,
    namespace: Namespace,
    ttl: Duration,
    touched: Weak<Mutex<Touches>>,
    decoded: Weak<Decoded>,
    topics: Option<Arc<dyn EventLog>>,
    cancels: Option<Arc<super::cancel::Cancels>>,
}

impl Sweeper {
    async fn run(self, mut gone: watch::Receiver<()>) {
        loop {
            // The next check's time; with none queued, a check queued from now on is due a
            // TTL from now at the earliest, so sleeping that long is never late.
            let next = {
                let Some(touched) = self.touched.upgrade() else {
                    return;
                };
                let touched = touched.lock().unwrap_or_else(|e| e.into_inner());
                touched
                    .checks
                    .front()
                    .map_or_else(|| later(Instant::now(), self.ttl), |(at, _, _)| *at)
            };
            tokio::select! {
                () = tokio::time::sleep_until(next.into()) => {}
                _ = gone.changed() => return,
            }
            loop {
                let due = {
                    let Some(touched) = self.touched.upgrade() else {
                        return;
                    };
                    let mut touched = touched.lock().unwrap_or_else(|e| e.into_inner());
                    touched.due(Instant::now(), CHECKS_PER_PASS)
                };
                if due.is_empty() {
                    break;
                }
                for (ticket, id) in due {
                    self.check(ticket, &id).await;
                }
            }
        }
    }

    /// Looks whether session `id` (check `ticket`) still lives.
    async fn check(&self, ticket: u64, id: &Arc<str>) {
        let key = self.namespace.key(&joined("mcp-session/", id));
        let live = match self.store.get(&key).await {
            Ok(record) => record.is_some(),
            Err(err) => {
                tracing::warn!(%err, "could not look whether a session expired");
                true
            }
        };
        let Some(touched) = self.touched.upgrade() else {
            return;
        };
        let ended = {
            let mut touched = touched.lock().unwrap_or_else(|e| e.into_inner());
            if live {
                touched.requeue(id, ticket, Instant::now(), self.ttl);
                false
            } else {
                touched.ended(id, ticket)
            }
        };
        if ended {
            if let Some(decoded) = self.decoded.upgrade() {
                decoded
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&**id);
            }
            drop_topics(
                self.topics.as_ref(),
                self.cancels.as_ref(),
                &self.namespace,
                id,
            )
            .await;
        }
    }
}

/// Follows the invalidations of the namespace for one worker until the last clone of its
/// [`Sessions`] is dropped; resubscribes after a failure (records are not trusted meanwhile).
async fn run_feed(
    log: Arc<dyn EventLog>,
    topic: Topic,
    feed: Arc<Feed>,
    decoded: Weak<Decoded>,
    mut gone: watch::Receiver<()>,
) {
    loop {
        let followed = async {
            let mut subscription = match Subscription::start(log.clone(), topic.clone(), None).await
            {
                Ok(subscription) => subscription,
                Err(err) => {
                    tracing::warn!(%err, "session cache: cannot follow session changes");
                    return;
                }
            };
            feed.live.store(true, Ordering::Release);
            feed.seen.send_modify(|(live, _)| *live = true);
            while let Some(Ok(event)) = subscription.next().await {
                let Some(decoded) = decoded.upgrade() else {
                    return;
                };
                let text = String::from_utf8_lossy(&event.payload);
                let Some((tag, id)) = text.split_once(' ') else {
                    continue;
                };
                if !tag.is_empty() && tag == feed.tag {
                    continue;
                }
                // The epoch first: a record read before this point is then never trusted.
                feed.epoch.fetch_add(1, Ordering::AcqRel);
                decoded.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
                feed.seen.send_modify(|(_, n)| *n += 1);
            }
        };
        tokio::select! {
            () = followed => {}
            _ = gone.changed() => return,
        }
        // Not following: nothing cached may be trusted until the feed is back.
        feed.live.store(false, Ordering::Release);
        feed.epoch.fetch_add(1, Ordering::AcqRel);
        feed.seen.send_modify(|(live, _)| *live = false);
        let Some(decoded) = decoded.upgrade() else {
            return;
        };
        for cached in decoded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values_mut()
        {
            cached.trusted_until = None;
        }
        drop(decoded);
        tokio::select! {
            () = tokio::time::sleep(FEED_RETRY) => {}
            _ = gone.changed() => return,
        }
    }
}

/// `prefix` then `id`, in one allocation (`format!` costs several times as much on every
/// request).
fn joined(prefix: &str, id: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + id.len());
    out.push_str(prefix);
    out.push_str(id);
    out
}

/// What [`Sessions::read`] found.
enum Read {
    /// The stored record.
    Fresh(Loaded),
    /// This worker's copy, the store having failed or been slow.
    Copy(Loaded),
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use futures::future::BoxFuture;
    use mcp_hub::{MemoryHub, Record};

    use super::*;

    /// The memory store, counting reads.
    #[test]
    fn plausible_ids_are_visible_ascii_and_bounded() {
        let long = "a".repeat(MAX_ID_LEN);
        let too_long = "a".repeat(MAX_ID_LEN + 1);
        let rows: [(&str, bool); 9] = [
            ("abc-DEF_123", true),
            ("!~", true),
            (&long, true),
            ("", false),
            (&too_long, false),
            ("a b", false),
            ("a\tb", false),
            ("a\u{7f}", false),
            ("caf\u{e9}", false),
        ];
        for (id, expected) in rows {
            assert_eq!(Sessions::plausible(id), expected, "{id:?}");
        }
    }

    #[derive(Default)]
    struct Counting {
        hub: MemoryHub,
        gets: AtomicUsize,
    }

    impl StateStore for Counting {
        fn create<'a>(
            &'a self,
            key: &'a Key,
            value: Bytes,
            ttl: Duration,
        ) -> BoxFuture<'a, Result<u64, StoreError>> {
            self.hub.create(key, value, ttl)
        }
        fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
            self.gets.fetch_add(1, Ordering::SeqCst);
            self.hub.get(key)
        }
        fn save<'a>(
            &'a self,
            key: &'a Key,
            value: Bytes,
            expected_version: u64,
            ttl: Duration,
        ) -> BoxFuture<'a, Result<u64, StoreError>> {
            self.hub.save(key, value, expected_version, ttl)
        }
        fn touch<'a>(
            &'a self,
            key: &'a Key,
            ttl: Duration,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            self.hub.touch(key, ttl)
        }
        fn delete<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<bool, StoreError>> {
            StateStore::delete(&self.hub, key)
        }
    }

    /// Two workers sharing one store and one event log, with records trusted for `trust`.
    fn workers(trust: Duration) -> (Arc<Counting>, Sessions, Sessions) {
        let store = Arc::new(Counting::default());
        let log: Arc<dyn EventLog> = Arc::new(MemoryHub::default());
        let worker = || {
            Sessions::new(
                store.clone(),
                Namespace::root(),
                Duration::from_secs(3600),
                Some((log.clone(), trust)),
            )
        };
        let (a, b) = (worker(), worker());
        (store, a, b)
    }

    fn gets(store: &Counting) -> usize {
        store.gets.load(Ordering::SeqCst)
    }

    fn level(loaded: &Loaded) -> Option<&str> {
        loaded.record.log_level.as_deref()
    }

    #[test]
    fn a_records_client_is_made_once_and_made_again_after_it_changes() {
        let adapters = AdapterSet::all();
        let mut record = SessionRecord {
            client_info: Some(serde_json::json!({"name": "c", "version": "1"})),
            ..SessionRecord::default()
        };
        let client = |record: &SessionRecord| record.load(&adapters).client.unwrap();
        let first = client(&record);
        assert!(Arc::ptr_eq(&first, &client(&record)));
        assert_eq!(first.info, record.client_info);
        // A clone compares equal and makes its own when asked.
        let copy = record.clone();
        assert_eq!(copy, record);
        assert!(!Arc::ptr_eq(&first, &client(&copy)));

        // The loaded session, unchanged, changes nothing.
        assert!(!record.would_change(&record.load(&adapters)));

        let info = Some(serde_json::json!({"name": "c", "version": "2"}));
        let now = Session {
            client: Some(Arc::new(ClientContext {
                info: info.clone(),
                capabilities: None,
            })),
            ..Session::default()
        };
        assert!(record.absorb(&now));
        assert_eq!(client(&record).info, info);
    }

    #[tokio::test]
    async fn a_record_is_served_from_memory_until_another_worker_changes_or_ends_it() {
        let (store, a, b) = workers(Duration::from_secs(60));
        a.feed_seen(0).await;
        b.feed_seen(0).await;
        let id = a.create(&SessionRecord::default(), None).await.unwrap();
        a.load(&id).await.unwrap();
        a.load(&id).await.unwrap();
        assert_eq!(gets(&store), 0, "the creating worker trusts what it wrote");

        // Another worker reads it once, then changes it.
        let loaded = b.load(&id).await.unwrap();
        b.load(&id).await.unwrap();
        assert_eq!(gets(&store), 1);
        b.update(&id, loaded, |record| {
            record.log_level = Some("info".into());
            true
        })
        .await
        .unwrap();
        assert_eq!(level(&b.load(&id).await.unwrap()), Some("info"));
        assert_eq!(gets(&store), 1, "the writing worker trusts its own write");

        // The first worker drops its copy when the change arrives, and reads the new record.
        a.feed_seen(1).await;
        assert_eq!(level(&a.load(&id).await.unwrap()), Some("info"));
        assert_eq!(gets(&store), 2);
        a.load(&id).await.unwrap();
        assert_eq!(gets(&store), 2);

        // Ended on one worker: gone on the other.
        assert!(b.delete(&id).await.unwrap());
        a.feed_seen(2).await;
        assert!(matches!(a.load(&id).await, Err(SessionError::NotFound)));
    }

    #[test]
    fn renewals_queue_one_check_per_quarter_ttl_and_outdated_checks_are_skipped() {
        let mut touches = Touches::default();
        let now = Instant::now();
        let ttl = Duration::from_secs(100);
        for ms in 0..1000 {
            assert!(touches.renewed("a", now + Duration::from_millis(ms), ttl, true, 10));
        }
        assert_eq!(
            touches.checks.len(),
            1,
            "one check for renewals within ttl/4"
        );
        assert_eq!(touches.minted, 1);
        // A renewal a quarter TTL later queues a new check; the first one is then outdated.
        assert!(touches.renewed("a", now + ttl / 4, ttl, false, 10));
        assert_eq!(touches.checks.len(), 2);
        assert!(
            touches
                .due(now + ttl - Duration::from_millis(1), 10)
                .is_empty()
        );
        assert!(touches.due(now + ttl, 10).is_empty(), "outdated: skipped");
        let due = touches.due(now + ttl + ttl / 4, 10);
        assert_eq!(due.len(), 1);
        assert!(touches.ended(&due[0].1, due[0].0));
        assert_eq!(touches.minted, 0);
        assert!(touches.by_id.is_empty());
        // Sessions of other workers are tracked up to the cap only.
        for n in 0..10 {
            assert!(touches.renewed(&n.to_string(), now, ttl, false, 10));
        }
        assert!(!touches.renewed("one more", now, ttl, false, 10));
        assert!(
            touches.renewed("minted", now, ttl, true, 10),
            "minted ones always are"
        );
    }

    #[tokio::test]
    async fn a_principals_sessions_that_ended_unseen_free_their_places() {
        let (store, a, b) = workers(Duration::ZERO);
        let (a, b) = (
            a.limited(100, 2, usize::MAX, Arc::default()),
            b.limited(100, 2, usize::MAX, Arc::default()),
        );
        let owned = |owner: &str| SessionRecord {
            owner: Some(owner.to_owned()),
            ..SessionRecord::default()
        };
        let first = a.create(&owned("o"), None).await.unwrap();
        let second = b.create(&owned("o"), None).await.unwrap();
        for worker in [&a, &b] {
            assert!(matches!(
                worker.create(&owned("o"), None).await,
                Err(SessionError::PrincipalFull(2))
            ));
        }
        // The refused sessions left no record behind.
        let index = store.hub.get(&a.owner_key("o")).await.unwrap().unwrap();
        let ids: Vec<String> = serde_json::from_slice(&index.value).unwrap();
        assert_eq!(ids, [first.clone(), second.clone()]);
        // Another owner, and sessions without one, are not counted against "o".
        b.create(&owned("p"), None).await.unwrap();
        for _ in 0..3 {
            a.create(&SessionRecord::default(), None).await.unwrap();
        }
        // A session whose record went without its index knowing (it expired) is dropped
        // from the index when the owner reaches the limit.
        assert!(
            StateStore::delete(&store.hub, &a.key(&first))
                .await
                .unwrap()
        );
        let third = b.create(&owned("o"), None).await.unwrap();
        let index = store.hub.get(&a.owner_key("o")).await.unwrap().unwrap();
        let ids: Vec<String> = serde_json::from_slice(&index.value).unwrap();
        assert_eq!(ids, [second.clone(), third]);
        // A deleted session leaves the index on any worker.
        assert!(a.delete(&second).await.unwrap());
        let index = store.hub.get(&a.owner_key("o")).await.unwrap().unwrap();
        let ids: Vec<String> = serde_json::from_slice(&index.value).unwrap();
        assert_eq!(ids.len(), 1);
        a.create(&owned("o"), None).await.unwrap();
    }

    #[tokio::test]
    async fn at_the_limit_the_least_recently_used_idle_session_makes_room() {
        let hub = Arc::new(MemoryHub::default());
        let sessions = Sessions::new(hub, Namespace::root(), Duration::from_secs(60), None)
            .limited(2, usize::MAX, usize::MAX, Arc::default());
        let first = sessions
            .create(&SessionRecord::default(), None)
            .await
            .unwrap();
        let second = sessions
            .create(&SessionRecord::default(), None)
            .await
            .unwrap();
        // Both busy: refused, and nothing ended.
        let holds = (
            sessions.hold(&first).unwrap(),
            sessions.hold(&second).unwrap(),
        );
        assert!(matches!(
            sessions.create(&SessionRecord::default(), None).await,
            Err(SessionError::Full(2))
        ));
        assert_eq!(sessions.held(), 2);
        // The first is used last, so the second is the least recently used once both are idle.
        drop(holds.1);
        drop(holds.0);
        let third = sessions
            .create(&SessionRecord::default(), None)
            .await
            .unwrap();
        assert!(matches!(
            sessions.load(&second).await,
            Err(SessionError::NotFound)
        ));
        sessions.load(&first).await.unwrap();
        sessions.load(&third).await.unwrap();
        assert_eq!((sessions.held(), sessions.minted()), (2, 2));
        // A deleted session frees its place without an eviction.
        assert!(sessions.delete(&first).await.unwrap());
        assert_eq!(sessions.minted(), 1);
        sessions
            .create(&SessionRecord::default(), None)
            .await
            .unwrap();
        sessions.load(&third).await.unwrap();
    }

    #[test]
    fn flood_log_lines_are_one_per_period_with_the_count_suppressed() {
        let throttle = Throttle::default();
        let start = Instant::now();
        assert_eq!(throttle.permit(start), Some(0));
        for n in 1..=10 {
            assert_eq!(throttle.permit(start + Duration::from_millis(n)), None);
        }
        assert_eq!(throttle.permit(start + FLOOD_LOG_EVERY), Some(10));
        assert_eq!(throttle.permit(start + FLOOD_LOG_EVERY), None);
    }

    #[tokio::test]
    async fn with_the_cache_off_or_its_time_passed_every_load_reads_the_store() {
        for trust in [Duration::ZERO, Duration::from_nanos(1)] {
            let (store, a, _) = workers(trust);
            if !trust.is_zero() {
                a.feed_seen(0).await;
            }
            let id = a.create(&SessionRecord::default(), None).await.unwrap();
            a.load(&id).await.unwrap();
            a.load(&id).await.unwrap();
            assert_eq!(gets(&store), 2, "trust {trust:?}");
        }
    }

    #[tokio::test]
    async fn a_record_read_while_a_change_arrives_is_not_trusted() {
        let (store, a, b) = workers(Duration::from_secs(60));
        a.feed_seen(0).await;
        b.feed_seen(0).await;
        let id = b.create(&SessionRecord::default(), None).await.unwrap();
        // A reads with the epoch from before a change that B makes meanwhile.
        let epoch = a.trust_epoch();
        let record = store.get(&a.key(&id)).await.unwrap().unwrap();
        let loaded = b.load(&id).await.unwrap();
        b.update(&id, loaded, |record| {
            record.log_level = Some("debug".into());
            true
        })
        .await
        .unwrap();
        a.feed_seen(1).await;
        let stale = a.decode(&id, record, epoch).unwrap();
        assert_eq!(level(&stale), None);
        // Not trusted: the next load reads the store and sees the change.
        assert_eq!(level(&a.load(&id).await.unwrap()), Some("debug"));
    }
}
