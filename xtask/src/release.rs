//! `cargo xtask release-check`: the release checklist, run by `.ci/run`.
//!
//! 1. Every published crate (a workspace member without `publish = false`) has the metadata
//!    crates.io and docs.rs show: `description`, `repository`, `readme` (an existing file),
//!    `keywords`, `categories`, `documentation`, and `[package.metadata.docs.rs]` with
//!    `all-features = true` and `rustdoc-args = ["--cfg", "docsrs"]`; its library turns on
//!    `doc_cfg` under `docsrs` (feature badges on feature-gated items); its package holds
//!    `LICENSE-MIT` and `LICENSE-APACHE` (checked on `cargo package --list`).
//! 2. Its `rust-version` (the MSRV) is the toolchain this check runs with, the one CI builds with.
//! 3. `cargo package` of every published crate together, in dependency order, each verified by
//!    building it from its tarball (a crate depending on an unpublished sibling resolves it from
//!    the other tarballs). The verification builds share one target folder of their own,
//!    `target/release-check` (not the debug build's), without debug info.
//! 4. `cargo deny check licenses bans sources` with `deny.toml` (offline: no advisory database):
//!    a dependency under a licence not allowed there, a second version of a crate, or a source
//!    other than crates.io fails. Then the proof that the rule bites: a throwaway workspace
//!    with a GPL-3.0-only dependency must fail it and the same under MIT pass. Without
//!    cargo-deny this step fails under `CI=true`, and is skipped with a warning otherwise.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The licence files every published crate carries.
pub(crate) const LICENCE_FILES: &[&str] = &["LICENSE-MIT", "LICENSE-APACHE"];

/// The attribute that gives feature-gated items their badge on docs.rs.
const DOC_CFG: &str = "#![cfg_attr(docsrs, feature(doc_cfg))]";

pub(crate) fn run(root: &Path) -> Result<()> {
    let metadata = metadata(root)?;
    let published = published(&metadata);
    if published.is_empty() {
        bail!("no published crate in the workspace");
    }
    let names: Vec<&str> = published
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    println!("release-check: published crates: {}", names.join(", "));

    let mut problems = Vec::new();
    let rustc = rustc_version()?;
    for package in &published {
        let manifest = package["manifest_path"].as_str().unwrap_or_default();
        let dir = Path::new(manifest).parent().unwrap_or(root);
        problems.extend(check_package(package, dir));
        problems.extend(check_msrv(package, &rustc));
        let files = package_files(root, package["name"].as_str().unwrap_or_default())?;
        problems.extend(check_packaged_files(
            package["name"].as_str().unwrap_or("?"),
            &files,
        ));
    }
    if !problems.is_empty() {
        for problem in &problems {
            eprintln!("release-check: {problem}");
        }
        bail!("{} release-check problem(s)", problems.len());
    }
    println!("release-check: metadata, licence files and MSRV ({rustc}) of every published crate");

    // Every published crate at once, so that cargo orders them by dependency and verifies each
    // against the tarballs of its siblings. The verification builds go to their own folder,
    // `target/release-check`, not to `target/debug` (cargo's default), so that `.ci/run` can run
    // this task beside the suites without either waiting on the other's cargo lock; they share
    // it, so a dependency with the same features is compiled once for all of them. No debug
    // info: the build proves that the tarball compiles.
    let target = crate::bench::target_dir(root)?.join("release-check");
    let target = target.to_string_lossy();
    let mut args = vec!["package", "--allow-dirty", "--target-dir", &*target];
    for name in &names {
        args.extend(["-p", name]);
    }
    crate::cargo(
        &args,
        &[
            ("CARGO_PROFILE_DEV_DEBUG", "false"),
            ("CARGO_INCREMENTAL", "0"),
        ],
    )?;

    deny(root)?;
    // The proof that the licence rule bites, not only that today's tree passes it.
    if deny_installed() {
        deny_refuses_a_foreign_licence(root)?;
    }
    Ok(())
}

fn metadata(root: &Path) -> Result<Value> {
    let output = crate::cargo_command()
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(root)
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    serde_json::from_slice(&output.stdout).context("parsing cargo metadata")
}

/// The workspace members that may be published (`publish` absent, not `false`).
fn published(metadata: &Value) -> Vec<Value> {
    metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| !p["publish"].as_array().is_some_and(Vec::is_empty))
        .cloned()
        .collect()
}

/// The problems of one published package's manifest and folder (`dir`), one line each.
pub(crate) fn check_package(package: &Value, dir: &Path) -> Vec<String> {
    let name = package["name"].as_str().unwrap_or("?");
    let mut problems = Vec::new();
    for field in ["description", "repository", "documentation", "readme"] {
        if package[field].as_str().is_none_or(str::is_empty) {
            problems.push(format!("{name}: no `{field}` in Cargo.toml"));
        }
    }
    if let Some(readme) = package["readme"].as_str()
        && !dir.join(readme).is_file()
    {
        problems.push(format!("{name}: its readme {readme} does not exist"));
    }
    for field in ["keywords", "categories"] {
        if package[field].as_array().is_none_or(Vec::is_empty) {
            problems.push(format!("{name}: no `{field}` in Cargo.toml"));
        }
    }
    let docs_rs = &package["metadata"]["docs"]["rs"];
    if docs_rs["all-features"] != Value::Bool(true) {
        problems.push(format!(
            "{name}: no `all-features = true` in [package.metadata.docs.rs]"
        ));
    }
    let cfg_docsrs = docs_rs["rustdoc-args"].as_array().is_some_and(|args| {
        args.windows(2)
            .any(|pair| pair[0] == "--cfg" && pair[1] == "docsrs")
    });
    if !cfg_docsrs {
        problems.push(format!(
            "{name}: no `rustdoc-args = [\"--cfg\", \"docsrs\"]` in [package.metadata.docs.rs]"
        ));
    }
    for target in package["targets"].as_array().into_iter().flatten() {
        let is_lib = target["kind"]
            .as_array()
            .is_some_and(|kinds| kinds.iter().any(|k| k == "lib"));
        if let (true, Some(path)) = (is_lib, target["src_path"].as_str()) {
            let source = std::fs::read_to_string(path).unwrap_or_default();
            if !source.contains(DOC_CFG) {
                problems.push(format!(
                    "{name}: its library does not start with `{DOC_CFG}` (no feature badges on docs.rs)"
                ));
            }
        }
    }
    for file in LICENCE_FILES {
        if !dir.join(file).is_file() {
            problems.push(format!("{name}: no {file} beside its Cargo.toml"));
        }
    }
    problems
}

/// The problems of the file list of one package's tarball (`cargo package --list`).
pub(crate) fn check_packaged_files(name: &str, files: &[String]) -> Vec<String> {
    LICENCE_FILES
        .iter()
        .filter(|file| !files.iter().any(|f| f == *file))
        .map(|file| format!("{name}: its package does not include {file}"))
        .collect()
}

/// The problem, if any, with a package's `rust-version` against the toolchain's version.
pub(crate) fn check_msrv(package: &Value, rustc: &str) -> Option<String> {
    let name = package["name"].as_str().unwrap_or("?");
    let Some(msrv) = package["rust_version"].as_str() else {
        return Some(format!("{name}: no `rust-version` in Cargo.toml"));
    };
    let matches = rustc == msrv || rustc.strip_suffix(".0") == Some(msrv);
    (!matches).then(|| {
        format!(
            "{name}: rust-version {msrv} is not the toolchain CI builds with ({rustc}); \
             raise rust-version with the toolchain"
        )
    })
}

/// `rustc --version`'s version number (`1.95.0`).
fn rustc_version() -> Result<String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let output = Command::new(rustc)
        .arg("--version")
        .output()
        .context("running rustc --version")?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_whitespace()
        .nth(1)
        .map(str::to_owned)
        .with_context(|| format!("unexpected rustc --version: {text}"))
}

/// The files `cargo package` would put in `package`'s tarball.
fn package_files(root: &Path, package: &str) -> Result<Vec<String>> {
    let output = crate::cargo_command()
        .args(["package", "--list", "--allow-dirty", "-p", package])
        .current_dir(root)
        .output()
        .context("running cargo package --list")?;
    if !output.status.success() {
        bail!(
            "cargo package --list -p {package} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// `cargo deny check licenses bans sources` with the workspace's `deny.toml`.
fn deny(root: &Path) -> Result<()> {
    if !deny_installed() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            bail!("cargo-deny is not installed (`cargo install cargo-deny --locked`)");
        }
        eprintln!(
            "release-check: cargo-deny is not installed; licences, duplicate versions and sources were NOT checked (`cargo install cargo-deny --locked`)"
        );
        return Ok(());
    }
    // cargo-deny runs offline (no advisory database is reachable here), and its `cargo metadata`
    // reads the manifest of every package in the lock file, the other platforms' ones too
    // (anstyle-wincon, windows-sys, ...), which a Linux build never downloads: fetch them first
    // (from the registry, which is reachable).
    crate::cargo(&["fetch", "--locked"], &[]).context("cargo fetch before cargo deny")?;
    let config = root.join("deny.toml");
    let status = deny_command(&root.join("Cargo.toml"), &config)
        .status()
        .context("running cargo deny")?;
    if !status.success() {
        bail!("cargo deny check licenses bans sources failed ({status})");
    }
    Ok(())
}

/// The demonstration that `deny.toml` does its job: a throwaway workspace whose path dependency
/// is GPL-3.0-only fails `cargo deny` (naming the licence), and the same workspace under MIT
/// passes, checked by the real cargo-deny, offline.
fn deny_refuses_a_foreign_licence(root: &Path) -> Result<()> {
    let config = root.join("deny.toml");
    let check = |licence: &str| -> Result<(bool, String)> {
        let dir = std::env::temp_dir().join(format!(
            "xtask-deny-{}-{}",
            licence.replace(['.', ' '], "_"),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let app = "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2024\"\nlicense = \"MIT\"\n\n[dependencies]\ndep = { path = \"../dep\", version = \"0.1.0\" }\n";
        let dep = format!(
            "[package]\nname = \"dep\"\nversion = \"0.1.0\"\nedition = \"2024\"\nlicense = \"{licence}\"\n"
        );
        for (name, body) in [("app", app), ("dep", dep.as_str())] {
            let src = dir.join(name).join("src");
            std::fs::create_dir_all(&src).with_context(|| format!("creating {}", src.display()))?;
            std::fs::write(dir.join(name).join("Cargo.toml"), body)?;
            std::fs::write(src.join("lib.rs"), "")?;
        }
        let output = deny_command(&dir.join("app/Cargo.toml"), &config)
            .output()
            .context("running cargo deny")?;
        let _ = std::fs::remove_dir_all(&dir);
        Ok((
            output.status.success(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ))
    };
    let (ok, log) = check("GPL-3.0-only")?;
    if ok || !log.contains("GPL-3.0") {
        bail!("deny.toml let a GPL-3.0-only dependency pass:\n{log}");
    }
    let (ok, log) = check("MIT")?;
    if !ok {
        bail!("deny.toml refused an MIT dependency:\n{log}");
    }
    println!("release-check: deny.toml refuses a GPL-3.0-only dependency and accepts an MIT one");
    Ok(())
}

fn deny_installed() -> bool {
    crate::cargo_command()
        .args(["deny", "--version"])
        .output()
        .is_ok_and(|output| output.status.success())
}

/// The cargo-deny command checking the workspace of `manifest` against `config`, offline.
fn deny_command(manifest: &Path, config: &Path) -> Command {
    let mut command = crate::cargo_command();
    command
        .args(["deny", "--offline", "--manifest-path"])
        .arg(manifest)
        .arg("--config")
        .arg(config)
        .args(["check", "licenses", "bans", "sources"]);
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(dir: &Path) -> Value {
        serde_json::json!({
            "name": "everymcp-demo",
            "description": "A crate",
            "repository": "https://example.com/repo",
            "documentation": "https://docs.rs/everymcp-demo",
            "readme": "README.md",
            "keywords": ["mcp"],
            "categories": ["network-programming"],
            "rust_version": "1.95",
            "metadata": { "docs": { "rs": { "all-features": true, "rustdoc-args": ["--cfg", "docsrs"] } } },
            "targets": [{ "kind": ["lib"], "src_path": dir.join("lib.rs") }],
        })
    }

    /// A package folder with a readme, a library with the doc_cfg attribute and both licences.
    fn folder(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-release-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("README.md"), "# demo\n").unwrap();
        std::fs::write(dir.join("lib.rs"), format!("//! Demo.\n{DOC_CFG}\n")).unwrap();
        for file in LICENCE_FILES {
            std::fs::write(dir.join(file), "licence text\n").unwrap();
        }
        dir
    }

    #[test]
    fn a_complete_package_passes() {
        let dir = folder("complete");
        assert_eq!(check_package(&complete(&dir), &dir), Vec::<String>::new());
    }

    #[test]
    fn a_crate_that_loses_a_licence_file_fails() {
        let dir = folder("licence");
        std::fs::remove_file(dir.join("LICENSE-APACHE")).unwrap();
        let problems = check_package(&complete(&dir), &dir);
        assert_eq!(
            problems,
            ["everymcp-demo: no LICENSE-APACHE beside its Cargo.toml"]
        );
        let packaged = check_packaged_files(
            "everymcp-demo",
            &["Cargo.toml".to_owned(), "LICENSE-MIT".to_owned()],
        );
        assert_eq!(
            packaged,
            ["everymcp-demo: its package does not include LICENSE-APACHE"]
        );
    }

    #[test]
    fn missing_metadata_and_docs_rs_settings_are_named() {
        let dir = folder("metadata");
        let mut package = complete(&dir);
        package["keywords"] = serde_json::json!([]);
        package["documentation"] = Value::Null;
        package["metadata"] = serde_json::json!({ "docs": { "rs": { "all-features": true } } });
        std::fs::write(dir.join("lib.rs"), "//! Demo.\n").unwrap();
        let problems = check_package(&package, &dir);
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("`documentation`")));
        assert!(problems.iter().any(|p| p.contains("`keywords`")));
        assert!(problems.iter().any(|p| p.contains("docsrs")));
        assert!(problems.iter().any(|p| p.contains("doc_cfg")));
    }

    #[test]
    fn the_msrv_must_be_the_toolchain_in_use() {
        let dir = folder("msrv");
        let package = complete(&dir);
        assert_eq!(check_msrv(&package, "1.95.0"), None);
        assert_eq!(check_msrv(&package, "1.95"), None);
        let problem = check_msrv(&package, "1.96.0").expect("a newer toolchain is a problem");
        assert!(problem.contains("rust-version 1.95"), "{problem}");
    }

    /// `deny.toml` refuses a GPL-3.0-only dependency and accepts an MIT one, where cargo-deny
    /// is installed; `cargo xtask release-check` (which CI runs after installing cargo-deny,
    /// and where its absence under `CI=true` is a failure) runs the same demonstration.
    #[test]
    fn deny_toml_refuses_a_dependency_whose_licence_is_not_allowed() {
        if !deny_installed() {
            eprintln!(
                "cargo-deny is not installed here; `cargo xtask release-check` runs this demonstration"
            );
            return;
        }
        deny_refuses_a_foreign_licence(&crate::workspace_root()).unwrap();
    }
}
