//! What handlers return: content blocks, tool results, resource contents, prompt messages.
//!
//! These are revision-neutral: each is the newest revision's shape, and the adapter of the
//! revision a call arrived on removes what that revision cannot hold (a `resource_link` block
//! before 2025-06-18, `structuredContent` before 2025-06-18, and so on).

use base64::Engine as _;
use serde::Serialize;
use serde_json::{Map, Value, json};

/// One content block (`text`, `image`, `audio`, `resource_link` or an embedded `resource`).
///
/// Stored as its wire JSON, so blocks from newer revisions pass through unchanged.
#[derive(Clone, Debug, PartialEq)]
pub struct Content(Value);

impl Content {
    /// A `text` block.
    pub fn text(text: impl Into<String>) -> Self {
        // Built by hand: `json!` would copy the text through the serializer.
        let mut block = Map::new();
        block.insert("type".into(), Value::from("text"));
        block.insert("text".into(), Value::String(text.into()));
        Self(Value::Object(block))
    }

    /// An `image` block; `data` is base64-encoded here.
    pub fn image(data: &[u8], mime_type: impl Into<String>) -> Self {
        Self(json!({
            "type": "image",
            "data": base64::engine::general_purpose::STANDARD.encode(data),
            "mimeType": mime_type.into(),
        }))
    }

    /// An `audio` block (2025-03-26 and later; dropped on 2024-11-05); `data` is
    /// base64-encoded here.
    pub fn audio(data: &[u8], mime_type: impl Into<String>) -> Self {
        Self(json!({
            "type": "audio",
            "data": base64::engine::general_purpose::STANDARD.encode(data),
            "mimeType": mime_type.into(),
        }))
    }

    /// A `resource_link` block (2025-06-18 and later; dropped on older revisions).
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self(json!({"type": "resource_link", "uri": uri.into(), "name": name.into()}))
    }

    /// An embedded `resource` block.
    pub fn embedded(resource: ResourceContents) -> Self {
        let mut block = Map::new();
        block.insert("type".into(), Value::from("resource"));
        block.insert("resource".into(), resource.into_value());
        Self(Value::Object(block))
    }

    /// A block from its wire JSON, kept as it is.
    pub fn from_value(value: Value) -> Self {
        Self(value)
    }

    /// The block's `type` (`"text"`, `"image"` ...), if it has one.
    pub fn kind(&self) -> Option<&str> {
        self.0.get("type").and_then(Value::as_str)
    }

    /// The text of a `text` block.
    pub fn as_text(&self) -> Option<&str> {
        match self.kind() {
            Some("text") => self.0.get("text").and_then(Value::as_str),
            _ => None,
        }
    }

    /// The wire JSON.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// The wire JSON, by value.
    pub fn into_value(self) -> Value {
        self.0
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

/// The result of a `tools/call`, in the newest revision's shape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallToolResult {
    /// The content blocks.
    pub content: Vec<Content>,
    /// Structured output (`structuredContent`), if any.
    pub structured_content: Option<Value>,
    /// The tool failed (`isError: true`); the content says why.
    pub is_error: bool,
    /// `_meta`, if any.
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A successful result with these content blocks.
    pub fn success(content: Vec<Content>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A failed result (`isError: true`) carrying one text block.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(message)],
            is_error: true,
            ..Self::default()
        }
    }

    /// Structured output plus its JSON text as one text block, as the spec recommends for
    /// clients that only read text.
    pub fn structured(value: Value) -> Self {
        let text = serde_json::to_string(&value).unwrap_or_default();
        Self {
            content: vec![Content::text(text)],
            structured_content: Some(value),
            ..Self::default()
        }
    }

    /// The typed result the adapters write straight to the wire.
    pub(crate) fn into_parts(self) -> mcp_adapters::ToolResult {
        // `Content` wraps a `Value`: the vector is reused as it is.
        let mut result =
            mcp_adapters::ToolResult::new(self.content.into_iter().map(|c| c.0).collect())
                .with_is_error(self.is_error);
        if let Some(structured) = self.structured_content {
            result = result.with_structured_content(structured);
        }
        if let Some(meta) = self.meta {
            result = result.with_meta(meta);
        }
        result
    }

    /// [`to_value`](Self::to_value), taking the result (no copy of its content).
    pub fn into_value(self) -> Value {
        self.into_parts().into_value()
    }

    /// The wire JSON (newest revision's shape; the adapter projects it).
    pub fn to_value(&self) -> Value {
        self.clone().into_value()
    }
}

/// The contents of a resource: text or binary, with a URI and a MIME type.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceContents {
    uri: String,
    mime_type: Option<String>,
    body: Body,
}

#[derive(Clone, Debug, PartialEq)]
enum Body {
    Text(String),
    Blob(Vec<u8>),
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            body: Body::Text(text.into()),
        }
    }

    /// Binary contents (sent base64-encoded as `blob`).
    pub fn blob(uri: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            body: Body::Blob(bytes.into()),
        }
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The text, for text contents.
    pub fn as_text(&self) -> Option<&str> {
        match &self.body {
            Body::Text(text) => Some(text),
            Body::Blob(_) => None,
        }
    }

    /// The bytes, for binary contents.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match &self.body {
            Body::Text(_) => None,
            Body::Blob(bytes) => Some(bytes),
        }
    }

    pub(crate) fn fill_mime_type(&mut self, declared: Option<&str>) {
        if self.mime_type.is_none() {
            self.mime_type = declared.map(str::to_owned);
        }
    }

    /// The wire JSON (`TextResourceContents` or `BlobResourceContents`).
    pub fn into_value(self) -> Value {
        let mut out = Map::new();
        out.insert("uri".into(), Value::String(self.uri));
        if let Some(mime) = self.mime_type {
            out.insert("mimeType".into(), Value::String(mime));
        }
        match self.body {
            Body::Text(text) => out.insert("text".into(), Value::String(text)),
            Body::Blob(bytes) => out.insert(
                "blob".into(),
                Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
            ),
        };
        Value::Object(out)
    }
}

/// Who speaks a prompt message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: Content,
}

impl PromptMessage {
    /// A user message with one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: Content::text(text),
        }
    }

    /// An assistant message with one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: Content::text(text),
        }
    }

    pub(crate) fn to_value(&self) -> Value {
        json!({"role": self.role, "content": self.content.0})
    }
}

/// The result of `prompts/get`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GetPromptResult {
    /// A description of this rendering, if any.
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}

impl GetPromptResult {
    pub(crate) fn to_value(&self) -> Value {
        let mut out = Map::new();
        if let Some(description) = &self.description {
            out.insert("description".into(), Value::String(description.clone()));
        }
        out.insert(
            "messages".into(),
            Value::Array(self.messages.iter().map(PromptMessage::to_value).collect()),
        );
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_have_their_wire_shape() {
        let cases = [
            (Content::text("hi"), json!({"type": "text", "text": "hi"})),
            (
                Content::image(b"ab", "image/png"),
                json!({"type": "image", "data": "YWI=", "mimeType": "image/png"}),
            ),
            (
                Content::resource_link("a://b", "b"),
                json!({"type": "resource_link", "uri": "a://b", "name": "b"}),
            ),
            (
                Content::embedded(ResourceContents::blob("a://b", b"ab".to_vec())),
                json!({"type": "resource", "resource": {"uri": "a://b", "blob": "YWI="}}),
            ),
        ];
        for (block, wire) in cases {
            assert_eq!(block.into_value(), wire);
        }
    }

    #[test]
    fn structured_result_repeats_itself_as_text() {
        let result = CallToolResult::structured(json!({"sum": 3}));
        assert_eq!(
            result.to_value(),
            json!({"content": [{"type": "text", "text": "{\"sum\":3}"}], "structuredContent": {"sum": 3}})
        );
        assert_eq!(
            CallToolResult::error("no").to_value(),
            json!({"content": [{"type": "text", "text": "no"}], "isError": true})
        );
    }
}
