//! stdio: a child process, newline-delimited JSON on its stdin and stdout.

use std::ffi::OsStr;
use std::process::Stdio as StdStdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, Command};
use tokio::task::JoinHandle;

use super::{
    BoxFuture, Delivery, Inbound, MessageStream, Outbound, OutboundKind, Router, Transport,
    TransportError, TransportInfo,
};
use mcp_wire::ndjson::{NdjsonDecoder, NdjsonError};

/// What happens to the child's stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Stderr {
    /// Passed through to this process's stderr.
    #[default]
    Inherit,
    /// Captured; read it with [`Stdio::take_stderr`].
    Capture,
    /// Discarded.
    Null,
}

/// Builds a [`Stdio`] transport that spawns a child process.
#[derive(Debug)]
pub struct StdioBuilder {
    command: Command,
    stderr: Stderr,
    max_message_size: usize,
    max_queued: usize,
    max_queued_bytes: usize,
    close_grace: Duration,
}

impl StdioBuilder {
    /// Adds an argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.command.arg(arg);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.command.env(key, value);
        self
    }

    /// What happens to the child's stderr. Default is [`Stderr::Inherit`].
    pub fn stderr(mut self, stderr: Stderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// The longest line accepted from the child. Default is 16 MiB.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// How many messages that are not responses (notifications, the server's requests) wait at
    /// most for the client to take them. Default is 1,024 ([`super::DEFAULT_MAX_QUEUED`]).
    ///
    /// Past it (or past [`StdioBuilder::max_queued_bytes`]) such messages are dropped and counted
    /// ([`Stdio::dropped`]) while the child goes on being read, so a child that floods costs no
    /// more than this bound, during the handshake too. Responses to the client's requests are
    /// never dropped. See [`Router`] for the whole policy.
    pub fn max_queued(mut self, messages: usize) -> Self {
        self.max_queued = messages;
        self
    }

    /// How many bytes of messages (counted as their lines) wait at most for the client to take
    /// them. Default is 16 MiB ([`super::DEFAULT_MAX_QUEUED_BYTES`]). A single message larger
    /// than this still passes when nothing else waits.
    pub fn max_queued_bytes(mut self, bytes: usize) -> Self {
        self.max_queued_bytes = bytes;
        self
    }

    /// How long [`Transport::close`] waits for the child to exit after closing its stdin before
    /// killing it. Default is 2 seconds.
    pub fn close_grace(mut self, grace: Duration) -> Self {
        self.close_grace = grace;
        self
    }

    /// Spawns the child. It is killed when the transport is dropped.
    pub fn spawn(mut self) -> Result<Stdio, TransportError> {
        self.command
            .stdin(StdStdio::piped())
            .stdout(StdStdio::piped())
            .stderr(match self.stderr {
                Stderr::Inherit => StdStdio::inherit(),
                Stderr::Capture => StdStdio::piped(),
                Stderr::Null => StdStdio::null(),
            })
            .kill_on_drop(true);
        let mut child = self.command.spawn()?;
        let stdin = child.stdin.take().ok_or(TransportError::Closed)?;
        let stdout = child.stdout.take().ok_or(TransportError::Closed)?;
        let stderr = child.stderr.take();
        let router = Router::with_limits(self.max_queued, self.max_queued_bytes);
        let mut stdio = Stdio::with_router(stdout, stdin, self.max_message_size, router);
        let shared = Arc::get_mut(&mut stdio.shared).ok_or(TransportError::Closed)?;
        shared.child = Some(tokio::sync::Mutex::new(child));
        shared.stderr = Mutex::new(stderr);
        shared.close_grace = self.close_grace;
        Ok(stdio)
    }
}

type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// The stdio transport: one JSON-RPC message per line on a child's stdin and stdout.
///
/// [`Stdio::builder`] spawns a server; [`Stdio::from_pipes`] runs over any reader and writer
/// (an in-memory duplex in tests, a socket). Lines are written whole, one at a time, and read by
/// a background task that routes responses to the request waiting for them.
#[derive(Debug)]
pub struct Stdio {
    shared: Arc<Shared>,
}

struct Shared {
    writer: tokio::sync::Mutex<Option<Writer>>,
    router: Router,
    reader: JoinHandle<()>,
    child: Option<tokio::sync::Mutex<Child>>,
    stderr: Mutex<Option<ChildStderr>>,
    close_grace: Duration,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stdio")
            .field("router", &self.router)
            .finish_non_exhaustive()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Stdio {
    /// A builder that will spawn `program`.
    pub fn builder(program: impl AsRef<OsStr>) -> StdioBuilder {
        StdioBuilder {
            command: Command::new(program),
            stderr: Stderr::Inherit,
            max_message_size: super::streamable::DEFAULT_MAX_MESSAGE_SIZE,
            max_queued: super::DEFAULT_MAX_QUEUED,
            max_queued_bytes: super::DEFAULT_MAX_QUEUED_BYTES,
            close_grace: Duration::from_secs(2),
        }
    }

    /// A transport over an existing reader (the server's output) and writer (its input), with
    /// the default bounds of the incoming queue (see [`Router`]).
    pub fn from_pipes<R, W>(reader: R, writer: W, max_message_size: usize) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        Self::with_router(reader, writer, max_message_size, Router::new())
    }

    /// [`Stdio::from_pipes`] routing through `router` (made with the queue bounds wanted, see
    /// [`Router::with_limits`]).
    pub fn with_router<R, W>(reader: R, writer: W, max_message_size: usize, router: Router) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let reader = tokio::spawn(read_lines(
            reader,
            NdjsonDecoder::new().with_max_line_length(max_message_size),
            router.clone(),
        ));
        Self {
            shared: Arc::new(Shared {
                writer: tokio::sync::Mutex::new(Some(Box::new(writer))),
                router,
                reader,
                child: None,
                stderr: Mutex::new(None),
                close_grace: Duration::from_secs(2),
            }),
        }
    }

    /// How many notifications and requests from the server were dropped because the client did
    /// not take them fast enough (see [`StdioBuilder::max_queued`]).
    pub fn dropped(&self) -> u64 {
        self.shared.router.dropped()
    }

    /// The child's stderr, when it was spawned with [`Stderr::Capture`]. Returns `Some` once.
    pub fn take_stderr(&self) -> Option<ChildStderr> {
        self.shared
            .stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    async fn write(&self, message: Outbound) -> Result<Delivery, TransportError> {
        let pending = match &message.kind {
            OutboundKind::Request(id) => Some(self.shared.router.register(id.clone())),
            _ => None,
        };
        {
            let mut writer = self.shared.writer.lock().await;
            let writer = writer.as_mut().ok_or(TransportError::Closed)?;
            let mut line = Vec::with_capacity(message.body.len() + 1);
            line.extend_from_slice(&message.body);
            line.push(b'\n');
            writer.write_all(&line).await?;
            writer.flush().await?;
        }
        Ok(match pending {
            Some(stream) => Delivery::Stream(stream),
            None => Delivery::Accepted,
        })
    }
}

async fn read_lines<R: AsyncRead + Unpin>(
    mut reader: R,
    mut decoder: NdjsonDecoder,
    router: Router,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let error = 'outer: loop {
        for item in &mut decoder {
            match item {
                Ok(line) => match super::parse_message(&line) {
                    Ok(message) => router.dispatch_sized(Inbound::new(message), line.len()),
                    Err(e) => tracing::warn!(error = %e, "unreadable line from the server"),
                },
                // A message was lost and nobody can tell which request it answered: end the
                // connection rather than leave a call waiting for it.
                Err(NdjsonError::LineTooLong { limit, .. }) => {
                    break 'outer Some(TransportError::TooLarge { limit });
                }
                Err(e) => break 'outer Some(TransportError::Protocol(e.to_string())),
            }
        }
        match reader.read(&mut buf).await {
            Ok(0) => {
                decoder.finish();
                for line in (&mut decoder).flatten() {
                    if let Ok(message) = super::parse_message(&line) {
                        router.dispatch_sized(Inbound::new(message), line.len());
                    }
                }
                break None;
            }
            Ok(n) => decoder.push(&buf[..n]),
            Err(e) => break Some(TransportError::Io(e)),
        }
    };
    router.close(error);
}

impl Transport for Stdio {
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>> {
        Box::pin(self.write(message))
    }

    fn incoming(&self) -> Option<MessageStream> {
        self.shared.router.incoming()
    }

    fn info(&self) -> TransportInfo {
        TransportInfo::connection()
    }

    fn dropped(&self) -> u64 {
        self.shared.router.dropped()
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            // Closing stdin is how a stdio server learns to exit.
            if let Some(mut writer) = self.shared.writer.lock().await.take() {
                let _ = writer.shutdown().await;
            }
            if let Some(child) = &self.shared.child {
                let mut child = child.lock().await;
                match tokio::time::timeout(self.shared.close_grace, child.wait()).await {
                    Ok(_) => {}
                    Err(_) => {
                        let _ = child.kill().await;
                    }
                }
            }
            self.shared.reader.abort();
            self.shared.router.close(None);
            Ok(())
        })
    }
}
