//! A tiny raw HTTP/1.1 client for the HTTP tests: writes bytes, parses status, headers and
//! body (chunked or not), and reads SSE events incrementally. Also starts servers on
//! 127.0.0.1:0.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::time::Duration;

use mcp_server::Server;
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// Generous bound for anything a test waits for (never a timed assertion: a hang fails).
pub const WAIT: Duration = Duration::from_secs(30);

/// A server on 127.0.0.1:0; shut down when dropped.
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    pub async fn start(server: Server, config: HttpConfig) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::start_listener(listener, server, config).await
    }

    /// Serves on a listener the test bound itself (to know its port before the config).
    pub async fn start_listener(
        listener: tokio::net::TcpListener,
        server: Server,
        config: HttpConfig,
    ) -> Self {
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let endpoint = HttpEndpoint::new(server, config);
        let task = tokio::spawn(async move {
            serve_with_shutdown(listener, endpoint, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        Self {
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stops the server and waits for its graceful shutdown.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(WAIT, task).await.unwrap().unwrap();
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A response read to its end.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (panics otherwise).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {} {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The SSE events of the body.
    pub fn events(&self) -> Vec<SseEvent> {
        let mut parser = SseParser::default();
        parser.push(&self.body);
        let mut out = Vec::new();
        while let Some(event) = parser.next() {
            out.push(event);
        }
        out
    }

    /// The JSON messages of the body: one for a JSON body, the data of each SSE event with
    /// data otherwise.
    pub fn messages(&self) -> Vec<Value> {
        if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            self.events()
                .into_iter()
                .filter(|e| !e.data.is_empty())
                .map(|e| serde_json::from_str(&e.data).unwrap())
                .collect()
        } else if self.body.is_empty() || self.is_plain_text() {
            Vec::new()
        } else {
            vec![self.json()]
        }
    }
}

impl RawResponse {
    /// The body is `text/plain` (no JSON-RPC message).
    pub fn is_plain_text(&self) -> bool {
        self.header("content-type")
            .is_some_and(|c| c.starts_with("text/plain"))
    }
}

/// One SSE event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub id: Option<String>,
    pub retry: Option<u64>,
    pub data: String,
    /// The block had a `data` field (an empty `data:` counts).
    pub has_data: bool,
}

/// Splits SSE text into events (blocks ending with a blank line); comments are skipped.
#[derive(Default)]
pub struct SseParser {
    buffer: Vec<u8>,
}

impl SseParser {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    pub fn next(&mut self) -> Option<SseEvent> {
        loop {
            let end = self.buffer.windows(2).position(|w| w == b"\n\n")?;
            let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&block[..end]).into_owned();
            let mut event = SseEvent::default();
            let mut any = false;
            for line in text.split('\n') {
                if line.starts_with(':') || line.is_empty() {
                    continue;
                }
                any = true;
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "event" => event.event = Some(value.to_owned()),
                    "id" => event.id = Some(value.to_owned()),
                    "retry" => event.retry = value.parse().ok(),
                    "data" => {
                        if event.has_data {
                            event.data.push('\n');
                        }
                        event.data.push_str(value);
                        event.has_data = true;
                    }
                    _ => {}
                }
            }
            if any {
                return Some(event);
            }
        }
    }
}

/// A request to send.
pub struct RawRequest<'a> {
    pub method: &'a str,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl<'a> RawRequest<'a> {
    pub fn new(method: &'a str, path: &str) -> Self {
        Self {
            method,
            path: path.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn json(mut self, body: &Value) -> Self {
        self.body = serde_json::to_vec(body).unwrap();
        self.header("Content-Type", "application/json")
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    fn bytes(&self, addr: SocketAddr) -> Vec<u8> {
        let mut head = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        if !self
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("host"))
        {
            head.push_str(&format!("Host: {addr}\r\n"));
        }
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.body.len()
        ));
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }

    /// Sends the request and reads the whole response.
    pub async fn send(&self, addr: SocketAddr) -> RawResponse {
        let mut stream = self.open(addr).await;
        let mut body = Vec::new();
        tokio::time::timeout(WAIT, async {
            while let Some(chunk) = stream.chunk().await {
                body.extend_from_slice(&chunk);
            }
        })
        .await
        .expect("the response ended in time");
        RawResponse {
            status: stream.status,
            headers: stream.headers,
            body,
        }
    }

    /// Sends the request and returns once the head is read; the body is read as it comes.
    pub async fn open(&self, addr: SocketAddr) -> RawStream {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(&self.bytes(addr)).await.unwrap();
        let mut stream = RawStream {
            tcp,
            buffer: Vec::new(),
            status: 0,
            headers: Vec::new(),
            chunked: false,
            remaining: None,
            done: false,
            sse: SseParser::default(),
        };
        tokio::time::timeout(WAIT, stream.read_head())
            .await
            .expect("a response head in time");
        stream
    }
}

/// A response whose body is read incrementally.
pub struct RawStream {
    tcp: TcpStream,
    buffer: Vec<u8>,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    chunked: bool,
    remaining: Option<usize>,
    done: bool,
    sse: SseParser,
}

impl RawStream {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 8192];
        match self.tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buffer.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    async fn read_head(&mut self) {
        let end = loop {
            if let Some(end) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            assert!(self.fill().await, "the connection closed before a head");
        };
        let head = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
        self.buffer.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        self.status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        for line in lines {
            let (name, value) = line.split_once(':').unwrap();
            self.headers
                .push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        self.chunked = self
            .header("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        self.remaining = self.header("content-length").and_then(|v| v.parse().ok());
        if !self.chunked && self.remaining == Some(0) {
            self.done = true;
        }
    }

    /// The next piece of the body; `None` at its end.
    pub async fn chunk(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        if self.chunked {
            loop {
                if let Some(line_end) = self.buffer.windows(2).position(|w| w == b"\r\n") {
                    let size_text = String::from_utf8_lossy(&self.buffer[..line_end]).into_owned();
                    let size =
                        usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
                            .expect("a chunk size");
                    if self.buffer.len() >= line_end + 2 + size + 2 {
                        let data = self.buffer[line_end + 2..line_end + 2 + size].to_vec();
                        self.buffer.drain(..line_end + 2 + size + 2);
                        if size == 0 {
                            self.done = true;
                            return None;
                        }
                        return Some(data);
                    }
                }
                if !self.fill().await {
                    self.done = true;
                    return None;
                }
            }
        }
        if self.buffer.is_empty() && !self.fill().await {
            self.done = true;
            return None;
        }
        let mut data = std::mem::take(&mut self.buffer);
        if let Some(remaining) = self.remaining.as_mut() {
            data.truncate(*remaining);
            *remaining -= data.len();
            if *remaining == 0 {
                self.done = true;
            }
        }
        Some(data)
    }

    /// The next SSE event (comments skipped); `None` when the body ends first.
    pub async fn event(&mut self) -> Option<SseEvent> {
        tokio::time::timeout(WAIT, async {
            loop {
                if let Some(event) = self.sse.next() {
                    return Some(event);
                }
                let chunk = self.chunk().await?;
                self.sse.push(&chunk);
            }
        })
        .await
        .expect("an SSE event in time")
    }

    /// The next SSE event that carries a JSON message.
    pub async fn message(&mut self) -> Option<Value> {
        loop {
            let event = self.event().await?;
            if !event.data.is_empty() {
                return Some(serde_json::from_str(&event.data).unwrap());
            }
        }
    }
}
