//! The OAuth client against a hostile MCP server (issue 44, review finding 7): an
//! authorization server metadata whose `authorization_endpoint` is not https (a `file:` URL,
//! a custom protocol handler, plain http to another host) is never handed to the redirect
//! handler (the browser), and nothing is registered there.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::Full;
use mcp_client::oauth::{OAuth, OAuthConfig, OAuthError, RedirectHandler};
use mcp_client::transport::BoxFuture;

/// Counts the URLs it is asked to open, and opens none.
#[derive(Debug, Clone, Default)]
struct Opener {
    opened: Arc<AtomicUsize>,
}

impl RedirectHandler for Opener {
    fn authorize<'a>(
        &'a self,
        _authorization_url: &'a str,
        _redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>> {
        self.opened.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Err(OAuthError::Redirect("not opened".into())) })
    }
}

/// A hostile server on 127.0.0.1: protected resource metadata naming itself as the
/// authorization server, whose metadata has `authorization_endpoint` set to `endpoint`.
/// Returns its MCP URL and the count of registration requests.
async fn hostile(endpoint: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let registrations = Arc::new(AtomicUsize::new(0));
    let counted = registrations.clone();
    let origin = base.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let origin = origin.clone();
            let counted = counted.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: http::Request<hyper::body::Incoming>| {
                        let path = request.uri().path().to_owned();
                        let body = match path.as_str() {
                            "/.well-known/oauth-protected-resource/mcp"
                            | "/.well-known/oauth-protected-resource" => Some(serde_json::json!({
                                "resource": format!("{origin}/mcp"),
                                "authorization_servers": [origin],
                            })),
                            "/.well-known/oauth-authorization-server" => Some(serde_json::json!({
                                "issuer": origin,
                                "authorization_endpoint": endpoint,
                                "token_endpoint": format!("{origin}/token"),
                                "registration_endpoint": format!("{origin}/register"),
                                "response_types_supported": ["code"],
                                "code_challenge_methods_supported": ["S256"],
                            })),
                            "/register" => {
                                counted.fetch_add(1, Ordering::SeqCst);
                                Some(serde_json::json!({"client_id": "registered"}))
                            }
                            _ => None,
                        };
                        let response = match body {
                            Some(body) => http::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(body.to_string()))),
                            None => http::Response::builder()
                                .status(404)
                                .body(Full::new(Bytes::new())),
                        };
                        async move { Ok::<_, Infallible>(response.unwrap()) }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (format!("{base}/mcp"), registrations)
}

#[tokio::test]
async fn an_authorization_endpoint_that_is_not_https_is_never_opened() {
    for endpoint in [
        "file:///etc/passwd",
        "smb://attacker.example/share/x",
        "search-ms:query=x",
        "http://attacker.example/authorize",
        "javascript:alert(1)",
    ] {
        let (url, registrations) = hostile(endpoint).await;
        let opener = Opener::default();
        let oauth = OAuth::new(OAuthConfig::new(opener.clone()), &url).unwrap();
        let challenged = oauth.challenged(401, None, None, None).await;
        let Err(error) = challenged else {
            panic!("{endpoint}: {challenged:?}");
        };
        assert!(
            matches!(error, OAuthError::Discovery(_)),
            "{endpoint}: {error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(endpoint), "names the URL: {message}");
        assert!(message.contains("https"), "says what is allowed: {message}");
        assert_eq!(opener.opened.load(Ordering::SeqCst), 0, "{endpoint}");
        assert_eq!(
            registrations.load(Ordering::SeqCst),
            0,
            "{endpoint}: nothing registered"
        );
    }
}

#[tokio::test]
async fn a_loopback_http_authorization_endpoint_is_opened() {
    let (url, _) = hostile("http://127.0.0.1:9/authorize").await;
    let opener = Opener::default();
    let oauth = OAuth::new(OAuthConfig::new(opener.clone()), &url).unwrap();
    let challenged = oauth.challenged(401, None, None, None).await;
    assert!(
        matches!(challenged, Err(OAuthError::Redirect(_))),
        "{challenged:?}"
    );
    assert_eq!(opener.opened.load(Ordering::SeqCst), 1);
}
