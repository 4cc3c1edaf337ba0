//! The MCP server: one registry of handler declarations served on every protocol revision.
//!
//! Declare a server once with [`Server::builder`]: its identity, [`Tool`]s (typed async
//! handlers whose JSON Schema is derived with schemars), [`Resource`]s and
//! [`ResourceTemplate`]s, [`Prompt`]s and a [`Completer`]. Then serve it over HTTP with
//! [`http::serve`] (Streamable HTTP at `/mcp` and HTTP+SSE at `/sse`, every revision; or mount
//! an [`http::HttpEndpoint`] in axum or any tower stack), on stdio with [`serve_stdio`], or feed
//! it messages through the socket-free entry point [`Server::handle`]. Every transport enters
//! there (the HTTP endpoint with an [`Input::Decoded`] body, read with the request's headers
//! after its session checks), so a message gets the same answer on every transport
//! (`tests/tests/it/same_bytes.rs` compares the bytes).
//!
//! ```no_run
//! use mcp_server::{Json, Server, Tool};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs { a: i64, b: i64 }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Sum { sum: i64 }
//!
//! async fn add(args: AddArgs) -> Json<Sum> {
//!     Json(Sum { sum: args.a + args.b })
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let server = Server::builder("calc", "1.0").tool(Tool::new("add", add)).build()?;
//!     if std::env::args().any(|arg| arg == "--stdio") {
//!         // stdio: one JSON-RPC message per line on stdin and stdout, until stdin closes.
//!         mcp_server::serve_stdio(server).await?;
//!     } else {
//!         // HTTP: Streamable HTTP at /mcp and HTTP+SSE at /sse, until Ctrl-C.
//!         mcp_server::http::serve("127.0.0.1:8080", server).await?;
//!     }
//!     Ok(())
//! }
//! ```
//!
//! Several workers share sessions, questions and streams through a hub
//! ([`ServerBuilder::state_store`], [`ServerBuilder::event_log`]); the repository's
//! `docs/deploying.md` is the guide.
//!
//! ```text
//! bytes ──► mcp-wire decode ──► AdapterSet selection ──► adapter decode (normalized Call)
//!       ──► registry + handler (Exchange) ──► adapter-shaped result ──► bytes
//! ```
//!
//! Everything that differs between revisions is decided by the adapter's flags
//! (`can_ask`, `can_push_ask`, `asks_in_arguments`, `has_handshake`, ...), never by a version
//! string. A handler that takes an [`Exchange`] can [`ask`](Exchange::ask) the user on every
//! revision: the question becomes the result on 2026-07-28 (MRTR), a pushed request on
//! 2025-06-18 and 2025-11-25, and a result naming the `mcpAnswers`/`mcpState` arguments on
//! 2025-03-26 and 2024-11-05. Where the question is the result or rides in the arguments,
//! the handler runs again from the start when the answers come (possibly on another worker),
//! so it reads and asks first and does its irreversible work after the final question, as
//! `deploy` below does.
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! use mcp_server::{Context, Exchange, Json, Question, Server, Tool, ToolError};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use serde_json::json;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs { a: i64, b: i64 }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Sum { sum: i64 }
//!
//! async fn add(args: AddArgs) -> Json<Sum> {
//!     Json(Sum { sum: args.a + args.b })
//! }
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct DeployArgs { service: String }
//!
//! static DEPLOYED: AtomicUsize = AtomicUsize::new(0);
//!
//! async fn deploy(args: DeployArgs, ex: Exchange) -> Result<String, ToolError> {
//!     // May run once per attempt: only reading and asking before the final question.
//!     let answer = ex.ask("confirm", Question::elicit(format!("Deploy {}?", args.service))).await?;
//!     if !answer.accepted() {
//!         return Ok("kept".into());
//!     }
//!     // After the final question: runs once, on the attempt that has every answer.
//!     DEPLOYED.fetch_add(1, Ordering::SeqCst);
//!     Ok("deployed".into())
//! }
//!
//! let server = Server::builder("demo", "1.0")
//!     .tool(Tool::new("add", add).read_only())
//!     .tool(Tool::new("deploy", deploy).destructive())
//!     .build()?;
//!
//! # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
//! // One message in, the messages to send out: no socket needed.
//! let ctx = Context::connection();
//! let meta = json!({
//!     "io.modelcontextprotocol/protocolVersion": "2026-07-28",
//!     "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
//! });
//! let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
//!     "params": {"_meta": meta, "name": "add", "arguments": {"a": 2, "b": 3}}});
//! let out = server.handle_all(call, &ctx).await;
//! assert_eq!(out[0].to_value()["result"]["structuredContent"], json!({"sum": 5}));
//!
//! // On 2026-07-28 a question is the result; the client calls again with the answer.
//! let ask = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
//!     "params": {"_meta": meta, "name": "deploy", "arguments": {"service": "web"}}});
//! let out = server.handle_all(ask, &ctx).await;
//! let question = out[0].to_value()["result"].clone();
//! assert_eq!(question["resultType"], "input_required");
//! assert_eq!(DEPLOYED.load(Ordering::SeqCst), 0);
//! let retry = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
//!     "params": {"_meta": meta, "name": "deploy", "arguments": {"service": "web"},
//!         "inputResponses": {"confirm": {"action": "accept", "content": {}}},
//!         "requestState": question["requestState"]}});
//! let out = server.handle_all(retry, &ctx).await;
//! assert_eq!(out[0].to_value()["result"]["content"][0]["text"], "deployed");
//! assert_eq!(DEPLOYED.load(Ordering::SeqCst), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Notifications
//!
//! [`Server::notifier`] gives a [`Notifier`] that announces changes from anywhere
//! (`resources/updated` for a URI, the three `list_changed`), through the hub's event log, so
//! every worker sharing it delivers them; [`Server::add_tool`] and its siblings change the
//! registry at run time and announce it. Clients receive them on the stream their revision
//! has: after `resources/subscribe` on a connection with a handshake (stdio delivers them
//! itself), on a legacy GET stream ([`Server::notifications`], whose hub cursors are the SSE
//! event ids and resume a `Last-Event-ID`), or on a 2026-07-28 `subscriptions/listen` request,
//! which stays open until the client closes it or the server ends it
//! ([`Server::close_streams`], [`Context::close_listeners`]).
//!
//! # What this crate does not do
//!
//! - It is not an authorization server: [`auth`] makes the endpoint an OAuth 2.1 *resource
//!   server* (it verifies tokens from an issuer you trust); the development authorization
//!   server it includes is for tests and demos, not production.
//! - It does not terminate TLS for you behind a load balancer, and it does not pick a hub: one
//!   process keeps its state in memory until you give it a shared state store and event log.
//! - It does not talk to a model, and it does not host client-side features (sampling, roots):
//!   it asks the client for them through [`Exchange`].
//! - It creates no tasks on the revisions before 2026-07-28 (their results carry no
//!   `resultType`, so a task could not be told from a tool result): a tool that supports tasks
//!   ([`TaskSupport::Optional`]) runs as an ordinary call there, and one that requires them is
//!   refused.
//!
//! # Safe defaults
//!
//! Everything a peer can make the server hold is bounded, and each bound is a builder option
//! documented where it is set: POST bodies (4 MiB), connections (4,096), sessions (10,000),
//! calls in flight per session (64), GET streams per session (4), queued messages per stream,
//! header read and idle timeouts (10 s, 60 s), stdio line length, pages of lists, question
//! waits. What happens at each limit (a clear error, backpressure, a dropped stream) is part of
//! its documentation. A server bound to a loopback address accepts only localhost `Host` names
//! and origins (against DNS rebinding); anything listening more widely states its allowed
//! hosts and origins. No authorization is the default only because it cannot be guessed:
//! put a server on a network with [`HttpConfig::auth`](http::HttpConfig::auth). Tokens,
//! secrets and arguments never reach the logs; spans carry the method, tool name and outcome.
//!
//! **Layering:** depends on `mcp-wire`, `mcp-schema`, `mcp-adapters`, `mcp-hub` and `mcp-auth`.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Feature badges on docs.rs (nightly rustdoc, `--cfg docsrs`) for feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]

// Used by the demo binaries only (feature `demo-logging`), which share the package's dependencies.
#[cfg(feature = "demo-logging")]
use tracing_subscriber as _;
/// The hash map of the server's own tables (sessions, in-flight calls, the registry's
/// indexes): foldhash, seeded per map, instead of SipHash. These tables are looked up on
/// every call with short keys; their keys are the server's own (session ids, registered
/// names) or few and bounded per session (request ids of calls in flight).
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

mod ask;
pub mod auth;
mod completion;
mod content;
mod declared;
mod dispatch;
mod error;
mod exchange;
mod extension;
mod handler;
pub mod http;
mod icon;
mod limit;
mod listen;
#[cfg(feature = "metrics")]
mod metrics;
mod notifier;
mod notify;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod otel;
mod page;
mod prompt;
mod refusal;
mod resource;
mod schema;
mod server;
mod session;
mod sink;
mod skills;
mod state;
mod stdio;
mod task;
mod tool;
mod trace_link;

pub use ask::{Answer, AnswerAction, Question};
pub use completion::{
    Completer, Completion, CompletionRef, CompletionRequest, MAX_COMPLETION_VALUES,
};
pub use declared::Replaced;
pub use dispatch::{Context, Input, Outgoing, Reply};
pub use error::{Interrupt, PromptError, RegistrationError, ResourceError, StdioError, ToolError};
pub use exchange::{Exchange, SessionRef};
pub use extension::{Extension, ExtensionError, ExtensionRequest};
pub use handler::{
    FromExchange, Handler, NoArgs, PartsAndExchange, PartsOnly, State, WithInput,
    WithInputAndExchange,
};
pub use icon::Icon;
pub use limit::{
    DEFAULT_RATE_LIMIT_LEASE, OnHubFailure, RATE_LIMITED_CODE, RateLimit, RateLimitError,
};
/// What handlers return: the shared model of `mcp_wire::model`, which our client reads too.
pub use mcp_wire::model::{
    CallToolResult, ContentBlock, GetPromptResult, PromptMessage, ResourceContents, Role,
};
#[cfg(feature = "metrics")]
pub use metrics::Metrics;
pub use notifier::{Change, Notifier, NotifyError};
pub use notify::{ChangeError, ChangeStream, NotificationFilter, NotificationStream};
pub use prompt::{IntoPromptResult, Prompt};
pub use resource::{IntoResourceContents, Resource, ResourceRequest, ResourceTemplate};
pub use server::{DEFAULT_PAGE_SIZE, Server, ServerBuilder, ToolSchemas};
pub use session::SessionConfig;
pub use skills::{
    DEFAULT_MAX_DEPTH, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES_PER_SKILL,
    DEFAULT_MAX_SKILL_BYTES, DEFAULT_MAX_SKILLS, DEFAULT_SKILLS_PAGE_SIZE, MAX_SKILLS_PAGE_SIZE,
    SKILLS_EXTENSION, Skill, Skills, SkillsBuilder, SkillsError,
};
pub use stdio::{DEFAULT_MAX_LINE, StdioConfig, serve_stdio, serve_stdio_with};
pub use task::{TASKS_EXTENSION, TaskSupport, Tasks};
pub use tool::{IntoToolResult, Json, Tool, ToolAnnotations};

/// Re-exported so handlers can name levels and revisions without another dependency.
pub use mcp_adapters::{CacheHint, CacheScope, LogLevel, Revision};

// The README's examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
