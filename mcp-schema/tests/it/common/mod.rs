//! Shared test support: the vendored spec schemas and schema walking.

#![allow(dead_code, unreachable_pub)] // Each test binary uses a different part of this module.

use std::path::PathBuf;
use std::sync::OnceLock;

use mcp_schema::{SchemaProfile, Validator, ValidatorOptions};
use serde_json::{Value, json};

/// The folder of the vendored `schema.json` files: `MCP_SPEC_SCHEMAS`, or `../shared/spec-schemas`
/// next to the workspace. `None` (with a notice) when it is missing outside CI; with `CI=true`
/// a missing folder fails the test.
pub fn spec_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MCP_SPEC_SCHEMAS").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/spec-schemas"
            ))
        },
        PathBuf::from,
    );
    if dir.is_dir() {
        return Some(dir);
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        !in_ci,
        "CI=true but the spec schemas are missing at {}",
        dir.display()
    );
    eprintln!(
        "notice: spec schemas not found at {}; set MCP_SPEC_SCHEMAS to run these checks",
        dir.display()
    );
    None
}

/// A validator for one revision's `Tool` definition.
pub struct ToolSchema {
    pub revision: &'static str,
    pub profile: SchemaProfile,
    pub validator: Validator,
}

/// Validators for the `Tool` definition of every revision, compiled once per test binary.
pub fn tool_schemas() -> Option<&'static [ToolSchema]> {
    static SCHEMAS: OnceLock<Option<Vec<ToolSchema>>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            let dir = spec_dir()?;
            // The test's own table: mcp-schema does not know the revisions (mcp-adapters'
            // descriptors name each revision's profile).
            let revisions = [
                ("2024-11-05", SchemaProfile::V2024_11_05),
                ("2025-03-26", SchemaProfile::V2025_03_26),
                ("2025-06-18", SchemaProfile::V2025_06_18),
                ("2025-11-25", SchemaProfile::V2025_11_25),
                ("2026-07-28", SchemaProfile::V2026_07_28),
            ];
            let schemas = revisions
                .iter()
                .map(|(revision, profile)| {
                    let path = dir.join(revision).join("schema.json");
                    let text = std::fs::read_to_string(&path)
                        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
                    let mut document: Value = serde_json::from_str(&text).unwrap();
                    let defs = if document.get("$defs").is_some() {
                        "$defs"
                    } else {
                        "definitions"
                    };
                    assert!(
                        document[defs].get("Tool").is_some(),
                        "{revision} has no Tool"
                    );
                    document["$ref"] = json!(format!("#/{defs}/Tool"));
                    let validator = ValidatorOptions::new()
                        .max_issues(4)
                        .compile(&document)
                        .unwrap_or_else(|e| panic!("compiling {revision} Tool: {e}"));
                    ToolSchema {
                        revision,
                        profile: *profile,
                        validator,
                    }
                })
                .collect();
            Some(schemas)
        })
        .as_deref()
}

/// A `Tool` object with these schemas.
pub fn tool(input: &Value, output: Option<&Value>) -> Value {
    let mut tool = json!({"name": "t", "description": "a test tool", "inputSchema": input});
    if let Some(output) = output {
        tool["outputSchema"] = output.clone();
    }
    tool
}

/// Whether `$ref` or `x-mcp-header` appears anywhere a subschema can be.
pub fn holds_ref_or_header(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return false;
    };
    if map.contains_key("$ref") || map.contains_key("x-mcp-header") {
        return true;
    }
    map.iter().any(|(keyword, value)| match keyword.as_str() {
        "additionalProperties"
        | "items"
        | "contains"
        | "propertyNames"
        | "not"
        | "if"
        | "then"
        | "else"
        | "unevaluatedProperties"
        | "unevaluatedItems" => holds_ref_or_header(value),
        "allOf" | "anyOf" | "oneOf" | "prefixItems" => value
            .as_array()
            .is_some_and(|items| items.iter().any(holds_ref_or_header)),
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => value
            .as_object()
            .is_some_and(|m| m.values().any(holds_ref_or_header)),
        _ => false,
    })
}
