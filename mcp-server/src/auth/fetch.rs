//! Bounded HTTPS requests for the resource server: key sets and introspection.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// An HTTPS (and plain HTTP, for loopback and tests) client with the web PKI roots.
#[derive(Clone, Debug)]
pub(crate) struct Fetcher {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    limit: usize,
}

impl Fetcher {
    /// Requests time out after `timeout`; bodies over `limit` bytes are refused.
    pub(crate) fn new(timeout: Duration, limit: usize) -> Self {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .build();
        Self {
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout,
            limit,
        }
    }

    /// Sends `request` and returns the status and body, within the time and size limits.
    pub(crate) async fn send(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<(http::StatusCode, Bytes), String> {
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status();
            let body = Limited::new(response.into_body(), self.limit)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok((status, body))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| format!("no answer within {:?}", self.timeout))?
    }

    /// GET `url` and its body when the status is 200.
    pub(crate) async fn get(&self, url: &str) -> Result<Bytes, String> {
        let request = http::Request::get(url)
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|e| e.to_string())?;
        match self.send(request).await? {
            (http::StatusCode::OK, body) => Ok(body),
            (status, _) => Err(format!("{url} answered {status}")),
        }
    }
}
