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
