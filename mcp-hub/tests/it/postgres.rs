//! The contract suite on the PostgreSQL backend, against the database at `MCP_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/test`).
//!
//! With `CI=true` an unreachable database fails every test; otherwise each test prints a notice
//! and passes without checking anything. Every test uses its own table prefix and drops its
//! tables when its hubs are dropped.
#![cfg(feature = "postgres")]

use crate::contract;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::future::BoxFuture;
use mcp_hub::{
    Cursor, Event, EventLog, HubConfig, Key, LogError, Namespace, PostgresConfig, PostgresHub,
    Record, RetentionConfig, StateStore, StoreError, Topic,
};

use contract::Workers;

fn url() -> String {
    std::env::var("MCP_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

fn unique_prefix() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "hubtest_{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000_000,
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A hub on the shared database, or `None` (after a notice) when it is unreachable outside CI.
async fn connect(config: PostgresConfig) -> Option<PostgresHub> {
    match PostgresHub::connect(&url(), config).await {
        Ok(hub) => Some(hub),
        Err(err) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!(
                "notice: PostgreSQL at {} is unreachable ({err}); skipping",
                url()
            );
            None
        }
        Err(err) => panic!("PostgreSQL at {} is unreachable with CI=true: {err}", url()),
    }
}

/// A hub that drops its tables when dropped (if it owns them).
struct Owned {
    hub: PostgresHub,
    prefix: Option<String>,
}

impl Drop for Owned {
    fn drop(&mut self) {
        let Some(prefix) = self.prefix.take() else {
            return;
        };
        // Dropped inside the test's runtime: clean up on a thread with a runtime of its own.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(drop_tables(&prefix));
        });
        let _ = cleanup.join();
    }
}

async fn drop_tables(prefix: &str) {
    let Ok((client, connection)) = tokio_postgres::connect(&url(), tokio_postgres::NoTls).await
    else {
        return;
    };
    let driver = tokio::spawn(connection);
    let _ = client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {prefix}_topics, {prefix}_events, {prefix}_records"
        ))
        .await;
    drop(client);
    let _ = driver.await;
}

fn config(prefix: &str, hub: HubConfig) -> PostgresConfig {
    PostgresConfig::new()
        .hub(hub)
        .table_prefix(prefix)
        .pool_size(8)
}

fn factory(config_: HubConfig) -> BoxFuture<'static, Option<Workers>> {
    Box::pin(async move {
        let (shared, other) = (unique_prefix(), unique_prefix());
        let a = connect(config(&shared, config_.clone())).await?;
        let b = connect(config(&shared, config_.clone())).await?;
        let unrelated = connect(config(&other, config_)).await?;
        Some(Workers {
            a: Arc::new(Owned {
                hub: a,
                prefix: Some(shared),
            }),
            b: Arc::new(Owned {
                hub: b,
                prefix: None,
            }),
            unrelated: Arc::new(Owned {
                hub: unrelated,
                prefix: Some(other),
            }),
        })
    })
}

crate::contract::contract_suite!(
    factory = factory,
    runtime = (flavor = "multi_thread", worker_threads = 2)
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_waiting_polls_share_the_listener_and_all_wake() {
    let prefix = unique_prefix();
    let Some(hub) = connect(config(&prefix, HubConfig::new()).pool_size(4)).await else {
        return;
    };
    let hub = Arc::new(Owned {
        hub,
        prefix: Some(prefix.clone()),
    });
    // A second worker publishes, so only the listener can wake the first one's polls.
    let Some(publisher) = connect(config(&prefix, HubConfig::new())).await else {
        return;
    };
    let ns = Namespace::new("t");
    let mut waiters = Vec::new();
    for i in 0..50 {
        let topic = ns.topic(&format!("wait/{}", i % 10));
        let start = hub.position(&topic).await.unwrap();
        let hub = Arc::clone(&hub);
        waiters.push(tokio::spawn(async move {
            hub.poll(&topic, start, Duration::from_secs(20)).await
        }));
    }
    // 50 waiting polls on a pool of 4: waiting holds no pooled connection.
    for i in 0..10 {
        publisher
            .publish(&ns.topic(&format!("wait/{i}")), Bytes::from(i.to_string()))
            .await
            .unwrap();
    }
    for (i, waiter) in waiters.into_iter().enumerate() {
        let events = waiter.await.unwrap().unwrap();
        assert_eq!(events.len(), 1, "waiter {i}");
        assert_eq!(events[0].payload, (i % 10).to_string());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_drops_expired_records_and_old_events() {
    let prefix = unique_prefix();
    let retention = RetentionConfig::new().max_age(Some(Duration::from_millis(200)));
    let Some(hub) = connect(config(&prefix, HubConfig::new().retention(retention))).await else {
        return;
    };
    let hub = Owned {
        hub,
        prefix: Some(prefix),
    };
    let ns = Namespace::new("t");
    let topic = ns.topic("aging");
    let first = hub.publish(&topic, Bytes::from_static(b"1")).await.unwrap();
    hub.create(&ns.key("short"), Bytes::new(), Duration::from_millis(1))
        .await
        .unwrap();
    // This sleep measures expiry; it synchronises nothing.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(hub.hub.sweep().await.unwrap() >= 2);
    // The idle topic is gone as a whole, like a Redis stream that expired.
    assert!(matches!(
        hub.poll(&topic, first, Duration::ZERO).await,
        Err(LogError::UnknownCursor { .. })
    ));
    assert_eq!(
        hub.publish_existing(&topic, Bytes::from_static(b"x"))
            .await
            .unwrap(),
        None
    );
    assert!(hub.get(&ns.key("short")).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_is_printable_and_prefixes_are_checked() {
    let sql = PostgresConfig::new().schema_sql().unwrap();
    assert!(sql.contains("CREATE TABLE IF NOT EXISTS mcp_records"));
    assert!(
        PostgresConfig::new()
            .table_prefix("bad-prefix; DROP")
            .schema_sql()
            .is_err()
    );
    let err = PostgresHub::connect(&url(), PostgresConfig::new().table_prefix("Bad"))
        .await
        .unwrap_err();
    assert!(err.is_unexpected(), "{err}");
}

impl EventLog for Owned {
    fn publish<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Cursor, LogError>> {
        self.hub.publish(topic, message)
    }

    fn publish_existing<'a>(
        &'a self,
        topic: &'a Topic,
        message: Bytes,
    ) -> BoxFuture<'a, Result<Option<Cursor>, LogError>> {
        self.hub.publish_existing(topic, message)
    }

    fn position<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<Cursor, LogError>> {
        self.hub.position(topic)
    }

    fn poll<'a>(
        &'a self,
        topic: &'a Topic,
        after: Cursor,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Vec<Event>, LogError>> {
        self.hub.poll(topic, after, timeout)
    }

    fn delete<'a>(&'a self, topic: &'a Topic) -> BoxFuture<'a, Result<(), LogError>> {
        EventLog::delete(&self.hub, topic)
    }
}

impl StateStore for Owned {
    fn create<'a>(
        &'a self,
        key: &'a Key,
        value: Bytes,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.hub.create(key, value, ttl)
    }

    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<Option<Record>, StoreError>> {
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

    fn touch<'a>(&'a self, key: &'a Key, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>> {
        self.hub.touch(key, ttl)
    }

    fn delete<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<bool, StoreError>> {
        StateStore::delete(&self.hub, key)
    }
}

/// Every connection of the hubs tagged `name` is terminated by the server, as a restart of the
/// database would do (without stopping the shared server).
async fn terminate_connections(name: &str) -> u64 {
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    let rows = client
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .await
        .unwrap();
    drop(client);
    let _ = driver.await;
    rows.len() as u64
}

fn tagged_url(name: &str) -> String {
    let base = url();
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}application_name={name}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_poll_and_the_pool_survive_every_connection_being_killed() {
    let prefix = unique_prefix();
    let settings = config(&prefix, HubConfig::new()).command_timeout(Duration::from_secs(5));
    // Only reachable-database runs get here: `connect` decides about CI.
    if connect(settings.clone()).await.is_none() {
        return;
    }
    let waiting = Owned {
        hub: PostgresHub::connect(&tagged_url(&prefix), settings.clone())
            .await
            .unwrap(),
        prefix: Some(prefix.clone()),
    };
    let publisher = PostgresHub::connect(&url(), settings).await.unwrap();
    let ns = Namespace::new("t");
    let topic = ns.topic("ask/fault");
    let asked = waiting
        .publish(&topic, Bytes::from_static(b"asked"))
        .await
        .unwrap();
    let waiting = Arc::new(waiting);
    let poll = tokio::spawn({
        let (hub, topic) = (Arc::clone(&waiting), topic.clone());
        async move { hub.poll(&topic, asked, Duration::from_secs(30)).await }
    });
    // The waiting hub loses its listener and every pooled connection at once.
    assert!(terminate_connections(&prefix).await >= 1);
    let reply = publisher
        .publish_existing(&topic, Bytes::from_static(b"reply"))
        .await
        .unwrap()
        .expect("the topic exists");
    let events = tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .expect("the poll ends well within its timeout")
        .unwrap();
    // The poll either delivers the reply or fails cleanly; either way the hub recovers by
    // itself and the acknowledged reply is there.
    match events {
        Ok(events) => assert_eq!(events[0].cursor, reply),
        Err(LogError::Backend(err)) => assert!(err.is_connection(), "{err}"),
        Err(other) => panic!("unexpected {other:?}"),
    }
    let mut again = None;
    for _ in 0..3 {
        match waiting.poll(&topic, asked, Duration::ZERO).await {
            Ok(events) => {
                again = Some(events);
                break;
            }
            Err(LogError::Backend(err)) if err.is_connection() => continue,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    let again = again.expect("the hub reconnects by itself");
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].payload, "reply");
}
