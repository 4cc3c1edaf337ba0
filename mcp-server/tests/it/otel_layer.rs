//! The OTLP export layer on its own (issue 49): what a `tracing` span becomes in the
//! collector (name, kind, attributes, parent, events, status), the context `context_of`
//! reads from it, and the bounded queue in front of a collector that hangs.

#![cfg(feature = "otel")]

use std::time::Duration;

use mcp_server::otel::{OtlpConfig, context_of, export_filter};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;

use crate::otlp::Receiver;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_reach_the_collector_with_their_parents_attributes_and_events() {
    let receiver = Receiver::start().await;
    let (layer, guard) = OtlpConfig::new("layer-test")
        .endpoint(receiver.endpoint())
        .batch_delay(Duration::from_secs(60))
        .layer()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(layer.with_filter(export_filter()));
    let context = tracing::subscriber::with_default(subscriber, || {
        let outer = tracing::info_span!(
            "outer",
            otel.kind = "server",
            otel.name = %format_args!("custom {}", "name"),
            n = 3_i64,
            big = u64::MAX,
            ok = true,
            ratio = 0.5,
            later = tracing::field::Empty,
        );
        let context = context_of(&outer).expect("an exported span has a context");
        outer.in_scope(|| {
            let child = tracing::info_span!("child", text = "hello");
            child.in_scope(|| {
                tracing::info!(k = 1, "something happened");
                tracing::error!("it failed");
                // Below the filter: not an event of the span.
                tracing::debug!("not exported");
            });
        });
        outer.record("later", "recorded");
        // Not exported at all: below the filter, and no parent of anything.
        drop(tracing::debug_span!("quiet"));
        context
    });
    assert!(guard.flush(), "the export answered within its timeout");
    let spans = receiver.wait_for(2, |g| g.service == "layer-test").await;
    let outer = spans.iter().find(|g| g.name == "custom name").unwrap();
    let child = spans.iter().find(|g| g.name == "child").unwrap();
    assert_eq!(spans.len(), 2, "{spans:#?}");

    assert_eq!(outer.kind, 2);
    assert!(outer.parent_span_id.is_empty());
    assert_eq!(outer.trace_id, context.traceparent.trace_id());
    assert_eq!(outer.span_id, context.traceparent.parent_id());
    assert!(context.traceparent.sampled());
    for (key, value) in [
        ("n", "3"),
        ("big", "18446744073709551615"),
        ("ok", "true"),
        ("ratio", "0.5"),
        ("later", "recorded"),
    ] {
        assert_eq!(
            outer.attributes.get(key).map(String::as_str),
            Some(value),
            "{key}"
        );
    }
    assert!(
        !outer.attributes.keys().any(|k| k.starts_with("otel.")),
        "{outer:#?}"
    );
    assert_eq!(outer.status, 0);

    assert_eq!(child.kind, 1, "internal");
    assert_eq!(child.trace_id, outer.trace_id);
    assert_eq!(child.parent_span_id, outer.span_id);
    assert_eq!(child.attributes["text"], "hello");
    assert_eq!(child.events, ["something happened", "it failed"]);
    assert_eq!(child.status, 2, "an ERROR event fails its span");
    assert!(!child.instance.is_empty());
    assert_eq!((guard.dropped_spans(), guard.failed_exports()), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_collector_costs_the_queue_and_nothing_more() {
    let receiver = Receiver::start().await;
    receiver.hold.send_replace(true);
    let (layer, guard) = OtlpConfig::new("queue-test")
        .endpoint(receiver.endpoint())
        .max_queue(2)
        .max_batch(2)
        .batch_delay(Duration::from_secs(60))
        .export_timeout(Duration::from_millis(300))
        .layer()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(layer.with_filter(export_filter()));
    tracing::subscriber::with_default(subscriber, || {
        for i in 0..10 {
            drop(tracing::info_span!("one", i));
        }
    });
    // At most two spans in the export that hangs and two in the queue: the rest are dropped,
    // counted, and the spans' creators never waited.
    assert!(guard.dropped_spans() >= 6, "{}", guard.dropped_spans());
    receiver.hold.send_replace(false);
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_is_bounded_in_bytes_too() {
    let receiver = Receiver::start().await;
    // No batch fills and the delay is long: every span stays queued until the guard flushes.
    let (layer, guard) = OtlpConfig::new("bytes-test")
        .endpoint(receiver.endpoint())
        .max_queue(1000)
        .max_batch(1000)
        .max_queue_bytes(64 * 1024)
        .batch_delay(Duration::from_secs(60))
        .layer()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(layer.with_filter(export_filter()));
    let text = "x".repeat(16 * 1024);
    tracing::subscriber::with_default(subscriber, || {
        for _ in 0..20 {
            drop(tracing::info_span!("big", text = text.as_str()));
        }
    });
    // Each span holds 16 KiB of text: at most three fit in 64 KiB.
    assert!(guard.dropped_spans() >= 17, "{}", guard.dropped_spans());
    assert!(guard.flush());
    let kept = receiver
        .wait_for(1, |g| g.service == "bytes-test")
        .await
        .len();
    assert!((1..=3).contains(&kept), "{kept}");
}
