//! Building and connecting a [`Client`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use http::{HeaderMap, HeaderName, HeaderValue, Uri};
use mcp_adapters::{Adapter, AdapterSet, LogLevel, Revision};
use mcp_wire::jsonrpc::Notification;
use serde_json::{Value, json};

use crate::ask::{Answer, Asks, OnAsk, Question, ask_fn};
use crate::client::ListLimits;
use crate::client::{Client, Config, Inner};
use crate::error::{Error, ErrorKind};
use crate::negotiate::{self, Choice, Negotiated, Remembered};
use crate::rate_limit::RateLimitRetry;
use crate::transport::{
    DEFAULT_MAX_MESSAGE_SIZE, DEFAULT_MAX_QUEUED, DEFAULT_MAX_QUEUED_BYTES, HttpSse, MessageFn,
    Observation, Observed, Stdio, StdioBuilder, StreamableHttp, Transport,
};

/// Configures a [`Client`] and connects it.
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
/// use mcp_client::{Answer, Asks, Client};
///
/// let client = Client::builder()
///     .client_info("my-app", "1.0.0")
///     .timeout(std::time::Duration::from_secs(30))
///     .on_ask(Asks::none().elicitation(), |question| async move {
///         println!("{}", question.message().unwrap_or_default());
///         Answer::accept(serde_json::json!({}))
///     })
///     .connect_http(&url)
///     .await?;
/// let server = client.server().and_then(|s| s.server_info);
/// println!("speaking {} with {server:?}", client.revision());
/// client.close().await?;
/// # Ok(())
/// # }
/// ```
pub struct ClientBuilder {
    client_info: Value,
    choice: Choice,
    timeout: Duration,
    on_ask: Option<OnAsk>,
    on_notification: Option<crate::client::NotifyFn>,
    extensions: serde_json::Map<String, Value>,
    tasks: Option<crate::task::TaskPolling>,
    max_rounds: usize,
    log_level: Option<LogLevel>,
    cache_entries: usize,
    probe_timeout: Duration,
    headers: HeaderMap,
    max_message_size: usize,
    remember_era: bool,
    list_limits: ListLimits,
    max_queued: usize,
    max_queued_bytes: usize,
    on_message: Option<MessageFn>,
    on_response: Option<crate::transport::observe::ResponseFn>,
    https: Option<crate::transport::Https>,
    revisions: AdapterSet,
    oauth: Option<crate::oauth::OAuthConfig>,
    rate_limit: RateLimitRetry,
    trace: crate::trace::TracePropagation,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("client_info", &self.client_info)
            .field("choice", &self.choice)
            .field("timeout", &self.timeout)
            .field("on_ask", &self.on_ask)
            .field("max_rounds", &self.max_rounds)
            .finish_non_exhaustive()
    }
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            client_info: json!({"name": "mcp-client", "version": env!("CARGO_PKG_VERSION")}),
            choice: Choice::Negotiate,
            timeout: Duration::from_secs(60),
            on_ask: None,
            on_notification: None,
            extensions: serde_json::Map::new(),
            tasks: None,
            max_rounds: 8,
            log_level: None,
            cache_entries: 256,
            probe_timeout: Duration::from_secs(5),
            headers: HeaderMap::new(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            remember_era: true,
            list_limits: ListLimits::default(),
            max_queued: DEFAULT_MAX_QUEUED,
            max_queued_bytes: DEFAULT_MAX_QUEUED_BYTES,
            on_message: None,
            on_response: None,
            https: None,
            revisions: AdapterSet::all(),
            oauth: None,
            rate_limit: RateLimitRetry::new(),
            trace: crate::trace::TracePropagation::Off,
        }
    }
}

impl Client {
    /// A builder with the defaults.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }
}

impl ClientBuilder {
    /// The client's name and version, sent as `clientInfo`.
    /// Default is `mcp-client` and this crate's version.
    pub fn client_info(mut self, name: &str, version: &str) -> Self {
        self.client_info = json!({"name": name, "version": version});
        self
    }

    /// Speaks only `revision`: no negotiation, no fallback to another revision. (Over
    /// [`ClientBuilder::connect_http`] the fallback from Streamable HTTP to HTTP+SSE still
    /// happens for a revision with a handshake.)
    /// Default is to negotiate as the spec's dual-era client does.
    pub fn revision(mut self, revision: Revision) -> Self {
        self.choice = Choice::Pinned(revision);
        self
    }

    /// The revisions the client negotiates among, newest preferred.
    /// Default is every published revision ([`AdapterSet::all`]); a set may hold a revision
    /// this crate does not publish ([`mcp_adapters::Revision::from_descriptor`]).
    ///
    /// ```
    /// use mcp_adapters::{AdapterSet, Revision};
    ///
    /// // A client that speaks only the 2025 revisions with a handshake.
    /// let only = AdapterSet::new([Revision::V2025_11_25, Revision::V2025_06_18]).unwrap();
    /// let builder = mcp_client::Client::builder().revisions(only);
    /// ```
    pub fn revisions(mut self, revisions: AdapterSet) -> Self {
        self.revisions = revisions;
        self
    }

    /// The timeout of every call unless [`crate::CallOptions::timeout`] says otherwise; it covers
    /// the whole call, including rounds of questions and the time `on_ask` takes.
    /// Default is 60 seconds.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Answers the server's questions (elicitation, sampling, roots) whatever mechanism the
    /// revision uses: MRTR, pushed requests, or the argument convention. The client declares
    /// exactly the capabilities in `asks`. Default is no callback and no capabilities.
    pub fn on_ask<F, Fut>(mut self, asks: Asks, f: F) -> Self
    where
        F: Fn(Question) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answer> + Send + 'static,
    {
        self.on_ask = Some(OnAsk {
            asks,
            callback: ask_fn(f),
        });
        self
    }

    /// Declares support for the protocol extension `id` with its `settings` (`{}` for none):
    /// in the client's capabilities (`extensions`), per request on 2026-07-28 and at
    /// `initialize` before (SEP-2133). What the server offers is in
    /// [`ServerDescription::capabilities`](crate::ServerDescription)`["extensions"]`. Default
    /// is none.
    ///
    /// ```
    /// let builder = mcp_client::Client::builder()
    ///     .extension("com.example/search", serde_json::json!({}));
    /// # let _ = builder;
    /// ```
    pub fn extension(mut self, id: impl Into<String>, settings: Value) -> Self {
        self.extensions.insert(id.into(), settings);
        self
    }

    /// Declares the Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) and follows
    /// the tasks servers answer tool calls with, as `polling` says: see [`crate::task`].
    /// Default: no tasks (a server never answers this client with one).
    ///
    /// ```
    /// let builder = mcp_client::Client::builder().tasks(mcp_client::TaskPolling::new());
    /// # let _ = builder;
    /// ```
    pub fn tasks(mut self, polling: crate::task::TaskPolling) -> Self {
        self.tasks = Some(polling);
        self.extensions.insert(
            crate::task::TASKS_EXTENSION.into(),
            Value::Object(Default::default()),
        );
        self
    }

    /// Called with every notification from the server (progress, log messages, list changes),
    /// from whichever stream it arrives on. Keep it quick: it runs on the client's reader.
    /// Default is none.
    pub fn on_notification(mut self, f: impl Fn(&Notification) + Send + Sync + 'static) -> Self {
        self.on_notification = Some(Arc::new(f));
        self
    }

    /// The most rounds of questions one call may take before it fails with
    /// [`ErrorKind::TooManyRounds`]. Default is 8.
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds;
        self
    }

    /// The log level asked of the server: per request on 2026-07-28, with `logging/setLevel`
    /// after `initialize` otherwise. Default is none (the server sends no log messages).
    pub fn log_level(mut self, level: LogLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// How many results the 2026-07-28 cache holds; 0 turns it off. Default is 256.
    pub fn cache_capacity(mut self, entries: usize) -> Self {
        self.cache_entries = entries;
        self
    }

    /// How long the dual-era probe (`server/discover`) waits on a transport that is not HTTP
    /// before deciding the server is a legacy one that ignores unknown requests, and falling back
    /// to `initialize`. Default is 5 seconds.
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// A header sent on every HTTP request, such as `Authorization`. Default is none.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// The largest message accepted from the server. Default is 16 MiB
    /// ([`crate::transport::DEFAULT_MAX_MESSAGE_SIZE`]).
    ///
    /// It bounds, on every transport, what the client holds in memory for one message: a JSON
    /// response body (a declared `Content-Length` past it is refused before the body is read),
    /// each SSE event (an event or a line growing past it is dropped while it arrives, so an
    /// endless line costs no more than the limit), and each stdio line. Crossing it fails the call
    /// with [`ErrorKind::Protocol`]. Bodies that carry no message are bounded more tightly: an
    /// HTTP error body is read up to 1 MiB (or this limit, if smaller) to find a JSON-RPC error
    /// in it, and the body of a `202 Accepted` up to 64 KiB. A stream may carry any number of
    /// messages; how long it may stay open is the call's timeout.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// Whether the revision an HTTP origin speaks is remembered for later clients in this
    /// process, so they skip the probing. Default is `true`.
    pub fn remember_era(mut self, remember: bool) -> Self {
        self.remember_era = remember;
        self
    }

    /// The most pages one listing ([`Client::list_tools`], [`Client::list_stream`] ...) follows.
    /// Default is 1,000.
    ///
    /// A listing that needs more pages (a server that hands out a fresh `nextCursor` on every
    /// page) stops with [`ErrorKind::LimitExceeded`] instead of fetching the next page; a server
    /// that repeats a cursor stops it at once with [`ErrorKind::Protocol`]. Together with
    /// [`ClientBuilder::max_list_items`] and [`ClientBuilder::max_list_bytes`] this bounds what
    /// one listing costs, whatever the server sends.
    ///
    /// ```
    /// use mcp_client::Client;
    ///
    /// let builder = Client::builder()
    ///     .max_list_pages(100)
    ///     .max_list_items(10_000)
    ///     .max_list_bytes(8 << 20);
    /// # let _ = builder;
    /// ```
    pub fn max_list_pages(mut self, pages: usize) -> Self {
        self.list_limits.pages = pages;
        self
    }

    /// The most items one listing returns, over all its pages. Default is 100,000.
    ///
    /// A page that would take the listing past it ends the listing with
    /// [`ErrorKind::LimitExceeded`]; its items are not returned.
    pub fn max_list_items(mut self, items: usize) -> Self {
        self.list_limits.items = items;
        self
    }

    /// The most bytes one listing holds, over all its pages: the items, as JSON text, and the
    /// cursors. Default is 64 MiB.
    ///
    /// A page that would take the listing past it ends the listing with
    /// [`ErrorKind::LimitExceeded`]; its items are not returned. What one page may weigh is
    /// bounded by [`ClientBuilder::max_message_size`], so a listing never holds more than this
    /// plus one message.
    pub fn max_list_bytes(mut self, bytes: usize) -> Self {
        self.list_limits.bytes = bytes;
        self
    }

    /// How many messages from the server may wait for the client to handle them, in each place
    /// they can wait. Default is 1,024 ([`crate::transport::DEFAULT_MAX_QUEUED`]).
    ///
    /// It bounds, whatever the server sends and from the first byte on (during the handshake
    /// too):
    ///
    /// - the incoming queue of stdio and HTTP+SSE (notifications and the server's requests that
    ///   no call reads itself), together with [`ClientBuilder::max_queued_bytes`];
    /// - the queue of each [`crate::Listener`];
    /// - how many of the server's requests (`ping`, questions) are answered at once: past it, the
    ///   client finishes answering one before it reads the next message, and what arrives
    ///   meanwhile waits in the incoming queue.
    ///
    /// **At the limit**, notifications and the server's requests are lossy: one that arrives
    /// while its queue is full is dropped and counted ([`Client::dropped_messages`],
    /// [`crate::Listener::dropped`]); a request so dropped gets no answer. Responses to the
    /// client's own requests are never dropped: each goes to the call waiting for it, so what
    /// they hold is bounded by the calls in flight. Over Streamable HTTP each stream is read as
    /// the client handles it, so nothing queues there.
    ///
    /// ```
    /// use mcp_client::Client;
    ///
    /// let builder = Client::builder().max_queued(256).max_queued_bytes(4 << 20);
    /// # let _ = builder;
    /// ```
    pub fn max_queued(mut self, messages: usize) -> Self {
        self.max_queued = messages.max(1);
        self
    }

    /// How many bytes of messages (counted as their text on the wire) the incoming queue of
    /// stdio and HTTP+SSE holds at most; see [`ClientBuilder::max_queued`]. Default is 16 MiB
    /// ([`crate::transport::DEFAULT_MAX_QUEUED_BYTES`]). One message larger than this still
    /// passes when nothing else waits (its size is bounded by
    /// [`ClientBuilder::max_message_size`]).
    pub fn max_queued_bytes(mut self, bytes: usize) -> Self {
        self.max_queued_bytes = bytes;
        self
    }

    /// Shows every JSON-RPC message the client exchanges to `f`: each message it sends, and
    /// each one it receives (responses, notifications, the server's requests), in the order the
    /// transport carries them, on every transport and through every fallback of
    /// [`ClientBuilder::connect_http`]. `f` runs on the task moving the message: keep it short
    /// (copy into a bounded buffer). Without it the transport is not wrapped at all.
    ///
    /// The body of an HTTP error status is shown as received too (with
    /// [`Observation::http_status`]), and a sent message carries the per-message headers
    /// ([`Observation::headers`]).
    ///
    /// ```
    /// use mcp_client::Client;
    /// use mcp_client::transport::Direction;
    ///
    /// let builder = Client::builder().on_message(|seen| {
    ///     let arrow = if seen.direction() == Direction::Sent { "->" } else { "<-" };
    ///     eprintln!("{arrow} {}", seen.message());
    /// });
    /// # let _ = builder;
    /// ```
    pub fn on_message(mut self, f: impl Fn(&Observation<'_>) + Send + Sync + 'static) -> Self {
        self.on_message = Some(Arc::new(f));
        self
    }

    /// Called with the head (status and headers) of every HTTP response the client's
    /// Streamable HTTP and HTTP+SSE transports receive from the server, made by
    /// [`ClientBuilder::connect_http`] and [`ClientBuilder::connect_sse`]: a protocol view's
    /// HTTP exchanges, next to the messages of [`ClientBuilder::on_message`]. Default: none
    /// (nothing is done per response).
    ///
    /// ```
    /// let builder = mcp_client::Client::builder().on_http_response(|response| {
    ///     eprintln!("{} {} -> {}", response.method(), response.url(), response.status());
    /// });
    /// # let _ = builder;
    /// ```
    pub fn on_http_response(
        mut self,
        f: impl Fn(&crate::transport::HttpResponse<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.on_response = Some(crate::transport::observe::ResponseFn(Arc::new(f)));
        self
    }

    /// How `https://` URLs are reached by [`ClientBuilder::connect_http`] and
    /// [`ClientBuilder::connect_sse`]: trusted CAs, TLS handshake timeout, proxy. Default is
    /// [`crate::transport::Https::default`]: the bundled web PKI roots, a 10 s handshake, HTTP/2
    /// or HTTP/1.1 by ALPN, and `HTTPS_PROXY`/`NO_PROXY` from the environment.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use mcp_client::Client;
    /// use mcp_client::transport::Https;
    ///
    /// let client = Client::builder()
    ///     .https(Https::new().add_ca_file("ca.pem")?)
    ///     .connect_http("https://mcp.example.com/mcp")
    ///     .await?;
    /// # drop(client); Ok(()) }
    /// ```
    pub fn https(mut self, https: crate::transport::Https) -> Self {
        self.https = Some(https);
        self
    }

    fn config(&self) -> Config {
        Config {
            client_info: self.client_info.clone(),
            timeout: self.timeout,
            on_ask: self.on_ask.clone(),
            on_notification: self.on_notification.clone(),
            extensions: self.extensions.clone(),
            tasks: self.tasks,
            max_rounds: self.max_rounds,
            log_level: self.log_level,
            cache_entries: self.cache_entries,
            probe_timeout: self.probe_timeout,
            list_limits: self.list_limits,
            max_queued: self.max_queued,
            revisions: self.revisions.revisions().to_vec(),
            rate_limit: self.rate_limit.clone(),
            trace: self.trace.clone(),
        }
    }

    fn first_adapter(&self) -> Adapter {
        match self.choice {
            Choice::Pinned(r) => Adapter::new(r),
            Choice::Negotiate => self.revisions.newest(),
        }
    }

    /// Builds the client and negotiates; a rate-limited handshake is started again after the
    /// server's wait, within [`ClientBuilder::rate_limit_retry`]'s bounds and by `deadline`.
    async fn start(
        &self,
        transport: Arc<dyn Transport>,
        deadline: Instant,
    ) -> Result<(Client, Negotiated), Error> {
        let transport = match &self.on_message {
            Some(observer) => Arc::new(Observed::new(transport, observer.clone())),
            None => transport,
        };
        let inner = Inner::new(transport, self.config(), self.first_adapter());
        let client = Client { inner };
        let mut attempts = 0u32;
        let mut waited = Duration::ZERO;
        loop {
            match negotiate::negotiate(&client, self.choice, self.remember_era).await {
                Ok(negotiated) => return Ok((client, negotiated)),
                Err(error) if error.is_rate_limited() => {
                    attempts += 1;
                    let left = deadline.saturating_duration_since(Instant::now());
                    let Some(wait) =
                        self.rate_limit
                            .next_wait(error.retry_after(), attempts, waited, left)
                    else {
                        return Err(error);
                    };
                    if let Some(on_retry) = &self.rate_limit.on_retry {
                        on_retry(&error, wait);
                    }
                    tokio::time::sleep(wait).await;
                    waited += wait;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Sets the W3C trace context each request carries: in its `_meta` (`traceparent`,
    /// `tracestate`, `baggage`) on every revision and transport, and as headers of the same
    /// names on HTTP, so the server's span for the request is a child of the caller's.
    /// Default [`TracePropagation::Off`](crate::TracePropagation::Off): requests carry none.
    /// Notifications never do.
    ///
    /// ```
    /// use mcp_client::{Client, TracePropagation};
    /// use mcp_client::trace::{TraceContext, TraceParent};
    ///
    /// // The span the caller is in, as it would send it to any service.
    /// let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")?;
    /// let builder = Client::builder()
    ///     .trace_context(TracePropagation::Context(TraceContext::new(parent)));
    /// # let _ = builder;
    /// # Ok::<(), mcp_client::trace::TraceParentError>(())
    /// ```
    #[must_use]
    pub fn trace_context(mut self, propagation: crate::trace::TracePropagation) -> Self {
        self.trace = propagation;
        self
    }

    /// How a rate-limited request is retried (issue 50's contract, see
    /// [`crate::rate_limit`]): on by default, for idempotent requests only.
    ///
    /// By default a request the server rate limits (the JSON-RPC error `-31429` or an HTTP
    /// 429) is sent again after the wait the server asked for plus up to 10% jitter, 3 times
    /// in all and 30 s of waiting at most, and within the call's [`timeout`](Self::timeout);
    /// past these bounds the call returns [`ErrorKind::RateLimited`] with
    /// [`Error::retry_after`]. The default is on because the server ran no handler for a
    /// refused request and asked to be called again later; it covers the handshake and every
    /// request but `tools/call`, plus the calls of tools annotated `idempotentHint` or
    /// `readOnlyHint` in the client's last `tools/list`. A tool call the client cannot tell is
    /// safe to repeat is never retried unless
    /// [`RateLimitRetry::retry_tool_calls`] says so. [`RateLimitRetry::off`] turns retries off.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_client::{Client, RateLimitRetry};
    ///
    /// let builder = Client::builder().rate_limit_retry(
    ///     RateLimitRetry::new()
    ///         .max_attempts(4)
    ///         .max_wait(Duration::from_secs(10))
    ///         .retry_tool_calls(true),
    /// );
    /// # let _ = builder;
    /// ```
    pub fn rate_limit_retry(mut self, retry: RateLimitRetry) -> Self {
        self.rate_limit = retry;
        self
    }

    /// Connects over any transport and negotiates (or starts the pinned revision), all within
    /// one [`ClientBuilder::timeout`]: every step of the negotiation (probe, `initialize`,
    /// `notifications/initialized`, `logging/setLevel`) shares it, so a server that hangs at any
    /// step fails the connect with [`ErrorKind::Timeout`] once, after the timeout.
    pub async fn connect(self, transport: impl Transport) -> Result<Client, Error> {
        let deadline = Instant::now() + self.timeout;
        self.connect_transport(Arc::new(transport), deadline).await
    }

    async fn connect_transport(
        &self,
        transport: Arc<dyn Transport>,
        deadline: Instant,
    ) -> Result<Client, Error> {
        let (client, negotiated) = self.start_by(transport, deadline).await?;
        match negotiated {
            Negotiated::Done => Ok(client),
            Negotiated::FallBackToSse => Err(Error::new(
                ErrorKind::Unsupported,
                "the server wants HTTP+SSE",
            )),
        }
    }

    /// [`ClientBuilder::start`] by `deadline`, or [`ErrorKind::Timeout`].
    async fn start_by(
        &self,
        transport: Arc<dyn Transport>,
        deadline: Instant,
    ) -> Result<(Client, Negotiated), Error> {
        match tokio::time::timeout_at(deadline, self.start(transport, deadline)).await {
            Ok(started) => started,
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                format!(
                    "not connected within {:?} (the handshake included)",
                    self.timeout
                ),
            )),
        }
    }

    /// Authorizes with OAuth 2.1 when the server asks for it (a `401` or `403
    /// insufficient_scope`): see [`crate::oauth`]. Applies to [`ClientBuilder::connect_http`]
    /// over Streamable HTTP and to [`ClientBuilder::connect_sse`] (the stream's `GET` and every
    /// POST); the OAuth requests use the builder's [`ClientBuilder::https`]
    /// settings unless the configuration has its own. Default: no authorization.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), mcp_client::Error> {
    /// use mcp_client::Client;
    /// use mcp_client::oauth::{FollowRedirect, OAuthConfig};
    ///
    /// let client = Client::builder()
    ///     .oauth(OAuthConfig::new(FollowRedirect::new()))
    ///     .connect_http("https://mcp.example.com/mcp")
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn oauth(mut self, config: crate::oauth::OAuthConfig) -> Self {
        self.oauth = Some(config);
        self
    }

    /// Connects to a Streamable HTTP endpoint (`http://host:port/mcp`), falling back to
    /// `initialize` and then to HTTP+SSE as the spec's dual-era client does. The whole connect,
    /// fallbacks included, has one [`ClientBuilder::timeout`].
    ///
    /// A request's SSE stream that ends or breaks before its response, after an event with an
    /// id, is resumed by the client itself on revisions whose streams resume (2025-03-26 and
    /// later): it waits the server's `retry` (at most 30 s) and sends `GET` with that id as
    /// `Last-Event-ID`, so a load balancer that cuts a long call, or a server that closes the
    /// stream for the client to poll, loses nothing. A resume that fails on the connection or
    /// with a 5xx is tried again after the same pause (1 s when the server named none); a
    /// request is resumed 16 times at most, and the call's
    /// [`timeout`](ClientBuilder::timeout) bounds it all.
    pub async fn connect_http(self, url: &str) -> Result<Client, Error> {
        let deadline = Instant::now() + self.timeout;
        let uri: Uri = url
            .parse()
            .map_err(|_| Error::new(ErrorKind::InvalidInput, format!("invalid URL {url:?}")))?;
        if self.remember_era {
            let era =
                crate::transport::streamable_origin(&uri).and_then(|o| negotiate::remembered(&o));
            if era.is_some_and(|e: Remembered| e.http_sse) {
                return self.connect_sse_by(url, deadline).await;
            }
        }
        let mut builder = StreamableHttp::builder(uri)
            .max_message_size(self.max_message_size)
            .on_response_fn(self.on_response.clone());
        if let Some(https) = &self.https {
            builder = builder.https(https.clone());
        }
        for (name, value) in &self.headers {
            builder = builder.header(name.clone(), value.clone());
        }
        let mut transport: Arc<dyn Transport> = Arc::new(builder.build());
        if let Some(oauth) = self.oauth_for(url)? {
            transport = Arc::new(crate::oauth::OAuthTransport::new(transport, oauth));
        }
        let (client, negotiated) = self.start_by(transport, deadline).await?;
        match negotiated {
            Negotiated::Done => Ok(client),
            Negotiated::FallBackToSse => {
                drop(client);
                self.connect_sse_by(url, deadline).await
            }
        }
    }

    /// Connects to an HTTP+SSE (2024-11-05 transport) stream endpoint (`http://host:port/sse`):
    /// opening the stream, waiting for its `endpoint` event and the handshake share one
    /// [`ClientBuilder::timeout`].
    pub async fn connect_sse(self, url: &str) -> Result<Client, Error> {
        let deadline = Instant::now() + self.timeout;
        self.connect_sse_by(url, deadline).await
    }

    async fn connect_sse_by(&self, url: &str, deadline: Instant) -> Result<Client, Error> {
        let uri: Uri = url
            .parse()
            .map_err(|_| Error::new(ErrorKind::InvalidInput, format!("invalid URL {url:?}")))?;
        // The stream's own wait ends at the deadline: one clock, no race between two.
        let mut builder = HttpSse::builder(uri)
            .max_message_size(self.max_message_size)
            .max_queued(self.max_queued)
            .max_queued_bytes(self.max_queued_bytes)
            .endpoint_timeout(deadline.saturating_duration_since(Instant::now()))
            .on_response_fn(self.on_response.clone());
        if let Some(https) = &self.https {
            builder = builder.https(https.clone());
        }
        for (name, value) in &self.headers {
            builder = builder.header(name.clone(), value.clone());
        }
        let Some(oauth) = self.oauth_for(url)? else {
            let transport = builder.connect().await?;
            return self.connect_transport(Arc::new(transport), deadline).await;
        };
        // The stream's GET carries the token and answers the challenges the way every POST
        // does (a bounded number of rounds); the POSTs go through the OAuth transport.
        let mut round = 0;
        let transport = loop {
            let mut credentials = HeaderMap::new();
            let sent = oauth
                .authorize_request(&mut credentials, "GET", None)
                .await
                .map_err(|e| Error::from(crate::oauth::transport::auth_error(e)))?;
            match builder.clone().stream_headers(credentials).connect().await {
                Err(e) if round < crate::oauth::transport::MAX_ROUNDS => {
                    round += 1;
                    if !crate::oauth::transport::answer(&oauth, &e, sent.as_deref()).await? {
                        return Err(e.into());
                    }
                }
                other => break other?,
            }
        };
        let transport = crate::oauth::OAuthTransport::new(Arc::new(transport), oauth);
        self.connect_transport(Arc::new(transport), deadline).await
    }

    /// The OAuth client for the server at `url`, when [`ClientBuilder::oauth`] was given; its
    /// requests use the builder's [`ClientBuilder::https`] unless the configuration has its
    /// own.
    fn oauth_for(&self, url: &str) -> Result<Option<crate::oauth::OAuth>, Error> {
        let Some(config) = &self.oauth else {
            return Ok(None);
        };
        let mut config = config.clone();
        if config.https.is_none() {
            config.https = self.https.clone();
        }
        crate::oauth::OAuth::new(config, url)
            .map(Some)
            .map_err(|e| Error::from(crate::transport::TransportError::Authorization(Box::new(e))))
    }

    /// Spawns a stdio server and connects to it; the handshake has one
    /// [`ClientBuilder::timeout`]. The builder's [`ClientBuilder::max_message_size`] and
    /// [`ClientBuilder::max_queued`] (with [`ClientBuilder::max_queued_bytes`]) replace the
    /// command's own.
    pub async fn connect_stdio(self, command: StdioBuilder) -> Result<Client, Error> {
        let transport: Stdio = command
            .max_message_size(self.max_message_size)
            .max_queued(self.max_queued)
            .max_queued_bytes(self.max_queued_bytes)
            .spawn()?;
        self.connect(transport).await
    }
}
