//! [`Routes`]: more paths served on the endpoint's listener, beside MCP.

use std::net::SocketAddr;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Method, Request, Response, Uri};

/// Paths that an [`HttpEndpoint`](crate::http::HttpEndpoint) serves beside MCP, on the same
/// listener: an OAuth authorization server for development (the `everymcp-dev-auth` crate
/// implements this trait), a status page, a webhook. (The health probes are built in: see
/// [`HttpConfig::liveness_path`](crate::http::HttpConfig::liveness_path); a route that
/// claims their path answers it instead.) Mount one with
/// [`HttpConfig::routes`](crate::http::HttpConfig::routes).
///
/// Every request first passes the endpoint's `Host` and `Origin` checks. Then each mounted
/// `Routes` is asked, in the order mounted, whether it [`claims`](Self::claims) the request;
/// the first that does answers it with [`serve`](Self::serve), and the request never reaches
/// MCP routing nor the endpoint's resource server (a claimed path is not protected by
/// [`HttpConfig::auth`](crate::http::HttpConfig::auth): the routes do their own checks). The
/// body is read before `serve` is called, within the endpoint's
/// [`body_limit`](crate::http::HttpConfig::body_limit) (a larger one gets 413 without
/// reaching the routes).
///
/// ```
/// use bytes::Bytes;
/// use futures::future::BoxFuture;
/// use http::{Method, Request, Response, Uri};
/// use mcp_server::http::{HttpConfig, Routes};
///
/// #[derive(Debug)]
/// struct Status;
///
/// impl Routes for Status {
///     fn claims(&self, _: &Method, uri: &Uri) -> bool {
///         uri.path() == "/status"
///     }
///
///     fn serve(
///         &self,
///         _: Option<std::net::SocketAddr>,
///         _: Request<Bytes>,
///     ) -> BoxFuture<'_, Response<Bytes>> {
///         Box::pin(async { Response::new(Bytes::from_static(b"ok")) })
///     }
/// }
///
/// let config = HttpConfig::new().routes(Status);
/// # let _ = config;
/// ```
pub trait Routes: std::fmt::Debug + Send + Sync + 'static {
    /// Whether this answers a request for `uri` with `method` (called for every request that
    /// passed the `Host`/`Origin` checks: keep it cheap).
    fn claims(&self, method: &Method, uri: &Uri) -> bool;

    /// Answers a claimed request. `peer` is the client's address when the endpoint runs on
    /// its own socket ([`serve`](crate::http::serve) and its siblings), `None` when it is
    /// mounted in another server.
    fn serve(
        &self,
        peer: Option<SocketAddr>,
        request: Request<Bytes>,
    ) -> BoxFuture<'_, Response<Bytes>>;
}
