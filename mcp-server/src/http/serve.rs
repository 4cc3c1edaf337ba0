//! Running the endpoint on a socket: the accept loop, HTTP/1.1 and HTTP/2, graceful shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tracing::Instrument as _;

use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};

use crate::http::{HttpBody, HttpConfig, HttpEndpoint};
use crate::server::Server;

/// The shortest pause after a failed `accept` (out of descriptors, say); it doubles up to
/// [`ACCEPT_BACKOFF_MAX`] while accepting keeps failing.
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(5);

/// The longest pause after a failed `accept`.
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// How long an HTTP/2 peer has to acknowledge a keep-alive ping.
const HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address as given.
        addr: String,
        /// The operating system's reason.
        source: io::Error,
    },
    /// The listener failed.
    #[error("listener: {0}")]
    Io(#[from] io::Error),
    /// The certificate or key could not be read or used.
    #[error("TLS: {0}")]
    Tls(String),
}

/// A TLS configuration for [`serve_tls_with_shutdown`]: a certificate chain and its private
/// key, offering HTTP/2 and HTTP/1.1 by ALPN.
///
/// ```no_run
/// use mcp_server::http::{HttpConfig, HttpEndpoint, Tls, serve_tls_with_shutdown, shutdown_signal};
/// # async fn run(server: mcp_server::Server) -> Result<(), mcp_server::http::HttpError> {
/// let tls = Tls::from_pem_files("cert.pem", "key.pem")?;
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:8443").await?;
/// let endpoint = HttpEndpoint::new(server, HttpConfig::default());
/// serve_tls_with_shutdown(listener, endpoint, tls, shutdown_signal()).await
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Tls(Arc<rustls::ServerConfig>);

impl Tls {
    /// Reads a PEM certificate chain and a PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub fn from_pem_files(
        certificates: impl AsRef<std::path::Path>,
        key: impl AsRef<std::path::Path>,
    ) -> Result<Self, HttpError> {
        use rustls::pki_types::pem::PemObject as _;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain = CertificateDer::pem_file_iter(certificates.as_ref())
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|e| HttpError::Tls(format!("{}: {e}", certificates.as_ref().display())))?;
        let key = PrivateKeyDer::from_pem_file(key.as_ref())
            .map_err(|e| HttpError::Tls(format!("{}: {e}", key.as_ref().display())))?;
        Self::from_der(chain, key)
    }

    /// A certificate chain and its key, already decoded.
    pub fn from_der(
        chain: Vec<rustls::pki_types::CertificateDer<'static>>,
        key: rustls::pki_types::PrivateKeyDer<'static>,
    ) -> Result<Self, HttpError> {
        let mut config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| HttpError::Tls(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self(Arc::new(config)))
    }

    /// Your own rustls configuration (client certificates, a certificate resolver...); set
    /// its `alpn_protocols` to offer HTTP/2.
    pub fn from_config(config: Arc<rustls::ServerConfig>) -> Self {
        Self(config)
    }
}

/// Serves `server` on `addr` with the default [`HttpConfig`] (Streamable HTTP at `/mcp`,
/// HTTP+SSE at `/sse`) until Ctrl-C or SIGTERM, then shuts down gracefully.
///
/// ```no_run
/// use mcp_server::Server;
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let server = Server::builder("demo", "1.0").build()?;
///     mcp_server::http::serve("127.0.0.1:8080", server).await?;
///     Ok(())
/// }
/// ```
pub async fn serve(
    addr: impl ToSocketAddrs + std::fmt::Debug,
    server: Server,
) -> Result<(), HttpError> {
    serve_with(addr, HttpEndpoint::new(server, HttpConfig::default())).await
}

/// Serves `endpoint` on `addr` until Ctrl-C or SIGTERM, then shuts down gracefully.
pub async fn serve_with(
    addr: impl ToSocketAddrs + std::fmt::Debug,
    endpoint: HttpEndpoint,
) -> Result<(), HttpError> {
    let name = format!("{addr:?}");
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| HttpError::Bind { addr: name, source })?;
    serve_with_shutdown(listener, endpoint, shutdown_signal()).await
}

/// Resolves on Ctrl-C, or on SIGTERM on Unix.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// Serves `endpoint` on `listener` until `signal` resolves.
///
/// Every accepted connection gets `TCP_NODELAY` and is served as HTTP/1.1 (with keep-alive) or
/// HTTP/2, whichever the client speaks. When the listener is bound to a loopback address, the
/// endpoint accepts only localhost `Host` names and trusts localhost origins (unless its
/// [`HttpConfig`] says otherwise).
///
/// Limits (see [`HttpConfig`]): at most [`HttpConfig::max_connections`] connections are
/// served at once (beyond it, new ones wait in the listen backlog); a connection that takes
/// longer than [`HttpConfig::header_read_timeout`] to send a request's head, or that stays
/// without a request in flight for [`HttpConfig::idle_timeout`], is closed; HTTP/2
/// connections are pinged every [`HttpConfig::http2_keep_alive`]. A failing `accept` (out of
/// descriptors) pauses accepting, from 5 ms doubling up to 1 s, instead of spinning.
///
/// Shutdown: stop accepting, end the long-lived SSE streams, let calls in flight finish for
/// up to [`HttpConfig::shutdown_deadline`], then cancel what is left and close every
/// connection.
pub async fn serve_with_shutdown(
    listener: TcpListener,
    endpoint: HttpEndpoint,
    signal: impl Future<Output = ()>,
) -> Result<(), HttpError> {
    serve_on(listener, endpoint, None, signal).await
}

/// [`serve_with_shutdown`] over TLS: HTTP/2 or HTTP/1.1 as the client's ALPN asks. The TLS
/// handshake must finish within [`HttpConfig::header_read_timeout`]; a connection that fails
/// it is closed.
pub async fn serve_tls_with_shutdown(
    listener: TcpListener,
    endpoint: HttpEndpoint,
    tls: Tls,
    signal: impl Future<Output = ()>,
) -> Result<(), HttpError> {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.0);
    serve_on(listener, endpoint, Some(acceptor), signal).await
}

async fn serve_on(
    listener: TcpListener,
    endpoint: HttpEndpoint,
    tls: Option<tokio_rustls::TlsAcceptor>,
    signal: impl Future<Output = ()>,
) -> Result<(), HttpError> {
    let local = listener.local_addr()?;
    let endpoint = endpoint.bound_to(local);
    let config = endpoint.config();
    tracing::info!(
        addr = %local,
        tls = tls.is_some(),
        path = %config.path,
        "MCP endpoint listening"
    );
    let limits = Limits {
        header_read: config.header_read_timeout,
        idle: config.idle_timeout,
    };
    let mut builder = auto::Builder::new(TokioExecutor::new());
    if let Some(interval) = config.http2_keep_alive {
        builder
            .http2()
            .timer(TokioTimer::new())
            .keep_alive_interval(interval)
            .keep_alive_timeout(HTTP2_PING_TIMEOUT);
    }
    let builder = Arc::new(builder);
    let slots = Arc::new(Semaphore::new(connection_cap(
        config.max_connections,
        descriptor_limit(),
    )));
    let (closing, _) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut signal = pin!(signal);
    let mut backoff = ACCEPT_BACKOFF_MIN;
    loop {
        // A free connection slot first: at the limit, new connections wait in the backlog.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            () = &mut signal => break,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut signal => break,
        };
        while connections.try_join_next().is_some() {}
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                backoff = ACCEPT_BACKOFF_MIN;
                accepted
            }
            Err(err) => {
                // Out of descriptors, a connection reset before accept: pause, longer each
                // time it keeps failing, so the loop neither spins nor ends.
                tracing::warn!(%err, pause = ?backoff, "accept failed");
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = &mut signal => break,
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(%err, "could not set TCP_NODELAY");
        }
        let state = Arc::new(ConnState::new());
        let service_endpoint = endpoint.clone();
        let service_state = state.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            // The peer, for per-source limits (the development authorization server's).
            request.extensions_mut().insert(super::PeerAddr(peer));
            let flight = Flight::start(&service_state, request.version());
            let endpoint = service_endpoint.clone();
            async move {
                let response = endpoint.handle(request).await;
                Ok::<_, Infallible>(response.map(|body| Tracked {
                    body,
                    _flight: flight,
                }))
            }
        });
        let builder = builder.clone();
        let closing = closing.subscribe();
        let tls = tls.clone();
        // Disabled (a level check, nothing formatted) unless a subscriber wants DEBUG here.
        let span = tracing::debug_span!("mcp.connection", peer = %peer);
        connections.spawn(
            async move {
                let stream = match tls {
                    None => Stream::Plain(stream),
                    Some(acceptor) => {
                        let handshake =
                            tokio::time::timeout(limits.header_read, acceptor.accept(stream));
                        match handshake.await {
                            Ok(Ok(stream)) => Stream::Tls(Box::new(stream)),
                            Ok(Err(err)) => {
                                tracing::debug!(%err, "TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!("TLS handshake timed out");
                                return;
                            }
                        }
                    }
                };
                let io = TokioIo::new(Watched {
                    io: stream,
                    state: state.clone(),
                });
                let connection = builder.serve_connection(io, service);
                if let Err(err) = drive(connection, &state, limits, closing).await {
                    tracing::debug!(%err, "connection ended with an error");
                }
                drop(slot);
            }
            .instrument(span),
        );
    }
    drop(listener);
    endpoint.close_streams();
    let deadline = endpoint.config().shutdown_deadline;
    let drained = tokio::time::timeout(deadline, async {
        closing.send_replace(true);
        while connections.join_next().await.is_some() {}
        endpoint.calls_done().await;
    })
    .await;
    if drained.is_err() {
        tracing::warn!("calls still running at the shutdown deadline were cancelled");
        endpoint.cancel_calls();
        connections.abort_all();
    }
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// The connections served at once: `configured`, but at most 7/8 of the process's soft
/// descriptor limit when that is known, so descriptors remain for the hub, files and accepting.
fn connection_cap(configured: usize, descriptors: Option<usize>) -> usize {
    let cap = descriptors.map_or(usize::MAX, |limit| limit - limit / 8);
    configured.min(cap).clamp(1, Semaphore::MAX_PERMITS)
}

/// The soft limit of open descriptors of this process (`ulimit -n`), where the system tells
/// it (Linux: `/proc/self/limits`); `None` when unknown or unlimited.
fn descriptor_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    soft_descriptor_limit(&limits)
}

/// The soft `Max open files` limit of a `/proc/self/limits` text.
fn soft_descriptor_limit(limits: &str) -> Option<usize> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.strip_prefix("Max open files")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The time limits of a connection.
#[derive(Clone, Copy, Debug)]
struct Limits {
    header_read: Duration,
    idle: Duration,
}

/// What a connection is doing, shared by its socket ([`Watched`]), its requests ([`Flight`])
/// and its driver ([`drive`]). Times are nanoseconds since `base`.
struct ConnState {
    base: Instant,
    /// Requests whose response is not yet sent in full (or dropped).
    in_flight: AtomicUsize,
    /// When the connection last had no request in flight (accepted, or a response ended).
    idle_since: AtomicU64,
    /// When the first byte of a request head that is not complete yet arrived, plus one;
    /// zero when none is being read.
    head_since: AtomicU64,
    /// The connection speaks HTTP/2 (its idle periods are not request heads being read).
    h2: AtomicBool,
}

impl ConnState {
    fn new() -> Self {
        Self {
            base: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            head_since: AtomicU64::new(0),
            h2: AtomicBool::new(false),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX - 1)
    }

    fn at(&self, nanos: u64) -> Instant {
        self.base + Duration::from_nanos(nanos)
    }

    /// Bytes arrived: with no request in flight they start a request's head.
    fn read_some(&self) {
        if self.in_flight.load(Ordering::Relaxed) == 0
            && self.head_since.load(Ordering::Relaxed) == 0
            && !self.h2.load(Ordering::Relaxed)
        {
            self.head_since.store(self.now() + 1, Ordering::Relaxed);
        }
    }

    /// When the connection is to be closed as things stand, or `None` while a request is in
    /// flight.
    fn deadline(&self, limits: Limits) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let head = self.head_since.load(Ordering::Acquire);
        if head != 0 {
            return Some(self.at(head - 1) + limits.header_read);
        }
        Some(self.at(self.idle_since.load(Ordering::Acquire)) + limits.idle)
    }
}

/// One request in flight on a connection, until its response is sent in full or dropped.
struct Flight(Arc<ConnState>);

impl Flight {
    fn start(state: &Arc<ConnState>, version: http::Version) -> Self {
        state.in_flight.fetch_add(1, Ordering::AcqRel);
        // The head is complete: no head is being read any more.
        state.head_since.store(0, Ordering::Release);
        if version == http::Version::HTTP_2 {
            state.h2.store(true, Ordering::Relaxed);
        }
        Self(state.clone())
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        let state = &self.0;
        if state.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            state.idle_since.store(state.now(), Ordering::Release);
        }
    }
}

/// A response body that keeps its request counted as in flight until it is dropped.
struct Tracked {
    body: HttpBody,
    _flight: Flight,
}

impl Body for Tracked {
    type Data = <HttpBody as Body>::Data;
    type Error = <HttpBody as Body>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A connection's byte stream: plain TCP, or TLS over it.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

/// Forwards an I/O call to whichever stream it is.
macro_rules! forward {
    ($self:expr, $io:ident => $call:expr) => {
        match &mut *$self {
            Stream::Plain($io) => $call,
            Stream::Tls($io) => $call,
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        forward!(self, io => Pin::new(io).poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        forward!(self, io => Pin::new(io).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        forward!(self, io => Pin::new(io).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Plain(io) => io.is_write_vectored(),
            Self::Tls(io) => io.is_write_vectored(),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        forward!(self, io => Pin::new(io).poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        forward!(self, io => Pin::new(io).poll_shutdown(cx))
    }
}

/// A connection's socket, telling its [`ConnState`] when bytes arrive.
struct Watched {
    io: Stream,
    state: Arc<ConnState>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.io).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            self.state.read_some();
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Runs one connection: until it ends, it is closed for a timeout (see [`Limits`]), or
/// shutdown asks it to finish gracefully.
///
/// The timer is reset only when a deadline comes earlier than the one it is set for (a
/// request head started); otherwise it fires at the old deadline and is set again from
/// what the connection did meanwhile, so a busy connection costs no timer update per request.
///
/// The timer and the shutdown signal are polled (which registers the task's waker with each)
/// only when the waker changed, the timer was reset, the timer is due, a request head started
/// or shutdown began; a wake-up for the connection's own I/O looks at them with an atomic
/// load each, not a registration.
async fn drive<C>(
    connection: C,
    state: &ConnState,
    limits: Limits,
    closing: watch::Receiver<bool>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    C: Future<Output = Result<(), Box<dyn std::error::Error + Send + Sync>>> + GracefulConnection,
{
    let mut connection = pin!(connection);
    let first = state
        .deadline(limits)
        .unwrap_or_else(|| Instant::now() + limits.idle);
    let mut timer: Pin<&mut Sleep> = pin!(tokio::time::sleep_until(first));
    let signal = closing.clone();
    let mut closing_fut = pin!(async move {
        let mut closing = closing;
        let _ = closing.wait_for(|closing| *closing).await;
    });
    let mut shutting = false;
    // The waker the timer and the shutdown signal hold, and the head mark last looked at.
    let mut registered: Option<std::task::Waker> = None;
    let mut head_seen = 0_u64;
    std::future::poll_fn(|cx| {
        let same_waker = registered
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()));
        if !same_waker {
            registered = Some(cx.waker().clone());
        }
        if !shutting
            && (!same_waker || signal.has_changed().unwrap_or(true))
            && closing_fut.as_mut().poll(cx).is_ready()
        {
            shutting = true;
            connection.as_mut().shut_down();
        }
        if let Poll::Ready(result) = connection.as_mut().poll(cx) {
            return Poll::Ready(result);
        }
        let mut fresh = !same_waker;
        loop {
            let head = state.head_since.load(Ordering::Relaxed);
            if !fresh && head == head_seen && !timer.is_elapsed() {
                return Poll::Pending;
            }
            head_seen = head;
            if timer.as_mut().poll(cx).is_pending() {
                match state.deadline(limits) {
                    Some(due) if due < timer.deadline() => {
                        timer.as_mut().reset(due);
                        fresh = true;
                        continue;
                    }
                    _ => return Poll::Pending,
                }
            }
            let now = Instant::now();
            match state.deadline(limits) {
                None => timer.as_mut().reset(now + limits.idle),
                Some(due) if due > now => timer.as_mut().reset(due),
                Some(_) if state.h2.load(Ordering::Relaxed) && !shutting => {
                    // HTTP/2: a GOAWAY, then the connection ends by itself; closed for good
                    // if it has not within another header-read time.
                    shutting = true;
                    connection.as_mut().shut_down();
                    timer.as_mut().reset(now + limits.header_read);
                    if let Poll::Ready(result) = connection.as_mut().poll(cx) {
                        return Poll::Ready(result);
                    }
                }
                // Idle or too slow: closed without an answer.
                Some(_) => return Poll::Ready(Ok(())),
            }
            fresh = true;
        }
    })
    .await
}

/// A connection that can be asked to finish gracefully.
trait GracefulConnection {
    fn shut_down(self: Pin<&mut Self>);
}

impl<I, S, E> GracefulConnection for auto::Connection<'_, I, S, E>
where
    S: hyper::service::Service<http::Request<Incoming>, Response = http::Response<Tracked>>,
    S::Future: 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, Tracked>,
{
    fn shut_down(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_leaves_descriptors_free() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(soft_descriptor_limit(limits), Some(1024));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(soft_descriptor_limit(unlimited), None);
        assert_eq!(soft_descriptor_limit("nothing"), None);
        assert_eq!(connection_cap(4096, Some(1024)), 896);
        assert_eq!(connection_cap(100, Some(1024)), 100);
        assert_eq!(connection_cap(4096, None), 4096);
        assert_eq!(connection_cap(4096, Some(0)), 1);
    }
}
