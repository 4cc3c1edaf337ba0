//! Sans-IO OAuth 2.1 pieces for the Model Context Protocol.
//!
//! MCP servers are OAuth 2.1 resource servers (2025-03-26 on, the resource-server model from
//! 2025-06-18) and MCP clients are OAuth clients. This crate holds what both sides share, as
//! data and pure functions:
//!
//! - [`ProtectedResourceMetadata`] (RFC 9728) and [`AuthorizationServerMetadata`] (RFC 8414,
//!   OpenID Connect Discovery), where to find them ([`protected_resource_metadata_urls`],
//!   [`authorization_server_metadata_urls`]) and the checks a client must make before using
//!   them (issuer, resource);
//! - [`Challenge`] and [`BearerChallenge`]: `WWW-Authenticate` parsing and writing;
//! - [`ScopeSet`] and the specification's scope rules ([`select_scopes`], [`step_up`]);
//! - PKCE with S256 ([`PkceVerifier`]);
//! - [`canonical_resource`] (RFC 8707) and [`TokenRules`]: what every access token must pass
//!   at a resource server (issuer, audience, expiry with leeway), giving the [`Principal`]
//!   that state is bound to.
//!
//! - [`dpop`]: the checks of a DPoP proof (RFC 9449) both servers make.
//!
//! It does no I/O and has no runtime. It verifies one kind of signature, a DPoP proof's (by
//! the key the proof carries, with `jsonwebtoken`); fetching documents and keys, and checking
//! an access token's signature or introspecting it, belong to the server and client crates,
//! which hand the verified [`Claims`] to [`TokenRules::check`].
//!
//! ```
//! use mcp_auth::{BearerChallenge, ProtectedResourceMetadata, protected_resource_metadata_path};
//!
//! // A resource server at https://mcp.example.com/mcp tells a client without a token where
//! // to start:
//! let path = protected_resource_metadata_path("/mcp");
//! let challenge = BearerChallenge::new(format!("https://mcp.example.com{path}")).scope("mcp:read");
//! assert_eq!(
//!     challenge.to_string(),
//!     r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:read""#
//! );
//! let document = ProtectedResourceMetadata::new("https://mcp.example.com/mcp")
//!     .authorization_server("https://auth.example.com");
//! assert!(document.check_resource("https://mcp.example.com/mcp").is_ok());
//! ```

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Feature badges on docs.rs (nightly rustdoc, `--cfg docsrs`) for feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]
pub mod challenge;
pub mod dpop;
pub mod metadata;
pub mod pkce;
pub mod scope;
pub mod token;

pub use challenge::{BearerChallenge, BearerScheme, Challenge, ChallengeError};
pub use dpop::{DpopError, DpopRequest, DpopVerifier, VerifiedProof};
pub use metadata::{
    AuthorizationServerMetadata, MetadataError, ProtectedResourceMetadata,
    authorization_server_metadata_urls, fallback_endpoints, protected_resource_metadata_path,
    protected_resource_metadata_urls,
};
pub use pkce::{PkceVerifier, RandomnessError};
pub use scope::{ScopeSet, select_scopes, step_up};
pub use token::{
    Audience, Claims, Principal, ResourceError, TokenError, TokenRules, canonical_resource,
};

// The README's examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
