//! Icons and the server's identity.

use serde_json::{Map, Value};

/// An icon for the server, a tool, a resource or a prompt (shown from 2025-11-25).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Icon {
    src: String,
    mime_type: Option<String>,
    sizes: Vec<String>,
    theme: Option<String>,
}

impl Icon {
    /// An icon at `src` (an `https:` or `data:` URI).
    pub fn new(src: impl Into<String>) -> Self {
        Self {
            src: src.into(),
            mime_type: None,
            sizes: Vec::new(),
            theme: None,
        }
    }

    /// Sets the MIME type. Default is none.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Adds a size, such as `"48x48"` or `"any"`. Default is none.
    #[must_use]
    pub fn size(mut self, size: impl Into<String>) -> Self {
        self.sizes.push(size.into());
        self
    }

    /// Sets the theme the icon suits (`"light"` or `"dark"`). Default is none.
    #[must_use]
    pub fn theme(mut self, theme: impl Into<String>) -> Self {
        self.theme = Some(theme.into());
        self
    }

    pub(crate) fn to_value(&self) -> Value {
        let mut out = Map::new();
        out.insert("src".into(), Value::String(self.src.clone()));
        if let Some(mime) = &self.mime_type {
            out.insert("mimeType".into(), Value::String(mime.clone()));
        }
        if !self.sizes.is_empty() {
            out.insert(
                "sizes".into(),
                Value::Array(self.sizes.iter().cloned().map(Value::String).collect()),
            );
        }
        if let Some(theme) = &self.theme {
            out.insert("theme".into(), Value::String(theme.clone()));
        }
        Value::Object(out)
    }
}

pub(crate) fn icons_value(icons: &[Icon]) -> Option<Value> {
    (!icons.is_empty()).then(|| Value::Array(icons.iter().map(Icon::to_value).collect()))
}
