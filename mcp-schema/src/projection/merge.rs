//! Rule `merge_all_of`: combining flat, already simplified schemas into one.

use serde_json::{Map, Value};

use super::NotOfferedReason;
use crate::keywords::{is_annotation, json_equal};

/// Rule `merge_all_of`: `allOf` branches, and a `$ref` target with its siblings, are merged
/// into one schema.
///
/// Why: legacy clients may not evaluate `allOf` (and cannot see `$ref` at all once it is
/// inlined), but an `allOf` of flat schemas is almost always expressible as one flat schema:
/// keywords that appear in only one part are copied, and for a keyword in both parts the
/// stricter combination is computed (type and `enum` intersection, `required` union, the
/// larger minimum and smaller maximum, per-property merging). Annotations (`description`,
/// `title`, `default`, unknown keywords…) never change validity: the first part's value wins,
/// and the node's own siblings come first, so a `$ref` site's `description` is kept.
///
/// Anything else in both parts with different values (two `pattern`s, two `multipleOf`s, two
/// `contains`…) would need both to hold, which one keyword cannot say: not offered. So is
/// `additionalProperties` in one part when the other part declares properties it does not
/// know: merging the `properties` would change what counts as "additional". A merge that can
/// accept nothing (disjoint types or enums) yields `false`.
pub(super) fn merge_all_of(a: Value, b: Value) -> Result<Value, NotOfferedReason> {
    let (mut a, b) = match (a, b) {
        (Value::Bool(false), _) | (_, Value::Bool(false)) => return Ok(Value::Bool(false)),
        (Value::Bool(true), other) | (other, Value::Bool(true)) => return Ok(other),
        (Value::Object(a), Value::Object(b)) => (a, b),
        // Simplified schemas are objects or booleans.
        _ => {
            return Err(NotOfferedReason::Malformed {
                keyword: "schema".to_owned(),
            });
        }
    };
    check_additional_properties(&a, &b)?;
    check_additional_properties(&b, &a)?;
    for (keyword, theirs) in b {
        let merged = match a.remove(&keyword) {
            None => theirs,
            Some(ours) => match merge_keyword(&keyword, ours, theirs)? {
                Some(merged) => merged,
                None => return Ok(Value::Bool(false)),
            },
        };
        a.insert(keyword, merged);
    }
    Ok(Value::Object(a))
}

/// A part with `additionalProperties` (other than `true`) may only be merged with parts whose
/// `properties` and `patternProperties` keys it already has.
fn check_additional_properties(
    with_additional: &Map<String, Value>,
    other: &Map<String, Value>,
) -> Result<(), NotOfferedReason> {
    match with_additional.get("additionalProperties") {
        None | Some(Value::Bool(true)) => return Ok(()),
        Some(_) => {}
    }
    for keyword in ["properties", "patternProperties"] {
        let known = with_additional.get(keyword).and_then(Value::as_object);
        if let Some(theirs) = other.get(keyword).and_then(Value::as_object)
            && theirs
                .keys()
                .any(|k| !known.is_some_and(|known| known.contains_key(k)))
        {
            return Err(NotOfferedReason::Conflict {
                keyword: "additionalProperties".to_owned(),
            });
        }
    }
    Ok(())
}

/// Merges one keyword present in both parts. `Ok(None)` means nothing can satisfy both.
fn merge_keyword(
    keyword: &str,
    ours: Value,
    theirs: Value,
) -> Result<Option<Value>, NotOfferedReason> {
    let conflict = || NotOfferedReason::Conflict {
        keyword: keyword.to_owned(),
    };
    if is_annotation(keyword) {
        return Ok(Some(ours));
    }
    let merged = match keyword {
        "type" => intersect_types(&ours, &theirs).ok_or_else(conflict)?,
        "enum" => {
            let (Value::Array(ours), Value::Array(theirs)) = (ours, theirs) else {
                return Err(conflict());
            };
            let both: Vec<Value> = ours
                .into_iter()
                .filter(|v| theirs.iter().any(|w| json_equal(v, w)))
                .collect();
            if both.is_empty() {
                return Ok(None);
            }
            Value::Array(both)
        }
        "const" => {
            if !json_equal(&ours, &theirs) {
                return Ok(None);
            }
            ours
        }
        "required" => {
            let (Value::Array(mut ours), Value::Array(theirs)) = (ours, theirs) else {
                return Err(conflict());
            };
            for name in theirs {
                if !ours.contains(&name) {
                    ours.push(name);
                }
            }
            Value::Array(ours)
        }
        "properties" | "patternProperties" => {
            let (Value::Object(mut ours), Value::Object(theirs)) = (ours, theirs) else {
                return Err(conflict());
            };
            for (name, schema) in theirs {
                let merged = match ours.remove(&name) {
                    None => schema,
                    Some(mine) => merge_all_of(mine, schema)?,
                };
                ours.insert(name, merged);
            }
            if keyword == "properties" {
                ours = object_property_schemas(ours)?;
            }
            Value::Object(ours)
        }
        "items" | "additionalProperties" | "propertyNames" => merge_all_of(ours, theirs)?,
        "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties" => {
            bound(ours, theirs, f64::max).ok_or_else(conflict)?
        }
        "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties" => {
            bound(ours, theirs, f64::min).ok_or_else(conflict)?
        }
        "uniqueItems" => match (ours, theirs) {
            (Value::Bool(x), Value::Bool(y)) => Value::Bool(x || y),
            _ => return Err(conflict()),
        },
        _ if json_equal(&ours, &theirs) => ours,
        _ => return Err(conflict()),
    };
    if keyword == "type" && merged.as_array().is_some_and(Vec::is_empty) {
        return Ok(None);
    }
    Ok(Some(merged))
}

/// The stricter of two numeric bounds (`pick` is `max` for lower bounds, `min` for upper),
/// keeping the original JSON number.
fn bound(ours: Value, theirs: Value, pick: fn(f64, f64) -> f64) -> Option<Value> {
    let x = ours.as_f64()?;
    let y = theirs.as_f64()?;
    Some(if pick(x, y) == x { ours } else { theirs })
}

/// The intersection of two `type` values (a string or an array of strings), as a string when
/// one type remains and an array otherwise (empty: nothing is valid). `integer` is a subset of
/// `number`.
fn intersect_types(ours: &Value, theirs: &Value) -> Option<Value> {
    let ours = type_list(ours)?;
    let theirs = type_list(theirs)?;
    let mut both: Vec<&str> = Vec::new();
    for t in &ours {
        let kept = if theirs.contains(t) {
            Some(*t)
        } else if (*t == "integer" && theirs.contains(&"number"))
            || (*t == "number" && theirs.contains(&"integer"))
        {
            Some("integer")
        } else {
            None
        };
        if let Some(kept) = kept
            && !both.contains(&kept)
        {
            both.push(kept);
        }
    }
    Some(match both.as_slice() {
        [single] => Value::String((*single).to_owned()),
        _ => Value::Array(
            both.into_iter()
                .map(|t| Value::String(t.to_owned()))
                .collect(),
        ),
    })
}

fn type_list(value: &Value) -> Option<Vec<&str>> {
    match value {
        Value::String(t) => Some(vec![t.as_str()]),
        Value::Array(items) => items.iter().map(Value::as_str).collect(),
        _ => None,
    }
}

/// Rule `object_property_schemas` (see the projection module): `true` becomes `{}`, `false`
/// is not offered.
pub(super) fn object_property_schemas(
    props: Map<String, Value>,
) -> Result<Map<String, Value>, NotOfferedReason> {
    props
        .into_iter()
        .map(|(name, schema)| match schema {
            Value::Bool(true) => Ok((name, Value::Object(Map::new()))),
            Value::Bool(false) => Err(NotOfferedReason::ForbiddenProperty { name }),
            other => Ok((name, other)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merges_keyword_by_keyword() {
        // (a, b, merged) where merged is the lossless single schema.
        let cases = [
            (
                json!(true),
                json!({"type": "string"}),
                json!({"type": "string"}),
            ),
            (json!({"type": "string"}), json!(false), json!(false)),
            (
                json!({"description": "site", "type": "number"}),
                json!({"description": "target", "type": ["integer", "null"], "minimum": 0}),
                json!({"description": "site", "type": "integer", "minimum": 0}),
            ),
            (
                json!({"type": ["string", "null", "integer"]}),
                json!({"type": ["null", "number", "string"]}),
                json!({"type": ["string", "null", "integer"]}),
            ),
            (
                json!({"type": "string"}),
                json!({"type": "integer"}),
                json!(false),
            ),
            (
                json!({"enum": ["a", "b", 1]}),
                json!({"enum": [1.0, "b"]}),
                json!({"enum": ["b", 1]}),
            ),
            (json!({"enum": ["a"]}), json!({"enum": ["b"]}), json!(false)),
            (
                json!({"const": 1}),
                json!({"const": 1.0}),
                json!({"const": 1}),
            ),
            (json!({"const": 1}), json!({"const": 2}), json!(false)),
            (
                json!({"required": ["a", "b"]}),
                json!({"required": ["b", "c"]}),
                json!({"required": ["a", "b", "c"]}),
            ),
            (
                json!({"minimum": 1, "maxLength": 9, "exclusiveMaximum": 5}),
                json!({"minimum": 3, "maxLength": 4, "exclusiveMaximum": 7.5}),
                json!({"minimum": 3, "maxLength": 4, "exclusiveMaximum": 5}),
            ),
            (
                json!({"uniqueItems": false}),
                json!({"uniqueItems": true}),
                json!({"uniqueItems": true}),
            ),
            (
                json!({"properties": {"a": {"type": "string"}, "b": true}}),
                json!({"properties": {"a": {"minLength": 1}, "c": {}}}),
                json!({"properties": {"a": {"type": "string", "minLength": 1}, "b": {}, "c": {}}}),
            ),
            (
                json!({"items": {"type": "integer"}}),
                json!({"items": {"minimum": 0}}),
                json!({"items": {"type": "integer", "minimum": 0}}),
            ),
            (
                json!({"properties": {"a": {}}, "additionalProperties": false}),
                json!({"properties": {"a": {"type": "string"}}, "description": "d"}),
                json!({"properties": {"a": {"type": "string"}}, "additionalProperties": false, "description": "d"}),
            ),
            (
                json!({"pattern": "^a"}),
                json!({"pattern": "^a"}),
                json!({"pattern": "^a"}),
            ),
            (
                json!({"x-vendor": 1}),
                json!({"x-vendor": 2}),
                json!({"x-vendor": 1}),
            ),
        ];
        for (a, b, expected) in cases {
            let got = merge_all_of(a.clone(), b.clone());
            assert_eq!(got, Ok(expected), "merging {a} and {b}");
        }
    }

    #[test]
    fn refuses_what_one_schema_cannot_say() {
        let cases = [
            (
                json!({"pattern": "^a"}),
                json!({"pattern": "b$"}),
                "pattern",
            ),
            (
                json!({"multipleOf": 2}),
                json!({"multipleOf": 3}),
                "multipleOf",
            ),
            (
                json!({"contains": {"const": 1}}),
                json!({"contains": {"const": 2}}),
                "contains",
            ),
            (
                json!({"properties": {"a": {}}, "additionalProperties": false}),
                json!({"properties": {"b": {}}}),
                "additionalProperties",
            ),
            (
                json!({"patternProperties": {"^x": {}}}),
                json!({"additionalProperties": {"type": "string"}}),
                "additionalProperties",
            ),
            (json!({"minimum": "one"}), json!({"minimum": 2}), "minimum"),
        ];
        for (a, b, keyword) in cases {
            assert_eq!(
                merge_all_of(a.clone(), b.clone()),
                Err(NotOfferedReason::Conflict {
                    keyword: keyword.to_owned()
                }),
                "merging {a} and {b}"
            );
        }
        assert_eq!(
            merge_all_of(
                json!({"properties": {"a": {"type": "string"}}}),
                json!({"properties": {"a": {"type": "integer"}}})
            ),
            Err(NotOfferedReason::ForbiddenProperty {
                name: "a".to_owned()
            })
        );
    }
}
