//! Tools: typed async handlers, their metadata, and what they may return.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use mcp_adapters::Revision;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize as _, Serialize};
use serde_json::{Map, Value};

use crate::error::{Interrupt, ToolError};
use crate::exchange::Exchange;
use crate::handler::{Handler, Token};
use crate::icon::Icon;
use crate::schema;
use mcp_wire::model::{CallToolResult, ContentBlock};

/// A tool's behaviour hints (`annotations`). Every hint is optional; `None` is not sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A display title (older clients read this one; newer ones prefer the tool's `title`).
    pub title: Option<String>,
    /// The tool does not modify its environment.
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    pub(crate) fn to_value(&self) -> Option<Value> {
        let mut out = Map::new();
        if let Some(title) = &self.title {
            out.insert("title".into(), Value::String(title.clone()));
        }
        for (key, hint) in [
            ("readOnlyHint", self.read_only_hint),
            ("destructiveHint", self.destructive_hint),
            ("idempotentHint", self.idempotent_hint),
            ("openWorldHint", self.open_world_hint),
        ] {
            if let Some(hint) = hint {
                out.insert(key.into(), Value::Bool(hint));
            }
        }
        (!out.is_empty()).then_some(Value::Object(out))
    }
}

/// Structured tool output: the value becomes `structuredContent` (plus its JSON text), and
/// `T`'s JSON Schema becomes the tool's `outputSchema`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

/// What a tool handler may return.
///
/// Implemented for `String` and `&'static str` (one text block), [`ContentBlock`] and
/// `Vec<ContentBlock>`, a full [`CallToolResult`], [`Json<T>`] (structured output), `()` (no
/// content), and `Result<T, E>` for any of these with an error that displays (an `Err`
/// becomes a result with `isError: true` and the error's text).
pub trait IntoToolResult: Send + 'static {
    /// The result.
    fn into_tool_result(self) -> CallToolResult;

    /// The `outputSchema` this return type implies, if any. Default is `None`.
    fn output_schema() -> Option<Result<Value, String>> {
        None
    }

    /// The result as the server takes it: the result of
    /// [`into_tool_result`](Self::into_tool_result), except that [`Json`] hands over its
    /// output as JSON text, which the server writes without building a tree. Sealed: only
    /// this crate calls or overrides it.
    #[doc(hidden)]
    fn into_tool_output(self, _: Token) -> ToolOutput
    where
        Self: Sized,
    {
        ToolOutput(crate::content::tool_result(self.into_tool_result()))
    }
}

/// What a tool's handler gives the server: the typed result the adapter writes. Not
/// exported.
#[derive(Debug)]
pub struct ToolOutput(pub(crate) mcp_adapters::ToolResult);

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(self)])
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(self)])
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(Vec::new())
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![self])
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(self)
    }
}

impl<T: Serialize + JsonSchema + Send + 'static> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => CallToolResult::structured(value),
            Err(err) => output_not_encoded(&err),
        }
    }

    fn into_tool_output(self, _: Token) -> ToolOutput {
        // Serialized once, to text; no `Value` tree is built.
        ToolOutput(
            mcp_adapters::ToolResult::output(&self.0)
                .unwrap_or_else(|err| crate::content::tool_result(output_not_encoded(&err))),
        )
    }

    fn output_schema() -> Option<Result<Value, String>> {
        Some(Ok(schema::derive::<T>(schema::Purpose::Output)))
    }
}

fn output_not_encoded(err: &serde_json::Error) -> CallToolResult {
    CallToolResult::error(format!("the tool's output cannot be encoded: {err}"))
}

impl<T: IntoToolResult, E: fmt::Display + Send + 'static> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> CallToolResult {
        match self {
            Ok(value) => value.into_tool_result(),
            Err(err) => CallToolResult::error(err.to_string()),
        }
    }

    fn into_tool_output(self, token: Token) -> ToolOutput {
        match self {
            Ok(value) => value.into_tool_output(token),
            Err(err) => ToolOutput(crate::content::tool_result(CallToolResult::error(
                err.to_string(),
            ))),
        }
    }

    fn output_schema() -> Option<Result<Value, String>> {
        T::output_schema()
    }
}

/// A handler's output as the server takes it (the function the handler's future ends with).
fn output_of<R: IntoToolResult>(output: R) -> ToolOutput {
    output.into_tool_output(Token(()))
}

/// What the type-erased tool function gives back: a result, or arguments that did not
/// deserialize (reported as an `isError` result by the dispatcher). It calls its second
/// argument for the call's [`Exchange`] only when the handler takes one.
pub(crate) type ErasedTool = Arc<
    dyn Fn(Value, &mut dyn FnMut() -> Exchange) -> Result<BoxFuture<'static, ToolOutput>, String>
        + Send
        + Sync,
>;

/// A tool declaration: a name, a typed handler and metadata.
///
/// ```
/// use mcp_server::{Json, Tool};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs { a: i64, b: i64 }
///
/// #[derive(Serialize, JsonSchema)]
/// struct Sum { sum: i64 }
///
/// async fn add(args: AddArgs) -> Json<Sum> {
///     Json(Sum { sum: args.a + args.b })
/// }
///
/// let tool = Tool::new("add", add).title("Add").read_only();
/// assert_eq!(tool.name(), "add");
/// ```
#[derive(Clone)]
pub struct Tool {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) annotations: ToolAnnotations,
    pub(crate) icons: Vec<Icon>,
    pub(crate) min_revision: Option<Revision>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Result<Value, String>>,
    pub(crate) takes_exchange: bool,
    /// The types of the shared state the handler's parts take (none, one, or a conflict the
    /// build reports).
    pub(crate) state_types: Vec<(std::any::TypeId, &'static str)>,
    pub(crate) meta: Option<Map<String, Value>>,
    /// Scopes an access token needs to call the tool (when the endpoint has a resource server).
    pub(crate) scopes: mcp_auth::ScopeSet,
    /// Whether the tool runs as a task when the client supports tasks.
    pub(crate) task_support: crate::TaskSupport,
    /// The task starts when the handler calls [`Exchange::start_task`], not before it runs.
    pub(crate) deferred_task: bool,
    pub(crate) call: ErasedTool,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("title", &self.title)
            .field("takes_exchange", &self.takes_exchange)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool named `name` served by `handler`.
    ///
    /// The input schema is derived here, once, from the handler's argument type (JSON Schema
    /// 2020-12); the output schema likewise when the handler returns [`Json<T>`]. Whether they
    /// are acceptable is checked by [`ServerBuilder::build`](crate::ServerBuilder::build).
    ///
    /// The argument type's doc comment becomes the tool's description (the fields' doc
    /// comments describe the properties); [`Tool::description`] replaces it:
    ///
    /// ```
    /// use mcp_server::Tool;
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// /// Greets someone by name.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Greet {
    ///     /// Who to greet.
    ///     name: String,
    /// }
    ///
    /// async fn greet(args: Greet) -> String {
    ///     format!("Hello, {}!", args.name)
    /// }
    ///
    /// let tool = Tool::new("greet", greet);
    /// assert_eq!(tool.description_text(), Some("Greets someone by name."));
    /// assert_eq!(tool.input_schema()["properties"]["name"]["description"], "Who to greet.");
    /// // The description is the tool's, not repeated at the root of its input schema.
    /// assert!(tool.input_schema().get("description").is_none());
    /// ```
    pub fn new<H, M>(name: impl Into<String>, handler: H) -> Self
    where
        H: Handler<M>,
        H::Input: DeserializeOwned + JsonSchema,
        H::Output: IntoToolResult,
    {
        let handler = Arc::new(handler);
        let call: ErasedTool = Arc::new(
            move |arguments: Value, exchange: &mut dyn FnMut() -> Exchange| {
                // Read from the tree in place (its strings are borrowed, not moved out one by one).
                let args = H::Input::deserialize(&arguments).map_err(|e| e.to_string())?;
                drop(arguments);
                Ok(handler.start(args, exchange, output_of::<H::Output>, Token(())))
            },
        );
        let mut input_schema = schema::derive::<H::Input>(schema::Purpose::Input);
        let description = schema::take_doc(&mut input_schema);
        Self {
            name: name.into(),
            title: None,
            description,
            annotations: ToolAnnotations::default(),
            icons: Vec::new(),
            min_revision: None,
            headers: Vec::new(),
            input_schema,
            output_schema: <H::Output as IntoToolResult>::output_schema(),
            takes_exchange: H::TAKES_EXCHANGE,
            state_types: H::state_types(),
            meta: None,
            scopes: mcp_auth::ScopeSet::new(),
            task_support: crate::TaskSupport::Forbidden,
            deferred_task: false,
            call,
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The handler takes an [`Exchange`], so it may ask; on revisions where questions ride
    /// in the arguments the tool gains the `mcpAnswers` / `mcpState` properties.
    pub fn can_ask(&self) -> bool {
        self.takes_exchange
    }

    /// The input schema as derived (before any revision's projection).
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// Sets the display title (not shown before 2025-06-18). Default is none.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description. Default: the doc comment of the handler's argument type, if it
    /// has one (see [`Tool::new`]).
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The description the tool is listed with, if any.
    pub fn description_text(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Replaces all annotations. Default is none.
    #[must_use]
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Hints that the tool does not modify its environment (`readOnlyHint: true`).
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.annotations.read_only_hint = Some(true);
        self
    }

    /// Hints that the tool may destroy data (`destructiveHint: true`).
    #[must_use]
    pub fn destructive(mut self) -> Self {
        self.annotations.destructive_hint = Some(true);
        self
    }

    /// Hints that repeating a call has no further effect (`idempotentHint: true`).
    #[must_use]
    pub fn idempotent(mut self) -> Self {
        self.annotations.idempotent_hint = Some(true);
        self
    }

    /// Hints whether the tool talks to an open world of external entities (`openWorldHint`).
    #[must_use]
    pub fn open_world(mut self, open: bool) -> Self {
        self.annotations.open_world_hint = Some(open);
        self
    }

    /// Adds an icon (shown from 2025-11-25). Default is none.
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Offers the tool only on `revision` and newer. Default is every revision.
    #[must_use]
    pub fn min_revision(mut self, revision: Revision) -> Self {
        self.min_revision = Some(revision);
        self
    }

    /// Annotates the argument at `path` (property names joined by `.`) with
    /// `x-mcp-header: header`, so 2026-07-28 clients mirror it in `Mcp-Param-<header>`.
    ///
    /// The same annotation may be written on the field itself with
    /// `#[schemars(extend("x-mcp-header" = "Region"))]`. Both are checked when the server is
    /// built.
    #[must_use]
    pub fn header(mut self, path: impl Into<String>, header: impl Into<String>) -> Self {
        self.headers.push((path.into(), header.into()));
        self
    }

    /// Scopes an access token needs to call the tool, on top of what the endpoint's
    /// [`ResourceServer`](crate::auth::ResourceServer) requires of every request. A call
    /// without them gets 403 `insufficient_scope` naming them, so a client can step up.
    /// Without a resource server, scopes are not checked. Default is none.
    ///
    /// ```
    /// use mcp_server::{NoArgs, Tool};
    ///
    /// async fn deploy(_: NoArgs) -> String { "deployed".into() }
    /// let tool = Tool::new("deploy", deploy).scopes(["mcp:deploy"]);
    /// # let _ = tool;
    /// ```
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        self.scopes = scopes.into_iter().collect();
        self
    }

    /// Whether the tool runs as a task (the Tasks extension, `io.modelcontextprotocol/tasks`)
    /// when the request declares the extension. Default [`TaskSupport::Forbidden`](crate::TaskSupport::Forbidden).
    ///
    /// A task's handler is the same as a synchronous one: it runs on the worker that received
    /// the call, its result (a tool error included) becomes the task's `result`, a protocol
    /// error its `error`, and [`Exchange::ask`] puts the question in the task's
    /// `inputRequests` and waits for `tasks/update`. Declaring support on any tool turns the
    /// extension on (with [`Tasks`](crate::Tasks)' defaults unless
    /// [`ServerBuilder::tasks`](crate::ServerBuilder::tasks) set others).
    ///
    /// ```
    /// use mcp_server::{NoArgs, TaskSupport, Tool};
    ///
    /// async fn report(_: NoArgs) -> String { "the report".into() }
    /// let tool = Tool::new("report", report).task_support(TaskSupport::Optional);
    /// assert_eq!(tool.task_support_level(), TaskSupport::Optional);
    /// ```
    #[must_use]
    pub fn task_support(mut self, support: crate::TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    /// The tool's [`TaskSupport`](crate::TaskSupport).
    pub fn task_support_level(&self) -> crate::TaskSupport {
        self.task_support
    }

    /// The task starts only when the handler calls [`Exchange::start_task`]: questions asked
    /// before that go back on the call itself (2026-07-28: an `InputRequiredResult`, the
    /// client calls again with the answers), and the `CreateTaskResult` answers the attempt on
    /// which the handler calls `start_task`. A call that never reaches it completes
    /// synchronously. For tools that gather input first and then work for long.
    #[must_use]
    pub fn deferred_task(mut self) -> Self {
        self.deferred_task = true;
        self
    }

    /// Sets `_meta` on the tool definition. Default is none.
    #[must_use]
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The definition in the newest revision's shape, before projection.
    pub(crate) fn definition(&self, input_schema: &Value, output_schema: Option<&Value>) -> Value {
        let mut out = Map::new();
        out.insert("name".into(), Value::String(self.name.clone()));
        if let Some(title) = &self.title {
            out.insert("title".into(), Value::String(title.clone()));
        }
        if let Some(description) = &self.description {
            out.insert("description".into(), Value::String(description.clone()));
        }
        out.insert("inputSchema".into(), input_schema.clone());
        if let Some(output) = output_schema {
            out.insert("outputSchema".into(), output.clone());
        }
        if let Some(annotations) = self.annotations.to_value() {
            out.insert("annotations".into(), annotations);
        }
        if !self.icons.is_empty() {
            out.insert(
                "icons".into(),
                Value::Array(self.icons.iter().map(Icon::to_value).collect()),
            );
        }
        if let Some(meta) = &self.meta {
            out.insert("_meta".into(), Value::Object(meta.clone()));
        }
        Value::Object(out)
    }
}

/// The text of a panic payload, when it has one.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "handler panicked".to_owned()
    }
}

impl From<Interrupt> for CallToolResult {
    fn from(interrupt: Interrupt) -> Self {
        Self::error(interrupt.to_string())
    }
}

impl From<ToolError> for CallToolResult {
    fn from(err: ToolError) -> Self {
        Self::error(err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;
    use serde_json::json;

    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    struct Args {
        a: i64,
    }

    async fn alone(args: Args) -> String {
        args.a.to_string()
    }

    async fn with_exchange(args: Args, _ex: Exchange) -> String {
        args.a.to_string()
    }

    #[test]
    fn a_handler_without_an_exchange_is_started_without_one() {
        let tool = Tool::new("alone", alone);
        let mut no_exchange = || -> Exchange { panic!("an args-only tool asked for an exchange") };
        let started = (tool.call)(json!({"a": 7}), &mut no_exchange);
        let output = started.expect("arguments deserialize").now_or_never();
        assert!(output.is_some(), "the handler ran to its end");
        // Arguments that do not deserialize are reported before any exchange is asked for.
        let bad = Tool::new("with", with_exchange);
        let refused = (bad.call)(json!({"a": "x"}), &mut no_exchange);
        assert!(refused.is_err());
    }
}
