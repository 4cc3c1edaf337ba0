//! The scrape endpoint of [`Metrics`](crate::Metrics) (feature `metrics`).

use std::future::Future;
use std::time::Duration;

use http::header::{ALLOW, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use tokio::net::TcpListener;

use bytes::Bytes;
use http_body_util::Full;

use crate::Metrics;
use crate::listen::{Limits, accept};

/// The most scrapes served at once; more connections wait in the listen backlog.
const MAX_SCRAPERS: usize = 16;
/// How long a scraper may take to send its request headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a scraper's connection may stay open between scrapes.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// The content type of the OpenMetrics text format the registry writes.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves `metrics` at `GET /metrics` on `listener` until `shutdown` completes:
/// the text of [`Metrics::render`], `404` elsewhere, `405` for other methods. Meant for a
/// private address (the demo's `--metrics 127.0.0.1:9090`): it has no authentication. At
/// most 16 scrapes are served at once, each with 5 s to send its headers; a connection is
/// closed after 60 s without a scrape. The accept loop and connection handling are the MCP
/// endpoint's (see [`serve_with_shutdown`](crate::http::serve_with_shutdown)).
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use mcp_server::{Metrics, Server, http::serve_metrics};
///
/// let metrics = Metrics::new();
/// let server = Server::builder("demo", "1.0").metrics(&metrics).build().unwrap();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:9090").await?;
/// tokio::spawn(serve_metrics(listener, metrics, std::future::pending()));
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
pub async fn serve_metrics(
    listener: TcpListener,
    metrics: Metrics,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    // The MCP endpoint's accept loop and connection handling, with the scrape's own limits.
    let limits = Limits {
        header_read: HEADER_TIMEOUT,
        idle: IDLE_TIMEOUT,
        http2_keep_alive: None,
        max_connections: MAX_SCRAPERS,
    };
    let connect = move |_peer| {
        let metrics = metrics.clone();
        move |request: Request<Incoming>| std::future::ready(respond(&metrics, &request))
    };
    let mut connections = accept(listener, limits, None, connect, shutdown).await;
    connections.abort();
    connections.join().await;
    Ok(())
}

fn respond(metrics: &Metrics, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let status = |status: StatusCode| {
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = status;
        response
    };
    if request.uri().path() != "/metrics" {
        return status(StatusCode::NOT_FOUND);
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = status(StatusCode::METHOD_NOT_ALLOWED);
        response
            .headers_mut()
            .insert(ALLOW, http::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let mut response = Response::new(Full::new(Bytes::from(metrics.render())));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, http::HeaderValue::from_static(OPENMETRICS));
    response
}
