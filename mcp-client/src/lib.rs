//! The MCP client for every protocol revision and transport.
//!
//! One [`Client`] speaks whichever revision the server does — 2024-11-05 (HTTP+SSE), 2025-03-26,
//! 2025-06-18, 2025-11-25 or 2026-07-28 — over Streamable HTTP, HTTP+SSE, stdio, or a
//! [`transport::Transport`] of your own. It picks the revision the way the spec's dual-era
//! client does (or speaks the one you pin), and from then on every difference between revisions
//! is decided by the `mcp-adapters` flags of the revision in use, never by comparing version
//! strings.
//!
//! ```text
//!   Client ──► negotiate (adapter flags) ──► _meta / headers / session ──► Transport
//!     ▲                                                                     │
//!     └── results, questions (on_ask), notifications (on_notification) ◄────┘
//! ```
//!
//! - Calls: [`Client::list_tools`] (and a stream over all pages, [`Client::list_stream`]),
//!   [`Client::call_tool`], [`Client::read_resource`], [`Client::get_prompt`],
//!   [`Client::complete`], or any method with [`Client::request`]. Each has a timeout, and
//!   dropping its future cancels it on the server.
//! - Results: the `Client` methods return each result as the `serde_json::Value` the server
//!   sent (nothing dropped, whatever the revision); [`Client::typed`] makes the same calls and
//!   reads the results into [`model`] types ([`model::Tool`], [`model::CallToolResult`] ...).
//! - Asking: one [`ClientBuilder::on_ask`] callback answers elicitation (form and URL), sampling
//!   and roots, whether the server uses MRTR (2026-07-28), pushed requests (2025-06-18,
//!   2025-11-25) or the `mcpAnswers`/`mcpState` argument convention (2025-03-26, 2024-11-05).
//! - Notifications: [`ClientBuilder::on_notification`] and [`Client::listen`].
//! - Errors: one opaque [`Error`] with [`Error::kind`] and the JSON-RPC [`ErrorObject`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # // A server to talk to: one tool, one resource, one prompt, on 127.0.0.1.
//! # use mcp_server::{Prompt, Resource, ResourceRequest, Server, Tool};
//! # #[derive(serde::Deserialize, schemars::JsonSchema)] struct AddArgs { a: i64, b: i64 }
//! # async fn add(x: AddArgs) -> String { (x.a + x.b).to_string() }
//! # #[derive(serde::Deserialize, schemars::JsonSchema)] struct GreetArgs { name: String }
//! # async fn greet(x: GreetArgs) -> String { format!("Please greet {}.", x.name) }
//! # async fn config(_: ResourceRequest) -> String { "mode = production".into() }
//! # let server = Server::builder("calc", "1.0").tool(Tool::new("add", add))
//! #     .resource(Resource::new("config://app", "config", config)).prompt(Prompt::new("greet", greet)).build()?;
//! # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! # let url = format!("http://{}/mcp", listener.local_addr()?);
//! # let endpoint = mcp_server::http::HttpEndpoint::new(server, mcp_server::http::HttpConfig::new());
//! # tokio::spawn(mcp_server::http::serve_with_shutdown(listener, endpoint, std::future::pending::<()>()));
//! use mcp_client::Client;
//! use serde_json::json;
//!
//! let client = Client::builder().connect_http(&url).await?; // negotiates the revision
//! let tools = client.list_tools().await?;
//! assert_eq!(tools[0]["name"], "add");
//! let result = client.call_tool("add", json!({"a": 2, "b": 3})).await?;
//! assert_eq!(result["content"][0]["text"], "5");
//! client.close().await?;
//! # Ok(())
//! # }
//! ```
//!
//! Over stdio the client spawns the server and speaks over its stdin and stdout (the child is
//! killed if the client is dropped without [`Client::close`]):
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp_client::Error> {
//! use mcp_client::Client;
//! use mcp_client::transport::Stdio;
//!
//! let server = Stdio::builder("my-mcp-server").arg("--verbose");
//! let client = Client::builder().connect_stdio(server).await?;
//! let tools = client.list_tools().await?;
//! client.close().await?;
//! # let _ = tools;
//! # Ok(())
//! # }
//! ```
//!
//! # What this crate does not do
//!
//! - It does not open a browser: an OAuth login ([`ClientBuilder::oauth`]) hands the
//!   authorization URL to your redirect handler, which shows it to the user (or, in tests,
//!   follows it). OAuth covers Streamable HTTP; over HTTP+SSE pass a token with
//!   [`ClientBuilder::header`].
//! - It does not run a model or show a user interface: questions reach your
//!   [`ClientBuilder::on_ask`] callback, which decides how to answer.
//! - It never prefetches or follows what a server points at (resource links, URL elicitation
//!   targets); the application decides.
//!
//! # Safe defaults
//!
//! Every call has a timeout (60 s) and dropping its future cancels it on the server. What a
//! server sends is bounded: one message (16 MiB), the notifications and requests waiting for
//! the application (1,024 per queue, 16 MiB for stdio and HTTP+SSE), the pages, items and bytes
//! of one listing (1,000 pages, 100,000 items, 64 MiB), the question rounds of one call (8), the
//! server's requests answered at once. A server that breaks a limit gets a clear error
//! ([`ErrorKind::LimitExceeded`], [`ErrorKind::Protocol`]), never unbounded memory. HTTPS
//! verifies certificates against the web PKI roots (plus any CA you add); an `http://` URL is
//! for loopback and tests. The endpoint of an HTTP+SSE server must be on the stream's own
//! origin.
//!
//! **Layering:** depends on `mcp-wire`, `mcp-schema` and `mcp-adapters` only; never on
//! `mcp-server` or `mcp-hub`.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Feature badges on docs.rs (nightly rustdoc, `--cfg docsrs`) for feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]
mod ask;
mod asking;
mod builder;
mod cache;
mod calls;
mod client;
mod error;
mod limited;
mod listen;
mod listeners;
mod negotiate;
pub mod oauth;
mod oauth_error;
mod polling;
pub mod rate_limit;
mod skills;
pub mod task;
pub mod trace;
pub mod transport;
mod typed;

pub use ask::{Answer, Asks, Question, QuestionKind};
pub use builder::ClientBuilder;
pub use calls::{ListKind, Page};
pub use client::{CallOptions, Client, Progress, ServerDescription};
pub use error::{Error, ErrorKind};
pub use listen::Listener;
pub use listeners::{ListenEnd, StreamState, Subscriptions};
pub use mcp_adapters::{INPUT_REQUIRED_META, LogLevel, Revision};
pub use mcp_wire::jsonrpc::{ErrorObject, Notification};
/// The MCP model types the typed results are read into (re-exported from `mcp-wire`).
pub use mcp_wire::model;
pub use rate_limit::RateLimitRetry;
pub use skills::{
    SKILLS_EXTENSION, SkillEntry, SkillError, SkillFile, SkillFileRef, SkillResources, SkillsPage,
};
pub use task::{Task, TaskHandle, TaskPolling, TaskStatus, ToolCall};
pub use trace::TracePropagation;
pub use typed::Typed;

// The README's examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
