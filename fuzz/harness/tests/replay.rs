//! Replays every committed fuzz input on stable: each file of `fuzz/corpus/<target>/` and of
//! `fuzz/regressions/<target>/` goes through the same check as the fuzz target `<target>`, so a
//! crash the fuzzer once found (kept as a reproducer under `regressions/`) is a failing test
//! until it is fixed, and stays a test after.

use std::fs;
use std::path::{Path, PathBuf};

/// The files of `fuzz/<kind>/<target>/`, by target; a folder that names no target is an error.
fn inputs(kind: &str) -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(kind);
    let Ok(folders) = fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for folder in folders {
        let folder = folder.unwrap().path();
        if !folder.is_dir() {
            continue;
        }
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            mcp_fuzz_harness::target(&name).is_some(),
            "{}: no fuzz target is called {name:?}",
            folder.display()
        );
        for file in fs::read_dir(&folder).unwrap() {
            let file = file.unwrap().path();
            if file.is_file() {
                out.push((name.clone(), file));
            }
        }
    }
    out.sort();
    out
}

fn replay(kind: &str) -> usize {
    let inputs = inputs(kind);
    for (target, file) in &inputs {
        let data = fs::read(file).unwrap();
        let check = mcp_fuzz_harness::target(target).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(
            outcome.is_ok(),
            "{}: the {target} check fails",
            file.display()
        );
    }
    inputs.len()
}

#[test]
fn every_corpus_file_passes_its_check() {
    let count = replay("corpus");
    // Every target has a seed corpus, so a moved folder does not silently replay nothing.
    for (target, _) in mcp_fuzz_harness::TARGETS {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../corpus")
            .join(target);
        assert!(folder.is_dir(), "no corpus for {target}");
    }
    assert!(count >= mcp_fuzz_harness::TARGETS.len());
}

#[test]
fn every_regression_passes_its_check() {
    replay("regressions");
}
