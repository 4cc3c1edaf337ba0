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
    /// Passed through to this process's stderr as it comes, and its last bytes kept (at most
    /// [`StdioBuilder::stderr_tail`]) to explain the child's end: when the child exits while
    /// the client is connected, calls fail with [`TransportError::Exited`] carrying its exit
    /// status and that tail.
    Tee,
}

/// The default of [`StdioBuilder::stderr_tail`]: 2 KiB.
pub const DEFAULT_STDERR_TAIL: usize = 2048;

/// How long the reader waits, once the child closed its stdout, for its exit status (and the
/// end of its stderr) before reporting a plain [`TransportError::Closed`].
const EXIT_WAIT: Duration = Duration::from_secs(1);

/// Builds a [`Stdio`] transport that spawns a child process.
#[derive(Debug)]
pub struct StdioBuilder {
    command: Command,
    stderr: Stderr,
    stderr_tail: usize,
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

    /// With [`Stderr::Tee`], how many of the last bytes of the child's stderr are kept to
    /// explain its exit (older bytes are dropped as new ones come). Default is 2 KiB
    /// ([`DEFAULT_STDERR_TAIL`]).
    ///
    /// ```
    /// use mcp_client::transport::{Stderr, Stdio};
    ///
    /// let builder = Stdio::builder("my-server").stderr(Stderr::Tee).stderr_tail(512);
    /// # let _ = builder;
    /// ```
    pub fn stderr_tail(mut self, bytes: usize) -> Self {
        self.stderr_tail = bytes;
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
                Stderr::Capture | Stderr::Tee => StdStdio::piped(),
                Stderr::Null => StdStdio::null(),
            })
            .kill_on_drop(true);
        let program = self
            .command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let mut child = self
            .command
            .spawn()
            .map_err(|source| TransportError::Spawn { program, source })?;
        let stdin = child.stdin.take().ok_or(TransportError::Closed)?;
        let stdout = child.stdout.take().ok_or(TransportError::Closed)?;
        let mut stderr = child.stderr.take();
        let tail = match (self.stderr, stderr.take()) {
            (Stderr::Tee, Some(pipe)) => {
                let tail = Arc::new(Mutex::new(Tail::new(self.stderr_tail)));
                let ended = Arc::new(tokio::sync::Notify::new());
                tokio::spawn(tee(pipe, tail.clone(), ended.clone()));
                Some((tail, ended))
            }
            (_, pipe) => {
                stderr = pipe;
                None
            }
        };
        let child = Arc::new(tokio::sync::Mutex::new(child));
        let exit = ExitWatch {
            child: child.clone(),
            tail,
        };
        let router = Router::with_limits(self.max_queued, self.max_queued_bytes);
        let mut stdio = Stdio::build(
            stdout,
            stdin,
            self.max_message_size,
            router,
            Some(exit.clone()),
        );
        let shared = Arc::get_mut(&mut stdio.shared).ok_or(TransportError::Closed)?;
        shared.exit = Some(exit);
        shared.child = Some(child);
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
    child: Option<Arc<tokio::sync::Mutex<Child>>>,
    stderr: Mutex<Option<ChildStderr>>,
    /// A spawned child's end, to explain a failed write.
    exit: Option<ExitWatch>,
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
            stderr_tail: DEFAULT_STDERR_TAIL,
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
        Self::build(reader, writer, max_message_size, router, None)
    }

    fn build<R, W>(
        reader: R,
        writer: W,
        max_message_size: usize,
        router: Router,
        exit: Option<ExitWatch>,
    ) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let reader = tokio::spawn(read_lines(
            reader,
            NdjsonDecoder::new().with_max_line_length(max_message_size),
            router.clone(),
            exit,
        ));
        Self {
            shared: Arc::new(Shared {
                writer: tokio::sync::Mutex::new(Some(Box::new(writer))),
                router,
                reader,
                child: None,
                stderr: Mutex::new(None),
                exit: None,
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
            let written = match writer.write_all(&line).await {
                Ok(()) => writer.flush().await,
                Err(e) => Err(e),
            };
            if let Err(e) = written {
                // A child that exited closed its stdin: say so rather than "broken pipe".
                let explained = match &self.shared.exit {
                    Some(exit) => exit.clone().explain().await,
                    None => None,
                };
                return Err(explained.unwrap_or(TransportError::Io(e)));
            }
        }
        Ok(match pending {
            Some(stream) => Delivery::Stream(stream),
            None => Delivery::Accepted,
        })
    }
}

/// The last bytes of a child's stderr.
#[derive(Debug)]
struct Tail {
    bytes: std::collections::VecDeque<u8>,
    limit: usize,
    /// The child's stderr ended (it exited, or closed it).
    ended: bool,
}

impl Tail {
    fn new(limit: usize) -> Self {
        Self {
            bytes: std::collections::VecDeque::with_capacity(limit.min(DEFAULT_STDERR_TAIL)),
            limit,
            ended: false,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        let chunk = &chunk[chunk.len().saturating_sub(self.limit)..];
        let over = (self.bytes.len() + chunk.len()).saturating_sub(self.limit);
        self.bytes.drain(..over);
        self.bytes.extend(chunk);
    }

    fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        String::from_utf8_lossy(&[a, b].concat()).trim().to_owned()
    }
}

/// Copies the child's stderr to this process's stderr, keeping its tail.
async fn tee(mut pipe: ChildStderr, tail: Arc<Mutex<Tail>>, ended: Arc<tokio::sync::Notify>) {
    let mut buf = vec![0u8; 4096];
    while let Ok(n @ 1..) = pipe.read(&mut buf).await {
        tail.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(&buf[..n]);
        // Unbuffered, and a few kilobytes at most: written at once.
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), &buf[..n]);
    }
    tail.lock().unwrap_or_else(|e| e.into_inner()).ended = true;
    ended.notify_waiters();
}

/// What it takes to explain a spawned child's end.
#[derive(Clone)]
struct ExitWatch {
    child: Arc<tokio::sync::Mutex<Child>>,
    tail: Option<(Arc<Mutex<Tail>>, Arc<tokio::sync::Notify>)>,
}

impl ExitWatch {
    /// The child's exit, once its stdout ended or its stdin failed: `None` when it has not
    /// exited within [`EXIT_WAIT`] (it closed a pipe but lives on).
    async fn explain(self) -> Option<TransportError> {
        let status = {
            let mut child = self.child.lock().await;
            tokio::time::timeout(EXIT_WAIT, child.wait())
                .await
                .ok()?
                .ok()?
        };
        let stderr = match self.tail {
            Some((tail, ended)) => {
                let until_ended = async {
                    loop {
                        let notified = ended.notified();
                        if tail.lock().unwrap_or_else(|e| e.into_inner()).ended {
                            break;
                        }
                        notified.await;
                    }
                };
                let _ = tokio::time::timeout(EXIT_WAIT, until_ended).await;
                tail.lock().unwrap_or_else(|e| e.into_inner()).text()
            }
            None => String::new(),
        };
        Some(TransportError::Exited {
            status: status.to_string(),
            stderr,
        })
    }
}

async fn read_lines<R: AsyncRead + Unpin>(
    mut reader: R,
    mut decoder: NdjsonDecoder,
    router: Router,
    exit: Option<ExitWatch>,
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
                break match exit {
                    Some(exit) => exit.explain().await,
                    None => None,
                };
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
