//! Protocol extensions (SEP-2133): declared by the server, negotiated with each client.
//!
//! An [`Extension`] has an identifier (`{vendor-prefix}/{name}`, such as
//! `com.example/search`), the settings object the server advertises under
//! `capabilities.extensions[id]`, and the request methods it adds. The server advertises it in
//! `server/discover` (2026-07-28) and in its `initialize` result (the handshake revisions, as
//! SEP-2133 specifies for them); a client declares the extensions it supports in its own
//! capabilities, per request on 2026-07-28 and once at `initialize` before.
//!
//! A method of a [`required`](Extension::required) extension called by a client that did not
//! declare it is refused with the revision's missing-capability error (`-32021` with
//! `data.requiredCapabilities.extensions` on 2026-07-28). A method no extension adds is
//! `-32601`, as on a server without extensions.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// The erased handler of one extension method.
pub(crate) type ErasedMethod = Arc<
    dyn Fn(ExtensionRequest) -> BoxFuture<'static, Result<Value, ExtensionError>> + Send + Sync,
>;

/// A protocol extension the server offers.
///
/// ```
/// use mcp_server::{Extension, ExtensionError, ExtensionRequest, Server};
/// use serde_json::{Value, json};
///
/// async fn search(request: ExtensionRequest) -> Result<Value, ExtensionError> {
///     let Some(query) = request.params().get("query").and_then(Value::as_str) else {
///         return Err(ExtensionError::InvalidParams("search needs a query".into()));
///     };
///     Ok(json!({"hits": [format!("found {query}")]}))
/// }
///
/// let server = Server::builder("demo", "1.0")
///     .extension(
///         Extension::new("com.example/search")
///             .settings(json!({"maxHits": 10}))
///             .method("com.example/search", search),
///     )
///     .build()
///     .unwrap();
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct Extension {
    pub(crate) id: String,
    pub(crate) settings: Value,
    pub(crate) required: bool,
    pub(crate) methods: Vec<(String, ErasedMethod)>,
}

impl fmt::Debug for Extension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extension")
            .field("id", &self.id)
            .field("settings", &self.settings)
            .field("required", &self.required)
            .field(
                "methods",
                &self.methods.iter().map(|(m, _)| m).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Extension {
    /// The extension `id` (`{vendor-prefix}/{name}`), advertised with empty settings (`{}`)
    /// and no methods yet.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            settings: Value::Object(Map::new()),
            required: false,
            methods: Vec::new(),
        }
    }

    /// The extension's identifier.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Sets the settings object advertised under `capabilities.extensions[id]`. Default `{}`.
    /// Must be a JSON object ([`ServerBuilder::build`](crate::ServerBuilder::build) refuses
    /// anything else).
    #[must_use]
    pub fn settings(mut self, settings: Value) -> Self {
        self.settings = settings;
        self
    }

    /// Its methods serve only clients that declared the extension; others get the revision's
    /// missing-capability error. Default: any client may call them.
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Adds the request method `name`, served by `handler`. A method name may not be one a
    /// revision defines, nor one another extension adds.
    #[must_use]
    pub fn method<F, Fut>(mut self, name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(ExtensionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ExtensionError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: ErasedMethod = Arc::new(move |request| {
            let handler = handler.clone();
            Box::pin(async move { handler(request).await })
        });
        self.methods.push((name.into(), erased));
        self
    }
}

/// One call of an extension method.
#[derive(Debug, Clone)]
pub struct ExtensionRequest {
    pub(crate) method: String,
    pub(crate) params: Map<String, Value>,
    pub(crate) client_settings: Option<Value>,
    pub(crate) principal: Option<String>,
    pub(crate) namespace: mcp_hub::Namespace,
}

impl ExtensionRequest {
    /// The method called.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request's params (without the revision's reserved `_meta` members).
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// The settings the client declared for this extension, if it declared it.
    pub fn client_settings(&self) -> Option<&Value> {
        self.client_settings.as_ref()
    }

    /// The authenticated principal of the connection, when the transport set one (see
    /// [`Context::with_principal`](crate::Context::with_principal)): what an extension keeping
    /// per-caller records binds them to.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// The namespace (tenant) of the call: the hub keys and topics an extension uses belong
    /// in it.
    pub fn namespace(&self) -> &mcp_hub::Namespace {
        &self.namespace
    }
}

/// Why an extension method failed; sent to the client as the revision's JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtensionError {
    /// The params are wrong (`-32602`).
    #[error("{0}")]
    InvalidParams(String),
    /// The method failed (`-32603`).
    #[error("{0}")]
    Internal(String),
}

/// Whether `id` has the shape `{vendor-prefix}/{name}`: a non-empty prefix of dot-separated
/// labels and a non-empty name, neither with whitespace.
pub(crate) fn valid_id(id: &str) -> bool {
    match id.split_once('/') {
        Some((prefix, name)) => {
            !prefix.is_empty()
                && !name.is_empty()
                && !id.chars().any(char::is_whitespace)
                && prefix.split('.').all(|label| !label.is_empty())
        }
        None => false,
    }
}
