//! The connection pool of the HTTP transports: HTTP/1.1 over TCP for `http://`, and over TLS
//! for `https://` HTTP/2 or HTTP/1.1 as the server chooses by ALPN (one shared HTTP/2
//! connection, multiplexed, stays on the stack while it is open).
//!
//! One origin per pool (a transport talks to one server), so there is no key to hash: idle
//! connections sit in a stack, most recently used on top. A connection goes back on the stack
//! when the body of its response has been read to the end; a response dropped before its end
//! (a cancelled call's stream) takes its connection with it, because HTTP/1.1 cannot reuse a
//! connection with an unread body on it. Each request is sent in origin form with a `Host`
//! header, over a `TCP_NODELAY` connection driven by a task of its own.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::Either;
use http::header::HOST;
use http::uri::PathAndQuery;
use http::{HeaderValue, Request, Response, Uri};
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::TrySendError;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::TransportError;
use super::streamable::error_chain;
use super::tls::{Connector, Https, tcp};

/// A connection's request sender.
#[derive(Debug)]
enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    fn is_closed(&self) -> bool {
        match self {
            Self::H1(s) => s.is_closed(),
            Self::H2(s) => s.is_closed(),
        }
    }

    async fn ready(&mut self) -> Result<(), hyper::Error> {
        match self {
            Self::H1(s) => s.ready().await,
            // An HTTP/2 connection is shared and never waits here (see `checkout`).
            Self::H2(_) => Ok(()),
        }
    }

    /// The HTTP/1.1 future is held inline and the HTTP/2 one boxed: the per-call futures the
    /// transports box stay small on the plain-http path.
    fn try_send_request(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> impl Future<Output = Result<Response<Incoming>, TrySendError<Request<Full<Bytes>>>>>
    + Send
    + use<'_> {
        match self {
            Self::H1(s) => Either::Left(s.try_send_request(request)),
            Self::H2(s) => Either::Right(Box::pin(s.try_send_request(request))),
        }
    }
}

/// The most idle connections kept; more are closed when they come back.
const MAX_IDLE: usize = 32;

/// A pool of connections to one origin.
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// `host:port` to connect to, and the `Host` header value.
    authority: Option<(String, HeaderValue)>,
    /// For `https://`: the TLS connector, the host and port, and the scheme and authority an
    /// HTTP/2 request names.
    tls: Option<(Connector, String, u16, Uri)>,
    connect_timeout: Duration,
    idle_timeout: Duration,
    idle: Mutex<Vec<(Sender, Instant)>>,
    /// The HTTP version of the last connection opened: 0 none yet, 1 HTTP/1.1, 2 HTTP/2.
    version: AtomicU8,
}

impl Pool {
    /// The HTTP version of the last connection this pool opened, if any.
    pub(crate) fn http_version(&self) -> Option<http::Version> {
        match self.shared.version.load(Ordering::Relaxed) {
            1 => Some(http::Version::HTTP_11),
            2 => Some(http::Version::HTTP_2),
            _ => None,
        }
    }

    /// A pool for the origin of `uri` (`http`, or `https` with `https`'s settings, the defaults
    /// when `None`).
    pub(crate) fn new(
        uri: &Uri,
        connect_timeout: Duration,
        idle_timeout: Duration,
        https: Option<&Https>,
    ) -> Self {
        let secure = uri.scheme_str() == Some("https");
        let authority = uri
            .authority()
            .filter(|_| secure || uri.scheme_str() == Some("http"))
            .and_then(|a| {
                let port = a.port_u16().unwrap_or(if secure { 443 } else { 80 });
                let host = HeaderValue::from_str(a.as_str()).ok()?;
                Some((format!("{}:{port}", a.host()), host))
            });
        let tls = uri
            .authority()
            .filter(|_| secure && authority.is_some())
            .and_then(|a| {
                let base = Uri::builder()
                    .scheme("https")
                    .authority(a.clone())
                    .path_and_query("/")
                    .build()
                    .ok()?;
                let connector = match https {
                    Some(https) => https.connector(),
                    None => Https::default().connector(),
                };
                Some((
                    connector,
                    a.host().to_string(),
                    a.port_u16().unwrap_or(443),
                    base,
                ))
            });
        Self {
            shared: Arc::new(Shared {
                authority,
                tls,
                connect_timeout,
                idle_timeout,
                idle: Mutex::new(Vec::new()),
                version: AtomicU8::new(0),
            }),
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<(Sender, Instant)>> {
        self.shared.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle connection that is still open and ready, or a new one.
    async fn checkout(&self) -> Result<Sender, TransportError> {
        loop {
            let next = {
                let mut idle = self.idle();
                // An open HTTP/2 connection is shared: it stays on the stack.
                match idle.last() {
                    Some((Sender::H2(h2), _)) if !h2.is_closed() => {
                        return Ok(Sender::H2(h2.clone()));
                    }
                    _ => idle.pop(),
                }
            };
            let Some((mut sender, since)) = next else {
                break;
            };
            if since.elapsed() > self.shared.idle_timeout || sender.is_closed() {
                continue;
            }
            // The body was read to its end: the connection is ready as soon as its task has
            // seen that, or closed.
            if sender.ready().await.is_ok() {
                return Ok(sender);
            }
        }
        // Boxed: connecting is rare, and its future (the TCP connect and the handshake) would
        // otherwise sit in every request's future, which the callers move and copy per call.
        Box::pin(self.connect()).await
    }

    async fn connect(&self) -> Result<Sender, TransportError> {
        let Some((addr, _)) = &self.shared.authority else {
            return Err(TransportError::Http(
                "only http:// and https:// URLs with a host are supported".into(),
            ));
        };
        if let Some((connector, host, port, _)) = &self.shared.tls {
            return self.connect_tls(connector, host, *port).await;
        }
        let stream = tcp(addr, self.shared.connect_timeout).await?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| TransportError::Http(error_chain(&e)))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "HTTP connection ended");
            }
        });
        self.shared.version.store(1, Ordering::Relaxed);
        Ok(Sender::H1(sender))
    }

    async fn connect_tls(
        &self,
        connector: &Connector,
        host: &str,
        port: u16,
    ) -> Result<Sender, TransportError> {
        let (stream, h2) = connector
            .connect(host, port, self.shared.connect_timeout)
            .await?;
        let io = TokioIo::new(stream);
        if h2 {
            let (sender, connection) = http2::handshake(TokioExecutor::new(), io)
                .await
                .map_err(|e| TransportError::Http(error_chain(&e)))?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!(error = %e, "HTTP/2 connection ended");
                }
            });
            self.shared.version.store(2, Ordering::Relaxed);
            let sender = Sender::H2(sender);
            // Shared from the start: later requests multiplex on it.
            if let Sender::H2(h2) = &sender {
                let mut idle = self.idle();
                if idle.len() < MAX_IDLE {
                    idle.push((Sender::H2(h2.clone()), Instant::now()));
                }
            }
            return Ok(sender);
        }
        let (sender, connection) = http1::handshake(io)
            .await
            .map_err(|e| TransportError::Http(error_chain(&e)))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "HTTP connection ended");
            }
        });
        self.shared.version.store(1, Ordering::Relaxed);
        Ok(Sender::H1(sender))
    }

    /// Puts an `https://` request in the form its connection speaks: absolute for HTTP/2
    /// (`:scheme` and `:authority`), origin form with `Host` for HTTP/1.1.
    fn fit(&self, request: &mut Request<Full<Bytes>>, sender: &Sender) {
        let (Some((_, host)), Some((_, _, _, base))) = (&self.shared.authority, &self.shared.tls)
        else {
            return;
        };
        let path = request
            .uri()
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        match sender {
            Sender::H1(_) => {
                *request.uri_mut() = Uri::from(path);
                request.headers_mut().insert(HOST, host.clone());
            }
            Sender::H2(_) => {
                let mut parts = base.clone().into_parts();
                parts.path_and_query = Some(path);
                if let Ok(uri) = Uri::from_parts(parts) {
                    *request.uri_mut() = uri;
                }
                request.headers_mut().remove(HOST);
            }
        }
    }

    /// Sends `request` (any method, headers and body; its URI absolute, as given to the
    /// transport, on this pool's origin) and returns the response, whose body gives the
    /// connection back when read to its end.
    ///
    /// The request is made ready before the returned future is first polled, and the future
    /// holds it once (an `async fn` would hold its argument twice), so that the transports'
    /// per-call futures stay small.
    pub(crate) fn request(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> impl Future<Output = Result<Response<PooledBody>, TransportError>> + Send + '_ {
        let ready = match &self.shared.authority {
            // `https://`: the form depends on the connection's protocol, known at checkout.
            Some(_) if self.shared.tls.is_some() => true,
            Some((_, host)) => {
                let path = request
                    .uri()
                    .path_and_query()
                    .cloned()
                    .unwrap_or_else(|| PathAndQuery::from_static("/"));
                *request.uri_mut() = Uri::from(path);
                request.headers_mut().insert(HOST, host.clone());
                true
            }
            None => false,
        };
        async move {
            if !ready {
                return Err(TransportError::Http(
                    "only http:// and https:// URLs with a host are supported".into(),
                ));
            }
            let mut sender = self.checkout().await?;
            if self.shared.tls.is_some() {
                self.fit(&mut request, &sender);
            }
            let response = match sender.try_send_request(request).await {
                Ok(response) => response,
                // Boxed, as connecting is: the retry's futures and the failed request would
                // otherwise sit in every request's future, which the transports box per call.
                Err(failed) => {
                    let (retried, response) = Box::pin(self.retry(failed)).await?;
                    sender = retried;
                    response
                }
            };
            let pool = Arc::downgrade(&self.shared);
            Ok(response.map(|body| PooledBody {
                body,
                home: Some((sender, pool)),
            }))
        }
    }

    /// The connection closed before the request was written (an idle connection the server had
    /// just closed): once more, on a new connection.
    async fn retry(
        &self,
        mut failed: TrySendError<Request<Full<Bytes>>>,
    ) -> Result<(Sender, Response<Incoming>), TransportError> {
        let Some(mut request) = failed.take_message() else {
            return Err(TransportError::Http(error_chain(failed.error())));
        };
        let mut sender = self.connect().await?;
        self.fit(&mut request, &sender);
        let response = sender
            .try_send_request(request)
            .await
            .map_err(|e| TransportError::Http(error_chain(e.error())))?;
        Ok((sender, response))
    }
}

/// A response body that returns its connection to the pool once read to its end.
#[derive(Debug)]
pub(crate) struct PooledBody {
    body: Incoming,
    home: Option<(Sender, Weak<Shared>)>,
}

impl PooledBody {
    fn release(&mut self) {
        // An HTTP/2 connection never left the stack.
        if let Some((sender @ Sender::H1(_), pool)) = self.home.take()
            && let Some(pool) = pool.upgrade()
            && !sender.is_closed()
        {
            let mut idle = pool.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < MAX_IDLE {
                idle.push((sender, Instant::now()));
            }
        }
    }
}

impl Body for PooledBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => self.release(),
            Poll::Ready(Some(Ok(_))) if self.body.is_end_stream() => self.release(),
            Poll::Ready(Some(Err(_))) => self.home = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
