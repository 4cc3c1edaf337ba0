//! `mcp` over `https://` against the demo serving TLS on 127.0.0.1 with a test certificate:
//! trusted with `--cacert`, refused without it with the TLS label and the `--cacert` hint.

use crate::support;

use support::{Demo, mcp, scratch};

#[test]
fn tools_over_https_with_cacert_and_refused_without() {
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).expect("test CA");
    let cert = scratch("https-cert").with_extension("pem");
    let key = scratch("https-key").with_extension("pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let cert_path = cert.display().to_string();
    let demo = Demo::start_with(&[
        "--tls-cert",
        &cert_path,
        "--tls-key",
        &key.display().to_string(),
    ]);
    let url = demo.mcp();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");

    let tools = mcp(&["--cacert", &cert_path, "tools", &url, "--timeout", "30"]);
    assert!(tools.ok().contains("add"), "{}", tools.stdout);
    // HTTP+SSE over TLS too.
    let sse = mcp(&[
        "--cacert",
        &cert_path,
        "tools",
        &demo.sse(),
        "--transport",
        "sse",
        "--timeout",
        "30",
    ]);
    assert!(sse.ok().contains("add"), "{}", sse.stdout);

    let refused = mcp(&["tools", &url, "--timeout", "30"]);
    assert_ne!(refused.code, 0, "{refused:#?}");
    assert!(refused.stderr.contains("[tls]"), "{}", refused.stderr);
    assert!(refused.stderr.contains("--cacert"), "{}", refused.stderr);
    assert!(refused.stderr.contains("127.0.0.1"), "{}", refused.stderr);

    let missing = mcp(&["--cacert", "no-such-ca.pem", "tools", &url]);
    assert_ne!(missing.code, 0, "{missing:#?}");
    assert!(missing.stderr.contains("--cacert"), "{}", missing.stderr);
}

/// A self-signed certificate as `openssl req -x509 -newkey … -nodes -subj /CN=NAME -addext
/// subjectAltName=…` makes it (issue 47): `CA:TRUE`, its own issuer, the name in its subject
/// and subject alternative names. rcgen (a dev-dependency already) makes it with a P-256 key
/// instead of openssl's RSA key: the basic constraints, which are what matters here, are the
/// same. Written as PEM files; their paths.
fn openssl_like(name: &str, alt_name: &str) -> (String, String) {
    let mut params = rcgen::CertificateParams::new(vec![alt_name.to_owned()]).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().expect("a key");
    let cert = params.self_signed(&key).expect("a certificate");
    let cert_path = scratch(&format!("pinned-cert-{alt_name}")).with_extension("pem");
    let key_path = scratch(&format!("pinned-key-{alt_name}")).with_extension("pem");
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    (
        cert_path.display().to_string(),
        key_path.display().to_string(),
    )
}

#[test]
fn a_self_signed_ca_certificate_given_with_cacert_is_pinned() {
    let (cert, key) = openssl_like("127.0.0.1", "127.0.0.1");
    let demo = Demo::start_with(&["--tls-cert", &cert, "--tls-key", &key]);
    let url = demo.mcp();

    // Given as --cacert, exactly that certificate is accepted as the server's own.
    let tools = mcp(&["--cacert", &cert, "tools", &url, "--timeout", "30"]);
    assert!(tools.ok().contains("add"), "{}", tools.stdout);

    // Not given (or another certificate given): refused, and the hint says what is wrong
    // with it, which is not "pass its CA" (a CA certificate is used as the server's own).
    let (other, _) = openssl_like("127.0.0.1", "127.0.0.1");
    for args in [
        vec!["tools", url.as_str(), "--timeout", "30"],
        vec![
            "--cacert",
            other.as_str(),
            "tools",
            url.as_str(),
            "--timeout",
            "30",
        ],
    ] {
        let refused = mcp(&args);
        assert_ne!(refused.code, 0, "{refused:#?}");
        assert!(refused.stderr.contains("[tls]"), "{}", refused.stderr);
        assert!(
            refused
                .stderr
                .contains("a CA certificate (CA:TRUE) as its own"),
            "{args:?}: {}",
            refused.stderr
        );
        assert!(refused.stderr.contains("--cacert"), "{}", refused.stderr);
    }
}

#[test]
fn a_pinned_certificate_for_another_host_name_is_refused() {
    let (cert, key) = openssl_like("mcp.example.com", "mcp.example.com");
    let demo = Demo::start_with(&["--tls-cert", &cert, "--tls-key", &key]);
    let url = demo.mcp();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let refused = mcp(&["--cacert", &cert, "tools", &url, "--timeout", "30"]);
    assert_ne!(refused.code, 0, "{refused:#?}");
    assert!(refused.stderr.contains("[tls]"), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("not for this host name"),
        "{}",
        refused.stderr
    );
}
