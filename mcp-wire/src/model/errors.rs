//! `data` shapes of the MCP-defined JSON-RPC errors.

use serde::{Deserialize, Serialize};

use super::capabilities::ClientCapabilities;
use super::common::Extra;
use super::elicitation::ElicitRequestUrlParams;
use crate::jsonrpc::ErrorObject;
use crate::names::error_code;

/// `data` of -32021 MissingRequiredClientCapability (2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingRequiredClientCapabilityData {
    /// The capabilities the request needs and did not declare.
    pub required_capabilities: ClientCapabilities,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `data` of -32022 UnsupportedProtocolVersion (2026-07-28), and of the -32602 example error for
/// an unsupported `initialize` version in earlier revisions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnsupportedProtocolVersionData {
    /// Every revision the server supports.
    pub supported: Vec<String>,
    /// The revision the client asked for.
    pub requested: String,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `data` of -32042 URLElicitationRequired (2025-11-25 only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UrlElicitationRequiredData {
    /// The URL elicitations to complete before retrying.
    pub elicitations: Vec<ElicitRequestUrlParams>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// -32020 HeaderMismatch (no `data` is defined).
pub fn header_mismatch(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(error_code::HEADER_MISMATCH, message)
}

/// -32021 MissingRequiredClientCapability with its `data`.
pub fn missing_required_client_capability(
    message: impl Into<String>,
    required_capabilities: ClientCapabilities,
) -> ErrorObject<MissingRequiredClientCapabilityData> {
    ErrorObject::new(error_code::MISSING_REQUIRED_CLIENT_CAPABILITY, message).with_data(
        MissingRequiredClientCapabilityData {
            required_capabilities,
            extra: Extra::new(),
        },
    )
}

/// -32022 UnsupportedProtocolVersion with its `data`.
pub fn unsupported_protocol_version(
    supported: Vec<String>,
    requested: impl Into<String>,
) -> ErrorObject<UnsupportedProtocolVersionData> {
    ErrorObject::new(
        error_code::UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
    )
    .with_data(UnsupportedProtocolVersionData {
        supported,
        requested: requested.into(),
        extra: Extra::new(),
    })
}
