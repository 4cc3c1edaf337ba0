//! `x-mcp-header` bindings of a tool's input schema (2026-07-28), and the headers mirrored from
//! a call's arguments.
//!
//! Private shim: the extraction in `mcp-schema` was not yet written when this client was.

use std::borrow::Cow;

use http::{HeaderMap, HeaderName, HeaderValue};
use mcp_wire::header::{encode_argument, is_token};
use serde_json::Value;

/// One annotated property: where its value sits in the arguments and the header it goes in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Binding {
    path: Vec<String>,
    header: HeaderName,
}

/// Keywords whose values are data, not schemas: an `x-mcp-header` key inside them is not an
/// annotation.
const DATA_KEYWORDS: [&str; 4] = ["const", "default", "examples", "enum"];

/// Reads the bindings of `input_schema`, or says why the tool definition is invalid.
pub(crate) fn bindings(input_schema: &Value) -> Result<Vec<Binding>, String> {
    let mut out: Vec<Binding> = Vec::new();
    walk(input_schema, Some(&mut Vec::new()), &mut out)?;
    for (i, b) in out.iter().enumerate() {
        if out[..i].iter().any(|o| o.header == b.header) {
            return Err(format!(
                "x-mcp-header {:?} is not unique",
                b.header.as_str()
            ));
        }
    }
    Ok(out)
}

fn walk(
    node: &Value,
    path: Option<&mut Vec<String>>,
    out: &mut Vec<Binding>,
) -> Result<(), String> {
    match node {
        Value::Array(items) => {
            for item in items {
                walk(item, None, out)?;
            }
            Ok(())
        }
        Value::Object(map) => {
            let mut path = path;
            if let Some(annotation) = map.get("x-mcp-header") {
                match path.as_deref() {
                    Some(p) if !p.is_empty() => out.push(binding(p, map, annotation)?),
                    _ => {
                        return Err(
                            "x-mcp-header on a property that is not statically reachable".into(),
                        );
                    }
                }
            }
            for (key, child) in map {
                if key == "x-mcp-header" || DATA_KEYWORDS.contains(&key.as_str()) {
                    continue;
                }
                if key == "properties"
                    && let Value::Object(props) = child
                {
                    for (name, schema) in props {
                        match path.as_deref_mut() {
                            Some(p) => {
                                p.push(name.clone());
                                let r = walk(schema, Some(p), out);
                                p.pop();
                                r?;
                            }
                            None => walk(schema, None, out)?,
                        }
                    }
                    continue;
                }
                walk(child, None, out)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn binding(
    path: &[String],
    schema: &serde_json::Map<String, Value>,
    annotation: &Value,
) -> Result<Binding, String> {
    let Some(name) = annotation.as_str() else {
        return Err("x-mcp-header is not a string".into());
    };
    if name.is_empty() || !is_token(name) {
        return Err(format!("x-mcp-header {name:?} is not an HTTP token"));
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string" | "integer" | "boolean") => {}
        _ => {
            return Err(format!(
                "x-mcp-header {name:?} is not on a string, integer or boolean property"
            ));
        }
    }
    let header = HeaderName::try_from(format!("mcp-param-{}", name.to_ascii_lowercase()))
        .map_err(|_| format!("x-mcp-header {name:?} is not a valid header name"))?;
    Ok(Binding {
        path: path.to_vec(),
        header,
    })
}

/// Adds the `Mcp-Param-*` headers `bindings` ask for, from `arguments`. A value that is absent
/// or `null` gets no header; one that cannot be encoded gets none either (the server will say).
pub(crate) fn mirror(bindings: &[Binding], arguments: Option<&Value>, headers: &mut HeaderMap) {
    let Some(arguments) = arguments else { return };
    for b in bindings {
        let mut value = arguments;
        let mut found = true;
        for key in &b.path {
            match value.get(key) {
                Some(v) => value = v,
                None => {
                    found = false;
                    break;
                }
            }
        }
        if !found {
            continue;
        }
        if let Ok(Some(text)) = encode_argument(value)
            && let Ok(v) = HeaderValue::try_from(text)
        {
            headers.insert(b.header.clone(), v);
        }
    }
}

/// The header value for `Mcp-Name`, base64-wrapped when the text is not plain.
pub(crate) fn name_value(text: &str) -> Option<HeaderValue> {
    let encoded: Cow<'_, str> = mcp_wire::header::encode_text(text);
    HeaderValue::try_from(encoded.as_ref()).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn valid_and_invalid_annotations() {
        let ok = |s: Value| {
            bindings(&s).map(|b| {
                b.iter()
                    .map(|b| (b.path.join("."), b.header.to_string()))
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            ok(json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "nested": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
                "plain": {"type": "string", "default": {"x-mcp-header": "ignored"}}
            }})),
            Ok(vec![
                ("nested.n".into(), "mcp-param-n".into()),
                ("region".into(), "mcp-param-region".into())
            ])
        );
        let invalid = [
            json!({"type": "object", "properties": {"f": {"type": "number", "x-mcp-header": "F"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "bad name"}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"type": "object", "oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
            json!({"type": "object", "x-mcp-header": "Root"}),
        ];
        for schema in invalid {
            assert!(bindings(&schema).is_err(), "{schema}");
        }
    }

    #[test]
    fn mirrors_present_values_only() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"}
        }});
        let b = bindings(&schema).unwrap();
        let mut headers = HeaderMap::new();
        mirror(
            &b,
            Some(&json!({"region": "Hello, 世界", "n": 42, "flag": null})),
            &mut headers,
        );
        assert_eq!(
            headers.get("mcp-param-region").unwrap(),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(headers.get("mcp-param-n").unwrap(), "42");
        assert!(headers.get("mcp-param-flag").is_none());
        assert_eq!(name_value(" padded ").unwrap(), "=?base64?IHBhZGRlZCA=?=");
    }
}
