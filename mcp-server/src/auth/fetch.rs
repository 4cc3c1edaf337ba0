//! Bounded HTTPS requests for the resource server: key sets and introspection.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;

/// Why the resource server does not fetch `url`, if it does not: only `https://` URLs, and
/// `http://` to a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`) for development and
/// tests. A key set fetched in clear could be swapped on the way, and introspection sends the
/// resource server's client secret.
pub(crate) fn refused_url(url: &str) -> Option<String> {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return Some(format!("`{url}` is not a URL"));
    };
    match uri.scheme_str() {
        Some("https") if uri.host().is_some() => None,
        Some("http") if uri.host().is_some_and(is_loopback_host) => None,
        Some("http") => Some(format!(
            "`{url}`: http:// is accepted only to a loopback host; use https://"
        )),
        _ => Some(format!("`{url}` is not an https:// URL")),
    }
}

/// `localhost`, or a loopback IP address (an IPv6 one in brackets, as URLs write it).
fn is_loopback_host(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An HTTPS (and plain HTTP to a loopback host, for development and tests) client with the web PKI roots (and the
/// extra certificate authorities it was given).
#[derive(Clone, Debug)]
pub(crate) struct Fetcher {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    limit: usize,
}

impl Fetcher {
    /// Requests time out after `timeout`; bodies over `limit` bytes are refused.
    pub(crate) fn new(timeout: Duration, limit: usize) -> Self {
        Self::trusting(timeout, limit, &[])
    }

    /// Like [`Fetcher::new`], trusting the certificate authorities `extra` besides the web PKI
    /// roots (a private PKI, a test CA).
    pub(crate) fn trusting(
        timeout: Duration,
        limit: usize,
        extra: &[CertificateDer<'static>],
    ) -> Self {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        // A certificate rustls cannot read as a CA is skipped: the peer it was for stays
        // untrusted and its fetches fail with the TLS error.
        let _ = roots.add_parsable_certificates(extra.iter().cloned());
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map(|b| b.with_root_certificates(roots).with_no_client_auth());
        let connector = match config {
            Ok(config) => hyper_rustls::HttpsConnectorBuilder::new()
                .with_tls_config(config)
                .https_or_http()
                .enable_http1()
                .enable_http2()
                .build(),
            // The ring provider always has safe protocol versions; kept total all the same.
            Err(_) => hyper_rustls::HttpsConnectorBuilder::new()
                .with_webpki_roots()
                .https_or_http()
                .enable_http1()
                .enable_http2()
                .build(),
        };
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
        if let Some(why) = refused_url(&request.uri().to_string()) {
            return Err(why);
        }
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

#[cfg(test)]
mod tests {
    use super::refused_url;

    #[test]
    fn plain_http_is_fetched_only_from_loopback() {
        for url in [
            "https://auth.example.com/jwks.json",
            "https://10.0.0.1/introspect",
            "http://127.0.0.1:8080/jwks.json",
            "http://127.1.2.3/jwks.json",
            "http://localhost:9000/introspect",
            "http://LOCALHOST/introspect",
            "http://[::1]:9000/introspect",
        ] {
            assert_eq!(refused_url(url), None, "{url}");
        }
        for url in [
            "http://auth.example.com/jwks.json",
            "http://10.0.0.1/introspect",
            "http://localhost.example.com/jwks.json",
            "http://[::2]/jwks.json",
            "ftp://127.0.0.1/jwks.json",
            "file:///etc/passwd",
            "not a url",
            "/jwks.json",
        ] {
            assert!(refused_url(url).is_some(), "{url}");
        }
    }
}
