//! Utilities: cancellation, progress, logging and completion.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{Extra, LoggingLevel, ProgressToken, ResultType, number};
use crate::jsonrpc::Id;

/// Params of `notifications/cancelled`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The id of the request to cancel. Required in every revision but 2025-11-25.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<Id>,
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `notifications/progress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The `progressToken` of the request this reports on.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with every notification. Integral values are written as integers.
    #[serde(serialize_with = "number::serialize")]
    pub progress: f64,
    /// The total, if known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "number::option::serialize"
    )]
    pub total: Option<f64>,
    /// A human-readable message (2025-03-26 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `logging/setLevel` (2024-11-05 to 2025-11-25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetLevelRequestParams {
    /// The least severe level the client wants.
    pub level: LoggingLevel,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `notifications/message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageNotificationParams {
    /// Severity.
    pub level: LoggingLevel,
    /// Name of the logger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON value.
    pub data: Value,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a completion is for, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionReference {
    /// `ref/prompt`: an argument of a prompt.
    #[serde(rename = "ref/prompt")]
    Prompt(PromptReference),
    /// `ref/resource`: a variable of a resource template.
    #[serde(rename = "ref/resource")]
    Resource(ResourceTemplateReference),
}

/// A reference to a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptReference {
    /// The prompt's name.
    pub name: String,
    /// Display name (2025-06-18 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A reference to a resource template (`ResourceReference` before 2025-06-18).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceTemplateReference {
    /// The URI template.
    pub uri: String,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// The argument's name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Context of a completion (2025-06-18 onwards).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Values of arguments already resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteRequestParams {
    /// What is being completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument and its partial value.
    pub argument: CompletionArgument,
    /// Context (2025-06-18 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
    /// `_meta`; required in 2026-07-28.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The completion values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Suggested values (at most 100).
    pub values: Vec<String>,
    /// How many values exist in total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more values than returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `completion/complete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The values.
    pub completion: Completion,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}
