//! The console's HTTP server: the guard (token, Host, Origin), the page and the API routes.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::Incoming;
use serde_json::{Value, json};

use super::api::{self, ApiError};
use super::state::State;

/// The page: HTML, CSS and JS in one file, embedded in the binary.
const PAGE: &str = include_str!("page.html");

/// What a request must carry and where it must come from.
#[derive(Debug)]
pub(crate) struct Guard {
    /// The secret, as printed in the URL.
    pub(crate) token: String,
    /// The port the console listens on.
    pub(crate) port: u16,
}

impl Guard {
    /// The hosts the console answers to.
    fn host_ok(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return false;
        };
        host == format!("127.0.0.1:{}", self.port) || host == format!("localhost:{}", self.port)
    }

    /// No `Origin`, or this console's own.
    fn own_origin(&self, headers: &HeaderMap) -> bool {
        match headers.get(header::ORIGIN) {
            None => true,
            Some(origin) => origin.to_str().is_ok_and(|origin| {
                origin == format!("http://127.0.0.1:{}", self.port)
                    || origin == format!("http://localhost:{}", self.port)
            }),
        }
    }

    /// No `Origin`, or this console's own; no cross-site fetch metadata.
    fn origin_ok(&self, headers: &HeaderMap) -> bool {
        if !self.own_origin(headers) {
            return false;
        }
        match headers.get("sec-fetch-site").and_then(|h| h.to_str().ok()) {
            None | Some("same-origin" | "none") => true,
            Some(_) => false,
        }
    }

    fn matches(&self, candidate: &str) -> bool {
        // Compared in constant time for equal lengths.
        let (a, b) = (candidate.as_bytes(), self.token.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    /// The token from the `X-Mcp-Console-Token` header: the only place the API takes it from
    /// (no cookie: cookies are not isolated by port, so every server on 127.0.0.1 would get
    /// it; no URL query: it would reach logs and the `Referer`).
    fn token_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get("x-mcp-console-token")
            .and_then(|h| h.to_str().ok())
            .is_some_and(|value| self.matches(value))
    }
}

/// A whole answer, or the event stream.
type Body = UnsyncBoxBody<Bytes, Infallible>;

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(full(body.to_owned()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn json_response(status: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// Headers every answer carries: no caching, no framing, no referrer (the URL has the token).
fn harden(response: &mut Response<Body>) {
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-store"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        http::HeaderValue::from_static("no-referrer"),
    );
    headers.insert("x-frame-options", http::HeaderValue::from_static("DENY"));
    headers.insert(
        "x-content-type-options",
        http::HeaderValue::from_static("nosniff"),
    );
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            http::HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
        );
    }
}

/// The page, its inline script and style allowed by a fresh nonce (nothing else may run).
fn page() -> Response<Body> {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "no randomness for the page\n",
        );
    }
    let nonce: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    // The revisions come from mcp-adapters' descriptors, newest first.
    let options: String = mcp_client::Revision::ALL
        .iter()
        .map(|r| format!("<option>{r}</option>"))
        .collect();
    let html = PAGE
        .replace("{{NONCE}}", &nonce)
        .replace("{{REVISION_OPTIONS}}", &options);
    let mut response = Response::new(full(html));
    let policy = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         img-src data:; media-src data:; connect-src 'self'; frame-ancestors 'none'; \
         form-action 'none'; base-uri 'none'"
    );
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(value) = http::HeaderValue::try_from(policy) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

/// Answers one request.
pub(crate) async fn handle(
    state: Arc<State>,
    guard: Arc<Guard>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let mut response = route(state, &guard, request).await;
    harden(&mut response);
    Ok(response)
}

async fn route(state: Arc<State>, guard: &Guard, request: Request<Incoming>) -> Response<Body> {
    let headers = request.headers();
    if !guard.host_ok(headers) {
        return text(StatusCode::FORBIDDEN, "forbidden: unknown Host\n");
    }
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    // The page holds no secret and needs no token: the token comes in the URL's fragment
    // (`/#token=...`), which the browser keeps to itself, and the page's script sends it in
    // a header. Its navigation may come from anywhere (the launch file is a file:// page), but
    // not from a foreign Origin; framing is refused (CSP frame-ancestors, X-Frame-Options).
    if method == Method::GET && path == "/" {
        if !guard.own_origin(headers) {
            return text(StatusCode::FORBIDDEN, "forbidden: foreign Origin\n");
        }
        return page();
    }
    if !guard.origin_ok(headers) {
        return text(StatusCode::FORBIDDEN, "forbidden: foreign Origin\n");
    }
    if !guard.token_ok(headers) {
        return text(
            StatusCode::FORBIDDEN,
            "forbidden: the API takes the console's token in the X-Mcp-Console-Token header \
             (open the URL `mcp console` printed)\n",
        );
    }
    let query = request.uri().query().unwrap_or_default().to_owned();
    let number = |name: &str| {
        query
            .split('&')
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| v.parse::<u64>().ok())
    };
    match (method, path.as_str()) {
        (Method::GET, "/api/events") => {
            let after = number("after").unwrap_or(0);
            let wait = match number("wait") {
                Some(0) => std::time::Duration::ZERO,
                _ => api::EVENTS_WAIT,
            };
            json_response(StatusCode::OK, state.events_after(after, wait).await)
        }
        (Method::GET, "/api/stream") => event_stream(state, number("after").unwrap_or(0)),
        (Method::GET, "/api/result") => match number("job").and_then(|job| state.result(job)) {
            Some(result) => json_response(StatusCode::OK, result),
            None => error_response(&ApiError::NotFound(
                "no such result (still running, or forgotten)".into(),
            )),
        },
        (Method::GET, "/api/connections") => {
            json_response(StatusCode::OK, api::connections(&state).to_string())
        }
        (Method::POST, route) => {
            let Some(action) = api::Action::of(route) else {
                return text(StatusCode::NOT_FOUND, "not found\n");
            };
            let body = match read_json(request, state.limits.max_body).await {
                Ok(body) => body,
                Err(e) => return error_response(&e),
            };
            // `?async=1`: answered at once with a job id; the result comes on the event
            // stream (so no number of waiting calls holds the browser's connections).
            if number("async") == Some(1) {
                return match api::start_job(state, action, body) {
                    Ok(job) => json_response(StatusCode::ACCEPTED, json!({"job": job}).to_string()),
                    Err(e) => error_response(&e),
                };
            }
            match action.run(state, body).await {
                Ok(value) => json_response(StatusCode::OK, value.to_string()),
                Err(e) => error_response(&e),
            }
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

/// `GET /api/stream?after=SEQ`: the events after `SEQ` as server-sent events, one
/// `data:` line per batch (`{"events": [...], "next": SEQ, "missed": N}`, as
/// `/api/events` answers), a comment every [`api::EVENTS_WAIT`] without events; it runs until
/// the page goes away.
fn event_stream(state: Arc<State>, after: u64) -> Response<Body> {
    let batches = futures::stream::unfold((state, after), |(state, after)| async move {
        let batch = state.events_page(after, api::EVENTS_WAIT).await;
        let frame = if batch.empty {
            Bytes::from_static(b": waiting\n\n")
        } else {
            Bytes::from(format!("data: {}\n\n", batch.text))
        };
        let next = batch.next;
        Some((
            Ok::<_, Infallible>(hyper::body::Frame::data(frame)),
            (state, next),
        ))
    });
    let mut response = Response::new(StreamBody::new(batches).boxed_unsync());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    response
}

fn error_response(error: &ApiError) -> Response<Body> {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::BAD_REQUEST);
    json_response(status, error.body().to_string())
}

/// The request's JSON body, read within `limit` bytes (`--max-body`): a larger one is refused
/// with 413, naming the limit and the flag.
async fn read_json(request: Request<Incoming>, limit: usize) -> Result<Value, ApiError> {
    let json_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    // A cross-site form cannot send application/json without a preflight the console fails.
    if !json_type {
        return Err(ApiError::BadRequest(
            "the API takes Content-Type: application/json".into(),
        ));
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(ApiError::TooLarge { limit });
    }
    let collected = Limited::new(request.into_body(), limit)
        .collect()
        .await
        .map_err(|e| {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                ApiError::TooLarge { limit }
            } else {
                ApiError::BadRequest(format!("cannot read the body: {e}"))
            }
        })?;
    serde_json::from_slice(&collected.to_bytes())
        .map_err(|e| ApiError::BadRequest(format!("the body is not JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(list: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in list {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    fn guard() -> Guard {
        Guard {
            token: "abc123".into(),
            port: 4000,
        }
    }

    #[test]
    fn the_token_comes_only_from_the_header() {
        let g = guard();
        assert!(g.token_ok(&headers(&[("x-mcp-console-token", "abc123")])));
        assert!(!g.token_ok(&headers(&[("x-mcp-console-token", "abc124")])));
        assert!(!g.token_ok(&headers(&[("x-mcp-console-token", "abc12")])));
        // A cookie is no way in (cookies are not isolated by port).
        assert!(!g.token_ok(&headers(&[("cookie", "a=b; mcp_console_4000=abc123")])));
        assert!(!g.token_ok(&headers(&[("cookie", "abc123")])));
        assert!(!g.token_ok(&headers(&[])));
    }

    #[test]
    fn only_this_console_s_host_and_origin_pass() {
        let g = guard();
        for (host, ok) in [
            ("127.0.0.1:4000", true),
            ("localhost:4000", true),
            ("127.0.0.1:4001", false),
            ("attacker.example:4000", false),
            ("127.0.0.1", false),
        ] {
            assert_eq!(g.host_ok(&headers(&[("host", host)])), ok, "{host}");
        }
        assert!(!g.host_ok(&headers(&[])));
        for (origin, ok) in [
            ("http://127.0.0.1:4000", true),
            ("http://localhost:4000", true),
            ("https://127.0.0.1:4000", false),
            ("http://127.0.0.1:4001", false),
            ("null", false),
        ] {
            assert_eq!(g.origin_ok(&headers(&[("origin", origin)])), ok, "{origin}");
        }
        assert!(g.origin_ok(&headers(&[])));
        assert!(g.origin_ok(&headers(&[("sec-fetch-site", "none")])));
        assert!(!g.origin_ok(&headers(&[("sec-fetch-site", "cross-site")])));
    }
}
