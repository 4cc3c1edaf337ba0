//! Roots: `roots/list` (a server → client request up to 2025-11-25, an embedded MRTR input request
//! in 2026-07-28; deprecated there).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{Extra, tags};
use super::lifecycle::RequestParams;

/// A directory or file the client exposes to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Root {
    /// A root with a URI and an optional name.
    pub fn new(uri: impl Into<String>, name: Option<String>) -> Self {
        Self {
            uri: uri.into(),
            name,
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// Result of `roots/list` (an MRTR input response in 2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An embedded `roots/list` request, `{method, params?}` with no `jsonrpc` (a 2026-07-28 MRTR
/// input request).
///
/// For the JSON-RPC request of earlier revisions use
/// [`TypedRequest<methods::ListRoots>`](super::TypedRequest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsRequest {
    /// Always `roots/list`.
    pub method: tags::RootsList,
    /// The params, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<RequestParams>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}
