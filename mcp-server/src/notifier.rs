//! What handlers and background jobs publish: a [`Change`], through a [`Notifier`], to the
//! server's event log; and the signal that closes listen streams. The delivery side (streams,
//! filters, runtime registry changes) is in `notify`.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use mcp_adapters::Adapter;
use mcp_hub::{Cursor, EventLog, LogError, Namespace, Topic};
use mcp_wire::jsonrpc::Id;
use mcp_wire::names::method;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

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

    pub(crate) fn params(&self) -> Map<String, Value> {
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

    /// The change as it travels on the hub's topic: a notification whose `_meta` carries the
    /// `traceparent` of the span that published it, when spans are exported, so the span
    /// that delivers it on any worker joins that trace.
    pub(crate) fn to_payload(&self) -> Bytes {
        let mut params = self.params();
        if let Some(traceparent) = crate::trace_link::current_traceparent() {
            params.insert("_meta".into(), json!({ "traceparent": traceparent }));
        }
        Bytes::from(json!({"method": self.method(), "params": params}).to_string())
    }

    /// Reads a payload of the topic, with the `traceparent` of the span that published it
    /// (see [`to_payload`](Self::to_payload)); `None` for anything this server does not
    /// relay.
    pub(crate) fn from_payload(payload: &[u8]) -> Option<(Self, Option<String>)> {
        let value: Value = serde_json::from_slice(payload).ok()?;
        let change = Self::from_value(&value)?;
        Some((change, crate::trace_link::carried(value.get("params"))))
    }

    fn from_value(value: &Value) -> Option<Self> {
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

/// Publishes changes to every listener of a server, on every worker that shares its event log.
///
/// Obtained from [`Server::notifier`](crate::Server::notifier); cheap to clone, `Send + Sync`, usable from any task or
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
