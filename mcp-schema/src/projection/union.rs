//! `anyOf`/`oneOf`: the unions a legacy revision can still show, collapsed into one schema.

use serde_json::{Map, Value};

use crate::keywords::{has_type, is_annotation, json_equal};

/// Collapses simplified `anyOf`/`oneOf` branches into one schema, or `None` when it is a real
/// union (rule `reject_real_union`).
///
/// Tried in order: rule `collapse_value_union`, then rule `collapse_nullable_union`. A single
/// branch is that branch. A `false` branch matches nothing, in `anyOf` and `oneOf` alike, so it
/// is left out first.
///
/// Rule `reject_real_union`: two or more branches that are not plain values or null (say a
/// string or an object) cannot be shown to a legacy client as one schema without changing
/// which arguments are valid, and a client that cannot read the union would hide or misuse the
/// tool: not offered.
pub(super) fn collapse(keyword: &str, mut branches: Vec<Value>) -> Option<Value> {
    branches.retain(|b| *b != Value::Bool(false));
    if branches.is_empty() {
        return Some(Value::Bool(false));
    }
    if let Some(schema) = collapse_value_union(keyword, &branches) {
        return Some(schema);
    }
    collapse_nullable_union(keyword, branches)
}

/// Rule `collapse_value_union`: a union whose branches each allow a finite set of values
/// (`const`, `enum`, or `type: "null"`, with annotations) becomes one `enum` of all of them,
/// with the `type`s of those values (which the `enum` implies, but which clients and models
/// read more easily).
///
/// Why: schemars writes an enum whose variants carry doc comments as a `oneOf` of `const`s,
/// and `Option` of such an enum adds a null branch; one `enum` says exactly the same. For
/// `oneOf`, a value allowed by two branches would be invalid (it matches twice), so
/// overlapping branches are left to the next rules. Per-value descriptions are annotations
/// and are lost.
fn collapse_value_union(keyword: &str, branches: &[Value]) -> Option<Value> {
    let mut values: Vec<Value> = Vec::new();
    for branch in branches {
        let set = value_set(branch)?;
        for value in set {
            if values.iter().any(|v| json_equal(v, &value)) {
                if keyword == "oneOf" {
                    return None;
                }
            } else {
                values.push(value);
            }
        }
    }
    if values.is_empty() {
        return Some(Value::Bool(false));
    }
    let mut types: Vec<&str> = Vec::new();
    for value in &values {
        let name = type_name(value);
        if !types.contains(&name) {
            types.push(name);
        }
    }
    if types.contains(&"number") {
        types.retain(|t| *t != "integer");
    }
    let types = match types.as_slice() {
        [single] => Value::String((*single).to_owned()),
        _ => Value::Array(
            types
                .iter()
                .map(|t| Value::String((*t).to_owned()))
                .collect(),
        ),
    };
    let mut map = Map::new();
    map.insert("type".to_owned(), types);
    map.insert("enum".to_owned(), Value::Array(values));
    Some(Value::Object(map))
}

/// The narrowest JSON Schema type name of a value.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Number(_) if has_type(value, "integer") => "integer",
        Value::Number(_) => "number",
    }
}

/// Rule `collapse_nullable_union`: `anyOf`/`oneOf` of one schema and `{"type": "null"}` becomes
/// that schema with null still valid on it (`type: [T, "null"]`, `null` added to `enum`, a
/// `const` turned into a two-value `enum`).
///
/// Why: this is how `Option<T>` is written, and a legacy client that cannot read the union
/// would hide the tool entirely. Every other keyword constrains one JSON type only, so null
/// stays valid exactly as before. For `oneOf`, null must match one branch only, so the other
/// branch must exclude null by its `type`, `const` or `enum`.
fn collapse_nullable_union(keyword: &str, branches: Vec<Value>) -> Option<Value> {
    let total = branches.len();
    let (nulls, mut others): (Vec<Value>, Vec<Value>) = branches
        .into_iter()
        .partition(|b| value_set(b).is_some_and(|set| set.len() == 1 && set[0].is_null()));
    if others.len() != 1 {
        return None;
    }
    let branch = others.pop()?;
    match (nulls.len(), keyword) {
        (0, _) => Some(branch),
        (_, "anyOf") => Some(nullable(branch)),
        (1, _) if total == 2 && excludes_null(&branch) => Some(nullable(branch)),
        _ => None,
    }
}

/// The finite set of values a branch allows, if it is only `const`/`enum`/`type: "null"` plus
/// annotations (`false` allows none).
fn value_set(branch: &Value) -> Option<Vec<Value>> {
    let map = match branch {
        Value::Bool(false) => return Some(Vec::new()),
        Value::Object(map) => map,
        _ => return None,
    };
    if map
        .keys()
        .any(|k| !is_annotation(k) && !matches!(k.as_str(), "const" | "enum" | "type"))
    {
        return None;
    }
    let types: Option<Vec<&str>> = match map.get("type") {
        None => None,
        Some(Value::String(t)) => Some(vec![t.as_str()]),
        Some(Value::Array(items)) => Some(items.iter().filter_map(Value::as_str).collect()),
        Some(_) => return None,
    };
    let mut values: Vec<Value> = match (map.get("const"), map.get("enum")) {
        (Some(c), None) => vec![c.clone()],
        (None, Some(Value::Array(items))) => items.clone(),
        (Some(c), Some(Value::Array(items))) => {
            if items.iter().any(|v| json_equal(v, c)) {
                vec![c.clone()]
            } else {
                Vec::new()
            }
        }
        (None, None) if types.as_deref() == Some(&["null"]) => vec![Value::Null],
        _ => return None,
    };
    if let Some(types) = types {
        values.retain(|v| types.iter().any(|t| has_type(v, t)));
    }
    Some(values)
}

/// The branch with null also valid.
fn nullable(branch: Value) -> Value {
    let mut map = match branch {
        Value::Bool(true) => return Value::Bool(true),
        Value::Object(map) => map,
        _ => {
            let mut map = Map::new();
            map.insert("type".to_owned(), Value::String("null".to_owned()));
            return Value::Object(map);
        }
    };
    match map.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = std::mem::take(t);
            map.insert(
                "type".to_owned(),
                Value::Array(vec![Value::String(t), Value::String("null".to_owned())]),
            );
        }
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
            types.push(Value::String("null".to_owned()));
        }
        _ => {}
    }
    if let Some(c) = map.remove("const") {
        if c.is_null() {
            map.insert("const".to_owned(), c);
        } else {
            let allowed = match map.get("enum") {
                Some(Value::Array(items)) => items.iter().any(|v| json_equal(v, &c)),
                _ => true,
            };
            let mut values = if allowed { vec![c] } else { Vec::new() };
            values.push(Value::Null);
            map.insert("enum".to_owned(), Value::Array(values));
        }
    }
    if let Some(Value::Array(items)) = map.get_mut("enum")
        && !items.iter().any(Value::is_null)
    {
        items.push(Value::Null);
    }
    Value::Object(map)
}

/// Whether a simplified schema rejects null by its `type`, `const` or `enum`.
fn excludes_null(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return *schema == Value::Bool(false);
    };
    let by_type = match map.get("type") {
        Some(Value::String(t)) => t != "null",
        Some(Value::Array(types)) => !types.iter().any(|t| t == "null"),
        _ => false,
    };
    let by_const = map.get("const").is_some_and(|c| !c.is_null());
    let by_enum = map
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|items| !items.iter().any(Value::is_null));
    by_type || by_const || by_enum
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn collapses_what_one_schema_can_say() {
        let null = json!({"type": "null"});
        let cases = [
            (
                "anyOf",
                vec![json!({"type": "string"})],
                Some(json!({"type": "string"})),
            ),
            (
                "anyOf",
                vec![json!({"type": "string", "minLength": 1}), null.clone()],
                Some(json!({"type": ["string", "null"], "minLength": 1})),
            ),
            (
                "oneOf",
                vec![null.clone(), json!({"type": ["integer", "boolean"]})],
                Some(json!({"type": ["integer", "boolean", "null"]})),
            ),
            (
                "anyOf",
                vec![
                    json!({"type": "string", "enum": ["a", "b"], "pattern": "."}),
                    null.clone(),
                ],
                Some(json!({"type": ["string", "null"], "enum": ["a", "b", null], "pattern": "."})),
            ),
            (
                "anyOf",
                vec![json!({"const": {"k": 1}, "minProperties": 1}), null.clone()],
                Some(json!({"enum": [{"k": 1}, null], "minProperties": 1})),
            ),
            (
                "anyOf",
                vec![json!({"minLength": 2}), null.clone()],
                Some(json!({"minLength": 2})),
            ),
            ("anyOf", vec![json!(true), null.clone()], Some(json!(true))),
            (
                "anyOf",
                vec![json!(false), json!({"minimum": 1})],
                Some(json!({"minimum": 1})),
            ),
            (
                "oneOf",
                vec![
                    json!({"const": "a", "description": "first"}),
                    json!({"type": "string", "enum": ["b", "c", 3]}),
                    null.clone(),
                ],
                Some(json!({"type": ["string", "null"], "enum": ["a", "b", "c", null]})),
            ),
            (
                "anyOf",
                vec![json!({"enum": [1, 2]}), json!({"const": 2})],
                Some(json!({"type": "integer", "enum": [1, 2]})),
            ),
            (
                "anyOf",
                vec![null.clone(), json!({"const": null})],
                Some(json!({"type": "null", "enum": [null]})),
            ),
            (
                "anyOf",
                vec![json!({"enum": [1, 2.5]}), json!({"const": [1]})],
                Some(json!({"type": ["number", "array"], "enum": [1, 2.5, [1]]})),
            ),
            ("anyOf", vec![json!(false)], Some(json!(false))),
        ];
        for (keyword, branches, expected) in cases {
            assert_eq!(
                collapse(keyword, branches.clone()),
                expected,
                "{keyword} {branches:?}"
            );
        }
    }

    #[test]
    fn refuses_real_unions() {
        let null = json!({"type": "null"});
        let cases = [
            (
                "anyOf",
                vec![json!({"type": "string"}), json!({"type": "integer"})],
            ),
            (
                "anyOf",
                vec![
                    json!({"type": "string"}),
                    json!({"type": "object"}),
                    null.clone(),
                ],
            ),
            // oneOf: null would match both branches.
            ("oneOf", vec![json!({"minLength": 1}), null.clone()]),
            (
                "oneOf",
                vec![
                    json!({"type": "string"}),
                    null.clone(),
                    json!({"const": null}),
                ],
            ),
            // oneOf of overlapping values.
            (
                "oneOf",
                vec![
                    json!({"enum": [1, 2]}),
                    json!({"const": 2}),
                    json!({"type": "string"}),
                ],
            ),
        ];
        for (keyword, branches) in cases {
            assert_eq!(
                collapse(keyword, branches.clone()),
                None,
                "{keyword} {branches:?}"
            );
        }
    }
}
