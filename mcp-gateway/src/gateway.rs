//! The gateway: its builder, the catalog it keeps in step with the upstream, and serving.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures::StreamExt as _;
use mcp_client::{Client, Listener, Subscriptions};
use mcp_server::http::{HttpConfig, HttpEndpoint, Tls};
use mcp_server::{Change, Replaced, Server, ToolSchemas};
use tokio::net::TcpListener;

use crate::auth::DownstreamAuth;
use crate::children::{self, Children, Connect};
use crate::error::GatewayError;
use crate::link::Link;
use crate::relay::QuestionRelay;
use crate::translate::{self, Declarations, Offers, Skipped, ToolScopes};

/// The default of [`GatewayBuilder::max_upstream_calls`].
pub const DEFAULT_MAX_UPSTREAM_CALLS: usize = 64;
/// The default of [`GatewayBuilder::max_upstream_subscriptions`].
pub const DEFAULT_MAX_UPSTREAM_SUBSCRIPTIONS: usize = 256;
/// The default of [`GatewayBuilder::max_children`].
pub const DEFAULT_MAX_CHILDREN: usize = 16;
/// The default of [`GatewayBuilder::child_idle`].
pub const DEFAULT_CHILD_IDLE: Duration = Duration::from_secs(300);

/// Builds a [`Gateway`] in front of a connected upstream [`Client`].
///
/// Every bound has a default, documented on its setter:
///
/// | setting | default |
/// |---|---|
/// | [`max_upstream_calls`](Self::max_upstream_calls) | 64 requests forwarded at once |
/// | [`max_queued_messages`](Self::max_queued_messages) | the server's (`ServerBuilder::max_queued_messages`) |
/// | [`max_upstream_subscriptions`](Self::max_upstream_subscriptions) | 256 resource URIs |
/// | [`call_timeout`](Self::call_timeout) | the upstream client's timeout |
/// | [`max_children`](Self::max_children) | 16 upstream connections ([`start_per_session`](Self::start_per_session)) |
/// | [`child_idle`](Self::child_idle) | 5 minutes ([`start_per_session`](Self::start_per_session)) |
///
/// With [`start`](Self::start), one upstream connection (the client given) serves every
/// downstream session of the gateway; with [`start_per_session`](Self::start_per_session),
/// each downstream session gets one of its own (for a stdio upstream: a child process each).
#[derive(Default)]
pub struct GatewayBuilder {
    name: Option<String>,
    version: Option<String>,
    max_upstream_calls: Option<usize>,
    max_queued_messages: Option<usize>,
    max_upstream_subscriptions: Option<usize>,
    call_timeout: Option<Duration>,
    hub: Option<Arc<dyn mcp_hub::Hub>>,
    relay: Option<QuestionRelay>,
    tool_schemas: Option<ToolSchemas>,
    tool_scopes: ToolScopes,
    max_children: Option<usize>,
    child_idle: Option<Duration>,
    #[cfg(feature = "metrics")]
    metrics: Option<mcp_server::Metrics>,
}

impl std::fmt::Debug for GatewayBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayBuilder")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("max_upstream_calls", &self.max_upstream_calls)
            .field("max_queued_messages", &self.max_queued_messages)
            .field(
                "max_upstream_subscriptions",
                &self.max_upstream_subscriptions,
            )
            .field("call_timeout", &self.call_timeout)
            .field("hub", &self.hub.is_some())
            .field("relay", &self.relay.is_some())
            .field("tool_schemas", &self.tool_schemas)
            .field("tool_scopes", &self.tool_scopes)
            .field("max_children", &self.max_children)
            .field("child_idle", &self.child_idle)
            .finish()
    }
}

impl GatewayBuilder {
    /// The name and version the gateway announces downstream (`serverInfo`). Default: the
    /// upstream's own, else `mcp-gateway` and this crate's version.
    #[must_use]
    pub fn identity(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self.version = Some(version.into());
        self
    }

    /// How many requests (tool calls, reads, prompts, completions) are forwarded upstream at
    /// once, over every downstream session; more wait for one to finish. Default 64
    /// ([`DEFAULT_MAX_UPSTREAM_CALLS`]); at least 1.
    #[must_use]
    pub fn max_upstream_calls(mut self, calls: usize) -> Self {
        self.max_upstream_calls = Some(calls);
        self
    }

    /// How many messages wait for each downstream stream (progress, notifications) before
    /// the downstream server applies its policy (progress coalesced, the rest dropped):
    /// `ServerBuilder::max_queued_messages`. Default: the server's default.
    #[must_use]
    pub fn max_queued_messages(mut self, messages: usize) -> Self {
        self.max_queued_messages = Some(messages);
        self
    }

    /// How many of the upstream's fixed resources the gateway subscribes to upstream (when
    /// the upstream offers subscriptions), so their `notifications/resources/updated` reach
    /// the downstream sessions subscribed to them. The first ones listed are subscribed.
    /// Default 256 ([`DEFAULT_MAX_UPSTREAM_SUBSCRIPTIONS`]).
    #[must_use]
    pub fn max_upstream_subscriptions(mut self, uris: usize) -> Self {
        self.max_upstream_subscriptions = Some(uris);
        self
    }

    /// The timeout of each forwarded request upstream. Default: the upstream client's
    /// (`ClientBuilder::timeout`, 60 s unless set).
    #[must_use]
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// Keeps downstream sessions, request state and notifications in `hub` (see
    /// [`connect_hub`]), so several gateway workers sharing it serve any downstream session.
    /// Each worker has its own upstream connection. Default: an in-memory hub.
    #[must_use]
    pub fn hub(mut self, hub: Arc<dyn mcp_hub::Hub>) -> Self {
        self.hub = Some(hub);
        self
    }

    /// How tools' schemas are shown to 2025-11-25 clients (`ServerBuilder::tool_schemas`):
    /// [`ToolSchemas::Projected`] (the default: a simplified schema every client of that
    /// revision reads, or the tool is not listed there) or [`ToolSchemas::Native`] (the
    /// upstream's JSON Schema 2020-12 as it is, which that revision's spec allows).
    #[must_use]
    pub fn tool_schemas(mut self, schemas: ToolSchemas) -> Self {
        self.tool_schemas = Some(schemas);
        self
    }

    /// Scopes a downstream access token needs to call the proxied tool `tool` (repeat for
    /// other tools), on top of what the endpoint's resource server requires of every request:
    /// a call without them gets 403 `insufficient_scope` naming them, so the client can step
    /// up. Checked only when the endpoint has a resource server
    /// ([`Gateway::serve_http_protected`], or `HttpConfig::auth`). Default none.
    #[must_use]
    pub fn tool_scopes(
        mut self,
        tool: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.tool_scopes
            .entry(tool.into())
            .or_default()
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Relays the upstream's questions (elicitation, sampling, roots) to the downstream
    /// client whose tool call caused them: give the relay installed on the upstream client's
    /// builder ([`QuestionRelay::install`]). Default: none; the upstream client's own
    /// `on_ask` (if any) answers them.
    #[must_use]
    pub fn question_relay(mut self, relay: QuestionRelay) -> Self {
        self.relay = Some(relay);
        self
    }

    /// Records the downstream server's Prometheus metrics in `metrics` (requests by revision,
    /// method and outcome, latency, sessions, pending questions: `ServerBuilder::metrics`);
    /// serve them with [`serve_metrics`](crate::serve_metrics). Default: none recorded.
    ///
    /// ```no_run
    /// # async fn run(upstream: mcp_client::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use mcp_gateway::{Gateway, Metrics, serve_metrics};
    ///
    /// let metrics = Metrics::new();
    /// let gateway = Gateway::builder().metrics(&metrics).start(upstream).await?;
    /// let scrape = tokio::net::TcpListener::bind("127.0.0.1:9090").await?;
    /// tokio::spawn(serve_metrics(scrape, metrics, std::future::pending::<()>()));
    /// # let _ = gateway;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    #[must_use]
    pub fn metrics(mut self, metrics: &mcp_server::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// With [`start_per_session`](Self::start_per_session): how many upstream connections
    /// (for a stdio upstream, child processes) exist at once, the first one (which lists the
    /// catalog and serves the requests that come in no session) included. A downstream session
    /// that would need one more is refused: each of its forwarded requests fails with an error
    /// saying so (a tool call gets an `isError` result), until another session's connection
    /// ends or idles out. Default 16 ([`DEFAULT_MAX_CHILDREN`]); at least 2.
    #[must_use]
    pub fn max_children(mut self, children: usize) -> Self {
        self.max_children = Some(children);
        self
    }

    /// With [`start_per_session`](Self::start_per_session): how long a downstream session's
    /// upstream connection stays without a forwarded request before it is closed (a stdio
    /// child: its stdin closed, then killed after the client's grace). The session's next
    /// request makes a new one. A connection whose session ended (its client ended it, or it
    /// expired) is closed without waiting. Default 5 minutes ([`DEFAULT_CHILD_IDLE`]); more
    /// than zero.
    #[must_use]
    pub fn child_idle(mut self, idle: Duration) -> Self {
        self.child_idle = Some(idle);
        self
    }

    /// Lists everything `upstream` offers (every page), builds the downstream server from it,
    /// and starts following the upstream's list changes and resource updates.
    ///
    /// # Errors
    ///
    /// [`GatewayError::Upstream`] when a listing fails; [`GatewayError::InvalidSetting`] for
    /// a bound of 0; [`GatewayError::Build`] when the downstream server cannot be built.
    pub async fn start(self, upstream: Client) -> Result<Gateway, GatewayError> {
        let max_calls = self.max_calls()?;
        let in_flight = self.relay.as_ref().map(|relay| relay.in_flight.clone());
        let link = Arc::new(Link::new(upstream, max_calls, self.call_timeout, in_flight));
        self.finish(link).await
    }

    /// Starts a gateway that gives each downstream session an upstream connection of its
    /// own: for a stdio upstream, a child process per session, so an upstream that keeps state
    /// per connection keeps it per downstream session.
    ///
    /// `upstream` (connected as for [`start`](Self::start), with the relay given to
    /// [`question_relay`](Self::question_relay) installed) lists the catalog, follows the
    /// upstream's changes, and serves the requests that come in no session (a stdio front,
    /// 2026-07-28 clients, completions). `connect` makes the connection of each downstream
    /// session, at its first forwarded request; it gets a [`QuestionRelay`] of that
    /// connection's own, to install on the client's builder ([`QuestionRelay::install`]) as
    /// the first one was. Bounded by [`max_children`](Self::max_children) (the first
    /// connection included) and [`child_idle`](Self::child_idle); a session's connection is
    /// closed when its session ends, and every one when the gateway is closed (dropping the
    /// gateway drops them, which kills stdio children).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use mcp_client::Client;
    /// use mcp_client::transport::Stdio;
    /// use mcp_gateway::{Gateway, QuestionRelay};
    ///
    /// async fn connect(relay: QuestionRelay) -> Result<Client, mcp_client::Error> {
    ///     let builder = relay.install(Client::builder());
    ///     builder.connect_stdio(Stdio::builder("my-server")).await
    /// }
    ///
    /// let relay = QuestionRelay::new();
    /// let first = connect(relay.clone()).await?;
    /// let gateway = Gateway::builder()
    ///     .question_relay(relay)
    ///     .max_children(8)
    ///     .start_per_session(first, connect)
    ///     .await?;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// gateway.serve_http(listener, std::future::pending()).await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); [`GatewayError::InvalidSetting`] for fewer than 2
    /// children or an idle time of zero.
    pub async fn start_per_session<F, Fut, E>(
        self,
        upstream: Client,
        connect: F,
    ) -> Result<Gateway, GatewayError>
    where
        F: Fn(QuestionRelay) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Client, E>> + Send + 'static,
        E: std::fmt::Display,
    {
        let max_calls = self.max_calls()?;
        let max_children = self.max_children.unwrap_or(DEFAULT_MAX_CHILDREN);
        if max_children < 2 {
            return Err(GatewayError::InvalidSetting {
                setting: "max_children",
                reason: "at least 2: the shared connection and one session's".into(),
            });
        }
        let idle = self.child_idle.unwrap_or(DEFAULT_CHILD_IDLE);
        if idle.is_zero() {
            return Err(GatewayError::InvalidSetting {
                setting: "child_idle",
                reason: "a connection must be kept between two requests".into(),
            });
        }
        let connect = Arc::new(connect);
        let connect: Connect = Arc::new(move |relay| {
            let connecting = connect(relay);
            Box::pin(async move { connecting.await.map_err(|e| e.to_string()) })
        });
        let permits = Arc::new(tokio::sync::Semaphore::new(max_calls));
        let in_flight = self.relay.as_ref().map(|relay| relay.in_flight.clone());
        let children = Arc::new(Children::new(
            connect,
            max_children,
            idle,
            in_flight.is_some(),
            permits.clone(),
            self.call_timeout,
        ));
        let mut link = Link::with_permits(upstream, permits, self.call_timeout, in_flight);
        link.sessions = Some(children.clone());
        let mut gateway = self.finish(Arc::new(link)).await?;
        gateway.reaper = Some(tokio::spawn(children::reap(Arc::downgrade(&children))));
        gateway.children = Some(children);
        Ok(gateway)
    }

    fn max_calls(&self) -> Result<usize, GatewayError> {
        let max_calls = self
            .max_upstream_calls
            .unwrap_or(DEFAULT_MAX_UPSTREAM_CALLS);
        if max_calls == 0 {
            return Err(GatewayError::InvalidSetting {
                setting: "max_upstream_calls",
                reason: "at least one request must be able to go upstream".into(),
            });
        }
        Ok(max_calls)
    }

    /// Lists the upstream through `link` and builds the gateway.
    async fn finish(self, link: Arc<Link>) -> Result<Gateway, GatewayError> {
        let offers = Offers::of(&link);
        let listing = translate::list(&link, offers).await?;
        let max_subscriptions = self
            .max_upstream_subscriptions
            .unwrap_or(DEFAULT_MAX_UPSTREAM_SUBSCRIPTIONS);
        let uris = if offers.subscribe {
            translate::resource_uris(&listing, max_subscriptions)
        } else {
            Vec::new()
        };
        let Declarations {
            tools,
            resources,
            templates,
            prompts,
            skipped,
        } = translate::declare(&link, listing, &self.tool_scopes);
        let described = link.client.server();
        let info = described.as_ref().and_then(|d| d.server_info.clone());
        let upstream_text = |key: &str| {
            info.as_ref()
                .and_then(|info| info.get(key))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let name = self
            .name
            .or_else(|| upstream_text("name"))
            .unwrap_or_else(|| "mcp-gateway".into());
        let version = self
            .version
            .or_else(|| upstream_text("version"))
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").into());
        let mut builder = Server::builder(name, version);
        if let Some(title) = upstream_text("title") {
            builder = builder.title(title);
        }
        if let Some(instructions) = described.and_then(|d| d.instructions) {
            builder = builder.instructions(instructions);
        }
        builder = tools
            .into_iter()
            .fold(builder, mcp_server::ServerBuilder::tool);
        builder = resources
            .into_iter()
            .fold(builder, mcp_server::ServerBuilder::resource);
        builder = templates
            .into_iter()
            .fold(builder, mcp_server::ServerBuilder::resource_template);
        builder = prompts
            .into_iter()
            .fold(builder, mcp_server::ServerBuilder::prompt);
        if offers.completions {
            builder = builder.completion(translate::completer(&link));
        }
        if let Some(skills) = translate::skills(&link) {
            builder = builder.extension(skills);
        }
        if let Some(schemas) = self.tool_schemas {
            builder = builder.tool_schemas(schemas);
        }
        if let Some(messages) = self.max_queued_messages {
            builder = builder.max_queued_messages(messages);
        }
        if let Some(hub) = self.hub {
            builder = builder.state_store(hub.clone()).event_log(hub);
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.metrics {
            builder = builder.metrics(metrics);
        }
        let server = builder.build()?;
        let shared = Arc::new(Shared {
            link,
            server,
            offers,
            max_subscriptions,
            tool_scopes: self.tool_scopes,
            refreshing: tokio::sync::Mutex::new(()),
            skipped: Mutex::new(skipped),
            subscribed: Mutex::new(uris.clone()),
            next_listener: Mutex::new(None),
            swap: tokio::sync::Notify::new(),
        });
        let watcher = shared
            .listen(uris)
            .await
            .map(|listener| tokio::spawn(watch(Arc::downgrade(&shared), listener)));
        Ok(Gateway {
            shared,
            watcher,
            reaper: None,
            children: None,
        })
    }
}

/// What the gateway's parts share: the upstream link and the downstream server.
struct Shared {
    link: Arc<Link>,
    server: Server,
    offers: Offers,
    max_subscriptions: usize,
    /// Scopes per proxied tool, applied again at every refresh.
    tool_scopes: ToolScopes,
    /// One refresh at a time: list, declare, resubscribe, replace.
    refreshing: tokio::sync::Mutex<()>,
    skipped: Mutex<Vec<Skipped>>,
    /// The resource URIs the upstream listener is subscribed to (or will be, once the
    /// watcher takes `next_listener`).
    subscribed: Mutex<Vec<String>>,
    /// A listener with the subscriptions of the latest listing, for the watcher to take.
    next_listener: Mutex<Option<Listener>>,
    /// Wakes the watcher when `next_listener` is set.
    swap: tokio::sync::Notify,
}

impl Shared {
    /// Subscribes to the upstream's list changes and to `uris`; `None` when the upstream
    /// refuses (the catalog then stays as listed until [`Gateway::refresh`]).
    async fn listen(&self, uris: Vec<String>) -> Option<Listener> {
        let mut subscriptions = Subscriptions::new();
        if self.offers.tools {
            subscriptions = subscriptions.tools_changed();
        }
        if self.offers.prompts {
            subscriptions = subscriptions.prompts_changed();
        }
        if self.offers.resources {
            subscriptions = subscriptions.resources_changed();
        }
        for uri in uris {
            subscriptions = subscriptions.resource(uri);
        }
        match self.link.client.listen(subscriptions).await {
            Ok(listener) => Some(listener),
            Err(e) => {
                tracing::warn!(error = %e, "the upstream's notifications cannot be followed; the catalog is kept as first listed");
                None
            }
        }
    }

    /// Refreshes after the upstream announced the kinds in `announced`, and announces each of
    /// them downstream, whether or not its listing looks different here: the upstream may
    /// know of a change the listing does not show (or have changed back in between), and a
    /// downstream client is owed what the upstream said.
    async fn refresh_announced(&self, announced: Announced) -> Result<(), GatewayError> {
        let replaced = self.refresh().await?;
        let notifier = self.server.notifier();
        for (was_announced, published, change) in [
            (announced.tools, replaced.tools, Change::ToolsListChanged),
            (
                announced.prompts,
                replaced.prompts,
                Change::PromptsListChanged,
            ),
            (
                announced.resources,
                replaced.resources,
                Change::ResourcesListChanged,
            ),
        ] {
            if was_announced && !published {
                notifier
                    .publish(&change)
                    .await
                    .map_err(|e| GatewayError::Refresh(mcp_server::ChangeError::Publish(e)))?;
            }
        }
        Ok(())
    }

    /// The listener a refresh left for the watcher, if any.
    fn swap_listener(&self) -> Option<Listener> {
        self.next_listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    async fn refresh(&self) -> Result<Replaced, GatewayError> {
        let _one = self.refreshing.lock().await;
        let listing = translate::list(&self.link, self.offers).await?;
        if self.offers.subscribe {
            // Subscribed before the new catalog is announced, so an update of a resource a
            // downstream client subscribes to on hearing of it is not missed.
            let wanted = translate::resource_uris(&listing, self.max_subscriptions);
            let changed = *self
                .subscribed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                != wanted;
            if changed && let Some(listener) = self.listen(wanted.clone()).await {
                *self
                    .subscribed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = wanted;
                *self
                    .next_listener
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(listener);
                self.swap.notify_one();
            }
        }
        let declarations = translate::declare(&self.link, listing, &self.tool_scopes);
        let replaced = self
            .server
            .replace_catalog(
                declarations.tools,
                declarations.resources,
                declarations.templates,
                declarations.prompts,
            )
            .await?;
        *self.skipped.lock().unwrap_or_else(PoisonError::into_inner) = declarations.skipped;
        Ok(replaced)
    }
}

/// The first pause before following the upstream again after its notification stream ended;
/// each failed try doubles it, up to [`RECONNECT_MAX`].
const RECONNECT_FIRST: Duration = Duration::from_secs(1);
/// The longest pause between two tries to follow the upstream again.
const RECONNECT_MAX: Duration = Duration::from_secs(60);

/// Follows the upstream's notifications while the gateway lives: when the upstream's stream
/// ends (the upstream restarted, a connection broke), it subscribes again, after a pause that
/// grows from 1 s to 60 s while the upstream refuses, and lists the catalog again (changes may
/// have been missed meanwhile).
async fn watch(shared: Weak<Shared>, mut listener: Listener) {
    loop {
        if !follow(&shared, &mut listener).await {
            return;
        }
        tracing::warn!(end = ?listener.end(), "the upstream's notification stream ended; following it again");
        match reconnect(&shared).await {
            Some(next) => listener = next,
            None => return,
        }
    }
}

/// Subscribes to the upstream again; `None` when the gateway is gone.
async fn reconnect(shared: &Weak<Shared>) -> Option<Listener> {
    let mut pause = RECONNECT_FIRST;
    loop {
        tokio::time::sleep(pause).await;
        let strong = shared.upgrade()?;
        let uris = strong
            .subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(listener) = strong.listen(uris).await {
            if let Err(e) = strong.refresh().await {
                tracing::warn!(error = %e, "listing the upstream again after following it again failed");
            }
            return Some(listener);
        }
        pause = (pause * 2).min(RECONNECT_MAX);
    }
}

/// Handles the upstream's notifications until `listener` ends (`true`) or the gateway is
/// gone (`false`). The notifications already waiting are taken together, so several list
/// changes in a row make one refresh. A refresh that changed the resources subscribed to
/// leaves a new listener, which replaces this one (the new one first, so nothing falls
/// between them).
async fn follow(shared: &Weak<Shared>, listener: &mut Listener) -> bool {
    loop {
        let Some(strong) = shared.upgrade() else {
            return false;
        };
        if let Some(next) = strong.swap_listener() {
            *listener = next;
        }
        // (A notification of `swap` given before this wait is kept for it.)
        let first = tokio::select! {
            next = listener.next() => next,
            () = strong.swap.notified() => continue,
        };
        drop(strong);
        let Some(first) = first else {
            return true;
        };
        let mut batch = vec![first];
        while let Some(Some(next)) = futures::FutureExt::now_or_never(listener.next()) {
            batch.push(next);
        }
        let Some(shared) = shared.upgrade() else {
            return false;
        };
        let mut announced = Announced::default();
        for notification in batch {
            match notification.method.as_ref() {
                "notifications/tools/list_changed" => announced.tools = true,
                "notifications/prompts/list_changed" => announced.prompts = true,
                "notifications/resources/list_changed" => announced.resources = true,
                "notifications/resources/updated" => {
                    let uri = notification
                        .params
                        .as_ref()
                        .and_then(|p| p.get("uri"))
                        .and_then(serde_json::Value::as_str);
                    if let Some(uri) = uri
                        && let Err(e) = shared.server.notifier().resource_updated(uri).await
                    {
                        tracing::warn!(error = %e, "forwarding a resource update failed");
                    }
                }
                _ => {}
            }
        }
        if announced.any()
            && let Err(e) = shared.refresh_announced(announced).await
        {
            tracing::warn!(error = %e, "refreshing the catalog after an upstream change failed");
        }
    }
}

/// The list changes the upstream announced in one batch of notifications.
#[derive(Clone, Copy, Debug, Default)]
struct Announced {
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl Announced {
    fn any(self) -> bool {
        self.tools || self.prompts || self.resources
    }
}

/// A gateway: a [`Server`] whose tools, resources, templates, prompts and completions are an
/// upstream server's, forwarded through one [`Client`].
///
/// Dropping it stops following the upstream's notifications; [`close`](Self::close) also
/// ends the upstream session.
pub struct Gateway {
    shared: Arc<Shared>,
    watcher: Option<tokio::task::JoinHandle<()>>,
    /// Closes the sessions' upstream connections that ended or idled
    /// ([`GatewayBuilder::start_per_session`]).
    reaper: Option<tokio::task::JoinHandle<()>>,
    /// The sessions' upstream connections ([`GatewayBuilder::start_per_session`]).
    children: Option<Arc<Children>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("server", &self.shared.server)
            .field("upstream", &self.shared.link)
            .finish_non_exhaustive()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        for task in [self.watcher.take(), self.reaper.take()]
            .into_iter()
            .flatten()
        {
            task.abort();
        }
    }
}

impl Gateway {
    /// A builder with every default.
    pub fn builder() -> GatewayBuilder {
        GatewayBuilder::default()
    }

    /// The downstream server (cheap to clone): serve it on any transport `mcp-server` has.
    pub fn server(&self) -> &Server {
        &self.shared.server
    }

    /// The upstream client.
    pub fn upstream(&self) -> &Client {
        &self.shared.link.client
    }

    /// How many downstream sessions have an upstream connection of their own now
    /// ([`GatewayBuilder::start_per_session`]; the shared connection not counted): 0 with
    /// [`GatewayBuilder::start`].
    pub fn session_upstreams(&self) -> usize {
        self.children
            .as_ref()
            .map_or(0, |children| children.count())
    }

    /// The upstream declarations the last listing could not serve, and why.
    pub fn skipped(&self) -> Vec<Skipped> {
        self.shared
            .skipped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Lists the upstream again and replaces the catalog, announcing what changed downstream.
    /// The gateway does this itself on the upstream's list-changed notifications.
    ///
    /// # Errors
    ///
    /// [`GatewayError::Upstream`] when a listing fails (the catalog is unchanged);
    /// [`GatewayError::Refresh`] when the change could not be made or announced.
    pub async fn refresh(&self) -> Result<Replaced, GatewayError> {
        self.shared.refresh().await
    }

    /// Serves Streamable HTTP at `/mcp` and HTTP+SSE at `/sse` on `listener` with the
    /// default [`HttpConfig`], until `shutdown` resolves.
    ///
    /// # Errors
    ///
    /// [`GatewayError::Http`] when the listener fails.
    pub async fn serve_http(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), GatewayError> {
        self.serve_http_with(listener, HttpConfig::default(), shutdown)
            .await
    }

    /// [`serve_http`](Self::serve_http) with an [`HttpConfig`] of your own (allowed hosts,
    /// TLS-terminating proxies, authorization of downstream clients, limits).
    ///
    /// # Errors
    ///
    /// [`GatewayError::Http`] when the listener fails.
    pub async fn serve_http_with(
        &self,
        listener: TcpListener,
        config: HttpConfig,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), GatewayError> {
        let endpoint = HttpEndpoint::new(self.shared.server.clone(), config);
        mcp_server::http::serve_with_shutdown(listener, endpoint, shutdown).await?;
        Ok(())
    }

    /// Serves HTTPS (HTTP/2 and HTTP/1.1 by ALPN) with `tls`, otherwise as
    /// [`serve_http_with`](Self::serve_http_with): Streamable HTTP at `/mcp`, HTTP+SSE at
    /// `/sse`, until `shutdown` resolves. `config` may come from
    /// [`DownstreamAuth::http_config`] to authenticate downstream clients too.
    ///
    /// ```no_run
    /// # async fn run(gateway: mcp_gateway::Gateway) -> Result<(), Box<dyn std::error::Error>> {
    /// use mcp_gateway::Tls;
    ///
    /// let tls = Tls::from_pem_files("cert.pem", "key.pem")?;
    /// let listener = tokio::net::TcpListener::bind("0.0.0.0:8443").await?;
    /// gateway
    ///     .serve_https_with(listener, Default::default(), tls, std::future::pending())
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`GatewayError::Http`] when the listener fails.
    pub async fn serve_https_with(
        &self,
        listener: TcpListener,
        config: HttpConfig,
        tls: Tls,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), GatewayError> {
        let endpoint = HttpEndpoint::new(self.shared.server.clone(), config);
        mcp_server::http::serve_tls_with_shutdown(listener, endpoint, tls, shutdown).await?;
        Ok(())
    }

    /// [`serve_http`](Self::serve_http) with downstream clients authenticated by `auth`.
    ///
    /// # Errors
    ///
    /// [`GatewayError::InvalidSetting`] when `auth` cannot be built;
    /// [`GatewayError::Http`] when the listener fails.
    pub async fn serve_http_protected(
        &self,
        listener: TcpListener,
        auth: &DownstreamAuth,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), GatewayError> {
        let config = auth.http_config()?;
        self.serve_http_with(listener, config, shutdown).await
    }

    /// Serves stdio on this process's stdin and stdout until stdin closes.
    ///
    /// # Errors
    ///
    /// [`GatewayError::Stdio`] when stdin or stdout fails.
    pub async fn serve_stdio(&self) -> Result<(), GatewayError> {
        mcp_server::serve_stdio(self.shared.server.clone()).await?;
        Ok(())
    }

    /// Stops following the upstream and ends the upstream session (with
    /// [`GatewayBuilder::start_per_session`], every session's too: stdio children end).
    ///
    /// # Errors
    ///
    /// [`GatewayError::Upstream`] when the upstream session could not be ended cleanly.
    pub async fn close(mut self) -> Result<(), GatewayError> {
        for task in [self.watcher.take(), self.reaper.take()]
            .into_iter()
            .flatten()
        {
            task.abort();
        }
        if let Some(children) = &self.children {
            let closing = children.drain();
            futures::future::join_all(closing.iter().map(|link| children::close(link))).await;
        }
        self.shared
            .link
            .client
            .close()
            .await
            .map_err(|source| GatewayError::Upstream {
                doing: "close",
                source,
            })
    }
}

/// Opens the hub `url` names (`memory`, or `redis://…`, `postgres://…`, `sqlite:PATH` when
/// this crate is built with the feature of that name), for [`GatewayBuilder::hub`].
///
/// # Errors
///
/// [`GatewayError::Hub`] when the URL is unknown, its backend not built in, or it cannot be
/// reached.
pub async fn connect_hub(url: &str) -> Result<Option<Arc<dyn mcp_hub::Hub>>, GatewayError> {
    if url == "memory" {
        return Ok(None);
    }
    mcp_hub::connect(url)
        .await
        .map(Some)
        .map_err(|e| GatewayError::Hub(e.to_string()))
}
