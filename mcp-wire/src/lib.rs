//! JSON-RPC 2.0 and Model Context Protocol wire types and framing codecs.
//!
//! This crate contains no networking code and no runtime: it is sans-IO, like `quinn-proto`.
//! Transports push bytes in and pull messages out; nothing here blocks, spawns or reads a clock.
//!
//! ```text
//!   bytes from a peer ──► framing (sse / ndjson) ──► jsonrpc ──► model types
//!   model types ──► jsonrpc ──► framing ──► bytes to a peer
//! ```
//!
//! - [`jsonrpc`]: ids, requests, notifications, responses, the wire error object, batches.
//! - [`model`]: the MCP model as one superset of every published revision.
//! - [`names`]: method names, reserved `_meta` keys, error codes and HTTP header names.
//! - [`skill`]: the Skills extension's names, digests and `SKILL.md` frontmatter (SEP-2640).
//! - [`header`]: the `Mcp-Name` / `Mcp-Param-*` header value codec of 2026-07-28.
//! - [`sse`]: Server-Sent Events framing (encoder and push decoder).
//! - [`ndjson`]: newline-delimited JSON framing for stdio.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Feature badges on docs.rs (nightly rustdoc, `--cfg docsrs`) for feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]
pub mod header;
pub mod jsonrpc;
pub mod model;
pub mod names;
pub mod ndjson;
pub mod skill;
pub mod sse;
pub mod trace;

// The README's examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
