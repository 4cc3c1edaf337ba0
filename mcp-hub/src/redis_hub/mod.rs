//! The Redis backend: one Stream per topic, a Lua compare-and-set per record.

mod dispatch;
mod reply;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, RedisError, Script, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use self::dispatch::Watch;
use self::reply::{Fault, START};
use crate::error::BackendErrorKind;
use crate::store::ttl_millis;
use crate::{
    BackendError, Cursor, Event, EventLog, HubConfig, Key, LogError, Record, StateStore,
    StoreError, Topic,
};

/// Appends an entry that records its predecessor, then applies retention.
///
/// KEYS[1] stream; ARGV[1] max events; ARGV[2] message; ARGV[3] max age in ms, 0 for none.
const PUBLISH: &str = r"
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local prev = '0-0'
if #last > 0 then prev = last[1][1] end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'p', prev, 'm', ARGV[2])
local age = tonumber(ARGV[3])
if age > 0 then
  local ms = tonumber(string.match(id, '^(%d+)'))
  if ms > age then
    redis.call('XTRIM', KEYS[1], 'MINID', '~', string.format('%.0f', ms - age) .. '-0')
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return id
";

/// Put before `PUBLISH`: publishes only when the stream exists, else returns nil.
const ONLY_IF_EXISTS: &str = "if redis.call('EXISTS', KEYS[1]) == 0 then return false end\n";

/// The id of the newest entry, or the start cursor; without sending the entry back.
const POSITION: &str = r"
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last > 0 then return last[1][1] end
return '0-0'
";

/// Compare-and-set of a record stored as an 8-byte big-endian version followed by the value.
///
/// KEYS[1] record; ARGV[1] expected version (8 bytes); ARGV[2] new record; ARGV[3] TTL in ms.
/// Returns 0 when there is no live record, 1 when saved, the current version when it differs.
const SAVE: &str = r"
local current = redis.call('GETRANGE', KEYS[1], 0, 7)
if #current == 0 then return 0 end
if #current < 8 then return redis.error_reply('not a hub record') end
if current ~= ARGV[1] then return current end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
";

/// Settings of the Redis backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    hub: HubConfig,
    key_prefix: String,
    command_timeout: Duration,
}

impl RedisConfig {
    /// The defaults: [`HubConfig::new`], key prefix `mcp`, command timeout 2 s.
    pub fn new() -> Self {
        Self {
            hub: HubConfig::new(),
            key_prefix: "mcp".to_owned(),
            command_timeout: Duration::from_secs(2),
        }
    }

    /// Retention and batch size, as for every backend.
    ///
    /// Default is [`HubConfig::new`].
    pub fn hub(mut self, hub: HubConfig) -> Self {
        self.hub = hub;
        self
    }

    /// The first part of every Redis key the hub writes: topics live at
    /// `<prefix>:log:<namespace>:<topic>` and records at `<prefix>:rec:<namespace>:<key>`.
    /// Deployments sharing one Redis keep apart by choosing different prefixes; every worker of
    /// one deployment must use the same.
    ///
    /// Default is `"mcp"`.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// How long one Redis command may take, connecting included, before the operation fails
    /// with a timeout. It also bounds how far a [`poll`](EventLog::poll) can overrun its own
    /// timeout while Redis does not answer. Values below 1 ms count as 1 ms.
    ///
    /// Default is `2 s`.
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout.max(Duration::from_millis(1));
        self
    }
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// The hub of a deployment with several workers: an [`EventLog`] and a [`StateStore`] on Redis.
///
/// - **Topics** are Redis Streams at `<prefix>:log:<namespace>:<topic>`. A publish is one Lua
///   script: `XADD` with `MAXLEN ~` (count retention), `XTRIM MINID ~` and `PEXPIRE` (age
///   retention). Cursors are stream ids (`1700000000000-0`); the start cursor of every topic
///   is `0-0`. Each entry records the id of the entry before it, so a cursor whose next events
///   were trimmed is told apart exactly from one that was never issued (see [`LogError`]).
///   A topic that expired as a whole reads as deleted.
/// - **Waiting.** One background task per hub holds a dedicated connection blocked in a
///   single `XREAD BLOCK` over every topic somebody waits on, and hands new entries straight
///   to the waiting polls; a new waiter interrupts the block with `CLIENT UNBLOCK`. So any
///   number of waiting polls costs one Redis connection, and nothing polls on a timer.
/// - **Records** are strings at `<prefix>:rec:<namespace>:<key>`, an 8-byte version followed by
///   the value, with a Redis expiry for the TTL: `create` is `SET NX PX`, `get` is `GET`,
///   `save` a Lua compare-and-set, `touch` is `PEXPIRE`, `delete` is `DEL`.
/// - **Connection loss.** Commands go over a multiplexed connection that reconnects by itself
///   (`redis::aio::ConnectionManager`). While Redis is away, operations fail with
///   [`BackendError`] (a connection error, or a timeout after
///   [`command_timeout`](RedisConfig::command_timeout)), waiting polls fail at once, and a
///   poll never overruns its timeout by more than one command timeout. Once Redis is back, the
///   same hub works again.
///
/// Cloning is cheap and shares the connections. Needs a Tokio runtime.
#[derive(Clone)]
pub struct RedisHub {
    inner: Arc<Inner>,
}

struct Inner {
    connection: ConnectionManager,
    log_prefix: String,
    record_prefix: String,
    config: RedisConfig,
    publish: Script,
    publish_existing: Script,
    position: Script,
    save: Script,
    watches: mpsc::UnboundedSender<Watch>,
}

impl RedisHub {
    /// Connects to the Redis at `url` (`redis://host:port/db`, see the `redis` crate) and starts
    /// the task that serves waiting polls. Fails if Redis cannot be reached within the command
    /// timeout.
    pub async fn connect(url: &str, config: RedisConfig) -> Result<Self, BackendError> {
        let client = redis::Client::open(url).map_err(|err| {
            BackendError::with_source(BackendErrorKind::Connection, "invalid Redis URL", err)
        })?;
        let timeout = config.command_timeout;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(4)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_secs(1));
        let connection = bounded(
            timeout,
            "connecting",
            ConnectionManager::new_with_config(client.clone(), manager_config),
        )
        .await?;
        let waiter = dispatch::connect(&client, timeout).await?;
        let (watches, requests) = mpsc::unbounded_channel();
        tokio::spawn(dispatch::run(dispatch::Dispatcher::new(
            client,
            connection.clone(),
            waiter,
            requests,
            timeout,
            config.hub.max_batch,
        )));
        Ok(Self {
            inner: Arc::new(Inner {
                connection,
                log_prefix: format!("{}:log:", config.key_prefix),
                record_prefix: format!("{}:rec:", config.key_prefix),
                config,
                publish: Script::new(PUBLISH),
                publish_existing: Script::new(&[ONLY_IF_EXISTS, PUBLISH].concat()),
                position: Script::new(POSITION),
                save: Script::new(SAVE),
                watches,
            }),
        })
    }
}

impl fmt::Debug for RedisHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisHub")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Inner {
    fn log_key(&self, topic: &Topic) -> String {
        let mut key = String::with_capacity(self.log_prefix.len() + topic.as_str().len());
        key.push_str(&self.log_prefix);
        key.push_str(topic.as_str());
        key
    }

    fn record_key(&self, key: &Key) -> String {
        let mut scoped = String::with_capacity(self.record_prefix.len() + key.as_str().len());
        scoped.push_str(&self.record_prefix);
        scoped.push_str(key.as_str());
        scoped
    }

    async fn command<T>(
        &self,
        what: &str,
        run: impl Future<Output = Result<T, RedisError>>,
    ) -> Result<T, BackendError> {
        bounded(self.config.command_timeout, what, run).await
    }

    /// Runs an idempotent command (a read, a renewal, a delete, a create that fails when the
    /// key exists), once more when the first attempt finds the connection dropped: after Redis
    /// restarts, the first command on the old connection fails while the connection manager
    /// reconnects, and this one must not fail with it. Each attempt is bounded by the command
    /// timeout. Publishes are never retried (a publish that reached Redis before the
    /// connection dropped would be appended twice).
    async fn idempotent<T: FromRedisValue>(
        &self,
        what: &str,
        cmd: &redis::Cmd,
    ) -> Result<T, BackendError> {
        let mut connection = self.connection.clone();
        match tokio::time::timeout(
            self.config.command_timeout,
            cmd.query_async(&mut connection),
        )
        .await
        {
            Ok(Err(err)) if err.is_connection_dropped() || err.is_io_error() => {
                let mut connection = self.connection.clone();
                self.command(what, cmd.query_async(&mut connection)).await
            }
            Ok(result) => result.map_err(|err| classify(what, err)),
            Err(_) => Err(timed_out(what, self.config.command_timeout)),
        }
    }

    async fn publish(&self, topic: &Topic, message: Bytes) -> Result<Cursor, LogError> {
        let id = self.append(&self.publish, topic, &message).await?;
        Ok(reply::id(id)?)
    }

    async fn publish_existing(
        &self,
        topic: &Topic,
        message: Bytes,
    ) -> Result<Option<Cursor>, LogError> {
        let id: Option<Value> = self.append(&self.publish_existing, topic, &message).await?;
        Ok(id.map(reply::id).transpose()?)
    }

    /// Runs one of the publish scripts with the retention arguments.
    async fn append<T: FromRedisValue>(
        &self,
        script: &Script,
        topic: &Topic,
        message: &[u8],
    ) -> Result<T, BackendError> {
        let mut connection = self.connection.clone();
        let retention = &self.config.hub.retention;
        let max_age = retention.max_age.map_or(0, ttl_millis);
        let mut invocation = script.key(self.log_key(topic));
        invocation
            .arg(retention.max_events)
            .arg(message)
            .arg(max_age);
        self.command("publishing", invocation.invoke_async(&mut connection))
            .await
    }

    async fn position(&self, topic: &Topic) -> Result<Cursor, LogError> {
        let mut connection = self.connection.clone();
        let id = self
            .command(
                "reading the position",
                self.position
                    .key(self.log_key(topic))
                    .invoke_async(&mut connection),
            )
            .await?;
        Ok(reply::id(id)?)
    }

    async fn poll(
        &self,
        topic: &Topic,
        after: Cursor,
        timeout: Duration,
    ) -> Result<Vec<Event>, LogError> {
        let key = self.log_key(topic);
        let deadline = Instant::now().checked_add(timeout);
        let max_batch = self.config.hub.max_batch;
        let fault = |fault| match fault {
            Fault::Unknown => LogError::UnknownCursor { cursor: after },
            Fault::Expired => LogError::CursorExpired { cursor: after },
        };
        loop {
            let rows = self.range(&key, after, max_batch + 1).await?;
            if rows.is_empty() && after != START {
                // Not even the cursor's own entry: past the end, or the topic is gone.
                return Err(LogError::UnknownCursor { cursor: after });
            }
            let events = reply::take_after(after, &rows, max_batch).map_err(fault)?;
            if !events.is_empty() || timeout.is_zero() {
                return Ok(events);
            }
            let (reply, woken) = oneshot::channel();
            let watch = Watch {
                key: key.clone().into_bytes(),
                after,
                reply,
            };
            self.watches.send(watch).map_err(|_| dispatcher_gone())?;
            let woken = match deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, woken).await {
                    Ok(woken) => woken,
                    Err(_) => return Ok(Vec::new()),
                },
                None => woken.await,
            };
            let rows = woken.map_err(|_| dispatcher_gone())??;
            // The rows were read after `after` was checked; they are checked again, and on any
            // doubt the range is read once more, which gives the authoritative answer.
            if let Ok(events) = reply::take_after(after, &rows, max_batch)
                && !events.is_empty()
            {
                return Ok(events);
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Ok(Vec::new());
            }
        }
    }

    /// `XRANGE key after + COUNT count`: the cursor's own entry (if retained) and what follows.
    async fn range(
        &self,
        key: &str,
        after: Cursor,
        count: usize,
    ) -> Result<Vec<reply::Row>, BackendError> {
        let value: Value = self
            .idempotent(
                "reading a topic",
                redis::cmd("XRANGE")
                    .arg(key)
                    .arg(after.to_string())
                    .arg("+")
                    .arg("COUNT")
                    .arg(count),
            )
            .await?;
        reply::rows(value)
    }

    async fn delete_topic(&self, topic: &Topic) -> Result<(), LogError> {
        let _: Value = self
            .idempotent(
                "deleting a topic",
                redis::cmd("DEL").arg(self.log_key(topic)),
            )
            .await?;
        Ok(())
    }

    async fn create(&self, key: &Key, value: Bytes, ttl: Duration) -> Result<u64, StoreError> {
        let reply: Value = self
            .idempotent(
                "creating a record",
                redis::cmd("SET")
                    .arg(self.record_key(key))
                    .arg(encode_record(1, &value))
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl_millis(ttl)),
            )
            .await?;
        match reply {
            Value::Nil => Err(StoreError::AlreadyExists),
            _ => Ok(1),
        }
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let reply: Value = self
            .idempotent(
                "reading a record",
                redis::cmd("GET").arg(self.record_key(key)),
            )
            .await?;
        match reply {
            Value::Nil => Ok(None),
            other => {
                let raw = reply::bytes(other, "a record")?;
                let version = raw
                    .get(..8)
                    .and_then(|head| <[u8; 8]>::try_from(head).ok())
                    .map(u64::from_be_bytes)
                    .ok_or_else(not_a_record)?;
                Ok(Some(Record {
                    value: raw.slice(8..),
                    version,
                }))
            }
        }
    }

    async fn save(
        &self,
        key: &Key,
        value: Bytes,
        expected: u64,
        ttl: Duration,
    ) -> Result<u64, StoreError> {
        let next = expected.checked_add(1).ok_or(StoreError::VersionConflict {
            expected,
            actual: expected,
        })?;
        let mut connection = self.connection.clone();
        let mut invocation = self.save.key(self.record_key(key));
        invocation
            .arg(&expected.to_be_bytes()[..])
            .arg(encode_record(next, &value))
            .arg(ttl_millis(ttl));
        let reply: Value = self
            .command("saving a record", invocation.invoke_async(&mut connection))
            .await?;
        match reply {
            Value::Int(0) => Err(StoreError::NotFound),
            Value::Int(1) => Ok(next),
            other => {
                let raw = reply::bytes(other, "a record version")?;
                let actual = <[u8; 8]>::try_from(&raw[..])
                    .map(u64::from_be_bytes)
                    .map_err(|_| not_a_record())?;
                Err(StoreError::VersionConflict { expected, actual })
            }
        }
    }

    async fn touch(&self, key: &Key, ttl: Duration) -> Result<(), StoreError> {
        let renewed: i64 = self
            .idempotent(
                "renewing a record",
                redis::cmd("PEXPIRE")
                    .arg(self.record_key(key))
                    .arg(ttl_millis(ttl)),
            )
            .await?;
        if renewed == 1 {
            Ok(())
        } else {
            Err(StoreError::NotFound)
        }
    }

    async fn delete_record(&self, key: &Key) -> Result<bool, StoreError> {
        let removed: i64 = self
            .idempotent(
                "deleting a record",
                redis::cmd("DEL").arg(self.record_key(key)),
            )
            .await?;
        Ok(removed > 0)
    }
}

impl EventLog for RedisHub {
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Cursor, LogError>> {
        Box::pin(self.inner.publish(topic, message))
    }

    fn publish_existing<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Option<Cursor>, LogError>> {
        Box::pin(self.inner.publish_existing(topic, message))
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

impl StateStore for RedisHub {
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

/// Runs one Redis operation, bounded by `timeout`, and classifies its failure.
async fn bounded<T>(
    timeout: Duration,
    what: &str,
    run: impl Future<Output = Result<T, RedisError>>,
) -> Result<T, BackendError> {
    match tokio::time::timeout(timeout, run).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(classify(what, err)),
        Err(_) => Err(timed_out(what, timeout)),
    }
}

fn timed_out(what: &str, timeout: Duration) -> BackendError {
    BackendError::new(
        BackendErrorKind::Timeout,
        format!("{what}: Redis did not answer within {timeout:?}"),
    )
}

fn classify(what: &str, err: RedisError) -> BackendError {
    let kind = if err.is_timeout() {
        BackendErrorKind::Timeout
    } else if err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_unrecoverable_error()
    {
        BackendErrorKind::Connection
    } else {
        BackendErrorKind::Unexpected
    };
    BackendError::with_source(kind, format!("{what}: {err}"), err)
}

fn encode_record(version: u64, value: &[u8]) -> Vec<u8> {
    let mut record = Vec::with_capacity(8 + value.len());
    record.extend_from_slice(&version.to_be_bytes());
    record.extend_from_slice(value);
    record
}

fn not_a_record() -> BackendError {
    BackendError::new(
        BackendErrorKind::Unexpected,
        "the key holds something the hub did not write",
    )
}

fn dispatcher_gone() -> BackendError {
    BackendError::new(
        BackendErrorKind::Connection,
        "the task serving waiting polls has stopped",
    )
}
