//! Every projected schema is a valid `Tool.inputSchema`/`outputSchema` under the revision's own
//! official `schema.json` (draft-07 up to 2025-06-18, 2020-12 after).

use crate::common;

use mcp_schema::{Dialect, OutputProjection, SchemaProfile, project_input, project_output};
use serde_json::{Value, json};

/// Declared tools as a schemars-style derive would write them, plus hand-written ones using
/// each projection rule.
fn declared_tools() -> Vec<(&'static str, Value, Option<Value>)> {
    vec![
        (
            "schemars-struct-with-options-and-enum",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "SearchArgs",
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for"},
                    "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
                    "mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]},
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "filters": {"type": "array", "items": {"$ref": "#/$defs/Filter"}, "default": []}
                },
                "required": ["query", "region"],
                "$defs": {
                    "Mode": {"oneOf": [
                        {"const": "fast", "type": "string", "description": "Quick"},
                        {"const": "exact", "type": "string", "description": "Careful"}
                    ]},
                    "Filter": {
                        "type": "object",
                        "properties": {"field": {"type": "string"}, "value": true},
                        "required": ["field"],
                        "additionalProperties": false
                    }
                }
            }),
            Some(json!({
                "type": "object",
                "properties": {"hits": {"type": "array", "items": {"$ref": "#/$defs/Hit"}}},
                "required": ["hits"],
                "$defs": {"Hit": {"type": "object", "properties": {"id": {"type": "string"}, "score": {"type": "number"}}}}
            })),
        ),
        (
            "flattened-with-unevaluated",
            json!({
                "type": "object",
                "allOf": [{"$ref": "#/$defs/Paging"}],
                "properties": {"q": {"type": "string"}},
                "unevaluatedProperties": false,
                "$defs": {"Paging": {"properties": {"cursor": {"type": ["string", "null"]}}}}
            }),
            Some(json!({"type": "array", "items": {"type": "string"}})),
        ),
        (
            "conditional-and-dependent",
            json!({
                "type": "object",
                "properties": {"kind": {"enum": ["a", "b"]}, "x": {"type": "number"}},
                "if": {"properties": {"kind": {"const": "a"}}},
                "then": {"required": ["x"]},
                "dependentRequired": {"x": ["kind"]}
            }),
            None,
        ),
        (
            "no-arguments",
            json!({"type": "object", "additionalProperties": false}),
            Some(json!({"type": "object", "additionalProperties": {"type": "integer"}})),
        ),
        (
            "root-without-type",
            json!({"properties": {"flag": {"type": "boolean"}}}),
            None,
        ),
        ("true-schema", json!(true), None),
        (
            "recursive-not-offered",
            json!({
                "type": "object",
                "properties": {"tree": {"$ref": "#/$defs/T"}},
                "$defs": {"T": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/T"}}}}}
            }),
            None,
        ),
    ]
}

#[test]
fn projected_tools_validate_against_each_revisions_tool_definition() {
    let Some(schemas) = common::tool_schemas() else {
        return;
    };
    let mut checked = 0;
    for schema in schemas {
        let expected_dialect = if schema.revision < "2025-11-25" {
            Dialect::Draft7
        } else {
            Dialect::Draft202012
        };
        assert_eq!(
            schema.validator.dialect(),
            expected_dialect,
            "{}",
            schema.revision
        );
        assert_eq!(
            schema.profile.dialect, expected_dialect,
            "{}",
            schema.revision
        );
        for (name, input, output) in declared_tools() {
            let Some(projected) = project_input(&input, &schema.profile).offered().cloned() else {
                assert_eq!(
                    name, "recursive-not-offered",
                    "{} hides {name}",
                    schema.revision
                );
                continue;
            };
            let output = output
                .map(|o| project_output(&o, &schema.profile))
                .as_ref()
                .and_then(OutputProjection::schema)
                .cloned();
            let tool = common::tool(&projected, output.as_ref());
            if let Err(issues) = schema.validator.validate(&tool) {
                panic!(
                    "{}: {name} is not a valid Tool: {issues:?}\n{tool:#}",
                    schema.revision
                );
            }
            checked += 1;
        }
    }
    assert_eq!(
        checked,
        5 * 6 + 1,
        "the recursive tool is offered on 2026-07-28 only"
    );
}

#[test]
fn the_tool_definitions_do_reject_what_projection_removes() {
    // Guards against a vacuous check: unprojected shapes that the legacy definitions forbid.
    let Some(schemas) = common::tool_schemas() else {
        return;
    };
    let bad_inputs = [
        json!({"properties": {"a": {"type": "string"}}}),
        json!({"type": "object", "properties": {"a": true}}),
        json!({"type": "string"}),
    ];
    for schema in schemas {
        for bad in &bad_inputs {
            let legacy = schema.profile != SchemaProfile::V2026_07_28;
            let valid = schema.validator.is_valid(&common::tool(bad, None));
            let rejected_everywhere = bad.get("type") != Some(&json!("object"));
            assert_eq!(
                valid,
                !(legacy || rejected_everywhere),
                "{}: {bad}",
                schema.revision
            );
        }
        let array_output = json!({"type": "array"});
        let valid = schema.validator.is_valid(&common::tool(
            &json!({"type": "object"}),
            Some(&array_output),
        ));
        let revision_allows = schema.profile == SchemaProfile::V2026_07_28;
        // 2024-11-05 and 2025-03-26 have no outputSchema at all, and ignore unknown members.
        let ignores_it = schema.revision < "2025-06-18";
        assert_eq!(valid, revision_allows || ignores_it, "{}", schema.revision);
    }
}
