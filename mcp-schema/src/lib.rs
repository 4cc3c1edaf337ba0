//! JSON Schema projection of MCP tool schemas onto every protocol revision.
//!
//! A tool is declared once, with a full JSON Schema 2020-12 `inputSchema` (and an optional
//! `outputSchema`). Older revisions cannot hold all of that. This crate decides, as pure
//! functions over `serde_json::Value`, what each revision is shown: local `$ref`s inlined,
//! nullable unions collapsed, `x-mcp-header` annotations stripped, and anything that cannot be
//! simplified losslessly reported as "not offered". It also extracts `x-mcp-header`
//! annotations and validates arguments with validators compiled once.
//!
//! **Layering:** depends on `mcp-wire` only (for the header-name token syntax and the header
//! value types), plus `serde_json`, `jsonschema` and `thiserror`.
//! No runtime, no I/O: no `$ref` is ever fetched.
//!
//! ```text
//!   declared inputSchema ──► project_input(profile)  ──► Offered(schema) | NotOffered(why)
//!   declared outputSchema ─► project_output(profile) ──► Shown | SchemaHidden | Dropped
//!   declared inputSchema ──► extract_headers         ──► [(property path, header name)]
//!   declared inputSchema ──► Validator::compile      ──► validate(arguments) ──► [issues]
//! ```
//!
//! - [`profile`]: [`SchemaProfile`], what a revision can hold, with one constant per revision.
//! - [`projection`]: the projection rules, one function each, listed in the module docs.
//! - [`cache`]: [`ProjectionCache`], computed once per tool and profile.
//! - [`header`]: `x-mcp-header` extraction and its registration errors.
//! - [`validate`]: [`Validator`], compiled once, draft-07 or 2020-12.
//! - [`asking`]: the `mcpAnswers`/`mcpState` properties of the 2025-03-26 and 2024-11-05
//!   asking-in-arguments mechanism.
//!
//! The crate has no feature flags.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Feature badges on docs.rs (nightly rustdoc, `--cfg docsrs`) for feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod asking;
pub mod cache;
pub mod header;
mod keywords;
mod pointer;
pub mod profile;
pub mod projection;
pub mod validate;

pub use asking::{AskingPropertiesError, MCP_ANSWERS, MCP_STATE, with_asking_properties};
pub use cache::{ProjectionCache, ToolProjection};
pub use header::{HeaderAnnotationError, HeaderBinding, extract_headers};
pub use profile::{Dialect, InputSupport, OutputSupport, SchemaProfile};
pub use projection::{
    NotOffered, NotOfferedReason, OutputDrop, OutputProjection, Projection, ProjectionLimits,
    project_input, project_input_with, project_output, project_output_with,
};
pub use validate::{SchemaError, ValidationIssue, Validator, ValidatorOptions};

// The README's examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
