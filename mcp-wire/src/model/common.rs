//! Types shared by every part of the model: roles, annotations, icons, implementation info,
//! logging levels, the 2026-07-28 result envelope, typed `_meta` views, and constant-string tags.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::jsonrpc::Id;

/// A progress token: a string or an integer, the same shape as a request id.
pub type ProgressToken = Id;

/// A pagination cursor: an opaque string.
pub type Cursor = String;

/// An object of unknown fields kept so that a message passing through is unchanged.
pub type Extra = Map<String, Value>;

/// Serde helpers for JSON `number` fields held as `f64`.
///
/// Integral values are written as integers (`50`, not `50.0`), so a value read from `50` is
/// written back as `50`. Values with a fraction are written as the shortest `f64` text.
pub(crate) mod number {
    use serde::Serializer;

    /// Largest magnitude written as an integer: every integer up to it is exact in an `f64`.
    const EXACT: f64 = 9_007_199_254_740_992.0;

    pub(crate) fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        if value.fract() == 0.0 && value.abs() <= EXACT {
            // Exact: the value is integral and within ±2^53.
            serializer.serialize_i64(*value as i64)
        } else {
            serializer.serialize_f64(*value)
        }
    }

    pub(crate) mod option {
        use serde::Serializer;

        pub(crate) fn serialize<S: Serializer>(
            value: &Option<f64>,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            match value {
                Some(value) => super::serialize(value, serializer),
                None => serializer.serialize_none(),
            }
        }
    }
}

/// Deserializes a present member as `Some`, even when it is `null`, so that
/// `"structuredContent": null` survives a round trip. Use with `#[serde(default)]`.
pub(crate) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Declares a unit struct that (de)serializes as one fixed string.
macro_rules! tag {
    ($(#[$doc:meta])* $name:ident = $value:literal) => {
        $(#[$doc])*
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            /// The string this tag stands for.
            pub const VALUE: &'static str = $value;
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let found = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                if found == $value {
                    Ok(Self)
                } else {
                    Err(serde::de::Error::invalid_value(
                        serde::de::Unexpected::Str(&found),
                        &concat!("\"", $value, "\""),
                    ))
                }
            }
        }
    };
}

/// Constant-string tags: unit structs that serialize as one fixed string and refuse any other.
///
/// They stand for members whose value is fixed by the type, such as `"mode": "url"` or
/// `"method": "elicitation/create"`, so the Rust type cannot hold a contradicting value.
pub mod tags {
    tag!(
        /// `"jsonrpc": "2.0"`.
        JsonRpcVersion = "2.0"
    );
    tag!(
        /// `"mode": "form"` of form elicitation (optional on the wire; absent means form).
        FormMode = "form"
    );
    tag!(
        /// `"mode": "url"` of URL elicitation.
        UrlMode = "url"
    );
    tag!(
        /// `"resultType": "input_required"` of an MRTR interim result.
        InputRequired = "input_required"
    );
    tag!(
        /// `"type": "object"` of an elicitation `requestedSchema`.
        ObjectType = "object"
    );
    tag!(
        /// `"type": "string"` of string and enum elicitation schemas.
        StringType = "string"
    );
    tag!(
        /// `"type": "boolean"` of a boolean elicitation schema.
        BooleanType = "boolean"
    );
    tag!(
        /// `"type": "array"` of a multi-select elicitation schema.
        ArrayType = "array"
    );
    tag!(
        /// `"method": "elicitation/create"` of an embedded elicitation request.
        ElicitationCreate = "elicitation/create"
    );
    tag!(
        /// `"method": "sampling/createMessage"` of an embedded sampling request.
        SamplingCreateMessage = "sampling/createMessage"
    );
    tag!(
        /// `"method": "roots/list"` of an embedded roots request.
        RootsList = "roots/list"
    );
}

/// The sender or recipient of a message or content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// The user.
    User,
    /// The assistant (the model).
    Assistant,
}

/// Hints to the client about how to use or display content (2024-11-05 onwards;
/// `lastModified` from 2025-06-18).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is intended for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "number::option::serialize"
    )]
    pub priority: Option<f64>,
    /// ISO 8601 timestamp of the last modification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The background an icon is designed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum IconTheme {
    /// For a light background.
    Light,
    /// For a dark background.
    Dark,
}

/// An icon a user interface may display (2025-11-25 onwards).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// An `http(s):` URL or a `data:` URI.
    pub src: String,
    /// MIME type override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The theme the icon is designed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Icon {
    /// An icon with only `src`.
    pub fn new(src: impl Into<String>) -> Self {
        Self {
            src: src.into(),
            mime_type: None,
            sizes: None,
            theme: None,
            extra: Extra::new(),
        }
    }
}

/// Name and version of an MCP implementation: `clientInfo` / `serverInfo`.
///
/// `title` from 2025-06-18; `icons`, `description` and `websiteUrl` from 2025-11-25.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Website URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Implementation {
    /// Implementation info with only `name` and `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            icons: None,
            website_url: None,
            extra: Extra::new(),
        }
    }
}

/// Syslog severity of a log message, ordered from [`Debug`](Self::Debug) (least severe) to
/// [`Emergency`](Self::Emergency) (most severe).
///
/// Complete by definition: these are the eight RFC 5424 severities the specification names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Detailed debugging information.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// Every level, least severe first.
    pub const ALL: [Self; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The wire name, such as `"warning"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LoggingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The string is not one of the eight logging level names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown logging level {0:?}")]
pub struct UnknownLoggingLevel(pub String);

impl FromStr for LoggingLevel {
    type Err = UnknownLoggingLevel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|level| level.as_str() == s)
            .ok_or_else(|| UnknownLoggingLevel(s.to_owned()))
    }
}

/// `resultType` of a 2026-07-28 result.
///
/// Absent on results from earlier revisions, which a client treats as [`Complete`](Self::Complete).
/// Values this crate does not know are kept in [`Other`](Self::Other); a client must treat them
/// as invalid unless an extension it negotiated defines them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResultType {
    /// `"complete"`: a final result.
    Complete,
    /// `"input_required"`: an MRTR interim result.
    InputRequired,
    /// `"task"`: defined by the tasks extension (`io.modelcontextprotocol/tasks`).
    Task,
    /// Any other value, kept verbatim.
    Other(String),
}

impl ResultType {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::Task => "task",
            Self::Other(s) => s,
        }
    }
}

impl From<&str> for ResultType {
    fn from(s: &str) -> Self {
        match s {
            "complete" => Self::Complete,
            "input_required" => Self::InputRequired,
            "task" => Self::Task,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(Self::from(&*s))
    }
}

/// `cacheScope` of a cacheable 2026-07-28 result, like HTTP `Cache-Control: public | private`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CacheScope {
    /// No user-specific data: any cache may serve it across authorization contexts.
    Public,
    /// Cacheable only within the same authorization context.
    Private,
}

/// A typed view of a request's `_meta` (2026-07-28 `RequestMetaObject`; `progressToken` in every
/// revision).
///
/// Request params keep `_meta` as a plain map so that messages pass through unchanged; read it
/// through this type with [`RequestMeta::from_meta`] and write it back with
/// [`RequestMeta::into_meta`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion` (required in 2026-07-28).
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol_version: Option<String>,
    /// `io.modelcontextprotocol/clientCapabilities` (required in 2026-07-28).
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_capabilities: Option<super::ClientCapabilities>,
    /// `io.modelcontextprotocol/clientInfo` (SHOULD in 2026-07-28).
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Implementation>,
    /// `io.modelcontextprotocol/logLevel` (optional, deprecated, 2026-07-28).
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<LoggingLevel>,
    /// `progressToken`.
    #[serde(
        rename = "progressToken",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub progress_token: Option<ProgressToken>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A typed view of a result's or notification's `_meta` (2026-07-28 `ResultMetaObject`,
/// `NotificationMetaObject`, `SubscriptionsListenResultMetaObject`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultMeta {
    /// `io.modelcontextprotocol/serverInfo` (SHOULD be on every 2026-07-28 result).
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// `io.modelcontextprotocol/subscriptionId`: the listen request's id, on every message of a
    /// `subscriptions/listen` stream.
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<Id>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

macro_rules! meta_view {
    ($ty:ty) => {
        impl $ty {
            /// Reads the typed view from a `_meta` map, without consuming it.
            ///
            /// Fails if a reserved key holds a value of the wrong shape.
            pub fn from_meta(meta: &Map<String, Value>) -> Result<Self, serde_json::Error> {
                Self::deserialize(meta)
            }

            /// Writes the view back as a `_meta` map.
            pub fn into_meta(self) -> Map<String, Value> {
                match serde_json::to_value(self) {
                    Ok(Value::Object(map)) => map,
                    // A struct of strings, ids and maps always serializes to an object.
                    _ => Map::new(),
                }
            }
        }
    };
}

meta_view!(RequestMeta);
meta_view!(ResultMeta);

/// Deserializes a map into `T`, mapping the error into the caller's deserializer error `E`.
pub(crate) fn from_map<T, E>(map: Map<String, Value>) -> Result<T, E>
where
    T: de::DeserializeOwned,
    E: de::Error,
{
    T::deserialize(map).map_err(E::custom)
}
