//! Every message the CLI sent, checked against the revision's official `schema.json`
//! (`MCP_SPEC_SCHEMAS`, else `../shared/spec-schemas` beside the repository; with `CI=true` a
//! missing folder fails the test).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

/// The schemas folder, or `None` (with a notice) outside CI when it is missing.
pub fn dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MCP_SPEC_SCHEMAS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/spec-schemas"));
    if dir.join("2026-07-28/schema.json").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the official schemas are missing at {}",
        dir.display()
    );
    eprintln!(
        "notice: {} not found; schema validation skipped",
        dir.display()
    );
    None
}

type Compiled = HashMap<(String, String), jsonschema::Validator>;

fn validator_cache() -> &'static Mutex<Compiled> {
    static CACHE: OnceLock<Mutex<Compiled>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Asserts `instance` is a valid `definition` of `revision`.
fn check(dir: &Path, revision: &str, definition: &str, instance: &Value) {
    let mut cache = validator_cache().lock().unwrap_or_else(|e| e.into_inner());
    let key = (revision.to_owned(), definition.to_owned());
    if !cache.contains_key(&key) {
        let text = std::fs::read_to_string(dir.join(revision).join("schema.json"))
            .unwrap_or_else(|e| panic!("schema of {revision}: {e}"));
        let mut document: Value = serde_json::from_str(&text).expect("schema is JSON");
        let section = if document.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        assert!(
            document[section].get(definition).is_some(),
            "{revision} has no {definition}"
        );
        document["$ref"] = json!(format!("#/{section}/{definition}"));
        let validator = jsonschema::validator_for(&document)
            .unwrap_or_else(|e| panic!("{revision} {definition}: {e}"));
        cache.insert(key.clone(), validator);
    }
    let errors: Vec<String> = cache[&key]
        .iter_errors(instance)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "{revision} {definition} rejects {instance}: {errors:?}"
    );
}

/// Checks every line of `log` (what the client wrote to the server's stdin) against
/// `revision`'s schema, and returns the messages.
pub fn check_log(log: &Path, revision: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    let messages: Vec<Value> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect();
    assert!(!messages.is_empty(), "the client sent nothing");
    let Some(dir) = dir() else {
        return messages;
    };
    let errors = if revision < "2025-11-25" {
        "JSONRPCError"
    } else {
        "JSONRPCErrorResponse"
    };
    for message in &messages {
        match (message.get("method"), message.get("id")) {
            (Some(_), Some(_)) => {
                check(&dir, revision, "JSONRPCRequest", message);
                check(&dir, revision, "ClientRequest", message);
            }
            (Some(_), None) => {
                check(&dir, revision, "JSONRPCNotification", message);
                check(&dir, revision, "ClientNotification", message);
            }
            (None, _) => match message.get("result") {
                Some(result) => {
                    check(&dir, revision, "JSONRPCResponse", message);
                    check(&dir, revision, "ClientResult", result);
                }
                None => check(&dir, revision, errors, message),
            },
        }
    }
    messages
}
