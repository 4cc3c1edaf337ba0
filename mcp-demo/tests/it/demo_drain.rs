//! `mcp-demo` as a deployable worker: `/healthz` and `/readyz` answer, and on SIGTERM the
//! worker reports not ready while it still accepts connections, then stops accepting and
//! exits 0; its start and stop log lines name the address and the hub, without colours when
//! stderr is not a terminal.
#![cfg(unix)]

use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Command, Stdio};
use std::time::Duration;

use raw_http::{RawRequest, WAIT};
use serde_json::json;

use crate::raw_http;

#[tokio::test]
async fn a_sigterm_drains_the_worker_before_it_stops() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-demo"))
        .args(["--addr", "127.0.0.1:0", "--drain-period", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first
        .strip_prefix("mcp-demo listening on ")
        .unwrap_or_else(|| panic!("{first}"));
    let addr: std::net::SocketAddr = url.strip_prefix("http://").unwrap().parse().unwrap();

    let live = RawRequest::new("GET", "/healthz").send(addr).await;
    assert_eq!(live.status, 200, "{live:?}");
    let ready = RawRequest::new("GET", "/readyz").send(addr).await;
    assert_eq!(ready.status, 200, "{ready:?}");
    assert_eq!(ready.json(), json!({"ready": true}));

    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    // Another process: its readiness is observed by polling, within a deadline. Every probe
    // is a new connection, so a 503 proves the worker still accepts while not ready.
    let deadline = tokio::time::Instant::now() + WAIT;
    let not_ready = loop {
        let ready = RawRequest::new("GET", "/readyz").send(addr).await;
        if ready.status == 503 {
            break ready;
        }
        assert_eq!(ready.status, 200, "{ready:?}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "never reported not ready"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        not_ready.json(),
        json!({"ready": false, "reason": "draining"})
    );

    // Then it stops: exits 0, and the port accepts no more connections.
    let exited = tokio::task::spawn_blocking(move || {
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        (status, stderr)
    });
    let (status, stderr) = tokio::time::timeout(WAIT, exited).await.unwrap().unwrap();
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());

    #[cfg(feature = "demo-logging")]
    {
        assert!(
            !stderr.contains('\u{1b}'),
            "no colours into a pipe:\n{stderr}"
        );
        let started = stderr
            .lines()
            .find(|l| l.contains("MCP endpoint listening"))
            .unwrap_or_else(|| panic!("{stderr}"));
        assert!(started.contains(&addr.to_string()), "{started}");
        assert!(started.contains("hub=memory"), "{started}");
        assert!(started.contains("issuer=none"), "{started}");
        let stopped = stderr
            .lines()
            .find(|l| l.contains("MCP endpoint stopped"))
            .unwrap_or_else(|| panic!("{stderr}"));
        assert!(stopped.contains("hub=memory"), "{stopped}");
        assert!(stderr.contains("draining"), "{stderr}");
    }
    let _ = stderr;
}
