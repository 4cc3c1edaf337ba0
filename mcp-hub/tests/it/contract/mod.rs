//! The hub contract, written once and instantiated for each backend with [`contract_suite!`]
//! (see `memory.rs` and `redis.rs`).
//!
//! Each check takes a [`Factory`] that builds two workers sharing one backend. Time is read
//! from `tokio::time`, so the memory backend can run the suite on Tokio's paused clock; the only
//! sleeps measure expiry (TTL), never to let another task get somewhere.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;
use mcp_hub::{
    Cursor, Event, EventLog, Hub, HubConfig, LogError, Namespace, Record, RetentionConfig,
    StateStore, StoreError, Subscription, Topic,
};
use tokio::time::Instant;

/// Two workers sharing one backend, and a hub that shares nothing with them.
pub(crate) struct Workers {
    pub(crate) a: Arc<dyn Hub>,
    pub(crate) b: Arc<dyn Hub>,
    pub(crate) unrelated: Arc<dyn Hub>,
}

/// Builds [`Workers`] with a config; `None` when the backend is unavailable and may be skipped.
pub(crate) type Factory = fn(HubConfig) -> BoxFuture<'static, Option<Workers>>;

/// The config of most checks: defaults, with a short age so leftovers in Redis go away.
pub(crate) fn config() -> HubConfig {
    HubConfig::new().retention(RetentionConfig::new().max_age(Some(Duration::from_secs(600))))
}

/// A generous bound on anything that should happen at once.
const SOON: Duration = Duration::from_secs(10);
const TTL: Duration = Duration::from_secs(60);

macro_rules! contract_suite {
    (factory = $factory:path, runtime = $runtime:tt) => {
        $crate::contract::contract_suite!(
            @each $factory, $runtime, [
                ordering,
                batches,
                answer_published_before_the_first_poll_is_delivered,
                concurrent_publishers,
                several_readers_each_keep_their_place,
                delete_forgets_the_topic,
                publish_existing_never_creates_a_topic,
                timeouts_are_honoured,
                compare_and_set_detects_conflicts,
                ttl_expiry,
                namespaces_are_isolated,
                one_mebibyte_messages_and_records,
                unknown_cursors_are_an_explicit_error,
                expired_cursors_are_an_explicit_error,
                an_operation_left_unpolled_holds_up_no_other,
            ]
        );
    };
    (@each $factory:path, $runtime:tt, [$($name:ident),* $(,)?]) => {
        $(
            #[tokio::test $runtime]
            async fn $name() {
                $crate::contract::$name($factory).await;
            }
        )*
    };
}
pub(crate) use contract_suite;

fn payload(text: impl Into<String>) -> Bytes {
    Bytes::from(text.into())
}

fn text(event: &Event) -> &str {
    std::str::from_utf8(&event.payload).expect("test payloads are UTF-8")
}

fn log(hub: &Arc<dyn Hub>) -> Arc<dyn EventLog> {
    Arc::clone(hub) as Arc<dyn EventLog>
}

/// Reads `count` events after `after`, failing if one poll waits longer than [`SOON`].
async fn read(log: Arc<dyn EventLog>, topic: Topic, mut after: Cursor, count: usize) -> Vec<Event> {
    let mut events = Vec::with_capacity(count);
    while events.len() < count {
        let batch = log.poll(&topic, after, SOON).await.expect("poll");
        assert!(
            !batch.is_empty(),
            "only {} of {count} events arrived",
            events.len()
        );
        after = batch.last().unwrap().cursor;
        events.extend(batch);
    }
    assert_eq!(events.len(), count, "more events than were published");
    events
}

async fn next(subscription: &mut Subscription) -> Event {
    tokio::time::timeout(SOON, subscription.next())
        .await
        .expect("subscription delivers within the bound")
        .expect("subscription goes on")
        .expect("subscription yields events")
}

/// A cursor of the same backend far past `cursor`, which no publish has returned.
fn past(cursor: Cursor) -> Cursor {
    let text = cursor.to_string();
    let (high, low) = text.split_once('-').unwrap();
    format!("{high}-{}", low.parse::<u64>().unwrap() + 1_000_000)
        .parse()
        .unwrap()
}

pub(crate) async fn ordering(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let topic = Namespace::new("t").topic("ordering");
    let start = w.b.position(&topic).await.unwrap();
    let mut published = Vec::new();
    for i in 0..100 {
        published.push(w.a.publish(&topic, payload(i.to_string())).await.unwrap());
    }
    let events = read(log(&w.b), topic.clone(), start, 100).await;
    let cursors: Vec<Cursor> = events.iter().map(|e| e.cursor).collect();
    assert_eq!(cursors, published, "events come back in publish order");
    for (i, event) in events.iter().enumerate() {
        assert_eq!(text(event), i.to_string());
    }
    assert_eq!(cursors.iter().collect::<HashSet<_>>().len(), 100);
    assert_eq!(w.b.position(&topic).await.unwrap(), published[99]);
    // A log, not a queue: reading again gives the same events.
    let again = read(log(&w.a), topic.clone(), start, 100).await;
    assert_eq!(again, events);
    let middle =
        w.b.poll(&topic, published[49], Duration::ZERO)
            .await
            .unwrap();
    assert_eq!(middle, events[50..]);
}

pub(crate) async fn batches(make: Factory) {
    let Some(w) = make(config().max_batch(7)).await else {
        return;
    };
    let topic = Namespace::new("t").topic("batches");
    let start = w.a.position(&topic).await.unwrap();
    for i in 0..20 {
        w.a.publish(&topic, payload(i.to_string())).await.unwrap();
    }
    let mut after = start;
    let mut sizes = Vec::new();
    loop {
        let batch = w.b.poll(&topic, after, Duration::ZERO).await.unwrap();
        let Some(last) = batch.last() else { break };
        after = last.cursor;
        sizes.push(batch.len());
    }
    assert_eq!(sizes, [7, 7, 6]);
}

pub(crate) async fn answer_published_before_the_first_poll_is_delivered(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let ns = Namespace::new("t");
    // The answer arrives on another worker before the asker polls at all.
    let topic = ns.topic("ask/1");
    let asked = w.b.position(&topic).await.unwrap();
    let answer = w.a.publish(&topic, payload("yes")).await.unwrap();
    let got = w.b.poll(&topic, asked, Duration::ZERO).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].cursor, text(&got[0])), (answer, "yes"));

    // The asker is already waiting when the answer arrives.
    let topic = ns.topic("ask/2");
    let asked = w.b.position(&topic).await.unwrap();
    let waiter = tokio::spawn({
        let (log, topic) = (log(&w.b), topic.clone());
        async move { log.poll(&topic, asked, SOON).await }
    });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let answer = w.a.publish(&topic, payload("no")).await.unwrap();
    let got = waiter.await.unwrap().unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].cursor, text(&got[0])), (answer, "no"));
}

pub(crate) async fn concurrent_publishers(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let topic = Namespace::new("t").topic("concurrent");
    let start = w.a.position(&topic).await.unwrap();
    let reader = tokio::spawn(read(log(&w.b), topic.clone(), start, 200));
    let publishers: Vec<_> = (0..4)
        .map(|p| {
            let log = if p % 2 == 0 { log(&w.a) } else { log(&w.b) };
            let topic = topic.clone();
            tokio::spawn(async move {
                let mut cursors = Vec::new();
                for i in 0..50 {
                    cursors.push(
                        log.publish(&topic, payload(format!("{p}:{i}")))
                            .await
                            .unwrap(),
                    );
                }
                cursors
            })
        })
        .collect();
    let mut acknowledged = HashSet::new();
    for publisher in publishers {
        acknowledged.extend(publisher.await.unwrap());
    }
    let events = reader.await.unwrap();
    let delivered: HashSet<Cursor> = events.iter().map(|e| e.cursor).collect();
    assert_eq!(acknowledged.len(), 200, "every publish got its own cursor");
    assert_eq!(
        delivered, acknowledged,
        "every acknowledged event is delivered once"
    );
    let mut next_of = [0; 4];
    for event in &events {
        let (p, i) = text(event).split_once(':').unwrap();
        let (p, i): (usize, i32) = (p.parse().unwrap(), i.parse().unwrap());
        assert_eq!(i, next_of[p], "publisher {p} is read in its own order");
        next_of[p] += 1;
    }
    // Another reader sees the same total order.
    assert_eq!(read(log(&w.a), topic, start, 200).await, events);
}

pub(crate) async fn several_readers_each_keep_their_place(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let topic = Namespace::new("t").topic("readers");
    let start = w.a.position(&topic).await.unwrap();
    let mut first = Subscription::start(log(&w.a), topic.clone(), None)
        .await
        .unwrap()
        .poll_timeout(Duration::from_secs(1));
    let mut second = Subscription::start(log(&w.b), topic.clone(), Some(start))
        .await
        .unwrap();
    assert_eq!(first.cursor(), start);
    for i in 0..20 {
        w.a.publish(&topic, payload(i.to_string())).await.unwrap();
    }
    let mut seen = Vec::new();
    for i in 0..20 {
        let (one, two) = (next(&mut first).await, next(&mut second).await);
        assert_eq!((text(&one), text(&two)), (&*i.to_string(), &*i.to_string()));
        assert_eq!(one.cursor, two.cursor);
        seen.push(one);
    }
    assert_eq!(first.cursor(), seen[19].cursor);
    // Reading consumed nothing.
    assert_eq!(read(log(&w.b), topic.clone(), start, 20).await, seen);

    // A new subscription from a kept place gets only what came after it.
    let late = w.b.publish(&topic, payload("late")).await.unwrap();
    let mut resumed = Subscription::start(log(&w.b), topic.clone(), Some(first.cursor()))
        .await
        .unwrap();
    let event = next(&mut resumed).await;
    assert_eq!((event.cursor, text(&event)), (late, "late"));
    assert_eq!(next(&mut first).await.cursor, late);
}

pub(crate) async fn delete_forgets_the_topic(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let topic = Namespace::new("t").topic("delete");
    let mut last = w.a.position(&topic).await.unwrap();
    for i in 0..2 {
        last = w.a.publish(&topic, payload(i.to_string())).await.unwrap();
    }
    EventLog::delete(&*w.a, &topic).await.unwrap();
    let start = w.b.position(&topic).await.unwrap();
    assert!(
        w.b.poll(&topic, start, Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        w.b.poll(&topic, last, Duration::ZERO).await,
        Err(LogError::UnknownCursor { cursor }) if cursor == last
    ));
    let again = w.a.publish(&topic, payload("again")).await.unwrap();
    let events = w.b.poll(&topic, start, Duration::ZERO).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!((events[0].cursor, text(&events[0])), (again, "again"));
    // Deleting twice, or a topic that never existed, is fine.
    EventLog::delete(&*w.b, &topic).await.unwrap();
    EventLog::delete(&*w.b, &topic).await.unwrap();
    EventLog::delete(&*w.b, &Namespace::new("t").topic("never"))
        .await
        .unwrap();
}

pub(crate) async fn publish_existing_never_creates_a_topic(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let topic = Namespace::new("t").topic("existing");
    // Nobody opened it: nothing is stored, and the topic still reads as never published.
    assert_eq!(
        w.a.publish_existing(&topic, payload("stray"))
            .await
            .unwrap(),
        None
    );
    let start = w.b.position(&topic).await.unwrap();
    assert!(
        w.b.poll(&topic, start, Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
    // Waiting on it does not open it either.
    assert!(
        w.b.poll(&topic, start, Duration::from_millis(1))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        w.a.publish_existing(&topic, payload("stray"))
            .await
            .unwrap(),
        None
    );
    // Opened by a publish on one worker, a reply through the other lands after the marker.
    let marker = w.b.publish(&topic, payload("asked")).await.unwrap();
    let reply =
        w.a.publish_existing(&topic, payload("reply"))
            .await
            .unwrap();
    let events = w.b.poll(&topic, marker, SOON).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!((Some(events[0].cursor), text(&events[0])), (reply, "reply"));
    // Deleted: closed again.
    EventLog::delete(&*w.b, &topic).await.unwrap();
    assert_eq!(
        w.a.publish_existing(&topic, payload("late")).await.unwrap(),
        None
    );
    // A hub that shares nothing never sees the topic.
    let _ = w.b.publish(&topic, payload("again")).await.unwrap();
    assert_eq!(
        w.unrelated
            .publish_existing(&topic, payload("x"))
            .await
            .unwrap(),
        None
    );
}

pub(crate) async fn timeouts_are_honoured(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let topic = Namespace::new("t").topic("timeouts");
    let start = w.a.position(&topic).await.unwrap();
    for wait in [Duration::from_millis(300), Duration::from_millis(800)] {
        let began = Instant::now();
        assert!(w.a.poll(&topic, start, wait).await.unwrap().is_empty());
        let took = began.elapsed();
        assert!(took >= wait, "returned after {took:?}, before its {wait:?}");
        assert!(
            took < wait + Duration::from_secs(3),
            "took {took:?} for {wait:?}"
        );
    }
    let began = Instant::now();
    assert!(
        w.a.poll(&topic, start, Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(began.elapsed() < Duration::from_secs(3));

    // A waiting poll returns as soon as an event arrives, long before its timeout.
    let began = Instant::now();
    let waiter = tokio::spawn({
        let (log, topic) = (log(&w.b), topic.clone());
        async move { log.poll(&topic, start, Duration::from_secs(60)).await }
    });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    w.a.publish(&topic, payload("wake")).await.unwrap();
    assert_eq!(waiter.await.unwrap().unwrap().len(), 1);
    assert!(began.elapsed() < SOON);
}

pub(crate) async fn compare_and_set_detects_conflicts(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let ns = Namespace::new("t");
    let key = ns.key("cas");
    assert_eq!(w.a.create(&key, payload("one"), TTL).await.unwrap(), 1);
    assert!(matches!(
        w.b.create(&key, payload("other"), TTL).await,
        Err(StoreError::AlreadyExists)
    ));
    assert_eq!(
        w.b.get(&key).await.unwrap(),
        Some(Record {
            value: payload("one"),
            version: 1
        })
    );
    assert_eq!(w.b.save(&key, payload("two"), 1, TTL).await.unwrap(), 2);
    assert!(matches!(
        w.a.save(&key, payload("stale"), 1, TTL).await,
        Err(StoreError::VersionConflict {
            expected: 1,
            actual: 2
        })
    ));
    assert_eq!(w.a.get(&key).await.unwrap().unwrap().value, payload("two"));

    // Of concurrent saves naming the same version, exactly one wins.
    let savers: Vec<_> = (0..8)
        .map(|i| {
            let store = if i % 2 == 0 {
                Arc::clone(&w.a)
            } else {
                Arc::clone(&w.b)
            };
            let key = key.clone();
            tokio::spawn(async move {
                store
                    .save(&key, payload(format!("racer {i}")), 2, TTL)
                    .await
            })
        })
        .collect();
    let mut winners = 0;
    for saver in savers {
        match saver.await.unwrap() {
            Ok(version) => {
                assert_eq!(version, 3);
                winners += 1;
            }
            Err(StoreError::VersionConflict {
                expected: 2,
                actual: 3,
            }) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(winners, 1);
    assert!(text_of(&w.a.get(&key).await.unwrap().unwrap()).starts_with("racer "));

    // Of concurrent creates of one key, exactly one wins.
    let fresh = ns.key("fresh");
    let creators: Vec<_> = (0..8)
        .map(|i| {
            let store = if i % 2 == 0 {
                Arc::clone(&w.a)
            } else {
                Arc::clone(&w.b)
            };
            let fresh = fresh.clone();
            tokio::spawn(async move { store.create(&fresh, payload(i.to_string()), TTL).await })
        })
        .collect();
    let mut created = 0;
    for creator in creators {
        match creator.await.unwrap() {
            Ok(1) => created += 1,
            Err(StoreError::AlreadyExists) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(created, 1);

    let missing = ns.key("missing");
    assert!(matches!(
        w.a.save(&missing, payload("x"), 1, TTL).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        w.a.touch(&missing, TTL).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(w.a.get(&missing).await.unwrap(), None);
    assert!(StateStore::delete(&*w.a, &key).await.unwrap());
    assert!(!StateStore::delete(&*w.b, &key).await.unwrap());
    assert_eq!(w.b.get(&key).await.unwrap(), None);
    assert!(matches!(
        w.a.save(&key, payload("back"), 3, TTL).await,
        Err(StoreError::NotFound)
    ));
}

fn text_of(record: &Record) -> &str {
    std::str::from_utf8(&record.value).unwrap()
}

pub(crate) async fn ttl_expiry(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let ns = Namespace::new("t");
    let short = Duration::from_secs(1);
    let (lapsed, touched, saved) = (ns.key("lapsed"), ns.key("touched"), ns.key("saved"));
    for key in [&lapsed, &touched, &saved] {
        w.a.create(key, payload("v"), short).await.unwrap();
    }
    // These sleeps measure expiry; they synchronise nothing.
    tokio::time::sleep(Duration::from_millis(600)).await;
    w.b.touch(&touched, Duration::from_secs(3)).await.unwrap();
    assert_eq!(
        w.b.save(&saved, payload("w"), 1, Duration::from_secs(3))
            .await
            .unwrap(),
        2
    );
    tokio::time::sleep(Duration::from_millis(900)).await;

    assert_eq!(
        w.b.get(&lapsed).await.unwrap(),
        None,
        "expired records are gone"
    );
    assert!(matches!(
        w.a.save(&lapsed, payload("x"), 1, short).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        w.a.touch(&lapsed, short).await,
        Err(StoreError::NotFound)
    ));
    assert!(!StateStore::delete(&*w.a, &lapsed).await.unwrap());
    assert_eq!(
        w.a.create(&lapsed, payload("new"), short).await.unwrap(),
        1,
        "an expired key can be created again"
    );
    assert_eq!(
        w.b.get(&lapsed).await.unwrap().unwrap().value,
        payload("new")
    );
    assert_eq!(
        w.a.get(&touched).await.unwrap().unwrap().version,
        1,
        "touch renewed the TTL"
    );
    assert_eq!(
        w.a.get(&saved).await.unwrap().unwrap().version,
        2,
        "save renewed the TTL"
    );
}

pub(crate) async fn namespaces_are_isolated(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let pairs = [
        (
            Namespace::new("tenant-a"),
            "shared",
            Namespace::new("tenant-b"),
            "shared",
        ),
        (Namespace::new("a:b"), "c", Namespace::new("a"), "b:c"),
        (Namespace::new("%3A"), "x", Namespace::new(":"), "x"),
    ];
    for (mine, my_name, theirs, their_name) in pairs {
        let (my_topic, their_topic) = (mine.topic(my_name), theirs.topic(their_name));
        let their_start = w.b.position(&their_topic).await.unwrap();
        let secret = w.a.publish(&my_topic, payload("secret")).await.unwrap();
        assert!(
            w.b.poll(&their_topic, their_start, Duration::ZERO)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(w.b.position(&their_topic).await.unwrap(), their_start);
        assert!(matches!(
            w.b.poll(&their_topic, secret, Duration::ZERO).await,
            Err(LogError::UnknownCursor { .. })
        ));

        let (my_key, their_key) = (mine.key(my_name), theirs.key(their_name));
        w.a.create(&my_key, payload("mine"), TTL).await.unwrap();
        assert_eq!(w.b.get(&their_key).await.unwrap(), None);
        assert_eq!(
            w.b.create(&their_key, payload("theirs"), TTL)
                .await
                .unwrap(),
            1
        );
        assert_eq!(
            w.a.get(&my_key).await.unwrap().unwrap().value,
            payload("mine")
        );
    }
}

pub(crate) async fn one_mebibyte_messages_and_records(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let big: Bytes = (0..1usize << 20)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    let topic = Namespace::new("t").topic("big");
    let start = w.a.position(&topic).await.unwrap();
    let mut cursors = Vec::new();
    for _ in 0..3 {
        cursors.push(w.a.publish(&topic, big.clone()).await.unwrap());
    }
    let events = read(log(&w.b), topic, start, 3).await;
    for (event, cursor) in events.iter().zip(&cursors) {
        assert_eq!(event.cursor, *cursor);
        assert!(event.payload == big, "a 1 MiB message comes back intact");
    }
    let key = Namespace::new("t").key("big");
    w.a.create(&key, big.clone(), TTL).await.unwrap();
    assert!(w.b.get(&key).await.unwrap().unwrap().value == big);
    let bigger: Bytes = [&big[..], &big[..]].concat().into();
    assert_eq!(w.b.save(&key, bigger.clone(), 1, TTL).await.unwrap(), 2);
    assert!(w.a.get(&key).await.unwrap().unwrap().value == bigger);
}

pub(crate) async fn unknown_cursors_are_an_explicit_error(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let ns = Namespace::new("t");
    let topic = ns.topic("unknown");
    let ours = w.a.publish(&topic, payload("ours")).await.unwrap();
    let mut foreign = ours;
    for _ in 0..3 {
        foreign = w
            .unrelated
            .publish(&topic, payload("theirs"))
            .await
            .unwrap();
    }
    let beyond = past(ours);
    for (what, cursor) in [("foreign", foreign), ("past the end", beyond)] {
        for wait in [Duration::ZERO, Duration::from_secs(60)] {
            let began = Instant::now();
            let result = w.b.poll(&topic, cursor, wait).await;
            assert!(
                matches!(result, Err(LogError::UnknownCursor { cursor: c }) if c == cursor),
                "{what} cursor, wait {wait:?}: {result:?}"
            );
            assert!(
                began.elapsed() < SOON,
                "the error does not wait for the timeout"
            );
        }
    }
    // A cursor into a topic that was never published is not silently taken as its start.
    assert!(matches!(
        w.b.poll(&ns.topic("elsewhere"), ours, Duration::ZERO).await,
        Err(LogError::UnknownCursor { .. })
    ));
    assert!(matches!(
        Subscription::start(log(&w.b), topic.clone(), Some(beyond)).await,
        Err(LogError::UnknownCursor { .. })
    ));
    // The error is not sticky: the known cursor still reads.
    assert!(
        w.b.poll(&topic, ours, Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
}

pub(crate) async fn expired_cursors_are_an_explicit_error(make: Factory) {
    let retention = RetentionConfig::new()
        .max_events(10)
        .max_age(Some(Duration::from_secs(600)));
    let Some(w) = make(config().retention(retention)).await else {
        return;
    };
    let topic = Namespace::new("t").topic("expired");
    let start = w.a.position(&topic).await.unwrap();
    let first = w.a.publish(&topic, payload("0")).await.unwrap();
    let mut cursors = vec![first];
    for i in 1..=500 {
        cursors.push(w.a.publish(&topic, payload(i.to_string())).await.unwrap());
    }
    for (what, cursor) in [("start", start), ("first", first), ("early", cursors[100])] {
        let result = w.b.poll(&topic, cursor, Duration::ZERO).await;
        assert!(
            matches!(result, Err(LogError::CursorExpired { cursor: c }) if c == cursor),
            "{what}: {result:?}"
        );
    }
    assert!(matches!(
        Subscription::start(log(&w.b), topic.clone(), Some(first)).await,
        Err(LogError::CursorExpired { .. })
    ));
    // A cursor within retention still reads on, exactly.
    let recent =
        w.b.poll(&topic, cursors[495], Duration::ZERO)
            .await
            .unwrap();
    let texts: Vec<&str> = recent.iter().map(text).collect();
    assert_eq!(texts, ["496", "497", "498", "499", "500"]);
    assert_eq!(w.b.position(&topic).await.unwrap(), cursors[500]);
}

/// A caller may poll an operation once and then leave it alone for a while (a stream whose
/// consumer is busy elsewhere, a `select!` branch not taken yet): the other operations of the
/// same hub still complete. A backend that hands its one connection to waiters in turn, under a
/// lock the waiter must be polled to release, would stall here for good (the SQLite backend
/// did, with a POST stream that logged its events while the call it carried waited for an
/// answer).
pub(crate) async fn an_operation_left_unpolled_holds_up_no_other(make: Factory) {
    let Some(w) = make(config()).await else {
        return;
    };
    let ns = Namespace::new("t");
    let topic = ns.topic("unpolled");
    let key = ns.key("unpolled");
    let first = w.a.publish(&topic, payload("one")).await.unwrap();
    // Two operations of each kind, each polled once and then kept without being polled: fewer
    // than the connections of any backend's pool (a pooled backend lends each operation in
    // flight a connection of its own, so as many parked operations as connections would hold
    // the pool, by its documented bound).
    let mut parked: Vec<BoxFuture<'_, ()>> = Vec::new();
    for i in 0..2 {
        let (hub, topic, key) = (&w.a, &topic, &key);
        let other = ns.topic(&format!("other/{i}"));
        parked.push(Box::pin(async move {
            let _ = hub.poll(topic, first, Duration::ZERO).await;
        }));
        parked.push(Box::pin(async move {
            let _ = hub.get(key).await;
        }));
        parked.push(Box::pin(async move {
            let _ = hub.position(&other).await;
        }));
    }
    for future in &mut parked {
        let _ = futures::poll!(future.as_mut());
    }
    // Whatever those were given meanwhile, these complete without them being polled again.
    let done = tokio::time::timeout(SOON, async {
        let second = w.a.publish(&topic, payload("two")).await.unwrap();
        w.a.create(&key, payload("r"), TTL).await.unwrap();
        let got = w.a.poll(&topic, first, Duration::ZERO).await.unwrap();
        assert_eq!(got.last().map(|e| e.cursor), Some(second));
        assert!(w.a.get(&key).await.unwrap().is_some());
    })
    .await;
    assert!(
        done.is_ok(),
        "an operation stalled behind operations that were polled once and left"
    );
    drop(parked);
}
