//! HTTPS for the HTTP transports: rustls (ring) with the bundled web PKI roots, extra CA
//! certificates, pinned server certificates, SNI from the URL's host, HTTP/2 or HTTP/1.1 chosen
//! by ALPN, a bounded handshake, and an `HTTPS_PROXY` tunnel (HTTP `CONNECT`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::TransportError;

/// The default bound on a TLS handshake: 10 seconds.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest `CONNECT` answer a proxy may send before the tunnel opens.
const MAX_PROXY_ANSWER: usize = 8 * 1024;

/// How `https://` URLs are reached.
///
/// Defaults: the bundled web PKI roots (Mozilla's, from `webpki-roots`) are trusted, no extra CA,
/// no pinned certificate, a handshake bounded by [`DEFAULT_HANDSHAKE_TIMEOUT`], HTTP/2 offered
/// before HTTP/1.1 by ALPN, and the proxy from the environment ([`Proxy::from_env`]). Plain
/// `http://` URLs ignore it.
///
/// A pinned certificate ([`Https::pin_certificate_der`], and every certificate of
/// [`Https::add_ca_file`]) is accepted when the server presents exactly it (the same DER bytes)
/// as its own, whether or not a CA signed it: a self-signed certificate made with
/// `openssl req -x509 ...` (which marks it `CA:TRUE`, so the web PKI rules refuse it as a
/// server's own) works when given to the client. The handshake signature is still verified with
/// the certificate's key, and its subject alternative names must name the host; its validity
/// dates are not checked (the bytes are what is trusted). Any other certificate is verified
/// against the roots as usual.
///
/// ```no_run
/// # fn run() -> Result<(), mcp_client::transport::TransportError> {
/// use mcp_client::transport::{Https, Proxy};
///
/// let https = Https::new()
///     .add_ca_file("ca.pem")?
///     .handshake_timeout(std::time::Duration::from_secs(5))
///     .proxy(Proxy::none());
/// # let _ = https; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Https {
    web_pki_roots: bool,
    extra_roots: Vec<CertificateDer<'static>>,
    /// Accepted as the server's own certificate when presented byte for byte.
    pinned: Vec<CertificateDer<'static>>,
    handshake_timeout: Duration,
    http2: bool,
    proxy: Proxy,
}

impl Default for Https {
    fn default() -> Self {
        Self {
            web_pki_roots: true,
            extra_roots: Vec::new(),
            pinned: Vec::new(),
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            http2: true,
            proxy: Proxy::from_env(),
        }
    }
}

impl Https {
    /// The defaults (see [`Https`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Also trusts the certificates of a PEM file (one or more `CERTIFICATE` blocks): each as a
    /// CA, and each pinned as a server's own certificate (see [`Https`]), so the file may hold
    /// the CA that signed the server's certificate or the server's self-signed certificate
    /// itself (what `curl --cacert` accepts too).
    ///
    /// # Errors
    ///
    /// [`TransportError::Tls`] when the file cannot be read or holds no usable certificate.
    pub fn add_ca_file(mut self, path: impl AsRef<Path>) -> Result<Self, TransportError> {
        let path = path.as_ref();
        let bad = |cause: String| TransportError::Tls {
            host: path.display().to_string(),
            cause,
        };
        let mut found = 0;
        for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(e.to_string()))? {
            let cert = cert.map_err(|e| bad(e.to_string()))?;
            self = self
                .add_ca_der(cert.clone())
                .map_err(|e| bad(e.to_string()))?;
            self.pinned.push(cert);
            found += 1;
        }
        if found == 0 {
            return Err(bad("no CERTIFICATE in the file".into()));
        }
        Ok(self)
    }

    /// Accepts exactly this certificate (DER) when a server presents it as its own, still
    /// checking the handshake signature and that it names the host (see [`Https`]). Unlike a CA,
    /// it vouches for no other certificate.
    ///
    /// ```no_run
    /// # fn run() -> Result<(), mcp_client::transport::TransportError> {
    /// use mcp_client::transport::Https;
    /// use rustls::pki_types::CertificateDer;
    /// use rustls::pki_types::pem::PemObject as _;
    ///
    /// let own = CertificateDer::from_pem_file("server.pem").expect("a PEM certificate");
    /// let https = Https::new().pin_certificate_der(own)?;
    /// # let _ = https; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`TransportError::Tls`] when the bytes are not an X.509 certificate.
    pub fn pin_certificate_der(
        mut self,
        cert: CertificateDer<'static>,
    ) -> Result<Self, TransportError> {
        rustls::server::ParsedCertificate::try_from(&cert).map_err(|e| TransportError::Tls {
            host: "pinned certificate".into(),
            cause: e.to_string(),
        })?;
        self.pinned.push(cert);
        Ok(self)
    }

    /// Also trusts one CA certificate given in DER.
    ///
    /// # Errors
    ///
    /// [`TransportError::Tls`] when the certificate cannot be parsed as a trust anchor.
    pub fn add_ca_der(mut self, cert: CertificateDer<'static>) -> Result<Self, TransportError> {
        rustls::RootCertStore::empty()
            .add(cert.clone())
            .map_err(|e| TransportError::Tls {
                host: "CA certificate".into(),
                cause: e.to_string(),
            })?;
        self.extra_roots.push(cert);
        Ok(self)
    }

    /// Whether the bundled web PKI roots are trusted. Default is `true`; turn them off to trust
    /// only the CAs added with [`Https::add_ca_file`] or [`Https::add_ca_der`].
    pub fn web_pki_roots(mut self, trust: bool) -> Self {
        self.web_pki_roots = trust;
        self
    }

    /// The bound on a TLS handshake (after the TCP connection, and the proxy's tunnel, are up).
    /// Default is 10 seconds ([`DEFAULT_HANDSHAKE_TIMEOUT`]).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Whether HTTP/2 is offered by ALPN. Default is `true` (`h2` then `http/1.1`); when the
    /// server picks neither, HTTP/1.1 is spoken.
    pub fn http2(mut self, offer: bool) -> Self {
        self.http2 = offer;
        self
    }

    /// The proxy for `https://` URLs. Default is [`Proxy::from_env`].
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = proxy;
        self
    }

    /// The connector for one origin's pool.
    pub(crate) fn connector(&self) -> Connector {
        let mut roots = rustls::RootCertStore::empty();
        if self.web_pki_roots {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        for cert in &self.extra_roots {
            // Checked when added.
            let _ = roots.add(cert.clone());
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = Arc::new(Verifier::new(roots, self.pinned.clone(), &provider));
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map(|b| {
                b.dangerous()
                    .with_custom_certificate_verifier(verifier)
                    .with_no_client_auth()
            })
            .unwrap_or_else(|_| {
                // The ring provider supports the default versions; never reached.
                rustls::ClientConfig::builder()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth()
            });
        config.alpn_protocols = if self.http2 {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        Connector {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            handshake_timeout: self.handshake_timeout,
            proxy: self.proxy.clone(),
        }
    }
}

/// The proxy `https://` requests go through, as an HTTP `CONNECT` tunnel.
///
/// [`Proxy::from_env`] (the default) reads `HTTPS_PROXY` (or `https_proxy`) and `NO_PROXY` (or
/// `no_proxy`: a comma-separated list of host names, domain suffixes such as `.example.com`, or
/// `*`). Loopback hosts (`localhost`, `127.0.0.0/8`, `::1`) never use a proxy unless
/// [`Proxy::for_loopback`] asks for it.
///
/// ```
/// use mcp_client::transport::Proxy;
///
/// let proxy = Proxy::to("http://proxy.internal:3128").unwrap().no_proxy("intranet.example");
/// # let _ = proxy;
/// ```
#[derive(Clone, Default)]
pub struct Proxy {
    /// `host:port` of the proxy.
    address: Option<String>,
    /// The `Proxy-Authorization` value, from the URL's `user:password@`.
    authorization: Option<String>,
    no_proxy: Vec<String>,
    loopback: bool,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The credentials are never printed.
        f.debug_struct("Proxy")
            .field("address", &self.address)
            .field("credentials", &self.authorization.is_some())
            .field("no_proxy", &self.no_proxy)
            .field("loopback", &self.loopback)
            .finish()
    }
}

impl Proxy {
    /// No proxy.
    pub fn none() -> Self {
        Self::default()
    }

    /// The proxy named by `HTTPS_PROXY` or `https_proxy`, with the exceptions of `NO_PROXY` or
    /// `no_proxy`; no proxy when the variable is unset, empty or not a URL.
    pub fn from_env() -> Self {
        let var = |upper: &str, lower: &str| {
            std::env::var(upper)
                .ok()
                .filter(|v| !v.is_empty())
                .or_else(|| std::env::var(lower).ok())
                .unwrap_or_default()
        };
        let proxy = Self::to(&var("HTTPS_PROXY", "https_proxy")).unwrap_or_default();
        proxy.no_proxy(&var("NO_PROXY", "no_proxy"))
    }

    /// The proxy at `url` (`http://host:port`, or `host:port`; the port defaults to 80). A
    /// `user:password@` in the URL is sent as `Proxy-Authorization: Basic` on `CONNECT`.
    ///
    /// # Errors
    ///
    /// [`TransportError::Http`] when `url` has no host.
    pub fn to(url: &str) -> Result<Self, TransportError> {
        let bad = || TransportError::Http(format!("invalid proxy URL {url:?}"));
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("HTTP://"))
            .unwrap_or(url);
        let authority = rest.split('/').next().unwrap_or_default();
        let (credentials, authority) = match authority.rsplit_once('@') {
            Some((credentials, authority)) => (Some(credentials), authority),
            None => (None, authority),
        };
        let authorization = credentials.map(|c| {
            use base64::Engine as _;
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(c)
            )
        });
        let parsed: http::uri::Authority = authority.parse().map_err(|_| bad())?;
        if parsed.host().is_empty() {
            return Err(bad());
        }
        Ok(Self {
            address: Some(format!(
                "{}:{}",
                parsed.host(),
                parsed.port_u16().unwrap_or(80)
            )),
            authorization,
            no_proxy: Vec::new(),
            loopback: false,
        })
    }

    /// Hosts reached directly: a comma-separated list as in `NO_PROXY`.
    pub fn no_proxy(mut self, list: &str) -> Self {
        self.no_proxy.extend(
            list.split(',')
                .map(|e| e.trim().trim_start_matches('.').to_ascii_lowercase())
                .map(|e| e.trim_start_matches('[').trim_end_matches(']').to_string())
                .filter(|e| !e.is_empty()),
        );
        self
    }

    /// Whether loopback hosts go through the proxy too. Default is `false`.
    pub fn for_loopback(mut self, yes: bool) -> Self {
        self.loopback = yes;
        self
    }

    /// The proxy to reach `host` (no brackets, lower case) through, if any, and its
    /// `Proxy-Authorization`.
    fn via(&self, host: &str) -> Option<(&str, Option<&str>)> {
        self.for_host(host)
            .map(|address| (address, self.authorization.as_deref()))
    }

    /// The proxy to reach `host` (no brackets, lower case) through, if any.
    fn for_host(&self, host: &str) -> Option<&str> {
        let address = self.address.as_deref()?;
        let loopback = host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if loopback && !self.loopback {
            return None;
        }
        let bypass = self.no_proxy.iter().any(|entry| {
            entry == "*"
                || host == entry
                || host
                    .strip_suffix(entry.as_str())
                    .is_some_and(|head| head.ends_with('.'))
        });
        (!bypass).then_some(address)
    }
}

/// Opens TLS connections for one pool.
#[derive(Clone)]
pub(crate) struct Connector {
    tls: tokio_rustls::TlsConnector,
    handshake_timeout: Duration,
    proxy: Proxy,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("handshake_timeout", &self.handshake_timeout)
            .field("proxy", &self.proxy)
            .finish_non_exhaustive()
    }
}

pub(crate) type TlsStream = tokio_rustls::client::TlsStream<TcpStream>;

impl Connector {
    /// A TLS connection to `host:port` (through the proxy when one applies), and whether the
    /// server chose HTTP/2.
    pub(crate) async fn connect(
        &self,
        host: &str,
        port: u16,
        connect_timeout: Duration,
    ) -> Result<(TlsStream, bool), TransportError> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let target = format!("{host}:{port}");
        let stream = match self.proxy.via(&bare.to_ascii_lowercase()) {
            Some((proxy, authorization)) => {
                tokio::time::timeout(connect_timeout, tunnel(proxy, authorization, &target))
                    .await
                    .map_err(|_| {
                        TransportError::Http(format!("the proxy tunnel to {target} timed out"))
                    })??
            }
            None => tcp(&target, connect_timeout).await?,
        };
        let name = ServerName::try_from(bare.to_string()).map_err(|e| TransportError::Tls {
            host: bare.to_string(),
            cause: e.to_string(),
        })?;
        let tls = tokio::time::timeout(self.handshake_timeout, self.tls.connect(name, stream))
            .await
            .map_err(|_| TransportError::Tls {
                host: bare.to_string(),
                cause: format!("handshake timed out after {:?}", self.handshake_timeout),
            })?
            .map_err(|e| handshake_error(bare, e))?;
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        Ok((tls, h2))
    }
}

/// A failed handshake: [`TransportError::Certificate`] when the server's certificate was
/// refused, [`TransportError::PlainHttp`] when the server answered in plain HTTP (its first
/// bytes, `HTTP/1.1 400`, are no TLS record), [`TransportError::Tls`] otherwise.
fn handshake_error(host: &str, error: std::io::Error) -> TransportError {
    let rustls_error = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    if matches!(
        rustls_error,
        Some(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType
        ))
    ) {
        return TransportError::PlainHttp {
            host: host.to_owned(),
        };
    }
    let refusal = rustls_error.and_then(|error| match error {
        rustls::Error::InvalidCertificate(certificate) => Some(CertificateRefusal::of(certificate)),
        _ => None,
    });
    match refusal {
        Some(refusal) => TransportError::Certificate {
            host: host.to_owned(),
            refusal,
            cause: error.to_string(),
        },
        None => TransportError::Tls {
            host: host.to_owned(),
            cause: error.to_string(),
        },
    }
}

/// Why a server's certificate was refused ([`TransportError::Certificate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CertificateRefusal {
    /// No trusted CA signed it, and it is not a pinned certificate: pass its CA, or the
    /// certificate itself, to [`Https::add_ca_file`].
    NotTrusted,
    /// The server presents a CA certificate (`CA:TRUE`, as `openssl req -x509` makes by default)
    /// as its own, and it is not pinned: pass that very certificate to [`Https::add_ca_file`]
    /// (or [`Https::pin_certificate_der`]) to accept exactly it.
    CaUsedAsServerCertificate,
    /// It does not name the host of the URL (its subject alternative names).
    WrongName,
    /// It has expired or is not valid yet.
    Expired,
    /// Anything else: a bad signature or encoding, revoked, an unsupported algorithm.
    Other,
}

impl CertificateRefusal {
    fn of(error: &rustls::CertificateError) -> Self {
        use rustls::CertificateError as E;
        match error {
            E::UnknownIssuer => Self::NotTrusted,
            E::NotValidForName | E::NotValidForNameContext { .. } => Self::WrongName,
            E::Expired
            | E::ExpiredContext { .. }
            | E::NotValidYet
            | E::NotValidYetContext { .. } => Self::Expired,
            E::Other(other)
                if matches!(
                    other.0.downcast_ref::<webpki::Error>(),
                    Some(webpki::Error::CaUsedAsEndEntity)
                ) =>
            {
                Self::CaUsedAsServerCertificate
            }
            _ => Self::Other,
        }
    }
}

/// The server certificate verifier: a pinned certificate, presented byte for byte, is accepted
/// once it names the host; any other goes through rustls's web PKI verifier with the roots.
/// Handshake signatures are verified with the provider's algorithms either way.
#[derive(Debug)]
struct Verifier {
    /// `None` when there are no roots at all (web PKI roots off, no CA): only pins then.
    webpki: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    pinned: Vec<CertificateDer<'static>>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl Verifier {
    fn new(
        roots: rustls::RootCertStore,
        pinned: Vec<CertificateDer<'static>>,
        provider: &Arc<rustls::crypto::CryptoProvider>,
    ) -> Self {
        let webpki = (!roots.is_empty())
            .then(|| {
                rustls::client::WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider.clone(),
                )
                .build()
                .ok()
            })
            .flatten();
        Self {
            webpki,
            pinned,
            algorithms: provider.signature_verification_algorithms,
        }
    }
}

impl rustls::client::danger::ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        if self
            .pinned
            .iter()
            .any(|pinned| pinned.as_ref() == end_entity.as_ref())
        {
            let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_name(&parsed, server_name)?;
            return Ok(rustls::client::danger::ServerCertVerified::assertion());
        }
        match &self.webpki {
            Some(webpki) => webpki.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            ),
            None => Err(rustls::CertificateError::UnknownIssuer.into()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

pub(crate) async fn tcp(addr: &str, timeout: Duration) -> Result<TcpStream, TransportError> {
    let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| TransportError::Http(format!("connecting to {addr} timed out")))?
        .map_err(|e| TransportError::Http(format!("connecting to {addr}: {e}")))?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// An HTTP `CONNECT` tunnel to `target` through `proxy`.
async fn tunnel(
    proxy: &str,
    authorization: Option<&str>,
    target: &str,
) -> Result<TcpStream, TransportError> {
    let failed = |cause: String| TransportError::Http(format!("proxy {proxy}: {cause}"));
    let mut stream = TcpStream::connect(proxy)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let _ = stream.set_nodelay(true);
    let mut ask = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(authorization) = authorization {
        ask.push_str("Proxy-Authorization: ");
        ask.push_str(authorization);
        ask.push_str("\r\n");
    }
    ask.push_str("\r\n");
    stream
        .write_all(ask.as_bytes())
        .await
        .map_err(|e| failed(e.to_string()))?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 512];
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() >= MAX_PROXY_ANSWER {
            return Err(failed("the CONNECT answer is too long".into()));
        }
        // One byte at a time past the first line would be slow; the answer is short, and a
        // proxy sends nothing after it before the client speaks.
        let want = (MAX_PROXY_ANSWER - answer.len()).min(chunk.len());
        let n = stream
            .read(&mut chunk[..want])
            .await
            .map_err(|e| failed(e.to_string()))?;
        if n == 0 {
            return Err(failed("closed before answering CONNECT".into()));
        }
        answer.extend_from_slice(&chunk[..n]);
        if let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n")
            && end + 4 != answer.len()
        {
            return Err(failed("sent bytes after its CONNECT answer".into()));
        }
    }
    let line = answer.split(|&b| b == b'\n').next().unwrap_or_default();
    let status = std::str::from_utf8(line)
        .ok()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or_default();
    if status != "200" {
        return Err(failed(format!(
            "CONNECT {target} refused: {}",
            String::from_utf8_lossy(line).trim()
        )));
    }
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxy_applies_except_to_loopback_and_no_proxy_hosts() {
        let proxy = Proxy::to("http://proxy:3128")
            .unwrap()
            .no_proxy(" .internal.example, exact.example ,[::2]");
        for (host, via) in [
            ("mcp.example.com", Some("proxy:3128")),
            ("a.internal.example", None),
            ("internal.example", None),
            ("xinternal.example", Some("proxy:3128")),
            ("exact.example", None),
            ("::2", None),
            ("127.0.0.1", None),
            ("localhost", None),
            ("::1", None),
        ] {
            assert_eq!(proxy.for_host(host), via, "{host}");
        }
        let asked = Proxy::to("proxy:8080").unwrap().for_loopback(true);
        assert_eq!(asked.for_host("127.0.0.1"), Some("proxy:8080"));
        let all = asked.no_proxy("*");
        assert_eq!(all.for_host("mcp.example.com"), None);
        assert_eq!(Proxy::none().for_host("mcp.example.com"), None);
        assert!(Proxy::to("http:///x").is_err());
        let with_credentials = Proxy::to("http://ada:s3cret@proxy:3128").unwrap();
        assert_eq!(
            with_credentials.via("mcp.example.com"),
            Some(("proxy:3128", Some("Basic YWRhOnMzY3JldA==")))
        );
        assert!(!format!("{with_credentials:?}").contains("s3cret"));
        assert!(!format!("{with_credentials:?}").contains("YWRh"));
    }
}
