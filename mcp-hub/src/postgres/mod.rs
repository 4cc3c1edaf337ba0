//! The PostgreSQL backend: a topic row and numbered event rows per topic, LISTEN/NOTIFY
//! wake-ups on one connection per hub, compare-and-set records with TTLs on the database clock.

mod listen;
mod pool;

use std::fmt;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use self::pool::{Pool, bounded};
use crate::error::BackendErrorKind;
use crate::sql::{self, START, TopicRow, Waiters};
use crate::{
    BackendError, Cursor, Event, EventLog, HubConfig, Key, LogError, Record, StateStore,
    StoreError, Topic,
};

/// Settings of the PostgreSQL backend. Every resource it uses is bounded here.
///
/// ```
/// use std::time::Duration;
/// use mcp_hub::PostgresConfig;
///
/// let config = PostgresConfig::new()
///     .table_prefix("mcp_prod")
///     .pool_size(32)
///     .command_timeout(Duration::from_secs(1));
/// // What a DBA applies when the workers may not create tables themselves:
/// assert!(config.schema_sql().unwrap().contains("CREATE TABLE IF NOT EXISTS mcp_prod_events"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresConfig {
    hub: HubConfig,
    table_prefix: String,
    pool_size: usize,
    command_timeout: Duration,
    create_tables: bool,
    sweep_interval: Duration,
    fallback_poll: Duration,
}

impl PostgresConfig {
    /// The defaults: [`HubConfig::new`], table prefix `mcp`, 16 connections, command timeout
    /// 2 s, tables created on connect, a sweep every 60 s, fallback polling every 1 s.
    pub fn new() -> Self {
        Self {
            hub: HubConfig::new(),
            table_prefix: "mcp".to_owned(),
            pool_size: 16,
            command_timeout: Duration::from_secs(2),
            create_tables: true,
            sweep_interval: Duration::from_secs(60),
            fallback_poll: Duration::from_secs(1),
        }
    }

    /// Retention and batch size, as for every backend.
    ///
    /// Default is [`HubConfig::new`].
    pub fn hub(mut self, hub: HubConfig) -> Self {
        self.hub = hub;
        self
    }

    /// The first part of every table name: `<prefix>_topics`, `<prefix>_events`,
    /// `<prefix>_records`; also the notification channel `<prefix>_events`. 1 to 40 characters
    /// of `[a-z0-9_]`, not starting with a digit (checked on connect). Deployments sharing one
    /// database keep apart by choosing different prefixes; every worker of one deployment must
    /// use the same.
    ///
    /// Default is `"mcp"`.
    pub fn table_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.table_prefix = prefix.into();
        self
    }

    /// The most connections the hub opens for commands; the listener connection comes on top.
    /// An operation waits for a free connection within its command timeout. Values below 1
    /// count as 1.
    ///
    /// Default is `16`.
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// How long one operation may take, waiting for a pooled connection and connecting
    /// included, before it fails with a timeout. It also bounds how far a
    /// [`poll`](EventLog::poll) can overrun its own timeout while the database does not answer.
    /// Values below 1 ms count as 1 ms.
    ///
    /// Default is `2 s`.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Whether [`PostgresHub::connect`] creates the tables (`CREATE TABLE IF NOT EXISTS`, under
    /// an advisory lock so workers starting together do not collide). Turn it off when the
    /// database role may not create tables, and apply [`schema_sql`](Self::schema_sql) once.
    ///
    /// Default is `true`.
    pub fn create_tables(mut self, create: bool) -> Self {
        self.create_tables = create;
        self
    }

    /// How often each hub deletes expired records, events past the age limit and topics idle
    /// for the age limit. Every worker may run it: a sweep that finds another under way skips
    /// its turn. Each statement deletes at most 1000 rows, repeated until nothing is left.
    /// Values below 1 s count as 1 s.
    ///
    /// Default is `60 s`.
    pub fn sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = interval.max(Duration::from_secs(1));
        self
    }

    /// How often a waiting poll reads its topic again while the listener connection is down
    /// (so notifications may be lost). While it is up, nothing polls on a timer. Values below
    /// 10 ms count as 10 ms.
    ///
    /// Default is `1 s`.
    pub fn fallback_poll(mut self, interval: Duration) -> Self {
        self.fallback_poll = interval.max(Duration::from_millis(10));
        self
    }

    /// The SQL that creates the hub's tables under this prefix (idempotent: `IF NOT EXISTS`),
    /// for a DBA to apply when [`create_tables`](Self::create_tables) is off. Fails when the
    /// prefix is not a plain identifier.
    pub fn schema_sql(&self) -> Result<String, BackendError> {
        sql::check_prefix(&self.table_prefix)?;
        Ok(schema(&self.table_prefix))
    }
}

impl Default for PostgresConfig {
    fn default() -> Self {
        Self::new()
    }
}

fn schema(p: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {p}_topics (
    topic TEXT PRIMARY KEY,
    generation BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    evicted_seq BIGINT NOT NULL DEFAULT 0,
    active_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS {p}_topics_active ON {p}_topics (active_at);
CREATE TABLE IF NOT EXISTS {p}_events (
    topic TEXT NOT NULL,
    seq BIGINT NOT NULL,
    payload BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, seq)
);
CREATE INDEX IF NOT EXISTS {p}_events_created ON {p}_events (created_at);
CREATE TABLE IF NOT EXISTS {p}_records (
    key TEXT PRIMARY KEY,
    value BYTEA NOT NULL,
    version BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS {p}_records_expires ON {p}_records (expires_at);
"
    )
}

/// The statements, by number (the index into [`Statements::sql`]).
#[derive(Clone, Copy)]
enum Stmt {
    Publish,
    PublishExisting,
    Position,
    Poll,
    DeleteTopic,
    Create,
    Get,
    Save,
    Version,
    Touch,
    Delete,
}

const STATEMENTS: usize = 11;

struct Statements {
    sql: [String; STATEMENTS],
}

impl Statements {
    fn new(p: &str) -> Self {
        // $1 topic, $2 payload, $3 max events, $4 channel; for Publish also $5 generation.
        let append = |head: String| {
            format!(
                "WITH t AS ({head} RETURNING generation, last_seq, evicted_seq),
                 ins AS (INSERT INTO {p}_events (topic, seq, payload) SELECT $1, last_seq, $2 FROM t),
                 del AS (DELETE FROM {p}_events WHERE topic = $1 AND seq <= (SELECT evicted_seq FROM t))
                 SELECT generation, last_seq, pg_notify($4, $6) IS NULL FROM t"
            )
        };
        let publish = append(format!(
            "INSERT INTO {p}_topics AS x (topic, generation, last_seq, evicted_seq, active_at)
             VALUES ($1, $5, 1, 0, now())
             ON CONFLICT (topic) DO UPDATE SET last_seq = x.last_seq + 1,
                 evicted_seq = GREATEST(x.evicted_seq, x.last_seq + 1 - $3), active_at = now()"
        ));
        let publish_existing = append(format!(
            "UPDATE {p}_topics SET last_seq = last_seq + 1,
                 evicted_seq = GREATEST(evicted_seq, last_seq + 1 - $3), active_at = now()
             WHERE topic = $1 AND $5::bigint IS NULL"
        ));
        let ttl = "now() + $3::bigint * interval '1 millisecond'";
        Self {
            sql: [
                publish,
                publish_existing,
                format!("SELECT generation, last_seq FROM {p}_topics WHERE topic = $1"),
                format!(
                    "SELECT t.generation, t.last_seq, t.evicted_seq, e.seq, e.payload
                     FROM {p}_topics t LEFT JOIN LATERAL (
                         SELECT seq, payload FROM {p}_events
                         WHERE topic = t.topic AND seq > $2 ORDER BY seq LIMIT $3
                     ) e ON true
                     WHERE t.topic = $1 ORDER BY e.seq"
                ),
                format!(
                    "WITH t AS (DELETE FROM {p}_topics WHERE topic = $1),
                     e AS (DELETE FROM {p}_events WHERE topic = $1)
                     SELECT pg_notify($2, $3) IS NULL"
                ),
                format!(
                    "INSERT INTO {p}_records AS r (key, value, version, expires_at)
                     VALUES ($1, $2, 1, {ttl})
                     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, version = 1,
                         expires_at = EXCLUDED.expires_at
                     WHERE r.expires_at <= now()
                     RETURNING version"
                ),
                format!(
                    "SELECT value, version FROM {p}_records WHERE key = $1 AND expires_at > now()"
                ),
                format!(
                    "UPDATE {p}_records SET value = $2, version = version + 1, expires_at = {ttl}
                     WHERE key = $1 AND version = $4 AND expires_at > now()
                     RETURNING version"
                ),
                format!("SELECT version FROM {p}_records WHERE key = $1 AND expires_at > now()"),
                format!(
                    "UPDATE {p}_records SET expires_at = now() + $2::bigint * interval '1 millisecond'
                     WHERE key = $1 AND expires_at > now()"
                ),
                format!("DELETE FROM {p}_records WHERE key = $1 RETURNING expires_at > now()"),
            ],
        }
    }
}

/// The hub of workers that share a PostgreSQL database: an [`EventLog`] and a [`StateStore`].
///
/// - **Topics** are a row in `<prefix>_topics` (a random generation, the last sequence number
///   issued, the last one dropped by retention) and their events rows of `<prefix>_events`
///   numbered 1, 2, 3… A publish is one statement: an upsert of the topic row, which takes its
///   row lock until commit, so the numbers are assigned in commit order (commit order equals
///   cursor order), the insert of the event, and count retention. Cursors are
///   `<generation>-<seq>`; `0-0` starts every topic. A deleted and re-created topic has a new
///   generation, so old cursors into it are [`UnknownCursor`](LogError::UnknownCursor).
/// - **Waiting.** Each publish sends `NOTIFY <prefix>_events` with the topic name (delivered on
///   commit). One listener connection per hub receives them and wakes the polls waiting on that
///   topic; a publish also wakes this hub's own waiters directly. While the listener is down,
///   waiting polls read their topic every [`fallback_poll`](PostgresConfig::fallback_poll);
///   when it is back, every waiting poll reads once more, so nothing lost in between is missed.
/// - **Records** are rows of `<prefix>_records` with a version and an expiry computed by the
///   database clock (`now()`): `create` is an upsert that only replaces an expired row, `save`
///   an `UPDATE … WHERE version = $expected`, both atomic in one statement.
/// - **Retention.** Count retention on every publish; age retention, expired records and
///   topics idle for the age limit by a sweep every
///   [`sweep_interval`](PostgresConfig::sweep_interval), run by whichever worker takes the
///   advisory lock first (the others skip), in bounded batches. Between sweeps an event past
///   its age may still be read.
/// - **Connection loss.** Operations fail with [`BackendError`] (connection or timeout) and
///   are bounded by [`command_timeout`](PostgresConfig::command_timeout); the pool replaces
///   broken connections and the listener reconnects with backoff; the same hub works again
///   once the database is back.
///
/// Cloning is cheap and shares the connections. Needs a Tokio runtime.
#[derive(Clone)]
pub struct PostgresHub {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    statements: Statements,
    channel: String,
    waiters: Arc<Waiters>,
    listening: Arc<std::sync::atomic::AtomicBool>,
    config: PostgresConfig,
    /// Dropped with the hub: stops the listener and sweeper tasks.
    _stop: oneshot::Sender<()>,
}

impl PostgresHub {
    /// Connects to the database at `url` (`postgres://user@host:port/db`, or a
    /// `key=value` string; see `tokio_postgres::Config`), creates the tables when allowed, and
    /// starts the listener and sweeper tasks. Fails if the database cannot be reached within
    /// the command timeout (4 times it, when creating tables).
    pub async fn connect(url: &str, config: PostgresConfig) -> Result<Self, BackendError> {
        sql::check_prefix(&config.table_prefix)?;
        let mut pg: tokio_postgres::Config = url.parse().map_err(|err| {
            BackendError::with_source(BackendErrorKind::Connection, "invalid PostgreSQL URL", err)
        })?;
        pg.connect_timeout(config.command_timeout)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30));
        let pool = Pool::new(pg.clone(), config.pool_size);
        if config.create_tables {
            let schema = schema(&config.table_prefix);
            let lock = advisory_key(&config.table_prefix, "schema");
            bounded(config.command_timeout * 4, "creating tables", async {
                let mut lease = pool.get().await?;
                let client = lease.client_mut()?;
                let tx = client
                    .transaction()
                    .await
                    .map_err(|e| classify("creating tables", e))?;
                tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock])
                    .await
                    .map_err(|e| classify("creating tables", e))?;
                tx.batch_execute(&schema)
                    .await
                    .map_err(|e| classify("creating tables", e))?;
                tx.commit()
                    .await
                    .map_err(|e| classify("creating tables", e))?;
                lease.healthy();
                Ok(())
            })
            .await?;
        } else {
            bounded(config.command_timeout, "connecting", async {
                let mut lease = pool.get().await?;
                lease
                    .client_mut()?
                    .simple_query("SELECT 1")
                    .await
                    .map_err(|e| classify("connecting", e))?;
                lease.healthy();
                Ok(())
            })
            .await?;
        }
        let (stop, stopped) = oneshot::channel();
        let waiters = Arc::new(Waiters::default());
        let listening = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let channel = format!("{}_events", config.table_prefix);
        let inner = Arc::new(Inner {
            pool,
            statements: Statements::new(&config.table_prefix),
            channel: channel.clone(),
            waiters: Arc::clone(&waiters),
            listening: Arc::clone(&listening),
            config: config.clone(),
            _stop: stop,
        });
        let listener = listen::Listener {
            config: pg,
            channel,
            waiters,
            listening,
            timeout: config.command_timeout,
        };
        let sweeper = Arc::downgrade(&inner);
        tokio::spawn(listen::run(listener, sweeper, stopped));
        Ok(Self { inner })
    }

    /// Runs one sweep now: deletes expired records, events past the age limit and topics idle
    /// for it. Returns how many rows were deleted, or 0 when another worker's sweep holds the
    /// lock. The hub also sweeps by itself every
    /// [`sweep_interval`](PostgresConfig::sweep_interval).
    pub async fn sweep(&self) -> Result<u64, BackendError> {
        self.inner.sweep().await
    }
}

impl fmt::Debug for PostgresHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresHub")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// A stable 64-bit key for `pg_advisory_*lock`: FNV-1a of the prefix and purpose.
fn advisory_key(prefix: &str, purpose: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in prefix.bytes().chain([0]).chain(purpose.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(hash.to_ne_bytes())
}

/// The payload of a notification: the topic, or `""` (wake everyone) when the topic is too long
/// for a notification (PostgreSQL's limit is 8000 bytes).
fn notification(topic: &Topic) -> &str {
    if topic.as_str().len() < 7900 {
        topic.as_str()
    } else {
        ""
    }
}

impl Inner {
    async fn query(
        &self,
        what: &str,
        stmt: Stmt,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, BackendError> {
        let sql = &self.statements.sql[stmt as usize];
        bounded(self.config.command_timeout, what, async {
            let mut lease = self.pool.get().await?;
            let (client, statement) = lease.prepared(stmt as usize, sql).await?;
            let result = client.query(&statement, params).await;
            match result {
                Ok(rows) => {
                    lease.healthy();
                    Ok(rows)
                }
                Err(err) => {
                    if err.as_db_error().is_some() {
                        lease.healthy();
                    }
                    Err(classify(what, err))
                }
            }
        })
        .await
    }

    async fn append(
        &self,
        topic: &Topic,
        message: &[u8],
        create: bool,
    ) -> Result<Option<Cursor>, LogError> {
        let max_events = i64::try_from(self.config.hub.retention.max_events).unwrap_or(i64::MAX);
        let generation = create.then(sql::new_generation);
        let rows = self
            .query(
                "publishing",
                if create {
                    Stmt::Publish
                } else {
                    Stmt::PublishExisting
                },
                &[
                    &topic.as_str(),
                    &message,
                    &max_events,
                    &self.channel,
                    &generation,
                    &notification(topic),
                ],
            )
            .await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let generation: i64 = get(row, 0)?;
        let seq: i64 = get(row, 1)?;
        self.waiters.wake(topic.as_str());
        Ok(Some(sql::cursor(generation, seq)?))
    }

    async fn position(&self, topic: &Topic) -> Result<Cursor, LogError> {
        let rows = self
            .query("reading the position", Stmt::Position, &[&topic.as_str()])
            .await?;
        match rows.first() {
            None => Ok(START),
            Some(row) => Ok(sql::cursor(get(row, 0)?, get(row, 1)?)?),
        }
    }

    /// The events after `after`, or why there can be none; one statement, one snapshot.
    async fn read(&self, topic: &Topic, after: Cursor) -> Result<Vec<Event>, LogError> {
        let max_batch = i64::try_from(self.config.hub.max_batch).unwrap_or(i64::MAX);
        // A cursor that is no i64 cannot be ours: read as if from the start, then reject it.
        let after_seq = i64::try_from(after.low()).unwrap_or(0);
        let rows = self
            .query(
                "reading a topic",
                Stmt::Poll,
                &[&topic.as_str(), &after_seq, &max_batch],
            )
            .await?;
        let head = match rows.first() {
            None => None,
            Some(row) => Some(TopicRow {
                generation: get(row, 0)?,
                last_seq: get(row, 1)?,
                evicted_seq: get(row, 2)?,
            }),
        };
        let from = sql::read_from(after, head)?;
        let Some(head) = head else {
            return Ok(Vec::new());
        };
        let mut events = Vec::with_capacity(rows.len());
        for row in &rows {
            let seq: Option<i64> = get(row, 3)?;
            let Some(seq) = seq else { continue };
            if seq <= from {
                continue;
            }
            let payload: Vec<u8> = get(row, 4)?;
            events.push(Event {
                cursor: sql::cursor(head.generation, seq)?,
                payload: Bytes::from(payload),
            });
        }
        Ok(events)
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
            let now = Instant::now();
            if deadline.is_some_and(|deadline| now >= deadline) {
                return Ok(events);
            }
            let listening = self.listening.load(std::sync::atomic::Ordering::Acquire);
            let fallback = now + self.config.fallback_poll;
            let until = match deadline {
                Some(deadline) if listening => Some(deadline),
                Some(deadline) => Some(deadline.min(fallback)),
                None if listening => None,
                None => Some(fallback),
            };
            match until {
                Some(until) => {
                    let _ = tokio::time::timeout_at(until, notified).await;
                }
                None => notified.await,
            }
        }
    }

    async fn delete_topic(&self, topic: &Topic) -> Result<(), LogError> {
        self.query(
            "deleting a topic",
            Stmt::DeleteTopic,
            &[&topic.as_str(), &self.channel, &notification(topic)],
        )
        .await?;
        self.waiters.wake(topic.as_str());
        Ok(())
    }

    async fn create(&self, key: &Key, value: Bytes, ttl: Duration) -> Result<u64, StoreError> {
        let rows = self
            .query(
                "creating a record",
                Stmt::Create,
                &[&key.as_str(), &&value[..], &sql::millis(ttl)],
            )
            .await?;
        if rows.is_empty() {
            Err(StoreError::AlreadyExists)
        } else {
            Ok(1)
        }
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let rows = self
            .query("reading a record", Stmt::Get, &[&key.as_str()])
            .await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let value: Vec<u8> = get(row, 0)?;
        Ok(Some(Record {
            value: Bytes::from(value),
            version: version(get(row, 1)?)?,
        }))
    }

    async fn save(
        &self,
        key: &Key,
        value: Bytes,
        expected: u64,
        ttl: Duration,
    ) -> Result<u64, StoreError> {
        let Ok(expected_i) = i64::try_from(expected) else {
            // No record reaches such a version: whatever is there differs.
            return match self.current_version(key).await? {
                None => Err(StoreError::NotFound),
                Some(actual) => Err(StoreError::VersionConflict { expected, actual }),
            };
        };
        let rows = self
            .query(
                "saving a record",
                Stmt::Save,
                &[&key.as_str(), &&value[..], &sql::millis(ttl), &expected_i],
            )
            .await?;
        if let Some(row) = rows.first() {
            return Ok(version(get(row, 0)?)?);
        }
        match self.current_version(key).await? {
            None => Err(StoreError::NotFound),
            Some(actual) => Err(StoreError::VersionConflict { expected, actual }),
        }
    }

    async fn current_version(&self, key: &Key) -> Result<Option<u64>, StoreError> {
        let rows = self
            .query("reading a record version", Stmt::Version, &[&key.as_str()])
            .await?;
        match rows.first() {
            None => Ok(None),
            Some(row) => Ok(Some(version(get(row, 0)?)?)),
        }
    }

    async fn touch(&self, key: &Key, ttl: Duration) -> Result<(), StoreError> {
        let sql = &self.statements.sql[Stmt::Touch as usize];
        let what = "renewing a record";
        let ttl = sql::millis(ttl);
        let renewed = bounded(self.config.command_timeout, what, async {
            let mut lease = self.pool.get().await?;
            let (client, statement) = lease.prepared(Stmt::Touch as usize, sql).await?;
            let count = client
                .execute(&statement, &[&key.as_str(), &ttl])
                .await
                .map_err(|err| classify(what, err))?;
            lease.healthy();
            Ok(count)
        })
        .await?;
        if renewed > 0 {
            Ok(())
        } else {
            Err(StoreError::NotFound)
        }
    }

    async fn delete_record(&self, key: &Key) -> Result<bool, StoreError> {
        let rows = self
            .query("deleting a record", Stmt::Delete, &[&key.as_str()])
            .await?;
        match rows.first() {
            None => Ok(false),
            Some(row) => Ok(get::<bool>(row, 0)?),
        }
    }

    /// One sweep, under a transaction-scoped advisory lock that other workers only try.
    async fn sweep(&self) -> Result<u64, BackendError> {
        let p = &self.config.table_prefix;
        let lock = advisory_key(p, "sweep");
        let max_age = self.config.hub.retention.max_age.map(sql::millis);
        let what = "sweeping";
        let statements = [
            Some(format!(
                "DELETE FROM {p}_records WHERE key IN (
                     SELECT key FROM {p}_records WHERE expires_at <= now() LIMIT 1000)"
            )),
            max_age.map(|_| {
                format!(
                    "WITH gone AS (
                         DELETE FROM {p}_topics WHERE topic IN (
                             SELECT topic FROM {p}_topics
                             WHERE active_at < now() - $1::bigint * interval '1 millisecond'
                             LIMIT 1000)
                         RETURNING topic)
                     DELETE FROM {p}_events e USING gone WHERE e.topic = gone.topic"
                )
            }),
            max_age.map(|_| {
                format!(
                    "WITH old AS (
                         SELECT topic, max(seq) AS upto FROM (
                             SELECT topic, seq FROM {p}_events
                             WHERE created_at < now() - $1::bigint * interval '1 millisecond'
                             LIMIT 1000) o GROUP BY topic),
                     moved AS (
                         UPDATE {p}_topics t SET evicted_seq = GREATEST(t.evicted_seq, old.upto)
                         FROM old WHERE t.topic = old.topic)
                     DELETE FROM {p}_events e USING old
                     WHERE e.topic = old.topic AND e.seq <= old.upto"
                )
            }),
        ];
        let mut total = 0;
        for statement in statements.into_iter().flatten() {
            loop {
                let deleted = bounded(self.config.command_timeout * 4, what, async {
                    let mut lease = self.pool.get().await?;
                    let client = lease.client_mut()?;
                    let tx = client.transaction().await.map_err(|e| classify(what, e))?;
                    let row = tx
                        .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&lock])
                        .await
                        .map_err(|e| classify(what, e))?;
                    let locked: bool = row.try_get(0).map_err(|e| classify(what, e))?;
                    if !locked {
                        tx.rollback().await.map_err(|e| classify(what, e))?;
                        lease.healthy();
                        return Ok(None);
                    }
                    let count = if statement.contains("$1") {
                        tx.execute(&statement, &[&max_age.unwrap_or(0)]).await
                    } else {
                        tx.execute(&statement, &[]).await
                    }
                    .map_err(|e| classify(what, e))?;
                    tx.commit().await.map_err(|e| classify(what, e))?;
                    lease.healthy();
                    Ok(Some(count))
                })
                .await?;
                match deleted {
                    None => return Ok(total),
                    Some(count) => {
                        total += count;
                        if count < 1000 {
                            break;
                        }
                    }
                }
            }
        }
        Ok(total)
    }
}

fn get<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: usize,
) -> Result<T, BackendError> {
    row.try_get(index)
        .map_err(|err| classify("reading a row", err))
}

fn version(raw: i64) -> Result<u64, BackendError> {
    u64::try_from(raw).map_err(|_| BackendError::unexpected("a record has a negative version"))
}

/// Classifies a driver error: a broken or refused connection, a server-side cancellation
/// (timeout), or anything else (unexpected).
fn classify(what: &str, err: tokio_postgres::Error) -> BackendError {
    let kind = match err.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            if code.starts_with("08") || code.starts_with("57P") || code.starts_with("53") {
                BackendErrorKind::Connection
            } else if code == "57014" {
                BackendErrorKind::Timeout
            } else {
                BackendErrorKind::Unexpected
            }
        }
        None if err.is_closed() => BackendErrorKind::Connection,
        None if err.code().is_none() && std::error::Error::source(&err).is_some() => {
            BackendErrorKind::Connection
        }
        None => BackendErrorKind::Unexpected,
    };
    BackendError::with_source(kind, format!("{what}: {err}"), err)
}

impl EventLog for PostgresHub {
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Cursor, LogError>> {
        Box::pin(async move {
            self.inner
                .append(topic, &message, true)
                .await?
                .ok_or_else(|| {
                    LogError::Backend(BackendError::unexpected("a publish returned no row"))
                })
        })
    }

    fn publish_existing<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Option<Cursor>, LogError>> {
        Box::pin(async move { self.inner.append(topic, &message, false).await })
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

impl StateStore for PostgresHub {
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
