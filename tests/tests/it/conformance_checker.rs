//! The `mcp-conformance` binary against our own server (it must pass), a modern-only server,
//! a server that is not MCP at all (it must report failures, not crash), and nothing at all.

use std::process::Output;
use std::time::Duration;

use mcp_adapters::{AdapterSet, Revision};
use mcp_tests::fixture::{self, Backing};
use mcp_tests::pairing::{HttpServer, Store};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

async fn checker(args: &[&str]) -> (Output, String) {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-conformance"))
        .args(args)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("mcp-conformance finished within 120 s")
        .expect("mcp-conformance ran");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("panicked"),
        "mcp-conformance panicked:\n{stderr}"
    );
    (output, stdout)
}

/// `(passed, failed)` from the closing line.
fn totals(stdout: &str) -> (usize, usize) {
    let last = stdout.lines().last().unwrap_or_default();
    let numbers: Vec<usize> = last
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(
        last.ends_with(" failed") && numbers.len() == 2,
        "no closing `N passed, M failed` line:\n{stdout}"
    );
    (numbers[0], numbers[1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_server_passes_every_check_on_every_revision() {
    for store in Store::ALL {
        if store == Store::Redis && !mcp_tests::pairing::redis_available().await {
            continue;
        }
        let server = HttpServer::start(store).await.unwrap();
        let mcp = server.url("/mcp").unwrap().to_string();
        let sse = server.url("/sse").unwrap().to_string();
        let (output, stdout) = checker(&["--url", &mcp, "--sse-url", &sse]).await;
        let (passed, failed) = totals(&stdout);
        assert_eq!(failed, 0, "{store:?}:\n{stdout}");
        assert!(output.status.success(), "{stdout}");
        assert!(passed >= 60, "only {passed} checks ran:\n{stdout}");
        for revision in Revision::ALL {
            assert!(
                stdout
                    .lines()
                    .any(|l| l.starts_with("PASS") && l.contains(revision.as_str())),
                "{revision} was not probed:\n{stdout}"
            );
        }
        for line in [
            "unsupported version: 400 + -32022",
            "unknown method: 404 + -32601",
            "a batch is answered item by item",
            "a batch is refused",
            "the first event is `endpoint`",
            "an unknown session gets 404",
        ] {
            assert!(stdout.contains(line), "no check {line:?}:\n{stdout}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_only_server_refuses_get_and_delete() {
    let server = fixture::server_with(
        Backing::default(),
        AdapterSet::new([Revision::V2026_07_28]).unwrap(),
    );
    let server = HttpServer::serve(server).await.unwrap();
    let mcp = server.url("/mcp").unwrap().to_string();
    let (output, stdout) = checker(&["--url", &mcp]).await;
    assert_eq!(totals(&stdout).1, 0, "{stdout}");
    assert!(output.status.success());
    assert!(
        stdout.contains("PASS 2026-07-28 GET on a modern-only server gets 405"),
        "{stdout}"
    );
    assert!(
        stdout.contains("PASS 2026-07-28 DELETE on a modern-only server gets 405"),
        "{stdout}"
    );
    assert!(
        stdout.contains("SKIP 2025-06-18 claimed by the server"),
        "{stdout}"
    );
}

/// Answers every request with an HTML page, whatever it asked.
async fn not_mcp(listener: TcpListener) {
    loop {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            let mut seen = Vec::new();
            // Read the head and whatever body arrived with it, then answer.
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let body = "<html><body>hello</body></html>";
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
            let _ = socket.shutdown().await;
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_not_mcp_is_reported_not_crashed() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(not_mcp(listener));
    let url = format!("http://{addr}/mcp");
    let sse = format!("http://{addr}/sse");
    let (output, stdout) = checker(&["--url", &url, "--sse-url", &sse]).await;
    let (_, failed) = totals(&stdout);
    assert!(failed > 0, "{stdout}");
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("FAIL -          revisions claimed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAIL 2024-11-05 GET the SSE endpoint"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_listening_is_a_failure_and_no_arguments_a_usage_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let url = format!("http://{addr}/mcp");
    let (output, stdout) = checker(&["--url", &url]).await;
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(totals(&stdout).1 > 0, "{stdout}");
    let (output, _) = checker(&[]).await;
    assert_eq!(output.status.code(), Some(2));
    let (output, _) = checker(&["--url", &url, "--revision", "1999-01-01"]).await;
    assert_eq!(output.status.code(), Some(2));
}
