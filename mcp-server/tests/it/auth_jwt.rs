//! JWT access tokens verified against a key set: fixed, or fetched over HTTP from a local key
//! server (one fetch, cached; a rotation refetches at most once per interval; an outage keeps
//! the known keys).

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_auth::{Audience, Claims, ScopeSet};
use mcp_server::auth::{JwtVerifier, TokenVerifier, VerifyError};

struct Key {
    kid: String,
    encoding: EncodingKey,
    jwk: Jwk,
}

fn key(kid: &str) -> Key {
    let pair = rcgen::KeyPair::generate().unwrap();
    let encoding = EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).unwrap();
    let mut jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    Key {
        kid: kid.to_owned(),
        encoding,
        jwk,
    }
}

fn claims() -> Claims {
    Claims {
        iss: Some("https://as".into()),
        sub: Some("alice".into()),
        aud: Some(Audience::One("https://rs/mcp".into())),
        exp: Some(4_000_000_000),
        scope: ScopeSet::parse("mcp:read"),
        ..Claims::default()
    }
}

fn sign(key: &Key, claims: &Claims) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, claims, &key.encoding).unwrap()
}

fn invalid(result: Result<Claims, VerifyError>) -> bool {
    matches!(result, Err(VerifyError::Token(_)))
}

#[tokio::test]
async fn a_fixed_key_set_verifies_signatures_and_nothing_else() {
    let k1 = key("k1");
    let other = key("k1");
    let verifier = JwtVerifier::from_jwks(JwkSet {
        keys: vec![k1.jwk.clone()],
    });
    let token = sign(&k1, &claims());
    assert_eq!(
        verifier.verify(&token).await.unwrap().sub.as_deref(),
        Some("alice")
    );
    // Signed by another key with the same id, tampered with, or symmetric: refused.
    assert!(invalid(verifier.verify(&sign(&other, &claims())).await));
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    parts[1] = sign(
        &k1,
        &Claims {
            sub: Some("mallory".into()),
            ..claims()
        },
    )
    .split('.')
    .nth(1)
    .unwrap()
    .to_owned();
    assert!(invalid(verifier.verify(&parts.join(".")).await));
    let hs = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(),
        &EncodingKey::from_secret(b"secret").unwrap(),
    )
    .unwrap();
    assert!(invalid(verifier.verify(&hs).await));
    assert!(invalid(verifier.verify("not.a.jwt").await));
}

/// A key server on 127.0.0.1 that serves what `keys` holds (503 when `None`) and counts.
async fn key_server(keys: Arc<Mutex<Option<JwkSet>>>, fetches: Arc<AtomicUsize>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (keys, fetches) = (keys.clone(), fetches.clone());
            let service = hyper::service::service_fn(move |_request| {
                fetches.fetch_add(1, Ordering::SeqCst);
                let body = keys.lock().unwrap().clone();
                async move {
                    let response = match body {
                        Some(set) => hyper::Response::new(Full::new(Bytes::from(
                            serde_json::to_vec(&set).unwrap(),
                        ))),
                        None => {
                            let mut response = hyper::Response::new(Full::new(Bytes::new()));
                            *response.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
                            response
                        }
                    };
                    Ok::<_, Infallible>(response)
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
            );
        }
    });
    format!("http://{addr}/jwks.json")
}

#[tokio::test]
async fn a_fetched_key_set_is_cached_refreshed_on_rotation_and_rate_limited() {
    let (k1, k2, k3) = (key("k1"), key("k2"), key("k3"));
    let served = Arc::new(Mutex::new(Some(JwkSet {
        keys: vec![k1.jwk.clone()],
    })));
    let fetches = Arc::new(AtomicUsize::new(0));
    let url = key_server(served.clone(), fetches.clone()).await;
    let verifier = JwtVerifier::fetch(&url).refresh_interval(Duration::ZERO);
    for _ in 0..3 {
        verifier.verify(&sign(&k1, &claims())).await.unwrap();
    }
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        1,
        "fetched once, then cached"
    );
    // Rotation: a token with a new key id fetches the set again.
    *served.lock().unwrap() = Some(JwkSet {
        keys: vec![k1.jwk.clone(), k2.jwk.clone()],
    });
    verifier.verify(&sign(&k2, &claims())).await.unwrap();
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
    // Concurrent tokens with an unknown key id share one fetch.
    *served.lock().unwrap() = Some(JwkSet {
        keys: vec![k1.jwk.clone(), k2.jwk.clone(), k3.jwk.clone()],
    });
    let token = sign(&k3, &claims());
    let results = futures::future::join_all((0..8).map(|_| verifier.verify(&token))).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(fetches.load(Ordering::SeqCst), 3);
    // The key server goes down: known keys still verify, an unknown one is a 503.
    *served.lock().unwrap() = None;
    verifier.verify(&sign(&k1, &claims())).await.unwrap();
    let k4 = key("k4");
    assert!(matches!(
        verifier.verify(&sign(&k4, &claims())).await,
        Err(VerifyError::Unavailable(_))
    ));

    // With the default interval, made-up key ids cannot make it fetch again and again.
    let fetches = Arc::new(AtomicUsize::new(0));
    let served = Arc::new(Mutex::new(Some(JwkSet {
        keys: vec![k1.jwk.clone()],
    })));
    let limited = JwtVerifier::fetch(key_server(served, fetches.clone()).await);
    limited.verify(&sign(&k1, &claims())).await.unwrap();
    for n in 0..20 {
        let forged = key(&format!("forged-{n}"));
        assert!(invalid(limited.verify(&sign(&forged, &claims())).await));
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
}

/// An introspection endpoint on 127.0.0.1: `good` is active (for alice), anything else is not;
/// it answers only the client `rs` with secret `s e/cret` (form-encoded in Basic).
async fn introspection_server(calls: Arc<AtomicUsize>) -> String {
    use http_body_util::BodyExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let calls = calls.clone();
            let service = hyper::service::service_fn(
                move |request: hyper::Request<hyper::body::Incoming>| {
                    calls.fetch_add(1, Ordering::SeqCst);
                    async move {
                        let expected = format!(
                            "Basic {}",
                            base64::Engine::encode(
                                &base64::engine::general_purpose::STANDARD,
                                "rs:s+e%2Fcret"
                            )
                        );
                        let authorized = request
                            .headers()
                            .get("authorization")
                            .is_some_and(|v| v.to_str().unwrap() == expected);
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        let form: Vec<(String, String)> =
                            form_urlencoded::parse(&body).into_owned().collect();
                        let token = form
                            .iter()
                            .find(|(k, _)| k == "token")
                            .map(|(_, v)| v.as_str());
                        let answer = match (authorized, token) {
                            (false, _) => {
                                let mut response = hyper::Response::new(Full::new(Bytes::new()));
                                *response.status_mut() = hyper::StatusCode::UNAUTHORIZED;
                                return Ok::<_, Infallible>(response);
                            }
                            (true, Some("good")) => {
                                let mut claims = serde_json::to_value(claims()).unwrap();
                                claims["active"] = true.into();
                                claims
                            }
                            _ => serde_json::json!({"active": false}),
                        };
                        Ok(hyper::Response::new(Full::new(Bytes::from(
                            serde_json::to_vec(&answer).unwrap(),
                        ))))
                    }
                },
            );
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
            );
        }
    });
    format!("http://{addr}/introspect")
}

#[tokio::test]
async fn opaque_tokens_are_introspected_once_and_inactive_ones_refused() {
    use mcp_server::auth::{IntrospectionVerifier, ResourceServer};
    let calls = Arc::new(AtomicUsize::new(0));
    let endpoint = introspection_server(calls.clone()).await;
    let auth = ResourceServer::builder("https://rs/mcp", "https://as")
        .verifier(IntrospectionVerifier::new(&endpoint, "rs", "s e/cret"))
        .build()
        .unwrap();
    let headers = |token: &str| {
        let mut headers = http::HeaderMap::new();
        headers.insert("authorization", format!("Bearer {token}").parse().unwrap());
        headers
    };
    for _ in 0..3 {
        let principal = auth.authenticate(&headers("good")).await.unwrap();
        assert_eq!(principal.subject, "alice");
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "introspected once, then cached"
    );
    let refused = auth.authenticate(&headers("revoked")).await.unwrap_err();
    assert_eq!(refused.status, http::StatusCode::UNAUTHORIZED);
    // The wrong client credentials: the endpoint refuses, which is an outage here (503).
    let wrong = ResourceServer::builder("https://rs/mcp", "https://as")
        .verifier(IntrospectionVerifier::new(&endpoint, "rs", "wrong"))
        .build()
        .unwrap();
    let unavailable = wrong.authenticate(&headers("good")).await.unwrap_err();
    assert_eq!(unavailable.status, http::StatusCode::SERVICE_UNAVAILABLE);
    assert!(matches!(
        IntrospectionVerifier::new(&endpoint, "rs", "s e/cret")
            .verify("revoked")
            .await,
        Err(VerifyError::Token(_))
    ));
}
