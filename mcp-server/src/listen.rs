//! Serving hyper connections on a socket: the accept loop and what one connection may cost.
//!
//! hyper and hyper-util do the protocol work: [`auto::Builder`] speaks HTTP/1.1 or HTTP/2 and
//! hyper-util's [`GracefulConnection`] finishes a connection gracefully. This module adds what
//! they lack: the cap on connections served at once, the TLS handshake bound, the idle timeout
//! (no request in flight, on either protocol) and the header-read timeout. The header-read
//! timeout is the idle timer's too (a head not yet complete is no request in flight): hyper's
//! own arms, polls and drops a timer for every request head, about 1k instructions per
//! request, where the connection's timer is only re-armed when it fires.
//!
//! It knows nothing of MCP: the MCP endpoint ([`http::serve_with_shutdown`]) and the metrics
//! scrape endpoint (`http::serve_metrics`) both serve through [`accept`], each with its own
//! [`Limits`] and its own handler. What a request means, and the shutdown sequence around the
//! connections (drain, end the streams, wait for calls), are theirs.
//!
//! [`http::serve_with_shutdown`]: crate::http::serve_with_shutdown

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tracing::Instrument as _;

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulConnection;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};

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

/// A TLS configuration for
/// [`serve_tls_with_shutdown`](crate::http::serve_tls_with_shutdown): a certificate chain and
/// its private key, offering HTTP/2 and HTTP/1.1 by ALPN.
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

/// What a response body must be to be served on a connection.
pub(crate) trait ServedBody:
    Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>> + Send + Unpin + 'static
{
}

impl<B> ServedBody for B where
    B: Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + Unpin
        + 'static
{
}

/// The limits of a listener's connections.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// The time to send a request's head on HTTP/1.1, from when the server waits for it; also
    /// the time an HTTP/2 connection has to end after its idle `GOAWAY`.
    pub(crate) header_read: Duration,
    /// How long a connection may stay without a request in flight.
    pub(crate) idle: Duration,
    /// The HTTP/2 keep-alive ping interval.
    pub(crate) http2_keep_alive: Option<Duration>,
    /// The most connections served at once (further capped by the descriptor limit).
    pub(crate) max_connections: usize,
}

/// The connections a listener accepted, until they end.
pub(crate) struct Connections {
    tasks: JoinSet<()>,
    closing: watch::Sender<bool>,
}

impl Connections {
    /// Asks every connection to finish gracefully: HTTP/1.1 ones after their response in
    /// flight, HTTP/2 ones with a `GOAWAY` after their streams.
    pub(crate) fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Waits until every connection has ended.
    pub(crate) async fn join(&mut self) {
        while self.tasks.join_next().await.is_some() {}
    }

    /// Closes every connection at once.
    pub(crate) fn abort(&mut self) {
        self.tasks.abort_all();
    }
}

/// The accept loop: serves each connection of `listener` (over TLS with `tls`) with the
/// handler `connect` makes for its peer address, within `limits`, until `signal` resolves;
/// then drops the listener and returns the connections still open.
///
/// At most [`Limits::max_connections`] connections are served at once (beyond it, new ones
/// wait in the listen backlog); every accepted connection gets `TCP_NODELAY`; a failing
/// `accept` (out of descriptors) pauses accepting, from 5 ms doubling up to 1 s, instead of
/// spinning. A TLS handshake must finish within [`Limits::header_read`].
pub(crate) async fn accept<M, H, F, B>(
    listener: TcpListener,
    limits: Limits,
    tls: Option<Tls>,
    connect: M,
    signal: impl Future<Output = ()>,
) -> Connections
where
    M: Fn(SocketAddr) -> H + Send + Sync,
    H: Fn(hyper::Request<Incoming>) -> F + Send + Sync + 'static,
    F: Future<Output = hyper::Response<B>> + Send + 'static,
    B: ServedBody,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // The head's deadline is the connection's own (`drive`): hyper's header-read timer is a
    // timer armed, polled and dropped for every request head.
    builder.http1().header_read_timeout(None);
    if let Some(interval) = limits.http2_keep_alive {
        builder
            .http2()
            .timer(TokioTimer::new())
            .keep_alive_interval(interval)
            .keep_alive_timeout(HTTP2_PING_TIMEOUT);
    }
    let builder = Arc::new(builder);
    let tls = tls.map(|tls| tokio_rustls::TlsAcceptor::from(tls.0));
    let slots = Arc::new(Semaphore::new(connection_cap(
        limits.max_connections,
        descriptor_limit(),
    )));
    let (closing, _) = watch::channel(false);
    let mut tasks = JoinSet::new();
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
        while tasks.try_join_next().is_some() {}
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
        let connection = Connection {
            builder: builder.clone(),
            handler: connect(peer),
            limits,
            closing: closing.subscribe(),
        };
        let tls = tls.clone();
        // Disabled (a level check, nothing formatted) unless a subscriber wants DEBUG here.
        let span = tracing::debug_span!("mcp.connection", peer = %peer);
        tasks.spawn(
            async move {
                match tls {
                    None => connection.serve(stream).await,
                    Some(acceptor) => {
                        let handshake =
                            tokio::time::timeout(limits.header_read, acceptor.accept(stream));
                        match handshake.await {
                            Ok(Ok(stream)) => connection.serve(stream).await,
                            Ok(Err(err)) => tracing::debug!(%err, "TLS handshake failed"),
                            Err(_) => tracing::debug!("TLS handshake timed out"),
                        }
                    }
                }
                drop(slot);
            }
            .instrument(span),
        );
    }
    drop(listener);
    Connections { tasks, closing }
}

/// What one accepted connection is served with.
struct Connection<H> {
    builder: Arc<auto::Builder<TokioExecutor>>,
    /// The connection's own handler (made for its peer).
    handler: H,
    limits: Limits,
    closing: watch::Receiver<bool>,
}

impl<H, F, B> Connection<H>
where
    H: Fn(hyper::Request<Incoming>) -> F + Send + Sync + 'static,
    F: Future<Output = hyper::Response<B>> + Send + 'static,
    B: ServedBody,
{
    /// Serves the connection over `io` until it ends, idles out or shutdown finishes it.
    async fn serve<I>(self, io: I)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let activity = Arc::new(Activity::new());
        let requests = activity.clone();
        let Self {
            builder,
            handler,
            limits,
            closing,
        } = self;
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let flight = Flight::start(&requests, request.version());
            let response = handler(request);
            async move {
                let response = response.await;
                Ok::<_, Infallible>(response.map(|body| Tracked {
                    body,
                    _flight: flight,
                }))
            }
        });
        let connection = builder.serve_connection(TokioIo::new(io), service);
        if let Err(err) = drive(connection, &activity, limits, closing).await {
            tracing::debug!(%err, "connection ended with an error");
        }
    }
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

/// What a connection is doing, shared by its requests ([`Flight`]) and its driver
/// ([`drive`]). Times are nanoseconds since `base`.
struct Activity {
    base: Instant,
    /// Requests whose response is not yet sent in full (or dropped).
    in_flight: AtomicUsize,
    /// When the connection last had no request in flight (accepted, or a response ended).
    idle_since: AtomicU64,
    /// The connection speaks HTTP/2 (idle, it gets a `GOAWAY` rather than being cut).
    h2: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Self {
            base: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            h2: AtomicBool::new(false),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// How long the connection may go without a request in flight: the idle timeout, and on
    /// HTTP/1.1 (or before its first request) at most the header-read timeout, since from
    /// when the server waits for a head the client has that long to send it in full (the head
    /// of the next request of a kept-alive connection too).
    fn quiet(&self, limits: &Limits) -> Duration {
        if self.h2.load(Ordering::Relaxed) {
            limits.idle
        } else {
            limits.idle.min(limits.header_read)
        }
    }

    /// When the connection is to be closed for idling (or for a head not sent in time) as
    /// things stand, or `None` while a request is in flight.
    fn deadline(&self, limits: &Limits) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = self.idle_since.load(Ordering::Acquire);
        Some(self.base + Duration::from_nanos(since) + self.quiet(limits))
    }
}

/// One request in flight on a connection, until its response is sent in full or dropped.
struct Flight(Arc<Activity>);

impl Flight {
    fn start(state: &Arc<Activity>, version: http::Version) -> Self {
        state.in_flight.fetch_add(1, Ordering::AcqRel);
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
struct Tracked<B> {
    body: B,
    _flight: Flight,
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

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

/// Runs one connection until it ends, is closed for idling (no request in flight for
/// [`Limits::idle`], on HTTP/1.1 at most [`Limits::header_read`]: a head still being sent is
/// no request in flight), or shutdown asks it to finish gracefully.
///
/// The idle timer is not touched per request: it fires at the deadline it was set for and is
/// set again from what the connection did meanwhile. The timer and the shutdown signal are
/// polled (which registers the task's waker with each) only when the waker changed, the timer
/// is due or shutdown began; a wake-up for the connection's own I/O costs an atomic load each.
async fn drive<C>(
    connection: C,
    activity: &Activity,
    limits: Limits,
    closing: watch::Receiver<bool>,
) -> Result<(), C::Error>
where
    C: GracefulConnection,
{
    let mut connection = pin!(connection);
    let mut timer: Pin<&mut Sleep> = pin!(tokio::time::sleep(activity.quiet(&limits)));
    let signal = closing.clone();
    let mut closing_fut = pin!(async move {
        let mut closing = closing;
        let _ = closing.wait_for(|closing| *closing).await;
    });
    let mut shutting = false;
    // The waker the timer and the shutdown signal hold.
    let mut registered: Option<std::task::Waker> = None;
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
            connection.as_mut().graceful_shutdown();
        }
        if let Poll::Ready(result) = connection.as_mut().poll(cx) {
            return Poll::Ready(result);
        }
        if same_waker && !timer.is_elapsed() {
            return Poll::Pending;
        }
        loop {
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let now = Instant::now();
            match activity.deadline(&limits) {
                None => timer.as_mut().reset(now + activity.quiet(&limits)),
                Some(due) if due > now => timer.as_mut().reset(due),
                Some(_) if activity.h2.load(Ordering::Relaxed) && !shutting => {
                    // HTTP/2: a GOAWAY, then the connection ends by itself; closed for good
                    // if it has not within a header-read time.
                    shutting = true;
                    connection.as_mut().graceful_shutdown();
                    timer.as_mut().reset(now + limits.header_read);
                    if let Poll::Ready(result) = connection.as_mut().poll(cx) {
                        return Poll::Ready(result);
                    }
                }
                // Idle (or an HTTP/2 connection past its GOAWAY): closed without an answer.
                Some(_) => return Poll::Ready(Ok(())),
            }
        }
    })
    .await
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
