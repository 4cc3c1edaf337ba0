//! `cargo xtask fuzz`: builds the cargo-fuzz targets of `fuzz/` with the nightly toolchain and
//! runs each for a fixed time (issue 27).
//!
//! - `cargo xtask fuzz --build-only`: builds every target, runs none.
//! - `cargo xtask fuzz --replay`: builds, then runs each fuzz binary once over its committed
//!   corpus and regressions (`-runs=0`), no fuzzing.
//!
//! These two are what CI runs, and build the CI way ([`CI_BUILD`]): unoptimized and without
//! AddressSanitizer, but with everything that makes a cargo-fuzz target (nightly, `cfg(fuzzing)`,
//! libFuzzer linked in, SanitizerCoverage instrumentation). That proves every target compiles and
//! links as a fuzz target and that each binary accepts every committed input, for less than the
//! optimized, sanitized build costs (no optimizer, no sanitizer runtime; 269 CPU-seconds for the
//! six targets from scratch when measured in issue 45). AddressSanitizer finds nothing in our
//! code, which forbids `unsafe`; the decoders' own
//! checks (panics, the harness's assertions) are what the replay exercises, and the stable tests
//! of `fuzz/harness` replay the same files on every `cargo xtask ci`.
//! - `cargo xtask fuzz --seconds N [--target NAME]`: runs every target (or one) for `N` seconds
//!   each, one after another, under `nice -n 19`. New inputs go to `fuzz/target/work/<target>`
//!   (the committed seeds in `fuzz/corpus/<target>` are read, never written), crashes to
//!   `fuzz/target/artifacts/<target>`. A summary (target, seconds, executions, crashes) is
//!   printed and written to `fuzz/target/summary.md`; any crash makes the task fail.
//!
//! A crash found becomes a regression: copy the reproducer to `fuzz/regressions/<target>/`,
//! where the stable test `fuzz/harness/tests/replay.rs` runs it through the same check.
//!
//! Needs the nightly toolchain and `cargo-fuzz` (`cargo install cargo-fuzz --locked`).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// The `cargo fuzz build`/`run` options of CI's build and replay (`--build-only`, `--replay`):
/// unoptimized, no sanitizer (see the module's documentation).
const CI_BUILD: [&str; 3] = ["--dev", "--sanitizer", "none"];

/// The options of a fuzzing run (`--seconds`): optimized, with AddressSanitizer (cargo-fuzz's
/// default sanitizer).
const FUZZ_BUILD: [&str; 1] = ["-O"];

/// The fuzz targets, as named in `fuzz/Cargo.toml` (and in the harness's `TARGETS`).
const TARGETS: [&str; 7] = [
    "jsonrpc", "sse", "header", "adapters", "schema", "client", "trace",
];

/// One target's run.
struct Run {
    target: &'static str,
    seconds: u64,
    executions: u64,
    crashes: usize,
}

/// Entry point of `cargo xtask fuzz`.
pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut seconds = 60_u64;
    let mut build_only = false;
    let mut replay = false;
    let mut only: Option<String> = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--build-only" => build_only = true,
            "--replay" => replay = true,
            "--seconds" => {
                let value = args.next().context("--seconds needs a number")?;
                seconds = value.parse().context("--seconds needs a number")?;
            }
            "--target" => only = Some(args.next().context("--target needs a name")?.clone()),
            other => bail!(
                "unknown argument `{other}`; usage: cargo xtask fuzz [--build-only | --replay] [--seconds N] [--target NAME]"
            ),
        }
    }
    if let Some(name) = &only
        && !TARGETS.contains(&name.as_str())
    {
        bail!("no fuzz target `{name}` (targets: {})", TARGETS.join(", "));
    }
    let fuzz = root.join("fuzz");
    let options: &[&str] = if build_only || replay {
        &CI_BUILD
    } else {
        &FUZZ_BUILD
    };
    let mut build = vec!["build"];
    build.extend(options);
    fuzz_cargo(&fuzz, &build)
        .context("building the fuzz targets (needs the nightly toolchain and cargo-fuzz)")?;
    if build_only {
        println!("xtask fuzz: built {} targets", TARGETS.len());
        return Ok(());
    }
    if replay {
        for target in TARGETS {
            let mut dirs = vec![format!("corpus/{target}")];
            if fuzz.join("regressions").join(target).is_dir() {
                dirs.push(format!("regressions/{target}"));
            }
            let mut args = vec!["run"];
            args.extend(CI_BUILD);
            args.push(target);
            args.extend(dirs.iter().map(String::as_str));
            args.extend(["--", "-runs=0"]);
            fuzz_cargo(&fuzz, &args).with_context(|| format!("replaying {target}"))?;
        }
        println!(
            "xtask fuzz: replayed the corpora of {} targets",
            TARGETS.len()
        );
        return Ok(());
    }
    let mut runs = Vec::new();
    for target in TARGETS
        .into_iter()
        .filter(|t| only.as_deref().is_none_or(|o| o == *t))
    {
        runs.push(run_one(&fuzz, target, seconds)?);
    }
    let mut summary =
        String::from("| target | seconds | executions | crashes |\n| --- | ---: | ---: | ---: |\n");
    for run in &runs {
        let _ = writeln!(
            summary,
            "| `{}` | {} | {} | {} |",
            run.target, run.seconds, run.executions, run.crashes
        );
    }
    print!("{summary}");
    std::fs::write(fuzz.join("target").join("summary.md"), &summary)
        .context("writing fuzz/target/summary.md")?;
    let crashed: Vec<_> = runs
        .iter()
        .filter(|r| r.crashes > 0)
        .map(|r| r.target)
        .collect();
    if !crashed.is_empty() {
        bail!(
            "crashes in {} (reproducers in fuzz/target/artifacts/)",
            crashed.join(", ")
        );
    }
    Ok(())
}

/// `cargo +nightly fuzz <args>` in `fuzz/`, niced.
fn fuzz_command(fuzz: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("nice");
    command
        .args(["-n", "19", "cargo", "+nightly", "fuzz"])
        .args(args)
        .current_dir(fuzz)
        // The toolchain xtask itself runs on must not override `+nightly`.
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("CARGO");
    crate::without_crate_env(&mut command);
    command
}

fn fuzz_cargo(fuzz: &Path, args: &[&str]) -> Result<()> {
    let status = fuzz_command(fuzz, args)
        .status()
        .context("running cargo +nightly fuzz")?;
    if !status.success() {
        bail!("cargo +nightly fuzz {} failed: {status}", args.join(" "));
    }
    Ok(())
}

/// Runs `target` for `seconds` and reads libFuzzer's final statistics.
fn run_one(fuzz: &Path, target: &'static str, seconds: u64) -> Result<Run> {
    let work = fuzz.join("target").join("work").join(target);
    let artifacts = fuzz.join("target").join("artifacts").join(target);
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(&artifacts)?;
    let seeds = fuzz.join("corpus").join(target);
    let max_time = format!("-max_total_time={seconds}");
    let prefix = format!("-artifact_prefix={}/", artifacts.display());
    println!("xtask fuzz: {target} for {seconds} s");
    let started = Instant::now();
    let output = fuzz_command(
        fuzz,
        &[
            "run",
            FUZZ_BUILD[0],
            target,
            &work.display().to_string(),
            &seeds.display().to_string(),
            "--",
            &max_time,
            "-print_final_stats=1",
            &prefix,
        ],
    )
    .output()
    .with_context(|| format!("running the fuzz target {target}"))?;
    let log = String::from_utf8_lossy(&output.stderr);
    std::fs::write(fuzz.join("target").join(format!("{target}.log")), &*log)?;
    let executions = log
        .lines()
        .find_map(|line| line.strip_prefix("stat::number_of_executed_units:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    let crashes = std::fs::read_dir(&artifacts)?
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            ["crash-", "oom-", "timeout-", "leak-"]
                .iter()
                .any(|kind| name.starts_with(kind))
        })
        .count();
    Ok(Run {
        target,
        seconds: started.elapsed().as_secs(),
        executions,
        crashes,
    })
}
