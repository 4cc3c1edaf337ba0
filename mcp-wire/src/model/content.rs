//! Content blocks and resource contents.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{Annotations, Extra, Role, from_map, present};
use super::resources::Resource;

/// One piece of content, tagged by `type`.
///
/// This is the superset of the `ContentBlock` union (text, image, audio, resource link, embedded
/// resource) and the sampling content union (text, image, audio, tool use, tool result):
///
/// | Variant | `type` | Revisions | Where |
/// | --- | --- | --- | --- |
/// | [`Text`](Self::Text) | `text` | all | everywhere |
/// | [`Image`](Self::Image) | `image` | all | everywhere |
/// | [`Audio`](Self::Audio) | `audio` | 2025-03-26 onwards | everywhere |
/// | [`ResourceLink`](Self::ResourceLink) | `resource_link` | 2025-06-18 onwards | tool results, prompts |
/// | [`Resource`](Self::Resource) | `resource` | all | tool results, prompts |
/// | [`ToolUse`](Self::ToolUse) | `tool_use` | 2025-11-25 onwards | sampling only |
/// | [`ToolResult`](Self::ToolResult) | `tool_result` | 2025-11-25 onwards | sampling only |
///
/// Checking that a variant is allowed in its position and revision is the adapters' job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Plain text.
    #[serde(rename = "text")]
    Text(TextContent),
    /// A base64-encoded image.
    #[serde(rename = "image")]
    Image(ImageContent),
    /// Base64-encoded audio.
    #[serde(rename = "audio")]
    Audio(AudioContent),
    /// A link to a resource the client may read.
    #[serde(rename = "resource_link")]
    ResourceLink(Resource),
    /// A resource embedded with its contents.
    #[serde(rename = "resource")]
    Resource(EmbeddedResource),
    /// A tool call requested by the model (sampling).
    #[serde(rename = "tool_use")]
    ToolUse(ToolUseContent),
    /// The result of a tool call, given back to the model (sampling).
    #[serde(rename = "tool_result")]
    ToolResult(ToolResultContent),
}

impl ContentBlock {
    /// A text block.
    ///
    /// ```
    /// use mcp_wire::model::ContentBlock;
    ///
    /// let block = ContentBlock::text("hi");
    /// assert_eq!(block.as_text(), Some("hi"));
    /// assert_eq!(
    ///     serde_json::to_value(&block).unwrap(),
    ///     serde_json::json!({"type": "text", "text": "hi"})
    /// );
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent::new(text))
    }

    /// An image block; `data` is base64-encoded here.
    pub fn image(data: &[u8], mime_type: impl Into<String>) -> Self {
        Self::Image(ImageContent {
            data: STANDARD.encode(data),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
            extra: Extra::new(),
        })
    }

    /// An audio block (2025-03-26 onwards; older revisions drop it); `data` is
    /// base64-encoded here.
    pub fn audio(data: &[u8], mime_type: impl Into<String>) -> Self {
        Self::Audio(AudioContent {
            data: STANDARD.encode(data),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
            extra: Extra::new(),
        })
    }

    /// A `resource_link` block (2025-06-18 onwards; older revisions drop it).
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ResourceLink(Resource::new(uri, name))
    }

    /// An embedded `resource` block.
    pub fn embedded(resource: ResourceContents) -> Self {
        Self::Resource(EmbeddedResource {
            resource,
            annotations: None,
            meta: None,
            extra: Extra::new(),
        })
    }

    /// The block's `type`: `"text"`, `"image"`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Text(_) => "text",
            Self::Image(_) => "image",
            Self::Audio(_) => "audio",
            Self::ResourceLink(_) => "resource_link",
            Self::Resource(_) => "resource",
            Self::ToolUse(_) => "tool_use",
            Self::ToolResult(_) => "tool_result",
        }
    }

    /// The text of a [`Text`](Self::Text) block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// Text content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

impl TextContent {
    /// Text content with no annotations.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            annotations: None,
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// Image content (base64 data).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image data.
    pub data: String,
    /// MIME type, such as `image/png`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Audio content (base64 data), 2025-03-26 onwards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Base64-encoded audio data.
    pub data: String,
    /// MIME type, such as `audio/wav`.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A resource embedded in a prompt or tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The contents.
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool call the model asks for, in a sampling result (2025-11-25 onwards).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// Identifier matched by the [`ToolResultContent::tool_use_id`] of its result.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments.
    pub input: Map<String, Value>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The result of a tool call, in a sampling request (2025-11-25 onwards).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// The [`ToolUseContent::id`] this answers.
    pub tool_use_id: String,
    /// Unstructured result content.
    pub content: Vec<ContentBlock>,
    /// Structured result: an object in 2025-11-25, any JSON value in 2026-07-28. A present
    /// `null` is kept as `Some(Value::Null)`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub structured_content: Option<Value>,
    /// Whether the tool call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The contents of a resource: text or a base64 blob.
///
/// An object with `blob` and no `text` is a blob; anything else is read as text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents.
    Blob(BlobResourceContents),
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        if map.contains_key("blob") && !map.contains_key("text") {
            from_map::<_, D::Error>(map).map(Self::Blob)
        } else {
            from_map::<_, D::Error>(map).map(Self::Text)
        }
    }
}

impl ResourceContents {
    /// Text contents.
    ///
    /// ```
    /// use mcp_wire::model::ResourceContents;
    ///
    /// let contents = ResourceContents::text("file:///a.txt", "hello").with_mime_type("text/plain");
    /// assert_eq!(contents.as_text(), Some("hello"));
    /// assert_eq!(contents.mime_type(), Some("text/plain"));
    /// ```
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self::Text(TextResourceContents {
            uri: uri.into(),
            mime_type: None,
            text: text.into(),
            meta: None,
            extra: Extra::new(),
        })
    }

    /// Binary contents, sent base64-encoded as `blob` (encoded here).
    pub fn blob(uri: impl Into<String>, bytes: impl AsRef<[u8]>) -> Self {
        Self::Blob(BlobResourceContents {
            uri: uri.into(),
            mime_type: None,
            blob: STANDARD.encode(bytes),
            meta: None,
            extra: Extra::new(),
        })
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        *self.mime_type_mut() = Some(mime_type.into());
        self
    }

    /// The MIME type, if set.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Self::Text(t) => t.mime_type.as_deref(),
            Self::Blob(b) => b.mime_type.as_deref(),
        }
    }

    /// The MIME type, to change it.
    pub fn mime_type_mut(&mut self) -> &mut Option<String> {
        match self {
            Self::Text(t) => &mut t.mime_type,
            Self::Blob(b) => &mut b.mime_type,
        }
    }

    /// The text, for text contents.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            Self::Blob(_) => None,
        }
    }

    /// The decoded bytes, for binary contents (`None` for text, or a `blob` that is not
    /// base64).
    pub fn blob_bytes(&self) -> Option<Vec<u8>> {
        match self {
            Self::Text(_) => None,
            Self::Blob(b) => STANDARD.decode(&b.blob).ok(),
        }
    }

    /// The resource URI.
    pub fn uri(&self) -> &str {
        match self {
            Self::Text(t) => &t.uri,
            Self::Blob(b) => &b.uri,
        }
    }
}

/// Text contents of a resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The resource URI.
    pub uri: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Binary contents of a resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The resource URI.
    pub uri: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded data.
    pub blob: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A message of a prompt: a role and one content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

impl PromptMessage {
    /// A message of `role` saying `content`.
    pub fn new(role: Role, content: ContentBlock) -> Self {
        Self {
            role,
            content,
            extra: Extra::new(),
        }
    }

    /// A user message with one text block.
    ///
    /// ```
    /// use mcp_wire::model::{PromptMessage, Role};
    ///
    /// let message = PromptMessage::user("Review this code");
    /// assert_eq!(message.role, Role::User);
    /// assert_eq!(message.content.as_text(), Some("Review this code"));
    /// ```
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, ContentBlock::text(text))
    }

    /// An assistant message with one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, ContentBlock::text(text))
    }
}
