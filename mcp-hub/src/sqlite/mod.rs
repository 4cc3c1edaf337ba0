//! The SQLite backend: one file in WAL mode, shared by the hubs and processes of one machine.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use tokio::time::Instant;

use crate::error::BackendErrorKind;
use crate::sql::{self, START, TopicRow, Waiters};
use crate::{
    BackendError, Cursor, Event, EventLog, HubConfig, Key, LogError, Record, StateStore,
    StoreError, Topic,
};

/// Settings of the SQLite backend.
///
/// ```
/// use std::time::Duration;
/// use mcp_hub::SqliteConfig;
///
/// let config = SqliteConfig::new()
///     .busy_timeout(Duration::from_secs(2))
///     .cross_process_poll(Duration::from_millis(20));
/// assert!(config.schema_sql().unwrap().contains("mcp_records"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteConfig {
    hub: HubConfig,
    table_prefix: String,
    busy_timeout: Duration,
    cross_process_poll: Duration,
    sweep_interval: Duration,
}

impl SqliteConfig {
    /// The defaults: [`HubConfig::new`], table prefix `mcp`, busy timeout 5 s, cross-process
    /// checks every 50 ms while a poll waits, a sweep every 60 s.
    pub fn new() -> Self {
        Self {
            hub: HubConfig::new(),
            table_prefix: "mcp".to_owned(),
            busy_timeout: Duration::from_secs(5),
            cross_process_poll: Duration::from_millis(50),
            sweep_interval: Duration::from_secs(60),
        }
    }

    /// Retention and batch size, as for every backend.
    ///
    /// Default is [`HubConfig::new`].
    pub fn hub(mut self, hub: HubConfig) -> Self {
        self.hub = hub;
        self
    }

    /// The first part of every table name (`<prefix>_topics`, `<prefix>_events`,
    /// `<prefix>_records`): 1 to 40 characters of `[a-z0-9_]`, not starting with a digit.
    ///
    /// Default is `"mcp"`.
    pub fn table_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.table_prefix = prefix.into();
        self
    }

    /// How long an operation waits for another process's write to finish before it fails with
    /// a timeout (SQLite's busy timeout). Values below 1 ms count as 1 ms.
    ///
    /// Default is `5 s`.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// While a poll waits, how often the hub checks whether another process wrote to the file
    /// (`PRAGMA data_version`, one cheap query per hub, not per poll). Publishes from this
    /// process, through any hub on the same file, wake waiting polls at once. Values below
    /// 1 ms count as 1 ms.
    ///
    /// Default is `50 ms`.
    pub fn cross_process_poll(mut self, interval: Duration) -> Self {
        self.cross_process_poll = interval.max(Duration::from_millis(1));
        self
    }

    /// How often the hub deletes expired records, events past the age limit and topics idle for
    /// it, in batches of 1000. Safe in every process. Values below 1 s count as 1 s.
    ///
    /// Default is `60 s`.
    pub fn sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = interval.max(Duration::from_secs(1));
        self
    }

    /// The SQL that creates the tables (idempotent), which [`SqliteHub::open`] runs itself.
    pub fn schema_sql(&self) -> Result<String, BackendError> {
        sql::check_prefix(&self.table_prefix)?;
        Ok(schema(&self.table_prefix))
    }
}

impl Default for SqliteConfig {
    fn default() -> Self {
        Self::new()
    }
}

fn schema(p: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {p}_topics (
    topic TEXT PRIMARY KEY,
    generation INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    evicted_seq INTEGER NOT NULL DEFAULT 0,
    active_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}_topics_active ON {p}_topics (active_at);
CREATE TABLE IF NOT EXISTS {p}_events (
    topic TEXT NOT NULL,
    seq INTEGER NOT NULL,
    payload BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (topic, seq)
);
CREATE INDEX IF NOT EXISTS {p}_events_created ON {p}_events (created_at);
CREATE TABLE IF NOT EXISTS {p}_records (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL,
    version INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}_records_expires ON {p}_records (expires_at);
"
    )
}

/// The hub of the workers of one machine: an [`EventLog`] and a [`StateStore`] in one SQLite
/// file, which survives restarts.
///
/// - **Storage.** The same tables as the PostgreSQL backend (`<prefix>_topics`,
///   `<prefix>_events`, `<prefix>_records`), in WAL mode with `synchronous=NORMAL`: a crash of
///   the process loses nothing committed; a power loss may lose the last transactions. Each
///   write is one `BEGIN IMMEDIATE` transaction, so sequence numbers are assigned in commit
///   order. Cursors are `<generation>-<seq>` as on PostgreSQL.
/// - **Threads.** Each hub holds one connection, owned by a thread of its own that runs the
///   hub's operations one at a time, in the order they were asked, never on the async threads.
///   A caller holds no lock while it waits for its answer, so a caller whose future is not
///   polled for a while (a stream its consumer is not reading) never holds up the others.
///   Another process holding the write lock makes an operation wait up to
///   [`busy_timeout`](SqliteConfig::busy_timeout), then fail with a timeout.
/// - **Waiting.** Every hub of the process opened on the same file shares one registry of
///   waiting polls, woken by the publish itself. Writes by other processes are noticed by one
///   check of `PRAGMA data_version` per hub every
///   [`cross_process_poll`](SqliteConfig::cross_process_poll), and only while a poll waits.
/// - **Records** expire by the machine's wall clock, shared by every process on it.
/// - **Retention.** Count on publish; age, expired records and idle topics by a sweep every
///   [`sweep_interval`](SqliteConfig::sweep_interval).
///
/// Cloning is cheap and shares the connection. Needs a Tokio runtime.
#[derive(Clone)]
pub struct SqliteHub {
    inner: Arc<Inner>,
}

struct Inner {
    /// The queue of the connection's thread; the thread ends when the hub is dropped.
    jobs: std::sync::mpsc::Sender<Job>,
    waiters: Arc<Waiters>,
    config: SqliteConfig,
    path: PathBuf,
}

/// One operation for the connection's thread; it sends its own answer.
type Job = Box<dyn FnOnce(&mut Connection, &Statements) + Send>;

/// The connection's thread: opens the file, reports how that went, then runs the queued
/// operations until every hub holding the queue is gone.
fn connection_thread(
    path: PathBuf,
    config: &SqliteConfig,
    opened: tokio::sync::oneshot::Sender<Result<(), BackendError>>,
    jobs: std::sync::mpsc::Receiver<Job>,
) {
    let schema = schema(&config.table_prefix);
    let connection = (|| {
        let connection = Connection::open(&path).map_err(|e| classify("opening", e))?;
        connection
            .busy_timeout(config.busy_timeout)
            .map_err(|e| classify("opening", e))?;
        connection
            .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
            .map_err(|e| classify("switching to WAL", e))?;
        connection
            .execute_batch(&format!("BEGIN IMMEDIATE; {schema} COMMIT;"))
            .map_err(|e| classify("creating tables", e))?;
        Ok::<_, BackendError>(connection)
    })();
    let mut connection = match connection {
        Ok(connection) => {
            if opened.send(Ok(())).is_err() {
                return;
            }
            connection
        }
        Err(err) => {
            let _ = opened.send(Err(err));
            return;
        }
    };
    let sql = Statements::new(&config.table_prefix);
    while let Ok(job) = jobs.recv() {
        // A panicking operation answers nobody (its caller sees the thread's answer dropped)
        // and leaves the connection to the next one.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            job(&mut connection, &sql);
        }));
    }
}

struct Statements {
    create_topic: String,
    bump: String,
    insert_event: String,
    trim: String,
    topic: String,
    events: String,
    delete_topic: String,
    delete_events: String,
    create: String,
    get: String,
    save: String,
    version: String,
    touch: String,
    delete: String,
    sweep: [String; 5],
}

impl Statements {
    fn new(p: &str) -> Self {
        Self {
            create_topic: format!(
                "INSERT INTO {p}_topics (topic, generation, last_seq, evicted_seq, active_at)
                 VALUES (?1, ?2, 0, 0, ?3) ON CONFLICT (topic) DO NOTHING"
            ),
            bump: format!(
                "UPDATE {p}_topics SET last_seq = last_seq + 1,
                     evicted_seq = max(evicted_seq, last_seq + 1 - ?2), active_at = ?3
                 WHERE topic = ?1 RETURNING generation, last_seq, evicted_seq"
            ),
            insert_event: format!(
                "INSERT INTO {p}_events (topic, seq, payload, created_at) VALUES (?1, ?2, ?3, ?4)"
            ),
            trim: format!("DELETE FROM {p}_events WHERE topic = ?1 AND seq <= ?2"),
            topic: format!(
                "SELECT generation, last_seq, evicted_seq FROM {p}_topics WHERE topic = ?1"
            ),
            events: format!(
                "SELECT seq, payload FROM {p}_events WHERE topic = ?1 AND seq > ?2
                 ORDER BY seq LIMIT ?3"
            ),
            delete_topic: format!("DELETE FROM {p}_topics WHERE topic = ?1"),
            delete_events: format!("DELETE FROM {p}_events WHERE topic = ?1"),
            create: format!(
                "INSERT INTO {p}_records (key, value, version, expires_at) VALUES (?1, ?2, 1, ?3)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = 1,
                     expires_at = excluded.expires_at
                 WHERE {p}_records.expires_at <= ?4
                 RETURNING version"
            ),
            get: format!(
                "SELECT value, version FROM {p}_records WHERE key = ?1 AND expires_at > ?2"
            ),
            save: format!(
                "UPDATE {p}_records SET value = ?2, version = version + 1, expires_at = ?3
                 WHERE key = ?1 AND version = ?4 AND expires_at > ?5 RETURNING version"
            ),
            version: format!("SELECT version FROM {p}_records WHERE key = ?1 AND expires_at > ?2"),
            touch: format!(
                "UPDATE {p}_records SET expires_at = ?2 WHERE key = ?1 AND expires_at > ?3"
            ),
            delete: format!("DELETE FROM {p}_records WHERE key = ?1 RETURNING expires_at > ?2"),
            sweep: [
                // ?1: now. Expired records.
                format!(
                    "DELETE FROM {p}_records WHERE key IN (
                         SELECT key FROM {p}_records WHERE expires_at <= ?1 LIMIT 1000)"
                ),
                // ?1: the age cutoff from here on. The events of idle topics, then the topics.
                format!(
                    "DELETE FROM {p}_events WHERE topic IN (
                         SELECT topic FROM {p}_topics WHERE active_at < ?1 LIMIT 1000)"
                ),
                format!(
                    "DELETE FROM {p}_topics WHERE topic IN (
                         SELECT topic FROM {p}_topics WHERE active_at < ?1 LIMIT 1000)"
                ),
                // Age retention within live topics: raise evicted_seq...
                format!(
                    "UPDATE {p}_topics SET evicted_seq = max(evicted_seq, (
                         SELECT max(seq) FROM {p}_events e
                         WHERE e.topic = {p}_topics.topic AND e.created_at < ?1))
                     WHERE topic IN (SELECT DISTINCT topic FROM {p}_events
                                     WHERE created_at < ?1 LIMIT 1000)"
                ),
                // ...then drop the events it now excludes.
                format!(
                    "DELETE FROM {p}_events WHERE rowid IN (
                         SELECT e.rowid FROM {p}_events e JOIN {p}_topics t
                         ON e.topic = t.topic WHERE e.seq <= t.evicted_seq AND e.created_at < ?1
                         LIMIT 1000)"
                ),
            ],
        }
    }
}

/// The waiting-poll registries of the files this process opened, so hubs on one file wake each
/// other directly.
fn registry(path: &Path) -> Arc<Waiters> {
    static FILES: Mutex<Option<HashMap<PathBuf, Weak<Waiters>>>> = Mutex::new(None);
    let mut files = FILES.lock().unwrap_or_else(PoisonError::into_inner);
    let files = files.get_or_insert_with(HashMap::new);
    files.retain(|_, waiters| waiters.strong_count() > 0);
    if let Some(waiters) = files.get(path).and_then(Weak::upgrade) {
        return waiters;
    }
    let waiters = Arc::new(Waiters::default());
    files.insert(path.to_owned(), Arc::downgrade(&waiters));
    waiters
}

impl SqliteHub {
    /// Opens (or creates) the database file at `path`, switches it to WAL mode, creates the
    /// tables if missing, and starts the task that notices other processes' writes and sweeps.
    pub async fn open(path: impl AsRef<Path>, config: SqliteConfig) -> Result<Self, BackendError> {
        sql::check_prefix(&config.table_prefix)?;
        let path = path.as_ref().to_owned();
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let (opened, open_result) = tokio::sync::oneshot::channel();
        let thread_path = path.clone();
        let thread_config = config.clone();
        std::thread::Builder::new()
            .name("mcp-hub-sqlite".to_owned())
            .spawn(move || connection_thread(thread_path, &thread_config, opened, queue))
            .map_err(|e| {
                BackendError::with_source(
                    BackendErrorKind::Unexpected,
                    "could not start the SQLite connection's thread",
                    e,
                )
            })?;
        open_result.await.map_err(|_| gone())??;
        let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        let inner = Arc::new(Inner {
            jobs,
            waiters: registry(&canonical),
            config,
            path,
        });
        tokio::spawn(watch(Arc::downgrade(&inner)));
        Ok(Self { inner })
    }

    /// Runs one sweep now (see [`SqliteConfig::sweep_interval`]); returns how many rows it
    /// deleted or updated.
    pub async fn sweep(&self) -> Result<u64, BackendError> {
        self.inner.sweep().await
    }
}

impl fmt::Debug for SqliteHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteHub")
            .field("path", &self.inner.path)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// Wakes waiting polls when another connection wrote to the file, and sweeps when due; ends
/// with the hub.
async fn watch(hub: Weak<Inner>) {
    let (every, sweep_every) = match hub.upgrade() {
        Some(inner) => (inner.config.cross_process_poll, inner.config.sweep_interval),
        None => return,
    };
    let mut seen: Option<i64> = None;
    let mut next_sweep = Instant::now() + sweep_every;
    loop {
        tokio::time::sleep(every).await;
        let Some(inner) = hub.upgrade() else { return };
        if Instant::now() >= next_sweep {
            // A failed sweep is tried again at the next interval.
            let _ = inner.sweep().await;
            next_sweep = Instant::now() + sweep_every;
        }
        if inner.waiters.is_empty() {
            seen = None;
            continue;
        }
        let version = inner
            .run(|conn, _| {
                conn.query_row("PRAGMA data_version", [], |row| row.get::<_, i64>(0))
                    .map_err(|e| classify("checking for writes", e))
            })
            .await;
        if let Ok(version) = version {
            // On the first check since polls began waiting, a write may have slipped in between
            // their read and this check: they read once more.
            if seen != Some(version) {
                inner.waiters.wake_all();
            }
            seen = Some(version);
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

impl Inner {
    /// Runs `job` on the connection's thread, after the operations queued before. Waiting
    /// holds nothing: a caller that stops polling delays only itself.
    async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Connection, &Statements) -> Result<T, BackendError> + Send + 'static,
    ) -> Result<T, BackendError> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |connection, sql| {
            let _ = answer.send(job(connection, sql));
        });
        self.jobs.send(job).map_err(|_| gone())?;
        answered.await.map_err(|_| gone())?
    }

    async fn append(
        &self,
        topic: &Topic,
        message: Bytes,
        create: bool,
    ) -> Result<Option<Cursor>, LogError> {
        let name = topic.as_str().to_owned();
        let max_events = i64::try_from(self.config.hub.retention.max_events).unwrap_or(i64::MAX);
        let cursor = self
            .run(move |conn, sql| {
                let what = "publishing";
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(|e| classify(what, e))?;
                let now = now_ms();
                if create {
                    tx.prepare_cached(&sql.create_topic)
                        .and_then(|mut s| s.execute(params![name, sql::new_generation(), now]))
                        .map_err(|e| classify(what, e))?;
                }
                let bumped = tx
                    .prepare_cached(&sql.bump)
                    .and_then(|mut s| {
                        s.query_row(params![name, max_events, now], |row| {
                            Ok(TopicRow {
                                generation: row.get(0)?,
                                last_seq: row.get(1)?,
                                evicted_seq: row.get(2)?,
                            })
                        })
                        .optional()
                    })
                    .map_err(|e| classify(what, e))?;
                let Some(row) = bumped else {
                    return Ok(None);
                };
                tx.prepare_cached(&sql.insert_event)
                    .and_then(|mut s| s.execute(params![name, row.last_seq, &message[..], now]))
                    .map_err(|e| classify(what, e))?;
                tx.prepare_cached(&sql.trim)
                    .and_then(|mut s| s.execute(params![name, row.evicted_seq]))
                    .map_err(|e| classify(what, e))?;
                tx.commit().map_err(|e| classify(what, e))?;
                sql::cursor(row.generation, row.last_seq).map(Some)
            })
            .await?;
        if cursor.is_some() {
            self.waiters.wake(topic.as_str());
        }
        Ok(cursor)
    }

    async fn position(&self, topic: &Topic) -> Result<Cursor, LogError> {
        let name = topic.as_str().to_owned();
        Ok(self
            .run(move |conn, sql| {
                let row = conn
                    .prepare_cached(&sql.topic)
                    .and_then(|mut s| {
                        s.query_row(params![name], |row| Ok((row.get(0)?, row.get(1)?)))
                            .optional()
                    })
                    .map_err(|e| classify("reading the position", e))?;
                match row {
                    None => Ok(START),
                    Some((generation, last)) => sql::cursor(generation, last),
                }
            })
            .await?)
    }

    async fn read(&self, topic: &Topic, after: Cursor) -> Result<Vec<Event>, LogError> {
        let name = topic.as_str().to_owned();
        let max_batch = i64::try_from(self.config.hub.max_batch).unwrap_or(i64::MAX);
        self.run(move |conn, sql| {
            let what = "reading a topic";
            let tx = conn.transaction().map_err(|e| classify(what, e))?;
            let head = tx
                .prepare_cached(&sql.topic)
                .and_then(|mut s| {
                    s.query_row(params![name], |row| {
                        Ok(TopicRow {
                            generation: row.get(0)?,
                            last_seq: row.get(1)?,
                            evicted_seq: row.get(2)?,
                        })
                    })
                    .optional()
                })
                .map_err(|e| classify(what, e))?;
            let from = match sql::read_from(after, head) {
                Ok(from) => from,
                Err(err) => return Ok(Err(err)),
            };
            let Some(head) = head else {
                return Ok(Ok(Vec::new()));
            };
            let mut statement = tx
                .prepare_cached(&sql.events)
                .map_err(|e| classify(what, e))?;
            let rows = statement
                .query_map(params![name, from, max_batch], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, Vec<u8>>(1)?))
                })
                .map_err(|e| classify(what, e))?;
            let mut events = Vec::new();
            for row in rows {
                let (seq, payload) = row.map_err(|e| classify(what, e))?;
                events.push(Event {
                    cursor: sql::cursor(head.generation, seq)?,
                    payload: Bytes::from(payload),
                });
            }
            Ok(Ok(events))
        })
        .await?
    }

    async fn poll(
        &self,
        topic: &Topic,
        after: Cursor,
        timeout: Duration,
    ) -> Result<Vec<Event>, LogError> {
        if timeout.is_zero() {
            return self.read(topic, after).await;
        }
        let deadline = Instant::now().checked_add(timeout);
        let watching = self.waiters.watch(topic.as_str());
        loop {
            let mut notified = pin!(watching.notify().notified());
            notified.as_mut().enable();
            let events = self.read(topic, after).await?;
            if !events.is_empty() {
                return Ok(events);
            }
            match deadline {
                Some(deadline) => {
                    if Instant::now() >= deadline
                        || tokio::time::timeout_at(deadline, notified).await.is_err()
                    {
                        return Ok(Vec::new());
                    }
                }
                None => notified.await,
            }
        }
    }

    async fn delete_topic(&self, topic: &Topic) -> Result<(), LogError> {
        let name = topic.as_str().to_owned();
        self.run(move |conn, sql| {
            let what = "deleting a topic";
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| classify(what, e))?;
            tx.execute(&sql.delete_topic, params![name])
                .and_then(|_| tx.execute(&sql.delete_events, params![name]))
                .map_err(|e| classify(what, e))?;
            tx.commit().map_err(|e| classify(what, e))
        })
        .await?;
        self.waiters.wake(topic.as_str());
        Ok(())
    }

    async fn create(&self, key: &Key, value: Bytes, ttl: Duration) -> Result<u64, StoreError> {
        let name = key.as_str().to_owned();
        let ttl = sql::millis(ttl);
        let created = self
            .run(move |conn, sql| {
                let now = now_ms();
                conn.prepare_cached(&sql.create)
                    .and_then(|mut s| {
                        s.query_row(
                            params![name, &value[..], now.saturating_add(ttl), now],
                            |row| row.get::<_, i64>(0),
                        )
                        .optional()
                    })
                    .map_err(|e| classify("creating a record", e))
            })
            .await?;
        match created {
            Some(_) => Ok(1),
            None => Err(StoreError::AlreadyExists),
        }
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let name = key.as_str().to_owned();
        let row = self
            .run(move |conn, sql| {
                conn.prepare_cached(&sql.get)
                    .and_then(|mut s| {
                        s.query_row(params![name, now_ms()], |row| {
                            Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, i64>(1)?))
                        })
                        .optional()
                    })
                    .map_err(|e| classify("reading a record", e))
            })
            .await?;
        match row {
            None => Ok(None),
            Some((value, version)) => Ok(Some(Record {
                value: Bytes::from(value),
                version: to_version(version)?,
            })),
        }
    }

    async fn save(
        &self,
        key: &Key,
        value: Bytes,
        expected: u64,
        ttl: Duration,
    ) -> Result<u64, StoreError> {
        let name = key.as_str().to_owned();
        let ttl = sql::millis(ttl);
        // No record reaches a version beyond i64: it can only conflict.
        let expected_i = i64::try_from(expected).unwrap_or(-1);
        let (saved, current) = self
            .run(move |conn, sql| {
                let what = "saving a record";
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(|e| classify(what, e))?;
                let now = now_ms();
                let saved = tx
                    .prepare_cached(&sql.save)
                    .and_then(|mut s| {
                        s.query_row(
                            params![name, &value[..], now.saturating_add(ttl), expected_i, now],
                            |row| row.get::<_, i64>(0),
                        )
                        .optional()
                    })
                    .map_err(|e| classify(what, e))?;
                let current = if saved.is_some() {
                    None
                } else {
                    tx.prepare_cached(&sql.version)
                        .and_then(|mut s| {
                            s.query_row(params![name, now], |row| row.get::<_, i64>(0))
                                .optional()
                        })
                        .map_err(|e| classify(what, e))?
                };
                tx.commit().map_err(|e| classify(what, e))?;
                Ok((saved, current))
            })
            .await?;
        match (saved, current) {
            (Some(version), _) => Ok(to_version(version)?),
            (None, None) => Err(StoreError::NotFound),
            (None, Some(actual)) => Err(StoreError::VersionConflict {
                expected,
                actual: to_version(actual)?,
            }),
        }
    }

    async fn touch(&self, key: &Key, ttl: Duration) -> Result<(), StoreError> {
        let name = key.as_str().to_owned();
        let ttl = sql::millis(ttl);
        let renewed = self
            .run(move |conn, sql| {
                let now = now_ms();
                conn.prepare_cached(&sql.touch)
                    .and_then(|mut s| s.execute(params![name, now.saturating_add(ttl), now]))
                    .map_err(|e| classify("renewing a record", e))
            })
            .await?;
        if renewed > 0 {
            Ok(())
        } else {
            Err(StoreError::NotFound)
        }
    }

    async fn delete_record(&self, key: &Key) -> Result<bool, StoreError> {
        let name = key.as_str().to_owned();
        let live = self
            .run(move |conn, sql| {
                conn.prepare_cached(&sql.delete)
                    .and_then(|mut s| {
                        s.query_row(params![name, now_ms()], |row| row.get::<_, bool>(0))
                            .optional()
                    })
                    .map_err(|e| classify("deleting a record", e))
            })
            .await?;
        Ok(live.unwrap_or(false))
    }

    async fn sweep(&self) -> Result<u64, BackendError> {
        let max_age = self.config.hub.retention.max_age.map(sql::millis);
        self.run(move |conn, sql| {
            let what = "sweeping";
            let mut total = 0u64;
            for (index, statement) in sql.sweep.iter().enumerate() {
                if index > 0 && max_age.is_none() {
                    break;
                }
                loop {
                    let now = now_ms();
                    let bound = if index == 0 {
                        now
                    } else {
                        now.saturating_sub(max_age.unwrap_or(0))
                    };
                    let tx = conn
                        .transaction_with_behavior(TransactionBehavior::Immediate)
                        .map_err(|e| classify(what, e))?;
                    let count = tx
                        .execute(statement, params![bound])
                        .map_err(|e| classify(what, e))?;
                    tx.commit().map_err(|e| classify(what, e))?;
                    total += u64::try_from(count).unwrap_or(0);
                    if count < 1000 {
                        break;
                    }
                }
            }
            Ok(total)
        })
        .await
    }
}

fn to_version(raw: i64) -> Result<u64, BackendError> {
    u64::try_from(raw).map_err(|_| BackendError::unexpected("a record has a negative version"))
}

/// The connection's thread did not answer (it stopped, or the operation panicked).
fn gone() -> BackendError {
    BackendError::unexpected("a SQLite operation did not complete")
}

/// Classifies a driver error: a busy or locked database (another process held the write lock
/// past the busy timeout) is a timeout; a file that cannot be opened a connection failure.
fn classify(what: &str, err: rusqlite::Error) -> BackendError {
    use rusqlite::ErrorCode;
    let kind = match err.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => BackendErrorKind::Timeout,
        Some(ErrorCode::CannotOpen | ErrorCode::NotADatabase | ErrorCode::SystemIoFailure) => {
            BackendErrorKind::Connection
        }
        _ => BackendErrorKind::Unexpected,
    };
    BackendError::with_source(kind, format!("{what}: {err}"), err)
}

impl EventLog for SqliteHub {
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Cursor, LogError>> {
        Box::pin(async move {
            self.inner
                .append(topic, message, true)
                .await?
                .ok_or_else(|| {
                    LogError::Backend(BackendError::unexpected("a publish found no topic row"))
                })
        })
    }

    fn publish_existing<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Option<Cursor>, LogError>> {
        Box::pin(self.inner.append(topic, message, false))
    }

    fn position<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<Cursor, LogError>> {
        Box::pin(self.inner.position(topic))
    }

    fn poll<'a>(
        &'a self,
        topic: &'a Topic,
        after: Cursor,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Vec<Event>, LogError>> {
        Box::pin(self.inner.poll(topic, after, timeout))
    }

    fn delete<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<(), LogError>> {
        Box::pin(self.inner.delete_topic(topic))
    }
}

impl StateStore for SqliteHub {
    fn create<'a>(
        &'a self,
        key: &'a Key,
        value: Bytes,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(self.inner.create(key, value, ttl))
    }

    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
        Box::pin(self.inner.get(key))
    }

    fn save<'a>(
        &'a self,
        key: &'a Key,
        value: Bytes,
        expected_version: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(self.inner.save(key, value, expected_version, ttl))
    }

    fn touch<'a>(&'a self, key: &'a Key, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.inner.touch(key, ttl))
    }

    fn delete<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.inner.delete_record(key))
    }
}
