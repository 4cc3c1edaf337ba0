//! Issue 47: arguments too long for a command line, from a file (`text=@FILE`) or stdin
//! (`--args-json -`, `--args-json @FILE`), with a 5 MB value, and the cap that refuses a
//! larger file by name.
//!
//! The demos keep the default 4 MiB request body, so the server here is an in-process
//! `mcp-server` with an `echo` tool and a 16 MiB limit, on a real socket of 127.0.0.1.

use std::sync::mpsc;

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use mcp_server::{Server, Tool};
use serde_json::{Map, Value, json};

use crate::support::{self, mcp, mcp_with_input};

/// Echoes its `text`.
async fn echo(args: Map<String, Value>) -> String {
    args.get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A server with `echo` and a 16 MiB body limit on 127.0.0.1; stops when dropped.
struct BigServer {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BigServer {
    fn start() -> Self {
        let (ready, url) = mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let server = Server::builder("big", "1.0")
                    .tool(Tool::new("echo", echo).description("Echoes its text."))
                    .build()
                    .expect("a valid server");
                let config = HttpConfig::default().body_limit(16 * 1024 * 1024);
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                let addr = listener.local_addr().expect("addr");
                ready
                    .send(format!("http://{addr}/mcp"))
                    .expect("the test waits");
                let endpoint = HttpEndpoint::new(server, config);
                let _ = serve_with_shutdown(listener, endpoint, async {
                    let _ = stopped.await;
                })
                .await;
            });
        });
        let url = url.recv().expect("the server starts");
        Self {
            url,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for BigServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// 5 MB of text: numbered lines, with quotes, braces and a leading `@` that must arrive as
/// they are.
fn five_megabytes() -> String {
    let mut text = String::with_capacity(5_000_100);
    let mut n = 0u64;
    while text.len() < 5_000_000 {
        text.push_str(&format!("@line {n}: \"quoted\" {{braces}} = and : too\n"));
        n += 1;
    }
    text
}

#[test]
fn a_five_megabyte_value_from_a_file_or_stdin() {
    let server = BigServer::start();
    let big = five_megabytes();
    let path = support::scratch("five-mb");
    std::fs::write(&path, &big).expect("write the file");
    let file = path.display().to_string();

    let from_file = mcp(&[
        "call",
        &server.url,
        "echo",
        &format!("text=@{file}"),
        "--json",
        "--timeout",
        "60",
    ]);
    assert_eq!(from_file.code, 0, "{}", from_file.stderr);
    assert_eq!(
        from_file.json()["content"][0]["text"],
        Value::String(big.clone())
    );

    let object = json!({ "text": big }).to_string();
    let from_stdin = mcp_with_input(
        &[
            "call",
            &server.url,
            "echo",
            "--args-json",
            "-",
            "--json",
            "--timeout",
            "60",
        ],
        &object,
    );
    assert_eq!(from_stdin.code, 0, "{}", from_stdin.stderr);
    assert_eq!(
        from_stdin.json()["content"][0]["text"],
        Value::String(big.clone())
    );

    let json_path = support::scratch("five-mb-json");
    std::fs::write(&json_path, &object).expect("write the JSON file");
    let from_json_file = mcp(&[
        "call",
        &server.url,
        "echo",
        "--args-json",
        &format!("@{}", json_path.display()),
        "--json",
        "--timeout",
        "60",
    ]);
    assert_eq!(from_json_file.code, 0, "{}", from_json_file.stderr);
    assert_eq!(
        from_json_file.json()["content"][0]["text"],
        Value::String(big)
    );

    // @@ sends a literal leading @.
    let literal = mcp(&["call", &server.url, "echo", "text=@@ada"]);
    assert_eq!(literal.ok(), "@ada\n");
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&json_path);
}

#[test]
fn files_past_the_cap_and_missing_files_are_refused_by_name() {
    // A sparse file of 65 MiB: refused from its size, before anything is read or connected.
    let path = support::scratch("too-big");
    let file = std::fs::File::create(&path).expect("create");
    file.set_len(65 * 1024 * 1024).expect("set_len");
    drop(file);
    let url = "http://127.0.0.1:9/mcp";
    let refused = mcp(&["call", url, "echo", &format!("text=@{}", path.display())]);
    assert_eq!(refused.code, 2, "{refused:?}");
    let line = refused.stderr.trim();
    assert!(line.starts_with("mcp: error [input]: "), "{line}");
    assert!(line.contains(&path.display().to_string()), "{line}");
    assert!(line.contains("67108864 bytes"), "{line}");
    let refused = mcp(&[
        "call",
        url,
        "echo",
        "--args-json",
        &format!("@{}", path.display()),
    ]);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("is too large"),
        "{}",
        refused.stderr
    );
    let _ = std::fs::remove_file(&path);

    let missing = mcp(&["call", url, "echo", "text=@/no/such/file.txt"]);
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(
        missing
            .stderr
            .contains("cannot read the file \"/no/such/file.txt\" for text=@/no/such/file.txt"),
        "{}",
        missing.stderr
    );
    assert!(missing.stderr.contains("@@"), "{}", missing.stderr);

    // Stdin past the cap: 64 MiB and one byte.
    let over = "x".repeat(64 * 1024 * 1024 + 1);
    let refused = mcp_with_input(&["call", url, "echo", "--args-json", "-"], &over);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("stdin (for --args-json -) is too large"),
        "{}",
        refused.stderr
    );
}

/// A value past the demo's 4 MiB request limit: whether the server answers 413 or drops the
/// connection while the body is sent, the hint names the server's limit (over HTTP and stdio).
#[test]
fn a_value_past_the_servers_limit_gets_a_hint_naming_it() {
    let demo = support::Demo::start();
    let path = support::scratch("past-the-limit");
    std::fs::write(&path, five_megabytes()).expect("write the file");
    let text = format!("text=@{}", path.display());
    let stdio = support::stdio_demo().display().to_string();
    for target in [vec![demo.mcp()], vec!["--stdio".to_owned(), stdio]] {
        let mut args: Vec<&str> = vec!["call"];
        args.extend(target.iter().map(String::as_str));
        args.extend(["echo", &text, "--timeout", "60"]);
        let out = mcp(&args);
        assert_ne!(out.code, 0, "{out:?}");
        let line = out.stderr.lines().last().unwrap_or_default();
        assert!(
            line.contains("(try: the request may be larger than the server accepts"),
            "{target:?}: {}",
            out.stderr
        );
    }
    let _ = std::fs::remove_file(&path);
}
