//! `mcp-demo`'s command line as a new user meets it (issue 47): `--version`, a `--help` that
//! shows defaults and environment variables, and refusals that say what to fix: `--hub
//! sqlite:` without a path, a PostgreSQL hub that cannot be reached (with the cause), TLS files
//! that are not what the flag needs (naming the flag and the file).

use std::process::Output;

use crate::raw_http;

/// Runs the demo with `args`; it must end by itself within the bound (one that serves
/// instead fails the test rather than hanging it, and is killed).
async fn run(args: &[&str]) -> Output {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-demo"))
        .args(args)
        .env_remove("MCP_DEMO_HUB")
        .env_remove("MCP_DEMO_REDIS")
        .env_remove("MCP_DEMO_PUBLIC_URL")
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(raw_http::WAIT, output)
        .await
        .unwrap_or_else(|_| panic!("mcp-demo {args:?} did not end"))
        .unwrap()
}

/// Like [`run`], for a start that must be refused: its stderr.
async fn refused(args: &[&str]) -> String {
    let output = run(args).await;
    assert!(!output.status.success(), "{args:?} was not refused");
    assert!(
        String::from_utf8_lossy(&output.stdout).is_empty(),
        "{args:?} printed {:?}",
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn version_and_help() {
    let version = run(&["--version"]).await;
    assert!(version.status.success());
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("mcp-demo {}", env!("CARGO_PKG_VERSION"))
    );
    let help = run(&["--help"]).await;
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    for needed in [
        "[default: 127.0.0.1:8080",
        "--public-url URL",
        "--allowed-host NAME",
        "MCP_DEMO_HUB",
        "MCP_DEMO_PUBLIC_URL",
        "RUST_LOG",
        "--version",
    ] {
        assert!(help.contains(needed), "no {needed:?} in {help}");
    }
    let unknown = refused(&["--no-such-flag"]).await;
    assert!(unknown.contains("--help"), "{unknown}");
}

#[tokio::test]
async fn a_hub_that_cannot_work_is_refused_with_its_reason() {
    for spec in ["sqlite:", "sqlite: "] {
        let stderr = refused(&["--addr", "127.0.0.1:0", "--hub", spec]).await;
        assert!(stderr.contains("needs a file path"), "{spec:?}: {stderr}");
    }
    // Nothing listens on port 1: the refusal keeps the driver's cause, not only "connection".
    let stderr = refused(&[
        "--addr",
        "127.0.0.1:0",
        "--hub",
        "postgres://postgres@127.0.0.1:1/test",
    ])
    .await;
    assert!(
        stderr.to_ascii_lowercase().contains("refused"),
        "the PostgreSQL error lost its cause: {stderr}"
    );
}

#[tokio::test]
async fn tls_errors_name_the_flag_and_the_file() {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-demo-flags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let base = ["--addr", "127.0.0.1:0"];

    // The certificate given as the key: no private key in it.
    let stderr = refused(&[&base[..], &["--tls-cert", &cert, "--tls-key", &cert]].concat()).await;
    assert!(
        stderr.contains(&format!("no private key in {cert} (--tls-key)")),
        "{stderr}"
    );
    // The key given as the certificate.
    let stderr = refused(&[&base[..], &["--tls-cert", &key, "--tls-key", &key]].concat()).await;
    assert!(
        stderr.contains(&format!("no certificate in {key} (--tls-cert)")),
        "{stderr}"
    );
    // A file that is not there.
    let missing = dir.join("missing.pem").display().to_string();
    let stderr =
        refused(&[&base[..], &["--tls-cert", &cert, "--tls-key", &missing]].concat()).await;
    assert!(
        stderr.contains(&format!("cannot read {missing} (--tls-key)")),
        "{stderr}"
    );
    // The right files serve.
    let mut served = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-demo"))
        .args([&base[..], &["--tls-cert", &cert, "--tls-key", &key]].concat())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(served.stdout.take().unwrap()));
    let line = tokio::time::timeout(raw_http::WAIT, lines.next_line())
        .await
        .expect("the demo starts in time")
        .unwrap()
        .unwrap_or_default();
    assert!(
        line.starts_with("mcp-demo listening on https://127.0.0.1:"),
        "{line}"
    );
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}
