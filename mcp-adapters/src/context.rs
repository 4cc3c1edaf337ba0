//! What the server knows about the client of a call.

use serde_json::{Map, Value};

/// What the server knows about the client for one call.
///
/// On 2026-07-28 both come from the request's `_meta` (moved out of it, so
/// [`Call::params`](crate::Call::params) no longer holds them), and the capabilities are always present
/// (`{}` means none; silence never means "whatever you said before"). On revisions with a
/// handshake they are only on `initialize`; for later calls the server fills them from the
/// session (or stdio connection) with [`ClientContext::fill_from`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientContext {
    /// The client's `Implementation` (`{name, version, ...}`), if stated.
    pub info: Option<Value>,
    /// The client's `ClientCapabilities` object, if stated.
    pub capabilities: Option<Map<String, Value>>,
}

impl ClientContext {
    /// The client declared the top-level capability `name` (`"elicitation"`, `"sampling"`,
    /// `"roots"`, ...).
    pub fn has(&self, name: &str) -> bool {
        self.capabilities
            .as_ref()
            .is_some_and(|c| c.get(name).is_some_and(|v| !v.is_null()))
    }

    /// The client can answer form-mode elicitation (`elicitation: {}` means form only).
    pub fn can_elicit_form(&self) -> bool {
        match self.capability("elicitation") {
            Some(Value::Object(o)) => o.is_empty() || o.contains_key("form"),
            Some(v) => !v.is_null(),
            None => false,
        }
    }

    /// The client can answer URL-mode elicitation.
    pub fn can_elicit_url(&self) -> bool {
        matches!(self.capability("elicitation"), Some(Value::Object(o)) if o.contains_key("url"))
    }

    /// The value of the capability `name`.
    pub fn capability(&self, name: &str) -> Option<&Value> {
        self.capabilities.as_ref().and_then(|c| c.get(name))
    }

    /// Fills what this call did not state from what the session remembers (legacy revisions).
    pub fn fill_from(&mut self, remembered: &Self) {
        if self.info.is_none() {
            self.info.clone_from(&remembered.info);
        }
        if self.capabilities.is_none() {
            self.capabilities.clone_from(&remembered.capabilities);
        }
    }
}
