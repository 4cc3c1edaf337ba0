//! A gateway that serves any MCP server on every protocol revision and transport.
//!
//! The upstream is reached with our client ([`mcp_client::Client`]: Streamable HTTP, HTTP+SSE
//! or stdio, on the revision it negotiates or the one pinned); its tools, resources, resource
//! templates, prompts and completions become the declarations of a [`mcp_server::Server`],
//! which serves them on every revision as it serves its own: a 2024-11-05 client over
//! HTTP+SSE and a 2026-07-28 client over Streamable HTTP see the same upstream, each in its
//! revision's shape. This is translation, not forwarding bytes: each downstream request is
//! decoded by the server, forwarded as a call of the client, and the answer encoded for the
//! downstream revision.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_client::Client;
//! use mcp_gateway::Gateway;
//!
//! let upstream = Client::builder().connect_http("https://example.com/mcp").await?;
//! let gateway = Gateway::builder().start(upstream).await?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! gateway.serve_http(listener, std::future::pending()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! What passes through:
//!
//! - listings: every page of the upstream's lists, with titles, descriptions, input and output
//!   schemas, annotations, icons, MIME types and `_meta`; the downstream server projects the
//!   schemas per revision (a tool whose schema cannot be shown losslessly on an old revision
//!   is not listed there), and a declaration it cannot serve at all is left out
//!   ([`Gateway::skipped`]);
//! - `tools/call` (arguments, then `content`, `structuredContent`, `isError`), with the
//!   upstream's progress as the downstream call's progress and a downstream cancellation
//!   cancelling the upstream call; `resources/read`, `prompts/get`, `completion/complete`;
//! - the upstream's list changes (the catalog is listed again and the kinds that changed are
//!   announced downstream) and resource updates (to the downstream sessions subscribed);
//! - with a [`QuestionRelay`], the upstream's questions during a forwarded request
//!   (elicitation, sampling, roots), asked of the downstream client by its revision's
//!   mechanism, and its log messages, passed on to that client.
//!
//! Authorization: downstream clients authenticate to the gateway's own endpoint
//! ([`mcp_server::http::HttpConfig::auth`], through [`Gateway::serve_http_with`]); the
//! upstream client carries the gateway's own credentials. A downstream token is never
//! forwarded upstream: nothing of a downstream request but its method and parameters
//! reaches the upstream.
//!
//! Upstream connections: [`GatewayBuilder::start`] shares one client among every downstream
//! session; [`GatewayBuilder::start_per_session`] gives each downstream session a client of its
//! own (for a stdio upstream, a child process each), bounded and ended with the session.
//!
//! The repository's `docs/gateway.md` lists what is not passed through yet.
//!
//! **Layering:** depends on `mcp-server`, `mcp-client` and `mcp-hub`.

#![deny(missing_docs)]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Feature badges on docs.rs (nightly rustdoc, `--cfg docsrs`) for feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod auth;
mod children;
mod error;
mod gateway;
mod link;
mod relay;
mod translate;

pub use auth::DownstreamAuth;
pub use error::GatewayError;
pub use gateway::{
    DEFAULT_CHILD_IDLE, DEFAULT_MAX_CHILDREN, DEFAULT_MAX_UPSTREAM_CALLS,
    DEFAULT_MAX_UPSTREAM_SUBSCRIPTIONS, Gateway, GatewayBuilder, connect_hub,
};
/// The downstream server's Prometheus metrics ([`GatewayBuilder::metrics`]).
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use mcp_server::Metrics;
/// How tools' schemas are shown to 2025-11-25 clients ([`GatewayBuilder::tool_schemas`]).
pub use mcp_server::ToolSchemas;
/// A certificate chain and key for [`Gateway::serve_https_with`].
pub use mcp_server::http::Tls;
/// Serves the metrics at `GET /metrics` on a listener of its own ([`GatewayBuilder::metrics`]).
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use mcp_server::http::serve_metrics;
pub use relay::QuestionRelay;
pub use translate::Skipped;
