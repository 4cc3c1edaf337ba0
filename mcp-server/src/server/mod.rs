//! The registry: server identity, declarations, settings, and per-revision views built once.

use crate::FastMap;
use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;
use std::time::Duration;

use mcp_adapters::{Adapter, AdapterSet, PerRevision};
use mcp_hub::{EventLog, StateStore};
use mcp_schema::Validator;
use serde_json::{Map, Value};

use crate::completion::Completer;
use crate::error::RegistrationError;
use crate::icon::{Icon, icons_value};
pub(crate) mod project;
use crate::prompt::Prompt;
use mcp_adapters::{CacheHint, CacheScope};

use crate::resource::{Resource, ResourceTemplate, UriTemplate, check_fixed_uri};
use crate::schema::is_object_rooted;
use crate::state::RequestStates;
use crate::tool::Tool;

/// Builds a [`Server`]: identity, declarations and settings. Declarations are checked by
/// [`build`](Self::build).
///
/// ```
/// use mcp_server::{NoArgs, Server, Tool};
///
/// async fn hello(_: NoArgs) -> String {
///     "hello".to_owned()
/// }
///
/// let server = Server::builder("demo", "1.0")
///     .instructions("Say hello.")
///     .tool(Tool::new("hello", hello).read_only())
///     .build()
///     .unwrap();
/// assert_eq!(server.name(), "demo");
/// ```
pub struct ServerBuilder {
    identity: Identity,
    instructions: Option<String>,
    tools: Vec<Tool>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
    prompts: Vec<Prompt>,
    completer: Option<Completer>,
    page_size: usize,
    request_state_ttl: Duration,
    ask_timeout: Duration,
    max_queued: usize,
    list_cache: CacheHint,
    adapters: AdapterSet,
    store: Option<Arc<dyn StateStore>>,
    log: Option<Arc<dyn EventLog>>,
    tool_schemas: ToolSchemas,
    extensions: Vec<crate::Extension>,
    tasks: Option<crate::Tasks>,
    skills: Option<crate::Skills>,
    rate_limits: Vec<crate::RateLimit>,
    rate_limit_lease: u32,
    rate_limit_on_hub_failure: crate::OnHubFailure,
    /// The shared state handlers extract with [`State`](crate::State), and its type.
    app_state: Option<(
        Arc<dyn std::any::Any + Send + Sync>,
        std::any::TypeId,
        &'static str,
    )>,
    #[cfg(feature = "metrics")]
    metrics: Option<crate::Metrics>,
}

/// How tools' schemas are shown on revisions that cannot hold every keyword of a declared
/// JSON Schema 2020-12 in every client's reading ([`ServerBuilder::tool_schemas`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolSchemas {
    /// The default: 2024-11-05 to 2025-11-25 clients are shown a simplified schema that reads
    /// the same in draft-07 and 2020-12 (`$ref` inlined, nullable unions collapsed, and the
    /// rest of the rules in `mcp-schema`), or the tool is not listed there when that is not
    /// possible without loss. Safe for every client of those revisions.
    #[default]
    Projected,
    /// 2025-11-25 clients are shown the declared schema as it is (`$schema`, `$defs`, `$ref`,
    /// `additionalProperties`, composition and conditionals), without `x-mcp-header`: 2020-12
    /// is that revision's default dialect (SEP-1613), so a conforming client reads it; older
    /// clients that only read `properties` may not. The draft-07 revisions (2024-11-05 to
    /// 2025-06-18) stay projected, and 2026-07-28 always shows the declared schema.
    Native,
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Identity {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) website_url: Option<String>,
    pub(crate) icons: Vec<Icon>,
}

/// The default page size of the four list operations.
pub const DEFAULT_PAGE_SIZE: usize = 100;

impl ServerBuilder {
    fn new(name: String, version: String) -> Self {
        Self {
            identity: Identity {
                name,
                version,
                ..Identity::default()
            },
            instructions: None,
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            completer: None,
            page_size: DEFAULT_PAGE_SIZE,
            request_state_ttl: Duration::from_secs(600),
            ask_timeout: Duration::from_secs(120),
            max_queued: crate::sink::DEFAULT_MAX_QUEUED,
            list_cache: CacheHint::default(),
            adapters: AdapterSet::all(),
            store: None,
            log: None,
            tool_schemas: ToolSchemas::Projected,
            extensions: Vec::new(),
            tasks: None,
            skills: None,
            rate_limits: Vec::new(),
            rate_limit_lease: crate::limit::DEFAULT_RATE_LIMIT_LEASE,
            rate_limit_on_hub_failure: crate::OnHubFailure::Open,
            app_state: None,
            #[cfg(feature = "metrics")]
            metrics: None,
        }
    }

    /// Sets the display title of the server (shown from 2025-06-18). Default is none.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.identity.title = Some(title.into());
        self
    }

    /// Sets the description of the server (shown from 2025-11-25). Default is none.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.identity.description = Some(description.into());
        self
    }

    /// Sets the server's website (shown from 2025-11-25). Default is none.
    #[must_use]
    pub fn website_url(mut self, url: impl Into<String>) -> Self {
        self.identity.website_url = Some(url.into());
        self
    }

    /// Adds an icon of the server (shown from 2025-11-25). Default is none.
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.identity.icons.push(icon);
        self
    }

    /// Sets the instructions a client may show its model. Default is none.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Registers a tool.
    #[must_use]
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Registers a resource at a fixed URI.
    #[must_use]
    pub fn resource(mut self, resource: Resource) -> Self {
        self.resources.push(resource);
        self
    }

    /// Registers a resource template.
    #[must_use]
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.templates.push(template);
        self
    }

    /// Registers a prompt.
    #[must_use]
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Sets the completion handler; without one, the `completions` capability is absent and
    /// `completion/complete` answers with no values. Default is none.
    #[must_use]
    pub fn completion(mut self, completer: Completer) -> Self {
        self.completer = Some(completer);
        self
    }

    /// The state every handler can take as a [`State<S>`](crate::State) argument (a database
    /// pool, a client, configuration), set once; each call gets a clone (share it behind an
    /// `Arc` when cloning costs). A tool whose handler takes a `State` of another type is
    /// refused by [`build`](Self::build). Default: none.
    ///
    /// ```
    /// use mcp_server::{Server, State, Tool};
    ///
    /// #[derive(Clone)]
    /// struct Greeting(&'static str);
    ///
    /// async fn hello(State(greeting): State<Greeting>, _: mcp_server::NoArgs) -> String {
    ///     greeting.0.to_owned()
    /// }
    ///
    /// let server = Server::builder("demo", "1.0")
    ///     .with_state(Greeting("hello"))
    ///     .tool(Tool::new("hello", hello))
    ///     .build()
    ///     .unwrap();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_state<S: Clone + Send + Sync + 'static>(mut self, state: S) -> Self {
        self.app_state = Some((
            Arc::new(state),
            std::any::TypeId::of::<S>(),
            std::any::type_name::<S>(),
        ));
        self
    }

    /// Offers a protocol extension: advertised in the server's capabilities on every revision
    /// (negotiated per request on 2026-07-28, at `initialize` before), its methods served to
    /// the clients it applies to. See [`Extension`](crate::Extension).
    #[must_use]
    pub fn extension(mut self, extension: crate::Extension) -> Self {
        self.extensions.push(extension);
        self
    }

    /// Offers the Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) with these
    /// limits and timings: tools declaring [`TaskSupport`](crate::TaskSupport) run as tasks
    /// for the requests that declare the extension, and `tasks/get`, `tasks/update` and
    /// `tasks/cancel` are served. Tasks live in the server's state store and event log (the
    /// hub), so every worker sharing the hub serves every task. Without this call, the
    /// extension is offered with [`Tasks::new`](crate::Tasks::new)'s defaults as soon as one
    /// tool declares task support.
    #[must_use]
    pub fn tasks(mut self, tasks: crate::Tasks) -> Self {
        self.tasks = Some(tasks);
        self
    }

    /// Offers the Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) with this
    /// catalog: `skills/list` and `skills/get` are served, the extension and the `resources`
    /// capability are declared, and every skill file is a resource (listed by
    /// `resources/list`, read by `resources/read`), so clients of revisions without
    /// extensions still reach the skills. See [`Skills`](crate::Skills).
    ///
    /// ```
    /// use mcp_server::{Server, Skill, Skills};
    ///
    /// let skills = Skills::builder()
    ///     .skill(Skill::new("greeting").file(
    ///         "SKILL.md",
    ///         "---\nname: greeting\ndescription: Greets people\n---\n\nSay hello.\n",
    ///     ))
    ///     .build()
    ///     .unwrap();
    /// let server = Server::builder("demo", "1.0").skills(skills).build().unwrap();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn skills(mut self, skills: crate::Skills) -> Self {
        self.skills = Some(skills);
        self
    }

    /// Sets how 2025-11-25 clients are shown tools' input and output schemas. Default is
    /// [`ToolSchemas::Projected`].
    ///
    /// ```
    /// use mcp_server::{Server, ToolSchemas};
    ///
    /// let server = Server::builder("demo", "1.0")
    ///     .tool_schemas(ToolSchemas::Native)
    ///     .build()
    ///     .unwrap();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn tool_schemas(mut self, schemas: ToolSchemas) -> Self {
        self.tool_schemas = schemas;
        self
    }

    /// Sets how many entries one page of `tools/list`, `resources/list`,
    /// `resources/templates/list` and `prompts/list` holds (at least 1). Default is `100`.
    #[must_use]
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size;
        self
    }

    /// Sets how long the state of a call that asked (MRTR `requestState`, the `mcpState`
    /// argument) stays redeemable; a retry after that is refused with -32602. Default is 600 s.
    #[must_use]
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.request_state_ttl = ttl;
        self
    }

    /// Sets how long a pushed question (2025-06-18, 2025-11-25) waits for its reply before
    /// [`Exchange::ask`](crate::Exchange::ask) gives up with
    /// [`Interrupt::TimedOut`](crate::Interrupt::TimedOut). Default is 120 s.
    #[must_use]
    pub fn ask_timeout(mut self, timeout: Duration) -> Self {
        self.ask_timeout = timeout;
        self
    }

    /// Counts what this server serves into `metrics` (feature `metrics`): requests by
    /// revision, method and outcome, their latency, sessions and pending questions, on every
    /// transport. Default: none (nothing is counted). See [`Metrics`](crate::Metrics).
    #[cfg(feature = "metrics")]
    #[must_use]
    pub fn metrics(mut self, metrics: &crate::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// Sets how many messages one call may have waiting for its client to read them:
    /// progress, log messages, pushed questions and `subscriptions/listen` changes sent before
    /// the call's response (at least 1). Default is `64`.
    ///
    /// This bounds what a client that reads slowly (or not at all) costs, whatever the handler
    /// sends. At the limit:
    ///
    /// - progress is coalesced per progress token (a newer value replaces the one still
    ///   waiting; at most one per token waits), and dropped when no room is left;
    /// - log messages are dropped;
    /// - pushed questions and `subscriptions/listen` messages are never dropped: the handler
    ///   waits until the client has read enough (backpressure).
    ///
    /// A batch (2025-03-26) shares one queue among its calls. Results are not queued here: each
    /// call's response is sent when the call ends.
    ///
    /// ```
    /// use mcp_server::Server;
    ///
    /// let server = Server::builder("demo", "1.0").max_queued_messages(16).build().unwrap();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn max_queued_messages(mut self, limit: usize) -> Self {
        self.max_queued = limit.max(1);
        self
    }

    /// Adds a rate limit: a budget of calls per period for each caller (the principal of an
    /// authenticated request, else the client's address), to every call (`*`), a method
    /// (`tools/call`, `initialize`) or a tool (`deploy`); repeatable, every rule that applies
    /// to a call must admit it. Default: none (no limiter on the request path at all).
    ///
    /// The budgets live in the server's [state store](Self::state_store), so every worker on
    /// the hub spends the same one, within `workers × 1.5 × lease` calls per period (see
    /// [`rate_limit_lease`](Self::rate_limit_lease)). A refused call runs no handler: it gets
    /// the JSON-RPC error `-31429` with `data: {"retryAfterMs", "limit"}` on every revision,
    /// and on HTTP status 429 with `Retry-After`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_server::{RateLimit, Server};
    ///
    /// let server = Server::builder("demo", "1.0")
    ///     .rate_limit(RateLimit::parse("tools/call=600/1m").unwrap())
    ///     .rate_limit(RateLimit::new("deploy", 5, Duration::from_secs(60)).unwrap())
    ///     .build()
    ///     .unwrap();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn rate_limit(mut self, limit: crate::RateLimit) -> Self {
        self.rate_limits.push(limit);
        self
    }

    /// The most tokens a worker takes from a shared budget at once and spends without asking
    /// the store again (for at most a second, and never more than a tenth of the rule's
    /// budget). Within that, a worker takes about 100 ms of calls at the rate it has been
    /// spending the budget, so a slow caller takes one token at a time and only a caller of
    /// 10,000 calls a second or more reaches the default. Default 1,000
    /// ([`DEFAULT_RATE_LIMIT_LEASE`](crate::DEFAULT_RATE_LIMIT_LEASE)); 1 makes every limited
    /// call a round trip to the store and every budget exact.
    ///
    /// What a worker holds is what it can admit past the budget: in any period a caller gets
    /// at most `count + workers × 1.5 × min(lease, count / 10)` calls through.
    #[must_use]
    pub fn rate_limit_lease(mut self, tokens: u32) -> Self {
        self.rate_limit_lease = tokens.max(1);
        self
    }

    /// What the rate limits do while the state store fails. Default
    /// [`OnHubFailure::Open`](crate::OnHubFailure::Open): each worker limits by a budget of
    /// its own, logged at WARN.
    #[must_use]
    pub fn rate_limit_on_hub_failure(mut self, mode: crate::OnHubFailure) -> Self {
        self.rate_limit_on_hub_failure = mode;
        self
    }

    /// Sets the cache hint of `server/discover` and the list results (2026-07-28). Default is
    /// `ttlMs: 0`, `cacheScope: "private"`.
    #[must_use]
    pub fn list_cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.list_cache = CacheHint { ttl_ms, scope };
        self
    }

    /// Sets the revisions served. Default is all of them.
    #[must_use]
    pub fn revisions(mut self, adapters: AdapterSet) -> Self {
        self.adapters = adapters;
        self
    }

    /// Sets the state store (request state, handler state). Default is a fresh in-memory
    /// store, which is right for one process; share one store between workers.
    #[must_use]
    pub fn state_store(mut self, store: Arc<dyn StateStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Sets the event log through which replies to pushed questions reach the waiting call.
    /// Default is a fresh in-memory log.
    #[must_use]
    pub fn event_log(mut self, log: Arc<dyn EventLog>) -> Self {
        self.log = Some(log);
        self
    }

    /// Checks every declaration and builds the server.
    ///
    /// Refused: duplicate names (tools, prompts), URIs and templates; tool names outside
    /// 1 to 128 characters of `A-Z a-z 0-9 _ - .`; invalid `x-mcp-header` annotations; input
    /// schemas that are not object-rooted or do not compile; prompt arguments that are not a
    /// struct; malformed URIs and templates that are not RFC 6570 level 1.
    pub fn build(self) -> Result<Server, RegistrationError> {
        if self.page_size == 0 {
            return Err(RegistrationError::InvalidSetting {
                setting: "page_size",
                reason: "a page holds at least one entry".into(),
            });
        }
        let uses_tasks = self.tasks.is_some()
            || self
                .tools
                .iter()
                .any(|t| t.task_support != crate::TaskSupport::Forbidden);
        let has = self.app_state.as_ref().map(|(_, t, _)| *t);
        let takers = (self
            .tools
            .iter()
            .map(|t| ("tool", t.name.as_str(), &t.state_types)))
        .chain(
            self.prompts
                .iter()
                .map(|p| ("prompt", p.name.as_str(), &p.state_types)),
        )
        .chain(
            self.resources
                .iter()
                .map(|r| ("resource", r.uri.as_str(), &r.meta.state_types)),
        )
        .chain(self.templates.iter().map(|t| {
            (
                "resource template",
                t.template.as_str(),
                &t.meta.state_types,
            )
        }));
        for (kind, id, wanted) in takers {
            // Every `State<S>` a handler takes must be the server's one state type.
            if let Some((_, name)) = wanted.iter().find(|(wanted, _)| has != Some(*wanted)) {
                return Err(RegistrationError::InvalidSetting {
                    setting: "with_state",
                    reason: format!(
                        "{kind} {id:?} takes State<{name}>, and the server has no state of that type"
                    ),
                });
            }
        }
        let tools = build_tools(self.tools)?;
        let prompts = build_prompts(self.prompts)?;
        let mut resources = self.resources;
        if let Some(skills) = &self.skills {
            resources.extend(skills.resources());
        }
        let (resources, templates) = build_resources(resources, self.templates)?;
        let hub = Arc::new(mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default()));
        // One hub for both defaults, so the notifier and the listeners share a log.
        let store = self.store.unwrap_or_else(|| hub.clone());
        let log = self.log.unwrap_or(hub);
        #[cfg(feature = "metrics")]
        let (log, store) = match &self.metrics {
            Some(metrics) => metrics.meter_hub(log, store),
            None => (log, store),
        };
        let mut extensions = self.extensions;
        let declares_resources = self.skills.is_some();
        if let Some(skills) = &self.skills {
            extensions.push(skills.extension());
        }
        let tasks = uses_tasks.then(|| {
            let engine = crate::task::TaskEngine::new(
                store.clone(),
                log.clone(),
                self.tasks.unwrap_or_default(),
            );
            extensions.push(engine.extension());
            engine
        });
        let extension_methods = build_extensions(&extensions)?;
        let limiter = (!self.rate_limits.is_empty()).then(|| {
            let limiter = crate::limit::Limiter::new(
                self.rate_limits,
                self.rate_limit_lease,
                self.rate_limit_on_hub_failure,
                store.clone(),
            );
            #[cfg(feature = "metrics")]
            let limiter = limiter.counted(self.metrics.as_ref());
            Arc::new(limiter)
        });
        let settings = Arc::new(Settings {
            limiter,
            server_info: self.identity.to_value(),
            identity: self.identity,
            instructions: self.instructions,
            completer: self.completer,
            page_size: self.page_size,
            ask_timeout: self.ask_timeout,
            max_queued: self.max_queued,
            list_cache: self.list_cache,
            adapters: self.adapters,
            states: RequestStates::new(store, self.request_state_ttl),
            log: log.clone(),
            tool_schemas: self.tool_schemas,
            extensions,
            extension_methods,
            tasks,
            declares_resources,
            shared: Arc::new(crate::exchange::Shared {
                app_state: self.app_state.map(|(state, _, _)| state),
                log: log.clone(),
            }),
            #[cfg(feature = "metrics")]
            refusals: Arc::new(crate::refusal::Refusals::counted(
                self.metrics.as_ref().map(crate::Metrics::refusal_counters),
            )),
            #[cfg(not(feature = "metrics"))]
            refusals: Arc::default(),
            #[cfg(feature = "metrics")]
            metrics: self.metrics,
        });
        let catalog = Catalog::new(settings.clone(), tools, prompts, resources, templates);
        Ok(Server {
            live: Arc::new(Live::new(settings, Arc::new(catalog))),
        })
    }
}

fn index<'a>(keys: impl Iterator<Item = &'a str>) -> FastMap<String, usize> {
    keys.enumerate().map(|(i, k)| (k.to_owned(), i)).collect()
}

/// A registered tool with what was derived from it once.
#[derive(Clone)]
pub(crate) struct ToolEntry {
    pub(crate) tool: Tool,
    pub(crate) validator: Validator,
    pub(crate) output_schema: Option<Value>,
}

#[derive(Clone)]
pub(crate) struct PromptEntry {
    pub(crate) prompt: Prompt,
    pub(crate) arguments: Vec<Value>,
    pub(crate) validator: Validator,
}

#[derive(Clone)]
pub(crate) struct TemplateEntry {
    pub(crate) template: ResourceTemplate,
    pub(crate) parsed: UriTemplate,
}

/// Tool names per the 2025-11-25 guidance.
pub(crate) fn check_tool_name(name: &str) -> Result<(), RegistrationError> {
    let fail = |reason: &str| RegistrationError::InvalidToolName {
        name: name.to_owned(),
        reason: reason.to_owned(),
    };
    if name.is_empty() {
        return Err(fail("a tool name has at least one character"));
    }
    if name.chars().count() > 128 {
        return Err(fail("a tool name has at most 128 characters"));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(fail(&format!(
            "{bad:?} is not allowed; use A-Z, a-z, 0-9, '_', '-' and '.'"
        )));
    }
    Ok(())
}

/// Checks the extensions (identifiers, settings, method names) and indexes their methods.
fn build_extensions(
    extensions: &[crate::Extension],
) -> Result<FastMap<String, (usize, crate::extension::ErasedMethod)>, RegistrationError> {
    let mut ids = std::collections::HashSet::new();
    let mut methods = FastMap::default();
    for (index, extension) in extensions.iter().enumerate() {
        if !crate::extension::valid_id(&extension.id) {
            return Err(RegistrationError::InvalidSetting {
                setting: "extension",
                reason: format!(
                    "{:?} is not an extension identifier ({{vendor-prefix}}/{{name}})",
                    extension.id
                ),
            });
        }
        if !ids.insert(extension.id.as_str()) {
            return Err(RegistrationError::Duplicate {
                kind: "extension",
                name: extension.id.clone(),
            });
        }
        if !extension.settings.is_object() {
            return Err(RegistrationError::InvalidSetting {
                setting: "extension",
                reason: format!("the settings of {} must be a JSON object", extension.id),
            });
        }
        for (name, handler) in &extension.methods {
            if mcp_adapters::is_core_method(name) {
                return Err(RegistrationError::InvalidSetting {
                    setting: "extension",
                    reason: format!(
                        "{} cannot add the method {name:?}: a revision defines it",
                        extension.id
                    ),
                });
            }
            if methods
                .insert(name.clone(), (index, handler.clone()))
                .is_some()
            {
                return Err(RegistrationError::Duplicate {
                    kind: "extension method",
                    name: name.clone(),
                });
            }
        }
    }
    Ok(methods)
}

pub(crate) fn build_tools(tools: Vec<Tool>) -> Result<Vec<ToolEntry>, RegistrationError> {
    let mut out: Vec<ToolEntry> = Vec::with_capacity(tools.len());
    for mut tool in tools {
        check_tool_name(&tool.name)?;
        if out.iter().any(|t| t.tool.name == tool.name) {
            return Err(RegistrationError::Duplicate {
                kind: "tool",
                name: tool.name,
            });
        }
        let schema_error = |reason: String| RegistrationError::Schema {
            kind: "tool",
            name: tool.name.clone(),
            reason,
        };
        if !is_object_rooted(&tool.input_schema) {
            return Err(schema_error(
                "the arguments must be a struct or map: inputSchema needs `\"type\": \"object\"` at its root".into(),
            ));
        }
        for (path, header) in std::mem::take(&mut tool.headers) {
            annotate_header(&mut tool.input_schema, &path, &header).map_err(|reason| {
                RegistrationError::InvalidHeader {
                    tool: tool.name.clone(),
                    reason,
                }
            })?;
        }
        mcp_schema::extract_headers(&tool.input_schema).map_err(|e| {
            RegistrationError::InvalidHeader {
                tool: tool.name.clone(),
                reason: e.to_string(),
            }
        })?;
        let validator =
            Validator::compile(&tool.input_schema).map_err(|e| schema_error(e.to_string()))?;
        let output_schema = match tool.output_schema.take() {
            None => None,
            Some(Err(reason)) => return Err(schema_error(format!("output schema: {reason}"))),
            Some(Ok(schema)) => {
                Validator::compile(&schema)
                    .map_err(|e| schema_error(format!("output schema: {e}")))?;
                Some(schema)
            }
        };
        out.push(ToolEntry {
            tool,
            validator,
            output_schema,
        });
    }
    out.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
    Ok(out)
}

/// Writes `x-mcp-header: header` on the property at `path` (names joined by `.`).
fn annotate_header(schema: &mut Value, path: &str, header: &str) -> Result<(), String> {
    let mut node = schema;
    for name in path.split('.') {
        node = node
            .get_mut("properties")
            .and_then(|p| p.get_mut(name))
            .ok_or_else(|| format!("no argument {path:?} reached through `properties` (nested structs behind `$ref` cannot carry headers)"))?;
    }
    let Some(object) = node.as_object_mut() else {
        return Err(format!("the schema of {path:?} is not an object"));
    };
    object.insert(
        mcp_schema::header::KEYWORD.into(),
        Value::String(header.to_owned()),
    );
    Ok(())
}

pub(crate) fn build_prompts(prompts: Vec<Prompt>) -> Result<Vec<PromptEntry>, RegistrationError> {
    let mut out: Vec<PromptEntry> = Vec::with_capacity(prompts.len());
    for prompt in prompts {
        if prompt.name.is_empty() {
            return Err(RegistrationError::Schema {
                kind: "prompt",
                name: prompt.name,
                reason: "a prompt needs a name".into(),
            });
        }
        if out.iter().any(|p| p.prompt.name == prompt.name) {
            return Err(RegistrationError::Duplicate {
                kind: "prompt",
                name: prompt.name,
            });
        }
        let schema_error = |reason: String| RegistrationError::Schema {
            kind: "prompt",
            name: prompt.name.clone(),
            reason,
        };
        let arguments = prompt.arguments().map_err(schema_error)?;
        let validator =
            Validator::compile(&prompt.schema).map_err(|e| schema_error(e.to_string()))?;
        out.push(PromptEntry {
            prompt,
            arguments,
            validator,
        });
    }
    out.sort_by(|a, b| a.prompt.name.cmp(&b.prompt.name));
    Ok(out)
}

pub(crate) fn build_resources(
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
) -> Result<(Vec<Resource>, Vec<TemplateEntry>), RegistrationError> {
    let mut fixed: Vec<Resource> = Vec::with_capacity(resources.len());
    for resource in resources {
        check_fixed_uri(&resource.uri)?;
        if fixed.iter().any(|r| r.uri == resource.uri) {
            return Err(RegistrationError::Duplicate {
                kind: "resource",
                name: resource.uri,
            });
        }
        fixed.push(resource);
    }
    fixed.sort_by(|a, b| a.uri.cmp(&b.uri));
    let mut parsed: Vec<TemplateEntry> = Vec::with_capacity(templates.len());
    for template in templates {
        let uri_template = UriTemplate::parse(&template.template)?;
        crate::resource::check_scheme(&template.template).map_err(|reason| {
            RegistrationError::InvalidUri {
                uri: template.template.clone(),
                reason: reason.to_owned(),
            }
        })?;
        if parsed
            .iter()
            .any(|t| t.template.template == template.template)
        {
            return Err(RegistrationError::Duplicate {
                kind: "resource template",
                name: template.template,
            });
        }
        parsed.push(TemplateEntry {
            template,
            parsed: uri_template,
        });
    }
    parsed.sort_by(|a, b| a.template.template.cmp(&b.template.template));
    Ok((fixed, parsed))
}

/// What a [`Server`] was built with that no runtime change touches: identity, revisions,
/// stores, limits, extensions, metrics. Built once and shared (one `Arc`) by every
/// [`Catalog`] the server has over its life: a catalog change copies none of it.
pub(crate) struct Settings {
    pub(crate) identity: Identity,
    pub(crate) server_info: Value,
    pub(crate) instructions: Option<String>,
    pub(crate) completer: Option<Completer>,
    pub(crate) page_size: usize,
    pub(crate) ask_timeout: Duration,
    /// The most messages one call keeps waiting for its client (see the builder).
    pub(crate) max_queued: usize,
    pub(crate) list_cache: CacheHint,
    pub(crate) adapters: AdapterSet,
    pub(crate) states: RequestStates,
    pub(crate) log: Arc<dyn EventLog>,
    pub(crate) tool_schemas: ToolSchemas,
    pub(crate) extensions: Vec<crate::Extension>,
    /// Each extension method: the index of its extension and its handler.
    pub(crate) extension_methods: FastMap<String, (usize, crate::extension::ErasedMethod)>,
    /// The Tasks extension's engine, when the server offers it.
    pub(crate) tasks: Option<Arc<crate::task::TaskEngine>>,
    /// What every call shares: the state of [`ServerBuilder::with_state`], the event log.
    pub(crate) shared: Arc<crate::exchange::Shared>,
    /// The `resources` capability is declared even with no resource (an empty skills
    /// catalog: the Skills extension requires the capability).
    pub(crate) declares_resources: bool,
    /// Refused requests: rate-limited log lines and `mcp_refusals_total`.
    pub(crate) refusals: Arc<crate::refusal::Refusals>,
    /// The rate limits, when the builder set any.
    pub(crate) limiter: Option<Arc<crate::limit::Limiter>>,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<crate::Metrics>,
}

/// What a [`Server`] offers now: its tools, resources and prompts, and what each revision is
/// shown of them (computed once per revision). A runtime change builds the next catalog and
/// swaps it in whole ([`Live::replace`]); a request is served from the catalog it started
/// with.
pub(crate) struct Catalog {
    /// The server's settings, shared with every other catalog of the server.
    pub(crate) settings: Arc<Settings>,
    pub(crate) tools: Vec<ToolEntry>,
    pub(crate) tool_index: FastMap<String, usize>,
    /// Some tool names scopes of its own: only then does a protected `tools/call` look its
    /// tool up before dispatch to check them.
    pub(crate) scoped_tools: bool,
    pub(crate) resources: Vec<Resource>,
    pub(crate) resource_index: FastMap<String, usize>,
    pub(crate) templates: Vec<TemplateEntry>,
    /// Template indices, most literal text first: the most specific template matches first.
    pub(crate) template_order: Vec<usize>,
    pub(crate) prompts: Vec<PromptEntry>,
    pub(crate) prompt_index: FastMap<String, usize>,
    views: PerRevision<project::RevisionView>,
}

impl Catalog {
    /// A catalog of these entries (each list sorted as `build` sorts it); the per-revision
    /// views are computed on first use.
    pub(crate) fn new(
        settings: Arc<Settings>,
        tools: Vec<ToolEntry>,
        prompts: Vec<PromptEntry>,
        resources: Vec<Resource>,
        templates: Vec<TemplateEntry>,
    ) -> Self {
        Self {
            settings,
            tool_index: index(tools.iter().map(|t| t.tool.name.as_str())),
            scoped_tools: tools.iter().any(|t| !t.tool.scopes.is_empty()),
            tools,
            resource_index: index(resources.iter().map(|r| r.uri.as_str())),
            resources,
            template_order: {
                let mut order: Vec<usize> = (0..templates.len()).collect();
                order.sort_by_key(|&i| std::cmp::Reverse(templates[i].parsed.literal_len()));
                order
            },
            templates,
            prompt_index: index(prompts.iter().map(|p| p.prompt.name.as_str())),
            prompts,
            views: Default::default(),
        }
    }

    /// What `adapter`'s revision is shown, computed on first use and kept.
    pub(crate) fn view(&self, adapter: Adapter) -> &project::RevisionView {
        self.views.get_or_init(adapter.revision(), || {
            project::RevisionView::build(self, adapter)
        })
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<&PromptEntry> {
        self.prompt_index.get(name).map(|&i| &self.prompts[i])
    }

    /// The next catalog: these entries with the same settings (shared, not copied), and
    /// every per-revision view computed now, so no request pays for the change.
    pub(crate) fn with_catalog(
        &self,
        tools: Vec<ToolEntry>,
        prompts: Vec<PromptEntry>,
        resources: Vec<Resource>,
        templates: Vec<TemplateEntry>,
    ) -> Self {
        let catalog = Self::new(self.settings.clone(), tools, prompts, resources, templates);
        for adapter in catalog.settings.adapters.adapters() {
            catalog.view(*adapter);
        }
        catalog
    }
}

impl Identity {
    /// The server's `Implementation` as declared (each adapter projects it).
    pub(crate) fn to_value(&self) -> Value {
        let mut out = Map::new();
        out.insert("name".into(), Value::String(self.name.clone()));
        out.insert("version".into(), Value::String(self.version.clone()));
        if let Some(title) = &self.title {
            out.insert("title".into(), Value::String(title.clone()));
        }
        if let Some(description) = &self.description {
            out.insert("description".into(), Value::String(description.clone()));
        }
        if let Some(url) = &self.website_url {
            out.insert("websiteUrl".into(), Value::String(url.clone()));
        }
        if let Some(icons) = icons_value(&self.icons) {
            out.insert("icons".into(), icons);
        }
        Value::Object(out)
    }
}

/// An MCP server: one registry of declarations, served on every configured revision.
///
/// Cheap to clone (shared): every clone is the same server. Runtime changes
/// ([`add_tool`](Self::add_tool) and the like) swap its registry for every clone at once; each
/// request is served from the registry as it was when the request came in. Feed it messages
/// with [`Server::handle`](crate::Server::handle), or serve it on stdio with
/// [`serve_stdio`](crate::serve_stdio).
#[derive(Clone)]
pub struct Server {
    /// The one handle: the current registry, and what every clone shares.
    pub(crate) live: Arc<Live>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let registry = self.live.current();
        f.debug_struct("Server")
            .field("name", &registry.settings.identity.name)
            .field("tools", &registry.tools.len())
            .field("resources", &registry.resources.len())
            .field("templates", &registry.templates.len())
            .field("prompts", &registry.prompts.len())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts declaring a server named `name` at `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(name.into(), version.into())
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.live.settings().identity.name
    }

    /// The revisions served.
    pub fn revisions(&self) -> &AdapterSet {
        &self.live.settings().adapters
    }

    /// The `x-mcp-header` bindings of the tools offered on `adapter`'s revision now, for the
    /// `Mcp-Param-*` checks of [`Adapter::decode_http`](mcp_adapters::Adapter::decode_http).
    /// Computed once per revision (and again after a runtime change of the tools).
    ///
    /// The value holds the registry as it is when this is called: a call decoded with it and
    /// then handed to [`handle`](Self::handle) sees the same tools unless the catalog changes
    /// in between (the call then fails as it would for any tool removed while it was on its
    /// way).
    pub fn tool_headers(&self, adapter: Adapter) -> impl mcp_adapters::ToolHeaders + use<> {
        ToolHeadersNow {
            registry: self.live.current(),
            adapter,
        }
    }

    /// The settings no catalog change touches (see [`Live::settings`]).
    pub(crate) fn settings(&self) -> &Settings {
        self.live.settings()
    }

    /// The registry as it is now, for one request.
    pub(crate) fn served(&self) -> Served {
        Served {
            registry: self.live.current(),
            live: self.live.clone(),
        }
    }

    /// A [`Notifier`](crate::Notifier) that publishes to this server's event log, in the root namespace
    /// ([`Notifier::in_namespace`](crate::Notifier::in_namespace) for another).
    ///
    /// Every worker built with the same [`event_log`](crate::ServerBuilder::event_log)
    /// delivers what it publishes.
    pub fn notifier(&self) -> crate::Notifier {
        crate::Notifier::new(self.live.settings().log.clone(), mcp_hub::Namespace::root())
    }

    /// Ends every open `subscriptions/listen` stream of this server (every clone) gracefully:
    /// each gets its listen result and ends. Call it when the server shuts down. It cannot be
    /// undone: a later listen is acknowledged and closed at once.
    pub fn close_streams(&self) {
        self.live.closed.close();
    }
}

/// [`Server::tool_headers`]: the bindings of one revision's tools in one registry.
struct ToolHeadersNow {
    registry: Arc<Catalog>,
    adapter: Adapter,
}

impl mcp_adapters::ToolHeaders for ToolHeadersNow {
    fn header_bindings(&self, name: &str) -> Option<&[mcp_schema::HeaderBinding]> {
        mcp_adapters::ToolHeaders::header_bindings(self.registry.view(self.adapter), name)
    }
}

/// One request's view of a [`Server`]: the catalog as it was when the request came in (one
/// reference count; its settings come with it), and the server's shared part. Crate-private:
/// users hold a [`Server`].
#[derive(Clone)]
pub(crate) struct Served {
    /// The catalog this request is served from.
    pub(crate) registry: Arc<Catalog>,
    /// What every clone of the server shares.
    pub(crate) live: Arc<Live>,
}

impl Served {
    /// The server's settings (the same for every catalog).
    pub(crate) fn settings(&self) -> &Settings {
        &self.registry.settings
    }
}

/// What every clone of a [`Server`] shares: the settings, the current catalog, the shutdown
/// signal.
pub(crate) struct Live {
    /// Read without a lock: no runtime change touches them.
    settings: Arc<Settings>,
    /// The catalog now: a runtime change swaps this one `Arc` (readers never wait for a
    /// writer, and a request holds the catalog it started with).
    current: ArcSwap<Catalog>,
    /// Serialises runtime changes (read, rebuild, swap).
    pub(crate) edit: std::sync::Mutex<()>,
    pub(crate) closed: crate::notifier::Closer,
}

impl Live {
    pub(crate) fn new(settings: Arc<Settings>, catalog: Arc<Catalog>) -> Self {
        Self {
            settings,
            current: ArcSwap::new(catalog),
            edit: std::sync::Mutex::new(()),
            closed: crate::notifier::Closer::default(),
        }
    }

    /// The catalog now.
    pub(crate) fn current(&self) -> Arc<Catalog> {
        self.current.load_full()
    }

    /// Swaps in `next` (the caller holds [`edit`](Self::edit)).
    pub(crate) fn replace(&self, next: Arc<Catalog>) {
        debug_assert!(
            Arc::ptr_eq(&next.settings, &self.settings),
            "a catalog change keeps the settings"
        );
        self.current.store(next);
    }

    /// The settings no catalog change touches: identity, revisions, stores, limits,
    /// extensions, metrics.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A runtime change swaps the catalog (one `Arc`) and copies no setting: the next catalog
    /// holds the very same settings, a request that took the catalog before the change keeps
    /// it, and the change is announced as before (`notifications/tools/list_changed`).
    #[tokio::test]
    async fn a_catalog_change_swaps_the_catalog_and_shares_the_settings() {
        use futures::StreamExt as _;
        async fn hello() -> String {
            "hello".into()
        }
        let server = Server::builder("swap", "1").build().unwrap();
        let adapter = server.revisions().newest();
        let mut changes = server
            .notifications(
                &mcp_hub::Namespace::root(),
                adapter,
                crate::NotificationFilter::all_list_changes(),
                None,
            )
            .await
            .unwrap();
        let settings: *const Settings = server.settings();
        let before = server.served();
        assert!(before.registry.view(adapter).tools.is_empty());

        server.add_tool(Tool::new("added", hello)).await.unwrap();
        let after = server.served();
        assert!(!Arc::ptr_eq(&before.registry, &after.registry), "swapped");
        assert!(
            Arc::ptr_eq(&before.registry.settings, &after.registry.settings),
            "the next catalog shares the settings"
        );
        assert!(std::ptr::eq(settings, server.settings()));
        assert!(std::ptr::eq(after.settings(), server.settings()));
        // The request served from the earlier catalog still sees it; a new one sees the tool.
        assert!(before.registry.tool("added").is_none());
        assert!(before.registry.view(adapter).tools.is_empty());
        assert!(after.registry.tool("added").is_some());
        assert_eq!(after.registry.view(adapter).tools[0].0, "added");

        let (_, changed) = tokio::time::timeout(Duration::from_secs(10), changes.next())
            .await
            .expect("a notification in time")
            .expect("the stream goes on")
            .expect("no error");
        assert_eq!(changed["method"], "notifications/tools/list_changed");

        // Removing it swaps again, with the same settings.
        server.remove_tool("added").await.unwrap();
        let last = server.served();
        assert!(last.registry.tool("added").is_none());
        assert!(Arc::ptr_eq(
            &last.registry.settings,
            &before.registry.settings
        ));
    }

    #[test]
    fn tool_names_follow_the_guidance() {
        for good in ["a", "get_weather", "v1.search-all", &"x".repeat(128)] {
            assert!(check_tool_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "with space",
            "slash/no",
            "ünï",
            "colon:x",
            &"x".repeat(129),
        ] {
            assert!(
                matches!(
                    check_tool_name(bad),
                    Err(RegistrationError::InvalidToolName { .. })
                ),
                "{bad}"
            );
        }
    }
}
