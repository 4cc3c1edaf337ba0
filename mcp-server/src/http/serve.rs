//! Running the endpoint on a socket: its TLS, its limits and its shutdown sequence. The
//! accept loop and the connections' timers are the crate's `listen` module, which serves the
//! metrics listener alike.

use std::future::Future;
use std::pin::pin;

use hyper::body::Incoming;
use tokio::net::{TcpListener, ToSocketAddrs};

use crate::http::{HttpConfig, HttpEndpoint};
use crate::listen::{HttpError, Limits, Tls, accept};
use crate::server::Server;

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
/// served at once (beyond it, new ones wait in the listen backlog); an HTTP/1.1 connection
/// that takes longer than [`HttpConfig::header_read_timeout`] to send a request's head
/// (hyper's timer, which starts when the server waits for the head, so it also bounds the
/// pause between two requests of a kept-alive connection) is closed, and so is a connection
/// of either protocol that stays without a request in flight for
/// [`HttpConfig::idle_timeout`] (HTTP/2 ones get a `GOAWAY` first); HTTP/2 connections are
/// pinged every [`HttpConfig::http2_keep_alive`]. A failing `accept` (out of descriptors)
/// pauses accepting, from 5 ms doubling up to 1 s, instead of spinning.
///
/// Shutdown: when `signal` resolves (or [`HttpEndpoint::drain`] is called), the endpoint
/// drains: its readiness probe answers 503 at once while it keeps accepting and serving for
/// [`HttpConfig::drain_period`] (none by default). Then it stops accepting, ends the
/// long-lived SSE streams, lets calls in flight finish for up to
/// [`HttpConfig::shutdown_deadline`], then cancels what is left and closes every
/// connection. Start and stop each log one INFO line with the address, the hub
/// ([`HttpConfig::hub_label`]) and the authorization server (issuer), if any.
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
    serve_on(listener, endpoint, Some(tls), signal).await
}

async fn serve_on(
    listener: TcpListener,
    endpoint: HttpEndpoint,
    tls: Option<Tls>,
    signal: impl Future<Output = ()>,
) -> Result<(), HttpError> {
    let local = listener.local_addr()?;
    let endpoint = endpoint.bound_to(local);
    let config = endpoint.config();
    let issuer = config
        .auth
        .as_ref()
        .map(|auth| auth.metadata().authorization_servers.join(" "));
    tracing::info!(
        addr = %local,
        tls = tls.is_some(),
        path = %config.path,
        hub = %config.hub_label,
        issuer = %issuer.as_deref().unwrap_or("none"),
        "MCP endpoint listening"
    );
    let limits = Limits {
        header_read: config.header_read_timeout,
        idle: config.idle_timeout,
        http2_keep_alive: config.http2_keep_alive,
        max_connections: config.max_connections,
    };
    let deadline = config.shutdown_deadline;
    let drain_period = config.drain_period;
    let handler = endpoint.clone();
    // The signal (or `HttpEndpoint::drain`) begins draining: not ready at once, still
    // accepting for the drain period, then the shutdown below.
    let draining = endpoint.clone();
    let signal = async move {
        let signal = pin!(signal);
        tokio::select! {
            () = signal => draining.drain(),
            () = draining.drained() => {}
        }
        if !drain_period.is_zero() {
            tokio::time::sleep(drain_period).await;
        }
    };
    let connect = move |peer| {
        // The connection's facts (its peer, for per-source limits), made once for all its
        // requests.
        let facts = crate::auth::RequestFacts::from_peer(peer);
        let handler = handler.clone();
        move |request: hyper::Request<Incoming>| {
            // Boxed: hyper moves the service's future into its connection state, a copy of
            // the whole future (every branch of `handle`) on each request; a box is moved as
            // a pointer.
            Box::pin(handler.handle_from(request, &facts))
        }
    };
    let mut connections = accept(listener, limits, tls, connect, signal).await;
    endpoint.close_streams();
    let drained = tokio::time::timeout(deadline, async {
        connections.close();
        connections.join().await;
        endpoint.calls_done().await;
    })
    .await;
    if drained.is_err() {
        tracing::warn!("calls still running at the shutdown deadline were cancelled");
        endpoint.cancel_calls();
        connections.abort();
    }
    connections.join().await;
    tracing::info!(
        addr = %local,
        hub = %config.hub_label,
        issuer = %issuer.as_deref().unwrap_or("none"),
        "MCP endpoint stopped"
    );
    Ok(())
}
