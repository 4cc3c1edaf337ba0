//! Prometheus metrics (feature `metrics`): what a server served, for a scrape endpoint.
//!
//! Hand one [`Metrics`] to [`ServerBuilder::metrics`](crate::ServerBuilder::metrics) (every
//! transport counts through it) and serve its text with
//! [`http::serve_metrics`](crate::http::serve_metrics) or your own route
//! ([`Metrics::render`]).
//!
//! | metric | kind | labels |
//! | --- | --- | --- |
//! | `mcp_requests_total` | counter | `revision`, `method`, `outcome`, `tool` |
//! | `mcp_request_duration_seconds` | histogram (50 µs to about 14 min) | `method`, `tool` |
//! | `mcp_sessions_created_total` | counter | |
//! | `mcp_sessions_ended_total` | counter | |
//! | `mcp_sessions_evicted_total` | counter | `reason`: `cap` (this worker held its maximum of sessions), `peer_quota` (the client address held its maximum) |
//! | `mcp_limit_refusals_total` | counter | `limit` |
//! | `mcp_rate_limited_total` | counter | `limit`: the name of the rate limit that refused the call (one of the server's configured rules) |
//! | `mcp_refusals_total` | counter | `reason`: `unauthorized` (401), `insufficient_scope` (403), `host`, `origin` (403), `body_limit` (413), `max_sessions`, `max_sessions_per_principal`, `max_calls_per_session`, `max_streams_per_session` (503), `rate_limited` (429), `unavailable` (503: hub or token verifier) |
//! | `mcp_questions_pending` | gauge | |
//! | `mcp_question_wait_seconds` | histogram (10 ms to about 43 min) | |
//! | `mcp_build_info` | gauge, always 1 | `version` (of `everymcp-server`) |
//! | `mcp_open_streams` | gauge | `kind`: `get` (Streamable HTTP GET), `post` (a request's event stream, `subscriptions/listen` included), `sse` (HTTP+SSE) |
//! | `mcp_hub_operations_total` | counter | `operation`: `publish`, `publish_existing`, `position`, `poll`, `delete_topic`, `create`, `get`, `save`, `touch`, `delete` |
//! | `mcp_hub_errors_total` | counter | `operation`, as above |
//!
//! Hub operations are counted by wrapping the server's event log and state store when it is
//! built with metrics; an expected refusal (a version conflict, a record that already exists
//! or is gone, a cursor out of retention) is an outcome, not an error.
//!
//! `outcome` is `ok`, `tool_error`, `input_required`, `error`, `cancelled` or `none` (a
//! notification). Label values come from fixed sets: a method outside the spec's names is
//! counted as `other`, so a client sending made-up methods cannot grow the label space, and
//! URIs are never labels. `tool` is the tool's name on `tools/call` when the server's registry
//! has that tool, `other` when it has not (so made-up names cannot grow the label space
//! either), and empty on other methods. Counting a call costs one lookup in a small table
//! (under a read lock, plus a lookup of the tool name on `tools/call`), two atomic additions,
//! the histogram's lock and a clock read; with no `Metrics` on the server it costs a branch.
//!
//! `mcp_request_duration_seconds` of a call that asked its user something (a pushed question
//! or an elicitation) includes the time the user took to answer; that wait is measured apart
//! in `mcp_question_wait_seconds`, from the moment a question is pushed to the client until
//! it is answered, refused or given up. Every refusal also writes one INFO log line (target
//! `mcp_server::refusal`, at most one per reason per second, then a count of those left out).
//! Process metrics (CPU, memory, descriptors) are not exported: `prometheus-client` has no
//! collector for them; node or container exporters report them.

mod scrape;

pub use scrape::serve_metrics;

use std::borrow::Cow;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::FastMap;

use bytes::Bytes;
use futures::future::BoxFuture;
use mcp_hub::{Cursor, Event, EventLog, Key, LogError, Record, StateStore, StoreError, Topic};

type Labels4 = [(&'static str, Cow<'static, str>); 4];
type Labels2 = [(&'static str, Cow<'static, str>); 2];
type Labels1 = [(&'static str, &'static str); 1];

/// The `tool` label of a request.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ToolLabel<'a> {
    /// Not a tool call: empty.
    None,
    /// A tool call naming a tool the registry lacks: `other`.
    Other,
    /// A tool call of this registered tool: its name.
    Registered(&'a str),
}

/// The handles of one (revision, method, outcome): the series without a tool name (and
/// `other`), and those of registered tools by name.
#[derive(Default)]
struct Handles {
    plain: Option<(Counter, Histogram)>,
    other: Option<(Counter, Histogram)>,
    tools: FastMap<Box<str>, (Counter, Histogram)>,
}

/// A set of server metrics and the registry that renders them. Cheap to clone: clones share
/// the counters.
///
/// ```
/// use mcp_server::{Metrics, Server};
///
/// let metrics = Metrics::new();
/// let server = Server::builder("demo", "1.0").metrics(&metrics).build().unwrap();
/// # let _ = server;
/// assert!(metrics.render().contains("mcp_sessions_created_total 0"));
/// ```
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    requests: Family<Labels4, Counter>,
    durations: Family<Labels2, Histogram, fn() -> Histogram>,
    sessions_created: Counter,
    sessions_ended: Counter,
    sessions_evicted: Family<Labels1, Counter>,
    limits: Family<Labels1, Counter>,
    /// By the configured rules' names (bounded by the configuration).
    rate_limited: Family<[(&'static str, String); 1], Counter>,
    questions: Gauge,
    question_wait: Histogram,
    refusals: Family<Labels1, Counter>,
    streams: Family<Labels1, Gauge>,
    hub_operations: Family<Labels1, Counter>,
    hub_errors: Family<Labels1, Counter>,
    /// The counter and histogram of each (revision, method, outcome) seen, by the addresses
    /// and lengths of those static texts: a call finds its handles with one seeded hash of
    /// six words instead of hashing the label texts in the families. Bounded by the number
    /// of static label texts (and capped at [`MAX_HANDLES`]), and the tools of each by the
    /// registry's names.
    handles: RwLock<FastMap<[usize; 6], Handles>>,
}

/// The most cached handle pairs (far above the fixed label sets' product), and the most
/// tools of one (revision, method, outcome) with handles of their own.
const MAX_HANDLES: usize = 4096;

fn text_key(text: &'static str) -> [usize; 2] {
    [text.as_ptr() as usize, text.len()]
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

fn duration_histogram() -> Histogram {
    // 50 us to about 14 min (839 s), by factors of 4: a call that waits for a person or a
    // long task still lands in a bucket.
    Histogram::new(exponential_buckets(0.000_05, 4.0, 13))
}

impl Metrics {
    /// A fresh set of metrics, all at zero.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<Labels4, Counter>::default();
        let durations = Family::<Labels2, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram,
        );
        // 10 ms to about 43 min, by factors of 4.
        let question_wait = Histogram::new(exponential_buckets(0.01, 4.0, 11));
        let refusals = Family::<Labels1, Counter>::default();
        let build_info = Family::<Labels1, Gauge>::default();
        build_info
            .get_or_create(&[("version", env!("CARGO_PKG_VERSION"))])
            .set(1);
        registry.register(
            "mcp_build_info",
            "The server library's version (the value is always 1)",
            build_info,
        );
        registry.register(
            "mcp_refusals",
            "Requests refused, by reason (401, 403, 413, 429, 503 and each limit)",
            refusals.clone(),
        );
        registry.register(
            "mcp_question_wait_seconds",
            "Time from pushing a question to its user until it is answered or given up",
            question_wait.clone(),
        );
        let sessions_created = Counter::default();
        let sessions_ended = Counter::default();
        let sessions_evicted = Family::<Labels1, Counter>::default();
        let limits = Family::<Labels1, Counter>::default();
        let questions = Gauge::default();
        let streams = Family::<Labels1, Gauge>::default();
        let hub_operations = Family::<Labels1, Counter>::default();
        let hub_errors = Family::<Labels1, Counter>::default();
        registry.register(
            "mcp_open_streams",
            "Event streams open to clients",
            streams.clone(),
        );
        registry.register(
            "mcp_hub_operations",
            "Operations on the hub (event log and state store)",
            hub_operations.clone(),
        );
        registry.register(
            "mcp_hub_errors",
            "Hub operations that failed (the backend, not an expected refusal)",
            hub_errors.clone(),
        );
        registry.register(
            "mcp_requests",
            "MCP requests and notifications served",
            requests.clone(),
        );
        registry.register(
            "mcp_request_duration_seconds",
            "Time from dispatch to outcome",
            durations.clone(),
        );
        registry.register(
            "mcp_sessions_created",
            "Sessions this worker created",
            sessions_created.clone(),
        );
        registry.register(
            "mcp_sessions_ended",
            "Sessions ended by their client (DELETE) on this worker",
            sessions_ended.clone(),
        );
        registry.register(
            "mcp_sessions_evicted",
            "Idle sessions this worker ended to make room for a new one, by the limit reached",
            sessions_evicted.clone(),
        );
        registry.register(
            "mcp_limit_refusals",
            "Requests refused at a configured limit",
            limits.clone(),
        );
        let rate_limited = Family::<[(&'static str, String); 1], Counter>::default();
        registry.register(
            "mcp_rate_limited",
            "Requests refused by a rate limit, by the limit's name",
            rate_limited.clone(),
        );
        registry.register(
            "mcp_questions_pending",
            "Questions pushed to clients and not yet answered",
            questions.clone(),
        );
        Self {
            inner: Arc::new(Inner {
                registry,
                requests,
                durations,
                sessions_created,
                sessions_ended,
                sessions_evicted,
                limits,
                rate_limited,
                questions,
                question_wait,
                refusals,
                streams,
                hub_operations,
                hub_errors,
                handles: RwLock::default(),
            }),
        }
    }

    /// The metrics in the Prometheus text exposition format (OpenMetrics flavour).
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.inner.registry);
        text
    }

    /// Counts a call. The usual call costs lookups in this cache only (the tool's name
    /// hashed once on `tools/call`), and allocates nothing.
    pub(crate) fn request(
        &self,
        revision: &'static str,
        method: &'static str,
        outcome: &'static str,
        tool: ToolLabel<'_>,
        took: Duration,
    ) {
        let [r0, r1] = text_key(revision);
        let [m0, m1] = text_key(method);
        let [o0, o1] = text_key(outcome);
        let key = [r0, r1, m0, m1, o0, o1];
        let seconds = took.as_secs_f64();
        let observe = |(counter, histogram): &(Counter, Histogram)| {
            counter.inc();
            histogram.observe(seconds);
        };
        {
            let handles = self.inner.handles.read().unwrap_or_else(|e| e.into_inner());
            if let Some(handles) = handles.get(&key) {
                let found = match tool {
                    ToolLabel::None => handles.plain.as_ref(),
                    ToolLabel::Other => handles.other.as_ref(),
                    ToolLabel::Registered(name) => handles.tools.get(name),
                };
                if let Some(pair) = found {
                    observe(pair);
                    return;
                }
            }
        }
        // First time for these labels.
        let label = match tool {
            ToolLabel::None => Cow::Borrowed(""),
            ToolLabel::Other => Cow::Borrowed("other"),
            ToolLabel::Registered(name) => Cow::Owned(name.to_owned()),
        };
        let counter = self
            .inner
            .requests
            .get_or_create(&[
                ("revision", Cow::Borrowed(revision)),
                ("method", Cow::Borrowed(method)),
                ("outcome", Cow::Borrowed(outcome)),
                ("tool", label.clone()),
            ])
            .clone();
        let histogram = self
            .inner
            .durations
            .get_or_create(&[("method", Cow::Borrowed(method)), ("tool", label)])
            .clone();
        let pair = (counter, histogram);
        observe(&pair);
        let mut handles = self
            .inner
            .handles
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if handles.len() >= MAX_HANDLES && !handles.contains_key(&key) {
            return;
        }
        let entry = handles.entry(key).or_default();
        match tool {
            ToolLabel::None => entry.plain = Some(pair),
            ToolLabel::Other => entry.other = Some(pair),
            ToolLabel::Registered(name) => {
                if entry.tools.len() < MAX_HANDLES {
                    entry.tools.insert(name.into(), pair);
                }
            }
        }
    }

    pub(crate) fn session_created(&self) {
        self.inner.sessions_created.inc();
    }

    pub(crate) fn session_ended(&self) {
        self.inner.sessions_ended.inc();
    }

    pub(crate) fn session_evicted(&self, reason: &'static str) {
        self.inner
            .sessions_evicted
            .get_or_create(&[("reason", reason)])
            .inc();
    }

    pub(crate) fn limit_hit(&self, limit: &'static str) {
        self.inner.limits.get_or_create(&[("limit", limit)]).inc();
    }

    /// Counts a pushed question until the returned guard drops, and then observes how long
    /// it waited.
    pub(crate) fn question(&self) -> QuestionGuard {
        self.inner.questions.inc();
        QuestionGuard {
            pending: self.inner.questions.clone(),
            wait: self.inner.question_wait.clone(),
            since: std::time::Instant::now(),
        }
    }

    /// The counter of `mcp_rate_limited_total` for the rate limit named `limit` (created at
    /// once, so a configured limit is exported at zero until it refuses).
    pub(crate) fn rate_limited_counter(&self, limit: &str) -> Counter {
        self.inner
            .rate_limited
            .get_or_create(&[("limit", limit.to_owned())])
            .clone()
    }

    /// The counters of `mcp_refusals_total`, one per [`Reason::ALL`](crate::refusal::Reason::ALL)
    /// in order, created at once (so every reason is exported, at zero until it happens).
    pub(crate) fn refusal_counters(&self) -> [Counter; crate::refusal::Reason::COUNT] {
        crate::refusal::Reason::ALL.map(|reason| {
            self.inner
                .refusals
                .get_or_create(&[("reason", reason.label())])
                .clone()
        })
    }
}

impl Metrics {
    /// Counts an open event stream of `kind` until the returned guard drops.
    pub(crate) fn stream(&self, kind: &'static str) -> GaugeGuard {
        let gauge = self.inner.streams.get_or_create(&[("kind", kind)]).clone();
        gauge.inc();
        GaugeGuard(gauge)
    }

    /// `log` and `store`, with every operation and failure counted.
    pub(crate) fn meter_hub(
        &self,
        log: Arc<dyn EventLog>,
        store: Arc<dyn StateStore>,
    ) -> (Arc<dyn EventLog>, Arc<dyn StateStore>) {
        let op = |name: &'static str| HubCounters {
            done: self
                .inner
                .hub_operations
                .get_or_create(&[("operation", name)])
                .clone(),
            failed: self
                .inner
                .hub_errors
                .get_or_create(&[("operation", name)])
                .clone(),
        };
        let log = MeteredLog {
            inner: log,
            publish: op("publish"),
            publish_existing: op("publish_existing"),
            position: op("position"),
            poll: op("poll"),
            delete: op("delete_topic"),
        };
        let store = MeteredStore {
            inner: store,
            create: op("create"),
            get: op("get"),
            save: op("save"),
            touch: op("touch"),
            delete: op("delete"),
        };
        (Arc::new(log), Arc::new(store))
    }
}

/// Keeps one in a gauge while it lives.
pub(crate) struct GaugeGuard(Gauge);

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The counters of one hub operation.
#[derive(Clone)]
struct HubCounters {
    done: Counter,
    failed: Counter,
}

impl HubCounters {
    /// Counts `result`; `failure` tells a backend failure from an expected refusal.
    fn count<T, E>(&self, result: Result<T, E>, failure: impl Fn(&E) -> bool) -> Result<T, E> {
        self.done.inc();
        if let Err(e) = &result
            && failure(e)
        {
            self.failed.inc();
        }
        result
    }
}

fn log_failure(e: &LogError) -> bool {
    matches!(e, LogError::Backend(_))
}

fn store_failure(e: &StoreError) -> bool {
    matches!(e, StoreError::Backend(_))
}

/// An event log whose operations are counted.
struct MeteredLog {
    inner: Arc<dyn EventLog>,
    publish: HubCounters,
    publish_existing: HubCounters,
    position: HubCounters,
    poll: HubCounters,
    delete: HubCounters,
}

impl EventLog for MeteredLog {
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Cursor, LogError>> {
        Box::pin(async move {
            let result = self.inner.publish(topic, message).await;
            self.publish.count(result, log_failure)
        })
    }

    fn publish_existing<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Option<Cursor>, LogError>> {
        Box::pin(async move {
            let result = self.inner.publish_existing(topic, message).await;
            self.publish_existing.count(result, log_failure)
        })
    }

    fn position<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<Cursor, LogError>> {
        Box::pin(async move {
            let result = self.inner.position(topic).await;
            self.position.count(result, log_failure)
        })
    }

    fn poll<'a>(
        &'a self,
        topic: &'a Topic,
        after: Cursor,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Vec<Event>, LogError>> {
        Box::pin(async move {
            let result = self.inner.poll(topic, after, timeout).await;
            self.poll.count(result, log_failure)
        })
    }

    fn delete<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<(), LogError>> {
        Box::pin(async move {
            let result = self.inner.delete(topic).await;
            self.delete.count(result, log_failure)
        })
    }
}

/// A state store whose operations are counted.
struct MeteredStore {
    inner: Arc<dyn StateStore>,
    create: HubCounters,
    get: HubCounters,
    save: HubCounters,
    touch: HubCounters,
    delete: HubCounters,
}

impl StateStore for MeteredStore {
    fn create<'a>(
        &'a self,
        key: &'a Key,
        value: Bytes,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            let result = self.inner.create(key, value, ttl).await;
            self.create.count(result, store_failure)
        })
    }

    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        Box::pin(async move {
            let result = self.inner.get(key).await;
            self.get.count(result, store_failure)
        })
    }

    fn save<'a>(
        &'a self,
        key: &'a Key,
        value: Bytes,
        expected_version: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            let result = self.inner.save(key, value, expected_version, ttl).await;
            self.save.count(result, store_failure)
        })
    }

    fn touch<'a>(&'a self, key: &'a Key, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let result = self.inner.touch(key, ttl).await;
            self.touch.count(result, store_failure)
        })
    }

    fn delete<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let result = self.inner.delete(key).await;
            self.delete.count(result, store_failure)
        })
    }
}

/// Keeps a question counted in `mcp_questions_pending` while it lives; observes its wait in
/// `mcp_question_wait_seconds` when it drops.
pub(crate) struct QuestionGuard {
    pending: Gauge,
    wait: Histogram,
    since: std::time::Instant,
}

impl Drop for QuestionGuard {
    fn drop(&mut self) {
        self.pending.dec();
        self.wait.observe(self.since.elapsed().as_secs_f64());
    }
}
