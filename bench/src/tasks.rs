//! The task probe behind `mcp-load --tasks`: tasks created and completed per second through
//! the server's task store (the Tasks extension, `io.modelcontextprotocol/tasks`).
//!
//! On 2026-07-28 over Streamable HTTP (no session; the extension declared in each request's
//! `_meta`), each of [`LoadConfig::concurrency`] workers, on its own keep-alive connection,
//! loops:
//!
//! 1. `tools/call add_task {a: 2, b: 3}`: the tool requires a task, so the reply is a
//!    `CreateTaskResult` (`resultType: "task"`, a `taskId`), sent once the task is stored;
//! 2. `tasks/get` with that id (`Mcp-Name: <taskId>`), again at once until the task is
//!    `completed`, whose `result` must hold the sum 5.
//!
//! A task counts when it completes during the measured time; its latency is from the
//! `tools/call` being sent to the `completed` read. Any other status, a reply that does not
//! parse or a wrong sum is an error.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{
    HeaderValue, Method, Request, StatusCode,
    header::{ACCEPT, CONTENT_TYPE, HOST},
};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use mcp_wire::sse::SseDecoder;
use serde::Serialize;
use serde_json::{Value, json};

use crate::{
    Revision,
    load::{self, CallError, LoadConfig, LoadError, MEASURE, REOPEN_BACKOFF, STOP, Stats, Target},
};

/// The tool `mcp-bench-server` offers for this probe: `add` as a task (task support required).
pub const TASK_TOOL: &str = "add_task";
/// The extension's identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The result of [`run`], printed by `mcp-load --tasks` as one JSON line.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TasksReport {
    /// The target URL.
    pub url: String,
    /// The revision spoken (2026-07-28).
    pub revision: &'static str,
    /// Workers, each with its own connection.
    pub concurrency: usize,
    /// Tasks created and read back completed, with the right sum, during the measured time.
    pub tasks: u64,
    /// `tasks` per second of measured time.
    pub tasks_per_s: f64,
    /// `tasks/get` requests per completed task (1 when the first read finds it completed).
    pub gets_per_task: f64,
    /// Median create-to-completed latency, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile create-to-completed latency, in milliseconds.
    pub p99_ms: f64,
    /// Failed tasks, warm-up included.
    pub errors: u64,
    /// The first error seen, if any.
    pub first_error: Option<String>,
}

/// Runs the probe for [`LoadConfig::warmup`] plus [`LoadConfig::duration`].
///
/// Must be called inside a tokio runtime with the time and IO drivers enabled.
pub async fn run(config: &LoadConfig) -> Result<TasksReport, LoadError> {
    let target = Arc::new(Target::of(&config.url, config)?);
    let phase = Arc::new(AtomicU8::new(load::WARMUP));
    let workers: Vec<_> = (0..config.concurrency.max(1))
        .map(|worker| {
            let (target, phase, timeout) = (target.clone(), phase.clone(), config.timeout);
            tokio::spawn(work(target, phase, timeout, worker))
        })
        .collect();
    let measured = load::timeline(config, &phase).await;
    let mut total = Stats::new();
    let mut gets = 0;
    for worker in workers {
        match worker.await {
            Ok((stats, worker_gets)) => {
                total.merge(stats);
                gets += worker_gets;
            }
            Err(join) => total.error(format!("worker failed: {join}")),
        }
    }
    let ms = |q: f64| total.latency.quantile(q) as f64 / 1e6;
    let tasks = total.calls;
    Ok(TasksReport {
        url: config.url.clone(),
        revision: Revision::V2026_07_28.as_str(),
        concurrency: config.concurrency.max(1),
        tasks,
        tasks_per_s: tasks as f64 / measured.as_secs_f64().max(f64::EPSILON),
        gets_per_task: if tasks == 0 {
            0.0
        } else {
            gets as f64 / tasks as f64
        },
        p50_ms: ms(0.50),
        p99_ms: ms(0.99),
        errors: total.errors,
        first_error: total.first_error,
    })
}

/// One worker's loop; returns its counts and the `tasks/get` requests of its counted tasks.
async fn work(
    target: Arc<Target>,
    phase: Arc<AtomicU8>,
    timeout: Duration,
    worker: usize,
) -> (Stats, u64) {
    let mut stats = Stats::new();
    let mut gets = 0;
    let mut probe: Option<Probe> = None;
    // Distinct ids per worker, for reading logs.
    let mut next_id = (worker as u64) << 32;
    while phase.load(Ordering::Relaxed) != STOP {
        let started = Instant::now();
        let outcome = tokio::time::timeout(timeout, async {
            if probe.is_none() {
                probe = Some(Probe {
                    sender: target.connect().await?,
                    target: target.clone(),
                    decoder: SseDecoder::new(),
                });
            }
            match &mut probe {
                Some(p) => p.task(&mut next_id).await,
                None => Err(CallError::StreamEnded),
            }
        })
        .await
        .unwrap_or(Err(CallError::Timeout));
        match outcome {
            Ok(task_gets) => {
                if phase.load(Ordering::Relaxed) == MEASURE {
                    stats
                        .latency
                        .record(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
                    stats.calls += 1;
                    gets += task_gets;
                }
            }
            Err(error) => {
                stats.error(error.to_string());
                probe = None;
                if stats.errors > 100 {
                    break;
                }
                // Not a retry storm against a server that refuses.
                tokio::time::sleep(REOPEN_BACKOFF).await;
            }
        }
    }
    (stats, gets)
}

/// A worker's connection.
struct Probe {
    sender: SendRequest<Full<Bytes>>,
    target: Arc<Target>,
    decoder: SseDecoder,
}

impl Probe {
    /// One task: created, then read until completed; returns the `tasks/get` count.
    async fn task(&mut self, next_id: &mut u64) -> Result<u64, CallError> {
        let created = self
            .request(
                next_id,
                "tools/call",
                TASK_TOOL,
                json!({"name": TASK_TOOL, "arguments": {"a": 2, "b": 3}}),
            )
            .await?;
        if created["resultType"] != "task" {
            return Err(malformed(&format!("not a CreateTaskResult: {created}")));
        }
        let Some(id) = created["taskId"].as_str().map(str::to_owned) else {
            return Err(malformed(&format!("no taskId: {created}")));
        };
        let mut gets = 0;
        loop {
            gets += 1;
            let task = self
                .request(next_id, "tasks/get", &id, json!({"taskId": id}))
                .await?;
            match task["status"].as_str() {
                Some("working") => {}
                Some("completed") => {
                    let sum = &task["result"]["structuredContent"]["sum"];
                    if sum != 5 {
                        return Err(malformed(&format!("wrong result: {task}")));
                    }
                    return Ok(gets);
                }
                _ => return Err(malformed(&format!("unexpected task: {task}"))),
            }
        }
    }

    /// A 2026-07-28 request declaring the extension; its result.
    async fn request(
        &mut self,
        next_id: &mut u64,
        method: &'static str,
        name: &str,
        mut params: Value,
    ) -> Result<Value, CallError> {
        let id = *next_id;
        *next_id += 1;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": Revision::V2026_07_28.as_str(),
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
        });
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = Request::new(Full::new(Bytes::from(body.to_string())));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.target.path.clone();
        let headers = request.headers_mut();
        headers.insert(HOST, self.target.host.clone());
        self.target.add_extra(headers);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static(Revision::V2026_07_28.as_str()),
        );
        headers.insert("mcp-method", HeaderValue::from_static(method));
        headers.insert(
            "mcp-name",
            HeaderValue::from_str(name).map_err(|_| malformed("a name unfit for a header"))?,
        );
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        if response.status() != StatusCode::OK {
            return Err(CallError::Status(response.status()));
        }
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let bytes = response.into_body().collect().await?.to_bytes();
        let text = if is_stream {
            self.decoder.reset_stream();
            self.decoder.push(&bytes);
            let mut last = None;
            for event in &mut self.decoder {
                let event = event.map_err(|_| malformed("oversized SSE event"))?;
                if !event.data().is_empty() {
                    last = Some(event.data().to_owned());
                }
            }
            last.ok_or(CallError::StreamEnded)?
        } else {
            String::from_utf8(bytes.to_vec()).map_err(|_| malformed("a body that is not UTF-8"))?
        };
        let mut message: Value =
            serde_json::from_str(&text).map_err(|e| malformed(&e.to_string()))?;
        if message["id"] != id {
            return Err(malformed(&format!("a reply to another request: {message}")));
        }
        match message.get_mut("result") {
            Some(result) => Ok(result.take()),
            None => Err(malformed(&format!("{method} failed: {message}"))),
        }
    }
}

fn malformed(why: &str) -> CallError {
    CallError::Reply(crate::reply::ReplyError::Malformed(why.into()))
}
