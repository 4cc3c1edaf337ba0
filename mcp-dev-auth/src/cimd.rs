//! Client ID metadata documents for the development authorization server: fetched over
//! HTTPS only, never from a loopback, private, link-local or multicast address (checked
//! after resolving the name, and again on connect), cached (failures too) and fetched a few at
//! a time.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::sync::Semaphore;

/// The shortest time a document (or a failure) is cached, whatever `Cache-Control` says.
pub(crate) const MIN_TTL: Duration = Duration::from_secs(60);
/// The longest time a document is cached.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(3600);
/// A document is at most this large.
const BODY_LIMIT: usize = 64 << 10;
/// A fetch takes at most this long.
const TIMEOUT: Duration = Duration::from_secs(5);
/// A client name longer than this is cut.
const NAME_LIMIT: usize = 100;

/// What a client ID metadata document says.
#[derive(Clone, Debug)]
pub(crate) struct Document {
    pub(crate) redirect_uris: Vec<String>,
    pub(crate) client_name: Option<String>,
}

/// Why a document was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not the CIMD form (https, a path, no query, fragment or user info).
    Form,
    /// Its host is (or resolves to) a loopback, private, link-local or multicast address.
    Address,
    /// Too many fetches are in flight.
    Busy,
    /// Unreachable, not 200, not JSON, or not naming itself: cached as such.
    Unusable,
}

struct Cached {
    expires: Instant,
    document: Result<Document, Refusal>,
}

/// The fetcher and its cache.
pub(crate) struct MetadataDocuments {
    client: Client<HttpsConnector<HttpConnector<FilteringResolver>>, Full<Bytes>>,
    cache: Mutex<HashMap<String, Cached>>,
    max_cached: usize,
    in_flight: Semaphore,
    allow_private: bool,
}

impl std::fmt::Debug for MetadataDocuments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataDocuments")
            .field("max_cached", &self.max_cached)
            .field("allow_private", &self.allow_private)
            .finish_non_exhaustive()
    }
}

/// Whether `ip` is a public unicast address (what a CIMD fetch may connect to by default).
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_unspecified()
                || v4.is_documentation()
                || a == 0
                // 100.64.0.0/10 (carrier-grade NAT) and 198.18.0.0/15 (benchmarking).
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                // fc00::/7 unique local, fe80::/10 link-local.
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

/// Resolves names and keeps only the addresses a fetch may connect to: the check holds at
/// connect time, so a name that resolves differently the second time gains nothing.
#[derive(Clone)]
struct FilteringResolver {
    allow_private: bool,
}

impl tower_service::Service<Name> for FilteringResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0))
                .await?
                .filter(|a| allow_private || is_public(a.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "the name resolves to no public address",
                ));
            }
            Ok(addrs.into_iter())
        })
    }
}

/// The `max-age` of a `Cache-Control` value (`None` for `no-store`/`no-cache` or none given).
fn max_age(value: &str) -> Option<Duration> {
    let mut age = None;
    for directive in value.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return None;
        }
        if let Some(seconds) = lower.strip_prefix("max-age=") {
            age = seconds
                .trim_matches('"')
                .parse::<u64>()
                .ok()
                .map(Duration::from_secs);
        }
    }
    age
}

/// Whether `url` has the CIMD form: https, a host, a path other than `/`, no query, fragment
/// or user info.
fn cimd_form(url: &url::Url) -> bool {
    url.scheme() == "https"
        && url.host().is_some()
        && url.path() != "/"
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none()
}

impl MetadataDocuments {
    /// At most `max_cached` documents kept, `max_in_flight` fetched at once; loopback and
    /// private addresses refused unless `allow_private`.
    pub(crate) fn new(max_cached: usize, max_in_flight: usize, allow_private: bool) -> Self {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let mut http = HttpConnector::new_with_resolver(FilteringResolver { allow_private });
        http.enforce_http(false);
        http.set_connect_timeout(Some(TIMEOUT));
        let builder = hyper_rustls::HttpsConnectorBuilder::new();
        let builder = match rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        {
            Ok(config) => {
                builder.with_tls_config(config.with_root_certificates(roots).with_no_client_auth())
            }
            // The ring provider always has safe protocol versions; kept total all the same.
            Err(_) => builder.with_webpki_roots(),
        };
        let connector = builder
            .https_only()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        Self {
            client: Client::builder(TokioExecutor::new()).build(connector),
            cache: Mutex::new(HashMap::new()),
            max_cached: max_cached.max(1),
            in_flight: Semaphore::new(max_in_flight.max(1)),
            allow_private,
        }
    }

    /// The document at `url`: from the cache, or fetched.
    pub(crate) async fn get(&self, url: &str) -> Result<Document, Refusal> {
        if let Some(cached) = self.cached(url) {
            return cached;
        }
        let parsed = url::Url::parse(url).map_err(|_| Refusal::Form)?;
        if !cimd_form(&parsed) || parsed.as_str() != url {
            return Err(Refusal::Form);
        }
        let host = parsed.host().ok_or(Refusal::Form)?;
        if !self.allow_private {
            let port = parsed.port_or_known_default().unwrap_or(443);
            let public = match host {
                url::Host::Ipv4(ip) => is_public(IpAddr::V4(ip)),
                url::Host::Ipv6(ip) => is_public(IpAddr::V6(ip)),
                url::Host::Domain(name) => {
                    match tokio::time::timeout(TIMEOUT, tokio::net::lookup_host((name, port))).await
                    {
                        Ok(Ok(addrs)) => {
                            let addrs: Vec<SocketAddr> = addrs.collect();
                            // Every address the name has must be public: a mix could be
                            // chosen differently at connect time.
                            !addrs.is_empty() && addrs.iter().all(|a| is_public(a.ip()))
                        }
                        // Unresolvable: unusable, and cached as such below.
                        _ => true,
                    }
                }
            };
            if !public {
                self.remember(url, Err(Refusal::Address), MIN_TTL);
                return Err(Refusal::Address);
            }
        }
        let Ok(_permit) = self.in_flight.try_acquire() else {
            return Err(Refusal::Busy);
        };
        let (document, ttl) = match self.fetch(url).await {
            Ok((document, ttl)) => (Ok(document), ttl),
            Err(()) => (Err(Refusal::Unusable), MIN_TTL),
        };
        self.remember(url, document.clone(), ttl);
        document
    }

    fn cached(&self, url: &str) -> Option<Result<Document, Refusal>> {
        let cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .get(url)
            .filter(|c| c.expires > Instant::now())
            .map(|c| c.document.clone())
    }

    fn remember(&self, url: &str, document: Result<Document, Refusal>, ttl: Duration) {
        let now = Instant::now();
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.len() >= self.max_cached && !cache.contains_key(url) {
            cache.retain(|_, c| c.expires > now);
            // Still full: the entry closest to its end makes room.
            if cache.len() >= self.max_cached
                && let Some(oldest) = cache
                    .iter()
                    .min_by_key(|(_, c)| c.expires)
                    .map(|(k, _)| k.clone())
            {
                cache.remove(&oldest);
            }
        }
        cache.insert(
            url.to_owned(),
            Cached {
                expires: now + ttl,
                document,
            },
        );
    }

    /// GET `url`: the document and how long to keep it.
    async fn fetch(&self, url: &str) -> Result<(Document, Duration), ()> {
        let request = http::Request::get(url)
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|_| ())?;
        let exchange = async {
            let response = self.client.request(request).await.map_err(|_| ())?;
            if response.status() != http::StatusCode::OK {
                return Err(());
            }
            let ttl = response
                .headers()
                .get(http::header::CACHE_CONTROL)
                .and_then(|v| v.to_str().ok())
                .and_then(max_age)
                .unwrap_or(MIN_TTL)
                .clamp(MIN_TTL, MAX_TTL);
            let body = Limited::new(response.into_body(), BODY_LIMIT)
                .collect()
                .await
                .map_err(|_| ())?
                .to_bytes();
            Ok((body, ttl))
        };
        let (body, ttl) = tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| ())??;
        let document: Value = serde_json::from_slice(&body).map_err(|_| ())?;
        if document["client_id"] != url {
            return Err(());
        }
        let redirect_uris = document["redirect_uris"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|u| crate::redirect_uri_acceptable(u))
                    .take(16)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let client_name = document["client_name"]
            .as_str()
            .map(|n| n.chars().take(NAME_LIMIT).collect());
        Ok((
            Document {
                redirect_uris,
                client_name,
            },
            ttl,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses_only() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "224.0.0.1",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "ff02::1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "2606:4700::1111", "8.8.8.8"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn cache_control_max_age() {
        assert_eq!(
            max_age("public, max-age=600"),
            Some(Duration::from_secs(600))
        );
        assert_eq!(max_age("no-store"), None);
        assert_eq!(max_age("max-age=10, no-cache"), None);
        assert_eq!(max_age("private"), None);
    }

    #[test]
    fn the_cache_is_bounded() {
        let documents = MetadataDocuments::new(2, 1, false);
        for n in 0..5 {
            documents.remember(
                &format!("https://example.com/{n}"),
                Err(Refusal::Unusable),
                MIN_TTL + Duration::from_secs(n),
            );
        }
        let cache = documents.cache.lock().unwrap();
        assert_eq!(cache.len(), 2);
        // The entries closest to their end made room.
        assert!(cache.contains_key("https://example.com/4"));
        assert!(cache.contains_key("https://example.com/3"));
    }

    #[test]
    fn only_the_cimd_form() {
        for bad in [
            "http://example.com/client.json",
            "https://example.com/",
            "https://example.com/c?x=1",
            "https://example.com/c#f",
            "https://u:p@example.com/c",
        ] {
            assert!(!cimd_form(&url::Url::parse(bad).unwrap()), "{bad}");
        }
        assert!(cimd_form(
            &url::Url::parse("https://example.com/client.json").unwrap()
        ));
    }
}
