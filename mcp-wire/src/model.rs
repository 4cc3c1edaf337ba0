//! The MCP model: one set of serde types that is the superset of all five published revisions.
//!
//! Field names are those of the official schemas (camelCase). Each type documents the revisions
//! its newer members belong to; deciding what a given revision may carry is the adapters' job,
//! not this module's.
//!
//! # Pass-through guarantees
//!
//! - Every struct keeps members it does not know in a flattened `extra` map, and `_meta` as an
//!   optional map (`meta`), so a message read and written back is unchanged.
//! - Optional members are omitted when `None`; `Some(Value::Null)` is kept where `null` is a
//!   meaningful value (`structuredContent`).
//! - JSON `number` members are `f64`; integral values are written as integers (`50`, not `50.0`).
//!   Members the schemas type as `integer` (`ttlMs`, `maxTokens`, `size`) are `u64`.
//! - Member order is not guaranteed to survive (serde_json maps are sorted unless its
//!   `preserve_order` feature is on); JSON gives it no meaning.
//!
//! # Shape of the module
//!
//! - Params and results per feature: [`Tool`], [`CallToolRequestParams`], [`CallToolResult`],
//!   [`ListToolsResult`], [`Resource`], [`ReadResourceResult`], [`Prompt`], [`GetPromptResult`],
//!   [`DiscoverResult`], [`InitializeResult`], [`CompleteResult`], ...
//! - Content: [`ContentBlock`], one enum tagged by `type` for every kind of block.
//! - The 2026-07-28 envelope: `resultType` ([`ResultType`]), `ttlMs`, `cacheScope`
//!   ([`CacheScope`]) on the results that carry them, MRTR ([`InputRequiredResult`],
//!   [`InputRequests`], [`InputResponses`], [`MrtrResult`]), typed `_meta` views
//!   ([`RequestMeta`], [`ResultMeta`]) and the error data of -32021 and -32022.
//! - Whole messages: [`TypedRequest`], [`TypedNotification`], [`TypedResponse`] and
//!   [`ErrorResponse`], with a marker type per method in [`methods`] and aliases named as the
//!   schemas name them ([`CallToolRequest`], [`CallToolResultResponse`], ...).
//!
//! Decoding these types uses serde's buffering for the flattened `extra` maps; the JSON-RPC
//! envelope itself is decoded without it by [`jsonrpc::decode`](crate::jsonrpc::decode).
//!
//! ```
//! use mcp_wire::model::{CallToolResult, ContentBlock, MrtrResult, ResultType};
//!
//! let json = serde_json::json!({
//!     "resultType": "complete",
//!     "content": [{"type": "text", "text": "22°C"}],
//!     "structuredContent": {"celsius": 22},
//!     "vendorField": true
//! });
//! let result: MrtrResult<CallToolResult> = serde_json::from_value(json.clone()).unwrap();
//! let MrtrResult::Complete(result) = &result else { panic!() };
//! assert_eq!(result.result_type, Some(ResultType::Complete));
//! assert_eq!(result.content[0].as_text(), Some("22°C"));
//! assert_eq!(result.extra["vendorField"], true);
//! assert_eq!(serde_json::to_value(result).unwrap(), json);
//! ```

mod capabilities;
mod common;
mod content;
mod elicitation;
mod errors;
mod lifecycle;
mod messages;
mod mrtr;
mod prompts;
mod resources;
mod roots;
mod sampling;
mod subscriptions;
mod tasks;
mod tools;
mod utilities;

pub use self::capabilities::*;
pub use self::common::{
    Annotations, CacheScope, Cursor, Extra, Icon, IconTheme, Implementation, LoggingLevel,
    ProgressToken, RequestMeta, ResultMeta, ResultType, Role, UnknownLoggingLevel, tags,
};
pub use self::content::*;
pub use self::elicitation::*;
pub use self::errors::*;
pub use self::lifecycle::*;
pub use self::messages::*;
pub use self::mrtr::*;
pub use self::prompts::*;
pub use self::resources::*;
pub use self::roots::*;
pub use self::sampling::*;
pub use self::subscriptions::*;
pub use self::tasks::*;
pub use self::tools::*;
pub use self::utilities::*;
