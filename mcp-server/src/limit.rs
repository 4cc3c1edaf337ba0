//! Rate limits shared by every worker of a hub (issue 50).
//!
//! Each [`RateLimit`] is a budget of calls over a period, per caller: the principal of an
//! authenticated request, else the client's address (behind trusted proxies, the address
//! they report), else one budget for every anonymous caller of the process (stdio). A rule
//! applies to every call (`*`), to a method (`tools/call`, `initialize`, by the operation the
//! revisions map the name to), or to one tool by name (`deploy`).
//!
//! The budget is a GCRA (a token bucket that holds `count` tokens and refills one every
//! `period / count`) kept in the server's state store, so every worker on the hub spends the
//! same budget. A worker takes a batch of tokens at once (its lease) and spends it locally for
//! up to a second, so most calls cost no round trip; the next lease is taken when half of the
//! current one is left, so calls do not wait for the store while the budget has room. A lease
//! is sized by the rate the worker spent the budget at since its last take (about 100 ms of
//! its calls: a caller of a few calls a second takes one token at a time and wastes none),
//! grows at most eightfold from one take to the next, and is at most
//! [`ServerBuilder::rate_limit_lease`](crate::ServerBuilder::rate_limit_lease) and a tenth of
//! the budget. One take per budget is in flight on a worker
//! at a time (who finds no token waits for it), and a budget found empty is refused locally
//! until its wait has passed. A worker thus holds at most a lease and a half: in any period
//! a caller gets at most `count + workers × 1.5 × lease` calls through (`lease` being the
//! largest, `min(rate_limit_lease, count / 10)`). The take is a compare-and-set on the store's
//! record, so it needs nothing of a backend beyond the state store contract.
//!
//! If the store fails, the limiter fails open (default: each worker keeps a budget of its own
//! with the same rules, logged at WARN at most every 10 s) or closed (the call is refused
//! with 503), see [`OnHubFailure`].
//!
//! A refused call runs no handler and creates no task: it is answered with the JSON-RPC error
//! `-31429` (outside JSON-RPC's reserved block, so no revision forbids it), `data:
//! {"retryAfterMs": N, "limit": NAME}`, and on HTTP with status 429 and `Retry-After`.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use mcp_adapters::{Call, Failure, FailureKind, Operation};
use mcp_hub::{Namespace, StateStore, StoreError};
use tokio::sync::Notify;

use crate::FastMap;

/// The JSON-RPC error code of a rate-limited call, on every revision.
pub const RATE_LIMITED_CODE: i64 = mcp_adapters::codes::RATE_LIMITED;

/// The default lease: the most tokens a worker takes from the shared budget at once (never
/// more than a tenth of a rule's budget). A worker takes about 100 ms of its calls
/// at once, so this is reached only by a caller spending 10,000 calls per second or more.
pub const DEFAULT_RATE_LIMIT_LEASE: u32 = 1_000;

/// A worker sizes its next lease of a budget to last about this long at the rate it has spent
/// the budget since its last take: a slow caller takes a token at a time (its unspent tokens
/// would expire with the lease, lost to its other workers), a fast one enough that the next
/// take has time to arrive before the lease runs dry.
const LEASE_LIFE: Duration = Duration::from_millis(100);

/// A lease grows at most this many times over from one take to the next (one short gap
/// between two calls does not take a tenth of the budget).
const LEASE_GROWTH: u32 = 8;

/// At most this many callers are remembered per worker for leases; past it the
/// expired ones are dropped, then all of them (a lease given up costs only a hub round trip).
const MAX_LOCAL_KEYS: usize = 10_000;

/// Compare-and-set attempts on the shared record before the store counts as failing.
const MAX_ATTEMPTS: usize = 8;

/// A budget of calls per period, per caller, for [`ServerBuilder::rate_limit`].
///
/// The caller is the principal of an authenticated request, else the client's address (behind
/// [trusted proxies](crate::http::HttpConfig::trusted_proxies), the one they report), else one
/// budget for every anonymous caller of the process (stdio). A rule applies to every request
/// (`*`), to a method (`tools/call`, `initialize`, by the operation the revisions map the name
/// to), or to one tool by name (`deploy`). The budget is a token bucket of `count` tokens refilled over `period`,
/// kept in the server's state store so every worker on the hub spends the same one (within
/// `workers × 1.5 × lease`, see [`ServerBuilder::rate_limit_lease`]). A refused request runs no
/// handler and gets the JSON-RPC error [`RATE_LIMITED_CODE`] with `data: {"retryAfterMs",
/// "limit"}`, and on HTTP status 429 with `Retry-After`.
///
/// [`ServerBuilder::rate_limit`]: crate::ServerBuilder::rate_limit
/// [`ServerBuilder::rate_limit_lease`]: crate::ServerBuilder::rate_limit_lease
///
/// ```
/// use std::time::Duration;
/// use mcp_server::RateLimit;
///
/// let calls = RateLimit::parse("tools/call=600/1m").unwrap();
/// assert_eq!((calls.name(), calls.count(), calls.period()), ("tools/call", 600, Duration::from_secs(60)));
/// let deploy = RateLimit::new("deploy", 5, Duration::from_secs(60)).unwrap();
/// assert_eq!(deploy.name(), "deploy");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimit {
    name: String,
    target: Target,
    count: u32,
    period: Duration,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    /// Every call.
    Every,
    /// A method of some revision, by the operation every revision maps it to.
    Operation(Operation),
    /// An extension method, by name.
    Method(String),
    /// One tool's calls.
    Tool(String),
}

/// Why a [`RateLimit`] cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RateLimitError {
    /// The text is not `NAME=COUNT/PERIOD`.
    #[error("{0:?} is not NAME=COUNT/PERIOD (say tools/call=600/1m or deploy=5/1m)")]
    Syntax(String),
    /// The period is not a number with a unit (`ms`, `s`, `m`, `h`).
    #[error("{0:?} is not a period (say 10s, 1m or 1h)")]
    Period(String),
    /// A budget of zero calls, or a zero period.
    #[error("a rate limit needs at least one call per non-zero period")]
    Empty,
    /// A name with a `/` that no revision defines as a method.
    #[error("{0:?} is no method of any revision (a name without '/' names a tool)")]
    UnknownMethod(String),
}

impl RateLimit {
    /// `count` calls per `period` for `name`: `*` (every call), a method (`tools/call`,
    /// `initialize`, `resources/read`, any revision's name), or a tool's name.
    pub fn new(
        name: impl Into<String>,
        count: u32,
        period: Duration,
    ) -> Result<Self, RateLimitError> {
        let name = name.into();
        if count == 0 || period.is_zero() {
            return Err(RateLimitError::Empty);
        }
        let target = target_of(&name)?;
        Ok(Self {
            name,
            target,
            count,
            period,
        })
    }

    /// A rate limit written `NAME=COUNT/PERIOD`, the period a number and a unit (`ms`, `s`,
    /// `m`, `h`; `1m` and `m` alike): `tools/call=600/1m`, `deploy=5/1m`, `*=100/10s`.
    pub fn parse(spec: &str) -> Result<Self, RateLimitError> {
        let syntax = || RateLimitError::Syntax(spec.to_owned());
        let (name, budget) = spec.rsplit_once('=').ok_or_else(syntax)?;
        let (count, period) = budget.split_once('/').ok_or_else(syntax)?;
        let count: u32 = count.trim().parse().map_err(|_| syntax())?;
        if name.trim().is_empty() {
            return Err(syntax());
        }
        Self::new(name.trim(), count, parse_period(period.trim())?)
    }

    /// The name the rule was given (what it applies to), as refusals name it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The calls allowed per period.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }

    fn applies_to(&self, call: &Call) -> bool {
        match &self.target {
            Target::Every => true,
            Target::Operation(operation) => call.operation == *operation,
            Target::Method(method) => {
                call.operation == Operation::Extension && call.method.as_ref() == method.as_str()
            }
            Target::Tool(tool) => {
                call.operation == Operation::CallTool
                    && call.target.as_deref() == Some(tool.as_str())
            }
        }
    }
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}/{:?}", self.name, self.count, self.period)
    }
}

fn target_of(name: &str) -> Result<Target, RateLimitError> {
    if name == "*" {
        return Ok(Target::Every);
    }
    let operation = mcp_adapters::Revision::ALL
        .iter()
        .find_map(|revision| mcp_adapters::Adapter::from(*revision).operation(name));
    match operation {
        Some(operation) => Ok(Target::Operation(operation)),
        None if name.contains('/') => {
            if name.starts_with("tasks/") {
                Ok(Target::Method(name.to_owned()))
            } else {
                Err(RateLimitError::UnknownMethod(name.to_owned()))
            }
        }
        None => Ok(Target::Tool(name.to_owned())),
    }
}

fn parse_period(text: &str) -> Result<Duration, RateLimitError> {
    let bad = || RateLimitError::Period(text.to_owned());
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: f64 = if number.is_empty() {
        1.0
    } else {
        number.parse().map_err(|_| bad())?
    };
    let seconds = match unit {
        "ms" => number / 1000.0,
        "s" => number,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| bad())
}

/// What the limiter does when the state store that holds the budgets fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnHubFailure {
    /// Admit by a budget of this worker's own with the same rules (the default): a hub
    /// outage does not take the server down, and each worker still limits what it serves.
    #[default]
    Open,
    /// Refuse every call a rule applies to with 503 until the store answers again.
    Closed,
}

/// Whose budget a call spends.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum CallerKey {
    /// An authenticated principal, by the digest session records keep.
    Principal(Arc<str>),
    /// An anonymous client, by its address (IPv6 by /64).
    Address(std::net::IpAddr),
    /// Every anonymous caller without an address (stdio, the socket-free entry).
    Anonymous,
}

impl fmt::Display for CallerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Principal(owner) => write!(f, "p:{owner}"),
            Self::Address(ip) => write!(f, "ip:{ip}"),
            Self::Anonymous => f.write_str("anonymous"),
        }
    }
}

/// What the limiter says of one call.
pub(crate) enum Verdict {
    Admit,
    /// Refused by `rule`; the budget has room again after `retry_after`.
    Limited {
        rule: String,
        retry_after: Duration,
    },
    /// The store failed and the limiter fails closed.
    Unavailable,
}

impl Verdict {
    /// The failure a refused call gets and the `Retry-After` seconds, noted in `refusals`.
    pub(crate) fn refusal(
        &self,
        refusals: &crate::refusal::Refusals,
        method: &str,
    ) -> (Failure, u64) {
        let (failure, seconds) = self
            .failure()
            .unwrap_or_else(|| (Failure::internal("admitted"), 0));
        let reason = match self {
            Self::Unavailable => crate::refusal::Reason::Unavailable,
            _ => crate::refusal::Reason::RateLimited,
        };
        refusals.note(reason, None, format_args!("{} ({method})", failure.message));
        (failure, seconds)
    }

    /// The failure a refused call gets, and the `Retry-After` seconds.
    pub(crate) fn failure(&self) -> Option<(Failure, u64)> {
        match self {
            Self::Admit => None,
            Self::Limited { rule, retry_after } => {
                let ms = u64::try_from(retry_after.as_millis())
                    .unwrap_or(u64::MAX)
                    .max(1);
                let failure = Failure::new(
                    FailureKind::RateLimited,
                    format!("rate limited by {rule}: retry in {ms} ms"),
                )
                .with_data(serde_json::json!({ "retryAfterMs": ms, "limit": rule }));
                Some((failure, ms.div_ceil(1000)))
            }
            Self::Unavailable => Some((
                Failure::unavailable("the rate limits cannot be checked now; retry later"),
                1,
            )),
        }
    }
}

struct Rule {
    limit: RateLimit,
    /// Microseconds between two tokens.
    interval: i64,
    /// Microseconds of the period.
    period: i64,
    /// The most tokens a worker takes at once.
    batch: u32,
    /// The rule's part of the store's key names.
    tag: String,
    /// `mcp_rate_limited_total{limit}` of this rule.
    #[cfg(feature = "metrics")]
    refused: Option<prometheus_client::metrics::counter::Counter>,
}

impl Rule {
    /// The verdict of a refusal by this rule, counted.
    fn limited(&self, wait_us: i64) -> Verdict {
        #[cfg(feature = "metrics")]
        if let Some(counter) = &self.refused {
            counter.inc();
        }
        Verdict::Limited {
            rule: self.limit.name.clone(),
            retry_after: Duration::from_micros(u64::try_from(wait_us).unwrap_or(1).max(1)),
        }
    }
}

/// What a worker knows of one (rule, caller) budget.
struct Leased {
    /// Tokens taken from the shared budget and not spent yet, spendable until `until`.
    tokens: u32,
    until: Instant,
    /// The shared budget was empty at the last take: calls until then are refused without
    /// asking the store (a flood of refused calls costs no round trip).
    refused_until: Option<Instant>,
    /// A take from the store in flight for this budget: who finds no token waits for it
    /// instead of taking too (no herd of compare-and-sets on one record).
    refill: Option<Arc<Notify>>,
    /// The size of the last take ([`LEASE_LIFE`] of calls at the rate measured then).
    want: u32,
    /// Tokens spent since `since`, the last take: the rate the next take is sized by.
    spent: u32,
    since: Instant,
}

impl Leased {
    fn empty() -> Self {
        let now = Instant::now();
        Self {
            tokens: 0,
            until: now,
            refused_until: None,
            refill: None,
            want: 1,
            spent: 0,
            since: now,
        }
    }

    /// Spends a leased token if one is left at `now`: `None` when none is; else whether the
    /// next lease should be taken now (the refill this worker then takes, already marked).
    fn spend(&mut self, now: Instant) -> Option<Option<Arc<Notify>>> {
        if self.tokens == 0 || self.until <= now {
            return None;
        }
        self.tokens -= 1;
        self.spent = self.spent.saturating_add(1);
        // Running low: the next lease is taken while the rest are spent, so no call waits for
        // the store while the budget has room. At tens of thousands of calls per second a
        // spawned take may wait for every connection's task ahead of it (at c=32, about
        // 0.4 ms on one core): with half of the lease left it arrives in time.
        if self.tokens <= self.want / 2 && self.refill.is_none() {
            let notify = Arc::new(Notify::new());
            self.refill = Some(notify.clone());
            return Some(Some(notify));
        }
        Some(None)
    }

    /// Gives back a token [`spend`](Self::spend) took.
    fn unspend(&mut self) {
        self.tokens += 1;
        self.spent = self.spent.saturating_sub(1);
    }

    /// The size of the next take, at most `cap`: [`LEASE_LIFE`] of calls at the rate spent
    /// since the last take, at least one token and at most [`LEASE_GROWTH`] times the last.
    fn size_next(&mut self, cap: u32, now: Instant) -> u32 {
        let elapsed = now.saturating_duration_since(self.since).as_micros().max(1);
        let rate_sized = u128::from(self.spent) * LEASE_LIFE.as_micros() / elapsed;
        let want = u32::try_from(rate_sized)
            .unwrap_or(u32::MAX)
            .min(self.want.saturating_mul(LEASE_GROWTH))
            .clamp(1, cap.max(1));
        self.want = want;
        self.spent = 0;
        self.since = now;
        want
    }
}

/// Ends a refill whatever happens to the call that made it (finished or dropped): the
/// budget's entry no longer says a refill is in flight, and its waiters look again.
struct Refilling<'a> {
    leases: &'a Mutex<Leases>,
    key: &'a (usize, CallerKey),
    notify: Arc<Notify>,
}

impl Drop for Refilling<'_> {
    fn drop(&mut self) {
        {
            let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(leased) = leased_mut(&mut leases, self.key.0, &self.key.1)
                && leased
                    .refill
                    .as_ref()
                    .is_some_and(|n| Arc::ptr_eq(n, &self.notify))
            {
                leased.refill = None;
            }
        }
        self.notify.notify_waiters();
    }
}

/// What a worker knows of each caller's budgets: one [`Leased`] per rule, by rule index (one
/// lookup per call, whatever the number of rules).
type Leases = FastMap<CallerKey, Box<[Leased]>>;

/// The budget of rule `index` for `caller` in `leases`, if the caller has been seen (by
/// reference: the admitting path clones no key).
fn leased_mut<'a>(
    leases: &'a mut Leases,
    index: usize,
    caller: &CallerKey,
) -> Option<&'a mut Leased> {
    leases.get_mut(caller)?.get_mut(index)
}

/// The rate limits of a server. See the [module documentation](self).
pub(crate) struct Limiter {
    rules: Vec<Rule>,
    store: Arc<dyn StateStore>,
    namespace: Namespace,
    on_failure: OnHubFailure,
    leases: Mutex<Leases>,
    /// The per-worker budgets used while the store fails (fail-open): the GCRA's state.
    own: Mutex<FastMap<(usize, CallerKey), i64>>,
    /// When the last line about a failing store was written (ms since `base`).
    last_warning: AtomicU64,
    base: Instant,
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The GCRA: from the bucket's theoretical arrival time `tat`, take up to `want` tokens at
/// `now`. `Ok((granted, new tat))` or `Err(wait)`.
fn take(tat: i64, now: i64, want: u32, interval: i64, period: i64) -> Result<(u32, i64), i64> {
    let base = tat.max(now);
    let room = (now + period - base) / interval;
    if room <= 0 {
        return Err(base + interval - (now + period));
    }
    let granted = u32::try_from(room).unwrap_or(u32::MAX).min(want);
    Ok((granted, base + i64::from(granted) * interval))
}

impl Limiter {
    pub(crate) fn new(
        limits: Vec<RateLimit>,
        lease: u32,
        on_failure: OnHubFailure,
        store: Arc<dyn StateStore>,
    ) -> Self {
        let rules = limits
            .into_iter()
            .map(|limit| {
                let period = i64::try_from(limit.period.as_micros()).unwrap_or(i64::MAX);
                let interval = (period / i64::from(limit.count)).max(1);
                let batch = lease.clamp(1, (limit.count / 10).max(1));
                let tag = format!(
                    "{}/{}/{}",
                    limit.name,
                    limit.count,
                    limit.period.as_millis()
                );
                Rule {
                    limit,
                    interval,
                    period,
                    batch,
                    tag,
                    #[cfg(feature = "metrics")]
                    refused: None,
                }
            })
            .collect();
        Self {
            rules,
            store,
            namespace: Namespace::new("mcp-rate"),
            on_failure,
            leases: Mutex::default(),
            own: Mutex::default(),
            last_warning: AtomicU64::new(0),
            base: Instant::now(),
        }
    }

    /// Counts each rule's refusals in `metrics` (`mcp_rate_limited_total{limit}`).
    #[cfg(feature = "metrics")]
    pub(crate) fn counted(mut self, metrics: Option<&crate::Metrics>) -> Self {
        if let Some(metrics) = metrics {
            for rule in &mut self.rules {
                rule.refused = Some(metrics.rate_limited_counter(&rule.limit.name));
            }
        }
        self
    }

    /// Whether any rule applies to `call` (most calls of a server with only a `deploy` rule
    /// cost one comparison per rule).
    pub(crate) fn applies(&self, call: &Call) -> bool {
        self.rules.iter().any(|rule| rule.limit.applies_to(call))
    }

    /// Admits a body of one request from this worker's leases alone, under one lock and
    /// without a future: `true` when every rule that applies had a leased token (now spent) or
    /// none applies; `false`, with nothing spent, when [`first_refused`](Self::first_refused)
    /// must decide (a batch, a budget without a lease, a refusal).
    pub(crate) fn admit_leased(
        self: &Arc<Self>,
        items: &mcp_adapters::DecodedBody,
        key: impl FnOnce() -> CallerKey,
    ) -> bool {
        let mcp_adapters::DecodedBody::Single(item) = items else {
            return false;
        };
        let mcp_adapters::Incoming::Call(call) = item else {
            return true;
        };
        if call.id.is_none() || !self.applies(call) {
            return true;
        }
        let caller = key();
        let now = Instant::now();
        let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(budgets) = leases.get_mut(&caller) else {
            return false;
        };
        let mut spent = 0;
        for ((index, rule), leased) in self.rules.iter().enumerate().zip(budgets.iter_mut()) {
            if !rule.limit.applies_to(call) {
                continue;
            }
            match leased.spend(now) {
                Some(refill) => {
                    spent += 1;
                    if let Some(notify) = refill {
                        let want = leased.size_next(rule.batch, now);
                        let key = (index, caller.clone());
                        tokio::spawn(Arc::clone(self).prefetch(key, notify, want));
                    }
                }
                None => {
                    // Give back what the rules before this one took: the slow path decides.
                    for (rule, leased) in self.rules.iter().zip(budgets.iter_mut()) {
                        if spent == 0 {
                            break;
                        }
                        if rule.limit.applies_to(call) {
                            leased.unspend();
                            spent -= 1;
                        }
                    }
                    return false;
                }
            }
        }
        true
    }

    /// The first call of `items` a rule refuses for the caller `key` makes (built only when a
    /// rule applies), with the verdict and the call's method.
    pub(crate) async fn first_refused(
        self: &Arc<Self>,
        items: &mcp_adapters::DecodedBody,
        key: impl FnOnce() -> CallerKey,
    ) -> Option<(Option<mcp_wire::jsonrpc::Id>, Verdict, String)> {
        let mut key = Some(key);
        let mut caller: Option<CallerKey> = None;
        for item in items.items() {
            let mcp_adapters::Incoming::Call(call) = item else {
                continue;
            };
            // Requests only: a notification has no answer a refusal could ride on.
            if call.id.is_none() || !self.applies(call) {
                continue;
            }
            let caller = match &caller {
                Some(caller) => caller.clone(),
                None => {
                    let made = key.take().map_or(CallerKey::Anonymous, |key| key());
                    caller.insert(made).clone()
                }
            };
            let verdict = self.check(call, &caller).await;
            if !matches!(verdict, Verdict::Admit) {
                return Some((call.id.clone(), verdict, call.method.to_string()));
            }
        }
        None
    }

    /// Takes a token of every rule that applies to `call` for `caller`.
    pub(crate) async fn check(self: &Arc<Self>, call: &Call, caller: &CallerKey) -> Verdict {
        for (index, rule) in self.rules.iter().enumerate() {
            if !rule.limit.applies_to(call) {
                continue;
            }
            // The common case, without the future of a take: a token of this worker's lease.
            if self.spend_leased(index, rule, caller) {
                continue;
            }
            let verdict = self.take_one(index, rule, caller).await;
            if !matches!(verdict, Verdict::Admit) {
                return verdict;
            }
        }
        Verdict::Admit
    }

    /// Spends a token of this worker's lease of the budget, if it holds one (and starts taking
    /// the next lease when half is left); `false` when it holds none.
    fn spend_leased(self: &Arc<Self>, index: usize, rule: &Rule, caller: &CallerKey) -> bool {
        let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(leased) = leased_mut(&mut leases, index, caller) else {
            return false;
        };
        let now = Instant::now();
        let Some(refill) = leased.spend(now) else {
            return false;
        };
        if let Some(notify) = refill {
            let want = leased.size_next(rule.batch, now);
            let key = (index, caller.clone());
            tokio::spawn(Arc::clone(self).prefetch(key, notify, want));
        }
        true
    }

    async fn take_one(self: &Arc<Self>, index: usize, rule: &Rule, caller: &CallerKey) -> Verdict {
        let key = (index, caller.clone());
        let (notify, want) = loop {
            let waiting = {
                let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
                let now = Instant::now();
                if !leases.contains_key(&key.1) {
                    if leases.len() >= MAX_LOCAL_KEYS {
                        leases.retain(|_, budgets| {
                            budgets.iter().any(|leased| {
                                leased.refill.is_some()
                                    || (leased.tokens > 0 && leased.until > now)
                                    || leased.refused_until.is_some_and(|until| until > now)
                            })
                        });
                        if leases.len() >= MAX_LOCAL_KEYS {
                            leases.clear();
                        }
                    }
                    let budgets = self.rules.iter().map(|_| Leased::empty()).collect();
                    leases.insert(key.1.clone(), budgets);
                }
                let Some(leased) = leased_mut(&mut leases, key.0, &key.1) else {
                    continue;
                };
                if let Some(refill) = leased.spend(now) {
                    if let Some(notify) = refill {
                        let want = leased.size_next(rule.batch, now);
                        tokio::spawn(Arc::clone(self).prefetch(key, notify, want));
                    }
                    return Verdict::Admit;
                }
                if let Some(until) = leased.refused_until {
                    if until > now {
                        let wait = until - now;
                        return rule.limited(i64::try_from(wait.as_micros()).unwrap_or(i64::MAX));
                    }
                    leased.refused_until = None;
                }
                match &leased.refill {
                    Some(notify) => {
                        // Registered before the lock is released: the refill's end is not missed.
                        let mut notified = Box::pin(notify.clone().notified_owned());
                        notified.as_mut().enable();
                        notified
                    }
                    None => {
                        let notify = Arc::new(Notify::new());
                        leased.refill = Some(notify.clone());
                        // This call's token is part of the take: it counts toward the rate.
                        leased.spent = leased.spent.saturating_add(1);
                        break (notify, leased.size_next(rule.batch, now));
                    }
                }
            };
            waiting.await;
        };
        let refilling = Refilling {
            leases: &self.leases,
            key: &key,
            notify,
        };
        let taken = self.take_shared(rule, caller, want).await;
        let verdict = {
            let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
            let leased = leased_mut(&mut leases, key.0, &key.1);
            match taken {
                Ok(Ok(granted)) => {
                    if let Some(leased) = leased {
                        let hold = rule.limit.period.min(Duration::from_secs(1));
                        leased.tokens = granted.saturating_sub(1);
                        leased.until = Instant::now() + hold;
                    }
                    Ok(Verdict::Admit)
                }
                Ok(Err(wait)) => {
                    if let Some(leased) = leased {
                        let wait = Duration::from_micros(u64::try_from(wait).unwrap_or(1));
                        leased.refused_until = Some(Instant::now() + wait);
                    }
                    Ok(rule.limited(wait))
                }
                Err(err) => Err(err),
            }
        };
        drop(refilling);
        match verdict {
            Ok(verdict) => verdict,
            Err(err) => {
                self.warn(&err);
                match self.on_failure {
                    OnHubFailure::Closed => Verdict::Unavailable,
                    OnHubFailure::Open => self.take_own(key, rule),
                }
            }
        }
    }

    /// Takes the next lease of `key`'s budget ahead of need and adds it to the tokens left;
    /// ends the refill `notify` stands for, whatever happens.
    async fn prefetch(self: Arc<Self>, key: (usize, CallerKey), notify: Arc<Notify>, want: u32) {
        let refilling = Refilling {
            leases: &self.leases,
            key: &key,
            notify,
        };
        let Some(rule) = self.rules.get(key.0) else {
            return;
        };
        let taken = self.take_shared(rule, &key.1, want).await;
        {
            let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(leased) = leased_mut(&mut leases, key.0, &key.1) {
                let now = Instant::now();
                match taken {
                    Ok(Ok(granted)) => {
                        if leased.until <= now {
                            leased.tokens = 0;
                        }
                        leased.tokens = leased.tokens.saturating_add(granted);
                        leased.until = now + rule.limit.period.min(Duration::from_secs(1));
                    }
                    // Refused once the tokens left are spent.
                    Ok(Err(wait)) => {
                        let wait = Duration::from_micros(u64::try_from(wait).unwrap_or(1));
                        leased.refused_until = Some(now + wait);
                    }
                    // The next call that finds no token takes (and handles the failure).
                    Err(_) => {}
                }
            }
        }
        drop(refilling);
    }

    /// One compare-and-set take of up to `want` tokens on the shared record: the tokens
    /// granted, or the wait.
    async fn take_shared(
        &self,
        rule: &Rule,
        caller: &CallerKey,
        want: u32,
    ) -> Result<Result<u32, i64>, StoreError> {
        let key = self.namespace.key(&format!("{}/{caller}", rule.tag));
        for _ in 0..MAX_ATTEMPTS {
            let current = self.store.get(&key).await?;
            let now = now_us();
            let tat = current
                .as_ref()
                .and_then(|record| std::str::from_utf8(&record.value).ok()?.parse::<i64>().ok())
                .unwrap_or(now);
            let (granted, next) = match take(tat, now, want, rule.interval, rule.period) {
                Ok(taken) => taken,
                Err(wait) => return Ok(Err(wait)),
            };
            // The record is worth keeping until the bucket is full again.
            let ttl = Duration::from_micros(u64::try_from(next - now).unwrap_or(0))
                + Duration::from_secs(1);
            let value = Bytes::from(next.to_string());
            let written = match &current {
                Some(record) => self.store.save(&key, value, record.version, ttl).await,
                None => self.store.create(&key, value, ttl).await,
            };
            match written {
                Ok(_) => return Ok(Ok(granted)),
                Err(
                    StoreError::VersionConflict { .. }
                    | StoreError::NotFound
                    | StoreError::AlreadyExists,
                ) => {}
                Err(err) => return Err(err),
            }
        }
        Err(StoreError::Backend(mcp_hub::BackendError::timeout(
            "the shared rate-limit record kept changing under this worker",
        )))
    }

    /// A token of this worker's own budget (fail-open while the store fails).
    fn take_own(&self, key: (usize, CallerKey), rule: &Rule) -> Verdict {
        let mut own = self.own.lock().unwrap_or_else(PoisonError::into_inner);
        if own.len() >= MAX_LOCAL_KEYS {
            own.clear();
        }
        let now = now_us();
        let tat = own.get(&key).copied().unwrap_or(now);
        match take(tat, now, 1, rule.interval, rule.period) {
            Ok((_, next)) => {
                own.insert(key, next);
                Verdict::Admit
            }
            Err(wait) => rule.limited(wait),
        }
    }

    fn warn(&self, err: &StoreError) {
        let now = u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX) + 1;
        let last = self.last_warning.load(Ordering::Relaxed);
        if (last == 0 || now.saturating_sub(last) >= 10_000)
            && self
                .last_warning
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let mode = match self.on_failure {
                OnHubFailure::Open => "each worker limits by a budget of its own",
                OnHubFailure::Closed => "calls under a rate limit are refused",
            };
            tracing::warn!(%err, "the rate limits' store failed; {mode}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        let limit = RateLimit::parse("tools/call=600/1m").unwrap();
        assert_eq!(limit.target, Target::Operation(Operation::CallTool));
        assert_eq!(limit.period, Duration::from_secs(60));
        let limit = RateLimit::parse("deploy=5/m").unwrap();
        assert_eq!(limit.target, Target::Tool("deploy".into()));
        assert_eq!(
            RateLimit::parse("*=10/500ms").unwrap().target,
            Target::Every
        );
        // A method is named by the operation the revisions map its name to.
        assert_eq!(
            RateLimit::parse("resources/read=1/1h").unwrap().target,
            Target::Operation(Operation::ReadResource)
        );
        for bad in [
            "deploy",
            "deploy=5",
            "=5/1m",
            "deploy=x/1m",
            "deploy=5/1w",
            "deploy=0/1m",
        ] {
            assert!(RateLimit::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            RateLimit::parse("nosuch/method=1/1s"),
            Err(RateLimitError::UnknownMethod("nosuch/method".into()))
        );
    }

    #[test]
    fn the_bucket_holds_count_tokens_and_refills_one_per_interval() {
        // 10 per 1000 us: one token every 100 us.
        let (interval, period) = (100, 1000);
        let mut tat = 0;
        let mut granted = 0;
        while let Ok((g, next)) = take(tat, 0, 3, interval, period) {
            granted += g;
            tat = next;
        }
        assert_eq!(granted, 10);
        assert_eq!(take(tat, 0, 1, interval, period), Err(100));
        // One interval later, one more.
        assert_eq!(take(tat, 100, 5, interval, period).map(|(g, _)| g), Ok(1));
        // Idle for a whole period: full again, never more.
        assert_eq!(
            take(tat, 5000, 50, interval, period).map(|(g, _)| g),
            Ok(10)
        );
    }
}

#[cfg(test)]
mod lease_tests {
    use super::*;

    fn limiter(specs: &[&str]) -> Arc<Limiter> {
        let store = Arc::new(mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default()));
        let limits = specs.iter().map(|s| RateLimit::parse(s).unwrap()).collect();
        Arc::new(Limiter::new(limits, 10, OnHubFailure::Closed, store))
    }

    fn body(tool: &str) -> mcp_adapters::DecodedBody {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#
        );
        adapter().decode(mcp_wire::jsonrpc::decode(text.as_bytes()))
    }

    fn adapter() -> mcp_adapters::Adapter {
        mcp_adapters::AdapterSet::all()
            .by_version("2025-11-25")
            .unwrap()
    }

    fn tokens(limiter: &Limiter, index: usize) -> Option<u32> {
        let leases = limiter.leases.lock().unwrap();
        leases
            .get(&CallerKey::Anonymous)
            .map(|budgets| budgets[index].tokens)
    }

    #[tokio::test]
    async fn a_leased_token_admits_without_a_take_and_a_missing_lease_spends_nothing() {
        let limiter = limiter(&["tools/call=1000/1m", "add=1000/1m"]);
        let key = || CallerKey::Anonymous;
        // No lease yet: the fast path declines and spends nothing.
        assert!(!limiter.admit_leased(&body("add"), key));
        assert_eq!(tokens(&limiter, 0), None);
        // The slow path takes a lease for each rule and spends one of each.
        assert!(limiter.first_refused(&body("add"), key).await.is_none());
        assert!(tokens(&limiter, 0).is_some() && tokens(&limiter, 1).is_some());
        // Leases of 10 from here (none runs low in this test: no take runs beside it).
        for leased in limiter
            .leases
            .lock()
            .unwrap()
            .values_mut()
            .flat_map(|b| b.iter_mut())
        {
            (leased.tokens, leased.want) = (9, 10);
        }
        // Leased: each applying rule spends one token.
        assert!(limiter.admit_leased(&body("add"), key));
        assert_eq!(
            (tokens(&limiter, 0), tokens(&limiter, 1)),
            (Some(8), Some(8))
        );
        // Another tool: only `tools/call` applies.
        assert!(limiter.admit_leased(&body("echo"), key));
        assert_eq!(
            (tokens(&limiter, 0), tokens(&limiter, 1)),
            (Some(7), Some(8))
        );
        // The second rule's lease is gone: the first rule's token is given back.
        limiter
            .leases
            .lock()
            .unwrap()
            .get_mut(&CallerKey::Anonymous)
            .unwrap()[1]
            .tokens = 0;
        assert!(!limiter.admit_leased(&body("add"), key));
        assert_eq!(
            (tokens(&limiter, 0), tokens(&limiter, 1)),
            (Some(7), Some(0))
        );
        // A notification is never limited.
        let note = adapter().decode(mcp_wire::jsonrpc::decode(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ));
        assert!(limiter.admit_leased(&note, key));
    }

    #[test]
    fn a_lease_is_sized_by_the_rate_it_was_spent_at() {
        let start = Instant::now();
        let mut leased = Leased::empty();
        leased.since = start;
        // One call in a second: a token at a time.
        leased.spent = 1;
        assert_eq!(leased.size_next(1_000, start + Duration::from_secs(1)), 1);
        // 10 calls in a millisecond (about 1,000 in 100 ms): growing eightfold per take.
        let mut at = start + Duration::from_secs(1);
        let mut sizes = Vec::new();
        for _ in 0..5 {
            leased.spent = 10;
            at += Duration::from_millis(1);
            sizes.push(leased.size_next(1_000, at));
        }
        assert_eq!(sizes, [8, 64, 512, 1_000, 1_000]);
        // Never past the cap, and back to one token once the caller slows down.
        leased.spent = 50;
        at += Duration::from_millis(1);
        assert_eq!(leased.size_next(100, at), 100);
        leased.spent = 2;
        assert_eq!(leased.size_next(100, at + Duration::from_secs(1)), 1);
        // Nothing spent in the last instant: still one token (never zero).
        assert_eq!(leased.size_next(100, at + Duration::from_secs(1)), 1);
    }

    #[test]
    fn the_next_lease_is_taken_when_half_of_this_one_is_left() {
        let now = Instant::now();
        let mut leased = Leased::empty();
        (leased.tokens, leased.want, leased.until) = (8, 10, now + Duration::from_secs(1));
        assert!(matches!(leased.spend(now), Some(None)));
        assert_eq!((leased.tokens, leased.spent), (7, 1));
        leased.spend(now);
        // Five left of ten: one refill, marked in flight so no other call starts one.
        assert!(matches!(leased.spend(now), Some(Some(_))));
        assert!(leased.refill.is_some());
        assert!(matches!(leased.spend(now), Some(None)));
        leased.unspend();
        assert_eq!((leased.tokens, leased.spent), (5, 3));
        // An expired lease spends nothing.
        assert!(leased.spend(now + Duration::from_secs(2)).is_none());
        assert_eq!(leased.tokens, 5);
    }
}
