//! Client and server capabilities, as the superset of every revision.
//!
//! A capability that is present but empty (`{}`) is `Some` of an empty value; an absent one is
//! `None`. Sub-capabilities the specification types as "any JSON object" are kept as maps.

use serde::{Deserialize, Serialize};

use super::common::Extra;

/// What a client supports (`capabilities` of `initialize`, or
/// `_meta["io.modelcontextprotocol/clientCapabilities"]` in 2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// Non-standard experimental capabilities, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Extra>,
    /// Roots (deprecated in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// Sampling (deprecated in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// Elicitation (2025-06-18 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Experimental tasks (2025-11-25), kept as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Extra>,
    /// Extensions by identifier, each with its settings object (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Extra>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The client's `roots` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootsCapability {
    /// Whether the client sends `notifications/roots/list_changed` (up to 2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The client's `sampling` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingCapability {
    /// Support for `includeContext` other than `"none"` (2025-11-25 onwards; soft-deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Extra>,
    /// Support for `tools` and `toolChoice` in sampling requests (2025-11-25 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Extra>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The client's `elicitation` capability. An empty object means form mode only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitationCapability {
    /// Form mode (2025-11-25 onwards; implied by an empty capability).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<Extra>,
    /// URL mode (2025-11-25 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<Extra>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitationCapability {
    /// Whether form mode is supported: declared explicitly, or implied by declaring neither mode.
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// Whether URL mode is supported.
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

/// What a server supports (`capabilities` of `initialize` or `server/discover`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Non-standard experimental capabilities, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Extra>,
    /// Log messages (`notifications/message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Extra>,
    /// Argument completion (`completion/complete`, 2025-03-26 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Extra>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Experimental tasks (2025-11-25), kept as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Extra>,
    /// Extensions by identifier, each with its settings object (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Extra>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The server's `prompts` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// Whether the server sends `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The server's `resources` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether clients may subscribe to individual resources' updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether the server sends `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The server's `tools` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Whether the server sends `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}
