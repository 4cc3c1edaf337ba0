//! The endpoint over TLS on 127.0.0.1 with a test certificate: HTTP/2 and HTTP/1.1 chosen by
//! ALPN, a protected endpoint with its development authorization server behind TLS, and a
//! plain-text client refused.

include!("../../src/bin/demo/registry.rs");

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use mcp_server::http::{HttpConfig, HttpEndpoint, Tls, serve_tls_with_shutdown};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

struct TlsServer {
    addr: std::net::SocketAddr,
    roots: rustls::RootCertStore,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn start(config: impl FnOnce(std::net::SocketAddr) -> HttpConfig) -> TlsServer {
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let cert = certified.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let tls = Tls::from_der(vec![cert.clone()], key).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let endpoint = HttpEndpoint::new(demo_builder("tls").build().unwrap(), config(addr));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        serve_tls_with_shutdown(listener, endpoint, tls, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    TlsServer {
        addr,
        roots,
        stop: Some(stop),
    }
}

fn client(
    server: &TlsServer,
    http2: bool,
) -> Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
> {
    let tls = rustls::ClientConfig::builder()
        .with_root_certificates(server.roots.clone())
        .with_no_client_auth();
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only();
    let connector = if http2 {
        builder.enable_http2().build()
    } else {
        builder.enable_http1().build()
    };
    Client::builder(TokioExecutor::new())
        .http2_only(http2)
        .build(connector)
}

fn call(url: &str) -> hyper::Request<Full<Bytes>> {
    hyper::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "add")
        .body(Full::new(Bytes::from_static(CALL.as_bytes())))
        .unwrap()
}

#[tokio::test]
async fn http2_and_http1_are_served_over_tls_by_alpn() {
    let server = start(|_| HttpConfig::new()).await;
    let url = format!("https://localhost:{}/mcp", server.addr.port());
    for (http2, version) in [
        (true, http::Version::HTTP_2),
        (false, http::Version::HTTP_11),
    ] {
        let client = client(&server, http2);
        for _ in 0..2 {
            let response =
                tokio::time::timeout(Duration::from_secs(30), client.request(call(&url)))
                    .await
                    .unwrap()
                    .unwrap();
            assert_eq!(response.version(), version);
            assert_eq!(response.status(), 200);
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let value: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(value["result"]["structuredContent"]["sum"], 5);
        }
    }
}

#[tokio::test]
async fn plain_text_on_the_tls_port_gets_no_answer() {
    let server = start(|_| HttpConfig::new()).await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n")
        .await
        .unwrap();
    let mut read = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), tcp.read_to_end(&mut read))
        .await
        .expect("the server closes the connection");
    assert!(
        !read.starts_with(b"HTTP/"),
        "{}",
        String::from_utf8_lossy(&read)
    );
}

#[tokio::test]
async fn a_protected_endpoint_and_its_authorization_server_work_behind_tls() {
    let server = start(|addr| {
        let base = format!("https://localhost:{}", addr.port());
        let dev = mcp_dev_auth::DevAuthorizationServer::builder(&base)
            .client(mcp_dev_auth::DevClient {
                client_id: "script".into(),
                client_secret: Some("s3cret".into()),
                redirect_uris: Vec::new(),
            })
            .build();
        let auth = mcp_server::auth::ResourceServer::builder(format!("{base}/mcp"), &base)
            .verifier(dev.clone())
            .build()
            .unwrap();
        HttpConfig::new().auth(auth).routes(dev)
    })
    .await;
    let base = format!("https://localhost:{}", server.addr.port());
    let client = client(&server, true);
    let metadata = client
        .request(
            hyper::Request::get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(metadata.status(), 200);
    let document: Value =
        serde_json::from_slice(&metadata.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(document["resource"], format!("{base}/mcp"));
    let refused = client.request(call(&format!("{base}/mcp"))).await.unwrap();
    assert_eq!(refused.status(), 401);
    let token = client
        .request(
            hyper::Request::post(format!("{base}/token"))
                .header("content-type", "application/x-www-form-urlencoded")
                .header("authorization", "Basic c2NyaXB0OnMzY3JldA==")
                .body(Full::new(Bytes::from(format!(
                    "grant_type=client_credentials&resource={}",
                    form_urlencoded::byte_serialize(format!("{base}/mcp").as_bytes())
                        .collect::<String>()
                ))))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(token.status(), 200);
    let token: Value =
        serde_json::from_slice(&token.into_body().collect().await.unwrap().to_bytes()).unwrap();
    let mut request = call(&format!("{base}/mcp"));
    let bearer = format!("Bearer {}", token["access_token"].as_str().unwrap());
    request
        .headers_mut()
        .insert("authorization", bearer.parse().unwrap());
    let called = client.request(request).await.unwrap();
    assert_eq!(
        called.status(),
        200,
        "{:?}",
        called.headers().get("www-authenticate")
    );
}
