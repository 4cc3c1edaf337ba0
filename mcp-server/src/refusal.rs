//! Refusals an operator can see: one INFO line per refused request (target
//! `mcp_server::refusal`), rate-limited per reason, and the `mcp_refusals_total{reason}`
//! counter (feature `metrics`).
//!
//! Every reason is one of a fixed set ([`Reason`]), so neither the log nor the metric's label
//! space grows with what peers send. A line carries the reason, the HTTP status, a sentence
//! written by the server (never a token, a cookie, an `Authorization` value or a session id)
//! and, when known, the peer's address. At most one line per reason is written per second;
//! the next line of that reason says how many were left out meanwhile (`suppressed`), so a
//! flood costs two atomic operations per refusal and one line a second.

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The interval within which a reason gets at most one log line.
const LINE_INTERVAL: Duration = Duration::from_secs(1);

/// Why a request was refused: a fixed set, the `reason` label of `mcp_refusals_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// 401: no access token, or one that is not valid.
    Unauthorized,
    /// 403 `insufficient_scope`: the token lacks a scope the request needs.
    InsufficientScope,
    /// 403: the `Host` the request names is not allowed (or is ambiguous: 400).
    Host,
    /// 403: the `Origin` is not allowed.
    Origin,
    /// 413: the body exceeds [`HttpConfig::body_limit`](crate::http::HttpConfig::body_limit).
    BodyLimit,
    /// 503: the endpoint holds its maximum of sessions.
    MaxSessions,
    /// 503: the principal holds its maximum of sessions.
    MaxSessionsPerPrincipal,
    /// 503: the client address holds its maximum of sessions without a principal, every one
    /// of them busy.
    MaxSessionsPerPeer,
    /// 503: the session has its maximum of calls in flight.
    MaxCallsPerSession,
    /// 503: the session has its maximum of GET streams open.
    MaxStreamsPerSession,
    /// 429: a rate limit of a mounted route (the development authorization server's).
    RateLimited,
    /// 503: the hub (event log, state store) or the token verifier is unavailable (logged
    /// at WARN).
    Unavailable,
}

impl Reason {
    /// How many reasons there are.
    pub(crate) const COUNT: usize = 12;

    /// Every reason, in the order of their slots.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) const ALL: [Self; Self::COUNT] = [
        Self::Unauthorized,
        Self::InsufficientScope,
        Self::Host,
        Self::Origin,
        Self::BodyLimit,
        Self::MaxSessions,
        Self::MaxSessionsPerPrincipal,
        Self::MaxSessionsPerPeer,
        Self::MaxCallsPerSession,
        Self::MaxStreamsPerSession,
        Self::RateLimited,
        Self::Unavailable,
    ];

    /// The label of `mcp_refusals_total` and the `reason` field of the log line.
    pub(crate) const fn label(self) -> &'static str {
        match self {
            Self::Unauthorized => "unauthorized",
            Self::InsufficientScope => "insufficient_scope",
            Self::Host => "host",
            Self::Origin => "origin",
            Self::BodyLimit => "body_limit",
            Self::MaxSessions => "max_sessions",
            Self::MaxSessionsPerPrincipal => "max_sessions_per_principal",
            Self::MaxSessionsPerPeer => "max_sessions_per_peer",
            Self::MaxCallsPerSession => "max_calls_per_session",
            Self::MaxStreamsPerSession => "max_streams_per_session",
            Self::RateLimited => "rate_limited",
            Self::Unavailable => "unavailable",
        }
    }

    /// The HTTP status a refusal of this reason gets (the usual one: a bad `Host` is 400
    /// when ambiguous).
    const fn status(self) -> u16 {
        match self {
            Self::Unauthorized => 401,
            Self::InsufficientScope | Self::Host | Self::Origin => 403,
            Self::BodyLimit => 413,
            Self::RateLimited => 429,
            Self::MaxSessions
            | Self::MaxSessionsPerPrincipal
            | Self::MaxSessionsPerPeer
            | Self::MaxCallsPerSession
            | Self::MaxStreamsPerSession
            | Self::Unavailable => 503,
        }
    }

    const fn slot(self) -> usize {
        self as usize
    }
}

/// The log rate limit of one reason.
#[derive(Default)]
struct Slot {
    /// Milliseconds since [`Refusals::base`] before which no line of this reason is written
    /// (0: none written yet).
    next_line: AtomicU64,
    /// Refusals of this reason not logged since the last line.
    suppressed: AtomicU64,
}

/// One rate-limited refusal line at `$level` (a constant), after counting it.
macro_rules! refusal_line {
    ($refusals:expr, $level:expr, $reason:expr, $peer:expr, $detail:expr) => {{
        if let Some(suppressed) = $refusals.admit($reason) {
            let peer = $peer.map(tracing::field::display);
            tracing::event!(
                target: "mcp_server::refusal",
                $level,
                reason = $reason.label(),
                status = $reason.status(),
                peer,
                suppressed,
                "request refused: {}",
                $detail
            );
        }
    }};
}

/// The refusals of one server: rate-limited log lines and (feature `metrics`) counters.
pub(crate) struct Refusals {
    base: Instant,
    slots: [Slot; Reason::COUNT],
    #[cfg(feature = "metrics")]
    counters: Option<[prometheus_client::metrics::counter::Counter; Reason::COUNT]>,
}

impl fmt::Debug for Refusals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Refusals").finish_non_exhaustive()
    }
}

impl Default for Refusals {
    fn default() -> Self {
        Self {
            base: Instant::now(),
            slots: Default::default(),
            #[cfg(feature = "metrics")]
            counters: None,
        }
    }
}

impl Refusals {
    /// Refusals counted into `counters` (one per [`Reason::ALL`], in order).
    #[cfg(feature = "metrics")]
    pub(crate) fn counted(
        counters: Option<[prometheus_client::metrics::counter::Counter; Reason::COUNT]>,
    ) -> Self {
        Self {
            counters,
            ..Self::default()
        }
    }

    /// Notes one refusal: counted, and logged at INFO unless a line of the same reason was
    /// written within the last second. `detail` is formatted only when the line is written;
    /// it must hold nothing secret.
    pub(crate) fn note(
        &self,
        reason: Reason,
        peer: Option<SocketAddr>,
        detail: fmt::Arguments<'_>,
    ) {
        refusal_line!(self, tracing::Level::INFO, reason, peer, detail);
    }

    /// [`note`](Self::note) for a refusal caused by a failure of the server's own (the hub
    /// is unavailable): logged at WARN.
    pub(crate) fn note_failure(
        &self,
        reason: Reason,
        peer: Option<SocketAddr>,
        detail: fmt::Arguments<'_>,
    ) {
        refusal_line!(self, tracing::Level::WARN, reason, peer, detail);
    }

    /// Counts a refusal of `reason`; `Some(left out since the last line)` when a line may be
    /// written now.
    fn admit(&self, reason: Reason) -> Option<u64> {
        #[cfg(feature = "metrics")]
        if let Some(counters) = &self.counters {
            counters[reason.slot()].inc();
        }
        let slot = &self.slots[reason.slot()];
        let now = u64::try_from(self.base.elapsed().as_millis())
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let next = slot.next_line.load(Ordering::Relaxed);
        let interval = u64::try_from(LINE_INTERVAL.as_millis()).unwrap_or(u64::MAX);
        if now < next
            || slot
                .next_line
                .compare_exchange(
                    next,
                    now.saturating_add(interval),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            slot.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(slot.suppressed.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reasons_fill_their_slots_in_order() {
        for (i, reason) in Reason::ALL.iter().enumerate() {
            assert_eq!(reason.slot(), i, "{reason:?}");
        }
    }

    #[test]
    fn a_flood_writes_one_line_per_interval_and_counts_the_rest() {
        let refusals = Refusals::default();
        for _ in 0..100 {
            refusals.note(Reason::BodyLimit, None, format_args!("too large"));
        }
        let slot = &refusals.slots[Reason::BodyLimit.slot()];
        assert_eq!(slot.suppressed.load(Ordering::Relaxed), 99);
        // Another reason has its own slot.
        refusals.note(Reason::Unauthorized, None, format_args!("no token"));
        let other = &refusals.slots[Reason::Unauthorized.slot()];
        assert_eq!(other.suppressed.load(Ordering::Relaxed), 0);
        assert!(other.next_line.load(Ordering::Relaxed) > 0);
    }
}
