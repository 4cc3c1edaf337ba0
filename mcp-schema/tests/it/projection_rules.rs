//! One table row per projection rule: what a legacy revision is shown of a declared schema.

use mcp_schema::{
    NotOfferedReason, OutputDrop, OutputProjection, Projection, ProjectionLimits, SchemaProfile,
    project_input, project_input_with, project_output,
};
use serde_json::{Value, json};

const LEGACY: SchemaProfile = SchemaProfile::V2025_06_18;

fn obj(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

#[track_caller]
fn assert_offered(declared: &Value, expected: &Value) {
    match project_input(declared, &LEGACY) {
        Projection::Offered(got) => assert_eq!(&got, expected, "declared: {declared:#}"),
        Projection::NotOffered(why) => panic!("not offered ({why}) for {declared:#}"),
    }
}

#[track_caller]
fn assert_not_offered(declared: &Value, reason: &NotOfferedReason, path: &str) {
    match project_input(declared, &LEGACY) {
        Projection::NotOffered(why) => {
            assert_eq!(why.reason(), reason, "declared: {declared:#}");
            assert_eq!(why.path(), path, "declared: {declared:#}");
            let message = why.to_string();
            assert!(
                message.contains(if path.is_empty() { "the root" } else { path }),
                "{message}"
            );
        }
        Projection::Offered(got) => panic!("offered {got:#} for {declared:#}"),
    }
}

#[test]
fn inline_local_ref_through_defs_and_definitions() {
    let cases = [
        (
            json!({
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/definitions/B"}},
                "$defs": {"A": {"type": "string", "minLength": 1}},
                "definitions": {"B": {"type": "integer"}},
            }),
            obj(json!({"a": {"type": "string", "minLength": 1}, "b": {"type": "integer"}})),
        ),
        // Siblings of `$ref` are merged with the target; the site's annotations win.
        (
            json!({
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/A", "description": "at the site", "maxLength": 5}},
                "$defs": {"A": {"type": "string", "description": "in the def"}},
            }),
            obj(json!({"a": {"type": "string", "description": "at the site", "maxLength": 5}})),
        ),
        // A chain of references, and a reference to the root's own `$defs` from inside one.
        (
            json!({
                "$ref": "#/$defs/Args",
                "$defs": {
                    "Args": {"type": "object", "properties": {"p": {"$ref": "#/$defs/Point"}}, "required": ["p"]},
                    "Point": {"type": "object", "properties": {"x": {"$ref": "#/$defs/N"}, "y": {"$ref": "#/$defs/N"}}},
                    "N": {"type": "number"},
                },
            }),
            json!({
                "type": "object",
                "required": ["p"],
                "properties": {"p": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}},
            }),
        ),
        // Percent-encoded and `~1`-escaped pointers.
        (
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a~1b%20c"}}, "$defs": {"a/b c": {"type": "boolean"}}}),
            obj(json!({"a": {"type": "boolean"}})),
        ),
    ];
    for (declared, expected) in cases {
        assert_offered(&declared, &expected);
    }
}

#[test]
fn inline_local_ref_refuses_recursion_and_non_local_references() {
    let linked_list = json!({
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
    });
    assert_not_offered(
        &linked_list,
        &NotOfferedReason::RecursiveRef {
            reference: "#/$defs/Node".into(),
        },
        "/$defs/Node/properties/next/$ref",
    );
    let to_root = json!({"type": "object", "properties": {"self": {"$ref": "#"}}});
    assert_not_offered(
        &to_root,
        &NotOfferedReason::RecursiveRef {
            reference: "#".into(),
        },
        "/properties/self/$ref",
    );
    let mutual = json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "$defs": {"A": {"properties": {"b": {"$ref": "#/$defs/B"}}}, "B": {"items": {"$ref": "#/$defs/A"}}},
    });
    assert_not_offered(
        &mutual,
        &NotOfferedReason::RecursiveRef {
            reference: "#/$defs/A".into(),
        },
        "/$defs/B/items/$ref",
    );
    for reference in [
        "https://example.com/s.json",
        "other.json#/$defs/A",
        "#anchor",
        "#/$defs/Missing",
    ] {
        let declared = json!({"type": "object", "properties": {"a": {"$ref": reference}}});
        assert_not_offered(
            &declared,
            &NotOfferedReason::UnresolvedRef {
                reference: reference.into(),
            },
            "/properties/a/$ref",
        );
    }
}

#[test]
fn merge_all_of_flattens_compatible_branches() {
    let declared = json!({
        "type": "object",
        "allOf": [
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"a": {"maxLength": 3}, "b": {"type": "integer"}}, "required": ["b"]},
        ],
    });
    assert_offered(
        &declared,
        &json!({
            "type": "object",
            "properties": {"a": {"type": "string", "maxLength": 3}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        }),
    );
    let conflicting = obj(json!({"a": {"allOf": [{"pattern": "^x"}, {"pattern": "y$"}]}}));
    assert_not_offered(
        &conflicting,
        &NotOfferedReason::Conflict {
            keyword: "pattern".into(),
        },
        "/properties/a",
    );
    let closed_plus_open = json!({
        "type": "object",
        "allOf": [{"properties": {"a": {}}, "additionalProperties": false}, {"properties": {"b": {}}}],
    });
    assert_not_offered(
        &closed_plus_open,
        &NotOfferedReason::Conflict {
            keyword: "additionalProperties".into(),
        },
        "",
    );
}

#[test]
fn nullable_unions_collapse_keeping_null_valid() {
    let cases = [
        // anyOf of one schema and null.
        (
            obj(json!({"a": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]}})),
            obj(json!({"a": {"type": ["string", "null"], "format": "date"}})),
        ),
        // oneOf, null first, through a `$ref` (schemars `Option<Struct>`), default kept.
        (
            json!({
                "type": "object",
                "properties": {"p": {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/P"}], "default": null}},
                "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
            }),
            obj(json!({"p": {
                "type": ["object", "null"],
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
                "default": null,
            }})),
        ),
        // Enum plus null.
        (
            obj(
                json!({"e": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]}}),
            ),
            obj(json!({"e": {"type": ["string", "null"], "enum": ["a", "b", null]}})),
        ),
        // `type: [T, "null"]` is already what legacy clients read: unchanged.
        (
            obj(json!({"t": {"type": ["integer", "null"], "minimum": 0}})),
            obj(json!({"t": {"type": ["integer", "null"], "minimum": 0}})),
        ),
        // A union of values (schemars' documented enum variants) is one `enum`.
        (
            obj(json!({"v": {"oneOf": [
                {"const": "fast", "description": "Quick"},
                {"const": "slow", "description": "Careful"},
            ]}})),
            obj(json!({"v": {"type": "string", "enum": ["fast", "slow"]}})),
        ),
    ];
    for (declared, expected) in cases {
        assert_offered(&declared, &expected);
    }
}

#[test]
fn x_mcp_header_is_stripped() {
    let declared = obj(json!({
        "region": {"type": "string", "x-mcp-header": "Region"},
        "nested": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
    }));
    assert_offered(
        &declared,
        &obj(json!({
            "region": {"type": "string"},
            "nested": {"type": "object", "properties": {"n": {"type": "integer"}}},
        })),
    );
    // 2026-07-28 keeps them.
    assert_eq!(
        project_input(&declared, &SchemaProfile::V2026_07_28),
        Projection::Offered(declared.clone())
    );
}

#[test]
fn what_cannot_be_simplified_is_not_offered() {
    let unsupported = |keyword: &str| NotOfferedReason::UnsupportedKeyword {
        keyword: keyword.into(),
    };
    let cases = [
        (
            obj(json!({"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}})),
            NotOfferedReason::Union {
                keyword: "anyOf",
                branches: 2,
            },
            "/properties/a/anyOf",
        ),
        (
            obj(
                json!({"a": {"oneOf": [{"type": "string"}, {"type": "object"}, {"type": "null"}]}}),
            ),
            NotOfferedReason::Union {
                keyword: "oneOf",
                branches: 3,
            },
            "/properties/a/oneOf",
        ),
        // oneOf where null would match both branches.
        (
            obj(json!({"a": {"oneOf": [{"minLength": 1}, {"type": "null"}]}})),
            NotOfferedReason::Union {
                keyword: "oneOf",
                branches: 2,
            },
            "/properties/a/oneOf",
        ),
        (
            obj(json!({"a": {"not": {"type": "string"}}})),
            unsupported("not"),
            "/properties/a/not",
        ),
        (
            json!({"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}}),
            unsupported("dependentSchemas"),
            "/dependentSchemas",
        ),
        (
            obj(json!({"a": {"type": "array", "prefixItems": [{"type": "string"}]}})),
            unsupported("prefixItems"),
            "/properties/a/prefixItems",
        ),
        (
            obj(json!({"a": {"type": "array", "items": [{"type": "string"}]}})),
            unsupported("items"),
            "/properties/a/items",
        ),
        (
            obj(json!({"a": {"type": "array", "unevaluatedItems": false}})),
            unsupported("unevaluatedItems"),
            "/properties/a/unevaluatedItems",
        ),
        (
            obj(json!({"a": {"type": "array", "contains": {"type": "string"}, "minContains": 0}})),
            unsupported("minContains"),
            "/properties/a/minContains",
        ),
        (
            obj(json!({"a": {"$dynamicRef": "#node"}})),
            unsupported("$dynamicRef"),
            "/properties/a/$dynamicRef",
        ),
        (
            obj(json!({"a": {"$id": "inner", "type": "string"}})),
            unsupported("$id"),
            "/properties/a/$id",
        ),
        (
            json!({"type": "string"}),
            NotOfferedReason::NonObjectRoot,
            "",
        ),
        (
            json!({"type": ["array", "null"]}),
            NotOfferedReason::NonObjectRoot,
            "",
        ),
        (json!(false), NotOfferedReason::NonObjectRoot, ""),
        (
            json!({"allOf": [{"type": "object"}, {"type": "string"}]}),
            NotOfferedReason::NonObjectRoot,
            "",
        ),
        (
            obj(json!({"gone": false})),
            NotOfferedReason::ForbiddenProperty {
                name: "gone".into(),
            },
            "/properties",
        ),
        (
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}),
            NotOfferedReason::UnsupportedDialect {
                uri: "http://json-schema.org/draft-07/schema#".into(),
            },
            "/$schema",
        ),
        (
            obj(json!({"a": 3})),
            NotOfferedReason::Malformed {
                keyword: "schema".into(),
            },
            "/properties/a",
        ),
        (
            json!({"type": "object", "required": "a"}),
            NotOfferedReason::Malformed {
                keyword: "required".into(),
            },
            "/required",
        ),
        (
            json!({"type": "object", "anyOf": []}),
            NotOfferedReason::Malformed {
                keyword: "anyOf".into(),
            },
            "/anyOf",
        ),
        // An `unevaluatedProperties` beside a dropped conditional would become narrowing.
        (
            json!({
                "type": "object",
                "properties": {"kind": {"type": "string"}},
                "if": {"properties": {"kind": {"const": "a"}}},
                "then": {"properties": {"extra": {"type": "string"}}},
                "unevaluatedProperties": false,
            }),
            unsupported("unevaluatedProperties"),
            "/unevaluatedProperties",
        ),
    ];
    for (declared, reason, path) in cases {
        assert_not_offered(&declared, &reason, path);
    }
}

#[test]
fn widening_and_lossless_drops() {
    let cases = [
        // drop_conditionals (widening).
        (
            json!({
                "type": "object",
                "properties": {"kind": {"type": "string"}},
                "if": {"properties": {"kind": {"const": "a"}}},
                "then": {"required": ["extra"]},
                "else": {"required": ["other"]},
            }),
            obj(json!({"kind": {"type": "string"}})),
        ),
        // drop_dependent_required (widening).
        (
            json!({"type": "object", "properties": {"a": {}}, "dependentRequired": {"a": ["b"]}}),
            obj(json!({"a": {}})),
        ),
        // drop_non_portable_keywords (lossless).
        (
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$id": "https://example.com/tool",
                "$comment": "c",
                "type": "object",
                "properties": {"a": {"$anchor": "x", "type": "string", "contentSchema": {"type": "object"}}},
                "dependencies": {"a": ["b"]},
                "additionalItems": false,
            }),
            obj(json!({"a": {"type": "string"}})),
        ),
        // unevaluated_to_additional (lossless).
        (
            json!({
                "type": "object",
                "allOf": [{"$ref": "#/$defs/Base"}],
                "properties": {"own": {"type": "integer"}},
                "unevaluatedProperties": false,
                "$defs": {"Base": {"properties": {"base": {"type": "string"}}}},
            }),
            json!({
                "type": "object",
                "properties": {"own": {"type": "integer"}, "base": {"type": "string"}},
                "additionalProperties": false,
            }),
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "string"}, "unevaluatedProperties": false}),
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
        ),
        // object_property_schemas (lossless).
        (obj(json!({"any": true})), obj(json!({"any": {}}))),
        // require_object_root (lossless for arguments).
        (json!({"properties": {"a": {}}}), obj(json!({"a": {}}))),
        (
            json!({"type": ["object", "null"]}),
            json!({"type": "object"}),
        ),
        (json!(true), json!({"type": "object"})),
    ];
    for (declared, expected) in cases {
        assert_offered(&declared, &expected);
    }
}

#[test]
fn full_input_keeps_everything_but_needs_an_object_root() {
    let declared = json!({
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/Node"}, "r": {"type": "string", "x-mcp-header": "R"}},
        "oneOf": [{"required": ["head"]}, {"required": ["r"]}],
    });
    assert_eq!(
        project_input(&declared, &SchemaProfile::V2026_07_28),
        Projection::Offered(declared.clone())
    );
    let root_ref = json!({"$ref": "#/$defs/A", "$defs": {"A": {"type": "object"}}});
    let mut with_type = root_ref.clone();
    with_type["type"] = json!("object");
    assert_eq!(
        project_input(&root_ref, &SchemaProfile::V2026_07_28),
        Projection::Offered(with_type)
    );
    let not_object = project_input(&json!({"type": "array"}), &SchemaProfile::V2026_07_28);
    assert_eq!(
        not_object.not_offered().unwrap().reason(),
        &NotOfferedReason::NonObjectRoot
    );
}

#[test]
fn output_schema_per_revision() {
    let object = json!({
        "type": "object",
        "properties": {"temp": {"$ref": "#/$defs/T"}},
        "$defs": {"T": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
    });
    let projected = json!({"type": "object", "properties": {"temp": {"type": ["number", "null"]}}});
    let array = json!({"type": "array", "items": {"type": "string"}});
    let recursive = json!({
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Tree"}},
        "$defs": {"Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}},
    });
    let via_ref = json!({"$ref": "#/$defs/Out", "$defs": {"Out": {"type": "object"}}});
    for profile in &[SchemaProfile::V2024_11_05, SchemaProfile::V2025_03_26] {
        assert_eq!(
            project_output(&object, profile),
            OutputProjection::Dropped(OutputDrop::NotInRevision)
        );
    }
    for profile in [SchemaProfile::V2025_06_18, SchemaProfile::V2025_11_25] {
        assert_eq!(
            project_output(&object, &profile),
            OutputProjection::Shown(projected.clone())
        );
        let dropped = project_output(&array, &profile);
        assert_eq!(
            dropped,
            OutputProjection::Dropped(OutputDrop::NonObjectRoot)
        );
        assert!(!dropped.allows_structured_content());
        assert_eq!(
            project_output(&json!({}), &profile),
            OutputProjection::Dropped(OutputDrop::NonObjectRoot)
        );
        let hidden = project_output(&recursive, &profile);
        assert!(matches!(&hidden, OutputProjection::SchemaHidden(why)
            if matches!(why.reason(), NotOfferedReason::RecursiveRef { .. })));
        assert!(hidden.allows_structured_content());
        assert_eq!(hidden.schema(), None);
        assert_eq!(
            project_output(&via_ref, &profile),
            OutputProjection::Shown(json!({"type": "object"}))
        );
    }
    for schema in [&object, &array, &recursive] {
        assert_eq!(
            project_output(schema, &SchemaProfile::V2026_07_28),
            OutputProjection::Shown(schema.clone())
        );
    }
}

#[test]
fn limits_bound_depth_and_inlined_size() {
    let deep = (0..10).fold(json!({"type": "string"}), |inner, _| {
        obj(json!({"n": inner}))
    });
    let shallow = ProjectionLimits::new().max_depth(8);
    let got = project_input_with(&deep, &LEGACY, &shallow);
    assert_eq!(
        got.not_offered().unwrap().reason(),
        &NotOfferedReason::TooDeep { limit: 8 }
    );
    assert!(project_input(&deep, &LEGACY).is_offered());

    // Each definition references the next one twice: 2^20 copies once inlined.
    let mut defs = serde_json::Map::new();
    for i in 0..20 {
        defs.insert(
            format!("D{i}"),
            obj(json!({"l": {"$ref": format!("#/$defs/D{}", i + 1)}, "r": {"$ref": format!("#/$defs/D{}", i + 1)}})),
        );
    }
    defs.insert("D20".into(), json!({"type": "string"}));
    let bomb =
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs});
    let got = project_input(&bomb, &LEGACY);
    assert_eq!(
        got.not_offered().unwrap().reason(),
        &NotOfferedReason::TooLarge { limit: 20_000 }
    );
}

/// The suite's `json_schema_2020_12_tool` schema, with a header annotation added.
fn native_fixture() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string", "x-mcp-header": "Name"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

#[test]
fn native_2025_11_25_keeps_every_2020_12_keyword_and_strips_header_annotations() {
    let declared = native_fixture();
    let native = SchemaProfile::V2025_11_25.native();
    let Projection::Offered(shown) = project_input(&declared, &native) else {
        panic!("the native profile offers the fixture");
    };
    let mut expected = declared.clone();
    expected["properties"]["name"]
        .as_object_mut()
        .unwrap()
        .remove("x-mcp-header");
    assert_eq!(shown, expected);
    // The projected profile of the same revision cannot show it losslessly (a real union).
    assert!(!project_input(&declared, &SchemaProfile::V2025_11_25).is_offered());
    // Draft-07 revisions have no native form: `native` leaves them as they are.
    assert_eq!(
        SchemaProfile::V2025_06_18.native(),
        SchemaProfile::V2025_06_18
    );
}

#[test]
fn native_refuses_another_dialect_a_non_object_root_and_deep_nesting() {
    let native = SchemaProfile::V2025_11_25.native();
    let draft7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"});
    let Projection::NotOffered(why) = project_input(&draft7, &native) else {
        panic!("a draft-07 schema is not shown as 2020-12");
    };
    assert!(matches!(
        why.reason(),
        NotOfferedReason::UnsupportedDialect { .. }
    ));
    assert_eq!(why.path(), "/$schema");
    assert!(!project_input(&json!({"type": "string"}), &native).is_offered());
    let mut deep = json!({"type": "object"});
    for _ in 0..10 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    let limits = ProjectionLimits::new().max_depth(5);
    let Projection::NotOffered(why) = project_input_with(&deep, &native, &limits) else {
        panic!("nesting past the limit is not offered");
    };
    assert_eq!(why.reason(), &NotOfferedReason::TooDeep { limit: 5 });
}
