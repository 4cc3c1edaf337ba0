//! The stdio transport: newline-delimited JSON on stdin and stdout.
//!
//! Logs belong on stderr; nothing but protocol messages is written to stdout. Requests run
//! concurrently, so a long call does not hold up the next one, and `notifications/cancelled`
//! reaches a call in flight. Messages that change the connection (`initialize`,
//! `server/discover`, `logging/setLevel`), notifications and replies are handled in order,
//! before the next line is read. A line over the limit is answered with an error and reading
//! goes on. After `initialize`, the connection also receives the notifications published with
//! the server's [`Notifier`](crate::Notifier): updates of the resources it subscribed to and
//! list changes. At end of input open `subscriptions/listen` streams end with their result,
//! and the server stops after the calls in flight finish; calls still running after
//! [`StdioConfig::shutdown_grace`] are cancelled.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use mcp_adapters::{AdapterSet, Failure};
use mcp_wire::ndjson::{NdjsonDecoder, NdjsonError};
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::dispatch::{Context, Outgoing};
use crate::error::StdioError;
use crate::server::Server;

/// The default longest line read from stdin: 4 MiB.
pub const DEFAULT_MAX_LINE: usize = 4 * 1024 * 1024;

/// Settings of the stdio transport.
#[derive(Clone, Debug)]
pub struct StdioConfig {
    max_line: usize,
    max_in_flight: usize,
    shutdown_grace: Duration,
}

impl Default for StdioConfig {
    fn default() -> Self {
        Self {
            max_line: DEFAULT_MAX_LINE,
            max_in_flight: 128,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

impl StdioConfig {
    /// Default settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the longest line accepted, in bytes; a longer one is answered with an invalid
    /// request error (`id: null`) and skipped. Default is 4 MiB.
    #[must_use]
    pub fn max_line(mut self, bytes: usize) -> Self {
        self.max_line = bytes.max(1);
        self
    }

    /// Sets how many requests run at once (at least 1). As many more wait in a queue; beyond
    /// that the server stops reading stdin until a call finishes. Replies and notifications
    /// are never held back. Default is `128`.
    #[must_use]
    pub fn max_in_flight(mut self, calls: usize) -> Self {
        self.max_in_flight = calls.max(1);
        self
    }

    /// Sets how long calls in flight may go on after end of input before they are cancelled.
    /// Default is 10 s.
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }
}

/// Serves `server` on the process's stdin and stdout with default settings, until end of
/// input.
pub async fn serve_stdio(server: Server) -> Result<(), StdioError> {
    serve_stdio_with(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
        StdioConfig::default(),
    )
    .await
}

#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    method: Option<&'a str>,
}

/// Whether a message must be handled before the next line is read.
fn in_order(line: &[u8]) -> bool {
    match serde_json::from_slice::<Peek<'_>>(line) {
        Ok(Peek {
            method: Some(method),
        }) => {
            matches!(
                method,
                "initialize" | "server/discover" | "logging/setLevel"
            ) || method.starts_with("notifications/")
        }
        // Replies, batches and garbage are quick: handle them in order too.
        _ => true,
    }
}

/// Serves `server` on any reader and writer (a child's pipes, an in-memory duplex in tests).
pub async fn serve_stdio_with<R, W>(
    server: Server,
    mut reader: R,
    writer: W,
    config: StdioConfig,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let ctx = Context::connection();
    let (out_tx, out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer_task = tokio::spawn(write_lines(writer, out_rx));
    // Subscribed resource updates and list changes, as they are published (after `initialize`).
    let delivery = crate::notify::deliver_to_connection(&server, &ctx, out_tx.clone()).await;
    let mut decoder = NdjsonDecoder::new().with_max_line_length(config.max_line);
    let mut calls = JoinSet::new();
    let permits = Arc::new(Semaphore::new(config.max_in_flight));
    let mut waiting: VecDeque<Vec<u8>> = VecDeque::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut at_end = false;
    let start = |line: Vec<u8>, permit: OwnedSemaphorePermit, calls: &mut JoinSet<()>| {
        let forward = forward(server.handle(line, &ctx), out_tx.clone());
        calls.spawn(async move {
            forward.await;
            drop(permit);
        });
    };
    while !at_end {
        // Start the requests that waited for a free slot.
        while !waiting.is_empty() {
            let Ok(permit) = permits.clone().try_acquire_owned() else {
                break;
            };
            start(waiting.pop_front().unwrap_or_default(), permit, &mut calls);
        }
        // Reap finished calls so the set does not grow with the connection's age.
        while calls.try_join_next().is_some() {}
        if waiting.len() >= config.max_in_flight {
            // Too much queued: stop reading until a call finishes (backpressure on the pipe).
            let Ok(permit) = permits.clone().acquire_owned().await else {
                break;
            };
            start(waiting.pop_front().unwrap_or_default(), permit, &mut calls);
            continue;
        }
        let read = tokio::select! {
            read = reader.read(&mut buf) => read?,
            permit = permits.clone().acquire_owned(), if !waiting.is_empty() => {
                if let Ok(permit) = permit {
                    start(waiting.pop_front().unwrap_or_default(), permit, &mut calls);
                }
                continue;
            }
        };
        if read == 0 {
            decoder.finish();
            at_end = true;
        } else {
            decoder.push(&buf[..read]);
        }
        for line in decoder.by_ref() {
            match line {
                Err(NdjsonError::LineTooLong { length, limit }) => {
                    tracing::warn!(length, limit, "stdio line over the limit; skipped");
                    let adapter = ctx
                        .revision()
                        .map_or_else(|| AdapterSet::all().newest(), Into::into);
                    let failure = Failure::invalid_request(format!(
                        "message of {length}+ bytes exceeds the limit of {limit} bytes"
                    ));
                    let _ = out_tx.send(
                        Outgoing::Response(adapter.encode_failure(None, &failure)).to_bytes(),
                    );
                }
                Err(other) => tracing::warn!(%other, "stdio framing error"),
                Ok(line) if in_order(&line) => {
                    forward(server.handle(line, &ctx), out_tx.clone()).await
                }
                Ok(line) => waiting.push_back(line),
            }
        }
    }
    // Requests still queued at end of input run too.
    // The peer is leaving: listen streams end with their result, like any other call.
    ctx.close_listeners();
    while let Some(line) = waiting.pop_front() {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            break;
        };
        start(line, permit, &mut calls);
    }
    // End of input: let the calls in flight finish, then cancel what is left.
    let drain = async { while calls.join_next().await.is_some() {} };
    if tokio::time::timeout(config.shutdown_grace, drain)
        .await
        .is_err()
    {
        ctx.cancel_all();
        while calls.join_next().await.is_some() {}
    }
    if let Some(delivery) = delivery {
        delivery.abort();
        let _ = delivery.await;
    }
    drop(out_tx);
    match writer_task.await {
        Ok(result) => result.map_err(StdioError::Io),
        Err(join) => Err(StdioError::Io(std::io::Error::other(join.to_string()))),
    }
}

/// Sends what one message produces to the writer.
async fn forward(mut reply: crate::dispatch::Reply, out: mpsc::UnboundedSender<Vec<u8>>) {
    while let Some(message) = reply.next().await {
        if out.send(message.to_bytes()).is_err() {
            break;
        }
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) -> std::io::Result<()> {
    while let Some(mut line) = lines.recv().await {
        line.push(b'\n');
        writer.write_all(&line).await?;
        writer.flush().await?;
    }
    writer.shutdown().await.or(Ok(()))
}
