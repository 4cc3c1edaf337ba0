//! The scrape endpoint of [`Metrics`](crate::Metrics) (feature `metrics`).

use std::convert::Infallible;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ALLOW, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::Metrics;

/// The most scrapes served at once; more connections wait in the listen backlog.
const MAX_SCRAPERS: usize = 16;
/// How long a scraper may take to send its request headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// The content type of the OpenMetrics text format the registry writes.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves `metrics` at `GET /metrics` on `listener` (HTTP/1.1) until `shutdown` completes:
/// the text of [`Metrics::render`], `404` elsewhere, `405` for other methods. Meant for a
/// private address (the demo's `--metrics 127.0.0.1:9090`): it has no authentication. At
/// most 16 scrapes are served at once, each with 5 s to send its headers.
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
    let slots = Arc::new(Semaphore::new(MAX_SCRAPERS));
    let mut shutdown = pin!(shutdown);
    let mut connections = JoinSet::new();
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            () = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        while connections.try_join_next().is_some() {}
        let Ok((stream, _)) = accepted else {
            // Out of descriptors, say: the scrape is retried by the scraper.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let metrics = metrics.clone();
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let response = respond(&metrics, &request);
            async move { Ok::<_, Infallible>(response) }
        });
        connections.spawn(async move {
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(err) = served {
                tracing::debug!(%err, "metrics connection ended with an error");
            }
            drop(slot);
        });
    }
    connections.abort_all();
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
