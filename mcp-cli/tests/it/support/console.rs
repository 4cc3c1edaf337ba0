//! A running `mcp console` and a minimal HTTP/1.1 client for its API (and for chromedriver):
//! one request per connection, `Connection: close`, the answer read to the end.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// One HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Sends one request to `addr` (`host:port`) and reads the whole answer.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Answer {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or("");
    if method != "GET" || !body.is_empty() {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    request.push_str(body);
    // A server that answers before reading everything (a body over its limit) may close early:
    // what it answered is still read below.
    let _ = stream.write_all(request.as_bytes());
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut headers = Vec::new();
    let mut length = None;
    let mut chunked = false;
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim().to_owned(), v.trim().to_owned());
            if k.eq_ignore_ascii_case("content-length") {
                length = v.parse::<usize>().ok();
            }
            if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
            headers.push((k, v));
        }
    }
    let mut bytes = Vec::new();
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line).expect("chunk size");
            let size = usize::from_str_radix(line.trim(), 16).expect("chunk size is hex");
            if size == 0 {
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).expect("chunk");
            bytes.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = length {
        bytes.resize(length, 0);
        reader.read_exact(&mut bytes).expect("body");
    } else {
        reader.read_to_end(&mut bytes).expect("body");
    }
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// A running `mcp console --no-open`; killed on drop.
pub struct Console {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The token of its URL (in its fragment).
    pub token: String,
    /// The URL it printed.
    pub url: String,
}

impl Console {
    /// Starts `mcp console --no-open ARGS...` and reads the URL it prints.
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp"))
            .arg("console")
            .arg("--no-open")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("mcp console starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("mcp console prints its URL");
        let url = line
            .trim()
            .strip_prefix("mcp console listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        let rest = url.strip_prefix("http://").expect("an http URL");
        let (addr, query) = rest
            .split_once("/#token=")
            .expect("a token in the URL's fragment");
        Self {
            addr: addr.to_owned(),
            token: query.to_owned(),
            url: url.clone(),
            child,
        }
    }

    /// A GET with the token header.
    pub fn get(&self, path: &str) -> Answer {
        http(
            &self.addr,
            "GET",
            path,
            &[("X-Mcp-Console-Token", &self.token)],
            None,
        )
    }

    /// A POST of JSON with the token header.
    pub fn post(&self, path: &str, body: &Value) -> Answer {
        http(
            &self.addr,
            "POST",
            path,
            &[
                ("X-Mcp-Console-Token", &self.token),
                ("Content-Type", "application/json"),
            ],
            Some(&body.to_string()),
        )
    }

    /// A POST that must succeed; its JSON.
    pub fn ok(&self, path: &str, body: &Value) -> Value {
        let answer = self.post(path, body);
        assert_eq!(answer.status, 200, "{path} {body}: {}", answer.body);
        answer.json()
    }

    /// Every event after `after`, without waiting.
    pub fn events(&self, after: u64) -> Value {
        self.get(&format!("/api/events?after={after}&wait=0"))
            .json()
    }

    /// Waits (long polls) for the first event `matches` accepts after `after`; panics when the
    /// console stops answering.
    pub fn wait_event(&self, after: u64, matches: impl Fn(&Value) -> bool) -> Value {
        let mut after = after;
        for _ in 0..10 {
            let page = self.get(&format!("/api/events?after={after}")).json();
            if let Some(found) = page["events"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| matches(e))
            {
                return found.clone();
            }
            after = page["next"].as_u64().expect("next");
        }
        panic!("no matching event");
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
