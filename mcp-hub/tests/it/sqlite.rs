//! The contract suite on the SQLite backend: workers `a` and `b` are two hubs opened on one
//! temporary file (as two processes would be), `unrelated` a hub on another file. Also a poll
//! woken by a publish from another process, and a hub reopened on the same file.
#![cfg(feature = "sqlite")]

use crate::contract;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use mcp_hub::{
    Cursor, Event, EventLog, HubConfig, Key, LogError, Namespace, Record, SqliteConfig, SqliteHub,
    StateStore, StoreError, Topic,
};

use contract::Workers;

/// A fresh database path in the temporary folder.
fn unique_path() -> PathBuf {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "mcp-hub-test-{}-{}.sqlite",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A hub that removes its database file (and WAL) when dropped, if it owns it.
struct Owned {
    hub: SqliteHub,
    path: Option<PathBuf>,
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            for suffix in ["", "-wal", "-shm"] {
                let mut file = path.clone().into_os_string();
                file.push(suffix);
                let _ = std::fs::remove_file(file);
            }
        }
    }
}

async fn open(path: &PathBuf, config: HubConfig) -> SqliteHub {
    SqliteHub::open(path, SqliteConfig::new().hub(config))
        .await
        .expect("a SQLite file in the temporary folder opens")
}

fn factory(config: HubConfig) -> BoxFuture<'static, Option<Workers>> {
    Box::pin(async move {
        let (shared, other) = (unique_path(), unique_path());
        let a = open(&shared, config.clone()).await;
        let b = open(&shared, config.clone()).await;
        let unrelated = open(&other, config).await;
        Some(Workers {
            // `b` goes before `a` removes the file: both are dropped at the end of the test.
            a: Arc::new(Owned {
                hub: a,
                path: Some(shared),
            }),
            b: Arc::new(Owned { hub: b, path: None }),
            unrelated: Arc::new(Owned {
                hub: unrelated,
                path: Some(other),
            }),
        })
    })
}

crate::contract::contract_suite!(
    factory = factory,
    runtime = (flavor = "multi_thread", worker_threads = 2)
);

/// Set in the child process of [`a_publish_from_another_process_wakes_a_waiting_poll`].
const CHILD: &str = "MCP_HUB_SQLITE_CHILD";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_from_child_process() {
    // Does nothing unless started as the child of the test below.
    let Ok(path) = std::env::var(CHILD) else {
        return;
    };
    let hub = open(&PathBuf::from(path), HubConfig::new()).await;
    hub.publish(
        &Namespace::new("t").topic("cross"),
        Bytes::from_static(b"hello"),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_from_another_process_wakes_a_waiting_poll() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let path = unique_path();
    let hub = Arc::new(Owned {
        hub: open(&path, HubConfig::new()).await,
        path: Some(path.clone()),
    });
    let topic = Namespace::new("t").topic("cross");
    let start = hub.position(&topic).await.unwrap();
    let waiter = tokio::spawn({
        let (hub, topic) = (Arc::clone(&hub), topic.clone());
        async move { hub.poll(&topic, start, Duration::from_secs(30)).await }
    });
    let status = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sqlite::publish_from_child_process", "--quiet"])
        .env(CHILD, &path)
        .stdout(std::process::Stdio::null())
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let published = tokio::time::Instant::now();
    let events = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("woken well before the poll's timeout")
        .unwrap()
        .unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].payload, "hello");
    assert!(published.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reopened_file_keeps_records_and_topics() {
    let path = unique_path();
    let ns = Namespace::new("t");
    let topic = ns.topic("kept");
    let (first, cursor) = {
        let hub = open(&path, HubConfig::new()).await;
        hub.create(
            &ns.key("session"),
            Bytes::from_static(b"s"),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        let first = hub.publish(&topic, Bytes::from_static(b"1")).await.unwrap();
        let cursor = hub.publish(&topic, Bytes::from_static(b"2")).await.unwrap();
        (first, cursor)
    };
    let hub = Owned {
        hub: open(&path, HubConfig::new()).await,
        path: Some(path),
    };
    assert_eq!(
        hub.get(&ns.key("session")).await.unwrap().unwrap().value,
        "s"
    );
    let events = hub.poll(&topic, first, Duration::ZERO).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].cursor, cursor);
    assert_eq!(hub.position(&topic).await.unwrap(), cursor);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_drops_expired_records_and_idle_topics() {
    let path = unique_path();
    let retention = mcp_hub::RetentionConfig::new().max_age(Some(Duration::from_millis(200)));
    let hub = Owned {
        hub: open(&path, HubConfig::new().retention(retention)).await,
        path: Some(path),
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
    assert!(matches!(
        hub.poll(&topic, first, Duration::ZERO).await,
        Err(LogError::UnknownCursor { .. })
    ));
    assert!(hub.get(&ns.key("short")).await.unwrap().is_none());
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
