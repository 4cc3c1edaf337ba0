//! A compact JSON writer for the encoder's hot path: the same bytes `serde_json::to_writer`
//! writes for the same values, without going through a `Serializer` for every member.
//!
//! Strings that need no escaping (nearly all of them) are copied whole; any other string, and
//! every number, is written by serde_json itself, so escapes and number formats cannot drift.

use mcp_wire::jsonrpc::Id;
use serde::Serialize;
use serde_json::{Map, Value};

/// Whether `byte` must be escaped inside a JSON string (serde_json escapes exactly these).
const fn needs_escape(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// Appends `text` as a JSON string.
pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    // No early exit: the loop stays simple enough to be vectorized.
    let escape = bytes.iter().fold(false, |acc, &b| acc | needs_escape(b));
    if escape {
        write_serialized(out, text);
        return;
    }
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    out.extend_from_slice(bytes);
    out.push(b'"');
}

/// Appends `value` as serde_json writes it (numbers, and strings with escapes).
fn write_serialized<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Cannot fail: the writer is a Vec, and numbers and strings always serialize.
    let _ = value.serialize(&mut serde_json::Serializer::new(out));
}

/// Appends `value` as compact JSON.
pub(crate) fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_serialized(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => write_array(out, items),
        Value::Object(map) => write_object(out, map),
    }
}

/// Appends one object member, `"key":value`, without a separator.
pub(crate) fn write_member(out: &mut Vec<u8>, key: &str, value: &Value) {
    write_str(out, key);
    out.push(b':');
    write_value(out, value);
}

/// Appends `map` as a JSON object, members in the map's order.
pub(crate) fn write_object(out: &mut Vec<u8>, map: &Map<String, Value>) {
    out.push(b'{');
    let mut first = true;
    for (key, value) in map {
        if !first {
            out.push(b',');
        }
        first = false;
        write_member(out, key, value);
    }
    out.push(b'}');
}

/// Appends `items` as a JSON array.
pub(crate) fn write_array(out: &mut Vec<u8>, items: &[Value]) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_value(out, item);
    }
    out.push(b']');
}

/// Appends a JSON-RPC id.
pub(crate) fn write_id(out: &mut Vec<u8>, id: &Id) {
    match id {
        Id::Number(n) => write_serialized(out, n),
        Id::String(s) => write_str(out, s),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn written(value: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        write_value(&mut out, value);
        out
    }

    #[test]
    fn writes_what_serde_json_writes() {
        for value in [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-1),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.5),
            json!(1e300),
            json!(-0.0),
            json!(""),
            json!("plain"),
            json!("q\"b\\n\nt\tc\u{1}d\u{1f}e\u{7f}é😀"),
            json!([]),
            json!({}),
            json!([1, [2, [3, {}]], {"a": []}]),
            json!({"type": "text", "text": "{\"sum\":5}", "z": {"y": null, "x": [true]}}),
        ] {
            assert_eq!(
                written(&value),
                serde_json::to_vec(&value).unwrap(),
                "{value}"
            );
        }
        for id in [
            Id::Number(i64::MIN),
            Id::Number(7),
            Id::from("a\"b"),
            Id::from(""),
        ] {
            let mut out = Vec::new();
            write_id(&mut out, &id);
            assert_eq!(out, serde_json::to_vec(&id).unwrap());
        }
    }

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
            "[ -~]{0,40}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::btree_map(any::<String>(), inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_value_is_written_as_serde_json_writes_it(value in any_value()) {
            prop_assert_eq!(written(&value), serde_json::to_vec(&value).unwrap());
        }
    }
}
