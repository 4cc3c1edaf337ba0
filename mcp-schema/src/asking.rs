//! The `mcpAnswers`/`mcpState` input properties of the 2025-03-26 and 2024-11-05
//! "asking in the tool call" mechanism.
//!
//! Those revisions cannot push a question to the client in the middle of a call. A tool whose
//! handler can ask instead returns its questions in an ordinary result, and the client calls the
//! tool again with the user's answers in `mcpAnswers` (question id to answer) and the opaque
//! `mcpState` from that result. For a legacy client to send them, the tool's projected
//! `inputSchema` must declare them: that is the schema transformation here.
//!
//! The server validates arguments against the *declared* schema, which knows nothing of these
//! two properties (and may forbid additional ones), so the adapter removes `mcpAnswers` and
//! `mcpState` from the arguments before validating them.

use serde_json::{Map, Value, json};

/// The property carrying the answers: an object mapping question id to answer.
pub const MCP_ANSWERS: &str = "mcpAnswers";

/// The property carrying the opaque request state, a string.
pub const MCP_STATE: &str = "mcpState";

/// Why the asking properties cannot be added.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AskingPropertiesError {
    /// The schema is not an object with `type: "object"` (pass a projected input schema).
    #[error("the input schema is not an object schema with `type: \"object\"`")]
    NotAnObjectSchema,
    /// The tool already declares a property of that name.
    #[error("the tool already declares a property named {name:?}")]
    Collision {
        /// The property name.
        name: &'static str,
    },
}

/// Adds the optional `mcpAnswers` and `mcpState` properties to a projected input schema.
///
/// Neither is required: the first call carries neither. `mcpAnswers` maps each question id to
/// an elicitation answer (`{"action": "accept" | "decline" | "cancel", "content": {...}}`);
/// `mcpState` is the string the tool's previous result gave.
///
/// ```
/// use mcp_schema::{with_asking_properties, MCP_ANSWERS, MCP_STATE};
/// use serde_json::json;
///
/// let schema = with_asking_properties(&json!({"type": "object", "properties": {}}))?;
/// assert_eq!(schema["properties"][MCP_STATE]["type"], "string");
/// assert_eq!(schema["properties"][MCP_ANSWERS]["type"], "object");
/// # Ok::<(), mcp_schema::AskingPropertiesError>(())
/// ```
///
/// # Errors
///
/// [`AskingPropertiesError`] if `schema` is not an object-root schema or already declares
/// either property.
pub fn with_asking_properties(schema: &Value) -> Result<Value, AskingPropertiesError> {
    let Some(map) = schema
        .as_object()
        .filter(|m| m.get("type") == Some(&json!("object")))
    else {
        return Err(AskingPropertiesError::NotAnObjectSchema);
    };
    let mut map = map.clone();
    let properties = map
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(properties) = properties else {
        return Err(AskingPropertiesError::NotAnObjectSchema);
    };
    for name in [MCP_ANSWERS, MCP_STATE] {
        if properties.contains_key(name) {
            return Err(AskingPropertiesError::Collision { name });
        }
    }
    properties.insert(MCP_ANSWERS.to_owned(), answers_schema());
    properties.insert(MCP_STATE.to_owned(), state_schema());
    Ok(Value::Object(map))
}

fn answers_schema() -> Value {
    json!({
        "type": "object",
        "description": "Answers to the questions this tool asked in its previous result, keyed by question id. Omit on the first call; on a retry send them together with mcpState.",
        "additionalProperties": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["accept", "decline", "cancel"]},
                "content": {"type": "object"}
            },
            "required": ["action"]
        }
    })
}

fn state_schema() -> Value {
    json!({
        "type": "string",
        "description": "The opaque state from this tool's previous result, sent back unchanged with mcpAnswers. Omit on the first call."
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_two_optional_properties_and_keeps_the_rest() {
        let schema = json!({
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"],
            "additionalProperties": false
        });
        let out = with_asking_properties(&schema).unwrap();
        assert_eq!(out["required"], json!(["q"]));
        assert_eq!(out["additionalProperties"], json!(false));
        assert_eq!(out["properties"]["q"], json!({"type": "string"}));
        assert_eq!(out["properties"].as_object().unwrap().len(), 3);
        let no_props = with_asking_properties(&json!({"type": "object"})).unwrap();
        assert_eq!(no_props["properties"].as_object().unwrap().len(), 2);
    }

    #[test]
    fn refuses_collisions_and_non_object_schemas() {
        let cases = [
            (
                json!({"type": "string"}),
                AskingPropertiesError::NotAnObjectSchema,
            ),
            (json!(true), AskingPropertiesError::NotAnObjectSchema),
            (
                json!({"type": "object", "properties": 3}),
                AskingPropertiesError::NotAnObjectSchema,
            ),
            (
                json!({"type": "object", "properties": {"mcpState": {}}}),
                AskingPropertiesError::Collision { name: MCP_STATE },
            ),
            (
                json!({"type": "object", "properties": {"mcpAnswers": {}}}),
                AskingPropertiesError::Collision { name: MCP_ANSWERS },
            ),
        ];
        for (schema, expected) in cases {
            assert_eq!(with_asking_properties(&schema), Err(expected), "{schema}");
        }
    }
}
