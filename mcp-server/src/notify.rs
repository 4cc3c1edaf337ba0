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

/// The topic name (within a namespace) every change is published under.
const TOPIC: &str = "mcp/notifications";

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
    /// The same notifier for another namespace (tenant): only that namespace's listeners
    /// receive what it publishes. Default is the root namespace.
    #[must_use]
    pub fn in_namespace(&self, namespace: Namespace) -> Self {
        Self {
            log: self.log.clone(),
            topic: namespace.topic(TOPIC),
            namespace,
        }
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

/// Which changes one listener receives.
///
/// Default is nothing: add the list changes and resource URIs the listener wants. A 2026-07-28
/// `subscriptions/listen` builds one from its request; a legacy GET stream usually takes
/// [`all_list_changes`](Self::all_list_changes) plus the session's subscribed URIs
/// ([`Context::subscriptions`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotificationFilter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: BTreeSet<String>,
}

impl NotificationFilter {
    /// A filter that lets nothing through.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every list change (tools, prompts, resources).
    pub fn all_list_changes() -> Self {
        Self {
            tools: true,
            prompts: true,
            resources: true,
            uris: BTreeSet::new(),
        }
    }

    /// Whether `notifications/tools/list_changed` gets through. Default is `false`.
    #[must_use]
    pub fn tools_list_changed(mut self, on: bool) -> Self {
        self.tools = on;
        self
    }

    /// Whether `notifications/prompts/list_changed` gets through. Default is `false`.
    #[must_use]
    pub fn prompts_list_changed(mut self, on: bool) -> Self {
        self.prompts = on;
        self
    }

    /// Whether `notifications/resources/list_changed` gets through. Default is `false`.
    #[must_use]
    pub fn resources_list_changed(mut self, on: bool) -> Self {
        self.resources = on;
        self
    }

    /// Lets `notifications/resources/updated` for `uri` through (exact match). Default is no
    /// URI.
    #[must_use]
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        self.uris.insert(uri.into());
        self
    }

    /// Lets updates of every URI in `uris` through.
    #[must_use]
    pub fn resources(mut self, uris: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.uris.extend(uris.into_iter().map(Into::into));
        self
    }

    /// Nothing gets through.
    pub fn is_empty(&self) -> bool {
        !self.tools && !self.prompts && !self.resources && self.uris.is_empty()
    }

    /// Whether `change` gets through.
    pub fn matches(&self, change: &Change) -> bool {
        match change {
            Change::ResourceUpdated { uri } => self.uris.contains(uri),
            Change::ToolsListChanged => self.tools,
            Change::PromptsListChanged => self.prompts,
            Change::ResourcesListChanged => self.resources,
        }
    }
}

/// Every change published in one namespace, from a cursor on, with the cursor of each: the
/// raw feed under [`NotificationStream`].
///
/// Events the server does not relay (foreign payloads on the topic) are skipped. The stream
/// ends only after an error, which it yields first (see [`Subscription`]); start again from
/// [`cursor`](Self::cursor) to go on without loss or duplicates.
pub struct ChangeStream {
    inner: Subscription,
}

impl fmt::Debug for ChangeStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChangeStream")
            .field("cursor", &self.inner.cursor())
            .finish_non_exhaustive()
    }
}

impl ChangeStream {
    /// The cursor of the last event read (or the starting cursor).
    pub fn cursor(&self) -> Cursor {
        self.inner.cursor()
    }
}

impl Stream for ChangeStream {
    type Item = Result<(Cursor, Change), NotifyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match self.inner.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(Err(err))) => return Poll::Ready(Some(Err(err.into()))),
                Poll::Ready(Some(Ok(event))) => {
                    if let Some(change) = Change::from_payload(&event.payload) {
                        return Poll::Ready(Some(Ok((event.cursor, change))));
                    }
                    tracing::debug!(cursor = %event.cursor, "an event this server does not relay; skipped");
                }
            }
        }
    }
}

impl FusedStream for ChangeStream {
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}

/// What a [`NotificationStream`] delivers, and how it encodes it.
#[derive(Clone, Debug)]
enum Audience {
    /// A fixed filter on one revision.
    Fixed {
        adapter: Adapter,
        filter: NotificationFilter,
        subscription: Option<Id>,
    },
    /// A connection with a handshake: its revision, its capabilities, its subscriptions, read
    /// at each event.
    Connection(Context),
}

/// The notifications one listener receives, encoded for its revision, each with its cursor.
///
/// Items are `Ok((cursor, message))`: send `message` (a JSON-RPC notification) with `cursor`
/// as its SSE event id (`id: {cursor}`); a `Last-Event-ID` that comes back parses with
/// `str::parse::<Cursor>()` and resumes with [`Server::notifications`]. An `Err` item ends the
/// stream (a backend failure); resume from [`cursor`](Self::cursor).
pub struct NotificationStream {
    changes: ChangeStream,
    server: Server,
    audience: Audience,
}

impl fmt::Debug for NotificationStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NotificationStream")
            .field("cursor", &self.changes.cursor())
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl NotificationStream {
    /// The cursor of the last event read (delivered or filtered out), or the starting cursor:
    /// resuming from it loses nothing and repeats nothing.
    pub fn cursor(&self) -> Cursor {
        self.changes.cursor()
    }

    fn encode(&self, change: &Change) -> Option<Value> {
        match &self.audience {
            Audience::Fixed {
                adapter,
                filter,
                subscription,
            } => filter
                .matches(change)
                .then(|| change.to_message(*adapter, subscription.as_ref())),
            Audience::Connection(ctx) => {
                let adapter: Adapter = ctx.revision()?.into();
                if adapter.features().has_listen {
                    return None;
                }
                let wanted = match change {
                    Change::ResourceUpdated { uri } => ctx.is_subscribed(uri),
                    list => {
                        let registry = self.server.live.current();
                        advertises_list_changed(&registry.view(adapter).capabilities, list)
                    }
                };
                wanted.then(|| change.to_message(adapter, None))
            }
        }
    }
}

impl Stream for NotificationStream {
    type Item = Result<(Cursor, Value), NotifyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match self.changes.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(Err(err))) => return Poll::Ready(Some(Err(err))),
                Poll::Ready(Some(Ok((cursor, change)))) => {
                    if let Some(message) = self.encode(&change) {
                        return Poll::Ready(Some(Ok((cursor, message))));
                    }
                }
            }
        }
    }
}

impl FusedStream for NotificationStream {
    fn is_terminated(&self) -> bool {
        self.changes.is_terminated()
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
        let namespace = Namespace::root();
        Notifier {
            log: self.registry.log.clone(),
            topic: namespace.topic(TOPIC),
            namespace,
        }
    }

    /// Every change published in `namespace`, strictly after `after`, or from now when
    /// `after` is `None`.
    ///
    /// The cursor is checked before this returns: one whose following events fell out of
    /// retention gives [`NotifyError::CursorExpired`], one the log did not issue
    /// [`NotifyError::UnknownCursor`].
    pub async fn changes(
        &self,
        namespace: &Namespace,
        after: Option<Cursor>,
    ) -> Result<ChangeStream, NotifyError> {
        let inner =
            Subscription::start(self.registry.log.clone(), namespace.topic(TOPIC), after).await?;
        Ok(ChangeStream { inner })
    }

    /// The notifications a listener on `adapter`'s revision wants (`filter`), published in
    /// `namespace` strictly after `after` (or from now), encoded for the revision, each with
    /// its cursor.
    ///
    /// This is the GET stream of the legacy Streamable HTTP revisions: send each item as an
    /// SSE event whose id is the cursor; a client that reconnects with `Last-Event-ID` gets,
    /// from any worker sharing the event log, every later event exactly once, as long as the
    /// log still retains them ([`RetentionConfig`](mcp_hub::RetentionConfig): 1000 events or
    /// one hour per topic by default). Beyond that the call fails with
    /// [`NotifyError::CursorExpired`], and a cursor the log never issued with
    /// [`NotifyError::UnknownCursor`]; a transport then usually starts from now (`None`).
    ///
    /// `filter` is fixed for the life of the stream; a transport whose subscriptions change
    /// while the stream is open reads [`changes`](Self::changes) and filters each event
    /// itself, or uses [`connection_notifications`](Self::connection_notifications).
    pub async fn notifications(
        &self,
        namespace: &Namespace,
        adapter: Adapter,
        filter: NotificationFilter,
        after: Option<Cursor>,
    ) -> Result<NotificationStream, NotifyError> {
        Ok(NotificationStream {
            changes: self.changes(namespace, after).await?,
            server: self.clone(),
            audience: Audience::Fixed {
                adapter,
                filter,
                subscription: None,
            },
        })
    }

    /// The notifications of one connection with a handshake (stdio, or an HTTP session kept
    /// in this process), in its namespace: list changes the current registry advertises
    /// `listChanged` for, and updates of the URIs the connection subscribed to
    /// (`resources/subscribe`), checked at each event, so a subscription made while the
    /// stream is open takes effect at once. Nothing is delivered before `initialize`, nor on
    /// revisions with `subscriptions/listen` (2026-07-28). Cursors as for
    /// [`notifications`](Self::notifications).
    pub async fn connection_notifications(
        &self,
        ctx: &Context,
        after: Option<Cursor>,
    ) -> Result<NotificationStream, NotifyError> {
        Ok(NotificationStream {
            changes: self.changes(ctx.namespace(), after).await?,
            server: self.clone(),
            audience: Audience::Connection(ctx.clone()),
        })
    }

    /// The filter of a legacy session's GET stream: the list changes `adapter`'s revision is
    /// told are announced (`listChanged` in the current capabilities), plus updates of
    /// `subscribed` (the session's [`Context::subscriptions`]).
    pub fn session_filter(
        &self,
        adapter: Adapter,
        subscribed: impl IntoIterator<Item = impl Into<String>>,
    ) -> NotificationFilter {
        let registry = self.live.current();
        let capabilities = &registry.view(adapter).capabilities;
        NotificationFilter::new()
            .tools_list_changed(advertises_list_changed(
                capabilities,
                &Change::ToolsListChanged,
            ))
            .prompts_list_changed(advertises_list_changed(
                capabilities,
                &Change::PromptsListChanged,
            ))
            .resources_list_changed(advertises_list_changed(
                capabilities,
                &Change::ResourcesListChanged,
            ))
            .resources(subscribed)
    }

    /// Ends every open `subscriptions/listen` stream of this server (every clone) gracefully:
    /// each gets its listen result and ends. Call it when the server shuts down. It cannot be
    /// undone: a later listen is acknowledged and closed at once.
    pub fn close_streams(&self) {
        self.live.closed.close();
    }

    /// Adds a tool at run time, then publishes `notifications/tools/list_changed`.
    ///
    /// The tool is checked as [`ServerBuilder::build`](crate::ServerBuilder::build) checks it;
    /// a name already registered is refused. The per-revision views are rebuilt now, once, so
    /// requests stay as cheap as before. Only this process's registry changes: every worker
    /// applies its own changes, while the notification reaches the listeners of all of them.
    /// Calls in flight finish on the registry they started with.
    pub async fn add_tool(&self, tool: Tool) -> Result<(), ChangeError> {
        self.change(Change::ToolsListChanged, |registry| {
            let mut added = build_tools(vec![tool])?;
            let mut tools = registry.tools.clone();
            let entry = added.pop().expect("one tool built");
            if registry.tool(&entry.tool.name).is_some() {
                return Err(RegistrationError::Duplicate {
                    kind: "tool",
                    name: entry.tool.name,
                }
                .into());
            }
            tools.push(entry);
            tools.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
            Ok(registry.with_catalog(
                tools,
                registry.prompts.clone(),
                registry.resources.clone(),
                registry.templates.clone(),
            ))
        })
        .await
    }

    /// Removes the tool `name` at run time, then publishes
    /// `notifications/tools/list_changed`. See [`add_tool`](Self::add_tool).
    pub async fn remove_tool(&self, name: &str) -> Result<(), ChangeError> {
        self.change(Change::ToolsListChanged, |registry| {
            let before = registry.tools.len();
            let mut tools = registry.tools.clone();
            tools.retain(|t| t.tool.name != name);
            if tools.len() == before {
                return Err(not_registered("tool", name));
            }
            Ok(registry.with_catalog(
                tools,
                registry.prompts.clone(),
                registry.resources.clone(),
                registry.templates.clone(),
            ))
        })
        .await
    }

    /// Adds a prompt at run time, then publishes `notifications/prompts/list_changed`. See
    /// [`add_tool`](Self::add_tool).
    pub async fn add_prompt(&self, prompt: Prompt) -> Result<(), ChangeError> {
        self.change(Change::PromptsListChanged, |registry| {
            let mut added = build_prompts(vec![prompt])?;
            let entry = added.pop().expect("one prompt built");
            if registry.prompt(&entry.prompt.name).is_some() {
                return Err(RegistrationError::Duplicate {
                    kind: "prompt",
                    name: entry.prompt.name,
                }
                .into());
            }
            let mut prompts = registry.prompts.clone();
            prompts.push(entry);
            prompts.sort_by(|a, b| a.prompt.name.cmp(&b.prompt.name));
            Ok(registry.with_catalog(
                registry.tools.clone(),
                prompts,
                registry.resources.clone(),
                registry.templates.clone(),
            ))
        })
        .await
    }

    /// Removes the prompt `name` at run time, then publishes
    /// `notifications/prompts/list_changed`. See [`add_tool`](Self::add_tool).
    pub async fn remove_prompt(&self, name: &str) -> Result<(), ChangeError> {
        self.change(Change::PromptsListChanged, |registry| {
            let mut prompts = registry.prompts.clone();
            prompts.retain(|p| p.prompt.name != name);
            if prompts.len() == registry.prompts.len() {
                return Err(not_registered("prompt", name));
            }
            Ok(registry.with_catalog(
                registry.tools.clone(),
                prompts,
                registry.resources.clone(),
                registry.templates.clone(),
            ))
        })
        .await
    }

    /// Adds a resource at a fixed URI at run time, then publishes
    /// `notifications/resources/list_changed`. See [`add_tool`](Self::add_tool).
    pub async fn add_resource(&self, resource: Resource) -> Result<(), ChangeError> {
        self.change(Change::ResourcesListChanged, |registry| {
            let (mut added, _) = build_resources(vec![resource], Vec::new())?;
            let resource = added.pop().expect("one resource built");
            if registry.resource_index.contains_key(&resource.uri) {
                return Err(RegistrationError::Duplicate {
                    kind: "resource",
                    name: resource.uri,
                }
                .into());
            }
            let mut resources = registry.resources.clone();
            resources.push(resource);
            resources.sort_by(|a, b| a.uri.cmp(&b.uri));
            Ok(registry.with_catalog(
                registry.tools.clone(),
                registry.prompts.clone(),
                resources,
                registry.templates.clone(),
            ))
        })
        .await
    }

    /// Adds a resource template at run time, then publishes
    /// `notifications/resources/list_changed`. See [`add_tool`](Self::add_tool).
    pub async fn add_resource_template(
        &self,
        template: ResourceTemplate,
    ) -> Result<(), ChangeError> {
        self.change(Change::ResourcesListChanged, |registry| {
            let (_, mut added) = build_resources(Vec::new(), vec![template])?;
            let entry = added.pop().expect("one template built");
            if registry
                .templates
                .iter()
                .any(|t| t.template.template == entry.template.template)
            {
                return Err(RegistrationError::Duplicate {
                    kind: "resource template",
                    name: entry.template.template,
                }
                .into());
            }
            let mut templates = registry.templates.clone();
            templates.push(entry);
            templates.sort_by(|a, b| a.template.template.cmp(&b.template.template));
            Ok(registry.with_catalog(
                registry.tools.clone(),
                registry.prompts.clone(),
                registry.resources.clone(),
                templates,
            ))
        })
        .await
    }

    /// Removes the resource at `uri`, or the resource template spelled `uri`, at run time,
    /// then publishes `notifications/resources/list_changed`. See
    /// [`add_tool`](Self::add_tool).
    pub async fn remove_resource(&self, uri: &str) -> Result<(), ChangeError> {
        self.change(Change::ResourcesListChanged, |registry| {
            let mut resources = registry.resources.clone();
            resources.retain(|r| r.uri != uri);
            let mut templates = registry.templates.clone();
            templates.retain(|t| t.template.template != uri);
            if resources.len() == registry.resources.len()
                && templates.len() == registry.templates.len()
            {
                return Err(not_registered("resource", uri));
            }
            Ok(registry.with_catalog(
                registry.tools.clone(),
                registry.prompts.clone(),
                resources,
                templates,
            ))
        })
        .await
    }

    /// Rebuilds the registry with `edit`, swaps it in, and publishes `change`.
    async fn change(
        &self,
        change: Change,
        edit: impl FnOnce(&Registry) -> Result<Registry, ChangeError>,
    ) -> Result<(), ChangeError> {
        {
            let _serial = self
                .live
                .edit
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let current = self.live.current();
            let next = Arc::new(edit(&current)?);
            *self
                .live
                .current
                .write()
                .unwrap_or_else(PoisonError::into_inner) = next;
        }
        self.notifier()
            .publish(&change)
            .await
            .map(|_| ())
            .map_err(ChangeError::Publish)
    }

    /// Whether `uri` names a registered resource or matches a template.
    fn resource_exists(&self, uri: &str) -> bool {
        let registry = &*self.registry;
        registry.resource_index.contains_key(uri)
            || registry
                .templates
                .iter()
                .any(|t| t.parsed.matches(uri).is_some())
    }

    /// `resources/subscribe` (revisions with a handshake): kept in the connection's state.
    pub(crate) fn subscribe(&self, call: &Call, ctx: &Context) -> Done {
        let uri = call.target.clone().unwrap_or_default();
        if !self.resource_exists(&uri) {
            return Done::failure(Failure::resource_not_found(&uri));
        }
        ctx.add_subscription(uri);
        Done::value(json!({}))
    }

    /// `resources/unsubscribe`: forgets the URI (unsubscribing from one never subscribed to
    /// succeeds).
    pub(crate) fn unsubscribe(&self, call: &Call, ctx: &Context) -> Done {
        let uri = call.target.clone().unwrap_or_default();
        ctx.remove_subscription(&uri);
        Done::value(json!({}))
    }

    /// `subscriptions/listen` (2026-07-28): acknowledges the honoured subset of the request,
    /// then delivers the matching changes tagged with the request's id until the call is
    /// cancelled (the stream dropped, `notifications/cancelled`) or closed gracefully
    /// ([`Context::close_listeners`], [`Server::close_streams`]), which sends the result.
    pub(crate) async fn listen(
        &self,
        adapter: Adapter,
        call: &Call,
        ctx: &Context,
        sink: &crate::sink::Sink,
        cancel: &CancelHandle,
    ) -> Done {
        let Some(id) = call.id.clone() else {
            return Done::Silent;
        };
        let requested = call
            .params
            .get("notifications")
            .cloned()
            .unwrap_or_default();
        let capabilities = &self.registry.view(adapter).capabilities;
        let mut honoured = Map::new();
        let mut filter = NotificationFilter::new();
        for (key, change) in [
            ("toolsListChanged", Change::ToolsListChanged),
            ("promptsListChanged", Change::PromptsListChanged),
            ("resourcesListChanged", Change::ResourcesListChanged),
        ] {
            if requested[key] == json!(true) && advertises_list_changed(capabilities, &change) {
                honoured.insert(key.into(), json!(true));
                filter = match change {
                    Change::ToolsListChanged => filter.tools_list_changed(true),
                    Change::PromptsListChanged => filter.prompts_list_changed(true),
                    _ => filter.resources_list_changed(true),
                };
            }
        }
        if capabilities["resources"]["subscribe"] == json!(true)
            && let Some(uris) = requested["resourceSubscriptions"].as_array()
        {
            let kept: Vec<String> = uris
                .iter()
                .filter_map(Value::as_str)
                .filter(|uri| self.resource_exists(uri))
                .map(str::to_owned)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            if !kept.is_empty() {
                honoured.insert("resourceSubscriptions".into(), json!(kept));
                filter = filter.resources(kept);
            }
        }
        let result = Done::value(json!({"_meta": {meta::SUBSCRIPTION_ID: id}}));
        if filter.is_empty() {
            // Nothing to deliver: acknowledge the empty subset and close at once.
            let _ = sink
                .send_wait(adapter.subscriptions_acknowledged(&id, Value::Object(honoured)))
                .await;
            return result;
        }
        // Take the position before the acknowledgement, so every change after it is delivered.
        let mut changes = match self.changes(ctx.namespace(), None).await {
            Ok(changes) => changes,
            Err(err) => return Done::failure(Failure::internal(err.to_string())),
        };
        let _ = sink
            .send_wait(adapter.subscriptions_acknowledged(&id, Value::Object(honoured)))
            .await;
        let mut server_closed = self.live.closed.watcher();
        let mut connection_closed = ctx.listeners_closer().watcher();
        loop {
            let change = tokio::select! {
                biased;
                () = cancel.cancelled() => return Done::Silent,
                _ = server_closed.wait_for(|c| *c) => return result,
                _ = connection_closed.wait_for(|c| *c) => return result,
                next = changes.next() => match next {
                    Some(Ok((_, change))) if filter.matches(&change) => change,
                    Some(Ok(_)) => continue,
                    Some(Err(err)) => {
                        tracing::warn!(%err, "listen stream: the event log failed; closing it");
                        return result;
                    }
                    None => return result,
                },
            };
            // Backpressure: a listener that reads slowly makes this loop wait (the event log
            // keeps the changes meanwhile, within its retention).
            let message = change.to_message(adapter, Some(&id));
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Done::Silent,
                _ = server_closed.wait_for(|c| *c) => return result,
                _ = connection_closed.wait_for(|c| *c) => return result,
                sent = sink.send_wait(message) => {
                    if sent.is_err() {
                        return Done::Silent;
                    }
                }
            }
        }
    }
}

fn not_registered(kind: &'static str, name: &str) -> ChangeError {
    ChangeError::NotRegistered {
        kind,
        name: name.to_owned(),
    }
}

/// Delivers a stdio connection's notifications (subscribed updates, list changes) to `out`
/// until aborted. Returns `None` (after a warning) when the event log cannot be read.
pub(crate) async fn deliver_to_connection(
    server: &Server,
    ctx: &Context,
    out: mpsc::Sender<Vec<u8>>,
) -> Option<tokio::task::JoinHandle<()>> {
    let mut stream = match server.connection_notifications(ctx, None).await {
        Ok(stream) => stream,
        Err(err) => {
            tracing::warn!(%err, "notifications cannot be delivered on this connection");
            return None;
        }
    };
    Some(tokio::spawn(async move {
        while let Some(item) = stream.next().await {
            match item {
                Ok((_, message)) => {
                    let bytes = serde_json::to_vec(&message).unwrap_or_default();
                    // Waits while stdout is backed up; the event log keeps the changes.
                    if out.send(bytes).await.is_err() {
                        return;
                    }
                }
                Err(err) => {
                    tracing::warn!(%err, "notification delivery stopped");
                    return;
                }
            }
        }
    }))
}
