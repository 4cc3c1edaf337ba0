//! The export thread: finished spans wait in a bounded queue until a batch is full or the
//! batch delay passes, and are posted as OTLP/HTTP protobuf requests through the resource
//! server's bounded fetcher, on a one-thread runtime of the thread's own. A flush (asked by
//! the guard) sends what is queued within one export timeout.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;

use super::OtelError;
use super::encode::{self, Preamble};
use super::record::Record;
use crate::auth::fetch::Fetcher;

/// The longest answer read from the collector.
const MAX_ANSWER: usize = 64 * 1024;

/// The spans waiting for export and the thread's orders, behind one lock.
struct Waiting {
    /// Each span with its footprint, counted when it was queued.
    spans: VecDeque<(usize, Record)>,
    /// The spans' footprint, in bytes.
    bytes: usize,
    /// A flush asked by the guard, answered once what was queued before it is sent.
    flush: Option<Flush>,
}

/// A flush: send what is queued, answer on `done`, and stop when `stop`.
struct Flush {
    stop: bool,
    done: mpsc::Sender<()>,
}

/// What the layer and the thread share.
struct Shared {
    waiting: Mutex<Waiting>,
    /// Wakes the thread: a batch is full, or a flush was asked.
    wake: Condvar,
    max_queue: usize,
    max_queue_bytes: usize,
    max_batch: usize,
    losses: Losses,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        // A panic while the lock was held leaves nothing half-done: the state is plain data.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Counts of what the export lost.
#[derive(Debug, Default)]
pub(crate) struct Losses {
    /// Spans dropped because the queue was full.
    pub(crate) dropped: AtomicU64,
    /// Batches the collector did not take (an error, a timeout, a status other than 2xx).
    pub(crate) failed: AtomicU64,
}

/// The layer's side: where finished spans go.
#[derive(Clone)]
pub(crate) struct Queue(Arc<Shared>);

impl fmt::Debug for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue").finish_non_exhaustive()
    }
}

impl Queue {
    /// Queues `span`; a full queue (in spans or in bytes) drops it (counted). The thread is
    /// woken only when a batch is full: otherwise it wakes by itself once the batch delay
    /// has passed, so a span costs a lock and a push, not a wake-up.
    pub(crate) fn push(&self, span: Record) {
        let shared = &*self.0;
        let footprint = span.footprint();
        let mut waiting = shared.lock();
        if waiting.spans.len() >= shared.max_queue
            || waiting.bytes + footprint > shared.max_queue_bytes
        {
            drop(waiting);
            drop(span);
            shared.losses.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        waiting.bytes += footprint;
        waiting.spans.push_back((footprint, span));
        let full = waiting.spans.len() == shared.max_batch;
        drop(waiting);
        if full {
            shared.wake.notify_one();
        }
    }
}

/// The guard's side: flushes and stops the thread.
pub(crate) struct Control {
    shared: Arc<Shared>,
    timeout: Duration,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl fmt::Debug for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Control")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Control {
    /// Sends what is queued; waits at most the export timeout (and a second). `false` when
    /// the thread did not answer in time.
    pub(crate) fn flush(&self, stop: bool) -> bool {
        let (done, answered) = mpsc::channel();
        self.shared.lock().flush = Some(Flush { stop, done });
        self.shared.wake.notify_one();
        answered
            .recv_timeout(self.timeout + Duration::from_secs(1))
            .is_ok()
    }

    /// What the export lost.
    pub(crate) fn losses(&self) -> &Losses {
        &self.shared.losses
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        if self.flush(true)
            && let Some(thread) = self.thread.take()
        {
            let _ = thread.join();
        }
    }
}

/// The settings of one export thread.
pub(crate) struct Settings {
    pub(crate) endpoint: String,
    pub(crate) preamble: Preamble,
    pub(crate) max_queue: usize,
    pub(crate) max_queue_bytes: usize,
    pub(crate) max_batch: usize,
    pub(crate) delay: Duration,
    pub(crate) timeout: Duration,
}

/// Starts the export thread.
pub(crate) fn start(settings: Settings) -> Result<(Queue, Control), OtelError> {
    let uri: http::Uri = settings
        .endpoint
        .parse()
        .map_err(|e: http::uri::InvalidUri| OtelError::Endpoint(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| OtelError::Runtime(e.to_string()))?;
    let shared = Arc::new(Shared {
        waiting: Mutex::new(Waiting {
            spans: VecDeque::with_capacity(settings.max_queue),
            bytes: 0,
            flush: None,
        }),
        wake: Condvar::new(),
        max_queue: settings.max_queue,
        max_queue_bytes: settings.max_queue_bytes,
        max_batch: settings.max_batch,
        losses: Losses::default(),
    });
    let mut post = Post {
        fetcher: Fetcher::new(settings.timeout, MAX_ANSWER),
        runtime: super::ExportRuntime(Some(runtime)),
        uri,
        preamble: settings.preamble,
        timeout: settings.timeout,
    };
    let delay = settings.delay;
    let thread = {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("mcp-otlp-export".into())
            .spawn(move || run(&shared, &mut post, delay))
            .map_err(|e| OtelError::Runtime(e.to_string()))?
    };
    Ok((
        Queue(shared.clone()),
        Control {
            shared,
            timeout: settings.timeout,
            thread: Some(thread),
        },
    ))
}

/// The thread's loop: waits until a batch is full, a flush is asked or the batch delay has
/// passed since the last export, then takes one batch from the front of the queue (a flush:
/// everything queued) and posts it. While a collector hangs, the spans held are the queue's
/// and the one batch being sent.
fn run(shared: &Shared, post: &mut Post, delay: Duration) {
    let mut taken: Vec<Record> = Vec::with_capacity(shared.max_batch);
    let mut due = Instant::now() + delay;
    loop {
        let flush = {
            let mut waiting = shared.lock();
            while waiting.flush.is_none() && waiting.spans.len() < shared.max_batch {
                let left = due.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                waiting = shared
                    .wake
                    .wait_timeout(waiting, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            let flush = waiting.flush.take();
            let count = if flush.is_some() {
                waiting.spans.len()
            } else {
                waiting.spans.len().min(shared.max_batch)
            };
            let mut freed = 0;
            for (footprint, span) in waiting.spans.drain(..count) {
                freed += footprint;
                taken.push(span);
            }
            waiting.bytes = waiting.bytes.saturating_sub(freed);
            flush
        };
        let deadline = Instant::now() + post.timeout;
        for batch in taken.chunks(shared.max_batch) {
            if !post.send(batch, deadline) {
                shared.losses.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        taken.clear();
        due = Instant::now() + delay;
        if let Some(flush) = flush {
            let _ = flush.done.send(());
            if flush.stop {
                return;
            }
        }
    }
}

/// Posts batches.
struct Post {
    fetcher: Fetcher,
    runtime: super::ExportRuntime,
    uri: http::Uri,
    preamble: Preamble,
    timeout: Duration,
}

impl Post {
    /// Posts `batch` within `deadline`. `false` when the collector did not take it.
    fn send(&mut self, batch: &[Record], deadline: Instant) -> bool {
        let body = encode::request(&self.preamble, batch);
        let left = deadline.saturating_duration_since(Instant::now());
        let request = http::Request::post(self.uri.clone())
            .header(http::header::CONTENT_TYPE, "application/x-protobuf")
            .body(Full::new(Bytes::from(body)));
        let taken = match (request, &self.runtime.0) {
            (Ok(request), Some(runtime)) if !left.is_zero() => {
                let send = self.fetcher.send(request);
                match runtime.block_on(async { tokio::time::timeout(left, send).await }) {
                    Ok(Ok((status, _))) if status.is_success() => Ok(()),
                    Ok(Ok((status, _))) => Err(format!("the collector answered {status}")),
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(format!("no answer within {left:?}")),
                }
            }
            (Ok(_), Some(_)) => Err("the flush deadline passed".to_owned()),
            (Ok(_), None) => Err("the export runtime is gone".to_owned()),
            (Err(e), _) => Err(e.to_string()),
        };
        match taken {
            Ok(()) => true,
            Err(why) => {
                tracing::debug!(target: "mcp_server::otel", %why, "span export failed");
                false
            }
        }
    }
}
