//! `mcp-demo --metrics HOST:PORT` (feature `metrics`) serves the Prometheus endpoint, which
//! counts the calls it served (moved from mcp-server's metrics tests with the binary).
#![cfg(feature = "metrics")]

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader as StdBufReader};
use std::process::{Command, Stdio};

use mcp_client::Client;
use raw_http::WAIT;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::raw_http;

/// `GET /metrics` over a plain socket: the status line, the content type and the body.
async fn scrape(addr: std::net::SocketAddr) -> (String, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut raw))
        .await
        .unwrap()
        .unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_owned();
    let content_type = head
        .lines()
        .find_map(|l| l.strip_prefix("content-type: "))
        .unwrap_or_default()
        .to_owned();
    (status, content_type, body.to_owned())
}

/// The samples of an exposition: `name{labels}` (labels sorted as written) to value. Fails
/// on a line that is neither a comment nor a sample.
fn samples(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    assert!(
        text.trim_end().ends_with("# EOF"),
        "OpenMetrics ends with # EOF"
    );
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
        out.insert(series.to_owned(), value);
    }
    out
}

fn value(samples: &BTreeMap<String, f64>, name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|(series, _)| {
            series.split('{').next() == Some(name)
                && labels
                    .iter()
                    .all(|(k, v)| series.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|(_, v)| *v)
        .sum()
}

#[tokio::test]
async fn the_demo_serves_metrics_on_its_flag() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-demo"))
        .args(["--addr", "127.0.0.1:0", "--metrics", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = StdBufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let second = lines.next().unwrap().unwrap();
    let mcp = first
        .strip_prefix("mcp-demo listening on ")
        .unwrap()
        .to_owned();
    let url = second.strip_prefix("mcp-demo metrics on http://").unwrap();
    let addr: std::net::SocketAddr = url.trim_end_matches("/metrics").parse().unwrap();
    let client = Client::builder()
        .timeout(WAIT)
        .connect_http(&format!("{mcp}/mcp"))
        .await
        .unwrap();
    client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    let (status, _, body) = scrape(addr).await;
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(status, "HTTP/1.1 200 OK");
    let s = samples(&body);
    let revision = client.revision().as_str();
    assert_eq!(
        value(
            &s,
            "mcp_requests_total",
            &[
                ("revision", revision),
                ("method", "tools/call"),
                ("outcome", "ok")
            ]
        ),
        1.0,
        "{body}"
    );
}
