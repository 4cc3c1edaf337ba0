//! `mcp proxy` (issue 48): an in-process upstream on 127.0.0.1, the proxy as a child process in
//! front of it (HTTP on a free port, or stdio with `--stdio-front`), and `mcp` itself as the
//! downstream client on an old and a new revision.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use mcp_server::{CallToolResult, Exchange, Question, Server, Tool};
use serde_json::{Map, Value, json};

use crate::support::mcp;

/// Adds `a` and `b`, with structured output.
async fn add(args: Map<String, Value>) -> CallToolResult {
    let number = |key: &str| args.get(key).and_then(Value::as_i64).unwrap_or(0);
    CallToolResult::structured(json!({"sum": number("a") + number("b")}))
}

/// Asks the user to confirm, and says what they answered.
async fn confirm(_: Map<String, Value>, ex: Exchange) -> String {
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    match ex
        .ask("sure", Question::elicit_with("Proceed?", schema))
        .await
    {
        Ok(answer) if answer.accepted() => format!("confirmed {}", answer.content()),
        Ok(_) => "declined".into(),
        Err(e) => format!("not asked: {e}"),
    }
}

/// The upstream: `add` with structured output, on 127.0.0.1; stops when dropped.
struct Upstream {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Upstream {
    fn start() -> Self {
        let (ready, url) = mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let server = Server::builder("upstream", "1.0")
                    .tool(Tool::new("add", add).title("Add").read_only())
                    .tool(Tool::new("confirm", confirm))
                    .build()
                    .expect("a valid server");
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                let addr = listener.local_addr().expect("addr");
                ready
                    .send(format!("http://{addr}/mcp"))
                    .expect("the test waits");
                let endpoint = HttpEndpoint::new(server, HttpConfig::default());
                let _ = serve_with_shutdown(listener, endpoint, async {
                    let _ = stopped.await;
                })
                .await;
            });
        });
        let url = url.recv().expect("the upstream starts");
        Self {
            url,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `mcp proxy` serving HTTP; killed when dropped.
struct Proxy {
    child: Child,
    /// The Streamable HTTP and HTTP+SSE endpoints from its first line.
    mcp: String,
    sse: String,
    /// The lines it prints after the first.
    lines: mpsc::Receiver<String>,
}

impl Proxy {
    fn start(upstream: &str) -> Self {
        Self::start_with(upstream, &[])
    }

    /// `mcp proxy` with `extra` options.
    fn start_with(upstream: &str, extra: &[&str]) -> Self {
        let mut args = vec!["--upstream", upstream];
        args.extend_from_slice(extra);
        Self::spawn(&args)
    }

    /// `mcp proxy --addr 127.0.0.1:0 --timeout 30` with `args`.
    fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp"))
            .args(["proxy", "--addr", "127.0.0.1:0"])
            .args(["--timeout", "30"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("mcp proxy starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let first = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("mcp proxy prints its address");
        let urls: Vec<&str> = first
            .split_whitespace()
            .filter(|w| w.starts_with("http://") || w.starts_with("https://"))
            .collect();
        assert_eq!(urls.len(), 2, "unexpected first line {first:?}");
        Self {
            mcp: urls[0].to_owned(),
            sse: urls[1].to_owned(),
            child,
            lines: rx,
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_proxy_serves_the_upstream_on_old_and_new_revisions_and_both_transports() {
    let upstream = Upstream::start();
    let proxy = Proxy::start(&upstream.url);
    let listed = mcp(&["tools", &proxy.mcp, "--revision", "2024-11-05", "--json"]).json();
    let tools = listed["tools"].as_array().expect("a tool list");
    assert_eq!(tools.len(), 2, "{listed}");
    assert_eq!(tools[0]["name"], "add");
    // 2024-11-05 has no titles; 2026-07-28 shows the upstream's.
    assert!(tools[0].get("title").is_none(), "{listed}");
    let listed = mcp(&["tools", &proxy.mcp, "--revision", "2026-07-28", "--json"]).json();
    assert_eq!(listed["tools"][0]["title"], "Add");
    let sum = mcp(&[
        "call",
        &proxy.mcp,
        "add",
        "a=20",
        "b=22",
        "--revision",
        "2026-07-28",
        "--json",
    ])
    .json();
    assert_eq!(sum["structuredContent"]["sum"], 42);
    let sum = mcp(&[
        "call",
        &proxy.sse,
        "add",
        "a=1",
        "b=2",
        "--transport",
        "sse",
    ]);
    assert!(sum.ok().contains('3'), "{sum:#?}");
    // The upstream's question reaches the downstream `mcp`, whose answer goes back, on a
    // pushed revision and on the one where the question is the result.
    for revision in ["2025-06-18", "2026-07-28"] {
        let confirmed = mcp(&[
            "call",
            &proxy.mcp,
            "confirm",
            "--revision",
            revision,
            "--answer",
            r#"{"ok": true}"#,
        ]);
        assert_eq!(confirmed.ok(), "confirmed {\"ok\":true}\n", "{revision}");
    }
}

#[test]
fn the_stdio_front_serves_the_upstream_on_stdin_and_stdout() {
    let upstream = Upstream::start();
    let front = format!(
        "{} proxy --stdio-front --upstream {}",
        env!("CARGO_BIN_EXE_mcp"),
        upstream.url
    );
    let sum = mcp(&[
        "call",
        "--stdio",
        &front,
        "add",
        "a=2",
        "b=3",
        "--revision",
        "2025-06-18",
        "--json",
    ])
    .json();
    assert_eq!(sum["structuredContent"]["sum"], 5);
}

/// `mcp proxy --stdio` over HTTP gives each downstream session a child of its own, up to
/// `--max-children` (the first child included): the child here is `mcp proxy --stdio-front`
/// in front of the in-process upstream.
#[test]
fn a_stdio_upstream_is_a_child_per_session_up_to_max_children() {
    let upstream = Upstream::start();
    let child = format!(
        "{} proxy --stdio-front --upstream {}",
        env!("CARGO_BIN_EXE_mcp"),
        upstream.url
    );
    let proxy = Proxy::spawn(&[
        "--stdio",
        &child,
        "--max-children",
        "2",
        "--child-idle",
        "60",
    ]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let connect = || {
            mcp_client::Client::builder()
                .revision(mcp_client::Revision::V2025_11_25)
                .timeout(Duration::from_secs(30))
                .connect_http(&proxy.mcp)
        };
        let add = json!({"a": 1, "b": 2});
        let first = connect().await.expect("the first session");
        let sum = first.call_tool("add", &add).await.expect("a result");
        assert_eq!(sum["structuredContent"]["sum"], 3, "{sum}");
        // The first child and the first session's: a second session is refused.
        let second = connect().await.expect("the second session");
        let refused = second.call_tool("add", &add).await.expect("a result");
        assert_eq!(refused["isError"], true, "{refused}");
        let text = refused["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("maximum of 2"), "{refused}");
    });
    // Out of range: refused before anything starts.
    for (flag, value) in [("--max-children", "1"), ("--child-idle", "0")] {
        let refused = mcp(&["proxy", "--stdio", "x", flag, value]);
        assert_eq!(refused.code, 2, "{refused:#?}");
        assert!(refused.stderr.contains(flag), "{refused:#?}");
    }
}

/// `--tls-cert` and `--tls-key`, as `mcp-demo` takes them: the proxy serves HTTPS, and `mcp`
/// calls through it trusting the certificate with `--cacert`.
#[test]
fn the_proxy_serves_https_with_tls_cert_and_tls_key() {
    let upstream = Upstream::start();
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).expect("test CA");
    let cert = crate::support::scratch("proxy-https-cert").with_extension("pem");
    let key = crate::support::scratch("proxy-https-key").with_extension("pem");
    std::fs::write(&cert, certified.cert.pem()).expect("the certificate is written");
    std::fs::write(&key, certified.signing_key.serialize_pem()).expect("the key is written");
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let proxy = Proxy::start_with(&upstream.url, &["--tls-cert", &cert, "--tls-key", &key]);
    assert!(proxy.mcp.starts_with("https://127.0.0.1:"), "{}", proxy.mcp);
    let sum = mcp(&[
        "--cacert", &cert, "call", &proxy.mcp, "add", "a=40", "b=2", "--json",
    ])
    .json();
    assert_eq!(sum["structuredContent"]["sum"], 42, "{sum}");
    // HTTP+SSE over TLS too.
    let sse = mcp(&["--cacert", &cert, "tools", &proxy.sse, "--transport", "sse"]);
    assert!(sse.ok().contains("add"), "{sse:#?}");
    // Untrusted without --cacert.
    let refused = mcp(&["tools", &proxy.mcp]);
    assert_ne!(refused.code, 0, "{refused:#?}");
    // A key without its certificate is a usage error; so is a file that is not PEM.
    let alone = mcp(&["proxy", "--upstream", &upstream.url, "--tls-key", &key]);
    assert_eq!(alone.code, 2, "{alone:#?}");
    let not_pem = mcp(&[
        "proxy",
        "--upstream",
        &upstream.url,
        "--tls-cert",
        &key,
        "--tls-key",
        &key,
    ]);
    assert_eq!(not_pem.code, 2, "{not_pem:#?}");
    assert!(not_pem.stderr.contains("--tls-cert"), "{not_pem:#?}");
}

/// `--metrics HOST:PORT`, as `mcp-demo` takes it: the second line names the endpoint, which
/// counts the calls the proxy served.
#[test]
fn the_proxy_serves_metrics_on_its_flag() {
    let upstream = Upstream::start();
    let proxy = Proxy::start_with(&upstream.url, &["--metrics", "127.0.0.1:0"]);
    let second = proxy
        .lines
        .recv_timeout(Duration::from_secs(60))
        .expect("a second line");
    let addr = second
        .strip_prefix("mcp proxy metrics on http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("unexpected second line {second:?}"))
        .to_owned();
    let sum = mcp(&[
        "call",
        &proxy.mcp,
        "add",
        "a=1",
        "b=2",
        "--revision",
        "2025-11-25",
        "--json",
    ])
    .json();
    assert_eq!(sum["structuredContent"]["sum"], 3, "{sum}");
    let mut stream = std::net::TcpStream::connect(&addr).expect("the metrics endpoint");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a timeout");
    std::io::Write::write_all(
        &mut stream,
        b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .expect("the request is sent");
    let mut raw = String::new();
    std::io::Read::read_to_string(&mut stream, &mut raw).expect("the response");
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    let calls: f64 = raw
        .lines()
        .filter(|l| {
            l.starts_with("mcp_requests_total{")
                && l.contains("method=\"tools/call\"")
                && l.contains("outcome=\"ok\"")
        })
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum();
    assert_eq!(calls, 1.0, "{raw}");
}

#[test]
fn a_proxy_without_one_upstream_is_a_usage_error() {
    let none = mcp(&["proxy", "--addr", "127.0.0.1:0"]);
    assert_eq!(none.code, 2, "{none:#?}");
    assert!(
        none.stderr.contains("--upstream URL or --stdio CMD"),
        "{none:#?}"
    );
    let both = mcp(&[
        "proxy",
        "--upstream",
        "http://127.0.0.1:9/mcp",
        "--stdio",
        "x",
    ]);
    assert_eq!(both.code, 2, "{both:#?}");
    let scope = mcp(&[
        "proxy",
        "--upstream",
        "http://127.0.0.1:9/mcp",
        "--auth-issuer",
        "http://127.0.0.1:9",
        "--auth-jwks-uri",
        "http://127.0.0.1:9/jwks",
        "--tool-scope",
        "deploy",
    ]);
    assert_eq!(scope.code, 2, "{scope:#?}");
    assert!(scope.stderr.contains("TOOL=SCOPE"), "{scope:#?}");
}

#[test]
fn an_unprotected_proxy_is_not_served_beyond_loopback_unless_named_unsafe() {
    // Refused before the upstream is reached (nothing listens at port 9).
    let open = mcp(&[
        "proxy",
        "--upstream",
        "http://127.0.0.1:9/mcp",
        "--addr",
        "0.0.0.0:0",
    ]);
    assert_eq!(open.code, 2, "{open:#?}");
    assert!(
        open.stderr.contains("--unsafe-unauthenticated"),
        "{open:#?}"
    );
    // Named unsafe: it goes on, and fails only at the absent upstream.
    let named = mcp(&[
        "proxy",
        "--upstream",
        "http://127.0.0.1:9/mcp",
        "--addr",
        "0.0.0.0:0",
        "--unsafe-unauthenticated",
        "--timeout",
        "5",
    ]);
    assert_ne!(named.code, 0, "{named:#?}");
    assert!(
        !named.stderr.contains("--unsafe-unauthenticated"),
        "{named:#?}"
    );
}

#[test]
fn a_protected_proxy_refuses_downstream_clients_without_its_token() {
    let upstream = Upstream::start();
    // Nothing listens on port 9: no token can be verified, and none is accepted.
    let proxy = Proxy::start_with(
        &upstream.url,
        &[
            "--auth-issuer",
            "http://127.0.0.1:9",
            "--auth-jwks-uri",
            "http://127.0.0.1:9/jwks",
        ],
    );
    let anonymous = mcp(&["tools", &proxy.mcp, "--timeout", "10", "--no-browser"]);
    assert_ne!(anonymous.code, 0, "{anonymous:#?}");
    // The challenge named the proxy's authorization server.
    assert!(
        anonymous.stderr.contains("http://127.0.0.1:9"),
        "{anonymous:#?}"
    );
    let forged = mcp(&[
        "tools",
        &proxy.mcp,
        "--timeout",
        "10",
        "-H",
        "Authorization: Bearer not-a-jwt",
    ]);
    assert_eq!(forged.code, 4, "{forged:#?}");
    assert!(forged.stderr.contains("401"), "{forged:#?}");
}
