//! `cargo xtask schemas`: the official MCP schemas the tests validate every message against.
//!
//! The tests read `<revision>/schema.json` from `MCP_SPEC_SCHEMAS`, else from
//! `../shared/spec-schemas` beside the workspace. This task puts the pinned files there and
//! checks them against the SHA-256 sums kept in `xtask/spec-schemas.sha256`:
//!
//! - `cargo xtask schemas` downloads each file (with `curl`) from the specification
//!   repository at the pinned commit;
//! - `cargo xtask schemas --from DIR` copies them from a folder of the same layout instead
//!   (an offline machine, a mirror);
//! - `cargo xtask schemas --check` only checks what is in place.
//!
//! The 2026-07-28 example messages (`2026-07-28/examples/`, 129 files that `mcp-wire`'s
//! example test reads) are not fetched: copy that folder from the same commit by hand.
//! A file whose sum differs is never written; an existing one that differs is reported.
//! `cargo xtask ci` runs the check first: outside CI a missing folder is a loud warning at the
//! start and the end of the run (the tests then skip schema validation); with `CI=true` it is a
//! failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// The pinned sums, with the commit in a comment line.
const SUMS: &str = include_str!("../spec-schemas.sha256");
/// Where the files come from.
const REPOSITORY: &str =
    "https://raw.githubusercontent.com/modelcontextprotocol/modelcontextprotocol";

/// One pinned file: its path under the folder and its SHA-256 (lowercase hex).
struct Pinned {
    path: &'static str,
    sha256: &'static str,
}

fn pinned() -> (String, Vec<Pinned>) {
    let mut commit = String::new();
    let mut files = Vec::new();
    for line in SUMS.lines() {
        if let Some(rest) = line.strip_prefix("# commit ") {
            rest.trim().clone_into(&mut commit);
        } else if !line.starts_with('#')
            && let Some((sha256, path)) = line.split_once("  ")
        {
            files.push(Pinned {
                path: path.trim(),
                sha256: sha256.trim(),
            });
        }
    }
    (commit, files)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// The folder the tests read.
pub(crate) fn folder(root: &Path) -> PathBuf {
    std::env::var_os("MCP_SPEC_SCHEMAS")
        .map_or_else(|| root.join("../shared/spec-schemas"), PathBuf::from)
}

/// What a check of the folder found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Every pinned file is there with its sum.
    Complete,
    /// These files are missing.
    Missing(Vec<String>),
}

/// Checks `dir` against the pinned sums: an error names a file whose content differs.
pub(crate) fn check(dir: &Path) -> Result<State> {
    let (_, files) = pinned();
    let mut missing = Vec::new();
    for file in &files {
        let path = dir.join(file.path);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let found = sha256_hex(&bytes);
                if found != file.sha256 {
                    bail!(
                        "{} differs from the pinned schema (SHA-256 {found}, expected {}); run `cargo xtask schemas`",
                        path.display(),
                        file.sha256
                    );
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                missing.push(file.path.to_owned());
            }
            Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
        }
    }
    Ok(if missing.is_empty() {
        State::Complete
    } else {
        State::Missing(missing)
    })
}

/// Puts every pinned file into `to`, from `from` or downloaded; each is checked before it is
/// written.
pub(crate) fn fetch(from: Option<&Path>, to: &Path) -> Result<()> {
    let (commit, files) = pinned();
    for file in &files {
        let target = to.join(file.path);
        if std::fs::read(&target).is_ok_and(|bytes| sha256_hex(&bytes) == file.sha256) {
            println!("xtask schemas: {} already in place", file.path);
            continue;
        }
        let bytes = match from {
            Some(dir) => {
                let source = dir.join(file.path);
                std::fs::read(&source).with_context(|| format!("reading {}", source.display()))?
            }
            None => download(&format!("{REPOSITORY}/{commit}/schema/{}", file.path))?,
        };
        let found = sha256_hex(&bytes);
        if found != file.sha256 {
            bail!(
                "{}: SHA-256 {found} is not the pinned {}; nothing written",
                file.path,
                file.sha256
            );
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&target, &bytes).with_context(|| format!("writing {}", target.display()))?;
        println!(
            "xtask schemas: {} written ({} bytes)",
            target.display(),
            bytes.len()
        );
    }
    Ok(())
}

fn download(url: &str) -> Result<Vec<u8>> {
    let output = Command::new("curl")
        .args(["-fsSL", "--max-time", "60", url])
        .output()
        .context("running curl (needed to download the schemas; or use --from DIR)")?;
    if !output.status.success() {
        bail!(
            "downloading {url} failed ({}): {}; use --from DIR with a copy",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(output.stdout)
}

/// `cargo xtask schemas [--from DIR] [--to DIR] [--check]`.
pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut from = None;
    let mut to = folder(root);
    let mut only_check = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--from" => from = Some(PathBuf::from(args.next().context("--from needs a folder")?)),
            "--to" => to = PathBuf::from(args.next().context("--to needs a folder")?),
            "--check" => only_check = true,
            other => bail!("unknown argument {other:?}: schemas [--from DIR] [--to DIR] [--check]"),
        }
    }
    if !only_check {
        fetch(from.as_deref(), &to)?;
    }
    match check(&to)? {
        State::Complete => {
            println!("xtask schemas: every pinned schema is in {}", to.display());
            Ok(())
        }
        State::Missing(files) => bail!(
            "missing in {}: {} (run `cargo xtask schemas`)",
            to.display(),
            files.join(", ")
        ),
    }
}

/// The banner `cargo xtask ci` prints when the schemas are missing outside CI.
pub(crate) fn missing_banner(dir: &Path, files: &[String]) -> String {
    format!(
        "\n*** WARNING: the official MCP schemas are missing in {} ({}).\n\
         *** Tests run, but every check of a message against its revision's schema is SKIPPED.\n\
         *** Get them with `cargo xtask schemas` (or `--from DIR`), or set MCP_SPEC_SCHEMAS.\n",
        dir.display(),
        files.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-schemas-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn the_sums_file_pins_every_revision() {
        let (commit, files) = pinned();
        assert_eq!(commit.len(), 40, "a full commit id");
        let paths: Vec<&str> = files.iter().map(|f| f.path).collect();
        assert_eq!(
            paths,
            [
                "2024-11-05/schema.json",
                "2025-03-26/schema.json",
                "2025-06-18/schema.json",
                "2025-11-25/schema.json",
                "2026-07-28/schema.json"
            ]
        );
        assert!(files.iter().all(|f| f.sha256.len() == 64));
    }

    /// A copy with a changed byte is refused and nothing is written; an empty folder is
    /// reported missing, file by file.
    #[test]
    fn only_files_with_the_pinned_sums_are_written() {
        let source = scratch("source");
        let (_, files) = pinned();
        for file in &files {
            let path = source.join(file.path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, b"{\"not\": \"the schema\"}").unwrap();
        }
        let to = scratch("to");
        let err = fetch(Some(&source), &to).unwrap_err().to_string();
        assert!(err.contains("is not the pinned"), "{err}");
        assert!(!to.join(files[0].path).exists());
        assert_eq!(
            check(&to).unwrap(),
            State::Missing(files.iter().map(|f| f.path.to_owned()).collect())
        );
        let _ = std::fs::remove_dir_all(&source);
    }

    /// The schemas the tests use (when this machine has them) match the pinned sums and are
    /// copied by `--from`.
    #[test]
    fn the_shared_schemas_match_the_pins() {
        let shared = folder(&crate::workspace_root());
        if check(&shared).ok() != Some(State::Complete) {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "the official schemas are missing or differ at {}",
                shared.display()
            );
            eprintln!("notice: no schemas at {}; skipped", shared.display());
            return;
        }
        let to = scratch("copy");
        fetch(Some(&shared), &to).unwrap();
        assert_eq!(check(&to).unwrap(), State::Complete);
        let _ = std::fs::remove_dir_all(&to);
    }
}
