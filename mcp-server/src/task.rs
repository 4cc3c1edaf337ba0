//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663), server side, kept in the
//! hub so that every worker sharing it serves every task.
//!
//! A tool declares [`TaskSupport`]. When a `tools/call` request declares the extension (in its
//! `_meta` client capabilities, or at `initialize` on the handshake revisions) and the tool
//! supports tasks, the server writes a task record to the hub's [`StateStore`] (with the
//! task's time to live) **before** it answers with a `CreateTaskResult`, then runs the handler
//! on the worker that created it. `tasks/get`, `tasks/update` and `tasks/cancel` work on any
//! worker sharing the hub:
//!
//! ```text
//!  worker A: tools/call ─► create record (working) ─► CreateTaskResult
//!            handler runs; ex.ask(..) ─► record: input_required + inputRequests, waits
//!  worker B: tasks/update ─► record: answered keys removed ─► publish answers ─┐
//!  worker A: ◄── answers (event log topic of the task) ◄──────────────────────┘
//!            handler ends ─► record: completed (result) or failed (error)
//!  worker B: tasks/cancel ─► record: cancelled ─► publish cancel ─► worker A stops the handler
//! ```
//!
//! The worker running a task renews a lease in the record; a task whose lease ran out (its
//! worker died) reads as `failed`. The record expires `ttlMs` after the task was created.
//! Task ids are 192 random bits, and a task is visible only to the principal that created it
//! (to everyone when the server has no authentication).
//!
//! Tasks are created where the revision has the result envelope (`resultType`, 2026-07-28):
//! a `CreateTaskResult` cannot be told from a tool result without it. On the handshake
//! revisions a tool with [`TaskSupport::Optional`] runs synchronously, and one with
//! [`TaskSupport::Required`] is refused with the missing-capability error.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use mcp_hub::{Cursor, EventLog, Key, Namespace, StateStore, StoreError, Topic};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::exchange::{CancelHandle, Owner, owner_tag};
use crate::extension::{Extension, ExtensionError, ExtensionRequest};

/// The identifier of the Tasks extension.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The status notification of the Tasks extension, sent on `subscriptions/listen` streams
/// whose filter names the task in `taskIds`.
pub(crate) const TASKS_NOTIFICATION: &str = "notifications/tasks";

/// The most task ids one `subscriptions/listen` request may follow.
pub(crate) const MAX_LISTENED_TASKS: usize = 100;

/// Reads a payload of the notifications topic: a task's status notification (its id and
/// `DetailedTask` params), or `None`.
pub(crate) fn task_notification(payload: &[u8]) -> Option<(String, Map<String, Value>)> {
    let value: Value = serde_json::from_slice(payload).ok()?;
    if value.get("method")?.as_str()? != TASKS_NOTIFICATION {
        return None;
    }
    let Value::Object(params) = value.get("params")?.clone() else {
        return None;
    };
    let id = params.get("taskId")?.as_str()?.to_owned();
    Some((id, params))
}

/// Whether a tool runs as a task when the client supports tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Always answered synchronously (the default).
    #[default]
    Forbidden,
    /// Runs as a task when the request declares the Tasks extension; synchronously otherwise.
    Optional,
    /// Runs only as a task: a request that does not declare the Tasks extension is refused
    /// with the revision's missing-capability error (`-32021` with
    /// `data.requiredCapabilities.extensions["io.modelcontextprotocol/tasks"]`).
    Required,
}

/// The limits and timings of the server's tasks ([`ServerBuilder::tasks`](crate::ServerBuilder::tasks)).
///
/// ```
/// use std::time::Duration;
/// use mcp_server::Tasks;
///
/// let tasks = Tasks::new()
///     .ttl(Duration::from_secs(600))
///     .max_live(100)
///     .max_live_per_principal(10)
///     .max_retained(10_000);
/// assert_eq!(tasks.ttl_ms(), 600_000);
/// ```
#[derive(Clone, Debug)]
pub struct Tasks {
    ttl: Duration,
    poll_interval: Duration,
    lease: Duration,
    max_live: usize,
    max_live_per_principal: usize,
    max_retained: usize,
    max_update_bytes: usize,
    max_input_requests: usize,
}

impl Default for Tasks {
    fn default() -> Self {
        Self {
            ttl: Self::DEFAULT_TTL,
            poll_interval: Duration::from_millis(500),
            lease: Duration::from_secs(30),
            max_live: 1000,
            max_live_per_principal: 100,
            max_retained: 100_000,
            max_update_bytes: 256 * 1024,
            max_input_requests: 16,
        }
    }
}

impl Tasks {
    /// The default time to live of a task: one hour.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);
    /// The longest time to live accepted: seven days.
    pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

    /// The defaults: `ttlMs` one hour, `pollIntervalMs` 500, a 30 s lease, at most 1000 live
    /// tasks per worker and 100 per principal, at most 100,000 tasks created by a worker
    /// within one time to live, `tasks/update` params up to 256 KiB, at most 16 pending input
    /// requests per task.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long a task stays readable after it was created (`ttlMs`), clamped to 1 s ..
    /// [`MAX_TTL`](Self::MAX_TTL).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.clamp(Duration::from_secs(1), Self::MAX_TTL);
        self
    }

    /// The poll interval suggested to clients (`pollIntervalMs`), clamped to 10 ms .. 1 min.
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval.clamp(Duration::from_millis(10), Duration::from_secs(60));
        self
    }

    /// How long a task stays `working` (or `input_required`) without its worker renewing it;
    /// the worker renews it every third of this. Once it runs out (the worker died, or could
    /// not reach the hub for that long) the task reads as `failed`, and a worker that finds its
    /// task so marked stops the handler. Workers compare the lease with their own clocks: keep
    /// them within a small part of the lease of each other. Clamped to 300 ms .. 10 min.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.clamp(Duration::from_millis(300), Duration::from_secs(600));
        self
    }

    /// At most this many tasks run at once on this worker (at least 1); one more is refused
    /// with a "server unavailable" error naming the limit.
    #[must_use]
    pub fn max_live(mut self, max: usize) -> Self {
        self.max_live = max.max(1);
        self
    }

    /// At most this many tasks of one principal run at once on this worker (at least 1).
    /// Without authentication every caller is the same (absent) principal, so this bounds
    /// them all together.
    #[must_use]
    pub fn max_live_per_principal(mut self, max: usize) -> Self {
        self.max_live_per_principal = max.max(1);
        self
    }

    /// At most this many tasks created by this worker are kept at once (at least 1): a task's
    /// record stays readable until its time to live ends, finished or not, so a client that
    /// creates short tasks fast would otherwise make the store hold (rate x time to live)
    /// records. One more is refused with a "server unavailable" error naming the limit, until
    /// the oldest record's time to live ends. Each kept task costs this worker 8 bytes of
    /// bookkeeping and the store its record (about 1 KiB on the memory hub). Default 100,000;
    /// at the default one-hour time to live that sustains about 27 new tasks a second.
    #[must_use]
    pub fn max_retained(mut self, max: usize) -> Self {
        self.max_retained = max.max(1);
        self
    }

    /// The largest `tasks/update` params accepted, serialized (at least 1 KiB).
    #[must_use]
    pub fn max_update_bytes(mut self, max: usize) -> Self {
        self.max_update_bytes = max.max(1024);
        self
    }

    /// At most this many input requests pending at once in one task (at least 1); a handler
    /// asking more gets [`Interrupt::CannotAsk`](crate::Interrupt::CannotAsk).
    #[must_use]
    pub fn max_input_requests(mut self, max: usize) -> Self {
        self.max_input_requests = max.max(1);
        self
    }

    /// The time to live, in whole milliseconds.
    pub fn ttl_ms(&self) -> u64 {
        millis(self.ttl)
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Why a task operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum TaskError {
    /// No live task has this id for this principal.
    #[error("unknown task {0:?}")]
    Unknown(String),
    /// The params are malformed.
    #[error("{0}")]
    InvalidParams(String),
    /// A limit was reached.
    #[error("{0}")]
    Limit(String),
    /// No randomness for a task id.
    #[error("no task id could be made: {0}")]
    Random(String),
    /// The hub failed.
    #[error("the task store failed: {0}")]
    Store(#[from] StoreError),
    /// The hub's event log failed.
    #[error("the task event log failed: {0}")]
    Log(#[from] mcp_hub::LogError),
}

impl From<TaskError> for ExtensionError {
    fn from(err: TaskError) -> Self {
        match err {
            TaskError::Unknown(_) | TaskError::InvalidParams(_) => {
                Self::InvalidParams(err.to_string())
            }
            TaskError::Limit(_)
            | TaskError::Random(_)
            | TaskError::Store(_)
            | TaskError::Log(_) => Self::Internal(err.to_string()),
        }
    }
}

/// A task's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// The record of one task, as stored in the hub.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TaskRecord {
    id: String,
    status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    created_ms: u64,
    updated_ms: u64,
    ttl_ms: u64,
    poll_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    input_requests: BTreeMap<String, Value>,
    /// The owner tag of the principal that created the task (empty: none).
    owner: String,
    /// Until when the running worker vouches for the task.
    lease_until_ms: u64,
    /// The `traceparent` of the span that created the task (exported spans only): the spans
    /// of its `tasks/get`, `tasks/update` and `tasks/cancel` link to it, on any worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_in: Option<String>,
}

impl TaskRecord {
    /// The `Task` members (`CreateTaskResult` is these plus `resultType: "task"`).
    fn task_fields(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("taskId".into(), Value::String(self.id.clone()));
        out.insert("status".into(), self.status.as_str().into());
        if let Some(message) = &self.message {
            out.insert("statusMessage".into(), Value::String(message.clone()));
        }
        out.insert("createdAt".into(), iso8601(self.created_ms).into());
        out.insert("lastUpdatedAt".into(), iso8601(self.updated_ms).into());
        out.insert("ttlMs".into(), self.ttl_ms.into());
        out.insert("pollIntervalMs".into(), self.poll_ms.into());
        out
    }

    /// The `CreateTaskResult`.
    pub(crate) fn create_result(&self) -> Value {
        let mut out = self.task_fields();
        out.insert("resultType".into(), "task".into());
        Value::Object(out)
    }

    /// The `DetailedTask` (`tasks/get`, `notifications/tasks`).
    pub(crate) fn detailed(&self) -> Value {
        let mut out = self.task_fields();
        match self.status {
            Status::InputRequired if !self.input_requests.is_empty() => {
                let requests: Map<String, Value> = self
                    .input_requests
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                out.insert("inputRequests".into(), Value::Object(requests));
            }
            Status::Completed => {
                if let Some(result) = &self.result {
                    out.insert("result".into(), result.clone());
                }
            }
            Status::Failed => {
                if let Some(error) = &self.error {
                    out.insert("error".into(), error.clone());
                }
            }
            _ => {}
        }
        Value::Object(out)
    }

    /// The time to live left for a save now (at least 1 ms).
    fn remaining(&self, now: u64) -> Duration {
        let ends = self.created_ms.saturating_add(self.ttl_ms);
        Duration::from_millis(ends.saturating_sub(now).max(1))
    }

    fn finish(&mut self, status: Status, now: u64) {
        self.status = status;
        self.updated_ms = now;
        self.input_requests.clear();
    }
}

/// How a task ended, as the record keeps it.
#[derive(Debug)]
pub(crate) enum Ending {
    /// The result the call would have returned (a tool error included).
    Completed(Value),
    /// A JSON-RPC error object.
    Failed(Value),
    /// Stopped by `tasks/cancel` (or its record expired).
    Cancelled,
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(millis)
        .unwrap_or(0)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the Unix epoch (proleptic Gregorian
/// calendar, days converted through the 400-year era of 146 097 days).
pub(crate) fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Shift the epoch to 0000-03-01, so leap days fall at the end of a year.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        ms % 1000
    )
}

/// What `tasks/update` and `tasks/cancel` publish to the task's topic for its worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Signal {
    Answers(Map<String, Value>),
    Cancel,
}

/// Live tasks on this worker, in total and per principal.
#[derive(Debug, Default)]
struct Live {
    total: usize,
    per_owner: HashMap<String, usize>,
    /// When the records of the tasks this worker created expire (ms since the epoch), oldest
    /// first: every task has the same time to live, so the order is creation order. At most
    /// [`Tasks::max_retained`] entries.
    retained: std::collections::VecDeque<u64>,
}

/// The server's tasks: the hub they live in and the limits.
pub(crate) struct TaskEngine {
    store: Arc<dyn StateStore>,
    log: Arc<dyn EventLog>,
    config: Tasks,
    live: Mutex<Live>,
}

impl std::fmt::Debug for TaskEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskEngine")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A place among the live tasks of this worker, given back when dropped.
pub(crate) struct Slot {
    engine: Arc<TaskEngine>,
    owner: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut live = self.engine.lock_live();
        live.total = live.total.saturating_sub(1);
        if let Some(count) = live.per_owner.get_mut(&self.owner) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                live.per_owner.remove(&self.owner);
            }
        }
    }
}

/// The owner tag of a principal (sessions play no part: a task outlives its connection).
pub(crate) fn principal_tag(principal: Option<&str>) -> String {
    owner_tag(&Owner {
        principal: principal.map(Arc::from),
        session: None,
        auth: None,
    })
}

fn task_key(namespace: &Namespace, id: &str) -> Key {
    namespace.key(&format!("task/{id}"))
}

fn task_topic(namespace: &Namespace, id: &str) -> Topic {
    namespace.topic(&format!("task/{id}"))
}

impl TaskEngine {
    pub(crate) fn new(
        store: Arc<dyn StateStore>,
        log: Arc<dyn EventLog>,
        config: Tasks,
    ) -> Arc<Self> {
        Arc::new(Self {
            store,
            log,
            config,
            live: Mutex::new(Live::default()),
        })
    }

    fn lock_live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The extension the server advertises, with its three methods.
    pub(crate) fn extension(self: &Arc<Self>) -> Extension {
        let get = self.clone();
        let update = self.clone();
        let cancel = self.clone();
        Extension::new(TASKS_EXTENSION)
            .required()
            .method(mcp_wire::names::method::TASKS_GET, move |request| {
                let engine = get.clone();
                async move { engine.get(&request).await.map_err(Into::into) }
            })
            .method(mcp_wire::names::method::TASKS_UPDATE, move |request| {
                let engine = update.clone();
                async move { engine.update(&request).await.map_err(Into::into) }
            })
            .method(mcp_wire::names::method::TASKS_CANCEL, move |request| {
                let engine = cancel.clone();
                async move { engine.cancel(&request).await.map_err(Into::into) }
            })
    }

    /// Takes a place among the live tasks, or says which limit is reached.
    fn reserve(self: &Arc<Self>, owner: &str) -> Result<Slot, TaskError> {
        let mut live = self.lock_live();
        if live.total >= self.config.max_live {
            return Err(TaskError::Limit(format!(
                "this server runs at most {} tasks at once; try again later",
                self.config.max_live
            )));
        }
        let mine = live.per_owner.get(owner).copied().unwrap_or(0);
        if mine >= self.config.max_live_per_principal {
            return Err(TaskError::Limit(format!(
                "at most {} tasks of one principal run at once; try again later",
                self.config.max_live_per_principal
            )));
        }
        let now = now_ms();
        while live.retained.front().is_some_and(|&ends| ends <= now) {
            live.retained.pop_front();
        }
        if live.retained.len() >= self.config.max_retained {
            return Err(TaskError::Limit(format!(
                "this server keeps at most {} tasks until their time to live ends; try again later",
                self.config.max_retained
            )));
        }
        // Counted from here, even if the record is then not stored (it expires on time).
        live.retained
            .push_back(now.saturating_add(self.config.ttl_ms()));
        live.total += 1;
        *live.per_owner.entry(owner.to_owned()).or_insert(0) += 1;
        drop(live);
        Ok(Slot {
            engine: self.clone(),
            owner: owner.to_owned(),
        })
    }

    /// Creates a task record (durably, before anyone is told its id) and the run that
    /// drives it on this worker.
    pub(crate) async fn create(
        self: &Arc<Self>,
        namespace: &Namespace,
        principal: Option<&str>,
        cancel: CancelHandle,
    ) -> Result<(TaskRecord, Arc<TaskRun>), TaskError> {
        let owner = principal_tag(principal);
        let slot = self.reserve(&owner)?;
        let id = crate::state::random_id().map_err(|e| TaskError::Random(e.to_string()))?;
        let topic = task_topic(namespace, &id);
        // Taken before the record exists: every signal about the task comes after it.
        let cursor = self.log.position(&topic).await?;
        let now = now_ms();
        let record = TaskRecord {
            id: id.clone(),
            status: Status::Working,
            message: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms: self.config.ttl_ms(),
            poll_ms: millis(self.config.poll_interval).max(1),
            result: None,
            error: None,
            input_requests: BTreeMap::new(),
            owner,
            lease_until_ms: now.saturating_add(millis(self.config.lease)),
            created_in: crate::trace_link::current_traceparent(),
        };
        // A struct of strings, numbers and JSON values always serializes.
        let bytes = serde_json::to_vec(&record).unwrap_or_default();
        self.store
            .create(
                &task_key(namespace, &id),
                Bytes::from(bytes),
                self.config.ttl,
            )
            .await?;
        tracing::debug!(task = %id, "task created");
        let run = Arc::new(TaskRun {
            engine: self.clone(),
            namespace: namespace.clone(),
            id,
            cursor: Mutex::new(Some(cursor)),
            answers: Mutex::new(Map::new()),
            arrived: tokio::sync::Notify::new(),
            cancel,
            slot: Mutex::new(Some(slot)),
        });
        Ok((record, run))
    }

    /// The live record of `id` owned by `owner`, with its version; a task whose lease ran out
    /// is marked failed first.
    async fn load(
        &self,
        namespace: &Namespace,
        id: &str,
        owner: &str,
    ) -> Result<(TaskRecord, u64), TaskError> {
        let key = task_key(namespace, id);
        loop {
            let Some(stored) = self.store.get(&key).await? else {
                return Err(TaskError::Unknown(id.to_owned()));
            };
            let Ok(mut record) = serde_json::from_slice::<TaskRecord>(&stored.value) else {
                return Err(TaskError::Unknown(id.to_owned()));
            };
            if record.owner != owner || record.id != id {
                return Err(TaskError::Unknown(id.to_owned()));
            }
            // The request's span links to the one that created the task, wherever that ran.
            crate::trace_link::link_current(record.created_in.as_deref());
            let now = now_ms();
            if record.status.is_terminal() || now <= record.lease_until_ms {
                return Ok((record, stored.version));
            }
            // Nobody renewed the lease: the worker running the task is gone.
            record.finish(Status::Failed, now);
            record.error = Some(json!({
                "code": -32603,
                "message": "the worker running this task stopped before it finished",
            }));
            match self.save(&key, &record, stored.version, now).await {
                Ok(version) => {
                    self.announce(namespace, &record).await;
                    return Ok((record, version));
                }
                Err(StoreError::VersionConflict { .. }) => continue,
                Err(StoreError::NotFound) => return Err(TaskError::Unknown(id.to_owned())),
                Err(err) => return Err(err.into()),
            }
        }
    }

    async fn save(
        &self,
        key: &Key,
        record: &TaskRecord,
        version: u64,
        now: u64,
    ) -> Result<u64, StoreError> {
        let bytes = serde_json::to_vec(record).unwrap_or_default();
        self.store
            .save(key, Bytes::from(bytes), version, record.remaining(now))
            .await
    }

    /// Applies `change` to the live record of `id` (compare-and-set, retried on conflicts)
    /// until it says there is nothing to write. Returns the record as it ends up, or `None`
    /// when it is gone.
    async fn modify(
        &self,
        namespace: &Namespace,
        id: &str,
        mut change: impl FnMut(&mut TaskRecord, u64) -> bool,
    ) -> Result<Option<TaskRecord>, TaskError> {
        let key = task_key(namespace, id);
        loop {
            let Some(stored) = self.store.get(&key).await? else {
                return Ok(None);
            };
            let Ok(mut record) = serde_json::from_slice::<TaskRecord>(&stored.value) else {
                return Ok(None);
            };
            let now = now_ms();
            if !change(&mut record, now) {
                return Ok(Some(record));
            }
            match self.save(&key, &record, stored.version, now).await {
                Ok(_) => return Ok(Some(record)),
                Err(StoreError::VersionConflict { .. }) => {}
                Err(StoreError::NotFound) => return Ok(None),
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Announces `record`'s new state on the namespace's notifications topic, for the
    /// `subscriptions/listen` streams following it (on any worker). Best effort: a failure
    /// loses the notification, never the change (clients also poll `tasks/get`).
    async fn announce(&self, namespace: &Namespace, record: &TaskRecord) {
        let payload = json!({"method": TASKS_NOTIFICATION, "params": record.detailed()});
        if let Err(err) = self
            .log
            .publish(
                &namespace.topic(crate::notifier::TOPIC),
                Bytes::from(payload.to_string()),
            )
            .await
        {
            tracing::debug!(task = %record.id, %err, "task status not announced");
        }
    }

    /// Whether `id` is a live task of `principal` (for `subscriptions/listen`).
    pub(crate) async fn owns(
        &self,
        namespace: &Namespace,
        id: &str,
        principal: Option<&str>,
    ) -> bool {
        self.load(namespace, id, &principal_tag(principal))
            .await
            .is_ok()
    }

    fn task_id(request: &ExtensionRequest) -> Result<&str, TaskError> {
        match request.params().get("taskId") {
            Some(Value::String(id)) if !id.is_empty() && id.len() <= 128 => Ok(id),
            Some(Value::String(_)) => Err(TaskError::InvalidParams(
                "taskId must have 1 to 128 characters".into(),
            )),
            _ => Err(TaskError::InvalidParams(
                "taskId (a string) is required".into(),
            )),
        }
    }

    /// `tasks/get`: the `DetailedTask`.
    async fn get(&self, request: &ExtensionRequest) -> Result<Value, TaskError> {
        let id = Self::task_id(request)?;
        let owner = principal_tag(request.principal());
        let (record, _) = self.load(request.namespace(), id, &owner).await?;
        Ok(record.detailed())
    }

    /// `tasks/update`: answers to the task's input requests. Answers under keys the task is
    /// not waiting for are ignored; the ack is empty.
    async fn update(&self, request: &ExtensionRequest) -> Result<Value, TaskError> {
        let id = Self::task_id(request)?;
        let size = serde_json::to_vec(request.params()).map_or(0, |b| b.len());
        if size > self.config.max_update_bytes {
            return Err(TaskError::InvalidParams(format!(
                "tasks/update params are {size} bytes; this server takes at most {}",
                self.config.max_update_bytes
            )));
        }
        let Some(Value::Object(responses)) = request.params().get("inputResponses") else {
            return Err(TaskError::InvalidParams(
                "inputResponses (an object) is required".into(),
            ));
        };
        let owner = principal_tag(request.principal());
        let namespace = request.namespace();
        // Checks existence and ownership (and the lease) first.
        let (record, _) = self.load(namespace, id, &owner).await?;
        if record.status.is_terminal() {
            return Ok(json!({}));
        }
        let mut accepted = Map::new();
        let updated = self
            .modify(namespace, id, |record, now| {
                accepted.clear();
                if record.status.is_terminal() {
                    return false;
                }
                for (key, value) in responses {
                    if record.input_requests.remove(key).is_some() {
                        accepted.insert(key.clone(), value.clone());
                    }
                }
                if accepted.is_empty() {
                    return false;
                }
                if record.input_requests.is_empty() {
                    record.status = Status::Working;
                }
                record.updated_ms = now;
                true
            })
            .await?;
        if !accepted.is_empty() {
            let signal = serde_json::to_vec(&Signal::Answers(accepted)).unwrap_or_default();
            self.log
                .publish(&task_topic(namespace, id), Bytes::from(signal))
                .await?;
            if let Some(record) = &updated {
                self.announce(namespace, record).await;
            }
        }
        Ok(json!({}))
    }

    /// `tasks/cancel`: cooperative and idempotent; the ack is empty.
    async fn cancel(&self, request: &ExtensionRequest) -> Result<Value, TaskError> {
        let id = Self::task_id(request)?;
        let owner = principal_tag(request.principal());
        let namespace = request.namespace();
        let (record, _) = self.load(namespace, id, &owner).await?;
        if record.status.is_terminal() {
            return Ok(json!({}));
        }
        let mut changed = false;
        let cancelled = self
            .modify(namespace, id, |record, now| {
                changed = !record.status.is_terminal();
                if changed {
                    record.finish(Status::Cancelled, now);
                }
                changed
            })
            .await?;
        if changed {
            let signal = serde_json::to_vec(&Signal::Cancel).unwrap_or_default();
            self.log
                .publish(&task_topic(namespace, id), Bytes::from(signal))
                .await?;
            if let Some(record) = &cancelled {
                self.announce(namespace, record).await;
            }
            tracing::debug!(task = %id, "task cancelled");
        }
        Ok(json!({}))
    }
}

/// One task running on this worker: what its handler's questions wait for.
pub(crate) struct TaskRun {
    engine: Arc<TaskEngine>,
    namespace: Namespace,
    id: String,
    /// Where the task's signals start (taken by the listener).
    cursor: Mutex<Option<Cursor>>,
    /// Answers delivered by `tasks/update`, by key, not yet read.
    answers: Mutex<Map<String, Value>>,
    arrived: tokio::sync::Notify,
    cancel: CancelHandle,
    slot: Mutex<Option<Slot>>,
}

impl std::fmt::Debug for TaskRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRun")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

use crate::exchange::TaskAskError as AskError;

impl crate::exchange::TaskLink for TaskRun {
    fn id(&self) -> &str {
        &self.id
    }

    fn ask<'a>(
        &'a self,
        key: &'a str,
        request: Value,
    ) -> futures::future::BoxFuture<'a, Result<Value, AskError>> {
        Box::pin(Self::ask(self, key, request))
    }
}

impl TaskRun {
    fn lock_answers(&self) -> std::sync::MutexGuard<'_, Map<String, Value>> {
        self.answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Puts `request` (`{method, params}`) in the task's `inputRequests` under `key` and waits
    /// for its answer from `tasks/update`, which may reach any worker.
    pub(crate) async fn ask(&self, key: &str, request: Value) -> Result<Value, AskError> {
        if let Some(answer) = self.lock_answers().remove(key) {
            return Ok(answer);
        }
        let max = self.engine.config.max_input_requests;
        let mut outcome = Ok(());
        let record = self
            .engine
            .modify(&self.namespace, &self.id, |record, now| {
                if record.status.is_terminal() {
                    outcome = Err(AskError::Cancelled);
                    return false;
                }
                if !record.input_requests.contains_key(key) && record.input_requests.len() >= max {
                    outcome = Err(AskError::Failed(format!(
                        "a task has at most {max} questions pending at once"
                    )));
                    return false;
                }
                outcome = Ok(());
                record
                    .input_requests
                    .insert(key.to_owned(), request.clone());
                record.status = Status::InputRequired;
                record.updated_ms = now;
                true
            })
            .await
            .map_err(|e| AskError::Failed(e.to_string()))?;
        let Some(record) = record else {
            return Err(AskError::Cancelled);
        };
        outcome?;
        self.engine.announce(&self.namespace, &record).await;
        tracing::debug!(task = %self.id, key, "task waits for input");
        loop {
            let notified = self.arrived.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if let Some(answer) = self.lock_answers().remove(key) {
                return Ok(answer);
            }
            if self.cancel.is_cancelled() {
                return Err(AskError::Cancelled);
            }
            tokio::select! {
                () = notified => {}
                () = self.cancel.cancelled() => return Err(AskError::Cancelled),
            }
        }
    }

    /// Reads the task's signals and renews its lease until `done` resolves. A cancel (or a
    /// record that is gone or terminal) cancels the handler.
    async fn watch(&self) {
        let Some(mut cursor) = self
            .cursor
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        else {
            return;
        };
        let topic = task_topic(&self.namespace, &self.id);
        let lease = self.engine.config.lease;
        let renew_every = lease / 3;
        let mut next_renewal = tokio::time::Instant::now() + renew_every;
        loop {
            let wait = next_renewal.saturating_duration_since(tokio::time::Instant::now());
            match self.engine.log.poll(&topic, cursor, wait).await {
                Ok(events) => {
                    for event in events {
                        cursor = event.cursor;
                        match serde_json::from_slice::<Signal>(&event.payload) {
                            Ok(Signal::Answers(answers)) => {
                                self.lock_answers().extend(answers);
                                self.arrived.notify_waiters();
                            }
                            Ok(Signal::Cancel) => self.cancel.cancel(),
                            Err(_) => {}
                        }
                    }
                }
                Err(
                    err @ (mcp_hub::LogError::CursorExpired { .. }
                    | mcp_hub::LogError::UnknownCursor { .. }),
                ) => {
                    // The topic lost its place (retention, a backend that lost its data): go
                    // on from now rather than never hear from it again.
                    tracing::warn!(task = %self.id, %err, "task signals: starting again from now");
                    match self.engine.log.position(&topic).await {
                        Ok(now) => cursor = now,
                        Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                    }
                }
                Err(err) => {
                    tracing::debug!(task = %self.id, %err, "task signals: the hub is away");
                    tokio::time::sleep(
                        wait.clamp(Duration::from_millis(10), Duration::from_millis(200)),
                    )
                    .await;
                }
            }
            if tokio::time::Instant::now() >= next_renewal {
                next_renewal = tokio::time::Instant::now() + renew_every;
                let until = now_ms().saturating_add(millis(lease));
                match self
                    .engine
                    .modify(&self.namespace, &self.id, |record, _| {
                        if record.status.is_terminal() {
                            return false;
                        }
                        record.lease_until_ms = until;
                        true
                    })
                    .await
                {
                    Ok(Some(record)) if !record.status.is_terminal() => {}
                    // Cancelled elsewhere, or expired: stop the handler.
                    Ok(_) => self.cancel.cancel(),
                    Err(err) => tracing::debug!(task = %self.id, %err, "lease not renewed"),
                }
            }
        }
    }

    /// Drives `work` to its end while watching the task's signals, then writes how it ended.
    pub(crate) async fn drive<F>(self: Arc<Self>, work: F)
    where
        F: Future<Output = Ending> + Send,
    {
        let ending = tokio::select! {
            ending = work => ending,
            () = self.watch() => Ending::Cancelled,
        };
        let mut wrote = false;
        let written = self
            .engine
            .modify(&self.namespace, &self.id, |record, now| {
                wrote = !record.status.is_terminal();
                if !wrote {
                    return false;
                }
                match &ending {
                    Ending::Completed(result) => {
                        record.finish(Status::Completed, now);
                        record.result = Some(result.clone());
                    }
                    Ending::Failed(error) => {
                        record.finish(Status::Failed, now);
                        record.error = Some(error.clone());
                    }
                    Ending::Cancelled => record.finish(Status::Cancelled, now),
                }
                true
            })
            .await;
        match written {
            Ok(Some(record)) if wrote => self.engine.announce(&self.namespace, &record).await,
            Ok(_) => {}
            Err(err) => {
                tracing::warn!(task = %self.id, %err, "the end of a task could not be recorded");
            }
        }
        let _ = self
            .engine
            .log
            .delete(&task_topic(&self.namespace, &self.id))
            .await;
        tracing::debug!(task = %self.id, ?ending, "task ended");
        self.slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_798_761_599_999), "2026-12-31T23:59:59.999Z");
    }

    #[test]
    fn settings_are_clamped() {
        let tasks = Tasks::new()
            .ttl(Duration::ZERO)
            .max_live(0)
            .lease(Duration::from_secs(100_000));
        assert_eq!(tasks.ttl_ms(), 1000);
        assert_eq!(tasks.max_live, 1);
        assert_eq!(tasks.lease, Duration::from_secs(600));
    }
}
