//! `x-mcp-header`: which arguments a client mirrors into `Mcp-Param-{Name}` headers.
//!
//! The rules are those of the 2026-07-28 Streamable HTTP transport ("Schema Extension"): the
//! annotation sits inside a property's schema, its value is a non-empty RFC 9110 token that is
//! case-insensitively unique within the `inputSchema`, the property has type `string`,
//! `integer` or `boolean`, and the path from the root to it is a chain of `properties` only
//! (not through `items`, any combinator, a conditional or `$ref`). Any annotation that breaks a
//! rule makes the whole tool definition invalid: [`extract_headers`] is meant to run when a
//! tool is registered, and its error names the offending path.

use std::collections::HashMap;

use mcp_wire::header::{ParamType, is_token};
use serde_json::Value;

use crate::keywords::for_each_subschema;
use crate::pointer;

/// The annotation keyword.
pub const KEYWORD: &str = "x-mcp-header";

/// The prefix of every mirrored header's name.
pub const HEADER_PREFIX: &str = "Mcp-Param-";

/// One annotated property: where its value is in the arguments, and the header it goes to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HeaderBinding {
    property_path: Vec<String>,
    name: String,
    value_type: ParamType,
    nullable: bool,
}

impl HeaderBinding {
    /// The property names from the arguments object down to the annotated property
    /// (`["a", "b"]` for `properties.a.properties.b`).
    pub fn property_path(&self) -> &[String] {
        &self.property_path
    }

    /// The annotation's value, as written (`"Region"`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The full header name, `Mcp-Param-{name}` (`"Mcp-Param-Region"`). Header names are
    /// case-insensitive; this keeps the annotation's spelling.
    pub fn header_name(&self) -> String {
        format!("{HEADER_PREFIX}{}", self.name)
    }

    /// The property's declared type, which fixes how its value is written in the header
    /// (see `mcp_wire::header`).
    pub fn value_type(&self) -> ParamType {
        self.value_type
    }

    /// Whether the property's type also admits `null` (`type: [T, "null"]`).
    pub fn is_nullable(&self) -> bool {
        self.nullable
    }

    /// The argument value to mirror, read at the property path; `None` when it is absent or
    /// `null` (then the client sends no header and the server expects none).
    pub fn value_in<'a>(&self, arguments: &'a Value) -> Option<&'a Value> {
        let mut value = arguments;
        for name in &self.property_path {
            value = value.as_object()?.get(name)?;
        }
        (!value.is_null()).then_some(value)
    }
}

/// Why an `x-mcp-header` annotation makes a tool definition invalid. Each variant carries the
/// JSON Pointer (into the `inputSchema`) of the schema that holds the annotation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderAnnotationError {
    /// The annotation's value is not a JSON string.
    #[error("`x-mcp-header` at {path} must be a string")]
    NotAString {
        /// Where the annotation is.
        path: String,
    },
    /// The annotation's value is the empty string.
    #[error("`x-mcp-header` at {path} must not be empty")]
    Empty {
        /// Where the annotation is.
        path: String,
    },
    /// The value is not an RFC 9110 token (`1*tchar`): it has a space, a control character, a
    /// separator such as `:` or `/`, or a non-ASCII character.
    #[error("`x-mcp-header` {value:?} at {path} is not a header-name token")]
    InvalidToken {
        /// Where the annotation is.
        path: String,
        /// The annotation's value.
        value: String,
    },
    /// Two annotations name the same header, ignoring case.
    #[error(
        "`x-mcp-header` {value:?} at {path} repeats {first_value:?} at {first_path} (names are case-insensitive)"
    )]
    Duplicate {
        /// Where the second annotation is.
        path: String,
        /// Its value.
        value: String,
        /// Where the first one is.
        first_path: String,
        /// Its value.
        first_value: String,
    },
    /// The annotated property's type is not `string`, `integer` or `boolean` (optionally with
    /// `null`), or is not declared by its own `type` keyword.
    #[error(
        "`x-mcp-header` at {path} is on a property of type {found}, not string, integer or boolean"
    )]
    UnsupportedType {
        /// Where the annotation is.
        path: String,
        /// The declared `type`, as JSON (`"number"`, `["string","integer"]`), or `none`.
        found: String,
    },
    /// The annotation is not on a property reached from the root through `properties` only: it
    /// is on the root, or under `items`, a combinator, a conditional, `$defs` or the like.
    #[error(
        "`x-mcp-header` at {path} is not on a property reached from the root through `properties` only"
    )]
    Unreachable {
        /// Where the annotation is.
        path: String,
    },
}

impl HeaderAnnotationError {
    /// The JSON Pointer of the schema holding the offending annotation.
    pub fn path(&self) -> &str {
        match self {
            Self::NotAString { path }
            | Self::Empty { path }
            | Self::InvalidToken { path, .. }
            | Self::Duplicate { path, .. }
            | Self::UnsupportedType { path, .. }
            | Self::Unreachable { path } => path,
        }
    }
}

/// Every `x-mcp-header` binding of an `inputSchema`, in a stable order (the walk visits
/// properties in key order), or the first invalid annotation.
///
/// ```
/// use mcp_schema::extract_headers;
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "region": {"type": "string", "x-mcp-header": "Region"},
///         "query": {"type": "string"},
///     },
/// });
/// let bindings = extract_headers(&schema)?;
/// assert_eq!(bindings.len(), 1);
/// assert_eq!(bindings[0].header_name(), "Mcp-Param-Region");
/// assert_eq!(bindings[0].property_path(), ["region"]);
/// # Ok::<(), mcp_schema::HeaderAnnotationError>(())
/// ```
///
/// # Errors
///
/// [`HeaderAnnotationError`] for the first annotation (in walk order) that breaks a rule.
pub fn extract_headers(schema: &Value) -> Result<Vec<HeaderBinding>, HeaderAnnotationError> {
    let mut walk = Walk {
        bindings: Vec::new(),
        seen: HashMap::new(),
        path: String::new(),
        properties: Vec::new(),
    };
    walk.visit(schema, Reach::Root, 0)?;
    Ok(walk.bindings)
}

/// How the walk reached a subschema.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// The `inputSchema` itself.
    Root,
    /// Through a chain of `properties` from the root.
    Property,
    /// Any other way.
    Elsewhere,
}

struct Walk {
    bindings: Vec<HeaderBinding>,
    /// Lower-cased header name to (path, value) of its first annotation.
    seen: HashMap<String, (String, String)>,
    /// JSON Pointer of the current subschema.
    path: String,
    /// Property names from the root, while `reach` is `Property`.
    properties: Vec<String>,
}

/// Nesting beyond which the walk stops descending. Annotations deeper than this are not
/// looked for; no real tool schema comes close, and it keeps the walk's recursion bounded.
const MAX_WALK_DEPTH: usize = 256;

impl Walk {
    fn visit(
        &mut self,
        schema: &Value,
        reach: Reach,
        depth: usize,
    ) -> Result<(), HeaderAnnotationError> {
        if depth > MAX_WALK_DEPTH {
            return Ok(());
        }
        if let Some(value) = schema.get(KEYWORD) {
            self.annotation(schema, value, reach)?;
        }
        let mut children: Vec<(String, Option<String>, &Value)> = Vec::new();
        for_each_subschema(schema, |keyword, name, sub| {
            children.push((keyword.to_owned(), name, sub));
        });
        for (keyword, name, sub) in children {
            let len = self.path.len();
            pointer::push_token(&mut self.path, &keyword);
            if let Some(name) = &name {
                pointer::push_token(&mut self.path, name);
            }
            let through_properties = keyword == "properties" && reach != Reach::Elsewhere;
            let result = if through_properties {
                self.properties.push(name.unwrap_or_default());
                let r = self.visit(sub, Reach::Property, depth + 1);
                self.properties.pop();
                r
            } else {
                self.visit(sub, Reach::Elsewhere, depth + 1)
            };
            self.path.truncate(len);
            result?;
        }
        Ok(())
    }

    fn annotation(
        &mut self,
        schema: &Value,
        value: &Value,
        reach: Reach,
    ) -> Result<(), HeaderAnnotationError> {
        let path = self.path.clone();
        if reach != Reach::Property {
            return Err(HeaderAnnotationError::Unreachable { path });
        }
        let Value::String(name) = value else {
            return Err(HeaderAnnotationError::NotAString { path });
        };
        if name.is_empty() {
            return Err(HeaderAnnotationError::Empty { path });
        }
        if !is_token(name) {
            return Err(HeaderAnnotationError::InvalidToken {
                path,
                value: name.clone(),
            });
        }
        let (value_type, nullable) =
            property_type(schema).ok_or_else(|| HeaderAnnotationError::UnsupportedType {
                path: path.clone(),
                found: schema
                    .get("type")
                    .map_or_else(|| "none".to_owned(), Value::to_string),
            })?;
        let key = name.to_ascii_lowercase();
        if let Some((first_path, first_value)) = self.seen.get(&key) {
            return Err(HeaderAnnotationError::Duplicate {
                path,
                value: name.clone(),
                first_path: first_path.clone(),
                first_value: first_value.clone(),
            });
        }
        self.seen.insert(key, (path, name.clone()));
        self.bindings.push(HeaderBinding {
            property_path: self.properties.clone(),
            name: name.clone(),
            value_type,
            nullable,
        });
        Ok(())
    }
}

/// The property's own `type`: one of string, integer, boolean, optionally with null.
fn property_type(schema: &Value) -> Option<(ParamType, bool)> {
    let primitive = |t: &str| match t {
        "string" => Some(ParamType::String),
        "integer" => Some(ParamType::Integer),
        "boolean" => Some(ParamType::Boolean),
        _ => None,
    };
    match schema.get("type")? {
        Value::String(t) => Some((primitive(t)?, false)),
        Value::Array(types) => {
            let names: Vec<&str> = types.iter().map(Value::as_str).collect::<Option<_>>()?;
            match names.as_slice() {
                [t] => Some((primitive(t)?, false)),
                [t, "null"] | ["null", t] => Some((primitive(t)?, true)),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn with_property(property: Value) -> Value {
        json!({"type": "object", "properties": {"p": property}})
    }

    #[test]
    fn finds_bindings_through_properties_chains() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "limits": {
                    "type": "object",
                    "properties": {
                        "max": {"type": ["integer", "null"], "x-mcp-header": "Max-Items"},
                        "dry": {"type": "boolean", "x-mcp-header": "Method"}
                    }
                },
                "plain": {"type": "string"}
            }
        });
        let bindings = extract_headers(&schema).unwrap();
        let got: Vec<(Vec<String>, &str, ParamType, bool)> = bindings
            .iter()
            .map(|b| {
                (
                    b.property_path().to_vec(),
                    b.name(),
                    b.value_type(),
                    b.is_nullable(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    vec!["limits".to_owned(), "dry".to_owned()],
                    "Method",
                    ParamType::Boolean,
                    false
                ),
                (
                    vec!["limits".to_owned(), "max".to_owned()],
                    "Max-Items",
                    ParamType::Integer,
                    true
                ),
                (
                    vec!["region".to_owned()],
                    "Region",
                    ParamType::String,
                    false
                ),
            ]
        );
        assert_eq!(bindings[0].header_name(), "Mcp-Param-Method");
        let args = json!({"region": "eu", "limits": {"max": null, "dry": false}});
        assert_eq!(bindings[2].value_in(&args), Some(&json!("eu")));
        assert_eq!(bindings[1].value_in(&args), None, "null means no header");
        assert_eq!(bindings[0].value_in(&args), Some(&json!(false)));
        assert_eq!(bindings[0].value_in(&json!({"limits": 3})), None);
        assert_eq!(extract_headers(&json!({"type": "object"})), Ok(Vec::new()));
    }

    #[test]
    fn accepts_every_tchar() {
        let schema = with_property(json!({"type": "string", "x-mcp-header": "a1!#$%&'*+-.^_`|~Z"}));
        assert_eq!(extract_headers(&schema).unwrap().len(), 1);
    }

    #[test]
    fn rejects_every_broken_rule_naming_the_path() {
        let s = |v: Value| with_property(json!({"type": "string", "x-mcp-header": v}));
        let cases: Vec<(Value, HeaderAnnotationError)> = vec![
            (
                s(json!(7)),
                HeaderAnnotationError::NotAString {
                    path: "/properties/p".into(),
                },
            ),
            (
                s(json!("")),
                HeaderAnnotationError::Empty {
                    path: "/properties/p".into(),
                },
            ),
            (
                s(json!("Has Space")),
                HeaderAnnotationError::InvalidToken {
                    path: "/properties/p".into(),
                    value: "Has Space".into(),
                },
            ),
            (
                s(json!("Line\r\nBreak")),
                HeaderAnnotationError::InvalidToken {
                    path: "/properties/p".into(),
                    value: "Line\r\nBreak".into(),
                },
            ),
            (
                s(json!("Tab\t")),
                HeaderAnnotationError::InvalidToken {
                    path: "/properties/p".into(),
                    value: "Tab\t".into(),
                },
            ),
            (
                s(json!("a:b")),
                HeaderAnnotationError::InvalidToken {
                    path: "/properties/p".into(),
                    value: "a:b".into(),
                },
            ),
            (
                s(json!("Région")),
                HeaderAnnotationError::InvalidToken {
                    path: "/properties/p".into(),
                    value: "Région".into(),
                },
            ),
            (
                json!({"type": "object", "properties": {
                    "a": {"type": "string", "x-mcp-header": "Region"},
                    "b": {"type": "object", "properties": {"c": {"type": "string", "x-mcp-header": "REGION"}}}
                }}),
                HeaderAnnotationError::Duplicate {
                    path: "/properties/b/properties/c".into(),
                    value: "REGION".into(),
                    first_path: "/properties/a".into(),
                    first_value: "Region".into(),
                },
            ),
            (
                with_property(json!({"type": "number", "x-mcp-header": "N"})),
                HeaderAnnotationError::UnsupportedType {
                    path: "/properties/p".into(),
                    found: "\"number\"".into(),
                },
            ),
            (
                with_property(json!({"type": "object", "x-mcp-header": "O"})),
                HeaderAnnotationError::UnsupportedType {
                    path: "/properties/p".into(),
                    found: "\"object\"".into(),
                },
            ),
            (
                with_property(json!({"type": ["string", "integer"], "x-mcp-header": "U"})),
                HeaderAnnotationError::UnsupportedType {
                    path: "/properties/p".into(),
                    found: "[\"string\",\"integer\"]".into(),
                },
            ),
            (
                with_property(json!({"$ref": "#/$defs/S", "x-mcp-header": "R"})),
                HeaderAnnotationError::UnsupportedType {
                    path: "/properties/p".into(),
                    found: "none".into(),
                },
            ),
            (
                json!({"type": "object", "x-mcp-header": "Root"}),
                HeaderAnnotationError::Unreachable { path: "".into() },
            ),
            (
                with_property(
                    json!({"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}),
                ),
                HeaderAnnotationError::Unreachable {
                    path: "/properties/p/items".into(),
                },
            ),
            (
                with_property(
                    json!({"anyOf": [{"type": "string", "x-mcp-header": "A"}, {"type": "null"}]}),
                ),
                HeaderAnnotationError::Unreachable {
                    path: "/properties/p/anyOf/0".into(),
                },
            ),
            (
                json!({"type": "object", "$defs": {"S": {"type": "string", "x-mcp-header": "D"}},
                       "properties": {"p": {"$ref": "#/$defs/S"}}}),
                HeaderAnnotationError::Unreachable {
                    path: "/$defs/S".into(),
                },
            ),
            (
                json!({"type": "object", "allOf": [{"properties": {"p": {"type": "string", "x-mcp-header": "P"}}}]}),
                HeaderAnnotationError::Unreachable {
                    path: "/allOf/0/properties/p".into(),
                },
            ),
            (
                json!({"type": "object", "if": {"properties": {"p": {"type": "string", "x-mcp-header": "P"}}}}),
                HeaderAnnotationError::Unreachable {
                    path: "/if/properties/p".into(),
                },
            ),
            (
                json!({"type": "object", "additionalProperties": {"type": "string", "x-mcp-header": "P"}}),
                HeaderAnnotationError::Unreachable {
                    path: "/additionalProperties".into(),
                },
            ),
            (
                json!({"type": "object", "patternProperties": {"^a": {"type": "string", "x-mcp-header": "P"}}}),
                HeaderAnnotationError::Unreachable {
                    path: "/patternProperties/^a".into(),
                },
            ),
        ];
        for (schema, expected) in cases {
            let got = extract_headers(&schema);
            assert_eq!(got, Err(expected.clone()), "{schema}");
            let message = got.unwrap_err().to_string();
            assert!(
                message.contains(expected.path()) || expected.path().is_empty(),
                "{message}"
            );
        }
    }
}
