//! Sampling: `sampling/createMessage` (a server → client request up to 2025-11-25, an embedded
//! MRTR input request in 2026-07-28; deprecated there).

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{Extra, Role, number, tags};
use super::content::ContentBlock;
use super::tasks::TaskMetadata;
use super::tools::Tool;

/// A message to or from the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who speaks.
    pub role: Role,
    /// One block, or (2025-11-25 onwards) several.
    pub content: SamplingContent,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The content of a sampling message: one block, or an array of blocks (2025-11-25 onwards).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // reason: a single block is the common form; a Box would add an allocation per message
pub enum SamplingContent {
    /// A single block (every revision).
    Single(ContentBlock),
    /// Several blocks.
    Multiple(Vec<ContentBlock>),
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        match Value::deserialize(deserializer)? {
            Value::Array(items) => Vec::<ContentBlock>::deserialize(Value::Array(items))
                .map(Self::Multiple)
                .map_err(D::Error::custom),
            other => ContentBlock::deserialize(other)
                .map(Self::Single)
                .map_err(D::Error::custom),
        }
    }
}

impl SamplingContent {
    /// The blocks, whichever the form.
    pub fn blocks(&self) -> &[ContentBlock] {
        match self {
            Self::Single(block) => std::slice::from_ref(block),
            Self::Multiple(blocks) => blocks,
        }
    }
}

/// A hint naming a model (family).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelHint {
    /// A full or partial model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The server's preferences for model selection. Priorities go from 0 to 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model hints, most preferred first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "number::option::serialize"
    )]
    pub cost_priority: Option<f64>,
    /// How much speed matters.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "number::option::serialize"
    )]
    pub speed_priority: Option<f64>,
    /// How much capability matters.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "number::option::serialize"
    )]
    pub intelligence_priority: Option<f64>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Which MCP servers' context to include in a sampling prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum IncludeContext {
    /// No context (the default).
    None,
    /// The requesting server's context (soft-deprecated from 2025-11-25).
    ThisServer,
    /// Every connected server's context (soft-deprecated from 2025-11-25).
    AllServers,
}

/// How the model may use tools in sampling (2025-11-25 onwards).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ToolChoiceMode {
    /// The model decides (the default).
    Auto,
    /// The model must not use tools.
    None,
    /// The model must use a tool.
    Required,
}

/// Tool choice of a sampling request (2025-11-25 onwards).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// The mode; absent means auto.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// Model preferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// System prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Context to include.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "number::option::serialize"
    )]
    pub temperature: Option<f64>,
    /// Most tokens to sample.
    pub max_tokens: u64,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Tools the model may use (2025-11-25 onwards; needs `sampling.tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// Tool choice (2025-11-25 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Run as a task (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `sampling/createMessage` (an MRTR input response in 2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who speaks (the assistant).
    pub role: Role,
    /// What the model said.
    pub content: SamplingContent,
    /// The model used.
    pub model: String,
    /// Why sampling stopped: `endTurn`, `stopSequence`, `maxTokens`, `toolUse` or another string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An embedded `sampling/createMessage` request, `{method, params}` with no `jsonrpc` or `id`
/// (a 2026-07-28 MRTR input request).
///
/// For the JSON-RPC request of earlier revisions use
/// [`TypedRequest<methods::CreateMessage>`](super::TypedRequest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateMessageRequest {
    /// Always `sampling/createMessage`.
    pub method: tags::SamplingCreateMessage,
    /// The params.
    pub params: CreateMessageRequestParams,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}
