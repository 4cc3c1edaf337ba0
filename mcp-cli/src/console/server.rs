//! The console's HTTP server: the guard (token, Host, Origin), the page and the API routes.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::Value;

use super::api::{self, ApiError};
use super::state::State;

/// The page: HTML, CSS and JS in one file, embedded in the binary.
const PAGE: &str = include_str!("page.html");

/// The largest request body the API reads.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// What a request must carry and where it must come from.
#[derive(Debug)]
pub(crate) struct Guard {
    /// The secret, as printed in the URL.
    pub(crate) token: String,
    /// The port the console listens on.
    pub(crate) port: u16,
}

impl Guard {
    /// The cookie the page gets when it opens the token URL.
    fn cookie_name(&self) -> String {
        format!("mcp_console_{}", self.port)
    }

    /// The hosts the console answers to.
    fn host_ok(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return false;
        };
        host == format!("127.0.0.1:{}", self.port) || host == format!("localhost:{}", self.port)
    }

    /// No `Origin`, or this console's own; no cross-site fetch metadata.
    fn origin_ok(&self, headers: &HeaderMap) -> bool {
        if let Some(origin) = headers.get(header::ORIGIN) {
            let Ok(origin) = origin.to_str() else {
                return false;
            };
            if origin != format!("http://127.0.0.1:{}", self.port)
                && origin != format!("http://localhost:{}", self.port)
            {
                return false;
            }
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

    /// The token from the console's cookie or the `X-Mcp-Console-Token` header.
    fn token_ok(&self, headers: &HeaderMap) -> bool {
        if let Some(value) = headers
            .get("x-mcp-console-token")
            .and_then(|h| h.to_str().ok())
        {
            return self.matches(value);
        }
        let name = self.cookie_name();
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|h| h.to_str().ok())
            .flat_map(|h| h.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(k, v)| k == name && self.matches(v))
    }

    /// The token from `?token=` of the page URL.
    fn query_token_ok(&self, uri: &http::Uri) -> bool {
        uri.query()
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter_map(|pair| pair.split_once('='))
            .any(|(k, v)| k == "token" && self.matches(v))
    }
}

type Body = Full<Bytes>;

fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn json_response(status: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
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
    let mut response = Response::new(Full::new(Bytes::from(html)));
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
    if !guard.origin_ok(headers) {
        return text(StatusCode::FORBIDDEN, "forbidden: foreign Origin\n");
    }
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    // The token URL: trade the token for a cookie and show the page without it in the URL.
    if method == Method::GET && path == "/" && guard.query_token_ok(request.uri()) {
        let mut response = text(StatusCode::SEE_OTHER, "");
        let cookie = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            guard.cookie_name(),
            guard.token
        );
        if let Ok(value) = http::HeaderValue::try_from(cookie) {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
        response
            .headers_mut()
            .insert(header::LOCATION, http::HeaderValue::from_static("/"));
        return response;
    }
    if !guard.token_ok(headers) {
        return text(
            StatusCode::FORBIDDEN,
            "forbidden: open the URL `mcp console` printed (it carries the console's token)\n",
        );
    }
    match (method, path.as_str()) {
        (Method::GET, "/") => page(),
        (Method::GET, "/api/events") => {
            let query = request.uri().query().unwrap_or_default();
            let number = |name: &str| {
                query
                    .split('&')
                    .filter_map(|p| p.split_once('='))
                    .find(|(k, _)| *k == name)
                    .and_then(|(_, v)| v.parse::<u64>().ok())
            };
            let after = number("after").unwrap_or(0);
            let wait = match number("wait") {
                Some(0) => std::time::Duration::ZERO,
                _ => api::EVENTS_WAIT,
            };
            json_response(StatusCode::OK, state.events_after(after, wait).await)
        }
        (Method::GET, "/api/connections") => {
            json_response(StatusCode::OK, api::connections(&state).to_string())
        }
        (Method::POST, route) => {
            let body = match read_json(request).await {
                Ok(body) => body,
                Err(e) => return error_response(&e),
            };
            let answered = match route {
                "/api/connect" => api::connect(state, body).await,
                "/api/disconnect" => api::disconnect(state, body).await,
                "/api/list" => api::list_kind(state, body).await,
                "/api/call" => api::call(state, body).await,
                "/api/cancel-task" => api::cancel_task(state, body).await,
                "/api/read" => api::read(state, body).await,
                "/api/prompt" => api::prompt(state, body).await,
                "/api/complete" => api::complete(state, body).await,
                "/api/log-level" => api::log_level(state, body).await,
                "/api/answer" => api::answer(state, body).await,
                "/api/listen" => api::listen(state, body).await,
                "/api/unlisten" => api::unlisten(state, body).await,
                "/api/lens" => api::lens(state, body).await,
                _ => return text(StatusCode::NOT_FOUND, "not found\n"),
            };
            match answered {
                Ok(value) => json_response(StatusCode::OK, value.to_string()),
                Err(e) => error_response(&e),
            }
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn error_response(error: &ApiError) -> Response<Body> {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::BAD_REQUEST);
    json_response(status, error.body().to_string())
}

async fn read_json(request: Request<Incoming>) -> Result<Value, ApiError> {
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
    let collected = Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| ApiError::BadRequest(format!("cannot read the body: {e}")))?;
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
    fn the_token_comes_from_the_header_the_cookie_or_the_url() {
        let g = guard();
        assert!(g.token_ok(&headers(&[("x-mcp-console-token", "abc123")])));
        assert!(!g.token_ok(&headers(&[("x-mcp-console-token", "abc124")])));
        assert!(!g.token_ok(&headers(&[("x-mcp-console-token", "abc12")])));
        assert!(g.token_ok(&headers(&[("cookie", "a=b; mcp_console_4000=abc123")])));
        // Another console's cookie (another port) is not this one's.
        assert!(!g.token_ok(&headers(&[("cookie", "mcp_console_4001=abc123")])));
        assert!(!g.token_ok(&headers(&[])));
        assert!(g.query_token_ok(&"/?x=1&token=abc123".parse().unwrap()));
        assert!(!g.query_token_ok(&"/?token=abc".parse().unwrap()));
        assert!(!g.query_token_ok(&"/".parse().unwrap()));
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
