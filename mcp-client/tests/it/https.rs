//! The client over `https://` against our own TLS server on 127.0.0.1 with a test CA: every
//! revision (Streamable HTTP on 2025+, HTTP+SSE on 2024-11-05), refused without the CA and on a
//! name mismatch, HTTP/2 or HTTP/1.1 as ALPN decides, and through a `CONNECT` proxy written here
//! (with its `NO_PROXY` bypass).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_adapters::AdapterSet;
use mcp_client::transport::{CertificateRefusal, Https, Proxy, StreamableHttp, TransportError};
use mcp_client::{Client, ErrorKind, Revision};
use mcp_server::http::{HttpConfig, HttpEndpoint, Tls, serve_tls_with_shutdown};
use mcp_server::{NoArgs, Server, Tool};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("timed out")
}

async fn ping(_: NoArgs) -> String {
    "pong".into()
}

/// Our server over TLS on 127.0.0.1:0 with a certificate for `names`, stopped when dropped.
struct Running {
    port: u16,
    ca: CertificateDer<'static>,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn start(revisions: AdapterSet, names: &[&str]) -> Running {
    let certified =
        rcgen::generate_simple_self_signed(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    let ca = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    start_with(revisions, ca, key).await
}

/// A self-signed certificate marked `CA:TRUE` for `names`, as `openssl req -x509` makes it, and
/// its key.
fn self_signed_ca(names: &[&str]) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (
        cert.der().clone(),
        PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
}

/// Our server over TLS on 127.0.0.1:0 with this certificate and key.
async fn start_with(
    revisions: AdapterSet,
    ca: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
) -> Running {
    let tls = Tls::from_der(vec![ca.clone()], key).unwrap();
    let server = Server::builder("https-test", "1")
        .tool(Tool::new("ping", ping))
        .revisions(revisions)
        .build()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = oneshot::channel::<()>();
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    tokio::spawn(async move {
        let _ = serve_tls_with_shutdown(listener, endpoint, tls, async {
            let _ = stopped.await;
        })
        .await;
    });
    Running {
        port,
        ca,
        stop: Some(stop),
    }
}

impl Running {
    fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.port)
    }

    /// Trusting only the test CA, with no proxy from the environment.
    fn https(&self) -> Https {
        Https::new()
            .web_pki_roots(false)
            .add_ca_der(self.ca.clone())
            .unwrap()
            .proxy(Proxy::none())
    }
}

fn builder() -> mcp_client::ClientBuilder {
    Client::builder()
        .remember_era(false)
        .timeout(Duration::from_secs(10))
}

async fn ping_through(client: &Client) {
    let tools = within(client.list_tools()).await.unwrap();
    assert_eq!(tools.len(), 1);
    within(client.close()).await.unwrap();
}

#[tokio::test]
async fn every_revision_over_https_with_the_test_ca() {
    for revision in [
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ] {
        let running = start(AdapterSet::only(revision), &["127.0.0.1"]).await;
        let client = within(
            builder()
                .https(running.https())
                .connect_http(&running.url("127.0.0.1", "/mcp")),
        )
        .await
        .unwrap_or_else(|e| panic!("{revision}: {e}"));
        assert_eq!(client.revision(), revision);
        ping_through(&client).await;
    }
    // 2024-11-05: HTTP+SSE, its stream and its POSTs over TLS.
    let running = start(AdapterSet::only(Revision::V2024_11_05), &["localhost"]).await;
    let client = within(
        builder()
            .https(running.https())
            .connect_sse(&running.url("localhost", "/sse")),
    )
    .await
    .unwrap();
    assert_eq!(client.revision(), Revision::V2024_11_05);
    ping_through(&client).await;
}

#[tokio::test]
async fn refused_without_the_ca_and_on_a_name_mismatch() {
    let running = start(AdapterSet::all(), &["127.0.0.1"]).await;
    // The web PKI roots do not know the test CA.
    let unknown = within(
        builder()
            .https(Https::new().proxy(Proxy::none()))
            .connect_http(&running.url("127.0.0.1", "/mcp")),
    )
    .await
    .unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::Tls, "{unknown}");
    let text = format!("{unknown}: {:?}", std::error::Error::source(&unknown));
    assert!(text.contains("127.0.0.1"), "{text}");
    assert!(text.contains("UnknownIssuer"), "{text}");
    // Trusted, but issued for another name.
    let other = start(AdapterSet::all(), &["other.example"]).await;
    let mismatch = within(
        builder()
            .https(other.https())
            .connect_http(&other.url("127.0.0.1", "/mcp")),
    )
    .await
    .unwrap_err();
    assert!(mismatch.is_tls(), "{mismatch}");
    let text = format!("{:?}", std::error::Error::source(&mismatch));
    assert!(text.contains("not valid for name"), "{text}");
}

/// The certificate refused, by why (`TransportError::Certificate`).
fn refusal(error: &mcp_client::Error) -> Option<CertificateRefusal> {
    match std::error::Error::source(error)?.downcast_ref::<TransportError>()? {
        TransportError::Certificate { refusal, .. } => Some(*refusal),
        _ => None,
    }
}

#[tokio::test]
async fn a_pinned_certificate_is_accepted_exactly_and_only_for_its_names() {
    // A CA certificate used as the server's own: refused by the web PKI rules, even as a CA.
    let (own, key) = self_signed_ca(&["127.0.0.1"]);
    let running = start_with(AdapterSet::all(), own.clone(), key).await;
    let as_ca = within(
        builder()
            .https(running.https())
            .connect_http(&running.url("127.0.0.1", "/mcp")),
    )
    .await
    .unwrap_err();
    assert_eq!(
        refusal(&as_ca),
        Some(CertificateRefusal::CaUsedAsServerCertificate),
        "{as_ca:?}"
    );
    // Pinned, it is accepted (the handshake signature is still verified by its key).
    let pinned = || {
        Https::new()
            .web_pki_roots(false)
            .proxy(Proxy::none())
            .pin_certificate_der(own.clone())
            .unwrap()
    };
    let client = within(
        builder()
            .https(pinned())
            .connect_http(&running.url("127.0.0.1", "/mcp")),
    )
    .await
    .unwrap();
    ping_through(&client).await;
    // Another host name than the certificate's: refused although pinned.
    let mismatch = within(
        builder()
            .https(pinned())
            .connect_http(&running.url("localhost", "/mcp")),
    )
    .await
    .unwrap_err();
    assert_eq!(
        refusal(&mismatch),
        Some(CertificateRefusal::WrongName),
        "{mismatch:?}"
    );
    // A server presenting another certificate (same names) is not trusted by the pin.
    let (other, other_key) = self_signed_ca(&["127.0.0.1"]);
    let impostor = start_with(AdapterSet::all(), other, other_key).await;
    let refused = within(
        builder()
            .https(pinned())
            .connect_http(&impostor.url("127.0.0.1", "/mcp")),
    )
    .await
    .unwrap_err();
    assert_eq!(
        refusal(&refused),
        Some(CertificateRefusal::NotTrusted),
        "{refused:?}"
    );
    // Not a certificate at all: refused when given.
    assert!(
        Https::new()
            .pin_certificate_der(CertificateDer::from(b"not DER".to_vec()))
            .is_err()
    );
}

#[tokio::test]
async fn a_silent_server_hits_the_handshake_timeout() {
    // Accepts and never answers the ClientHello.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        std::future::pending::<()>().await;
        drop(socket);
    });
    let transport =
        StreamableHttp::builder(format!("https://127.0.0.1:{port}/mcp").parse().unwrap())
            .https(
                Https::new()
                    .proxy(Proxy::none())
                    .handshake_timeout(Duration::from_millis(200)),
            )
            .build();
    let error = within(builder().connect(transport)).await.unwrap_err();
    assert!(error.is_tls(), "{error}");
    let text = format!("{:?}", std::error::Error::source(&error));
    assert!(text.contains("timed out"), "{text}");
    held.abort();
}

#[tokio::test]
async fn http2_and_http1_by_alpn() {
    let running = start(AdapterSet::all(), &["127.0.0.1"]).await;
    for (offer, expected) in [
        (true, http::Version::HTTP_2),
        (false, http::Version::HTTP_11),
    ] {
        let transport = StreamableHttp::builder(running.url("127.0.0.1", "/mcp").parse().unwrap())
            .https(running.https().http2(offer))
            .build();
        assert_eq!(transport.http_version(), None);
        let client = within(builder().connect(transport.clone())).await.unwrap();
        // Concurrent calls: multiplexed on HTTP/2, pooled on HTTP/1.1.
        let calls = futures::future::join_all((0..8).map(|_| client.list_tools())).await;
        assert!(calls.iter().all(Result::is_ok));
        assert_eq!(transport.http_version(), Some(expected));
        within(client.close()).await.unwrap();
    }
}

/// A `CONNECT` proxy on 127.0.0.1 that counts its tunnels and keeps the last
/// `Proxy-Authorization` it was sent.
async fn proxy() -> (u16, Arc<AtomicUsize>, Arc<Mutex<Option<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let tunnels = Arc::new(AtomicUsize::new(0));
    let counted = tunnels.clone();
    let authorization = Arc::new(Mutex::new(None));
    let seen = authorization.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let counted = counted.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(socket);
                let mut line = String::new();
                reader.read_line(&mut line).await.unwrap();
                let target = line
                    .strip_prefix("CONNECT ")
                    .and_then(|l| l.split(' ').next())
                    .unwrap()
                    .to_string();
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).await.unwrap();
                    if header == "\r\n" {
                        break;
                    }
                    if let Some(value) = header.strip_prefix("Proxy-Authorization: ") {
                        *seen.lock().unwrap() = Some(value.trim().to_string());
                    }
                }
                let mut upstream = TcpStream::connect(&target).await.unwrap();
                let mut socket = reader.into_inner();
                socket
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .unwrap();
                counted.fetch_add(1, Ordering::SeqCst);
                let _ = tokio::io::copy_bidirectional(&mut socket, &mut upstream).await;
            });
        }
    });
    (port, tunnels, authorization)
}

#[tokio::test]
async fn through_a_connect_proxy_and_around_it_by_no_proxy() {
    let running = start(AdapterSet::all(), &["127.0.0.1"]).await;
    let (port, tunnels, authorization) = proxy().await;
    let via = Proxy::to(&format!("http://ada:s3cret@127.0.0.1:{port}"))
        .unwrap()
        .for_loopback(true);
    let client = within(
        builder()
            .https(running.https().proxy(via.clone()))
            .connect_http(&running.url("127.0.0.1", "/mcp")),
    )
    .await
    .unwrap();
    ping_through(&client).await;
    assert!(tunnels.load(Ordering::SeqCst) >= 1);
    assert_eq!(
        authorization.lock().unwrap().as_deref(),
        Some("Basic YWRhOnMzY3JldA==")
    );
    let before = tunnels.load(Ordering::SeqCst);
    // NO_PROXY names the host: straight to the server.
    let client = within(
        builder()
            .https(
                running
                    .https()
                    .proxy(via.no_proxy("example.com, 127.0.0.1")),
            )
            .connect_http(&running.url("127.0.0.1", "/mcp")),
    )
    .await
    .unwrap();
    ping_through(&client).await;
    assert_eq!(tunnels.load(Ordering::SeqCst), before);
    // Loopback is never proxied unless asked.
    let client = within(
        builder()
            .https(
                running
                    .https()
                    .proxy(Proxy::to(&format!("127.0.0.1:{port}")).unwrap()),
            )
            .connect_http(&running.url("127.0.0.1", "/mcp")),
    )
    .await
    .unwrap();
    ping_through(&client).await;
    assert_eq!(tunnels.load(Ordering::SeqCst), before);
}
