//! Error types, one per failure domain.

use std::fmt;

/// A declaration the builder refused. Returned by
/// [`ServerBuilder::build`](crate::ServerBuilder::build).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// Two declarations of one kind share a name (or URI, or URI template).
    #[error("duplicate {kind} {name:?}: each {kind} needs a unique name")]
    Duplicate {
        /// `"tool"`, `"prompt"`, `"resource"` or `"resource template"`.
        kind: &'static str,
        /// The repeated name, URI or template.
        name: String,
    },
    /// A tool name outside the 2025-11-25 guidance: 1 to 128 characters from
    /// `A-Z a-z 0-9 _ - .`.
    #[error("invalid tool name {name:?}: {reason}")]
    InvalidToolName {
        /// The name.
        name: String,
        /// Why it is refused.
        reason: String,
    },
    /// An `x-mcp-header` annotation that breaks the 2026-07-28 rules.
    #[error("tool {tool:?}: invalid x-mcp-header annotation: {reason}")]
    InvalidHeader {
        /// The tool.
        tool: String,
        /// Why it is refused.
        reason: String,
    },
    /// A schema that cannot serve: not object-rooted where an object is required, or one
    /// the validator cannot compile.
    #[error("{kind} {name:?}: unusable schema: {reason}")]
    Schema {
        /// `"tool"` or `"prompt"`.
        kind: &'static str,
        /// The declaration's name.
        name: String,
        /// Why it is refused.
        reason: String,
    },
    /// A resource URI template that is not RFC 6570 level 1, or a malformed fixed URI.
    #[error("invalid resource URI {uri:?}: {reason}")]
    InvalidUri {
        /// The URI or template.
        uri: String,
        /// Why it is refused.
        reason: String,
    },
    /// A builder setting out of range.
    #[error("invalid setting {setting}: {reason}")]
    InvalidSetting {
        /// The setting.
        setting: &'static str,
        /// Why it is refused.
        reason: String,
    },
}

/// Why [`Exchange::ask`](crate::Exchange::ask) did not produce an answer.
///
/// A handler passes it on with `?`; whatever the handler then returns, the dispatcher answers
/// the call in the way the revision asks (an `input_required` result, a result that tells the
/// caller how to answer, or a "cannot ask" error).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Interrupt {
    /// The question goes back to the client; the call finishes on a later attempt that
    /// carries the answer.
    #[error("the call needs answers from the user before it can finish")]
    NeedsInput,
    /// The client did not declare the capability the question needs, or the revision has no
    /// way to ask on this operation.
    #[error("the user cannot be asked: {0}")]
    CannotAsk(String),
    /// The call was cancelled while waiting.
    #[error("the call was cancelled")]
    Cancelled,
    /// A pushed question (2025-06-18, 2025-11-25) got no reply within the server's
    /// [`ask_timeout`](crate::ServerBuilder::ask_timeout). The handler may go on without the
    /// answer; passed on with `?`, a tool call ends with an `isError` result and a prompt or
    /// resource with an internal error, both naming the timeout.
    #[error("the user did not answer within {}s", .0.as_secs_f64())]
    TimedOut(std::time::Duration),
}

/// A tool handler's error: its text becomes a result with `isError: true`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool failed; the message is shown to the caller.
    #[error("{0}")]
    Failed(String),
    /// An [`Exchange::ask`](crate::Exchange::ask) did not produce an answer.
    #[error(transparent)]
    Interrupted(#[from] Interrupt),
}

impl ToolError {
    /// A failure with this message.
    pub fn new(message: impl fmt::Display) -> Self {
        Self::Failed(message.to_string())
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self::Failed(message.to_owned())
    }
}

/// A resource handler's error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// There is nothing at this URI (the revision's resource-not-found error).
    #[error("resource not found: {0}")]
    NotFound(String),
    /// Reading failed (an internal error, -32603, with this message).
    #[error("{0}")]
    Failed(String),
    /// An [`Exchange::ask`](crate::Exchange::ask) did not produce an answer.
    #[error(transparent)]
    Interrupted(#[from] Interrupt),
}

impl From<String> for ResourceError {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

impl From<&str> for ResourceError {
    fn from(message: &str) -> Self {
        Self::Failed(message.to_owned())
    }
}

/// A prompt handler's error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// The arguments are not acceptable (-32602 with this message).
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// Rendering failed (an internal error, -32603, with this message).
    #[error("{0}")]
    Failed(String),
    /// An [`Exchange::ask`](crate::Exchange::ask) did not produce an answer.
    #[error(transparent)]
    Interrupted(#[from] Interrupt),
}

impl From<String> for PromptError {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

impl From<&str> for PromptError {
    fn from(message: &str) -> Self {
        Self::Failed(message.to_owned())
    }
}

/// A failure of the stdio transport itself (not of a message: those are answered).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    /// Reading stdin or writing stdout failed.
    #[error("stdio transport: {0}")]
    Io(#[from] std::io::Error),
}
