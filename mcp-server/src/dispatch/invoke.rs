//! The one path of a handler call: tools, resources and prompts alike.
//!
//! Each kind finds its handler (the tool, the resource or template a URI matches, the prompt)
//! and checks its arguments; then every kind takes the same steps, written once here:
//!
//! 1. [`resume`](Served::resume): a retry's request state is redeemed, and the answers it
//!    carries go to the questions it lists;
//! 2. [`start`](Served::start): the handler is started with the call's
//!    [`Exchange`](crate::Exchange), built here and nowhere else, and only when the handler
//!    asks for it;
//! 3. [`run_handler`](Served::run_handler): under the call's cancellation, with a panic caught (for a tool, the
//!    Tasks layer decides where it runs: see `tasks`);
//! 4. [`settle`](Served::settle): an interrupted handler (a question to ask, a failure, a
//!    cancellation) answers with that; otherwise the kind turns what the handler returned
//!    into the call's outcome.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::FutureExt as _;
use mcp_adapters::{Adapter, CacheHint, Call, Failure, InputRequests, Outcome};
use mcp_wire::model::CallToolResult;
use serde_json::Value;

use super::session::stated_nothing;
use super::tasks::{TaskLayer, TaskTool, Where};
use super::{Context, Done, as_declared, panicked, with_cancel};
use crate::ask::Answer;
use crate::error::{PromptError, ResourceError};
use crate::exchange::{
    AskState, CallClient, CancelHandle, Exchange, ExchangeInner, Interrupted, Pusher,
};
use crate::resource::ResourceRequest;
use crate::server::Served;
use crate::server::project::RevisionView;
use crate::sink::Sink;
use crate::state::{Redeemed, StateError, binding};
use crate::tool::{ToolOutput, panic_message};

/// One handler call on its way through the steps: the call and what it came with.
pub(super) struct Invocation<'a> {
    pub(super) adapter: Adapter,
    pub(super) call: &'a mut Call,
    pub(super) ctx: &'a Context,
    pub(super) sink: &'a Sink,
    pub(super) cancel: &'a CancelHandle,
}

/// How a started handler went.
pub(crate) enum Ran<T> {
    /// The handler finished (for a tool, successfully or with `isError`).
    Done(T),
    /// The arguments passed the schema but did not deserialize into the handler's type.
    BadArguments(String),
    /// The handler panicked.
    Panicked(String),
}

/// Awaits what a handler's erased function started (or reports why it did not start), with a
/// panic caught.
pub(crate) async fn run_caught<F: Future>(started: Result<F, String>) -> Ran<F::Output> {
    let fut = match started {
        Ok(fut) => fut,
        Err(message) => return Ran::BadArguments(message),
    };
    match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
        Ok(output) => Ran::Done(output),
        Err(panic) => Ran::Panicked(panic_message(&*panic)),
    }
}

/// What the Tasks layer puts on a call's exchange: the task the handler runs as, and whether
/// the handler may still start one ([`Exchange::start_task`]).
#[derive(Default)]
pub(super) struct TaskBinding {
    pub(super) run: Option<Arc<crate::task::TaskRun>>,
    pub(super) offered: bool,
}

/// What a retry brings back.
#[derive(Default)]
pub(super) struct Resumed {
    asked: BTreeMap<String, String>,
    answers: BTreeMap<String, Answer>,
    offered: serde_json::Map<String, Value>,
    state: Option<Value>,
}

impl Resumed {
    /// A first attempt (no request state): the answers it carries are only offered.
    fn fresh(call: &Call) -> Self {
        Self {
            offered: call
                .answers
                .as_ref()
                .map(|given| given.as_map().clone())
                .unwrap_or_default(),
            ..Self::default()
        }
    }
}

impl Served {
    /// `tools/call`.
    pub(super) async fn call_tool(&self, mut inv: Invocation<'_>, view: &RevisionView) -> Done {
        // Nothing reads the target from the call after this.
        let name = inv.call.target.take().unwrap_or_default();
        let (Some(entry), Some(tool_view)) =
            (self.registry.tool(&name), view.tool_views.get(&name))
        else {
            return Done::failure(Failure::unknown_tool(&name));
        };
        let structured = tool_view.structured_content;
        let finish = |result: mcp_adapters::ToolResult| {
            Done::Send(
                Outcome::Tool(as_declared(result, structured)),
                CacheHint::NONE,
            )
        };
        let resumed = match self.resume(&inv, &name).await {
            Ok(resumed) => resumed,
            Err(done) => return done,
        };
        // Only a handler that can ask needs the arguments again (to bind new request state).
        let arguments = Value::Object(if entry.tool.takes_exchange {
            inv.call.arguments.clone()
        } else {
            std::mem::take(&mut inv.call.arguments)
        });
        if let Err(issues) = entry.validator.validate(&arguments) {
            let text: Vec<String> = issues.iter().map(ToString::to_string).collect();
            return finish(crate::content::tool_result(CallToolResult::error(format!(
                "invalid arguments:\n{}",
                text.join("\n")
            ))));
        }
        // Read before the exchange takes the call's client context.
        let layer = match TaskLayer::enter(self, &inv, &entry.tool).await {
            Ok(layer) => layer,
            Err(done) => return done,
        };
        let (started, built) = self.start(&mut inv, resumed, layer.binding(), |exchange| {
            (entry.tool.call)(arguments, exchange)
        });
        let run = match layer {
            TaskLayer::Off => self.run_handler(&inv, started).await,
            // Boxed: a rare path that would otherwise make every call's future larger.
            layer => {
                let tool = TaskTool {
                    adapter: inv.adapter,
                    structured,
                    name: &name,
                };
                let work = run_caught(started);
                match Box::pin(layer.run(self, &inv, tool, work, built.as_ref())).await {
                    Where::Here(run) => run,
                    Where::Task(done) => return done,
                }
            }
        };
        if let Some(done) = self.settle(inv.call, &name, built.as_ref()).await {
            return done;
        }
        match run {
            None => Done::Silent,
            Some(Ran::Done(ToolOutput(result))) => finish(result),
            Some(Ran::BadArguments(message)) => finish(crate::content::tool_result(
                CallToolResult::error(format!("invalid arguments:\n{message}")),
            )),
            Some(Ran::Panicked(message)) => {
                Done::failure(panicked(format_args!("tool {name:?}"), &message))
            }
        }
    }

    /// `resources/read`.
    pub(super) async fn read_resource(&self, mut inv: Invocation<'_>) -> Done {
        let registry = &*self.registry;
        // Nothing reads the target from the call after this.
        let uri = inv.call.target.take().unwrap_or_default();
        let found = registry
            .resource_index
            .get(&uri)
            .map(|&i| {
                let r = &registry.resources[i];
                (r.read.clone(), &r.meta, BTreeMap::new())
            })
            .or_else(|| {
                registry.template_order.iter().find_map(|&i| {
                    let t = &registry.templates[i];
                    t.parsed
                        .matches(&uri)
                        .map(|vars| (t.template.read.clone(), &t.template.meta, vars))
                })
            });
        let Some((read, meta, vars)) = found else {
            return Done::failure(Failure::resource_not_found(&uri));
        };
        let resumed = match self.resume(&inv, &uri).await {
            Ok(resumed) => resumed,
            Err(done) => return done,
        };
        let request = ResourceRequest {
            uri: uri.clone(),
            vars,
        };
        let (started, built) = self.start(&mut inv, resumed, TaskBinding::default(), |exchange| {
            Ok::<_, String>(read(request, exchange()))
        });
        let run = self.run_handler(&inv, started).await;
        if let Some(done) = self.settle(inv.call, &uri, built.as_ref()).await {
            return done;
        }
        match run {
            None => Done::Silent,
            Some(Ran::Panicked(message)) | Some(Ran::BadArguments(message)) => {
                Done::failure(panicked(format_args!("reading {uri}"), &message))
            }
            Some(Ran::Done(Err(ResourceError::NotFound(_)))) => {
                Done::failure(Failure::resource_not_found(&uri))
            }
            Some(Ran::Done(Err(err))) => Done::failure(Failure::internal(err.to_string())),
            Some(Ran::Done(Ok(contents))) => {
                let contents: Vec<Value> = contents
                    .into_iter()
                    .map(|mut c| {
                        crate::content::fill_mime_type(&mut c, meta.mime_type.as_deref());
                        serde_json::to_value(c).unwrap_or(Value::Null)
                    })
                    .collect();
                let mut result = serde_json::Map::new();
                result.insert("contents".into(), Value::Array(contents));
                Done::Send(Outcome::Value(Value::Object(result)), meta.cache)
            }
        }
    }

    /// `prompts/get`.
    pub(super) async fn get_prompt(&self, mut inv: Invocation<'_>) -> Done {
        // Nothing reads the target from the call after this.
        let name = inv.call.target.take().unwrap_or_default();
        let Some(entry) = self.registry.prompt(&name) else {
            return Done::failure(Failure::unknown_prompt(&name));
        };
        let arguments = Value::Object(inv.call.arguments.clone());
        if let Err(issues) = entry.validator.validate(&arguments) {
            let text: Vec<String> = issues.iter().map(ToString::to_string).collect();
            return Done::failure(Failure::invalid_params(format!(
                "invalid prompt arguments: {}",
                text.join("; ")
            )));
        }
        let resumed = match self.resume(&inv, &name).await {
            Ok(resumed) => resumed,
            Err(done) => return done,
        };
        let (started, built) = self.start(&mut inv, resumed, TaskBinding::default(), |exchange| {
            (entry.prompt.render)(arguments, exchange())
        });
        let run = self.run_handler(&inv, started).await;
        if let Some(done) = self.settle(inv.call, &name, built.as_ref()).await {
            return done;
        }
        match run {
            None => Done::Silent,
            Some(Ran::BadArguments(message))
            | Some(Ran::Done(Err(PromptError::InvalidArguments(message)))) => Done::failure(
                Failure::invalid_params(format!("invalid prompt arguments: {message}")),
            ),
            Some(Ran::Panicked(message)) => {
                Done::failure(panicked(format_args!("prompt {name:?}"), &message))
            }
            Some(Ran::Done(Err(err))) => Done::failure(Failure::internal(err.to_string())),
            Some(Ran::Done(Ok(result))) => {
                Done::value(serde_json::to_value(result).unwrap_or(Value::Null))
            }
        }
    }

    /// Step 1: redeems the request state of a retry (`None` for a first attempt). Answers
    /// count only for questions the state lists. Other answers (all of them, without state)
    /// are only offered to questions marked
    /// [`Question::answerable_up_front`](crate::Question::answerable_up_front).
    async fn resume(&self, inv: &Invocation<'_>, target: &str) -> Result<Option<Resumed>, Done> {
        if inv.call.request_state.is_none() {
            return Ok(None);
        }
        // Boxed: a rare path that would otherwise make every call's future larger.
        Box::pin(self.redeem(inv.call, inv.ctx, target))
            .await
            .map(Some)
    }

    async fn redeem(&self, call: &Call, ctx: &Context, target: &str) -> Result<Resumed, Done> {
        let Some(state_id) = &call.request_state else {
            return Ok(Resumed::fresh(call));
        };
        let bound = binding(
            &call.method,
            target,
            &call.arguments,
            ctx.principal().as_deref(),
        );
        let redeemed: Redeemed = match self
            .settings()
            .states
            .redeem(ctx.namespace(), state_id, &bound)
            .await
        {
            Ok(redeemed) => redeemed,
            Err(StateError::Invalid(why)) => {
                return Err(Done::failure(Failure::invalid_params(format!(
                    "invalid requestState: {why}"
                ))));
            }
            Err(err) => return Err(Done::failure(Failure::internal(err.to_string()))),
        };
        // The retry's span links to the span that asked, wherever that ran.
        crate::trace_link::link_current(redeemed.asked_in.as_deref());
        let mut answers = BTreeMap::new();
        let mut offered = serde_json::Map::new();
        if let Some(given) = &call.answers {
            for (key, raw) in given.as_map() {
                match redeemed
                    .asked
                    .get(key)
                    .and_then(|method| mcp_adapters::ClientRequestKind::from_method(method))
                {
                    Some(kind) => {
                        answers.insert(key.clone(), Answer::from_reply(kind, &Ok(raw.clone())));
                    }
                    None => {
                        offered.insert(key.clone(), raw.clone());
                    }
                }
            }
        }
        Ok(Resumed {
            asked: redeemed.asked,
            answers,
            offered,
            state: redeemed.payload,
        })
    }

    /// Step 2: starts the handler with `start`, which gets the maker of the call's exchange
    /// and calls it only if the handler takes one. Returns what `start` returned and the
    /// exchange, if it was built.
    fn start<R>(
        &self,
        inv: &mut Invocation<'_>,
        mut resumed: Option<Resumed>,
        task: TaskBinding,
        start: impl FnOnce(&mut dyn FnMut() -> Exchange) -> R,
    ) -> (R, Option<Exchange>) {
        let mut built = None;
        let mut task = Some(task);
        let started = start(&mut || {
            let resumed = resumed.take().unwrap_or_else(|| Resumed::fresh(inv.call));
            let ex = self.exchange(inv, resumed);
            if let Some(task) = task.take().filter(|t| t.run.is_some() || t.offered) {
                let mut state = ex.lock();
                state.task = task
                    .run
                    .map(|run| run as Arc<dyn crate::exchange::TaskLink>);
                state.task_offered = task.offered;
            }
            built = Some(ex.clone());
            ex
        });
        (started, built)
    }

    /// Step 3: runs a started handler under the call's cancellation (`None` when it was
    /// cancelled), with a panic caught.
    async fn run_handler<F: Future>(
        &self,
        inv: &Invocation<'_>,
        started: Result<F, String>,
    ) -> Option<Ran<F::Output>> {
        with_cancel(inv.cancel, run_caught(started)).await
    }

    /// Step 4: the outcome a handler's interruption calls for, if it was interrupted.
    async fn settle(&self, call: &Call, target: &str, ex: Option<&Exchange>) -> Option<Done> {
        let ex = ex?;
        // A handler that was not interrupted settles nothing.
        ex.lock().interrupt.as_ref()?;
        // Boxed: a rare path that would otherwise make every call's future larger.
        Box::pin(self.interrupted(call, target, ex)).await
    }

    /// The exchange of a call: the one place it is built. It takes the call's client context
    /// (nothing reads it from the call afterwards); on revisions with a handshake, a call that
    /// states nothing itself shares the connection's.
    fn exchange(&self, inv: &mut Invocation<'_>, resumed: Resumed) -> Exchange {
        let (adapter, call, ctx) = (inv.adapter, &mut *inv.call, inv.ctx);
        let settings = self.settings();
        let stated = std::mem::take(&mut call.client);
        let client = if adapter.features().per_request_meta {
            CallClient::Own(stated)
        } else {
            let connection = ctx.conn();
            match &connection.client {
                Some(shared) if stated_nothing(&stated) => CallClient::Shared(Arc::clone(shared)),
                _ => {
                    let mut filled = stated;
                    filled.fill_from(connection.client());
                    CallClient::Own(filled)
                }
            }
        };
        let owner = ctx.owner();
        let push = (ctx.inner.can_push && adapter.can_push_ask()).then(|| Pusher {
            log: settings.log.clone(),
            namespace: ctx.inner.namespace.clone(),
            timeout: settings.ask_timeout,
            #[cfg(feature = "metrics")]
            metrics: settings.metrics.clone(),
        });
        Exchange::new(ExchangeInner {
            adapter,
            operation: call.operation,
            request_id: call.id.clone(),
            client,
            progress_token: call.progress_token.clone(),
            log_level: call.log_level,
            sink: inv.sink.clone(),
            cancel: inv.cancel.clone(),
            ask: Mutex::new(AskState {
                answers: resumed.answers,
                asked: resumed.asked,
                offered: resumed.offered,
                ..AskState::default()
            }),
            previous_state: resumed.state,
            push,
            store: settings.states.store().clone(),
            namespace: ctx.inner.namespace.clone(),
            owner,
            shared: settings.shared.clone(),
            trace: mcp_wire::trace::TraceContext::from_params(&call.params).map(Box::new),
        })
    }

    /// The outcome a handler's interruption calls for, if it was interrupted.
    async fn interrupted(&self, call: &Call, target: &str, ex: &Exchange) -> Option<Done> {
        let (interrupt, pending, mut asked, saved) = {
            let mut state = ex.lock();
            let interrupt = state.interrupt.take()?;
            (
                interrupt,
                std::mem::take(&mut state.pending),
                std::mem::take(&mut state.asked),
                state.saved_state.take(),
            )
        };
        match interrupt {
            Interrupted::Cancelled => Some(Done::Silent),
            Interrupted::Failed(failure) => Some(Done::failure(failure)),
            Interrupted::NeedsInput if pending.is_empty() => Some(Done::failure(
                Failure::internal("the handler stopped for input but asked nothing"),
            )),
            Interrupted::NeedsInput => {
                let mut requests = InputRequests::new();
                for (key, question) in pending {
                    asked.insert(key.clone(), question.kind().method().to_owned());
                    requests.insert(key, question.request);
                }
                let payload = saved.or_else(|| ex.state().cloned());
                let bound = binding(&call.method, target, &call.arguments, ex.principal());
                match self
                    .settings()
                    .states
                    .issue(
                        &ex.inner.namespace,
                        bound,
                        asked,
                        payload,
                        crate::trace_link::current_traceparent(),
                    )
                    .await
                {
                    Ok(state) => Some(Done::Send(
                        Outcome::InputRequired {
                            requests,
                            state: Some(state),
                        },
                        CacheHint::NONE,
                    )),
                    Err(err) => Some(Done::failure(Failure::internal(err.to_string()))),
                }
            }
        }
    }
}
