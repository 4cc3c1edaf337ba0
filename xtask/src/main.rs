//! Project automation for the MCP workspace, run as `cargo xtask <task>`.
//!
//! Tasks:
//! - `ci`: everything CI checks, in order: formatting, clippy with `-D warnings` on all targets
//!   and features, rustdoc with `-D warnings`, the tests, and `check-layers`.
//! - `check-layers`: fails when a workspace crate's normal dependencies break the layering matrix
//!   of `ARCHITECTURE.md`.
//! - `conformance`: the official MCP conformance suite against our server and client (see
//!   `conformance.rs`).
//! - `interop`: our server and client against real SDK peers, both directions (see
//!   `interop.rs`).
//! - `soak`: the soak and abuse harness (issue 27): attacks against the release demo server,
//!   figures in `docs/reliability.md` (see `soak.rs`).
//! - `fuzz`: builds the cargo-fuzz targets of `fuzz/` on nightly and runs each for `--seconds N`
//!   (see `fuzz.rs`).

mod bench;
mod conformance;
mod fuzz;
mod interop;
mod layers;
mod modules;
mod schemas;
mod soak;

use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    match task {
        "ci" => ci(),
        "check-layers" => check_layers(),
        "bench" => bench::run(&args[1..]),
        "conformance" => conformance::run(&workspace_root()),
        "interop" => interop::run(&workspace_root()),
        "soak" => soak::run(&args[1..]),
        "fuzz" => fuzz::run(&workspace_root(), &args[1..]),
        "schemas" => schemas::run(&workspace_root(), &args[1..]),
        "help" | "--help" | "-h" => {
            println!(
                "usage: cargo xtask <ci | check-layers | bench [--quick] | conformance | interop | soak [--quick] [--seconds N] [--enforce] | fuzz [--build-only | --replay] [--seconds N] [--target NAME] | schemas [--from DIR] [--to DIR] [--check]>"
            );
            Ok(())
        }
        other => bail!("unknown task `{other}`; try `cargo xtask help`"),
    }
}

/// Runs every check CI runs, stopping at the first failure.
fn ci() -> Result<()> {
    // The official schemas first: without them every schema check of the tests is skipped,
    // which must not pass unnoticed (with CI=true it is a failure).
    let folder = schemas::folder(&workspace_root());
    let banner = match schemas::check(&folder)? {
        schemas::State::Complete => None,
        schemas::State::Missing(files) => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                bail!(
                    "the official schemas are missing in {} ({}); run `cargo xtask schemas`",
                    folder.display(),
                    files.join(", ")
                );
            }
            Some(schemas::missing_banner(&folder, &files))
        }
    };
    if let Some(banner) = &banner {
        eprintln!("{banner}");
    }
    let result = ci_steps();
    if let Some(banner) = &banner {
        eprintln!("{banner}");
    }
    result
}

fn ci_steps() -> Result<()> {
    cargo(&["fmt", "--all", "--check"], &[])?;
    cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    cargo(
        &["doc", "--workspace", "--no-deps", "--all-features"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    check_layers()?;
    cargo(&["test", "--workspace", "--all-features"], &[])?;
    Ok(())
}

fn check_layers() -> Result<()> {
    let output = Command::new(cargo_bin())
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("parsing cargo metadata")?;
    let violations = layers::check(&metadata)?;
    for violation in &violations {
        eprintln!("check-layers: {violation}");
    }
    let mut cycles = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        for target in package["targets"].as_array().into_iter().flatten() {
            let is_lib = target["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "lib"));
            if let (true, Some(path)) = (is_lib, target["src_path"].as_str()) {
                let name = package["name"].as_str().unwrap_or("?");
                cycles.extend(modules::cycles(name, std::path::Path::new(path))?);
            }
        }
    }
    for cycle in &cycles {
        eprintln!("check-layers: {cycle}");
    }
    if violations.is_empty() && cycles.is_empty() {
        println!(
            "check-layers: every workspace crate respects the layering matrix, and no crate's modules import one another in a cycle"
        );
        return Ok(());
    }
    bail!(
        "{} layering violation(s), {} module cycle(s)",
        violations.len(),
        cycles.len()
    )
}

/// The workspace root: xtask lives one level below it.
fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(
            || std::path::PathBuf::from("."),
            std::path::Path::to_path_buf,
        )
}

fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    eprintln!("xtask: cargo {}", args.join(" "));
    let status = Command::new(cargo_bin())
        .args(args)
        .envs(env.iter().copied())
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}
