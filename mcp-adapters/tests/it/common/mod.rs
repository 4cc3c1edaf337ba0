//! Test support: the official schemas, compiled once per test binary.
//!
//! Schemas are read from `../shared/spec-schemas/<revision>/schema.json` relative to the
//! workspace root, or from `$MCP_SPEC_SCHEMAS`. With `CI=true` a missing folder fails the test;
//! otherwise the test prints a notice and skips schema validation.

#![allow(dead_code, unreachable_pub)] // Shared by several test binaries, each using a part.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use jsonschema::ValidatorMap;
use mcp_adapters::Revision;
use serde_json::Value;

/// The folder holding one sub-folder per revision.
pub fn schema_root() -> PathBuf {
    std::env::var_os("MCP_SPEC_SCHEMAS").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/spec-schemas"
            ))
        },
        PathBuf::from,
    )
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

struct Compiled {
    map: ValidatorMap,
    prefix: &'static str,
}

fn compiled(revision: Revision) -> Option<&'static Compiled> {
    static ALL: OnceLock<HashMap<Revision, Compiled>> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        let root = schema_root();
        let mut out = HashMap::new();
        for revision in Revision::ALL {
            let path = root.join(revision.as_str()).join("schema.json");
            let Ok(text) = std::fs::read_to_string(&path) else {
                assert!(
                    !in_ci(),
                    "CI=true and the schema {} is missing",
                    path.display()
                );
                eprintln!(
                    "notice: {} not found; schema validation skipped",
                    path.display()
                );
                continue;
            };
            let doc: Value = serde_json::from_str(&text).expect("schema.json is JSON");
            let prefix = if doc.get("$defs").is_some() {
                "#/$defs/"
            } else {
                "#/definitions/"
            };
            let map = jsonschema::validator_map_for(&doc).expect("schema.json compiles");
            out.insert(revision, Compiled { map, prefix });
        }
        out
    });
    all.get(&revision)
}

/// The schemas are available (or `CI` is not set and they are missing: then `false`).
pub fn schemas_available() -> bool {
    Revision::ALL.iter().all(|r| compiled(*r).is_some())
}

/// Asserts that `instance` is valid against the definition `name` of `revision`'s schema.
/// Does nothing (after a notice) when the schemas are missing outside CI.
#[track_caller]
pub fn assert_valid(revision: Revision, name: &str, instance: &Value) {
    let Some(compiled) = compiled(revision) else {
        return;
    };
    let pointer = format!("{}{name}", compiled.prefix);
    let validator = compiled
        .map
        .get(&pointer)
        .unwrap_or_else(|| panic!("{revision}: no definition {name}"));
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{revision}: not a valid {name}:\n{}\n{errors:#?}",
        serde_json::to_string_pretty(instance).unwrap_or_default()
    );
}

/// Asserts that `instance` is NOT valid against the definition (to show a check can fail).
#[track_caller]
pub fn assert_invalid(revision: Revision, name: &str, instance: &Value) {
    let Some(compiled) = compiled(revision) else {
        return;
    };
    let pointer = format!("{}{name}", compiled.prefix);
    let validator = compiled.map.get(&pointer).expect("definition exists");
    assert!(
        !validator.is_valid(instance),
        "{revision}: unexpectedly a valid {name}: {instance}"
    );
}
