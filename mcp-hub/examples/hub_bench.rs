//! Publish-to-delivery latency and throughput of each hub backend, as a markdown table.
//!
//! ```text
//! cargo run -p everymcp-hub --example hub_bench --release [--features redis] [-- --quick]
//! ```
//!
//! Rows: the memory backend always; the Redis backend when built with `--features redis` and
//! the Redis at `MCP_REDIS_URL` (default `redis://127.0.0.1:6379`) answers. Columns:
//!
//! - delivery p50 / p99: from just before `publish` to the moment a reader already waiting in
//!   `poll` (on another task) has the event, one event at a time;
//! - delivered/s: four publishers and one reader on one topic, events per second until the
//!   reader has them all;
//! - publish, get, save: mean time of one operation from one task, back to back.
//!
//! Messages are 256 bytes. `--quick` takes fewer samples.

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcp_hub::{Cursor, EventLog, Hub, HubConfig, MemoryHub, Namespace, StateStore};
use tokio::sync::mpsc;
use tokio::time::Instant;

struct Sizes {
    latency_samples: usize,
    per_publisher: usize,
    op_samples: usize,
}

struct Row {
    backend: &'static str,
    p50: Duration,
    p99: Duration,
    delivered_per_second: f64,
    publish: Duration,
    get: Duration,
    save: Duration,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn Error>> {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let sizes = if quick {
        Sizes {
            latency_samples: 300,
            per_publisher: 500,
            op_samples: 2_000,
        }
    } else {
        Sizes {
            latency_samples: 3_000,
            per_publisher: 5_000,
            op_samples: 20_000,
        }
    };
    // Retention large enough that the throughput reader never falls out of it.
    let config = HubConfig::new().retention(mcp_hub::RetentionConfig::new().max_events(1_000_000));
    let mut rows = Vec::new();
    let memory: Arc<dyn Hub> = Arc::new(MemoryHub::new(config.clone()));
    rows.push(measure("memory", memory, &sizes).await?);
    #[cfg(feature = "redis")]
    if let Some(redis) = redis_hub(config).await {
        rows.push(measure("redis", redis, &sizes).await?);
    }

    println!(
        "| backend | delivery p50 | delivery p99 | delivered/s (4 publishers) | publish | get | save |"
    );
    println!("| --- | --: | --: | --: | --: | --: | --: |");
    for row in rows {
        println!(
            "| {} | {} | {} | {:.0} | {} | {} | {} |",
            row.backend,
            show(row.p50),
            show(row.p99),
            row.delivered_per_second,
            show(row.publish),
            show(row.get),
            show(row.save),
        );
    }
    Ok(())
}

#[cfg(feature = "redis")]
async fn redis_hub(config: HubConfig) -> Option<Arc<dyn Hub>> {
    let url = std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let prefix = format!("mcp-hub-bench:{}", std::process::id());
    let redis_config = mcp_hub::RedisConfig::new().hub(config).key_prefix(prefix);
    match mcp_hub::RedisHub::connect(&url, redis_config).await {
        Ok(hub) => Some(Arc::new(hub)),
        Err(err) => {
            eprintln!("hub_bench: skipping Redis at {url}: {err}");
            None
        }
    }
}

async fn measure(
    backend: &'static str,
    hub: Arc<dyn Hub>,
    sizes: &Sizes,
) -> Result<Row, Box<dyn Error>> {
    let message = Bytes::from(vec![b'x'; 256]);
    let ns = Namespace::new("bench");

    // Latency: one event at a time to a reader that is already waiting.
    let topic = ns.topic("latency");
    let start = hub.position(&topic).await?;
    let (arrived, mut arrivals) = mpsc::unbounded_channel::<Instant>();
    let reader = tokio::spawn({
        let (hub, topic, count) = (Arc::clone(&hub), topic.clone(), sizes.latency_samples);
        async move {
            let mut after = start;
            let mut seen = 0;
            while seen < count {
                let events = hub.poll(&topic, after, Duration::from_secs(10)).await?;
                let now = Instant::now();
                for event in events {
                    after = event.cursor;
                    seen += 1;
                    let _ = arrived.send(now);
                }
            }
            Ok::<_, mcp_hub::LogError>(())
        }
    });
    let mut latencies = Vec::with_capacity(sizes.latency_samples);
    for _ in 0..sizes.latency_samples {
        let began = Instant::now();
        hub.publish(&topic, message.clone()).await?;
        let at = arrivals.recv().await.ok_or("the reader stopped")?;
        latencies.push(at - began);
    }
    reader.await??;
    latencies.sort();
    let percentile = |p: usize| latencies[(latencies.len() * p / 100).min(latencies.len() - 1)];
    let (p50, p99) = (percentile(50), percentile(99));
    EventLog::delete(&*hub, &topic).await?;

    // Throughput: four publishers, one reader.
    let topic = ns.topic("throughput");
    let start = hub.position(&topic).await?;
    let total = 4 * sizes.per_publisher;
    let began = Instant::now();
    let reader = tokio::spawn({
        let (hub, topic) = (Arc::clone(&hub), topic.clone());
        async move {
            let mut after: Cursor = start;
            let mut seen = 0;
            while seen < total {
                let events = hub.poll(&topic, after, Duration::from_secs(10)).await?;
                if let Some(last) = events.last() {
                    after = last.cursor;
                }
                seen += events.len();
            }
            Ok::<_, mcp_hub::LogError>(())
        }
    });
    let publishers: Vec<_> = (0..4)
        .map(|_| {
            let (hub, topic, message) = (Arc::clone(&hub), topic.clone(), message.clone());
            let count = sizes.per_publisher;
            tokio::spawn(async move {
                for _ in 0..count {
                    hub.publish(&topic, message.clone()).await?;
                }
                Ok::<_, mcp_hub::LogError>(())
            })
        })
        .collect();
    for publisher in publishers {
        publisher.await??;
    }
    reader.await??;
    let delivered_per_second = total as f64 / began.elapsed().as_secs_f64();
    EventLog::delete(&*hub, &topic).await?;

    // Single operations, back to back.
    let topic = ns.topic("ops");
    let began = Instant::now();
    for _ in 0..sizes.op_samples {
        hub.publish(&topic, message.clone()).await?;
    }
    let publish = began.elapsed() / sizes.op_samples as u32;
    EventLog::delete(&*hub, &topic).await?;

    let key = ns.key("session");
    let ttl = Duration::from_secs(600);
    let mut version = hub.create(&key, message.clone(), ttl).await?;
    let began = Instant::now();
    for _ in 0..sizes.op_samples {
        hub.get(&key).await?.ok_or("the record vanished")?;
    }
    let get = began.elapsed() / sizes.op_samples as u32;
    let began = Instant::now();
    for _ in 0..sizes.op_samples {
        version = hub.save(&key, message.clone(), version, ttl).await?;
    }
    let save = began.elapsed() / sizes.op_samples as u32;
    StateStore::delete(&*hub, &key).await?;

    Ok(Row {
        backend,
        p50,
        p99,
        delivered_per_second,
        publish,
        get,
        save,
    })
}

fn show(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos < 10_000 {
        format!("{nanos} ns")
    } else if nanos < 10_000_000 {
        format!("{:.1} µs", nanos as f64 / 1e3)
    } else {
        format!("{:.1} ms", nanos as f64 / 1e6)
    }
}
