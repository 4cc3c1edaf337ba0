//! The command line, as clap reads it.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Printed under `mcp --help`.
pub(crate) const AFTER_HELP: &str = "\
Target: a URL (http://host:port/mcp or https://host/mcp, or the /sse URL with --transport sse), \
or --stdio CMD to spawn a server. https:// trusts the bundled web PKI roots and --cacert FILE (a CA, or the server's own \
self-signed certificate); \
HTTPS_PROXY and NO_PROXY are honoured. A server that asks for authorization (OAuth) gets it: \
the browser opens (or --no-browser prints the URL), and tokens are kept in --token-file.

Tool arguments: a JSON object, or key=value words (the value is JSON when it parses: n=3, \
ok=true, tags=[\"a\"]; a string otherwise: name=Ada). key:=value always sends a string \
(zip:=01234). key=@FILE sends the text of FILE as a string (key=@@x sends \"@x\"); \
mcp call --args-json - reads the JSON object from stdin, --args-json @FILE from a file \
(64 MiB in all).

Questions from the server: asked on the terminal, one prompt per field (accept, decline or \
cancel first). --answer answers without asking: accept, decline, cancel, a JSON object of \
field values, or a whole {\"action\": ...} result; repeat it for several questions.

Exit codes:
  0  success
  1  the tool ran and reported an error (isError); bench: measured calls failed or answered wrong
  2  usage: bad arguments, bad JSON, unknown revision
  3  the server could not be reached: connection refused, the command did not start or exited
  4  the server refused the request with a JSON-RPC error (its code is on the error line)
  5  protocol: no revision in common, an unreadable reply, not offered on this revision
  6  timeout (bench: no call was answered in the measured time)
  7  the server asked a question nobody could answer (no terminal, no --answer)
  8  rate limited: the server still said \"not now\" after --retry-rate-limited retries (the \
wait it asked for is on the error line)
  130  interrupted by Ctrl-C (the request is cancelled on the server; listen exits 0)";

/// Printed under `mcp call --help`.
const CALL_HELP: &str = "\
Arguments: a JSON object ('{\"a\": 1}'), or key=value words: the value is JSON when it parses \
(n=3, ok=true, tags=[\"a\"], opts={\"x\":1}) and a string otherwise (name=Ada); key:=value \
always sends a string (zip:=01234). Objects and words can be mixed; a key given twice is an \
error.

From files and stdin (for values too long for a command line): key=@FILE sends the text of \
FILE (UTF-8) as a string, and key=@@text the literal string \"@text\"; --args-json - reads \
the JSON object from stdin, --args-json @FILE from a file. What is read for one command is \
capped at 64 MiB in all; a larger file is refused, naming it.

Questions the tool asks are prompted on a terminal, or answered with --answer (repeatable). \
Exit codes are listed by `mcp --help`.";

/// `mcp`: try any MCP server from the command line.
#[derive(Debug, Parser)]
#[command(
    name = "mcp",
    version,
    about = "Try any MCP server from the command line",
    after_help = AFTER_HELP
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub(crate) struct Global {
    /// Spawn this command and speak to it on stdin/stdout (in place of a URL), e.g.
    /// --stdio "my-server --flag". `mcp console` takes it several times: the commands its
    /// page may run
    #[arg(long, global = true, value_name = "CMD")]
    pub(crate) stdio: Vec<String>,
    /// HTTP transport: auto (Streamable HTTP, falling back to HTTP+SSE), streamable, or sse (the
    /// 2024-11-05 HTTP+SSE transport: give its /sse URL)
    #[arg(long, global = true, value_enum, default_value_t = TransportChoice::Auto)]
    pub(crate) transport: TransportChoice,
    /// Speak only this protocol revision (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25,
    /// 2026-07-28) instead of negotiating
    #[arg(long, global = true, value_name = "VERSION")]
    pub(crate) revision: Option<String>,
    /// Machine output: JSON on stdout (one document; one line per notification for listen)
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Time limit of the whole command, in seconds: connecting, the request, every page of a list
    /// and closing share it (the time a person spends answering a question on the terminal is
    /// not counted); `listen` is bounded by it until it is listening
    #[arg(long, global = true, value_name = "SECS", default_value_t = 60.0)]
    pub(crate) timeout: f64,
    /// Answer the server's next question without asking: accept, decline, cancel, a JSON object
    /// of field values, or a whole {"action": ...} result. Repeat for several questions
    #[arg(long, global = true, value_name = "ANSWER")]
    pub(crate) answer: Vec<String>,
    /// Prompt for answers on stdin even when it is not a terminal
    #[arg(long, global = true)]
    pub(crate) interactive: bool,
    /// The server log level to ask for (debug, info, notice, warning, error, critical, alert,
    /// emergency); its log messages are printed on stderr
    #[arg(long, global = true, value_name = "LEVEL", default_value = "info")]
    pub(crate) log_level: String,
    /// How many times a request the server rate limits is sent again, each after the wait the
    /// server asks for (its waits count against --timeout); 0 never retries. A tools/call is
    /// retried only when the tool is annotated idempotent or read-only, or with
    /// --retry-tool-calls
    #[arg(long, global = true, value_name = "N", default_value_t = 2)]
    pub(crate) retry_rate_limited: u32,
    /// Also retry a rate-limited tools/call of a tool not annotated idempotent or read-only
    /// (the server ran nothing for the refused call; sending it again is your decision)
    #[arg(long, global = true)]
    pub(crate) retry_tool_calls: bool,
    /// Every request carries this W3C trace context (in its _meta and, on HTTP, as the
    /// traceparent header), so the server's spans join your trace:
    /// 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>
    #[arg(long, global = true, value_name = "TRACEPARENT")]
    pub(crate) traceparent: Option<String>,
    /// Say more on stderr: the trace id the requests carry (a new trace for the command when
    /// --traceparent is not given)
    #[arg(short = 'v', long, global = true)]
    pub(crate) verbose: bool,
    /// An HTTP header sent with every request, "Name: value" (repeatable)
    #[arg(short = 'H', long = "header", global = true, value_name = "HEADER")]
    pub(crate) headers: Vec<String>,
    /// Also trust the CA certificates of this PEM file for https:// URLs (beside the bundled
    /// web PKI roots); a server presenting one of them as its own (a self-signed certificate)
    /// is accepted too
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) cacert: Option<std::path::PathBuf>,
    /// Where OAuth tokens are kept (mode 0600): default $MCP_TOKEN_FILE, else
    /// mcp/tokens.json in $XDG_CONFIG_HOME or ~/.config
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) token_file: Option<std::path::PathBuf>,
    /// When a server asks for authorization, print the URL to open and read back the address
    /// the browser was sent to, instead of opening a browser and listening for it
    #[arg(long, global = true)]
    pub(crate) no_browser: bool,
    /// A client ID registered with the authorization server (default $MCP_CLIENT_ID; without
    /// one, mcp registers itself)
    #[arg(long, global = true, value_name = "ID")]
    pub(crate) client_id: Option<String>,
    /// The secret of --client-id (default $MCP_CLIENT_SECRET)
    #[arg(long, global = true, value_name = "SECRET")]
    pub(crate) client_secret: Option<String>,
    /// Authorize as the client itself (OAuth client_credentials with --client-id and
    /// --client-secret), without a user or a browser: for scripts
    #[arg(long, global = true)]
    pub(crate) client_credentials: bool,
    /// Scopes to ask for when authorizing (space-separated, e.g. "mcp:read mcp:deploy"), beside
    /// those the server names; a kept token without them is replaced by a new login
    #[arg(long, global = true, value_name = "SCOPES")]
    pub(crate) scope: Option<String>,
    /// Listen for the login's redirect on this port of 127.0.0.1 (http://127.0.0.1:PORT/callback)
    /// instead of a port the system picks: for a client registered with that redirect URI
    #[arg(
        long,
        global = true,
        value_name = "PORT",
        conflicts_with = "redirect_uri"
    )]
    pub(crate) redirect_port: Option<u16>,
    /// The login's redirect URI, for a client registered with it: http to 127.0.0.1, [::1] or
    /// localhost, with a port (default: http://127.0.0.1:<a free port>/callback)
    #[arg(long, global = true, value_name = "URI")]
    pub(crate) redirect_uri: Option<String>,
    /// Fetch the authorization URL and follow its redirect without a browser (an authorization
    /// server that approves at once: tests, demos; also $MCP_AUTH_FOLLOW_REDIRECT=1)
    #[arg(long, global = true, hide = true)]
    pub(crate) auth_follow_redirect: bool,
}

/// Which HTTP transport to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportChoice {
    /// Streamable HTTP, falling back to HTTP+SSE as the spec's backwards-compatible client does.
    Auto,
    /// Streamable HTTP only.
    Streamable,
    /// HTTP+SSE (2024-11-05): the URL is the SSE stream endpoint.
    Sse,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List the server's tools
    #[command(override_usage = "mcp tools [OPTIONS] <URL | --stdio CMD>")]
    Tools(Rest),
    /// Call a tool
    #[command(
        override_usage = "mcp call [OPTIONS] <URL | --stdio CMD> <TOOL> [JSON | KEY=VALUE | KEY:=STRING]...",
        after_help = CALL_HELP
    )]
    Call(CallArgs),
    /// List the server's resources and resource templates
    #[command(override_usage = "mcp resources [OPTIONS] <URL | --stdio CMD>")]
    Resources(Rest),
    /// Read a resource
    #[command(override_usage = "mcp read [OPTIONS] <URL | --stdio CMD> <URI>")]
    Read(Rest),
    /// List the server's prompts
    #[command(override_usage = "mcp prompts [OPTIONS] <URL | --stdio CMD>")]
    Prompts(Rest),
    /// Get a prompt with its arguments
    #[command(override_usage = "mcp prompt [OPTIONS] <URL | --stdio CMD> <NAME> [KEY=VALUE]...")]
    Prompt(Rest),
    /// Ask the server to complete a prompt's argument or a resource template's variable
    #[command(
        override_usage = "mcp complete [OPTIONS] <URL | --stdio CMD> <--prompt NAME | --resource-template URI> --arg NAME=VALUE...",
        after_help = COMPLETE_HELP
    )]
    Complete(CompleteArgs),
    /// Show what the server is and probe which protocol revisions it speaks
    #[command(override_usage = "mcp discover [OPTIONS] <URL | --stdio CMD>")]
    Discover(Rest),
    /// Print notifications as they come: list changes and resource updates
    #[command(override_usage = "mcp listen [OPTIONS] <URL | --stdio CMD> [--resource URI]...")]
    Listen(ListenArgs),
    /// Authorize with a protected server now and keep its tokens (other commands also log in
    /// when a server asks)
    #[command(override_usage = "mcp login [OPTIONS] <URL>")]
    Login(Rest),
    /// Forget the tokens kept for a server
    #[command(override_usage = "mcp logout [OPTIONS] <URL>")]
    Logout(Rest),
    /// The OAuth tokens kept: `mcp auth status`
    Auth(AuthArgs),
    /// Serve another server (its tools, resources, prompts) on every revision and transport:
    /// Streamable HTTP at /mcp and HTTP+SSE at /sse on --addr, or stdio with --stdio-front
    #[command(
        override_usage = "mcp proxy [OPTIONS] <--upstream URL | --stdio CMD> [--addr HOST:PORT | --stdio-front]",
        after_help = PROXY_HELP
    )]
    Proxy(Box<ProxyArgs>),
    /// Load-test a server: N callers make one call (a tool, or a resource read) over and over,
    /// every reply checked; prints throughput, latency percentiles and errors by kind
    #[command(
        override_usage = "mcp bench [OPTIONS] <URL | --stdio CMD> <--tool NAME [JSON | KEY=VALUE | KEY:=STRING]... | --read URI>",
        after_help = BENCH_HELP
    )]
    Bench(BenchArgs),
    /// Open a console in the browser: connect, list, call, read, answer questions, watch the
    /// protocol, and compare the server across revisions
    #[command(override_usage = "mcp console [OPTIONS] [URL] [--stdio CMD]...")]
    Console(ConsoleArgs),
}

/// Printed under `mcp proxy --help`.
const PROXY_HELP: &str = "\
The upstream is reached as every other command reaches a server: --upstream URL (Streamable \
HTTP, falling back to HTTP+SSE; --transport, --revision, -H, --cacert and OAuth with the kept \
tokens apply) or --stdio CMD. Its catalog is listed once at start and again when it announces \
a change. Downstream clients of any revision connect to http://ADDR/mcp (Streamable HTTP) or \
http://ADDR/sse (HTTP+SSE); with --stdio-front the proxy speaks MCP on its own stdin and \
stdout instead (nothing else is written to stdout). --auth-issuer and --auth-jwks-uri make \
downstream clients present an access token issued for the proxy; a downstream client's token \
is never sent upstream: the proxy uses its own credentials. --timeout bounds connecting and each forwarded \
request. The first line on stdout names the address (HTTP only; https:// with --tls-cert and \
--tls-key), the second the metrics address with --metrics. Ctrl-C stops it.

Examples:
  mcp proxy --upstream https://example.com/mcp --addr 127.0.0.1:8080
  mcp proxy --stdio \"my-server --flag\" --addr 127.0.0.1:8080 --max-children 32
  mcp proxy --stdio-front --upstream https://example.com/mcp";

/// `mcp proxy`.
#[derive(Debug, Args)]
pub(crate) struct ProxyArgs {
    /// The upstream server's URL (or give --stdio CMD to spawn it)
    #[arg(long, value_name = "URL")]
    pub(crate) upstream: Option<String>,
    /// Where to serve Streamable HTTP (/mcp) and HTTP+SSE (/sse); port 0 picks a free one
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080")]
    pub(crate) addr: String,
    /// Serve MCP on this process's stdin and stdout instead of HTTP (for stdio-only hosts)
    #[arg(long, conflicts_with = "addr")]
    pub(crate) stdio_front: bool,
    /// Where downstream sessions live: memory, or a hub URL (redis://, postgres://, sqlite:)
    /// when mcp is built with the feature of that name (cargo install everymcp-cli --features
    /// redis)
    #[arg(long, value_name = "URL", default_value = "memory")]
    pub(crate) hub: String,
    /// Requests forwarded upstream at once, over every downstream session; more wait
    #[arg(long, value_name = "N", default_value_t = mcp_gateway::DEFAULT_MAX_UPSTREAM_CALLS)]
    pub(crate) max_upstream_calls: usize,
    /// Messages (progress, notifications) queued for each downstream stream [default: the
    /// server's]
    #[arg(long, value_name = "N")]
    pub(crate) max_queued_messages: Option<usize>,
    /// Upstream resources subscribed to, so their updates reach subscribed downstream clients
    #[arg(
        long,
        value_name = "N",
        default_value_t = mcp_gateway::DEFAULT_MAX_UPSTREAM_SUBSCRIPTIONS
    )]
    pub(crate) max_upstream_subscriptions: usize,
    /// With --stdio: child processes at once. Each downstream session gets a child of its own
    /// at its first request, beside the first child (which lists the catalog and serves clients
    /// without a session: 2026-07-28, --stdio-front); a session beyond the limit is refused
    /// until another ends or idles out
    #[arg(long, value_name = "N", default_value_t = mcp_gateway::DEFAULT_MAX_CHILDREN)]
    pub(crate) max_children: usize,
    /// With --stdio: seconds a session's child may go without a request before it is ended
    /// (its next request starts another); a child whose session ended is ended at once
    #[arg(long, value_name = "SECS", default_value_t = mcp_gateway::DEFAULT_CHILD_IDLE.as_secs_f64())]
    pub(crate) child_idle: f64,
    /// Serve HTTPS with this certificate chain (a PEM file; with --tls-key), HTTP/2 and
    /// HTTP/1.1 by ALPN
    #[arg(
        long,
        value_name = "PEM",
        requires = "tls_key",
        conflicts_with = "stdio_front"
    )]
    pub(crate) tls_cert: Option<String>,
    /// The certificate's private key (a PEM file; with --tls-cert)
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub(crate) tls_key: Option<String>,
    /// Serve Prometheus metrics of the downstream side at http://HOST:PORT/metrics (printed
    /// as the second line) [default: off; needs the `metrics` feature, a default feature]
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "stdio_front")]
    pub(crate) metrics: Option<String>,
    /// Show 2025-11-25 clients the upstream's tool schemas as they are (JSON Schema 2020-12,
    /// that revision's dialect) instead of a simplified schema every such client reads
    #[arg(long)]
    pub(crate) native_schemas: bool,
    /// Protect /mcp and /sse: downstream clients need an access token (a JWT) from this
    /// authorization server (with --auth-jwks-uri). Their tokens are never sent upstream
    #[arg(
        long,
        value_name = "URL",
        requires = "auth_jwks_uri",
        conflicts_with = "stdio_front"
    )]
    pub(crate) auth_issuer: Option<String>,
    /// The key set the downstream tokens are verified with (https://, or http:// to a loopback
    /// host)
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub(crate) auth_jwks_uri: Option<String>,
    /// A scope every downstream request needs (repeatable)
    #[arg(long, value_name = "SCOPE", requires = "auth_issuer")]
    pub(crate) auth_scope: Vec<String>,
    /// TOOL=SCOPE: a scope a downstream token needs to call this proxied tool, beyond
    /// --auth-scope (repeatable; a tool may be named several times)
    #[arg(long, value_name = "TOOL=SCOPE", requires = "auth_issuer")]
    pub(crate) tool_scope: Vec<String>,
    /// The resource the downstream tokens are for: the URL clients use for /mcp [default:
    /// http://ADDR/mcp of the bound address]
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub(crate) auth_resource: Option<String>,
    /// Serve a non-loopback --addr without --auth-issuer: anyone who reaches the address then
    /// calls the upstream with this proxy's own credentials (refused without this flag)
    #[arg(long, conflicts_with = "auth_issuer")]
    pub(crate) unsafe_unauthenticated: bool,
}

/// Printed under `mcp bench --help`.
const BENCH_HELP: &str = "\
Examples:
  mcp bench http://127.0.0.1:8080/mcp --tool add a=2 b=3 --expect-json /structuredContent/sum=5 \
--concurrency 32 --duration 10
  mcp bench --stdio \"my-server\" --tool echo text=hi --expect-text hi --count 1000
  mcp bench http://127.0.0.1:8080/mcp --read config://app --json

The server is reached as by every other command (--revision, --transport, -H, --cacert, OAuth, \
--stdio CMD). --sessions K clients (default 1) are shared by --concurrency N callers (default 8, \
at most 1024); each caller makes one call at a time, for --warmup seconds (not counted), then for \
--duration seconds (default 10) or until --count calls were made. --timeout bounds connecting \
each session and closing it; --call-timeout bounds each call (default 10 s).

Every reply is checked: isError: true counts as a tool error, --expect-text TEXT wants the first \
content block's text to be TEXT, --expect-json POINTER=VALUE wants VALUE (JSON when it parses, \
a string otherwise) at the JSON pointer into the result (/structuredContent/sum, \
/content/0/text, /contents/0/text for a read). Failed calls are counted by kind: timeout, \
transport, json-rpc CODE, tool error, wrong answer, rate limited (not retried), protocol. \
The server's questions are answered from --answer only (never prompted on the terminal).

The report goes to stdout (--json: one JSON object, latencies in microseconds), a live progress \
line to stderr when it is a terminal (or with --progress, one line a second). Latency \
percentiles are of the successful calls, within 1.6%; throughput is successful calls per \
measured second. Exit code 0 when every measured call succeeded, 1 when any failed or answered \
wrong, 6 when no call completed, 130 on Ctrl-C (the report of what was measured is printed \
first).

Only servers on this machine are loaded: a URL whose host is not a loopback address \
(127.0.0.0/8, [::1], localhost) is refused unless --allow-remote is given; --stdio is always \
allowed.";

/// `mcp bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    #[command(flatten)]
    pub(crate) rest: Rest,
    /// Call this tool (its arguments follow the URL, as for mcp call)
    #[arg(long, value_name = "NAME", conflicts_with = "read")]
    pub(crate) tool: Option<String>,
    /// The tool's arguments as a JSON object: `-` reads it from stdin, @FILE from a file
    /// (merged with the KEY=VALUE words, as for mcp call)
    #[arg(
        long,
        value_name = "JSON | - | @FILE",
        allow_hyphen_values = true,
        requires = "tool"
    )]
    pub(crate) args_json: Option<String>,
    /// Read this resource instead of calling a tool
    #[arg(long, value_name = "URI")]
    pub(crate) read: Option<String>,
    /// Callers making calls at once (1 to 1024)
    #[arg(long, short = 'c', value_name = "N", default_value_t = 8)]
    pub(crate) concurrency: usize,
    /// Seconds measured, after the warm-up [default: 10]
    #[arg(long, value_name = "SECS", conflicts_with = "count")]
    pub(crate) duration: Option<f64>,
    /// Stop after this many measured calls instead of after --duration
    #[arg(long, value_name = "N")]
    pub(crate) count: Option<u64>,
    /// Seconds of calls before measuring, not counted
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub(crate) warmup: f64,
    /// Clients (sessions; for --stdio, server processes) the callers share, caller i on
    /// session i mod K (1 to 64, at most --concurrency)
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub(crate) sessions: usize,
    /// Every reply's first content block must be this text
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub(crate) expect_text: Option<String>,
    /// Every reply must hold VALUE (JSON, or a string) at the JSON pointer POINTER into the
    /// result, e.g. /structuredContent/sum=5 (repeatable)
    #[arg(long, value_name = "POINTER=VALUE", allow_hyphen_values = true)]
    pub(crate) expect_json: Vec<String>,
    /// The longest one call may take, in seconds; a slower one counts as a timeout error
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub(crate) call_timeout: f64,
    /// Print a progress line on stderr even when it is not a terminal (one a second)
    #[arg(long)]
    pub(crate) progress: bool,
    /// Load a server that is not on this machine (a URL whose host is not 127.0.0.0/8, [::1]
    /// or localhost): only one you are allowed to load
    #[arg(long)]
    pub(crate) allow_remote: bool,
}

/// `mcp auth`.
#[derive(Debug, Args)]
pub(crate) struct AuthArgs {
    #[command(subcommand)]
    pub(crate) command: AuthCommand,
}

/// The `mcp auth` commands.
#[derive(Debug, Subcommand)]
pub(crate) enum AuthCommand {
    /// List the servers with kept tokens: authorization server, scopes, expiry (no secrets)
    Status,
}

/// The positional words of a command: the URL (unless --stdio is given), then its own.
#[derive(Debug, Args)]
pub(crate) struct Rest {
    /// [URL] then the command's own arguments
    #[arg(value_name = "ARGS", allow_hyphen_values = false)]
    pub(crate) words: Vec<String>,
}

/// Printed under `mcp complete --help`.
const COMPLETE_HELP: &str = "\
Examples:
  mcp complete URL --prompt greet --arg name=Al
  mcp complete URL --resource-template 'res://items/{id}' --arg id=1
  mcp complete URL --prompt travel --arg country=France --arg city=Pa

The last --arg is the one completed (its value is what is typed so far, possibly empty: \
--arg name=); the ones before it are sent as the context, the arguments already filled in \
(2025-06-18 and later). The values are printed one per line (at most 100; a note on stderr \
says how many more the server has); --json prints the server's whole completion object.";

/// `mcp complete`.
#[derive(Debug, Args)]
pub(crate) struct CompleteArgs {
    #[command(flatten)]
    pub(crate) rest: Rest,
    /// The prompt whose argument is completed
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with = "resource_template",
        required_unless_present = "resource_template"
    )]
    pub(crate) prompt: Option<String>,
    /// The resource template whose variable is completed: its URI template as listed by
    /// `mcp resources` (e.g. res://items/{id})
    #[arg(long, value_name = "URI")]
    pub(crate) resource_template: Option<String>,
    /// NAME=VALUE: the argument to complete and what is typed so far (repeatable: the last is
    /// completed, the ones before it are the context)
    #[arg(long = "arg", value_name = "NAME=VALUE", required = true)]
    pub(crate) args: Vec<String>,
}

/// `mcp call`.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    #[command(flatten)]
    pub(crate) rest: Rest,
    /// The arguments as a JSON object: `-` reads it from stdin, @FILE from a file, anything
    /// else is the JSON text itself; merged with the KEY=VALUE words (a key given in both is
    /// an error). Files and stdin are read up to 64 MiB in all
    #[arg(long, value_name = "JSON | - | @FILE", allow_hyphen_values = true)]
    pub(crate) args_json: Option<String>,
}

/// `mcp listen`.
#[derive(Debug, Args)]
pub(crate) struct ListenArgs {
    #[command(flatten)]
    pub(crate) rest: Rest,
    /// Also subscribe to updates of this resource (repeatable)
    #[arg(long = "resource", value_name = "URI")]
    pub(crate) resources: Vec<String>,
    /// Stop after this many notifications (default: until interrupted or the server ends it)
    #[arg(long, value_name = "N")]
    pub(crate) count: Option<u64>,
    /// After losing an HTTP server, keep trying to reconnect (and subscribe again) for this many
    /// seconds before giving up with exit code 3; 0 gives up at once. A stdio server that exits
    /// is not restarted
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub(crate) reconnect_for: u64,
}

/// `mcp console`.
#[derive(Debug, Args)]
pub(crate) struct ConsoleArgs {
    #[command(flatten)]
    pub(crate) rest: Rest,
    /// Only print the console's URL; do not open a browser (--no-browser also does this, and
    /// makes a login print its address and take back the address the browser was sent to)
    #[arg(long)]
    pub(crate) no_open: bool,
    /// UNSAFE: let the page run any command as a stdio server, not only those given with
    /// --stdio. Whoever obtains the console's token can then run any command as you
    #[arg(long)]
    pub(crate) allow_any_stdio: bool,
    /// Actions of the page running at once (calls waiting for an answer, connections
    /// logging in, lens openings); more are refused until one ends
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub(crate) max_actions: usize,
    /// The port to listen on, on 127.0.0.1 (default: a free port)
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub(crate) port: u16,
    /// MCP connections open at once (the revision lens takes one per revision)
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub(crate) max_connections: usize,
    /// Events kept for the page (protocol messages, notifications, questions)
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub(crate) max_events: usize,
    /// Bytes of events kept (their JSON text)
    #[arg(long, value_name = "BYTES", default_value_t = 32 * 1024 * 1024)]
    pub(crate) max_event_bytes: usize,
    /// Questions from servers waiting for an answer at once; more are cancelled
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub(crate) max_asks: usize,
    /// The time limit of each MCP request the console makes, in seconds, answering the
    /// server's questions in the page included (the console ignores --timeout)
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub(crate) request_timeout: f64,
    /// Listeners (list changes, resource subscriptions) at once
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub(crate) max_listeners: usize,
    /// HTTP connections from browsers at once; more are closed
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub(crate) max_http_connections: usize,
    /// The largest request the page may send to the console, in bytes (a tool call's
    /// arguments, a resource to read); a larger one is refused (413) with a message naming
    /// this limit and flag. Default 4 MiB
    #[arg(long, value_name = "BYTES", default_value_t = 4 * 1024 * 1024)]
    pub(crate) max_body: usize,
}
