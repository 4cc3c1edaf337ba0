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
use tracing::Instrument as _;

use futures::StreamExt as _;
use mcp_adapters::{AdapterSet, Failure};
use mcp_wire::ndjson::{NdjsonDecoder, NdjsonError};
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
    max_queued_lines: usize,
    shutdown_grace: Duration,
}

impl Default for StdioConfig {
    fn default() -> Self {
        Self {
            max_line: DEFAULT_MAX_LINE,
            max_in_flight: 128,
            max_queued_lines: 256,
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

    /// Sets how many outgoing lines (responses, notifications, questions) may wait for stdout
    /// (at least 1). Default is `256`.
    ///
    /// At the limit the calls that send wait for the client to read (their progress and log
    /// messages coalesce or drop by the rule of
    /// [`ServerBuilder::max_queued_messages`](crate::ServerBuilder::max_queued_messages); their
    /// results and questions are never dropped), and once calls wait the server stops reading
    /// stdin: a client that never reads its stdout costs this many lines, not what it sends.
    #[must_use]
    pub fn max_queued_lines(mut self, lines: usize) -> Self {
        self.max_queued_lines = lines.max(1);
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
///
/// When stdin or stdout is a pipe (as when a client spawns the server), it is read or written
/// as a non-blocking pipe on the runtime's reactor, without a thread hand-off per read or
/// write; its blocking mode is restored when the server stops. Anything else (a terminal, a
/// file) goes through tokio's blocking stdin and stdout.
pub async fn serve_stdio(server: Server) -> Result<(), StdioError> {
    serve_stdio_with(server, stdin(), stdout(), StdioConfig::default()).await
}

type BoxedReader = Box<dyn AsyncRead + Unpin + Send>;
type BoxedWriter = Box<dyn AsyncWrite + Unpin + Send>;

fn stdin() -> BoxedReader {
    #[cfg(unix)]
    if let Some(pipe) = pipes::stdin() {
        return Box::new(pipe);
    }
    Box::new(tokio::io::stdin())
}

fn stdout() -> BoxedWriter {
    #[cfg(unix)]
    if let Some(pipe) = pipes::stdout() {
        return Box::new(pipe);
    }
    Box::new(tokio::io::stdout())
}

/// stdin and stdout as non-blocking pipes registered with the runtime's reactor.
///
/// Tokio's `stdin()` and `stdout()` hand every read and write to a blocking thread and back,
/// which costs more than the message itself on a busy pipe. A pipe can be polled like a
/// socket instead. The file descriptors are duplicated, and `O_NONBLOCK` (which the duplicate
/// shares with the original) is cleared again when the pipe is dropped.
#[cfg(unix)]
mod pipes {
    use std::io;
    use std::os::fd::AsFd as _;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
    use tokio::net::unix::pipe;

    /// The read end of stdin's pipe; blocking again once dropped.
    pub(super) struct Stdin(Option<pipe::Receiver>);

    /// The write end of stdout's pipe; blocking again once dropped.
    pub(super) struct Stdout(Option<pipe::Sender>);

    /// stdin as a pipe, or `None` when it is not one.
    pub(super) fn stdin() -> Option<Stdin> {
        let fd = io::stdin().as_fd().try_clone_to_owned().ok()?;
        pipe::Receiver::from_owned_fd(fd)
            .ok()
            .map(|r| Stdin(Some(r)))
    }

    /// stdout as a pipe, or `None` when it is not one.
    pub(super) fn stdout() -> Option<Stdout> {
        let fd = io::stdout().as_fd().try_clone_to_owned().ok()?;
        pipe::Sender::from_owned_fd(fd)
            .ok()
            .map(|s| Stdout(Some(s)))
    }

    fn gone() -> io::Error {
        io::Error::other("stdio pipe already released")
    }

    impl AsyncRead for Stdin {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            match self.0.as_mut() {
                Some(pipe) => Pin::new(pipe).poll_read(cx, buf),
                None => Poll::Ready(Err(gone())),
            }
        }
    }

    impl AsyncWrite for Stdout {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            match self.0.as_mut() {
                Some(pipe) => Pin::new(pipe).poll_write(cx, buf),
                None => Poll::Ready(Err(gone())),
            }
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            match self.0.as_mut() {
                Some(pipe) => Pin::new(pipe).poll_flush(cx),
                None => Poll::Ready(Ok(())),
            }
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            match self.0.as_mut() {
                Some(pipe) => Pin::new(pipe).poll_shutdown(cx),
                None => Poll::Ready(Ok(())),
            }
        }
    }

    impl Drop for Stdin {
        fn drop(&mut self) {
            if let Some(pipe) = self.0.take() {
                // Whoever reads this pipe after us expects a blocking descriptor.
                let _ = pipe.into_blocking_fd();
            }
        }
    }

    impl Drop for Stdout {
        fn drop(&mut self) {
            if let Some(pipe) = self.0.take() {
                let _ = pipe.into_blocking_fd();
            }
        }
    }
}

/// Whether a message must be handled before the next line is read: messages that change the
/// connection, and replies, batches and garbage (quick: handled in order too).
fn in_order(line: &[u8]) -> bool {
    mcp_wire::jsonrpc::peek_method(line)
        .is_none_or(|method| mcp_adapters::changes_connection(&method))
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
    tracing::info!(
        max_in_flight = config.max_in_flight,
        "MCP server serving stdio"
    );
    // The connection's span, parent of its calls' (disabled unless a subscriber wants DEBUG).
    let span = tracing::debug_span!("mcp.connection", transport = "stdio");
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(config.max_queued_lines);
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
        let mut call = Box::pin(
            async move {
                forward.await;
                drop(permit);
            }
            .instrument(span.clone()),
        );
        // A call whose handler does not wait is done at its first poll: run that here, without
        // a task of its own. One that waits becomes a task, which the runtime polls again with
        // its own waker (the no-op one used here is never woken).
        let mut first = std::task::Context::from_waker(std::task::Waker::noop());
        if call.as_mut().poll(&mut first).is_pending() {
            calls.spawn(call);
        }
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
                    let _ = out_tx
                        .send(Outgoing::Response(adapter.encode_failure(None, &failure)).to_bytes())
                        .await;
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
async fn forward(mut reply: crate::dispatch::Reply, out: mpsc::Sender<Vec<u8>>) {
    while let Some(message) = reply.next().await {
        if out.send(message.into_bytes()).await.is_err() {
            break;
        }
    }
}

/// Lines queued behind the first are added to one write up to this many bytes.
const WRITE_BATCH: usize = 64 * 1024;

/// Writes each message as one line, one write per batch of queued messages, flushed.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut lines: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(4096);
    while let Some(line) = lines.recv().await {
        // Everything already queued goes out in one write.
        out.clear();
        out.extend_from_slice(&line);
        out.push(b'\n');
        while out.len() < WRITE_BATCH
            && let Ok(line) = lines.try_recv()
        {
            out.extend_from_slice(&line);
            out.push(b'\n');
        }
        writer.write_all(&out).await?;
        writer.flush().await?;
        if out.capacity() > 4 * WRITE_BATCH {
            out = Vec::with_capacity(4096);
        }
    }
    writer.shutdown().await.or(Ok(()))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn connection_changes_replies_and_garbage_are_handled_in_order() {
        let in_order_lines: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
            br#" { "id" : "a\"b" , "method" : "server/discover" } "#,
            br#"{"id":1,"method":"logging/setLevel","params":{"level":"info"}}"#,
            br#"{"jsonrpc":"2.0","id":2,"result":{"method":"tools/call"}}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]"#,
            b"42",
        ];
        for line in in_order_lines {
            assert!(in_order(line), "{}", String::from_utf8_lossy(line));
        }
        let concurrent: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"params":{"method":"initialize"},"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools\/call"}"#,
        ];
        for line in concurrent {
            assert!(!in_order(line), "{}", String::from_utf8_lossy(line));
        }
    }

    proptest! {
        #[test]
        fn in_order_never_panics(line in proptest::collection::vec(any::<u8>(), 0..120)) {
            let _ = in_order(&line);
        }
    }
}
