//! `mcp` on a real terminal: a pseudo-terminal from `script` (util-linux, part of every Debian
//! system) in front of the binary, against the stdio demo. Proves that on a terminal the CLI
//! prompts without `--interactive` and draws a progress bar instead of printing progress lines.

use crate::support;

use std::io::Write;
use std::process::{Command, Stdio};

use support::stdio_demo;

/// Runs `mcp ARGS` on a pseudo-terminal with `typed` as the keyboard; returns the exit code
/// and everything the terminal showed.
fn on_a_terminal(args: &[&str], typed: &str) -> (i32, String) {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut line = quote(env!("CARGO_BIN_EXE_mcp"));
    for arg in args {
        line.push(' ');
        line.push_str(&quote(arg));
    }
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .env("SHELL", "/bin/sh")
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("`script` (util-linux) runs: install bsdutils");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(typed.as_bytes())
        .expect("typing");
    let output = child.wait_with_output().expect("script ends");
    let shown = String::from_utf8_lossy(&output.stdout).replace('\r', "");
    (output.status.code().unwrap_or(-1), shown)
}

#[test]
fn a_terminal_gets_prompts_without_asking_for_them() {
    let demo = stdio_demo().display().to_string();
    let (code, shown) = on_a_terminal(
        &[
            "call",
            "--stdio",
            &demo,
            "--timeout",
            "30",
            "rename",
            "path=a.txt",
        ],
        "a\na\nnew.txt\n",
    );
    assert_eq!(code, 0, "{shown}");
    assert!(
        shown.contains("? The server asks: Rename a.txt?"),
        "{shown}"
    );
    assert!(shown.contains("New name (string): "), "{shown}");
    assert!(shown.contains("renamed a.txt to new.txt"), "{shown}");
}

#[test]
fn a_terminal_gets_a_progress_bar() {
    let demo = stdio_demo().display().to_string();
    let (code, shown) = on_a_terminal(
        &["call", "--stdio", &demo, "--timeout", "30", "count", "n=3"],
        "",
    );
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("100% step 3"), "{shown}");
    assert!(shown.contains("[info] counted 3"), "{shown}");
    assert!(shown.contains("counted to 3"), "{shown}");
    assert!(
        !shown.contains("progress 1/3"),
        "no progress lines on a terminal: {shown}"
    );
}
