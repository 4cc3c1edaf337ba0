//! The contract suite on the memory backend, on Tokio's paused clock and on real threads, and
//! checks that only the memory backend can make exactly (age retention, wake-ups on delete).

use crate::contract;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use mcp_hub::{EventLog, HubConfig, LogError, MemoryHub, Namespace, RetentionConfig};

use contract::Workers;

fn factory(config: HubConfig) -> BoxFuture<'static, Option<Workers>> {
    Box::pin(async move {
        let hub = Arc::new(MemoryHub::new(config.clone()));
        Some(Workers {
            a: hub.clone(),
            b: hub,
            unrelated: Arc::new(MemoryHub::new(config)),
        })
    })
}

mod paused {
    crate::contract::contract_suite!(
        factory = crate::memory::factory,
        runtime = (flavor = "current_thread", start_paused = true)
    );
}

mod threaded {
    crate::contract::contract_suite!(
        factory = crate::memory::factory,
        runtime = (flavor = "multi_thread", worker_threads = 2)
    );
}

#[tokio::test(start_paused = true)]
async fn age_retention_is_exact() {
    let retention = RetentionConfig::new().max_age(Some(Duration::from_secs(60)));
    let hub = MemoryHub::new(HubConfig::new().retention(retention));
    let topic = Namespace::root().topic("aging");
    let start = hub.position(&topic).await.unwrap();
    let old = hub
        .publish(&topic, Bytes::from_static(b"old"))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(59)).await;
    assert_eq!(
        hub.poll(&topic, start, Duration::ZERO).await.unwrap().len(),
        1
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    // Dropped on read, with no publish in between.
    assert!(matches!(
        hub.poll(&topic, start, Duration::ZERO).await,
        Err(LogError::CursorExpired { .. })
    ));
    assert!(
        hub.poll(&topic, old, Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
    let new = hub
        .publish(&topic, Bytes::from_static(b"new"))
        .await
        .unwrap();
    let events = hub.poll(&topic, old, Duration::ZERO).await.unwrap();
    assert_eq!(events[0].cursor, new);
}

#[tokio::test(start_paused = true)]
async fn a_waiting_poll_learns_of_a_delete_at_once() {
    let hub = Arc::new(MemoryHub::default());
    let topic = Namespace::root().topic("doomed");
    let last = hub.publish(&topic, Bytes::from_static(b"x")).await.unwrap();
    let waiter = tokio::spawn({
        let (hub, topic) = (Arc::clone(&hub), topic.clone());
        async move { hub.poll(&topic, last, Duration::from_secs(3600)).await }
    });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    EventLog::delete(&*hub, &topic).await.unwrap();
    let began = tokio::time::Instant::now();
    assert!(matches!(
        waiter.await.unwrap(),
        Err(LogError::UnknownCursor { .. })
    ));
    assert!(began.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn a_cursor_survives_its_text_form() {
    // Cursors travel as SSE ids and come back as Last-Event-ID.
    let hub = MemoryHub::default();
    let topic = Namespace::root().topic("sse");
    let first = hub.publish(&topic, Bytes::from_static(b"1")).await.unwrap();
    let second = hub.publish(&topic, Bytes::from_static(b"2")).await.unwrap();
    let resumed: mcp_hub::Cursor = first.to_string().parse().unwrap();
    let events = hub.poll(&topic, resumed, Duration::ZERO).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].cursor, second);
}
