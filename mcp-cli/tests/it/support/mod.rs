//! Running the `mcp` binary against the demo servers (binaries of mcp-server, built once per
//! test binary), and validating what the CLI sent against the official schemas.

#![allow(dead_code, unreachable_pub)] // Shared by several test files; each uses a part.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

pub mod console;
pub mod schema;
pub mod webdriver;

/// The longest one `mcp` run may take before the test kills it and fails.
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// The cargo build that gives the tests the workspace's binaries: the packages, features and
/// targets of `cargo xtask ci`'s test build (`cargo nextest run --workspace --all-features`), so
/// that under it nothing is rebuilt.
const WORKSPACE_BUILD: &[&str] = &[
    "build",
    "--workspace",
    "--all-features",
    "--bins",
    "--tests",
    "--message-format=json",
];

/// The workspace build ([`WORKSPACE_BUILD`]) as a command, without the variables cargo set for
/// this test binary (`CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR`, ...). Some build scripts (ring's)
/// ask to be rerun when those change, and cargo compares them with its own environment: with
/// them, this build would find ring stale and rebuild it and everything above it (rustls, every
/// workspace crate and test binary) inside the test, and the next build from a shell would
/// rebuild it all again.
fn workspace_build() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(WORKSPACE_BUILD)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let set_by_cargo = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_EXE_"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
            || [
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
            ]
            .contains(&name);
        if set_by_cargo {
            command.env_remove(name);
        }
    }
    command
}

/// Whether a cargo JSON message is the artifact of the binary `bin` (not its unit-test build,
/// which has the same target name).
fn is_binary(message: &Value, bin: &str) -> bool {
    message["reason"] == "compiler-artifact"
        && message["target"]["name"] == bin
        && message["target"]["kind"]
            .as_array()
            .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"))
        && message["profile"]["test"] == false
}

/// Builds the workspace binary `bin` with every feature (once per test binary) and returns its path, read from cargo's
/// `compiler-artifact` messages.
pub fn server_bin(bin: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.get(bin) {
        return path.clone();
    }
    // The packages, features and targets of the workspace's test build (`cargo xtask ci`):
    // after it this only checks that the binaries are fresh. `-p everymcp-server --bin NAME`
    // alone resolves other features and rebuilt the workspace and tokio, hyper, ... for
    // minutes inside the first test that asked.
    let output = workspace_build()
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "building {bin} failed");
    let path = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| is_binary(m, bin))
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo named no executable for {bin}"));
    built.insert(bin.to_owned(), path.clone());
    path
}

/// The stdio demo's path.
pub fn stdio_demo() -> PathBuf {
    server_bin("mcp-stdio-demo")
}

/// The `--stdio` command for the demo, with every line the client sends appended to `log` (a
/// `tee` in front of the server).
pub fn recorded_demo(log: &Path) -> String {
    format!(
        "sh -c 'tee -a \"$0\" | exec \"$1\"' {} {}",
        shell_quote(&log.display().to_string()),
        shell_quote(&stdio_demo().display().to_string())
    )
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// What one run of `mcp` did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts success and returns stdout.
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "mcp failed: {self:#?}");
        &self.stdout
    }

    /// Stdout parsed as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }
}

/// Runs `mcp` with `args` and `input` on stdin, bounded by [`RUN_LIMIT`].
pub fn mcp_with_input(args: &[&str], input: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcp starts");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_owned();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let run = finish(child);
    let _ = writer.join();
    run
}

/// Runs `mcp` with `args` and an empty stdin.
pub fn mcp(args: &[&str]) -> Run {
    mcp_with_input(args, "")
}

/// Collects a child's output, killing it when it outlives [`RUN_LIMIT`].
fn finish(mut child: Child) -> Run {
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(());
        status
    });
    if rx.recv_timeout(RUN_LIMIT).is_err() {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        panic!("mcp ran longer than {RUN_LIMIT:?}");
    }
    let status = waiter.join().expect("waiter").expect("wait");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
    }
}

/// A running `mcp` whose stderr is read line by line (for `listen`).
pub struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Running {
    /// Starts `mcp` with `args`.
    pub fn start(args: &[&str]) -> Self {
        Self::start_with_stdin(args, Stdio::null())
    }

    /// Starts `mcp` with `args` and `stdin` (a pipe kept open: a prompt waits on it).
    pub fn start_with_stdin(args: &[&str], stdin: Stdio) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp"))
            .args(args)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mcp starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self { child, lines }
    }

    /// Waits for a stderr line containing `needle`; panics after a generous limit.
    pub fn wait_for_stderr(&self, needle: &str) -> String {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(e) => panic!("no stderr line with {needle:?}: {e}"),
            }
        }
    }

    /// Writes `text` on its stdin (started with [`Stdio::piped`]).
    pub fn type_in(&mut self, text: &str) {
        let stdin = self.child.stdin.as_mut().expect("a piped stdin");
        stdin.write_all(text.as_bytes()).expect("write stdin");
        stdin.flush().expect("flush stdin");
    }

    /// Sends SIGINT, as Ctrl-C on a terminal would.
    pub fn interrupt(&self) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -INT failed");
    }

    /// Waits for the process to end by itself (the lines it printed bound the wait) and
    /// returns its output.
    pub fn finish(mut self) -> Run {
        let mut rest = Vec::new();
        loop {
            match self.lines.recv_timeout(RUN_LIMIT) {
                Ok(line) => rest.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("mcp ran longer than {RUN_LIMIT:?}"),
            }
        }
        let mut stdout = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            let _ = out.read_to_string(&mut stdout);
        }
        let status = self.child.wait().expect("wait");
        Run {
            code: status.code().unwrap_or(-1),
            stdout,
            stderr: rest.join("\n"),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh, empty file path under the target directory for one test's recording.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-cli-tests");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(format!("{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// A running `mcp-demo` (HTTP) on 127.0.0.1 with a port of its own; killed on drop.
pub struct Demo {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Demo {
    /// Starts the demo and waits for its `mcp-demo listening on URL` line.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts the demo with `extra` options after `--addr`.
    pub fn start_with(extra: &[&str]) -> Self {
        Self::start_on(0, extra)
    }

    /// Starts the demo on `port` of 127.0.0.1 (0: a free one) with `extra` options.
    pub fn start_on(port: u16, extra: &[&str]) -> Self {
        let mut child = Command::new(server_bin("mcp-demo"))
            .args(["--addr", &format!("127.0.0.1:{port}")])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("mcp-demo starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            // Keep reading so the demo never blocks on a full pipe.
            for _ in lines {}
        });
        let first = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("mcp-demo prints its address");
        let base = first
            .strip_prefix("mcp-demo listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .trim()
            .to_owned();
        Self {
            child: Some(child),
            base,
        }
    }

    /// The process id.
    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The Streamable HTTP endpoint.
    pub fn mcp(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// The HTTP+SSE stream endpoint.
    pub fn sse(&self) -> String {
        format!("{}/sse", self.base)
    }

    /// Sends SIGTERM (as an orchestrator stopping the worker does: it drains for its
    /// `--drain-period`, ends its streams cleanly and stops) and waits until it has exited.
    pub fn terminate(mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM failed");
        let (tx, rx) = mpsc::channel();
        let mut child = self.child.take().expect("the demo runs");
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        let exited = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("mcp-demo stops after SIGTERM");
        assert!(exited.is_ok(), "waiting for mcp-demo failed: {exited:?}");
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.base
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("the base URL ends with the port")
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `conformance-target` on 127.0.0.1:0 (the suite's fixtures), killed when dropped.
pub struct Target {
    child: Child,
    /// Its Streamable HTTP endpoint.
    pub url: String,
}

impl Target {
    /// Builds and starts it; waits for its address.
    pub fn start() -> Self {
        let output = workspace_build()
            .stderr(Stdio::inherit())
            .output()
            .expect("cargo runs");
        assert!(
            output.status.success(),
            "building conformance-target failed"
        );
        let binary = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| is_binary(m, "conformance-target"))
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .expect("cargo names the conformance-target binary");
        let mut child = Command::new(binary)
            .args(["--addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("conformance-target starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("conformance-target prints its URL");
        let url = line
            .trim()
            .strip_prefix("conformance-target listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Self { child, url }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
