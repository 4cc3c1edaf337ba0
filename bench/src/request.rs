//! The JSON-RPC bodies the load generator sends, written into a reused buffer.
//!
//! Bodies are compact JSON built by hand: the call loop formats an id into a buffer it keeps,
//! with no allocation.

use std::io::Write as _;

use crate::Revision;

/// The `clientInfo` the load generator announces.
pub const CLIENT_NAME: &str = "mcp-load";

/// The arguments every call sends: `add {a: 2, b: 3}`.
pub const ADD_A: i64 = 2;
/// See [`ADD_A`].
pub const ADD_B: i64 = 3;
/// The sum every reply must carry.
pub const EXPECTED_SUM: i64 = ADD_A + ADD_B;

/// Writes the `initialize` request with id 0 for a handshake revision into `out` (cleared
/// first).
pub fn write_initialize(out: &mut Vec<u8>, revision: Revision) {
    out.clear();
    // Writing to a Vec cannot fail.
    let _ = write!(
        out,
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{}","capabilities":{{}},"clientInfo":{{"name":"{CLIENT_NAME}","version":"{}"}}}}}}"#,
        revision.as_str(),
        env!("CARGO_PKG_VERSION"),
    );
}

/// The `notifications/initialized` body.
pub const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Writes `tools/call add {a: 2, b: 3}` with the given id into `out` (cleared first).
///
/// On 2026-07-28 `params._meta` carries the protocol version, empty client capabilities and
/// the client info; with `trace`, `params._meta.traceparent` carries it on every revision.
pub fn write_add_call(out: &mut Vec<u8>, revision: Revision, id: u64, trace: Option<&str>) {
    out.clear();
    let _ = write!(
        out,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":{ADD_A},"b":{ADD_B}}}"#
    );
    if !revision.has_handshake() {
        let _ = write!(
            out,
            r#","_meta":{{"io.modelcontextprotocol/protocolVersion":"{}","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"{CLIENT_NAME}","version":"{}"}}"#,
            revision.as_str(),
            env!("CARGO_PKG_VERSION"),
        );
        if let Some(trace) = trace {
            let _ = write!(out, r#","traceparent":"{trace}""#);
        }
        out.push(b'}');
    } else if let Some(trace) = trace {
        let _ = write!(out, r#","_meta":{{"traceparent":"{trace}"}}"#);
    }
    out.extend_from_slice(b"}}");
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn add_call_per_revision() {
        let mut buf = Vec::new();
        for revision in Revision::ALL {
            write_add_call(&mut buf, revision, 42, None);
            let value: Value = serde_json::from_slice(&buf).expect("valid JSON");
            assert_eq!(value["jsonrpc"], "2.0");
            assert_eq!(value["id"], 42);
            assert_eq!(value["method"], "tools/call");
            assert_eq!(value["params"]["name"], "add");
            assert_eq!(value["params"]["arguments"], json!({"a": 2, "b": 3}));
            let meta = &value["params"]["_meta"];
            if revision == Revision::V2026_07_28 {
                assert_eq!(
                    meta["io.modelcontextprotocol/protocolVersion"],
                    "2026-07-28"
                );
                assert_eq!(
                    meta["io.modelcontextprotocol/clientCapabilities"],
                    json!({})
                );
                assert_eq!(
                    meta["io.modelcontextprotocol/clientInfo"]["name"],
                    CLIENT_NAME
                );
            } else {
                assert!(meta.is_null(), "{revision}: no _meta before 2026-07-28");
            }
            // Traced: the context joins `_meta`, whatever else it holds.
            let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
            write_add_call(&mut buf, revision, 43, Some(trace));
            let traced: Value = serde_json::from_slice(&buf).expect("valid JSON");
            assert_eq!(
                traced["params"]["_meta"]["traceparent"], trace,
                "{revision}"
            );
            assert_eq!(traced["params"]["arguments"], json!({"a": 2, "b": 3}));
            if revision == Revision::V2026_07_28 {
                assert_eq!(traced["params"]["_meta"].as_object().unwrap().len(), 4);
            }
        }
    }

    #[test]
    fn initialize_names_the_revision_and_buffer_is_reused() {
        let mut buf = b"left over".to_vec();
        write_initialize(&mut buf, Revision::V2025_06_18);
        let value: Value = serde_json::from_slice(&buf).expect("valid JSON");
        assert_eq!(value["id"], 0);
        assert_eq!(value["method"], "initialize");
        assert_eq!(value["params"]["protocolVersion"], "2025-06-18");
        assert_eq!(value["params"]["capabilities"], json!({}));
        let value: Value = serde_json::from_slice(INITIALIZED).expect("valid JSON");
        assert_eq!(value["method"], "notifications/initialized");
        assert!(value.get("id").is_none());
    }
}
