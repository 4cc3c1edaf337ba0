//! JSON Schema derivation with schemars, once per declared type.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// Whether a schema describes what a handler reads (its arguments) or what it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Arguments: the schema describes what deserializes.
    Input,
    /// Output: the schema describes what serializes.
    Output,
}

/// The JSON Schema 2020-12 of `T`, as schemars derives it (with `$schema`, `$defs` kept).
pub(crate) fn derive<T: JsonSchema + ?Sized>(purpose: Purpose) -> Value {
    let settings = SchemaSettings::draft2020_12();
    let settings = match purpose {
        Purpose::Input => settings.for_deserialize(),
        Purpose::Output => settings.for_serialize(),
    };
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// Takes the doc comment schemars put at the root of `schema` (its `description`) and gives it
/// back, for the tool's own description: at the root of the input schema it would only repeat
/// it. (The root `title` schemars writes is the type's name, left as it is.)
pub(crate) fn take_doc(schema: &mut Value) -> Option<String> {
    match schema.as_object_mut()?.remove("description")? {
        Value::String(text) => Some(text),
        _ => None,
    }
}

/// The root of `schema` is an object schema (`"type": "object"`), as `inputSchema` requires.
pub(crate) fn is_object_rooted(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        _ => false,
    }
}
