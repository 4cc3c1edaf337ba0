//! The HTTP/1.1 connection pool of the HTTP transports.
//!
//! One origin per pool (a transport talks to one server), so there is no key to hash: idle
//! connections sit in a stack, most recently used on top. A connection goes back on the stack
//! when the body of its response has been read to the end; a response dropped before its end
//! (a cancelled call's stream) takes its connection with it, because HTTP/1.1 cannot reuse a
//! connection with an unread body on it. Each request is sent in origin form with a `Host`
//! header, over a `TCP_NODELAY` connection driven by a task of its own.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::HOST;
use http::uri::PathAndQuery;
use http::{HeaderValue, Request, Response, Uri};
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::TrySendError;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;

use super::TransportError;
use super::streamable::error_chain;

type Sender = SendRequest<Full<Bytes>>;

/// The most idle connections kept; more are closed when they come back.
const MAX_IDLE: usize = 32;

/// A pool of HTTP/1.1 connections to one origin.
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// `host:port` to connect to, and the `Host` header value.
    authority: Option<(String, HeaderValue)>,
    connect_timeout: Duration,
    idle_timeout: Duration,
    idle: Mutex<Vec<(Sender, Instant)>>,
}

impl Pool {
    /// A pool for the origin of `uri` (`http` only).
    pub(crate) fn new(uri: &Uri, connect_timeout: Duration, idle_timeout: Duration) -> Self {
        let authority = uri
            .authority()
            .filter(|_| uri.scheme_str() == Some("http"))
            .and_then(|a| {
                let port = a.port_u16().unwrap_or(80);
                let host = HeaderValue::from_str(a.as_str()).ok()?;
                Some((format!("{}:{port}", a.host()), host))
            });
        Self {
            shared: Arc::new(Shared {
                authority,
                connect_timeout,
                idle_timeout,
                idle: Mutex::new(Vec::new()),
            }),
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<(Sender, Instant)>> {
        self.shared.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle connection that is still open and ready, or a new one.
    async fn checkout(&self) -> Result<Sender, TransportError> {
        loop {
            let next = self.idle().pop();
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
                "only http:// URLs with a host are supported".into(),
            ));
        };
        let stream = tokio::time::timeout(
            self.shared.connect_timeout,
            tokio::net::TcpStream::connect(addr.as_str()),
        )
        .await
        .map_err(|_| TransportError::Http(format!("connecting to {addr} timed out")))?
        .map_err(|e| TransportError::Http(format!("connecting to {addr}: {e}")))?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| TransportError::Http(error_chain(&e)))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "HTTP connection ended");
            }
        });
        Ok(sender)
    }

    /// Sends `request` (its URI absolute, as given to the transport) and returns the response,
    /// whose body gives the connection back when read to its end.
    ///
    /// The request is made ready before the returned future is first polled, and the future
    /// holds it once (an `async fn` would hold its argument twice), so that the transports'
    /// per-call futures stay small.
    pub(crate) fn request(
        &self,
        mut request: Request<Full<Bytes>>,
    ) -> impl Future<Output = Result<Response<PooledBody>, TransportError>> + Send + '_ {
        let ready = match &self.shared.authority {
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
                    "only http:// URLs with a host are supported".into(),
                ));
            }
            let mut sender = self.checkout().await?;
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
        let Some(request) = failed.take_message() else {
            return Err(TransportError::Http(error_chain(failed.error())));
        };
        let mut sender = self.connect().await?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| TransportError::Http(error_chain(&e)))?;
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
        if let Some((sender, pool)) = self.home.take()
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
