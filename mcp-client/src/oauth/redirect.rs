//! How the user agent visits the authorization endpoint: the [`RedirectHandler`] trait, and
//! [`FollowRedirect`], which fetches the authorization URL itself and reads the redirect (for
//! authorization servers that approve without a person: tests, the conformance suite).

use std::fmt;

use bytes::Bytes;
use http::{HeaderMap, Method};

use super::OAuthError;
use super::http::HttpClient;
use crate::transport::{BoxFuture, Https};

/// Takes the user through the authorization endpoint and hands back where it sent them.
///
/// An application opens `authorization_url` in a browser, waits for the browser to arrive at
/// `redirect_uri` (a loopback listener, a custom scheme), and returns that full URL with its
/// query (`code`, `state`, `iss` or `error`). The OAuth client checks everything in it.
pub trait RedirectHandler: fmt::Debug + Send + Sync + 'static {
    /// Visits `authorization_url`; returns the URL the authorization server redirected to.
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>>;

    /// Gets ready to receive the redirect before anything is registered or requested, and
    /// returns the redirect URI to use for this authorization: the configured one
    /// ([`OAuthConfig::redirect_uri`](super::OAuthConfig::redirect_uri)), or one made from it,
    /// such as a loopback URI with the port the operating system gave a listener bound on
    /// port 0 (RFC 8252 §7.3). The URI returned is the one registered, sent in the
    /// authorization and token requests, and passed to [`RedirectHandler::authorize`].
    /// Default: `redirect_uri` unchanged.
    ///
    /// ```
    /// use mcp_client::oauth::{OAuthError, RedirectHandler};
    /// use mcp_client::transport::BoxFuture;
    ///
    /// /// Listens on an ephemeral loopback port (the listening itself left out here).
    /// #[derive(Debug)]
    /// struct Loopback;
    ///
    /// impl RedirectHandler for Loopback {
    ///     fn prepare<'a>(&'a self, _configured: &'a str) -> BoxFuture<'a, Result<String, OAuthError>> {
    ///         Box::pin(async { Ok("http://127.0.0.1:49152/callback".to_owned()) })
    ///     }
    ///     fn authorize<'a>(&'a self, _url: &'a str, _redirect_uri: &'a str) -> BoxFuture<'a, Result<String, OAuthError>> {
    ///         Box::pin(async { Err(OAuthError::Redirect("left out".into())) })
    ///     }
    /// }
    /// ```
    fn prepare<'a>(&'a self, redirect_uri: &'a str) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin(async move { Ok(redirect_uri.to_owned()) })
    }

    /// Told just before a step-up authorization why it is needed: the server refused a request
    /// for want of the scopes `needed` while the token held has `held` (both space-separated;
    /// `held` may be empty). An interactive application says so to the user. Default: nothing.
    fn step_up(&self, held: &str, needed: &str) {
        let _ = (held, needed);
    }
}

/// Fetches the authorization URL and returns the `Location` of its redirect, without a
/// browser: for an authorization server that approves at once (the development
/// authorization server with auto-approval, the conformance suite's).
#[derive(Debug, Clone)]
pub struct FollowRedirect {
    http: HttpClient,
}

impl FollowRedirect {
    /// With the default HTTPS settings.
    pub fn new() -> Self {
        Self {
            http: HttpClient::new(None),
        }
    }

    /// With these HTTPS settings (a test CA).
    pub fn with_https(https: Https) -> Self {
        Self {
            http: HttpClient::new(Some(https)),
        }
    }
}

impl Default for FollowRedirect {
    fn default() -> Self {
        Self::new()
    }
}

impl RedirectHandler for FollowRedirect {
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        _redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin(async move {
            let response = self
                .http
                .send(
                    Method::GET,
                    authorization_url,
                    HeaderMap::new(),
                    Bytes::new(),
                )
                .await?;
            if !(300..400).contains(&response.status) {
                return Err(OAuthError::Redirect(format!(
                    "the authorization endpoint answered HTTP {} instead of a redirect",
                    response.status
                )));
            }
            let location = response
                .headers
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| OAuthError::Redirect("a redirect without Location".into()))?;
            let base = url::Url::parse(authorization_url)
                .map_err(|e| OAuthError::Redirect(e.to_string()))?;
            let target = base
                .join(location)
                .map_err(|e| OAuthError::Redirect(format!("bad Location: {e}")))?;
            Ok(target.to_string())
        })
    }
}
