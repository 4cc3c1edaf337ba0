//! Server-initiated notifications: publishing changes from any worker, runtime changes to the
//! registry, the streams a transport delivers to its listeners, and the 2026-07-28
//! `subscriptions/listen` request.
//!
//! Every change goes through the hub's [`EventLog`] on one topic per namespace
//! (`<namespace>:mcp/notifications`), so a listener on any worker that shares the log receives
//! what any other worker published. The payload is revision-neutral; each listener encodes it
//! for its own revision when it delivers it.

use std::collections::BTreeSet;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use futures::stream::{FusedStream, Stream, StreamExt as _};
use mcp_adapters::{Adapter, Call, Failure};
use mcp_hub::{Cursor, EventLog, LogError, Namespace, Subscription, Topic};
use mcp_wire::jsonrpc::Id;
use mcp_wire::names::{meta, method};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, watch};

use crate::dispatch::{Context, Done};
use crate::error::RegistrationError;
use crate::exchange::CancelHandle;
use crate::prompt::Prompt;
use crate::resource::{Resource, ResourceTemplate};
use crate::server::{Registry, Server, build_prompts, build_resources, build_tools};
use crate::tool::Tool;

mod catalog;
mod listen;
mod streams;

pub(crate) use listen::deliver_to_connection;
pub use streams::{ChangeStream, NotificationFilter, NotificationStream};

/// The topic name (within a namespace) every change is published under.
pub(crate) const TOPIC: &str = "mcp/notifications";

/// A change a server announces to its clients.
///
/// The same value is delivered on every revision; [`Change::to_message`] encodes it for one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Change {
    /// The resource at `uri` changed (`notifications/resources/updated`): delivered to
    /// clients subscribed to that URI.
    ResourceUpdated {
        /// The URI of the resource, as clients subscribe to it.
        uri: String,
    },
    /// The list of tools changed (`notifications/tools/list_changed`).
    ToolsListChanged,
    /// The list of prompts changed (`notifications/prompts/list_changed`).
    PromptsListChanged,
    /// The list of resources or resource templates changed
    /// (`notifications/resources/list_changed`).
    ResourcesListChanged,
}

impl Change {
    /// The JSON-RPC method of the notification.
    pub fn method(&self) -> &'static str {
        match self {
            Self::ResourceUpdated { .. } => method::NOTIFICATION_RESOURCES_UPDATED,
            Self::ToolsListChanged => method::NOTIFICATION_TOOLS_LIST_CHANGED,
            Self::PromptsListChanged => method::NOTIFICATION_PROMPTS_LIST_CHANGED,
            Self::ResourcesListChanged => method::NOTIFICATION_RESOURCES_LIST_CHANGED,
        }
    }

    fn params(&self) -> Map<String, Value> {
        let mut params = Map::new();
        if let Self::ResourceUpdated { uri } = self {
            params.insert("uri".into(), Value::String(uri.clone()));
        }
        params
    }

    /// The notification as `adapter`'s revision sends it. On 2026-07-28 (where it travels on
    /// a `subscriptions/listen` stream) `subscription` is the listen request's id, added as
    /// `_meta["io.modelcontextprotocol/subscriptionId"]`; other revisions ignore it.
    pub fn to_message(&self, adapter: Adapter, subscription: Option<&Id>) -> Value {
        adapter.change_notification(self.method(), Some(self.params()), subscription)
    }

    fn to_payload(&self) -> Bytes {
        Bytes::from(json!({"method": self.method(), "params": self.params()}).to_string())
    }

    /// Reads a payload of the topic; `None` for anything this server does not relay.
    fn from_payload(payload: &[u8]) -> Option<Self> {
        let value: Value = serde_json::from_slice(payload).ok()?;
        match value.get("method")?.as_str()? {
            method::NOTIFICATION_RESOURCES_UPDATED => Some(Self::ResourceUpdated {
                uri: value.get("params")?.get("uri")?.as_str()?.to_owned(),
            }),
            method::NOTIFICATION_TOOLS_LIST_CHANGED => Some(Self::ToolsListChanged),
            method::NOTIFICATION_PROMPTS_LIST_CHANGED => Some(Self::PromptsListChanged),
            method::NOTIFICATION_RESOURCES_LIST_CHANGED => Some(Self::ResourcesListChanged),
            _ => None,
        }
    }
}

/// Why publishing or reading notifications failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotifyError {
    /// The events after this cursor were dropped by the event log's retention
    /// ([`RetentionConfig`](mcp_hub::RetentionConfig)): resuming from it would skip some. A
    /// transport starts a fresh stream (from now) and the client must re-read what it caches.
    #[error("notifications after cursor {cursor} are no longer retained; some were lost")]
    CursorExpired {
        /// The cursor given (a `Last-Event-ID`).
        cursor: Cursor,
    },
    /// The cursor was not issued for this topic by this event log (another hub, another
    /// namespace, a deleted topic).
    #[error("cursor {cursor} was not issued by this server's event log")]
    UnknownCursor {
        /// The cursor given.
        cursor: Cursor,
    },
    /// The event log failed (its backend is unreachable or did not answer).
    #[error("event log: {0}")]
    Log(LogError),
}

impl From<LogError> for NotifyError {
    fn from(err: LogError) -> Self {
        match err {
            LogError::CursorExpired { cursor } => Self::CursorExpired { cursor },
            LogError::UnknownCursor { cursor } => Self::UnknownCursor { cursor },
            other => Self::Log(other),
        }
    }
}

/// Why a runtime change of the registry failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    /// The declaration is refused, for the same reasons as at
    /// [`build`](crate::ServerBuilder::build) (including a name already registered); nothing
    /// changed.
    #[error(transparent)]
    Registration(#[from] RegistrationError),
    /// Nothing is registered under this name or URI; nothing changed.
    #[error("no {kind} {name:?} is registered")]
    NotRegistered {
        /// `"tool"`, `"prompt"`, `"resource"` or `"resource template"`.
        kind: &'static str,
        /// The name, URI or template.
        name: String,
    },
    /// The registry changed, but the list-changed notification could not be published.
    #[error("the change is made, but its notification was not published: {0}")]
    Publish(NotifyError),
}

/// A one-shot signal that stays set: stream closing.
#[derive(Clone)]
pub(crate) struct Closer(Arc<watch::Sender<bool>>);

impl Default for Closer {
    fn default() -> Self {
        Self(Arc::new(watch::channel(false).0))
    }
}

impl Closer {
    pub(crate) fn close(&self) {
        self.0.send_replace(true);
    }

    pub(crate) fn watcher(&self) -> watch::Receiver<bool> {
        self.0.subscribe()
    }
}

impl fmt::Debug for Closer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Closer").field(&*self.0.borrow()).finish()
    }
}

/// What every clone of a [`Server`] shares: the current registry and the shutdown signal.
pub(crate) struct Live {
    current: RwLock<Arc<Registry>>,
    /// Serialises runtime changes (read, rebuild, swap).
    edit: Mutex<()>,
    closed: Closer,
}

impl Live {
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Self {
            current: RwLock::new(registry),
            edit: Mutex::new(()),
            closed: Closer::default(),
        }
    }

    fn current(&self) -> Arc<Registry> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Publishes changes to every listener of a server, on every worker that shares its event log.
///
/// Obtained from [`Server::notifier`]; cheap to clone, `Send + Sync`, usable from any task or
/// thread (a background job, another request's handler). Each method appends one event to the
/// namespace's notification topic and returns its [`Cursor`]; every listener whose filter takes
/// it delivers it once.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let server = mcp_server::Server::builder("demo", "1.0").build()?;
/// let notifier = server.notifier();
/// notifier.resource_updated("config://app").await?;
/// notifier.tools_changed().await?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Notifier {
    log: Arc<dyn EventLog>,
    namespace: Namespace,
    topic: Topic,
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifier")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl Notifier {
    /// A notifier publishing to `log` in `namespace`.
    pub(crate) fn new(log: Arc<dyn EventLog>, namespace: Namespace) -> Self {
        Self {
            log,
            topic: namespace.topic(TOPIC),
            namespace,
        }
    }

    /// The same notifier for another namespace (tenant): only that namespace's listeners
    /// receive what it publishes. Default is the root namespace.
    #[must_use]
    pub fn in_namespace(&self, namespace: Namespace) -> Self {
        Self::new(self.log.clone(), namespace)
    }

    /// The namespace this notifier publishes in.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// Publishes `change`.
    pub async fn publish(&self, change: &Change) -> Result<Cursor, NotifyError> {
        Ok(self.log.publish(&self.topic, change.to_payload()).await?)
    }

    /// The resource at `uri` changed: clients subscribed to it get
    /// `notifications/resources/updated`.
    pub async fn resource_updated(&self, uri: &str) -> Result<Cursor, NotifyError> {
        self.publish(&Change::ResourceUpdated {
            uri: uri.to_owned(),
        })
        .await
    }

    /// The tool list changed: `notifications/tools/list_changed`.
    pub async fn tools_changed(&self) -> Result<Cursor, NotifyError> {
        self.publish(&Change::ToolsListChanged).await
    }

    /// The prompt list changed: `notifications/prompts/list_changed`.
    pub async fn prompts_changed(&self) -> Result<Cursor, NotifyError> {
        self.publish(&Change::PromptsListChanged).await
    }

    /// The resource list changed: `notifications/resources/list_changed`.
    pub async fn resources_changed(&self) -> Result<Cursor, NotifyError> {
        self.publish(&Change::ResourcesListChanged).await
    }
}

/// The capability (`tools`, `prompts`, `resources`) whose `listChanged` covers `change`.
fn list_capability(change: &Change) -> Option<&'static str> {
    match change {
        Change::ToolsListChanged => Some("tools"),
        Change::PromptsListChanged => Some("prompts"),
        Change::ResourcesListChanged => Some("resources"),
        Change::ResourceUpdated { .. } => None,
    }
}

fn advertises_list_changed(capabilities: &Value, change: &Change) -> bool {
    list_capability(change).is_some_and(|name| capabilities[name]["listChanged"] == json!(true))
}

impl Server {
    /// This server as it is now: after [`add_tool`](Self::add_tool) and the like, a `Server`
    /// value made earlier still serves [`tool_headers`](Self::tool_headers) from its own
    /// registry, while [`handle`](Self::handle) always serves the current one. Cheap (two
    /// reference counts).
    pub fn snapshot(&self) -> Self {
        Self {
            registry: self.live.current(),
            live: self.live.clone(),
        }
    }

    /// A [`Notifier`] that publishes to this server's event log, in the root namespace
    /// ([`Notifier::in_namespace`] for another).
    ///
    /// Every worker built with the same [`event_log`](crate::ServerBuilder::event_log)
    /// delivers what it publishes.
    pub fn notifier(&self) -> Notifier {
        Notifier::new(self.registry.log.clone(), Namespace::root())
    }

    /// Ends every open `subscriptions/listen` stream of this server (every clone) gracefully:
    /// each gets its listen result and ends. Call it when the server shuts down. It cannot be
    /// undone: a later listen is acknowledged and closed at once.
    pub fn close_streams(&self) {
        self.live.closed.close();
    }
}
