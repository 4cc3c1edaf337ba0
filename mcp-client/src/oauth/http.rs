//! The few HTTP requests of the OAuth flow (metadata, registration, token, the headless
//! authorization request), on the transports' own connection pools and TLS settings: one pool
//! per origin, a bounded number of origins, bounded bodies, a timeout per request, and no
//! redirect ever followed (a redirect is an answer the flow reads).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, Request, Uri};
use http_body_util::Full;

use super::OAuthError;
use crate::transport::Https;
use crate::transport::lock;
use crate::transport::pool_for;

/// The largest OAuth response body read: metadata documents and token responses are small.
pub(crate) const MAX_BODY: usize = 1024 * 1024;
/// The most origins the client keeps a pool for.
const MAX_ORIGINS: usize = 16;
/// How long one OAuth request may take, connection included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A response to one OAuth request, its body read (bounded).
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Response {
    /// The body as JSON, when the status is a success and the body parses.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        if !(200..300).contains(&self.status) {
            return None;
        }
        serde_json::from_slice(&self.body).ok()
    }
}

/// An HTTP client for the OAuth requests.
#[derive(Debug, Clone)]
pub(crate) struct HttpClient {
    https: Option<Https>,
    pools: Arc<Mutex<HashMap<String, crate::transport::PoolHandle>>>,
}

impl HttpClient {
    pub(crate) fn new(https: Option<Https>) -> Self {
        Self {
            https,
            pools: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn pool(&self, uri: &Uri) -> Result<crate::transport::PoolHandle, OAuthError> {
        let origin = crate::transport::streamable_origin(uri)
            .ok_or_else(|| OAuthError::Discovery(format!("not an http(s) URL: {uri}")))?;
        let mut pools = lock(&self.pools);
        if let Some(pool) = pools.get(&origin) {
            return Ok(pool.clone());
        }
        if pools.len() >= MAX_ORIGINS {
            pools.clear();
        }
        let pool = pool_for(uri, self.https.as_ref());
        pools.insert(origin, pool.clone());
        Ok(pool)
    }

    /// Sends one request and reads its whole answer (at most [`MAX_BODY`] bytes).
    pub(crate) async fn send(
        &self,
        method: Method,
        url: &str,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Response, OAuthError> {
        let uri: Uri = url
            .parse()
            .map_err(|_| OAuthError::Discovery(format!("invalid URL {url:?}")))?;
        let pool = self.pool(&uri)?;
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        let exchange = async {
            let response = pool.request(request).await?;
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = crate::transport::read_body(response.into_body(), MAX_BODY).await?;
            Ok::<_, crate::transport::TransportError>(Response {
                status,
                headers,
                body,
            })
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(OAuthError::Http(format!("{url}: {e}"))),
            Err(_) => Err(OAuthError::Http(format!(
                "{url}: no answer within {REQUEST_TIMEOUT:?}"
            ))),
        }
    }

    /// `GET url` asking for JSON.
    pub(crate) async fn get_json(&self, url: &str) -> Result<Response, OAuthError> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        self.send(Method::GET, url, headers, Bytes::new()).await
    }

    /// `POST url` with a form body, and HTTP Basic credentials when given.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic: Option<&str>,
        extra: HeaderMap,
    ) -> Result<Response, OAuthError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let mut headers = extra;
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(basic) = basic {
            let value = HeaderValue::try_from(format!("Basic {basic}"))
                .map_err(|_| OAuthError::Registration("client credentials not sendable".into()))?;
            headers.insert(AUTHORIZATION, value);
        }
        self.send(Method::POST, url, headers, Bytes::from(body))
            .await
    }

    /// `POST url` with a JSON body.
    pub(crate) async fn post_json(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<Response, OAuthError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let body = serde_json::to_vec(body).unwrap_or_default();
        self.send(Method::POST, url, headers, Bytes::from(body))
            .await
    }
}
