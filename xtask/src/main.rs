//! Project automation for the MCP workspace, run as `cargo xtask <task>`.
//!
//! Tasks:
//! - `ci [--timings]`: everything CI checks, in order: formatting, clippy with `-D warnings` on
//!   all targets and features, rustdoc with `-D warnings`, `check-layers`, the tests (with
//!   cargo-nextest's `ci` profile when `cargo nextest` is installed, else `cargo test`) and the
//!   doctests; it prints the time of each step at the end, failed or not. `--timings` also asks
//!   cargo for its HTML build timings of the test build (`target/cargo-timings/`).
//! - `build-release [--quick]`: the one release build `bench` and `soak` share (see `build.rs`);
//!   with `--quick` only checks that the debug binaries their `--quick` runs use are built.
//! - `release-check`: the release checklist: every published crate packages and builds from its
//!   tarball, has its metadata and licence files, cargo-deny accepts the licences, versions and
//!   sources, and the MSRV is the toolchain in use (see `release.rs`).
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
mod build;
mod conformance;
mod fuzz;
mod interop;
mod layers;
mod modules;
mod release;
mod schemas;
mod soak;
mod steps;

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
        "ci" => ci(&args[1..]),
        "build-release" => build_release(&args[1..]),
        "release-check" => release::run(&workspace_root()),
        "check-layers" => check_layers(),
        "bench" => bench::run(&args[1..]),
        "conformance" => conformance::run(&workspace_root()),
        "interop" => interop::run(&workspace_root()),
        "soak" => soak::run(&args[1..]),
        "fuzz" => fuzz::run(&workspace_root(), &args[1..]),
        "schemas" => schemas::run(&workspace_root(), &args[1..]),
        "help" | "--help" | "-h" => {
            println!(
                "usage: cargo xtask <ci [--timings] | build-release [--quick] | release-check | check-layers | bench [--quick] | conformance | interop | soak [--quick] [--seconds N] [--enforce] | fuzz [--build-only | --replay] [--seconds N] [--target NAME] | schemas [--from DIR] [--to DIR] [--check]>"
            );
            Ok(())
        }
        other => bail!("unknown task `{other}`; try `cargo xtask help`"),
    }
}

/// `cargo xtask build-release [--quick]`: the shared optimized build of `bench` and `soak`, with
/// the `release` profile, or (`--quick`) the debug build their `--quick` runs use.
fn build_release(args: &[String]) -> Result<()> {
    let mut quick = false;
    for arg in args {
        match arg.as_str() {
            "--quick" => quick = true,
            other => bail!("unknown argument `{other}` for build-release; try `cargo xtask help`"),
        }
    }
    build::release(build::Release::for_run(quick))
}

/// Runs every check CI runs, stopping at the first failure, and prints the time of each step.
fn ci(args: &[String]) -> Result<()> {
    let mut timings = false;
    for arg in args {
        match arg.as_str() {
            "--timings" => timings = true,
            other => bail!("unknown argument `{other}` for ci; try `cargo xtask help`"),
        }
    }
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
    let mut steps = steps::Steps::default();
    let result = ci_steps(&mut steps, timings);
    eprintln!("\n{}", steps.table("xtask ci step"));
    if let Some(banner) = &banner {
        eprintln!("{banner}");
    }
    result
}

fn ci_steps(steps: &mut steps::Steps, timings: bool) -> Result<()> {
    steps.run("fmt", || cargo(&["fmt", "--all", "--check"], &[]))?;
    steps.run("clippy", || {
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
        )
    })?;
    steps.run("doc", || {
        cargo(
            &["doc", "--workspace", "--no-deps", "--all-features"],
            &[("RUSTDOCFLAGS", "-D warnings")],
        )
    })?;
    steps.run("check-layers", check_layers)?;
    let timings_flag: &[&str] = if timings { &["--timings"] } else { &[] };
    if nextest_installed() {
        // One process per test (what tests that install a global subscriber or re-execute
        // their binary expect), no retries, every failure reported: `.config/nextest.toml`.
        let mut build = vec!["nextest", "run", "--workspace", "--all-features"];
        build.extend(timings_flag);
        build.extend(["--no-run"]);
        steps.run("test build", || cargo(&build, &[]))?;
        steps.run("test run (nextest)", || {
            cargo(
                &[
                    "nextest",
                    "run",
                    "--workspace",
                    "--all-features",
                    "--profile",
                    "ci",
                ],
                &[],
            )
        })?;
        // nextest runs no doctests.
        steps.run("doctests", || {
            cargo(&["test", "--doc", "--workspace", "--all-features"], &[])
        })?;
    } else {
        eprintln!("xtask: cargo-nextest is not installed; running the tests with cargo test");
        let mut test = vec!["test", "--workspace", "--all-features"];
        test.extend(timings_flag);
        steps.run("test (cargo test)", || cargo(&test, &[]))?;
    }
    Ok(())
}

/// Whether `cargo nextest` runs here.
fn nextest_installed() -> bool {
    cargo_command()
        .args(["nextest", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn check_layers() -> Result<()> {
    let output = cargo_command()
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

/// Whether `name` is one of the variables cargo sets for a crate it compiles or runs
/// (`CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR`, ...), which a program started by `cargo run` or
/// `cargo test` inherits.
pub(crate) fn is_crate_env(name: &str) -> bool {
    ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_BIN_EXE_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || [
            "CARGO_CRATE_NAME",
            "CARGO_BIN_NAME",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_TMPDIR",
            "CARGO_RUSTC_CURRENT_DIR",
        ]
        .contains(&name)
}

/// Removes from `command`'s environment the variables cargo set for xtask itself
/// ([`is_crate_env`]). A nested cargo must not see them: some build scripts (ring's) ask to be
/// rerun when `CARGO_PKG_NAME` or `CARGO_MANIFEST_DIR` changes, and cargo compares those with
/// its own environment, so a build started from xtask (`CARGO_PKG_NAME=xtask`) and one started
/// from a shell would each find ring stale and rebuild it and everything above it (rustls,
/// hyper-rustls, every workspace crate and test binary) in turn.
pub(crate) fn without_crate_env(command: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(is_crate_env) {
            command.env_remove(name);
        }
    }
    command
}

/// A `cargo` command without xtask's crate variables ([`without_crate_env`]).
pub(crate) fn cargo_command() -> Command {
    let mut command = Command::new(cargo_bin());
    without_crate_env(&mut command);
    command
}

fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    eprintln!("xtask: cargo {}", args.join(" "));
    let status = cargo_command()
        .args(args)
        .envs(env.iter().copied())
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_cargo_sets_for_a_crate_are_not_passed_to_a_nested_cargo() {
        for name in [
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_LINKS",
            "CARGO_BIN_EXE_mcp",
            "CARGO_CRATE_NAME",
            "CARGO_PRIMARY_PACKAGE",
        ] {
            assert!(is_crate_env(name), "{name}");
        }
        // The user's settings reach it.
        for name in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "CARGO_BUILD_JOBS",
            "CARGO_PROFILE_DEV_DEBUG",
        ] {
            assert!(!is_crate_env(name), "{name}");
        }
        // xtask runs under `cargo run`, which set CARGO_PKG_NAME for it: the command drops it.
        let command = cargo_command();
        let removed: Vec<_> = command
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect();
        if std::env::var_os("CARGO_PKG_NAME").is_some() {
            assert!(removed.iter().any(|n| n == "CARGO_PKG_NAME"), "{removed:?}");
        }
        assert!(removed.iter().all(|n| is_crate_env(n)), "{removed:?}");
    }
}
