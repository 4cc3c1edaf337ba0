//! What the client keeps about its listeners: what each wants to hear ([`Subscriptions`],
//! [`Filter`]), its registration, how its stream ended ([`ListenEnd`]) and where the
//! standalone stream stands ([`StreamState`]). The client routes notifications with these; the
//! listen calls themselves are in `listen`.

use std::sync::Arc;

use mcp_wire::jsonrpc::Notification;
use mcp_wire::names::method;
use serde_json::Value;
use tokio::sync::mpsc;

/// What a [`Listener`](crate::Listener) wants to hear about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscriptions {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) uris: Vec<String>,
}

impl Subscriptions {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// `notifications/tools/list_changed`.
    pub fn tools_changed(mut self) -> Self {
        self.tools = true;
        self
    }

    /// `notifications/prompts/list_changed`.
    pub fn prompts_changed(mut self) -> Self {
        self.prompts = true;
        self
    }

    /// `notifications/resources/list_changed`.
    pub fn resources_changed(mut self) -> Self {
        self.resources = true;
        self
    }

    /// `notifications/resources/updated` for `uri`.
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        self.uris.push(uri.into());
        self
    }
}

/// Which notifications one listener receives.
#[derive(Debug, Clone)]
pub(crate) struct Filter {
    pub(crate) subs: Subscriptions,
}

impl Filter {
    /// The resource URIs subscribed with `resources/subscribe`.
    pub(crate) fn uris(&self) -> &[String] {
        &self.subs.uris
    }

    pub(crate) fn accepts(&self, n: &Notification) -> bool {
        match &*n.method {
            method::NOTIFICATION_TOOLS_LIST_CHANGED => self.subs.tools,
            method::NOTIFICATION_PROMPTS_LIST_CHANGED => self.subs.prompts,
            method::NOTIFICATION_RESOURCES_LIST_CHANGED => self.subs.resources,
            method::NOTIFICATION_RESOURCES_UPDATED => {
                let uri = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str);
                uri.is_some_and(|u| self.subs.uris.iter().any(|s| s == u))
            }
            _ => false,
        }
    }
}

/// Why a [`Listener`](crate::Listener)'s stream ended ([`Listener::end`](crate::Listener::end)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListenEnd {
    /// The server ended the subscription: it answered the `subscriptions/listen` request.
    Ended,
    /// The connection to the server was lost and the client could not restore it: a stdio
    /// child exited, an HTTP+SSE or listen stream broke, or the standalone stream of a
    /// Streamable HTTP session could not be reopened after several tries (about 12 seconds).
    /// The text says what happened. A new client, once the server is back, can listen again.
    Lost(String),
    /// The client was closed.
    Closed,
}

impl std::fmt::Display for ListenEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ended => f.write_str("the server ended the subscription"),
            Self::Lost(why) => write!(f, "lost the connection to the server: {why}"),
            Self::Closed => f.write_str("the client was closed"),
        }
    }
}

/// A listener's registration with the client: its slot and the receiving ends.
pub(crate) struct Registered {
    pub(crate) slot: u64,
    pub(crate) rx: mpsc::Receiver<Notification>,
    pub(crate) dropped: Arc<std::sync::atomic::AtomicU64>,
    pub(crate) end: Arc<std::sync::OnceLock<ListenEnd>>,
}

/// Where the standalone stream of a Streamable HTTP session stands: on the handshake revisions
/// it carries the notifications of every [`Listener`](crate::Listener), and the client reopens it (in a new
/// session if the server forgot the old one, subscribing again to the resources the listeners
/// asked for). Watched with [`Listener::stream_state`](crate::Listener::stream_state).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamState {
    /// Being opened (or reopened).
    Connecting,
    /// The server answered the GET with an event stream.
    Open,
    /// The server offers no standalone stream (405, or another error status).
    Unavailable,
    /// The last attempt to open it failed.
    Failed(String),
}
