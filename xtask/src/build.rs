//! The builds several tasks share, so that CI builds each thing once.
//!
//! - [`release`]: one optimized build of every binary `bench` and `soak` run, with the union of
//!   their packages and features. Built apart, the two feature sets would compile `mcp-server`
//!   and everything above it twice; `.ci/run` runs it once (`cargo xtask build-release --quick`)
//!   before both. Two profiles ([`Release`]): `release` for the runs whose numbers are published
//!   (`cargo xtask bench`, `cargo xtask soak`), and, for the quick rounds CI runs (`--quick`),
//!   which prove that every row and attack works and measure nothing, no optimized build at all:
//!   they run the debug binaries of `cargo xtask ci`'s test build (the [`debug_binary`] build
//!   below), so CI compiles the workspace once, not twice.
//! - [`debug_binary`]: the debug binaries `conformance` and `interop` run come from one
//!   `cargo build --workspace --all-features --bins --tests`: the packages, features and targets
//!   of `cargo xtask ci`'s test build, so after `cargo xtask ci` it only checks that they are
//!   fresh (a `-p PACKAGE --bin NAME` build resolves other features and compiles the workspace
//!   and tokio, hyper, ... once more).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;

use anyhow::{Context, Result, bail};

/// The optimized build profile of `bench` and `soak`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Release {
    /// Cargo's `release` profile: for the runs whose figures are published.
    Full,
    /// The debug binaries of the test build (folder `debug`): for the `--quick` rounds CI runs,
    /// which measure nothing and only prove that every row and attack works.
    Quick,
}

impl Release {
    /// The profile for a run with (`quick`) or without `--quick`.
    pub(crate) fn for_run(quick: bool) -> Self {
        if quick { Self::Quick } else { Self::Full }
    }

    /// The cargo profile's name, which is also its folder under the target directory.
    pub(crate) fn profile(self) -> &'static str {
        match self {
            Self::Full => "release",
            Self::Quick => "debug",
        }
    }
}

/// The arguments of the one release build of `bench` and `soak`, after `build --profile NAME`.
pub(crate) const RELEASE_ARGS: &[&str] = &[
    "-p",
    "mcp-bench",
    "-p",
    "everymcp-server",
    "-p",
    "everymcp-demo",
    "-p",
    "everymcp-cli",
    "--features",
    "mcp-bench/client,everymcp-server/demo,everymcp-demo/demo",
    "--bin",
    "mcp-load",
    "--bin",
    "mcp-floor",
    "--bin",
    "mcp-bench-server",
    "--bin",
    "mcp-bench-client",
    "--bin",
    "mcp-stdio-demo",
    "--bin",
    "mcp-session-scale",
    "--bin",
    "mcp-soak",
    "--bin",
    "mcp-demo",
    "--bin",
    "mcp",
];

/// Builds every binary `bench` and `soak` run with `profile`, in one cargo invocation; they are
/// then in the target directory's folder named [`Release::profile`].
pub(crate) fn release(profile: Release) -> Result<()> {
    if profile == Release::Quick {
        // The test build's packages, features and targets: fresh after `cargo xtask ci`.
        return crate::cargo(&DEBUG_ARGS[..DEBUG_ARGS.len() - 1], &[]);
    }
    let mut args = vec!["build", "--profile", profile.profile()];
    args.extend(RELEASE_ARGS);
    crate::cargo(&args, &[])
}

/// The arguments of the one debug build of `conformance` and `interop`.
const DEBUG_ARGS: &[&str] = &[
    "build",
    "--workspace",
    "--all-features",
    "--bins",
    "--tests",
    "--message-format=json-render-diagnostics",
];

/// The debug binaries built so far in this process, by name.
static DEBUG_BINARIES: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);

/// The debug binary `bin` of the workspace, built (once per process) with the test build's
/// packages, features and targets.
pub(crate) fn debug_binary(bin: &str) -> Result<PathBuf> {
    let mut built = DEBUG_BINARIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if built.is_none() {
        *built = Some(build_debug()?);
    }
    built
        .as_ref()
        .and_then(|binaries| binaries.get(bin))
        .cloned()
        .with_context(|| format!("cargo build did not report the binary {bin}"))
}

fn build_debug() -> Result<HashMap<String, PathBuf>> {
    eprintln!("xtask: cargo {}", DEBUG_ARGS.join(" "));
    let output = crate::cargo_command()
        .args(DEBUG_ARGS)
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo build")?;
    if !output.status.success() {
        bail!(
            "cargo build of the debug binaries failed ({})",
            output.status
        );
    }
    Ok(binaries(&String::from_utf8_lossy(&output.stdout)))
}

/// The executables of `bin` targets in cargo's JSON messages, by target name (not their
/// unit-test builds, which have the same target name).
fn binaries(messages: &str) -> HashMap<String, PathBuf> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| {
            m["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"))
                && m["profile"]["test"] == false
        })
        .filter_map(|m| {
            Some((
                m["target"]["name"].as_str()?.to_owned(),
                PathBuf::from(m["executable"].as_str()?),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bin_targets_built_as_binaries_are_kept() {
        let messages = [
            r#"{"reason":"compiler-artifact","target":{"kind":["bin"],"name":"mcp-demo"},"profile":{"test":true},"executable":"/t/debug/deps/mcp_demo-1"}"#,
            r#"{"reason":"compiler-artifact","target":{"kind":["bin"],"name":"mcp-demo"},"profile":{"test":false},"executable":"/t/debug/mcp-demo"}"#,
            r#"{"reason":"compiler-artifact","target":{"kind":["test"],"name":"it"},"profile":{"test":true},"executable":"/t/debug/deps/it-1"}"#,
            r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"mcp_wire"},"profile":{"test":false},"executable":null}"#,
            "not json",
        ]
        .join("\n");
        let found = binaries(&messages);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found["mcp-demo"], PathBuf::from("/t/debug/mcp-demo"));
    }
}
