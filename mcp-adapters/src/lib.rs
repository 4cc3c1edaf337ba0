//! One adapter per MCP protocol revision, and per-request selection.
//!
//! The adapters are where the revisions differ, so that nothing above them does. Each is a pure,
//! stateless value shared by every request: it decodes a POST body plus headers into normalized
//! calls, checks the revision's headers, maps failure kinds to the revision's JSON-RPC code and
//! HTTP status, encodes outcomes, projects definitions, and declares what it can do
//! (`can_ask`, `can_push_ask`, `asks_in_arguments`, batching, handshake ...).
//!
//! **Layering:** depends on `mcp-wire` and `mcp-schema` only. No runtime or I/O crate.

mod adapter;
mod failure;
mod features;
mod operation;
mod revision;
mod select;

pub use adapter::Adapter;
pub use failure::{ErrorMapping, Failure, FailureKind, codes};
pub use features::{AskMechanism, Features, StructuredOutput, VersionHeader};
pub use operation::{ClientRequestKind, Operation};
pub use revision::Revision;
pub use select::{AdapterSet, EmptySetError, Hint, Rejected, Selected, SelectedBy, SelectionInput};
