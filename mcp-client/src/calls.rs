//! The typed calls: lists (a page, or a stream over every page), tools, resources, prompts,
//! completion, logging.

use std::borrow::Borrow;
use std::collections::{HashSet, VecDeque};

use futures::Stream;
use mcp_adapters::Operation;
use mcp_wire::names::method;
use serde_json::{Map, Value, json};

use crate::client::{CallOptions, Client, ListLimits, Params};
use crate::error::{Error, ErrorKind};

/// One page of a list.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page {
    /// The items of this page (tools, resources, templates or prompts), as the server sent them.
    pub items: Vec<Value>,
    /// The cursor of the next page, `None` on the last.
    pub next_cursor: Option<String>,
}

/// Which list a page belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    ResourceTemplates,
    /// `prompts/list`.
    Prompts,
}

impl ListKind {
    fn operation(self) -> Operation {
        match self {
            Self::Tools => Operation::ListTools,
            Self::Resources => Operation::ListResources,
            Self::ResourceTemplates => Operation::ListResourceTemplates,
            Self::Prompts => Operation::ListPrompts,
        }
    }

    fn field(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Resources => "resources",
            Self::ResourceTemplates => "resourceTemplates",
            Self::Prompts => "prompts",
        }
    }
}

/// What a listing has taken so far, checked against its [`ListLimits`] page by page.
#[derive(Debug, Default)]
struct Taken {
    pages: usize,
    items: usize,
    bytes: usize,
}

impl Taken {
    /// Counts `page` in, or says which limit it would cross (nothing is counted then).
    fn add(&mut self, page: &Page, limits: &ListLimits) -> Result<(), Error> {
        let items = self.items.saturating_add(page.items.len());
        if items > limits.items {
            return Err(limit(format!(
                "the listing has more than {} items (max_list_items)",
                limits.items
            )));
        }
        let page_bytes = page
            .items
            .iter()
            .map(json_len)
            .chain(page.next_cursor.as_ref().map(String::len))
            .fold(0usize, usize::saturating_add);
        let bytes = self.bytes.saturating_add(page_bytes);
        if bytes > limits.bytes {
            return Err(limit(format!(
                "the listing holds more than {} bytes (max_list_bytes)",
                limits.bytes
            )));
        }
        self.pages += 1;
        self.items = items;
        self.bytes = bytes;
        if page.next_cursor.is_some() && self.pages >= limits.pages {
            return Err(limit(format!(
                "the listing has more than {} pages (max_list_pages): the server keeps sending a \
                 nextCursor",
                limits.pages
            )));
        }
        Ok(())
    }
}

fn limit(detail: String) -> Error {
    Error::new(ErrorKind::LimitExceeded, detail)
}

/// The length of `value` as JSON text, counted without writing it anywhere.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Cannot fail: the writer never does, and a `Value` always serializes.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

impl Client {
    fn method_of(&self, operation: Operation) -> Result<&'static str, Error> {
        self.adapter().method(operation).ok_or_else(|| {
            Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{operation:?} does not exist on {}",
                    self.adapter().version()
                ),
            )
        })
    }

    /// One page of a list.
    pub async fn list_page(&self, kind: ListKind, cursor: Option<&str>) -> Result<Page, Error> {
        let name = self.method_of(kind.operation())?;
        let params = cursor.map(|c| json!({"cursor": c}));
        let result = self.request(name, params).await?;
        let Some(Value::Array(items)) = result.get(kind.field()) else {
            return Err(Error::protocol(format!(
                "{name} result has no {} array",
                kind.field()
            )));
        };
        let mut items = items.clone();
        if kind == ListKind::Tools {
            items = self.checked_tools(items);
            self.inner.remember_retry_safe(&items, cursor.is_none());
        }
        let next_cursor = match result.get("nextCursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c.clone()),
            Some(_) => return Err(Error::protocol("nextCursor is not a string")),
        };
        Ok(Page { items, next_cursor })
    }

    /// Keeps the header bindings of the tools, and drops (with a warning) tools whose
    /// `x-mcp-header` annotations are invalid, on revisions that mirror headers.
    fn checked_tools(&self, tools: Vec<Value>) -> Vec<Value> {
        let adapter = self.adapter();
        if !adapter.features().mirrors_headers {
            return tools;
        }
        let tools: Vec<Value> = tools
            .into_iter()
            .filter(|tool| {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
                match adapter.tool_header_bindings(tool) {
                    Ok(_) => true,
                    Err(reason) => {
                        tracing::warn!(tool = name, %reason, "tool excluded: invalid x-mcp-header annotation");
                        false
                    }
                }
            })
            .collect();
        self.inner.remember_tools(adapter, &tools);
        tools
    }

    /// Every item of a list, as a stream that fetches pages as it goes. Each page has the
    /// client's timeout; the listing as a whole stops with [`ErrorKind::LimitExceeded`] at the
    /// limits of [`crate::ClientBuilder::max_list_pages`], [`crate::ClientBuilder::max_list_items`]
    /// and [`crate::ClientBuilder::max_list_bytes`], and with [`ErrorKind::Protocol`] when the
    /// server repeats a cursor.
    pub fn list_stream(
        &self,
        kind: ListKind,
    ) -> impl Stream<Item = Result<Value, Error>> + Send + 'static {
        struct State {
            client: Client,
            kind: ListKind,
            buffer: VecDeque<Value>,
            cursor: Option<String>,
            seen: HashSet<String>,
            taken: Taken,
            started: bool,
            done: bool,
        }
        let state = State {
            client: self.clone(),
            kind,
            buffer: VecDeque::new(),
            cursor: None,
            seen: HashSet::new(),
            taken: Taken::default(),
            started: false,
            done: false,
        };
        futures::stream::unfold(state, |mut s| async move {
            loop {
                if let Some(item) = s.buffer.pop_front() {
                    return Some((Ok(item), s));
                }
                if s.done || (s.started && s.cursor.is_none()) {
                    return None;
                }
                s.started = true;
                match s.client.list_page(s.kind, s.cursor.as_deref()).await {
                    Ok(page) => {
                        let limits = s.client.inner.config.list_limits;
                        if let Err(e) = s.taken.add(&page, &limits) {
                            s.done = true;
                            return Some((Err(e), s));
                        }
                        if let Some(next) = &page.next_cursor
                            && !s.seen.insert(next.clone())
                        {
                            s.done = true;
                            return Some((Err(Error::protocol("the server repeats a cursor")), s));
                        }
                        s.cursor = page.next_cursor;
                        s.buffer.extend(page.items);
                    }
                    Err(e) => {
                        s.done = true;
                        return Some((Err(e), s));
                    }
                }
            }
        })
    }

    /// Every item of a list, all pages within one timeout (the client's): a server that answers
    /// each page just before the timeout cannot stretch the listing past it.
    async fn list_all(&self, kind: ListKind) -> Result<Vec<Value>, Error> {
        use futures::TryStreamExt;
        let timeout = self.inner.config.timeout;
        match tokio::time::timeout(timeout, self.list_stream(kind).try_collect()).await {
            Ok(listed) => listed,
            Err(_) => Err(Error::timeout(timeout)),
        }
    }

    /// Every tool, following all pages (within the client's timeout and the listing limits of
    /// [`crate::ClientBuilder::max_list_pages`] and its siblings). On 2026-07-28 a tool with an invalid `x-mcp-header`
    /// annotation is left out with a warning, and the others' bindings are kept for mirroring.
    pub async fn list_tools(&self) -> Result<Vec<Value>, Error> {
        self.list_all(ListKind::Tools).await
    }

    /// Every resource, following all pages (bounded as [`Client::list_tools`]).
    pub async fn list_resources(&self) -> Result<Vec<Value>, Error> {
        self.list_all(ListKind::Resources).await
    }

    /// Every resource template, following all pages (bounded as [`Client::list_tools`]).
    pub async fn list_resource_templates(&self) -> Result<Vec<Value>, Error> {
        self.list_all(ListKind::ResourceTemplates).await
    }

    /// Every prompt, following all pages (bounded as [`Client::list_tools`]).
    pub async fn list_prompts(&self) -> Result<Vec<Value>, Error> {
        self.list_all(ListKind::Prompts).await
    }

    /// Calls a tool. Questions the tool asks are answered through `on_ask`, whatever mechanism
    /// the revision uses. A tool failure is a result with `isError: true`, not an `Err`.
    ///
    /// `arguments` is a [`Value`] (an object, or `null` for none) or a reference to one: the
    /// request is written straight from it, so a caller that calls with the same arguments again
    /// can lend them rather than clone them.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // A server to talk to: one tool, one resource, one prompt, on 127.0.0.1.
    /// # use mcp_server::{Prompt, Resource, ResourceRequest, Server, Tool};
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct AddArgs { a: i64, b: i64 }
    /// # async fn add(x: AddArgs) -> String { (x.a + x.b).to_string() }
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct GreetArgs { name: String }
    /// # async fn greet(x: GreetArgs) -> String { format!("Please greet {}.", x.name) }
    /// # async fn config(_: ResourceRequest) -> String { "mode = production".into() }
    /// # let server = Server::builder("calc", "1.0").tool(Tool::new("add", add))
    /// #     .resource(Resource::new("config://app", "config", config)).prompt(Prompt::new("greet", greet)).build()?;
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("http://{}/mcp", listener.local_addr()?);
    /// # let endpoint = mcp_server::http::HttpEndpoint::new(server, mcp_server::http::HttpConfig::new());
    /// # tokio::spawn(mcp_server::http::serve_with_shutdown(listener, endpoint, std::future::pending::<()>()));
    /// use serde_json::json;
    ///
    /// let client = mcp_client::Client::builder().connect_http(&url).await?;
    /// let result = client.call_tool("add", json!({"a": 20, "b": 22})).await?;
    /// if result["isError"] == true {
    ///     eprintln!("the tool failed: {}", result["content"][0]["text"]);
    /// } else {
    ///     assert_eq!(result["content"][0]["text"], "42");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Borrow<Value> + Send,
    ) -> Result<Value, Error> {
        self.call_tool_with(name, arguments, CallOptions::new())
            .await
    }

    /// [`Client::call_tool`] with per-call options (timeout, progress).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // A server to talk to: one tool, one resource, one prompt, on 127.0.0.1.
    /// # use mcp_server::{Prompt, Resource, ResourceRequest, Server, Tool};
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct AddArgs { a: i64, b: i64 }
    /// # async fn add(x: AddArgs) -> String { (x.a + x.b).to_string() }
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct GreetArgs { name: String }
    /// # async fn greet(x: GreetArgs) -> String { format!("Please greet {}.", x.name) }
    /// # async fn config(_: ResourceRequest) -> String { "mode = production".into() }
    /// # let server = Server::builder("calc", "1.0").tool(Tool::new("add", add))
    /// #     .resource(Resource::new("config://app", "config", config)).prompt(Prompt::new("greet", greet)).build()?;
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("http://{}/mcp", listener.local_addr()?);
    /// # let endpoint = mcp_server::http::HttpEndpoint::new(server, mcp_server::http::HttpConfig::new());
    /// # tokio::spawn(mcp_server::http::serve_with_shutdown(listener, endpoint, std::future::pending::<()>()));
    /// use mcp_client::CallOptions;
    /// use serde_json::json;
    ///
    /// let client = mcp_client::Client::builder().connect_http(&url).await?;
    /// let options = CallOptions::new()
    ///     .timeout(std::time::Duration::from_secs(5))
    ///     .on_progress(|p| eprintln!("progress {}/{:?}", p.progress, p.total));
    /// let result = client.call_tool_with("add", json!({"a": 1, "b": 2}), options).await?;
    /// assert_eq!(result["content"][0]["text"], "3");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: impl Borrow<Value> + Send,
        options: CallOptions,
    ) -> Result<Value, Error> {
        let result = self
            .call_tool_raw(name, arguments.borrow(), options)
            .await?;
        if self.task_polling().is_none() {
            return Ok(result);
        }
        self.finish_tool_call(result).await
    }

    /// A tool call's result as the server sent it (a `CreateTaskResult` when it runs a task).
    pub(crate) async fn call_tool_raw(
        &self,
        name: &str,
        arguments: &Value,
        options: CallOptions,
    ) -> Result<Value, Error> {
        let call = self.method_of(Operation::CallTool)?;
        // Encoded straight from the name and arguments: the `{name, arguments}` map is built
        // only on the paths that add to it.
        self.request_params_with(call, Params::tool(name, arguments), options)
            .await
    }

    /// [`Client::call_tool`], with the result read straight into `T` (any
    /// [`serde::Deserialize`] type: a struct with the fields the caller needs, or
    /// [`mcp_wire::model::CallToolResult`]). Over Streamable HTTP a complete result in a JSON
    /// body is deserialized from the bytes, without building a [`Value`] first; questions are
    /// answered as in [`Client::call_tool`]. A result that does not fit `T` is a
    /// [`ErrorKind::Protocol`] error.
    pub async fn call_tool_as<T: serde::de::DeserializeOwned + Send>(
        &self,
        name: &str,
        arguments: impl Borrow<Value> + Send,
    ) -> Result<T, Error> {
        let value = match self
            .call_tool_read::<T>(name, arguments.borrow(), CallOptions::new())
            .await?
        {
            Ok(result) => return Ok(result),
            // A task's (followed first), or a result read as a `Value` first.
            Err(value) if self.task_polling().is_some() => self.finish_tool_call(value).await?,
            Err(value) => value,
        };
        serde_json::from_value(value)
            .map_err(|e| Error::protocol(format!("tools/call result: {e}")))
    }

    /// A tool call's result read into `T` when it came as a complete result in a JSON body
    /// (see [`Client::call_tool_as`]), else as the server sent it (a task's included).
    pub(crate) async fn call_tool_read<T: serde::de::DeserializeOwned + Send>(
        &self,
        name: &str,
        arguments: &Value,
        options: CallOptions,
    ) -> Result<Result<T, Value>, Error> {
        let call = self.method_of(Operation::CallTool)?;
        self.request_params_read(call, Params::tool(name, arguments), options)
            .await
    }

    /// Reads a resource.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // A server to talk to: one tool, one resource, one prompt, on 127.0.0.1.
    /// # use mcp_server::{Prompt, Resource, ResourceRequest, Server, Tool};
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct AddArgs { a: i64, b: i64 }
    /// # async fn add(x: AddArgs) -> String { (x.a + x.b).to_string() }
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct GreetArgs { name: String }
    /// # async fn greet(x: GreetArgs) -> String { format!("Please greet {}.", x.name) }
    /// # async fn config(_: ResourceRequest) -> String { "mode = production".into() }
    /// # let server = Server::builder("calc", "1.0").tool(Tool::new("add", add))
    /// #     .resource(Resource::new("config://app", "config", config)).prompt(Prompt::new("greet", greet)).build()?;
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("http://{}/mcp", listener.local_addr()?);
    /// # let endpoint = mcp_server::http::HttpEndpoint::new(server, mcp_server::http::HttpConfig::new());
    /// # tokio::spawn(mcp_server::http::serve_with_shutdown(listener, endpoint, std::future::pending::<()>()));
    /// let client = mcp_client::Client::builder().connect_http(&url).await?;
    /// let read = client.read_resource("config://app").await?;
    /// assert_eq!(read["contents"][0]["text"], "mode = production");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn read_resource(&self, uri: &str) -> Result<Value, Error> {
        let read = self.method_of(Operation::ReadResource)?;
        self.request(read, Some(json!({"uri": uri}))).await
    }

    /// Gets a prompt with its arguments (an object of strings, or `null`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # // A server to talk to: one tool, one resource, one prompt, on 127.0.0.1.
    /// # use mcp_server::{Prompt, Resource, ResourceRequest, Server, Tool};
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct AddArgs { a: i64, b: i64 }
    /// # async fn add(x: AddArgs) -> String { (x.a + x.b).to_string() }
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct GreetArgs { name: String }
    /// # async fn greet(x: GreetArgs) -> String { format!("Please greet {}.", x.name) }
    /// # async fn config(_: ResourceRequest) -> String { "mode = production".into() }
    /// # let server = Server::builder("calc", "1.0").tool(Tool::new("add", add))
    /// #     .resource(Resource::new("config://app", "config", config)).prompt(Prompt::new("greet", greet)).build()?;
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("http://{}/mcp", listener.local_addr()?);
    /// # let endpoint = mcp_server::http::HttpEndpoint::new(server, mcp_server::http::HttpConfig::new());
    /// # tokio::spawn(mcp_server::http::serve_with_shutdown(listener, endpoint, std::future::pending::<()>()));
    /// use serde_json::json;
    ///
    /// let client = mcp_client::Client::builder().connect_http(&url).await?;
    /// let prompt = client.get_prompt("greet", json!({"name": "Ada"})).await?;
    /// assert_eq!(prompt["messages"][0]["content"]["text"], "Please greet Ada.");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<Value, Error> {
        let get = self.method_of(Operation::GetPrompt)?;
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        if !arguments.is_null() {
            params.insert("arguments".into(), arguments);
        }
        self.request(get, Some(Value::Object(params))).await
    }

    /// Asks for completions of one argument. `reference` is `{"type": "ref/prompt", "name"}` or
    /// `{"type": "ref/resource", "uri"}`; `context` is `{"arguments": {...}}` where supported.
    pub async fn complete(
        &self,
        reference: Value,
        argument: &str,
        value: &str,
        context: Option<Value>,
    ) -> Result<Value, Error> {
        let complete = self.method_of(Operation::Complete)?;
        let mut params = json!({"ref": reference, "argument": {"name": argument, "value": value}});
        if let Some(context) = context {
            params["context"] = context;
        }
        self.request(complete, Some(params)).await
    }

    /// Sets the session's log level (`logging/setLevel`), on revisions that have it. On
    /// 2026-07-28 the level travels with each request instead: see
    /// [`crate::ClientBuilder::log_level`].
    pub async fn set_log_level(&self, level: &str) -> Result<(), Error> {
        let set = self.method_of(Operation::SetLogLevel)?;
        self.request(set, Some(json!({"level": level})))
            .await
            .map(|_| ())
    }

    /// `ping`, on revisions that have it.
    pub async fn ping(&self) -> Result<(), Error> {
        let ping = self.method_of(Operation::Ping)?;
        let _ = method::PING;
        self.request(ping, None).await.map(|_| ())
    }
}
