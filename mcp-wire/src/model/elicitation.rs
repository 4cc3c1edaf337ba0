//! Elicitation: `elicitation/create` (a server → client request in 2025-06-18 and 2025-11-25, an
//! embedded MRTR input request in 2026-07-28), its restricted schemas and its result.

use std::collections::BTreeMap;

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{Extra, from_map, number, tags};
use super::tasks::TaskMetadata;

/// Params of `elicitation/create`: form mode or URL mode.
///
/// `"mode": "url"` selects [`Url`](Self::Url); anything else (including no `mode`, as in
/// 2025-06-18) is [`Form`](Self::Form).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// Ask for structured data in a form.
    Form(ElicitRequestFormParams),
    /// Send the user to a URL (2025-11-25 onwards).
    Url(ElicitRequestUrlParams),
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        if map.get("mode").and_then(Value::as_str) == Some(tags::UrlMode::VALUE) {
            from_map::<_, D::Error>(map).map(Self::Url)
        } else {
            from_map::<_, D::Error>(map).map(Self::Form)
        }
    }
}

impl ElicitRequestParams {
    /// The message shown to the user.
    pub fn message(&self) -> &str {
        match self {
            Self::Form(form) => &form.message,
            Self::Url(url) => &url.message,
        }
    }
}

/// Params of a form-mode elicitation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// `"form"` when written explicitly (2025-11-25 onwards); absent means form too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<tags::FormMode>,
    /// The message shown to the user.
    pub message: String,
    /// The form: a flat object of primitive properties.
    pub requested_schema: ElicitationSchema,
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

/// Params of a URL-mode elicitation (2025-11-25 onwards).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestUrlParams {
    /// Always `"url"`.
    pub mode: tags::UrlMode,
    /// The message shown to the user.
    pub message: String,
    /// The URL to open.
    pub url: String,
    /// Correlation id for `notifications/elicitation/complete` (2025-11-25 only; removed in
    /// 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
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

/// The `requestedSchema` of a form elicitation: an object schema whose properties are primitive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationSchema {
    /// `$schema`, if given.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub kind: tags::ObjectType,
    /// The fields.
    pub properties: BTreeMap<String, PrimitiveSchema>,
    /// Names of the required fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The schema of one form field.
///
/// Chosen by `type` and the keywords present: `"string"` with `enum` and `enumNames` is
/// [`LegacyTitledEnum`](Self::LegacyTitledEnum), with `enum` alone
/// [`UntitledSingleSelectEnum`](Self::UntitledSingleSelectEnum), with `oneOf`
/// [`TitledSingleSelectEnum`](Self::TitledSingleSelectEnum), otherwise [`String`](Self::String);
/// `"number"` or `"integer"` is [`Number`](Self::Number); `"boolean"` is
/// [`Boolean`](Self::Boolean); `"array"` with `items.anyOf` is
/// [`TitledMultiSelectEnum`](Self::TitledMultiSelectEnum), otherwise
/// [`UntitledMultiSelectEnum`](Self::UntitledMultiSelectEnum). Any other `type` is kept as
/// [`Other`](Self::Other).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum PrimitiveSchema {
    /// A string.
    String(StringSchema),
    /// A number or integer.
    Number(NumberSchema),
    /// A boolean.
    Boolean(BooleanSchema),
    /// One of a list of strings (2025-11-25 onwards).
    UntitledSingleSelectEnum(UntitledSingleSelectEnumSchema),
    /// One of a list of titled options (2025-11-25 onwards).
    TitledSingleSelectEnum(TitledSingleSelectEnumSchema),
    /// Several of a list of strings (2025-11-25 onwards).
    UntitledMultiSelectEnum(UntitledMultiSelectEnumSchema),
    /// Several of a list of titled options (2025-11-25 onwards).
    TitledMultiSelectEnum(TitledMultiSelectEnumSchema),
    /// `enum` with `enumNames` (2025-06-18; deprecated from 2025-11-25).
    LegacyTitledEnum(LegacyTitledEnumSchema),
    /// A schema of a `type` none of the above covers, kept verbatim.
    Other(Map<String, Value>),
}

impl<'de> Deserialize<'de> for PrimitiveSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        let has = |key: &str| map.contains_key(key);
        match map.get("type").and_then(Value::as_str) {
            Some("string") if has("enum") && has("enumNames") => {
                from_map::<_, D::Error>(map).map(Self::LegacyTitledEnum)
            }
            Some("string") if has("enum") => {
                from_map::<_, D::Error>(map).map(Self::UntitledSingleSelectEnum)
            }
            Some("string") if has("oneOf") => {
                from_map::<_, D::Error>(map).map(Self::TitledSingleSelectEnum)
            }
            Some("string") => from_map::<_, D::Error>(map).map(Self::String),
            Some("number" | "integer") => from_map::<_, D::Error>(map).map(Self::Number),
            Some("boolean") => from_map::<_, D::Error>(map).map(Self::Boolean),
            Some("array")
                if map
                    .get("items")
                    .and_then(|items| items.get("anyOf"))
                    .is_some() =>
            {
                from_map::<_, D::Error>(map).map(Self::TitledMultiSelectEnum)
            }
            Some("array") => from_map::<_, D::Error>(map).map(Self::UntitledMultiSelectEnum),
            _ => Ok(Self::Other(map)),
        }
    }
}

/// A string field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: tags::StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Shortest length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Longest length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// `email`, `uri`, `date` or `date-time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Default value (2025-11-25 onwards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `"number"` or `"integer"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberKind {
    /// Any number.
    Number,
    /// An integer.
    Integer,
}

/// A number field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    #[serde(rename = "type")]
    pub kind: NumberKind,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Smallest value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "number::option::serialize"
    )]
    pub minimum: Option<f64>,
    /// Largest value.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "number::option::serialize"
    )]
    pub maximum: Option<f64>,
    /// Default value (2025-11-25 onwards).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "number::option::serialize"
    )]
    pub default: Option<f64>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A boolean field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// Always `"boolean"`.
    #[serde(rename = "type")]
    pub kind: tags::BooleanType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One titled option: `{const, title}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value.
    #[serde(rename = "const")]
    pub value: String,
    /// Its label.
    pub title: String,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A single choice among strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: tags::StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Default choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A single choice among titled options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: tags::StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    pub one_of: Vec<EnumOption>,
    /// Default choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `items` of an untitled multi-select: `{type: "string", enum}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntitledEnumItems {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: tags::StringType,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Several choices among strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub kind: tags::ArrayType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: UntitledEnumItems,
    /// Default choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `items` of a titled multi-select: `{anyOf: [{const, title}]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledEnumItems {
    /// The choices.
    pub any_of: Vec<EnumOption>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Several choices among titled options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub kind: tags::ArrayType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: TitledEnumItems,
    /// Default choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A single choice with `enumNames` labels (2025-06-18 style).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTitledEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: tags::StringType,
    /// Field label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Field help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Labels of the choices, in the same order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Default choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ElicitAction {
    /// Submitted the form or consented to the URL (which does not mean the URL flow finished).
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// Result of `elicitation/create` (an MRTR input response in 2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted values (form mode, accept only): strings, numbers, booleans or string arrays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitResult {
    /// A result with `action` and no content.
    pub fn new(action: ElicitAction) -> Self {
        Self {
            action,
            content: None,
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// An embedded `elicitation/create` request, `{method, params}` with no `jsonrpc` or `id`
/// (a 2026-07-28 MRTR input request).
///
/// For the JSON-RPC request of earlier revisions use
/// [`TypedRequest<methods::Elicit>`](super::TypedRequest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitRequest {
    /// Always `elicitation/create`.
    pub method: tags::ElicitationCreate,
    /// The params.
    pub params: ElicitRequestParams,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `notifications/elicitation/complete` (2025-11-25 only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteNotificationParams {
    /// The `elicitationId` of the URL elicitation that finished.
    pub elicitation_id: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}
