//! Validation of every message the client sent against the revision's official `schema.json`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::Recorded;

/// The folder of official schemas: `MCP_SPEC_SCHEMAS`, else `../shared/spec-schemas` beside the
/// workspace. `None` (with a notice) when it is missing outside CI; a failure in CI.
pub fn schemas_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MCP_SPEC_SCHEMAS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/spec-schemas"
            ))
        });
    if dir.join("2026-07-28/schema.json").is_file() {
        return Some(dir);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("the official schemas are missing at {}", dir.display());
    }
    eprintln!(
        "notice: {} not found; schema validation skipped",
        dir.display()
    );
    None
}

#[derive(Default)]
pub struct Validators {
    docs: HashMap<String, Value>,
    compiled: HashMap<(String, &'static str), jsonschema::Validator>,
}

impl Validators {
    fn validator(
        &mut self,
        dir: &Path,
        revision: &str,
        def: &'static str,
    ) -> &jsonschema::Validator {
        let key = (revision.to_owned(), def);
        if !self.compiled.contains_key(&key) {
            let doc = self.docs.entry(revision.to_owned()).or_insert_with(|| {
                let text = std::fs::read_to_string(dir.join(revision).join("schema.json"))
                    .unwrap_or_else(|e| panic!("schema for {revision}: {e}"));
                serde_json::from_str(&text).unwrap()
            });
            let mut schema = doc.clone();
            let pointer = if schema.get("$defs").is_some() {
                "#/$defs/"
            } else {
                "#/definitions/"
            };
            schema["$ref"] = Value::String(format!("{pointer}{def}"));
            let validator = jsonschema::validator_for(&schema)
                .unwrap_or_else(|e| panic!("{revision} {def}: {e}"));
            self.compiled.insert(key.clone(), validator);
        }
        &self.compiled[&key]
    }

    fn check(&mut self, dir: &Path, revision: &str, def: &'static str, instance: &Value) {
        let validator = self.validator(dir, revision, def);
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "{revision} {def} rejects {instance}: {errors:?}"
        );
    }
}

/// Asserts that every recorded message is valid for the revision it was sent under.
pub fn validate(recorded: &[Recorded]) {
    assert!(!recorded.is_empty(), "nothing was recorded");
    let Some(dir) = schemas_dir() else { return };
    let mut validators = Validators::default();
    for r in recorded {
        let body = &r.body;
        let revision = r.revision.as_str();
        assert!(
            super::ALL.contains(&revision),
            "unknown revision {revision} for {body}"
        );
        match (body.get("method"), body.get("id")) {
            (Some(_), Some(_)) => {
                validators.check(&dir, revision, "JSONRPCRequest", body);
                validators.check(&dir, revision, "ClientRequest", body);
            }
            (Some(_), None) => {
                validators.check(&dir, revision, "JSONRPCNotification", body);
                validators.check(&dir, revision, "ClientNotification", body);
            }
            _ => {
                validators.check(&dir, revision, "JSONRPCMessage", body);
                if let Some(result) = body.get("result") {
                    validators.check(&dir, revision, "ClientResult", result);
                }
            }
        }
    }
}
