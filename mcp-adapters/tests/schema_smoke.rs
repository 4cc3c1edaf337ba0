//! Quick check that the schema helper works.
mod common;
use mcp_adapters::Revision;
use serde_json::json;

#[test]
fn helper_accepts_and_rejects() {
    for r in Revision::ALL {
        common::assert_valid(
            r,
            "JSONRPCNotification",
            &json!({"jsonrpc": "2.0", "method": "x"}),
        );
        common::assert_invalid(
            r,
            "JSONRPCNotification",
            &json!({"jsonrpc": "1.0", "method": "x"}),
        );
    }
}
