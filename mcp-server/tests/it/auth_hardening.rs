//! The resource server's hardening after the outside review of issue 44, over real sockets on
//! 127.0.0.1:
//!
//! - method scopes are keyed by operation: a scope set on `resources/subscribe` covers
//!   2026-07-28's `subscriptions/listen` with `resourceSubscriptions`, one set on
//!   `server/discover` covers `initialize` (finding 8);
//! - `GET /mcp`, `DELETE /mcp` and `GET /sse` check the required scopes (finding 9);
//! - introspection remembers refused tokens, bounds its calls in flight, and plain `http://`
//!   is fetched only from loopback (finding 13);
//! - a 401 says a fixed sentence, never the parser's detail (finding 14).

use crate::raw_http;
use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderMap, StatusCode};
use mcp_auth::{Audience, BearerChallenge, Challenge, Claims, ScopeSet};
use mcp_server::auth::{
    AuthConfigError, IntrospectionVerifier, JwtVerifier, ResourceServer, StaticTokens,
};
use mcp_server::http::HttpConfig;
use mcp_server::{NoArgs, Resource, ResourceRequest, Revision, Server, Tool};
use raw_http::{RawRequest, RawResponse, Running, WAIT};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::{Notify, watch};

const ISSUER: &str = "https://auth.example.test";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const LEGACY: [Revision; 3] = [
    Revision::V2025_03_26,
    Revision::V2025_06_18,
    Revision::V2025_11_25,
];

async fn config(_: ResourceRequest) -> String {
    "{}".to_owned()
}

async fn hello(_: NoArgs) -> String {
    "hello".to_owned()
}

fn now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

fn claims(resource: &str, sub: &str, scope: &str) -> Claims {
    Claims {
        iss: Some(ISSUER.into()),
        sub: Some(sub.into()),
        aud: Some(Audience::One(resource.into())),
        exp: Some(now() + 3600),
        scope: ScopeSet::parse(scope),
        ..Claims::default()
    }
}

/// A protected server whose `resources/subscribe` needs `mcp:watch` and whose
/// `server/discover` needs `mcp:hello`, besides the required `mcp:read`. Tokens (all alice's):
/// `none` (no scope), `read`, `hello` (read, hello) and `watch` (read, hello, watch).
async fn protected() -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let tokens = StaticTokens::new()
        .token("none", claims(&resource, "alice", ""))
        .token("read", claims(&resource, "alice", "mcp:read"))
        .token("hello", claims(&resource, "alice", "mcp:read mcp:hello"))
        .token(
            "watch",
            claims(&resource, "alice", "mcp:read mcp:hello mcp:watch"),
        )
        .token(
            "expired",
            Claims {
                exp: Some(now() - 3600),
                ..claims(&resource, "alice", "mcp:read")
            },
        );
    let auth = ResourceServer::builder(resource, ISSUER)
        .required_scopes(["mcp:read"])
        .method_scopes("resources/subscribe", ["mcp:watch"])
        .method_scopes("server/discover", ["mcp:hello"])
        .verifier(tokens)
        .build()
        .unwrap();
    let server = Server::builder("hardened", "1")
        .tool(Tool::new("hello", hello))
        .resource(Resource::new("config://app", "config", config))
        .build()
        .unwrap();
    Running::start_listener(listener, server, HttpConfig::new().auth(auth)).await
}

fn post(
    revision: Revision,
    token: &str,
    session: Option<&str>,
    body: &Value,
) -> RawRequest<'static> {
    let mut request = RawRequest::new("POST", "/mcp")
        .header("Accept", ACCEPT_BOTH)
        .header("Authorization", &format!("Bearer {token}"));
    if revision >= Revision::V2025_06_18 {
        request = request.header("MCP-Protocol-Version", revision.as_str());
    }
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    if revision == Revision::V2026_07_28 {
        request = request.header("Mcp-Method", body["method"].as_str().unwrap_or_default());
    }
    request.json(body)
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn initialize(revision: Revision) -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": revision.as_str(), "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

async fn open_session(server: &Running, revision: Revision, token: &str) -> String {
    let init = post(revision, token, None, &initialize(revision))
        .send(server.addr)
        .await;
    assert_eq!(init.status, 200, "{revision}: {init:?}");
    let session = init.header("mcp-session-id").unwrap().to_owned();
    let done = post(
        revision,
        token,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .send(server.addr)
    .await;
    assert_eq!(done.status, 202);
    session
}

fn challenge(response: &RawResponse) -> BearerChallenge {
    let header = response
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("a challenge: {response:?}"));
    BearerChallenge::find(&Challenge::parse_all(header).unwrap()).unwrap()
}

/// A 403 `insufficient_scope` whose challenge names `scope`, with the revision's error body.
fn insufficient(revision: Revision, response: &RawResponse, scope: &str, id: Option<i64>) {
    assert_eq!(response.status, 403, "{revision}: {response:?}");
    let challenge = challenge(response);
    assert_eq!(
        challenge.error.as_deref(),
        Some("insufficient_scope"),
        "{revision}"
    );
    assert_eq!(
        challenge.scope.as_deref().map(ScopeSet::parse),
        Some(ScopeSet::parse(scope)),
        "{revision}"
    );
    // A GET or DELETE names no request: its error has no id to give, so it is rendered the
    // way the revision's schema allows an error without one.
    if let Some(id) = id {
        let body = response.json();
        assert!(body["error"]["code"].is_i64(), "{revision}: {body}");
        support::check(revision, "JSONRPCMessage", &body);
        assert_eq!(body["id"], id, "{revision}: {body}");
    } else {
        support::check_bodiless_refusal(response, revision);
    }
}

#[tokio::test]
async fn method_scopes_cover_every_revisions_name_of_the_operation() {
    let server = protected().await;
    // `initialize` is the legacy name of `server/discover`: its scope applies.
    for revision in LEGACY {
        let refused = post(revision, "read", None, &initialize(revision))
            .send(server.addr)
            .await;
        insufficient(revision, &refused, "mcp:read mcp:hello", Some(0));
        let session = open_session(&server, revision, "hello").await;
        let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
            "params": {"uri": "config://app"}});
        let refused = post(revision, "hello", Some(&session), &subscribe)
            .send(server.addr)
            .await;
        insufficient(revision, &refused, "mcp:read mcp:watch", Some(1));
        let session = open_session(&server, revision, "watch").await;
        let subscribed = post(revision, "watch", Some(&session), &subscribe)
            .send(server.addr)
            .await;
        assert_eq!(subscribed.status, 200, "{revision}: {subscribed:?}");
    }
    let revision = Revision::V2026_07_28;
    let discover = json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover",
        "params": {"_meta": meta()}});
    let refused = post(revision, "read", None, &discover)
        .send(server.addr)
        .await;
    insufficient(revision, &refused, "mcp:read mcp:hello", Some(2));
    let described = post(revision, "hello", None, &discover)
        .send(server.addr)
        .await;
    assert_eq!(described.status, 200, "{described:?}");
    // A listen asking for resource updates is what `resources/subscribe` does.
    let listen = |notifications: Value| {
        json!({"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen",
            "params": {"_meta": meta(), "notifications": notifications}})
    };
    let resources = listen(json!({"resourceSubscriptions": ["config://app"]}));
    let refused = post(revision, "hello", None, &resources)
        .send(server.addr)
        .await;
    insufficient(revision, &refused, "mcp:read mcp:watch", Some(3));
    for (token, body) in [
        ("watch", resources),
        ("hello", listen(json!({"toolsListChanged": true}))),
    ] {
        let mut stream = post(revision, token, None, &body).open(server.addr).await;
        assert_eq!(stream.status, 200, "{token}");
        let ack = tokio::time::timeout(WAIT, stream.message())
            .await
            .unwrap()
            .expect("the acknowledgement");
        support::check(revision, "SubscriptionsAcknowledgedNotification", &ack);
    }
}

#[test]
fn a_method_scope_for_a_name_no_revision_defines_is_refused() {
    let built = ResourceServer::builder("https://mcp.example.com/mcp", ISSUER)
        .method_scopes("resource/subscribe", ["mcp:watch"])
        .verifier(StaticTokens::new())
        .build();
    assert!(
        matches!(&built, Err(AuthConfigError::UnknownMethod(m)) if m == "resource/subscribe"),
        "{built:?}"
    );
}

#[tokio::test]
async fn get_delete_and_the_sse_stream_check_the_required_scopes() {
    let server = protected().await;
    for revision in LEGACY {
        let session = open_session(&server, revision, "hello").await;
        let request = |method: &'static str, token: &str| {
            let mut request = RawRequest::new(method, "/mcp")
                .header("Accept", "text/event-stream")
                .header("Authorization", &format!("Bearer {token}"))
                .header("Mcp-Session-Id", &session);
            if revision >= Revision::V2025_06_18 {
                request = request.header("MCP-Protocol-Version", revision.as_str());
            }
            request
        };
        for method in ["GET", "DELETE"] {
            let refused = request(method, "none").send(server.addr).await;
            insufficient(revision, &refused, "mcp:read", None);
        }
        // The same principal with the required scope is served.
        let stream = request("GET", "hello").open(server.addr).await;
        assert_eq!(stream.status, 200, "{revision}");
        drop(stream);
        let deleted = request("DELETE", "hello").send(server.addr).await;
        assert!(
            (200..300).contains(&deleted.status),
            "{revision}: {deleted:?}"
        );
    }
    let sse = |token: &str| {
        RawRequest::new("GET", "/sse")
            .header("Accept", "text/event-stream")
            .header("Authorization", &format!("Bearer {token}"))
    };
    let refused = sse("none").send(server.addr).await;
    assert_eq!(refused.status, 403, "{refused:?}");
    let challenge = challenge(&refused);
    assert_eq!(challenge.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(challenge.scope.as_deref(), Some("mcp:read"));
    let mut stream = sse("read").open(server.addr).await;
    assert_eq!(stream.status, 200);
    let endpoint = tokio::time::timeout(WAIT, stream.event())
        .await
        .unwrap()
        .expect("the endpoint event");
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
}

/// A `none`-algorithm JWT: the parser's error names every algorithm it knows.
fn unsigned_jwt() -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(br#"{"sub":"mallory","exp":9999999999}"#);
    format!("{header}.{payload}.")
}

#[tokio::test]
async fn a_refused_token_gets_a_fixed_description_not_the_parsers_detail() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let auth = ResourceServer::builder(format!("http://127.0.0.1:{port}/mcp"), ISSUER)
        .verifier(JwtVerifier::from_jwks(jsonwebtoken::jwk::JwkSet {
            keys: Vec::new(),
        }))
        .build()
        .unwrap();
    let server = Server::builder("jwt", "1")
        .tool(Tool::new("hello", hello))
        .build()
        .unwrap();
    let server = Running::start_listener(listener, server, HttpConfig::new().auth(auth)).await;
    let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
    for token in [unsigned_jwt(), "a.b.c".to_owned(), "notajwt".to_owned()] {
        let refused = post(Revision::V2025_11_25, &token, None, &list)
            .send(server.addr)
            .await;
        assert_eq!(refused.status, 401, "{token}: {refused:?}");
        let header = refused.header("www-authenticate").unwrap().to_owned();
        let challenge = challenge(&refused);
        assert_eq!(challenge.error.as_deref(), Some("invalid_token"));
        assert_eq!(
            challenge.error_description.as_deref(),
            Some("the token is not valid"),
            "{header}"
        );
        let body = String::from_utf8_lossy(&refused.body).into_owned();
        for leak in [
            "HS256", "EdDSA", "variant", "JSON", "line", "Base64", "base64",
        ] {
            assert!(!header.contains(leak), "{leak} in {header}");
            assert!(!body.contains(leak), "{leak} in {body}");
        }
    }
}

/// A stand-in introspection endpoint on 127.0.0.1: counts the calls it gets (published on a
/// watch channel), holds each until `gate` is notified when `hold` is set, then answers
/// `{"active": false}`.
struct Introspection {
    url: String,
    calls: Arc<AtomicUsize>,
    seen: watch::Receiver<usize>,
    gate: Arc<Notify>,
}

async fn introspection(hold: bool) -> Introspection {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/introspect", listener.local_addr().unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let (tell, seen) = watch::channel(0);
    let gate = Arc::new(Notify::new());
    let (counted, released) = (calls.clone(), gate.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            let (counted, released, tell) = (counted.clone(), released.clone(), tell.clone());
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                // The head, then as many body bytes as Content-Length says.
                loop {
                    let Ok(n) = tcp.read(&mut buffer).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buffer[..n]);
                    let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
                tell.send_replace(n);
                if hold {
                    released.notified().await;
                }
                let body = br#"{"active":false}"#;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = tcp.write_all(head.as_bytes()).await;
                let _ = tcp.write_all(body).await;
            });
        }
    });
    Introspection {
        url,
        calls,
        seen,
        gate,
    }
}

fn bearer(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    headers
}

#[tokio::test]
async fn introspection_remembers_a_refused_token() {
    let endpoint = introspection(false).await;
    let auth = ResourceServer::builder("https://mcp.example.com/mcp", ISSUER)
        .verifier(IntrospectionVerifier::new(&endpoint.url, "rs", "secret"))
        .build()
        .unwrap();
    for _ in 0..3 {
        let refused = auth.authenticate(&bearer("random-1")).await.unwrap_err();
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(endpoint.calls.load(Ordering::SeqCst), 1, "asked once");
    // Another token is another call; a cache turned off asks every time.
    auth.authenticate(&bearer("random-2")).await.unwrap_err();
    assert_eq!(endpoint.calls.load(Ordering::SeqCst), 2);
    let uncached = ResourceServer::builder("https://mcp.example.com/mcp", ISSUER)
        .verifier(
            IntrospectionVerifier::new(&endpoint.url, "rs", "secret")
                .negative_cache(0, Duration::from_secs(30)),
        )
        .build()
        .unwrap();
    for _ in 0..2 {
        uncached
            .authenticate(&bearer("random-3"))
            .await
            .unwrap_err();
    }
    assert_eq!(endpoint.calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn introspections_in_flight_are_bounded() {
    let endpoint = introspection(true).await;
    let auth = ResourceServer::builder("https://mcp.example.com/mcp", ISSUER)
        .verifier(
            IntrospectionVerifier::new(&endpoint.url, "rs", "secret")
                .max_in_flight(2, Duration::from_millis(100)),
        )
        .build()
        .unwrap();
    let mut held = Vec::new();
    for n in 0..2 {
        let auth = auth.clone();
        held.push(tokio::spawn(async move {
            auth.authenticate(&bearer(&format!("held-{n}"))).await
        }));
    }
    let mut seen = endpoint.seen.clone();
    tokio::time::timeout(WAIT, seen.wait_for(|n| *n == 2))
        .await
        .expect("both calls reached the endpoint")
        .unwrap();
    // A third token finds no slot: 503 without a call.
    let third = tokio::time::timeout(WAIT, auth.authenticate(&bearer("third")))
        .await
        .expect("refused in time, not queued behind the held calls")
        .unwrap_err();
    assert_eq!(third.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(endpoint.calls.load(Ordering::SeqCst), 2);
    endpoint.gate.notify_waiters();
    for call in held {
        let refused = call.await.unwrap().unwrap_err();
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    }
    // With the slots free again, the next token is introspected.
    let endpoint_gate = endpoint.gate.clone();
    let fourth = tokio::spawn({
        let auth = auth.clone();
        async move { auth.authenticate(&bearer("fourth")).await }
    });
    tokio::time::timeout(WAIT, seen.wait_for(|n| *n == 3))
        .await
        .expect("the fourth call reached the endpoint")
        .unwrap();
    endpoint_gate.notify_waiters();
    assert_eq!(
        fourth.await.unwrap().unwrap_err().status,
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn plain_http_key_sets_and_introspection_are_refused_except_on_loopback() {
    let build = |verifier: Result<JwtVerifier, IntrospectionVerifier>| {
        let builder = ResourceServer::builder("https://mcp.example.com/mcp", ISSUER);
        match verifier {
            Ok(jwt) => builder.verifier(jwt).build(),
            Err(introspection) => builder.verifier(introspection).build(),
        }
    };
    for url in [
        "http://auth.example.com/jwks.json",
        "http://10.0.0.7/jwks.json",
        "ftp://auth.example.com/jwks.json",
    ] {
        let jwt = build(Ok(JwtVerifier::fetch(url)));
        assert!(matches!(jwt, Err(AuthConfigError::Verifier(_))), "{url}");
        let introspection = build(Err(IntrospectionVerifier::new(url, "rs", "secret")));
        assert!(
            matches!(&introspection, Err(AuthConfigError::Verifier(why)) if why.contains(url)),
            "{url}"
        );
    }
    for url in [
        "https://auth.example.com/jwks.json",
        "http://127.0.0.1:8080/jwks.json",
        "http://localhost:8080/jwks.json",
        "http://[::1]:8080/jwks.json",
    ] {
        assert!(build(Ok(JwtVerifier::fetch(url))).is_ok(), "{url}");
        assert!(
            build(Err(IntrospectionVerifier::new(url, "rs", "secret"))).is_ok(),
            "{url}"
        );
    }
}

#[tokio::test]
async fn a_verifier_used_on_its_own_never_fetches_plain_http_from_elsewhere() {
    use mcp_server::auth::TokenVerifier as _;
    // Without a resource server to refuse it at build, the fetcher refuses it: nothing is
    // sent, and the error says why.
    let verifier = IntrospectionVerifier::new("http://example.com/introspect", "rs", "secret");
    let refused = verifier.verify("token").await.unwrap_err();
    assert!(refused.to_string().contains("https://"), "{refused}");
}
