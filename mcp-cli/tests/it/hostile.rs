//! The `mcp` binary against raw HTTP servers on 127.0.0.1 that misbehave after (or instead of)
//! a proper handshake (issue 27): one that hangs, one that fails with HTTP 500, one whose list
//! never ends. Each run must end with the right exit code, in one `--timeout`, with an error line
//! that says what happened.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::mcp;

/// What the raw server does with one JSON-RPC request (or notification): `None` holds the
/// connection open without answering.
pub(crate) type Script = Arc<dyn Fn(&str, &Value) -> Option<Vec<u8>> + Send + Sync>;

/// A raw HTTP/1.1 server on 127.0.0.1, one thread per connection, for as long as the test runs.
/// Connections it holds without answering are kept until the test process ends.
pub(crate) fn serve(script: Script) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
    std::thread::spawn(move || {
        for socket in listener.incoming() {
            let Ok(socket) = socket else { return };
            let script = script.clone();
            let held = held.clone();
            std::thread::spawn(move || connection(socket, &script, &held));
        }
    });
    url
}

fn connection(socket: TcpStream, script: &Script, held: &Mutex<Vec<TcpStream>>) {
    let mut reader = BufReader::new(socket.try_clone().unwrap());
    let mut socket = socket;
    loop {
        let mut method = String::new();
        if reader.read_line(&mut method).unwrap_or(0) == 0 {
            return;
        }
        let method = method.split(' ').next().unwrap_or("").to_owned();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        match script(&method, &body) {
            Some(reply) => {
                if socket.write_all(&reply).is_err() {
                    return;
                }
            }
            None => {
                held.lock().unwrap().push(socket);
                return;
            }
        }
    }
}

pub(crate) fn reply(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\nmcp-session-id: raw\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

pub(crate) fn result(request: &Value, result: Value) -> Option<Vec<u8>> {
    let body = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
    Some(reply(
        "200 OK",
        "application/json",
        body.to_string().as_bytes(),
    ))
}

/// The 2025-06-18 handshake done properly; everything else goes to `after`.
pub(crate) fn handshake_then(
    after: impl Fn(&str, &Value) -> Option<Vec<u8>> + Send + Sync + 'static,
) -> Script {
    Arc::new(move |method, body| match body["method"].as_str() {
        Some("initialize") => result(
            body,
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "raw", "version": "1"}}),
        ),
        Some("notifications/initialized") => Some(reply("202 Accepted", "text/plain", b"")),
        _ => after(method, body),
    })
}

#[test]
fn a_server_that_hangs_after_the_handshake_costs_one_timeout_in_all() {
    // Issue 27: `--timeout 5` took 15 s (logging/setLevel, tools/list and DELETE each waited the
    // full timeout). Now the command has one deadline.
    let url = serve(handshake_then(|_, _| None));
    let started = Instant::now();
    let run = mcp(&["tools", &url, "--revision", "2025-06-18", "--timeout", "2"]);
    let took = started.elapsed();
    assert_eq!(run.code, 6, "exits with the timeout code: {run:#?}");
    assert!(run.stderr.contains("[timeout]"), "{}", run.stderr);
    assert!(run.stderr.contains("--timeout"), "{}", run.stderr);
    // One timeout of 2 s, not one per step (the old behaviour took three).
    assert!(
        took < Duration::from_secs(4),
        "took {took:?} for --timeout 2: {run:#?}"
    );
}

#[test]
fn an_http_500_is_reported_with_its_status_and_what_the_server_said() {
    // Issue 27: HTTP 500 was reported as "the server refused the connection".
    let url = serve(Arc::new(|_, _| {
        Some(reply(
            "500 Internal Server Error",
            "text/plain",
            b"database is down\n",
        ))
    }));
    let run = mcp(&["tools", &url, "--timeout", "30"]);
    assert_eq!(run.code, 3, "{run:#?}");
    let line = run.stderr.trim();
    assert!(line.contains("[http 500]"), "{line}");
    assert!(line.contains("HTTP 500 Internal Server Error"), "{line}");
    assert!(line.contains("database is down"), "{line}");
    assert!(!line.contains("refused the connection"), "{line}");
    assert!(line.contains("the server failed"), "the hint: {line}");
}

#[test]
fn a_list_that_never_ends_stops_with_a_limit_error() {
    // Issue 27: a fresh cursor on every page took `mcp tools` to 7.7 GB.
    let url = serve(handshake_then(|method, body| {
        if method == "DELETE" {
            return Some(reply("200 OK", "text/plain", b""));
        }
        match body["method"].as_str() {
            Some("tools/list") => {
                let page = body["params"]["cursor"]
                    .as_str()
                    .and_then(|c| c.parse::<u64>().ok())
                    .unwrap_or(0);
                result(
                    body,
                    json!({"tools": [{"name": format!("t{page}"), "inputSchema": {"type": "object"}}],
                           "nextCursor": (page + 1).to_string()}),
                )
            }
            _ => result(body, json!({})),
        }
    }));
    let run = mcp(&["tools", &url, "--revision", "2025-06-18", "--timeout", "60"]);
    assert_eq!(run.code, 5, "{run:#?}");
    assert!(run.stderr.contains("[limit]"), "{}", run.stderr);
    assert!(run.stderr.contains("max_list_pages"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}
