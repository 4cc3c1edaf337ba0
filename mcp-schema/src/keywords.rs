//! Which JSON Schema keywords assert, which hold subschemas, and which only annotate.
//!
//! One table shared by the projection rules and the `x-mcp-header` walk, covering draft-07 and
//! 2020-12 (and the 2019-09 keywords that 2020-12 kept).

use serde_json::Value;

/// Keywords that can change which instances are valid (assertions and applicators), in
/// draft-07 or 2020-12. A keyword not listed here has no effect on validity: JSON Schema
/// ignores unknown keywords, and the rest are annotations.
const ASSERTING: &[&str] = &[
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "dependencies",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "prefixItems",
    "items",
    "additionalItems",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// Whether `keyword` only annotates: it never changes which instances are valid.
pub(crate) fn is_annotation(keyword: &str) -> bool {
    !ASSERTING.contains(&keyword)
}

/// Keywords whose value is one subschema.
const ONE_SUBSCHEMA: &[&str] = &[
    "additionalProperties",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
];

/// Keywords whose value is an array of subschemas (`items` too, in its draft-07 tuple form).
const SUBSCHEMA_ARRAY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// Keywords whose value maps names to subschemas (`dependencies` only for its schema values).
const SUBSCHEMA_MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// Calls `visit(keyword, name_or_index, subschema)` for every direct subschema of `schema`.
///
/// `name_or_index` is `None` for single-subschema keywords. Values of the wrong JSON type (and
/// the string arrays of `dependencies`) are skipped: they hold no subschema.
pub(crate) fn for_each_subschema<'a>(
    schema: &'a Value,
    mut visit: impl FnMut(&'a str, Option<String>, &'a Value),
) {
    let Value::Object(map) = schema else { return };
    for (keyword, value) in map {
        let keyword = keyword.as_str();
        match value {
            Value::Object(_) | Value::Bool(_) if ONE_SUBSCHEMA.contains(&keyword) => {
                visit(keyword, None, value);
            }
            Value::Array(items) if SUBSCHEMA_ARRAY.contains(&keyword) => {
                for (i, item) in items.iter().enumerate() {
                    visit(keyword, Some(i.to_string()), item);
                }
            }
            Value::Object(entries) if SUBSCHEMA_MAP.contains(&keyword) => {
                for (name, sub) in entries {
                    if sub.is_object() || sub.is_boolean() {
                        visit(keyword, Some(name.clone()), sub);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Calls `visit` for every direct subschema of `schema`, mutably (the keywords of
/// [`for_each_subschema`]).
pub(crate) fn for_each_subschema_mut(schema: &mut Value, mut visit: impl FnMut(&mut Value)) {
    let Value::Object(map) = schema else { return };
    for (keyword, value) in map.iter_mut() {
        let keyword = keyword.as_str();
        match value {
            Value::Object(_) | Value::Bool(_) if ONE_SUBSCHEMA.contains(&keyword) => visit(value),
            Value::Array(items) if SUBSCHEMA_ARRAY.contains(&keyword) => {
                items.iter_mut().for_each(&mut visit);
            }
            Value::Object(entries) if SUBSCHEMA_MAP.contains(&keyword) => {
                entries
                    .values_mut()
                    .filter(|sub| sub.is_object() || sub.is_boolean())
                    .for_each(&mut visit);
            }
            _ => {}
        }
    }
}

/// Whether a JSON value has the JSON Schema type `name` (`integer` means a number with no
/// fractional part, `1.0` included). Unknown type names match nothing.
pub(crate) fn has_type(value: &Value, name: &str) -> bool {
    match (name, value) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_))
        | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// JSON Schema equality: like `==`, except that numbers compare by value (`1` equals `1.0`).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn annotations_are_everything_that_cannot_assert() {
        for k in [
            "title",
            "description",
            "default",
            "examples",
            "x-anything",
            "$comment",
        ] {
            assert!(is_annotation(k), "{k}");
        }
        for k in [
            "type",
            "properties",
            "format",
            "$ref",
            "unevaluatedProperties",
        ] {
            assert!(!is_annotation(k), "{k}");
        }
    }

    #[test]
    fn types_and_equality_follow_json_schema() {
        assert!(has_type(&json!(1.0), "integer"));
        assert!(has_type(&json!(-3), "integer"));
        assert!(!has_type(&json!(1.5), "integer"));
        assert!(has_type(&json!(1.5), "number"));
        assert!(!has_type(&json!("1"), "number"));
        assert!(!has_type(&json!(null), "nothing"));
        assert!(json_equal(&json!([1, {"a": 2.0}]), &json!([1.0, {"a": 2}])));
        assert!(!json_equal(&json!([1]), &json!([1, 1])));
        assert!(!json_equal(&json!({"a": 1}), &json!({"b": 1})));
    }

    #[test]
    fn visits_every_kind_of_subschema() {
        let schema = json!({
            "properties": {"a": {}, "b": true},
            "items": [{}, {}],
            "not": {},
            "dependencies": {"a": ["b"], "c": {}},
            "enum": [{}],
        });
        let mut seen = Vec::new();
        for_each_subschema(&schema, |k, name, _| seen.push(format!("{k}:{name:?}")));
        seen.sort();
        assert_eq!(
            seen,
            [
                "dependencies:Some(\"c\")",
                "items:Some(\"0\")",
                "items:Some(\"1\")",
                "not:None",
                "properties:Some(\"a\")",
                "properties:Some(\"b\")",
            ]
        );
    }
}
