//! Running the endpoint on a socket: the accept loop, HTTP/1.1 and HTTP/2, graceful shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::task::JoinSet;

use crate::http::{HttpConfig, HttpEndpoint};
use crate::server::Server;

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
        source: std::io::Error,
    },
    /// The listener failed.
    #[error("listener: {0}")]
    Io(#[from] std::io::Error),
}

/// Serves `server` on `addr` with the default [`HttpConfig`] (Streamable HTTP at `/mcp`,
/// HTTP+SSE at `/sse`) until Ctrl-C or SIGTERM, then shuts down gracefully.
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
/// Shutdown: stop accepting, end the long-lived SSE streams, let calls in flight finish for
/// up to [`HttpConfig::shutdown_deadline`], then cancel what is left and close every
/// connection.
pub async fn serve_with_shutdown(
    listener: TcpListener,
    endpoint: HttpEndpoint,
    signal: impl Future<Output = ()>,
) -> Result<(), HttpError> {
    let endpoint = endpoint.bound_to(listener.local_addr()?);
    let builder = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let mut signal = std::pin::pin!(signal);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut signal => break,
        };
        while connections.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                // Out of descriptors, a connection reset before accept: back off briefly.
                tracing::warn!(%err, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(%err, "could not set TCP_NODELAY");
        }
        let service_endpoint = endpoint.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let endpoint = service_endpoint.clone();
            async move { Ok::<_, Infallible>(endpoint.handle(request).await) }
        });
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        let watched = graceful.watch(connection);
        connections.spawn(async move {
            if let Err(err) = watched.await {
                tracing::debug!(%err, "connection ended with an error");
            }
        });
    }
    drop(listener);
    endpoint.close_streams();
    let deadline = endpoint.config().shutdown_deadline;
    let drained = tokio::time::timeout(deadline, async {
        graceful.shutdown().await;
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
