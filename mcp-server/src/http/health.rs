//! The liveness and readiness probes, and the draining state they report.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http::header::{ALLOW, CONTENT_TYPE};
use http::request::Parts;
use http::{HeaderValue, Method, Response, StatusCode};
use tokio::sync::{Mutex, watch};
use tokio::time::Instant;

use super::{HttpBody, Shared};

/// How long the hub has to answer the readiness check.
const HUB_TIMEOUT: Duration = Duration::from_secs(1);

/// How long the hub's answer is reused: a storm of probes costs one hub read per interval.
const HUB_CACHE: Duration = Duration::from_secs(1);

/// The key the readiness check reads (it never exists: the read is all that counts).
const PROBE_KEY: &str = "mcp-readiness-probe";

/// The endpoint's health: whether it drains, and the hub's last answer.
pub(crate) struct Health {
    /// Turns true when draining begins; never back.
    draining: watch::Sender<bool>,
    /// Draining was logged.
    announced: AtomicBool,
    /// When the hub was last asked, and what it said (`None`: it answered).
    hub: Mutex<Option<(Instant, Option<&'static str>)>>,
}

impl Default for Health {
    fn default() -> Self {
        Self {
            draining: watch::channel(false).0,
            announced: AtomicBool::new(false),
            hub: Mutex::new(None),
        }
    }
}

impl Health {
    /// Begins draining (idempotent): the readiness probe answers 503 from now on.
    pub(crate) fn drain(&self) -> bool {
        self.draining.send_replace(true);
        !self.announced.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn is_draining(&self) -> bool {
        *self.draining.borrow()
    }

    /// Resolves once draining began.
    pub(crate) async fn drained(&self) {
        let mut draining = self.draining.subscribe();
        let _ = draining.wait_for(|draining| *draining).await;
    }

    /// Whether `parts` asks for a probe of this endpoint (a mounted route that claims the
    /// same path keeps it). Two string comparisons on the usual request.
    pub(crate) fn claims(shared: &Shared, parts: &Parts) -> bool {
        let path = parts.uri.path();
        let config = &shared.config;
        let probe = config.liveness_path.as_deref() == Some(path)
            || config.readiness_path.as_deref() == Some(path);
        probe
            && !config
                .routes
                .iter()
                .any(|routes| routes.claims(&parts.method, &parts.uri))
    }

    /// Answers a probe request (one [`claims`](Self::claims) accepted).
    pub(crate) async fn answer(&self, shared: &Shared, parts: &Parts) -> Response<HttpBody> {
        if parts.method != Method::GET && parts.method != Method::HEAD {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "");
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        if shared.config.liveness_path.as_deref() == Some(parts.uri.path()) {
            return plain(StatusCode::OK, "ok\n");
        }
        let why = if self.is_draining() {
            Some("draining")
        } else {
            self.hub(shared).await
        };
        match why {
            None => json(StatusCode::OK, br#"{"ready":true}"#.to_vec()),
            Some(reason) => {
                let body = serde_json::json!({"ready": false, "reason": reason});
                json(
                    StatusCode::SERVICE_UNAVAILABLE,
                    body.to_string().into_bytes(),
                )
            }
        }
    }

    /// Why the hub is not ready (`None`: it answered), asked at most once per [`HUB_CACHE`]
    /// by one probe at a time.
    async fn hub(&self, shared: &Shared) -> Option<&'static str> {
        let mut last = self.hub.lock().await;
        if let Some((at, why)) = *last
            && at.elapsed() < HUB_CACHE
        {
            return why;
        }
        let store = shared.server.settings().states.store().clone();
        let key = shared.config.sessions.namespace.key(PROBE_KEY);
        let why = match tokio::time::timeout(HUB_TIMEOUT, store.get(&key)).await {
            Ok(Ok(_)) => None,
            Ok(Err(err)) => {
                tracing::warn!(%err, "readiness: the hub failed");
                Some("the hub failed")
            }
            Err(_) => {
                tracing::warn!(timeout = ?HUB_TIMEOUT, "readiness: the hub did not answer in time");
                Some("the hub did not answer in time")
            }
        };
        *last = Some((Instant::now(), why));
        why
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<HttpBody> {
    let mut response = Response::new(HttpBody::full(text.as_bytes().to_vec()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn json(status: StatusCode, body: Vec<u8>) -> Response<HttpBody> {
    let mut response = super::json_response(status, body);
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    );
    response
}
