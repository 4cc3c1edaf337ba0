//! Issue 50's retry contract in the CLI: a raw HTTP server on 127.0.0.1 (see [`crate::hostile`])
//! refuses requests with 429, `Retry-After` and the JSON-RPC error `-31429` (a 50 ms wait), and
//! `mcp` says it is retrying, succeeds once the server serves again, or gives up with exit code 8
//! and an error line naming the wait the server asked for.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::hostile::{handshake_then, reply, result, serve};
use crate::support::mcp;

/// The exit code of a command that gave up on a rate limit (`mcp --help`).
const RATE_LIMITED_EXIT: i32 = 8;

/// The contract's refusal: 429, `Retry-After: 1` (50 ms rounded up to whole seconds) and the
/// JSON-RPC error with `retryAfterMs` 50 and the limit's name.
fn refusal(request: &Value, limit: &str) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": request["id"], "error": {
        "code": -31429, "message": format!("rate limited: {limit}"),
        "data": {"retryAfterMs": 50, "limit": limit}}});
    let body = body.to_string();
    format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A 2025-06-18 server that refuses the first `refusals` requests of `method` (every one with
/// `usize::MAX`) and counts them all.
fn limited(method: &'static str, refusals: usize) -> (String, Arc<AtomicUsize>) {
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = seen.clone();
    let url = serve(handshake_then(move |http_method, body| {
        if http_method == "DELETE" {
            return Some(reply("200 OK", "text/plain", b""));
        }
        let name = body["method"].as_str().unwrap_or("");
        if name == method && counted.fetch_add(1, Ordering::SeqCst) < refusals {
            return Some(refusal(body, method));
        }
        match name {
            "tools/list" => result(
                body,
                json!({"tools": [{"name": "deploy", "inputSchema": {"type": "object"}}]}),
            ),
            "tools/call" => result(
                body,
                json!({"content": [{"type": "text", "text": "deployed"}]}),
            ),
            _ => result(body, json!({})),
        }
    }));
    (url, seen)
}

#[test]
fn a_rate_limited_request_is_retried_with_a_line_on_stderr() {
    let (url, seen) = limited("tools/list", 2);
    let run = mcp(&["tools", &url, "--revision", "2025-06-18"]);
    assert!(run.ok().contains("deploy"), "{run:#?}");
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    let retries: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("rate limited by the server (tools/list), retrying in"))
        .collect();
    assert_eq!(retries.len(), 2, "{}", run.stderr);
    // 50 ms plus at most 10% jitter.
    assert!(retries.iter().all(|l| l.ends_with(" ms")), "{}", run.stderr);
}

#[test]
fn giving_up_exits_8_naming_the_wait() {
    let (url, seen) = limited("tools/list", usize::MAX);
    let run = mcp(&[
        "tools",
        &url,
        "--revision",
        "2025-06-18",
        "--retry-rate-limited",
        "1",
    ]);
    assert_eq!(run.code, RATE_LIMITED_EXIT, "{run:#?}");
    assert_eq!(seen.load(Ordering::SeqCst), 2, "one retry");
    let line = run.stderr.lines().last().unwrap_or("");
    assert!(line.contains("[rate limited]"), "{line}");
    assert!(line.contains("(limit tools/list)"), "{line}");
    assert!(line.contains("the server asked to wait 50 ms"), "{line}");
    assert!(line.contains("--retry-rate-limited"), "the hint: {line}");
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn a_tool_call_is_retried_only_when_asked() {
    // `deploy` is not annotated idempotent or read-only: one refusal is final.
    let (url, seen) = limited("tools/call", 1);
    let run = mcp(&["call", &url, "deploy", "--revision", "2025-06-18"]);
    assert_eq!(run.code, RATE_LIMITED_EXIT, "{run:#?}");
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert!(!run.stderr.contains("retrying in"), "{}", run.stderr);
    assert!(
        run.stderr.contains("--retry-tool-calls"),
        "the hint: {}",
        run.stderr
    );
    // Asked for: retried, and it succeeds.
    let (url, seen) = limited("tools/call", 1);
    let run = mcp(&[
        "call",
        &url,
        "deploy",
        "--revision",
        "2025-06-18",
        "--retry-tool-calls",
    ]);
    assert!(run.ok().contains("deployed"), "{run:#?}");
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    assert!(
        run.stderr
            .contains("rate limited by the server (tools/call), retrying in"),
        "{}",
        run.stderr
    );
}

#[test]
fn help_lists_the_exit_code() {
    let help = mcp(&["--help"]);
    assert!(help.ok().contains("8  rate limited"), "{}", help.stdout);
}

#[test]
fn the_console_shows_retries_and_a_rate_limited_call_with_its_wait() {
    use crate::support::console::Console;

    let console = Console::start(&[]);
    // A retried listing: the page hears of the retry as an event.
    let (url, seen) = limited("tools/list", 1);
    let conn = console.ok("/api/connect", &json!({"url": url}))["conn"].clone();
    let tools = console.ok("/api/list", &json!({"conn": conn, "kind": "tools"}));
    assert_eq!(seen.load(Ordering::SeqCst), 2, "{tools}");
    let event = console.wait_event(0, |e| e["type"] == "rate-limited");
    assert_eq!(event["limit"], "tools/list");
    assert_eq!(event["retryAfterMs"], 50);
    let message = event["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with("rate limited by the server (tools/list), retrying in"),
        "{event}"
    );
    // A tool call that stays refused: the error says so, with the wait.
    let (url, _) = limited("tools/call", usize::MAX);
    let conn = console.ok("/api/connect", &json!({"url": url}))["conn"].clone();
    let answer = console.post(
        "/api/call",
        &json!({"conn": conn, "name": "deploy", "arguments": {}}),
    );
    let body = answer.json();
    assert_eq!(body["error"]["kind"], "RateLimited", "{body}");
    assert_eq!(body["error"]["rateLimited"]["retryAfterMs"], 50, "{body}");
    assert_eq!(
        body["error"]["rateLimited"]["limit"], "tools/call",
        "{body}"
    );
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("the server asked to wait 50 ms"), "{body}");
}
