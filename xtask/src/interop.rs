//! `cargo xtask interop`: our server and client against real SDK peers, both directions.
//!
//! 1. Installs the pinned peers into `$MCP_CACHE_DIR/interop` (default
//!    `<workspace>/../.mcp-cache/interop`): the TypeScript SDK v1 (`@modelcontextprotocol/sdk`),
//!    the TypeScript SDK v2 client and server (`@modelcontextprotocol/client`, `/server`,
//!    `/node`) and Node 22 with npm, the Python SDK (`mcp`) in a virtual environment with pip. When an
//!    install fails the task (or the Python part) is skipped with a warning, except under
//!    `CI=true` where that is a failure.
//! 2. Copies the peer scripts kept in `interop/` next to the installed packages and builds
//!    `conformance-target` and `conformance-client`.
//! 3. Runs the peer clients against our server (`conformance-target`) and our client against the
//!    peer servers, over Streamable HTTP and HTTP+SSE (the TypeScript v2 server: Streamable HTTP),
//!    once accepting and once declining an elicitation (on revisions that have it). The dual-era
//!    clients (TypeScript v2, Python) run in `auto` mode (probing `server/discover`), pinned to
//!    2026-07-28, and in `legacy` mode; our client negotiates against the Python server, then is pinned to each older
//!    revision.
//! 4. Prints the matrix (peer, direction, revision, transport, elicitation: pass/fail), writes it
//!    to `docs/interop.md`, and fails when a cell fails.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::conformance::{self, NODE, NODE_MAJOR};

/// The TypeScript SDK v2 client and server, pinned, and the server's node:http adapter.
const TS_V2_CLIENT: &str = "@modelcontextprotocol/client";
const TS_V2_SERVER: &str = "@modelcontextprotocol/server";
const TS_V2_VERSION: &str = "2.4.0";
const TS_V2_NODE: &str = "@modelcontextprotocol/node";
const TS_V2_NODE_VERSION: &str = "2.1.2";
/// The TypeScript SDK v1, pinned.
const TS_V1: &str = "@modelcontextprotocol/sdk";
const TS_V1_VERSION: &str = "1.32.2";
/// The schema library the TypeScript v1 peer server declares its tool arguments with.
const ZOD: &str = "zod";
const ZOD_MAJOR: &str = "3";
/// The official Python SDK, pinned.
const PY_MCP: &str = "mcp";
const PY_MCP_VERSION: &str = "2.3.0";
/// The scripts copied from `interop/`.
const SCRIPTS: [&str; 6] = [
    "ts-v1-client.mjs",
    "ts-v2-client.mjs",
    "ts-v2-server.mjs",
    "ts-v1-server.mjs",
    "py-client.py",
    "py-server.py",
];
/// The revisions our client is pinned to against the dual-era peer servers (`None`: negotiate).
const DUAL_ERA_SERVER_REVISIONS: [Option<&str>; 5] = [
    None,
    Some("2025-11-25"),
    Some("2025-06-18"),
    Some("2025-03-26"),
    Some("2024-11-05"),
];
/// How the dual-era peer clients (TypeScript v2, Python) run against our server: their version
/// negotiation mode and the transport.
const DUAL_ERA_MODES: [(&str, &str); 4] = [
    ("auto", "Streamable HTTP"),
    ("2026-07-28", "Streamable HTTP"),
    ("legacy", "Streamable HTTP"),
    ("legacy", "HTTP+SSE"),
];
/// The revisions the TypeScript SDK v1 speaks (it has no 2026-07-28).
const TS_V1_REVISIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The elicitation answers tried on `revision`: none before elicitation existed (2025-06-18).
fn answers(revision: &str) -> &'static [&'static str] {
    if matches!(revision, "2024-11-05" | "2025-03-26") {
        &["none"]
    } else {
        &["accept", "decline"]
    }
}

/// The revision column: the one offered, and the one negotiated when they differ.
fn revision_cell(offered: &str, negotiated: &str) -> String {
    if offered == negotiated {
        offered.to_owned()
    } else {
        format!("{offered} (negotiated {negotiated})")
    }
}

/// How long one peer run may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// One cell of the matrix.
struct Cell {
    peer: &'static str,
    direction: &'static str,
    revision: String,
    transport: &'static str,
    elicitation: &'static str,
    ok: bool,
    detail: String,
}

/// Runs the task from the workspace root `root`.
pub(crate) fn run(root: &Path) -> Result<()> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let prefix = conformance::cache_dir(root).join("interop");
    let node = match install(&prefix) {
        Ok(node) => node,
        Err(err) if !ci => {
            eprintln!("xtask interop: skipped, the peers could not be installed: {err:#}");
            return Ok(());
        }
        Err(err) => return Err(err.context("installing the interop peers (CI=true)")),
    };
    let python = match install_python(&prefix) {
        Ok(python) => python,
        Err(err) if !ci => {
            eprintln!(
                "xtask interop: the Python peer is skipped, it could not be installed: {err:#}"
            );
            PathBuf::new()
        }
        Err(err) => return Err(err.context("installing the Python peer (CI=true)")),
    };
    for script in SCRIPTS {
        std::fs::copy(root.join("interop").join(script), prefix.join(script))
            .with_context(|| format!("copying interop/{script}"))?;
    }
    let peers = conformance::build_peers()?;
    let mut cells = Vec::new();

    let target = conformance::Target::start(&peers.target)?;
    let base = target.url.trim_end_matches("/mcp").to_owned();
    for revision in TS_V1_REVISIONS {
        for (transport, url) in [
            ("Streamable HTTP", target.url.clone()),
            ("HTTP+SSE", format!("{base}/sse")),
        ] {
            for answer in answers(revision) {
                let kind = if transport == "HTTP+SSE" {
                    "sse"
                } else {
                    "streamable"
                };
                let mut command = Command::new(&node);
                command
                    .arg("ts-v1-client.mjs")
                    .args([url.as_str(), kind, answer, revision])
                    .current_dir(&prefix);
                let (ok, stdout, stderr) = run_bounded(command)?;
                let report: serde_json::Value = stdout
                    .lines()
                    .rev()
                    .find_map(|l| serde_json::from_str(l).ok())
                    .unwrap_or_default();
                let negotiated = report["revision"].as_str().unwrap_or("?");
                cells.push(Cell {
                    peer: "TypeScript SDK v1 client",
                    direction: "peer client → our server",
                    revision: revision_cell(revision, negotiated),
                    transport,
                    elicitation: answer,
                    ok: ok && report["ok"] == true,
                    detail: report["detail"]
                        .as_str()
                        .map_or_else(|| stderr.trim().to_owned(), str::to_owned),
                });
            }
        }
    }
    cells.extend(mode_cells(
        &node,
        "ts-v2-client.mjs",
        "TypeScript SDK v2 client",
        &target.url,
        &prefix,
    )?);
    if python.exists() {
        cells.extend(mode_cells(
            &python,
            "py-client.py",
            "Python SDK client",
            &target.url,
            &prefix,
        )?);
    }
    drop(target);

    let server = PeerServer::start(&node, "ts-v1-server.mjs", &prefix)?;
    for revision in TS_V1_REVISIONS {
        for (transport, path) in [("Streamable HTTP", "/mcp"), ("HTTP+SSE", "/sse")] {
            for answer in answers(revision) {
                let mut command = Command::new(&peers.client);
                command
                    .arg(format!("{}{path}", server.base))
                    .env("MCP_CONFORMANCE_SCENARIO", format!("interop-{answer}"))
                    .env("MCP_CONFORMANCE_PROTOCOL_VERSION", revision);
                let (ok, stdout, stderr) = run_bounded(command)?;
                let negotiated = stdout
                    .lines()
                    .find_map(|l| l.strip_prefix("revision "))
                    .unwrap_or("?");
                cells.push(Cell {
                    peer: "TypeScript SDK v1 server",
                    direction: "our client → peer server",
                    revision: revision_cell(revision, negotiated),
                    transport,
                    elicitation: answer,
                    ok,
                    detail: if ok {
                        stdout.trim().to_owned()
                    } else {
                        stderr.trim().to_owned()
                    },
                });
            }
        }
    }
    drop(server);

    // The SDK v2 server's 2025-era leg is stateless: it cannot ask the client anything there.
    cells.extend(pinned_cells(
        &node,
        "ts-v2-server.mjs",
        "TypeScript SDK v2 server",
        &peers.client,
        &prefix,
        |pinned| match pinned {
            None => &["accept", "decline"],
            Some(_) => &["none"],
        },
        &[("Streamable HTTP", "/mcp")],
    )?);
    if python.exists() {
        cells.extend(pinned_cells(
            &python,
            "py-server.py",
            "Python SDK server",
            &peers.client,
            &prefix,
            |pinned| pinned.map_or(&["accept", "decline"][..], answers),
            &[("Streamable HTTP", "/mcp"), ("HTTP+SSE", "/sse")],
        )?);
    }

    let table = table(&cells);
    println!("\n{table}");
    let doc = format!(
        "# Interoperability\n\nWritten by `cargo xtask interop`: our server and client against \
         real SDK peers ({TS_V1}@{TS_V1_VERSION}, {TS_V2_CLIENT} and {TS_V2_SERVER} \
         {TS_V2_VERSION} on Node \
         {NODE_MAJOR}, Python \
         {PY_MCP}=={PY_MCP_VERSION}), over Streamable HTTP and HTTP+SSE, with an accepted and a \
         declined elicitation (`none`: no elicitation on that leg, because the revision has none or \
         the TypeScript v2 server's stateless 2025 fallback cannot ask). The peer scripts are in \
         [`interop/`](../interop); our server is `conformance-target`, our client \
         `conformance-client`.\n\n{table}"
    );
    std::fs::write(root.join("docs").join("interop.md"), doc).context("writing docs/interop.md")?;
    let failed = cells.iter().filter(|c| !c.ok).count();
    for cell in cells.iter().filter(|c| !c.ok) {
        eprintln!(
            "xtask interop: {} / {} / {} / {}: {}",
            cell.peer, cell.direction, cell.transport, cell.elicitation, cell.detail
        );
    }
    if failed > 0 {
        bail!("{failed} interop cell(s) failed");
    }
    Ok(())
}

fn table(cells: &[Cell]) -> String {
    let mut out = String::from(
        "| peer | direction | revision | transport | elicitation | result |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for c in cells {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            c.peer,
            c.direction,
            c.revision,
            c.transport,
            c.elicitation,
            if c.ok { "pass" } else { "FAIL" }
        );
    }
    out
}

/// Installs the peers into `prefix` unless they are there at the pinned versions; returns the
/// Node 22 binary.
fn install(prefix: &Path) -> Result<PathBuf> {
    let pinned = |prefix: &Path| {
        conformance::installed_version(prefix, NODE)
            .is_some_and(|v| v.split('.').next() == Some(NODE_MAJOR))
            && conformance::installed_version(prefix, TS_V1).as_deref() == Some(TS_V1_VERSION)
            && conformance::installed_version(prefix, TS_V2_CLIENT).as_deref()
                == Some(TS_V2_VERSION)
            && conformance::installed_version(prefix, TS_V2_SERVER).as_deref()
                == Some(TS_V2_VERSION)
            && conformance::installed_version(prefix, TS_V2_NODE).as_deref()
                == Some(TS_V2_NODE_VERSION)
            && conformance::installed_version(prefix, ZOD)
                .is_some_and(|v| v.split('.').next() == Some(ZOD_MAJOR))
    };
    if !pinned(prefix) {
        std::fs::create_dir_all(prefix)?;
        println!(
            "xtask interop: installing {TS_V1}@{TS_V1_VERSION} and {NODE}@{NODE_MAJOR} into {}",
            prefix.display()
        );
        let status = Command::new("npm")
            .arg("install")
            .arg("--prefix")
            .arg(prefix)
            .args([
                "--no-audit",
                "--no-fund",
                "--save-exact",
                "--loglevel=error",
            ])
            .arg(format!("{NODE}@{NODE_MAJOR}"))
            .arg(format!("{TS_V1}@{TS_V1_VERSION}"))
            .arg(format!("{TS_V2_CLIENT}@{TS_V2_VERSION}"))
            .arg(format!("{TS_V2_SERVER}@{TS_V2_VERSION}"))
            .arg(format!("{TS_V2_NODE}@{TS_V2_NODE_VERSION}"))
            .arg(format!("{ZOD}@{ZOD_MAJOR}"))
            .status()
            .context("running npm (is Node.js installed?)")?;
        if !status.success() {
            bail!("npm install failed ({status})");
        }
        if !pinned(prefix) {
            bail!("npm install finished but the pinned versions are not in place");
        }
    }
    let node = prefix
        .join("node_modules")
        .join(NODE)
        .join("bin")
        .join("node");
    if !node.exists() {
        bail!("{} is missing", node.display());
    }
    Ok(node)
}

/// The cells of a dual-era peer client (`script`, run by `program`) against our server at `url`:
/// every mode of [`DUAL_ERA_MODES`], accepting and declining an elicitation.
fn mode_cells(
    program: &Path,
    script: &str,
    peer: &'static str,
    url: &str,
    prefix: &Path,
) -> Result<Vec<Cell>> {
    let sse = format!("{}/sse", url.trim_end_matches("/mcp"));
    let mut cells = Vec::new();
    for (mode, transport) in DUAL_ERA_MODES {
        let (kind, url) = if transport == "HTTP+SSE" {
            ("sse", sse.as_str())
        } else {
            ("streamable", url)
        };
        for answer in ["accept", "decline"] {
            let mut command = Command::new(program);
            command
                .arg(script)
                .args([url, kind, answer, mode])
                .current_dir(prefix);
            let (ok, stdout, stderr) = run_bounded(command)?;
            let report: serde_json::Value = stdout
                .lines()
                .rev()
                .find_map(|l| serde_json::from_str(l).ok())
                .unwrap_or_default();
            let negotiated = report["revision"].as_str().unwrap_or("?");
            cells.push(Cell {
                peer,
                direction: "peer client → our server",
                revision: format!("{negotiated} (mode {mode})"),
                transport,
                elicitation: answer,
                ok: ok && report["ok"] == true,
                detail: report["detail"]
                    .as_str()
                    .map_or_else(|| stderr.trim().to_owned(), str::to_owned),
            });
        }
    }
    Ok(cells)
}

/// The cells of our client against a dual-era peer server (`script`, run by `program`):
/// negotiating, then pinned to each older revision, with the elicitation answers `answers_for`
/// gives for that pin.
fn pinned_cells(
    program: &Path,
    script: &str,
    peer: &'static str,
    client: &Path,
    prefix: &Path,
    answers_for: fn(Option<&str>) -> &'static [&'static str],
    transports: &[(&'static str, &str)],
) -> Result<Vec<Cell>> {
    let server = PeerServer::start(program, script, prefix)?;
    let mut cells = Vec::new();
    for &(transport, path) in transports {
        for pinned in DUAL_ERA_SERVER_REVISIONS {
            // HTTP+SSE carries the revisions with a handshake only: no negotiation to 2026-07-28.
            if transport == "HTTP+SSE" && pinned.is_none() {
                continue;
            }
            cells.extend(pinned_cell(
                client,
                &server.base,
                peer,
                transport,
                path,
                pinned,
                answers_for(pinned),
            )?);
        }
    }
    Ok(cells)
}

/// The cells of our client pinned to `pinned` (or negotiating) against `base` + `path`.
fn pinned_cell(
    client: &Path,
    base: &str,
    peer: &'static str,
    transport: &'static str,
    path: &str,
    pinned: Option<&str>,
    answers: &[&'static str],
) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    for &answer in answers {
        let mut command = Command::new(client);
        command
            .arg(format!("{base}{path}"))
            .env("MCP_CONFORMANCE_SCENARIO", format!("interop-{answer}"));
        match pinned {
            Some(revision) => command.env("MCP_CONFORMANCE_PROTOCOL_VERSION", revision),
            None => command.env_remove("MCP_CONFORMANCE_PROTOCOL_VERSION"),
        };
        let (ok, stdout, stderr) = run_bounded(command)?;
        let negotiated = stdout
            .lines()
            .find_map(|l| l.strip_prefix("revision "))
            .unwrap_or("?");
        cells.push(Cell {
            peer,
            direction: "our client → peer server",
            revision: match pinned {
                Some(revision) => revision_cell(revision, negotiated),
                None => format!("{negotiated} (negotiated)"),
            },
            transport,
            elicitation: answer,
            ok,
            detail: if ok {
                stdout.trim().to_owned()
            } else {
                stderr.trim().to_owned()
            },
        });
    }
    Ok(cells)
}

/// Makes a virtual environment with the pinned Python SDK in `prefix/py` unless it is there;
/// returns its interpreter.
fn install_python(prefix: &Path) -> Result<PathBuf> {
    let venv = prefix.join("py");
    let python = venv.join("bin").join("python");
    let installed = || {
        Command::new(&python)
            .args([
                "-c",
                "import importlib.metadata as m; print(m.version('mcp'))",
            ])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == PY_MCP_VERSION)
    };
    if installed() {
        return Ok(python);
    }
    println!(
        "xtask interop: installing {PY_MCP}=={PY_MCP_VERSION} into {}",
        venv.display()
    );
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .context("running python3 -m venv")?;
    if !status.success() {
        bail!("python3 -m venv failed ({status})");
    }
    let status = Command::new(venv.join("bin").join("pip"))
        .args(["install", "--quiet", &format!("{PY_MCP}=={PY_MCP_VERSION}")])
        .status()
        .context("running pip")?;
    if !status.success() || !installed() {
        bail!("pip could not install {PY_MCP}=={PY_MCP_VERSION}");
    }
    Ok(python)
}

/// Runs `command` to its end (killed after [`RUN_TIMEOUT`]); returns success, stdout, stderr.
fn run_bounded(mut command: Command) -> Result<(bool, String, String)> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting a peer")?;
    let mut stdout = child.stdout.take().context("stdout")?;
    let mut stderr = child.stderr.take().context("stderr")?;
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let deadline = Instant::now() + RUN_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = out.join().unwrap_or_default();
    let mut stderr = err.join().unwrap_or_default();
    if status.is_none() {
        stderr.push_str(&format!("\n(killed after {RUN_TIMEOUT:?})"));
    }
    Ok((status.is_some_and(|s| s.success()), stdout, stderr))
}

/// A peer server script; killed when dropped.
struct PeerServer {
    child: Child,
    base: String,
}

impl PeerServer {
    fn start(program: &Path, script: &str, prefix: &Path) -> Result<Self> {
        let mut child = Command::new(program)
            .arg(script)
            .current_dir(prefix)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting the peer server {script}"))?;
        let stdout = child.stdout.take().context("the peer server's stdout")?;
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        match (read, line.trim().strip_prefix("listening on ")) {
            (Ok(_), Some(base)) => Ok(Self {
                base: base.to_owned(),
                child,
            }),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("the peer server did not report its address (printed {line:?})")
            }
        }
    }
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elicitation_is_tried_only_where_it_exists() {
        assert_eq!(answers("2024-11-05"), ["none"]);
        assert_eq!(answers("2025-03-26"), ["none"]);
        assert_eq!(answers("2025-06-18"), ["accept", "decline"]);
        assert_eq!(answers("2025-11-25"), ["accept", "decline"]);
    }

    #[test]
    fn the_table_shows_each_cell_and_a_negotiated_revision() {
        let cell = |ok| Cell {
            peer: "p",
            direction: "d",
            revision: revision_cell("2025-06-18", if ok { "2025-06-18" } else { "2025-03-26" }),
            transport: "HTTP+SSE",
            elicitation: "accept",
            ok,
            detail: String::new(),
        };
        let table = table(&[cell(true), cell(false)]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[2],
            "| p | d | 2025-06-18 | HTTP+SSE | accept | pass |"
        );
        assert_eq!(
            lines[3],
            "| p | d | 2025-06-18 (negotiated 2025-03-26) | HTTP+SSE | accept | FAIL |"
        );
    }
}
