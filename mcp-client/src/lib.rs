//! The MCP client for every protocol revision and transport.
//!
//! **Layering:** depends on `mcp-wire`, `mcp-schema` and `mcp-adapters` only; never on
//! `mcp-server` or `mcp-hub`.

mod codec;
mod error;
pub mod transport;

pub use error::{Error, ErrorKind};
pub use mcp_wire::jsonrpc::ErrorObject;
