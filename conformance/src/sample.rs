//! Plausible values for a JSON Schema: the arguments the conformance client sends to a tool it
//! knows nothing about, and the content it answers a form elicitation with.
//!
//! Only the shapes MCP uses are understood (flat objects of primitives, `enum`, `const`,
//! `oneOf`/`anyOf` of `const`s, `default`); anything else gets a value of the declared type.

use serde_json::{Map, Value, json};

/// Arguments for a tool whose input schema is `schema`: a value for every required property (and
/// only those), so that the call passes the server's validation.
///
/// A property with a `default` gets its default; otherwise see [`value_for`].
pub fn arguments(schema: &Value) -> Value {
    let mut out = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        out.insert(name.to_owned(), value_for(property));
    }
    Value::Object(out)
}

/// The content of an accepted form elicitation for `requested_schema`: every property, each with
/// its `default` when the schema gives one (SEP-1034: a client applies the defaults of fields the
/// user left alone), or a valid value of its type otherwise.
pub fn form_content(requested_schema: Option<&Value>) -> Value {
    let mut out = Map::new();
    let properties = requested_schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    for (name, property) in properties.into_iter().flatten() {
        out.insert(name.clone(), value_for(property));
    }
    Value::Object(out)
}

/// One value that `schema` accepts: its `default`, its `const`, the first of its `enum`, the
/// first option of a `oneOf`/`anyOf`, the first item of an `items.enum` (for a multi-select), or
/// a value of its `type` (`"test"`, `1`, `true`, `{}`, `[]`, `null`; a string with `minLength`
/// is padded to it).
pub fn value_for(schema: &Value) -> Value {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|o| o.first())
        {
            return value_for(first);
        }
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        // A union such as ["string", "null"]: its first type.
        Some(Value::Array(kinds)) => kinds.first().and_then(Value::as_str).unwrap_or("string"),
        _ => "string",
    };
    match kind {
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        "object" => Value::Object(Map::new()),
        "array" => match schema.get("items") {
            Some(items) if items.get("enum").is_some() || items.get("anyOf").is_some() => {
                json!([value_for(items)])
            }
            _ => json!([]),
        },
        "null" => Value::Null,
        _ => {
            let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
            let mut text = String::from("test");
            while (text.len() as u64) < min {
                text.push('x');
            }
            Value::String(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_cover_required_properties_only() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "b": {"type": "integer"},
                "note": {"type": "string"},
            },
            "required": ["a", "b"],
        });
        assert_eq!(arguments(&schema), json!({"a": 1, "b": 1}));
        assert_eq!(arguments(&json!({"type": "object"})), json!({}));
    }

    #[test]
    fn form_content_applies_defaults_and_fills_the_rest() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "inactive"},
                "confirmed": {"type": "boolean"},
                "choice": {"type": "string", "oneOf": [{"const": "x", "title": "X"}]},
                "many": {"type": "array", "items": {"type": "string", "enum": ["p", "q"]}},
                "code": {"type": "string", "minLength": 6},
            },
        });
        assert_eq!(
            form_content(Some(&schema)),
            json!({
                "name": "John Doe",
                "age": 30,
                "status": "inactive",
                "confirmed": true,
                "choice": "x",
                "many": ["p"],
                "code": "testxx",
            })
        );
        assert_eq!(form_content(None), json!({}));
    }
}
