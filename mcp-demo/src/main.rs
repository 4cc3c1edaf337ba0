//! The demo MCP server over HTTP: Streamable HTTP at `/mcp` and HTTP+SSE at `/sse`.
//!
//! ```text
//! mcp-demo [--addr HOST:PORT] [--public-url URL] [--allowed-host NAME]... [--trusted-proxy ADDR]... [--hub memory|redis://…|postgres://…|sqlite:PATH] [--print-schema] [--tls-cert PEM --tls-key PEM] [--auth [--auth-auto-approve] [--auth-client ID=REDIRECT]... [--auth-client-file FILE] [--auth-allow-private-addresses] [--auth-allow-remote]] [--log-format text|json] [--otlp-endpoint URL] [--metrics HOST:PORT] [--drain-period SECS] [--rate-limit NAME=COUNT/PERIOD]... [--version] [--help]
//! ```
//!
//! Listens on `127.0.0.1:8080` by default and prints `mcp-demo listening on http://HOST:PORT`
//! (the bound port, so `--addr 127.0.0.1:0` works) as its first line on stdout. The in-memory
//! hub holds sessions unless `--hub` (or the `MCP_DEMO_HUB` environment variable) names another:
//! `redis://…` (several processes share sessions; `--redis URL` and `MCP_DEMO_REDIS` are
//! aliases), `postgres://…` (the same on PostgreSQL; tables `mcp_*` created on start), or
//! `sqlite:PATH` (one file: sessions survive a restart, processes of one machine share them;
//! `sqlite:` without a path is refused). `--print-schema` prints the PostgreSQL tables' SQL for
//! a DBA and exits. Stops on Ctrl-C or SIGTERM. `--version` prints the version, `--help` every
//! flag with its default and the environment variables read.
//!
//! `--public-url URL` (or `MCP_DEMO_PUBLIC_URL`) is the origin clients reach the demo at, when
//! it is not the bound address (behind a load balancer, in a container): `--auth`'s issuer,
//! resource and metadata URLs are made from it, so every worker behind one name issues and
//! accepts the same tokens, and its host is allowed by the `Host` check (against DNS
//! rebinding). `--allowed-host NAME` allows another `Host` (repeatable; `NAME` or
//! `NAME:PORT`, with `*` wildcards as `HttpConfig::allowed_host`). Once a host is allowed this
//! way, every other host is refused with 403, except localhost names on a loopback address.
//!
//! `--auth` protects `/mcp` and `/sse` with an OAuth 2.1 resource server and serves the
//! development authorization server on the same address (issuer `--public-url`, else
//! `http://HOST:PORT` of the bound address): every request needs `mcp:read`, `deploy` needs
//! `mcp:deploy` too, so step-up can be tried by hand. Its clients, codes, refresh tokens and
//! signing key live in the hub, so workers sharing a hub (and a `--public-url`) verify each
//! other's tokens.
//! Its consent page approves for `demo-user`; `--auth-auto-approve` skips it (for tests).
//! `--auth-client ID=REDIRECT` registers a public client ahead of time (repeatable);
//! `--auth-client-file FILE` registers the clients of FILE, one `ID[:SECRET]=REDIRECT` a line
//! (`#` starts a comment): a client with a secret is confidential and may use
//! `client_credentials`. Secrets are read from the file only, never from the command line,
//! where other local users can read them. Unsafe development flags:
//! `--auth-allow-private-addresses` lets client ID metadata documents be fetched from
//! loopback and private addresses (a local test of one), and `--auth-allow-remote` serves
//! `--auth` on an address that is not loopback (anyone who reaches it can approve requests
//! as `demo-user`: without the flag the demo refuses to start).
//!
//! `--metrics HOST:PORT` (the `metrics` feature, a default feature) serves Prometheus metrics
//! at `http://HOST:PORT/metrics` and prints that URL as the second line. `RUST_LOG` sets what
//! is logged to stderr (default `info` for the MCP crates; `RUST_LOG=mcp_server=debug` adds a
//! span per request) and `--log-format json` writes JSON lines (the `demo-logging` feature,
//! part of the default `demo` feature).
//!
//! The worker answers `GET /healthz` (alive) and `GET /readyz` (the hub answers and the worker
//! is not draining) for load balancers. On SIGTERM or Ctrl-C it drains: `/readyz` answers 503
//! at once while it keeps serving for `--drain-period SECS` (default 5), then it stops
//! accepting, lets calls finish and exits. Start and stop each log one line naming the
//! address, the hub (without credentials) and the authorization server.
//!
//! `--tls-cert` and `--tls-key` (PEM files) serve HTTPS instead, HTTP/2 and HTTP/1.1 by ALPN;
//! the first line then names an `https://` URL.

// The demo registry is shared with mcp-server's `mcp-stdio-demo` (this crate is not published).
include!("../../mcp-server/src/bin/demo/registry.rs");

use std::io::Write as _;
use std::sync::Arc;

use mcp_dev_auth::{DevAuthorizationServer, DevClient};
use mcp_server::auth::ResourceServer;
use mcp_server::http::{
    HttpConfig, HttpEndpoint, Tls, serve_tls_with_shutdown, serve_with_shutdown, shutdown_signal,
};

struct Options {
    addr: String,
    /// `--public-url`: the origin clients use, without a trailing `/`.
    public_url: Option<String>,
    /// `--allowed-host` (repeatable).
    allowed_hosts: Vec<String>,
    /// `--trusted-proxy` (repeatable): whose `Forwarded` / `X-Forwarded-For` name the client.
    trusted_proxies: Vec<mcp_server::http::TrustedProxy>,
    hub: Option<String>,
    auth: bool,
    auto_approve: bool,
    clients: Vec<DevClient>,
    /// `--auth-allow-private-addresses` (unsafe).
    allow_private_addresses: bool,
    /// `--auth-allow-remote` (unsafe).
    allow_remote: bool,
    tls_cert: Option<String>,
    tls_key: Option<String>,
    log_format: LogFormat,
    /// `--otlp-endpoint URL`: where request spans are exported (feature `otel`).
    export: Export,
    /// `--metrics ADDR`: where `GET /metrics` is served (feature `metrics`).
    metrics: Option<String>,
    /// `--drain-period SECS`: how long the worker keeps serving, not ready, after SIGTERM.
    drain_period: std::time::Duration,
    /// `--rate-limit NAME=COUNT/PERIOD` (repeatable).
    rate_limits: Vec<mcp_server::RateLimit>,
}

/// The default `--drain-period`: 5 s.
const DRAIN_PERIOD: std::time::Duration = std::time::Duration::from_secs(5);

/// What the log calls the hub `spec` names: the URL without its user, password and query
/// (which may hold credentials).
fn hub_label(spec: &str) -> String {
    let Some((scheme, rest)) = spec.split_once("://") else {
        return spec.to_owned();
    };
    // Everything up to the last `@` may be a user and password (even one with a `/` that
    // was not percent-encoded): dropped whole.
    let rest = rest.rsplit_once('@').map_or(rest, |(_, after)| after);
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    format!("{scheme}://{rest}")
}

include!("../../mcp-server/src/bin/demo/logging.rs");

/// `ID[:SECRET]=REDIRECT` (a secret only when `secret_allowed`: read from a file).
fn client(spec: &str, secret_allowed: bool) -> Result<DevClient, String> {
    let (credentials, redirect) = spec
        .split_once('=')
        .ok_or("a client is ID[:SECRET]=REDIRECT")?;
    let (id, secret) = match credentials.split_once(':') {
        Some(_) if !secret_allowed => {
            return Err("--auth-client takes no secret: the command line is readable by other                         local users. Put ID:SECRET=REDIRECT in a file (mode 0600) and pass                         --auth-client-file FILE"
                .into());
        }
        Some((id, secret)) => (id, Some(secret.to_owned())),
        None => (credentials, None),
    };
    if id.is_empty() || secret.as_deref() == Some("") {
        return Err("a client is ID[:SECRET]=REDIRECT with a non-empty ID (and SECRET)".into());
    }
    Ok(DevClient {
        client_id: id.to_owned(),
        client_secret: secret,
        redirect_uris: vec![redirect.to_owned()],
    })
}

/// The clients of `--auth-client-file`: one `ID[:SECRET]=REDIRECT` a line.
fn client_file(path: &str) -> Result<Vec<DevClient>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--auth-client-file {path}: {e}"))?;
    text.lines()
        .map(str::trim)
        .enumerate()
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(|(n, line)| client(line, true).map_err(|e| format!("{path}:{}: {e}", n + 1)))
        .collect()
}

/// The resource server and development authorization server of `--auth`, at `base`.
fn protection(
    base: &str,
    options: &Options,
    store: Arc<dyn mcp_hub::StateStore>,
) -> Result<HttpConfig, String> {
    let scopes = ["mcp:read", "mcp:deploy"];
    let mut dev = DevAuthorizationServer::builder(base)
        .store(store)
        .scopes(scopes)
        .resources([format!("{base}/mcp"), format!("{base}/sse")])
        .auto_approve(options.auto_approve)
        .allow_private_addresses(options.allow_private_addresses);
    for client in &options.clients {
        dev = dev.client(client.clone());
    }
    let dev = dev.build();
    let auth = ResourceServer::builder(format!("{base}/mcp"), base)
        .scopes_supported(scopes)
        .required_scopes(["mcp:read"])
        .resource_name("mcp-demo")
        .verifier(dev.clone())
        .build()
        .map_err(|e| e.to_string())?;
    Ok(HttpConfig::default().auth(auth).routes(dev))
}

/// The environment variable `name`, when set and not empty.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `--help`.
const HELP: &str = "\
mcp-demo: the demo MCP server over HTTP (Streamable HTTP at /mcp, HTTP+SSE at /sse)

usage: mcp-demo [OPTIONS]

  --addr HOST:PORT          where to listen [default: 127.0.0.1:8080; port 0 picks one]
  --public-url URL          the origin clients reach this server at (behind a load balancer):
                            --auth's issuer and resource come from it, and its host is
                            allowed by the Host check [default: the bound address;
                            env MCP_DEMO_PUBLIC_URL]
  --allowed-host NAME       also accept this Host header (NAME or NAME:PORT, * wildcards;
                            repeatable) [default: any host, only localhost names when
                            listening on loopback]
  --trusted-proxy ADDR      a load balancer or proxy (an address or CIDR; repeatable) whose
                            Forwarded / X-Forwarded-For header names the client, for the
                            per-client session quota [default: none: the peer is the client]
  --hub URL                 where sessions, request state and cross-worker messages live:
                            memory, redis://HOST:PORT, postgres://USER@HOST/DB, sqlite:PATH
                            [default: memory; env MCP_DEMO_HUB]
  --redis URL               alias of --hub [env MCP_DEMO_REDIS]
  --print-schema            print the PostgreSQL tables' SQL and exit
  --tls-cert PEM            serve HTTPS with this certificate chain (with --tls-key)
  --tls-key PEM             the certificate's private key (with --tls-cert)
  --auth                    protect /mcp and /sse with OAuth 2.1 and serve the development
                            authorization server on the same address [default: off]
  --auth-auto-approve       approve every authorization request without the consent page
  --auth-client ID=REDIRECT register a public client (repeatable)
  --auth-client-file FILE   register the clients of FILE, one ID[:SECRET]=REDIRECT a line
  --auth-allow-private-addresses
                            fetch client ID metadata documents from private addresses (unsafe)
  --auth-allow-remote       allow --auth on an address that is not loopback (unsafe)
  --log-format text|json    the log lines' format on stderr [default: text]
  --otlp-endpoint URL       export request spans over OTLP/HTTP to this collector (spans go
                            to URL/v1/traces; https://, or http:// to a loopback host)
                            [default: off, or env OTEL_EXPORTER_OTLP_ENDPOINT]
  --metrics HOST:PORT       serve Prometheus metrics at http://HOST:PORT/metrics
                            [default: off; needs the `metrics` feature, a default feature]
  --drain-period SECS       on SIGTERM or Ctrl-C, answer /readyz with 503 and keep serving
                            this long before stopping [default: 5]
  --rate-limit NAME=COUNT/PERIOD
                            allow COUNT calls per PERIOD (10s, 1m, 1h) per principal, or per
                            client address when anonymous, shared by every worker on the hub;
                            NAME is a method (tools/call, initialize), a tool (deploy) or *
                            (repeatable) [default: none]
  --version                 print the version and exit
  -h, --help                print this help and exit

environment:
  RUST_LOG                  what is logged to stderr [default: warn,mcp_server=info,mcp_hub=info]
  MCP_DEMO_HUB              as --hub
  MCP_DEMO_REDIS            as --redis
  MCP_DEMO_PUBLIC_URL       as --public-url
  OTEL_EXPORTER_OTLP_ENDPOINT
                            as --otlp-endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the
                            whole traces URL)
";

/// The origin of `--public-url`: `http` or `https`, a host, an optional port, no path (or
/// `/`), no query, fragment or user information.
fn public_url(text: &str) -> Result<String, String> {
    let bad = |why: &str| format!("--public-url {text:?}: {why}");
    let url = url::Url::parse(text).map_err(|e| bad(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("a host is needed"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("no user information"));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(bad(
            "an origin only (scheme://host[:port]): the demo serves /mcp and /sse under it",
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// The host of an origin made by [`public_url`] (IPv6 in brackets, no port).
fn public_host(origin: &str) -> Option<String> {
    let url = url::Url::parse(origin).ok()?;
    match url.host()? {
        url::Host::Ipv6(ip) => Some(format!("[{ip}]")),
        host => Some(host.to_string()),
    }
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        addr: "127.0.0.1:8080".to_owned(),
        public_url: None,
        allowed_hosts: Vec::new(),
        trusted_proxies: Vec::new(),
        hub: env("MCP_DEMO_HUB").or_else(|| env("MCP_DEMO_REDIS")),
        auth: false,
        auto_approve: false,
        clients: Vec::new(),
        allow_private_addresses: false,
        allow_remote: false,
        tls_cert: None,
        tls_key: None,
        log_format: LogFormat::Text,
        export: Export::default(),
        metrics: None,
        drain_period: DRAIN_PERIOD,
        rate_limits: Vec::new(),
    };
    let mut public = env("MCP_DEMO_PUBLIC_URL");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => options.addr = args.next().ok_or("--addr needs HOST:PORT")?,
            "--public-url" => public = Some(args.next().ok_or("--public-url needs a URL")?),
            "--allowed-host" => options
                .allowed_hosts
                .push(args.next().ok_or("--allowed-host needs a NAME")?),
            "--trusted-proxy" => {
                let proxy = args
                    .next()
                    .ok_or("--trusted-proxy needs an ADDRESS or CIDR")?;
                options.trusted_proxies.push(
                    proxy
                        .parse()
                        .map_err(|e| format!("--trusted-proxy {proxy}: {e}"))?,
                );
            }
            "--rate-limit" => {
                let spec = args.next().ok_or("--rate-limit needs NAME=COUNT/PERIOD")?;
                options.rate_limits.push(
                    mcp_server::RateLimit::parse(&spec)
                        .map_err(|e| format!("--rate-limit {spec}: {e}"))?,
                );
            }
            "--hub" => options.hub = Some(args.next().ok_or("--hub needs memory or a URL")?),
            "--redis" => options.hub = Some(args.next().ok_or("--redis needs a URL")?),
            "--print-schema" => {
                print_schema()?;
                std::process::exit(0);
            }
            "--auth" => options.auth = true,
            "--tls-cert" => {
                options.tls_cert = Some(args.next().ok_or("--tls-cert needs a PEM file")?)
            }
            "--tls-key" => options.tls_key = Some(args.next().ok_or("--tls-key needs a PEM file")?),
            "--auth-auto-approve" => options.auto_approve = true,
            "--otlp-endpoint" => {
                options.export.endpoint = Some(args.next().ok_or("--otlp-endpoint needs a URL")?);
            }
            "--metrics" => {
                options.metrics = Some(args.next().ok_or("--metrics needs HOST:PORT")?);
            }
            "--drain-period" => {
                let secs = args.next().ok_or("--drain-period needs SECS")?;
                options.drain_period = secs
                    .parse::<f64>()
                    .ok()
                    .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
                    .ok_or_else(|| format!("--drain-period needs SECS (a number), not {secs:?}"))?;
            }
            "--log-format" => {
                options.log_format =
                    LogFormat::parse(&args.next().ok_or("--log-format needs text or json")?)?;
            }
            "--auth-client" => options.clients.push(client(
                &args.next().ok_or("--auth-client needs ID=REDIRECT")?,
                false,
            )?),
            "--auth-client-file" => options.clients.extend(client_file(
                &args.next().ok_or("--auth-client-file needs a FILE")?,
            )?),
            "--auth-allow-private-addresses" => options.allow_private_addresses = true,
            "--auth-allow-remote" => options.allow_remote = true,
            "-V" | "--version" => {
                println!("mcp-demo {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            "-h" | "--help" => {
                print!("{HELP}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    options.public_url = public.as_deref().map(public_url).transpose()?;
    if let Some(hub) = &options.hub {
        check_hub(hub)?;
    }
    Ok(options)
}

/// Refuses a `--hub` that would quietly not do what it says: `sqlite:` without a path (SQLite
/// would open a temporary database that vanishes with the process).
fn check_hub(spec: &str) -> Result<(), String> {
    match spec.strip_prefix("sqlite:") {
        Some(path) if path.trim().is_empty() => Err(format!(
            "--hub {spec:?}: sqlite: needs a file path, say sqlite:mcp-demo.db (a path-less \
             SQLite database is temporary: sessions would not survive or be shared)"
        )),
        _ => Ok(()),
    }
}

/// An error with every cause below it (`a: b: c`), skipping a cause its parent already says.
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// The TLS configuration of `--tls-cert` and `--tls-key`; an error names the flag and the file.
fn tls(cert: &str, key: &str) -> Result<Tls, String> {
    use rustls::pki_types::pem::{self, PemObject as _};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| match e {
            pem::Error::Io(e) => format!("cannot read {cert} (--tls-cert): {e}"),
            e => format!("{cert} (--tls-cert) is not a PEM certificate chain: {e}"),
        })?;
    if chain.is_empty() {
        return Err(format!("no certificate in {cert} (--tls-cert)"));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| match e {
        pem::Error::NoItemsFound => format!("no private key in {key} (--tls-key)"),
        pem::Error::Io(e) => format!("cannot read {key} (--tls-key): {e}"),
        e => format!("{key} (--tls-key) is not a PEM private key: {e}"),
    })?;
    Tls::from_der(chain, private).map_err(|e| {
        format!("the key in {key} (--tls-key) does not serve the certificate in {cert} (--tls-cert): {e}")
    })
}

/// `--print-schema`: the PostgreSQL tables under the default prefix.
fn print_schema() -> Result<(), String> {
    #[cfg(feature = "postgres")]
    {
        let sql = mcp_hub::PostgresConfig::new()
            .schema_sql()
            .map_err(|e| e.to_string())?;
        print!("{sql}");
        Ok(())
    }
    #[cfg(not(feature = "postgres"))]
    Err(
        "built without the `postgres` feature: build with the default features \
         (cargo run -p everymcp-demo), or --features demo"
            .into(),
    )
}

/// The hub `--hub` names: `None` for the in-memory one.
async fn connect_hub(spec: &str) -> Result<Option<Arc<dyn mcp_hub::Hub>>, String> {
    if spec == "memory" {
        return Ok(None);
    }
    mcp_hub::connect(spec).await.map(Some).map_err(|e| match e {
        mcp_hub::ConnectError::NotBuilt { .. } => format!(
            "{e}: build with the default features (cargo run -p everymcp-demo), or --features demo"
        ),
        e => with_causes(&e),
    })
}

async fn run(options: Options) -> Result<(), String> {
    let _telemetry = init_logging(
        options.log_format,
        "warn,mcp_server=info,mcp_hub=info",
        "mcp-demo",
        &options.export,
    )?;
    let hub = match &options.hub {
        Some(spec) => connect_hub(spec).await?,
        None => None,
    };
    let store: Arc<dyn mcp_hub::StateStore> = match &hub {
        Some(hub) => hub.clone(),
        None => Arc::new(mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default())),
    };
    #[cfg(feature = "metrics")]
    let metrics = mcp_server::Metrics::new();
    let rate_limits = options.rate_limits.clone();
    let server = build_demo("mcp-demo", |builder| {
        let builder = rate_limits
            .into_iter()
            .fold(builder, ServerBuilder::rate_limit);
        #[cfg(feature = "metrics")]
        let builder = if options.metrics.is_some() {
            builder.metrics(&metrics)
        } else {
            builder
        };
        match hub {
            Some(hub) => builder.state_store(hub.clone()).event_log(hub),
            None => builder,
        }
    })
    .map_err(|e| e.to_string())?;
    // Printed after the first line (which names the MCP endpoint).
    #[cfg_attr(not(feature = "metrics"), allow(unused_mut))]
    let mut metrics_line: Option<String> = None;
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    let (metrics_stop, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
    if let Some(addr) = &options.metrics {
        #[cfg(feature = "metrics")]
        {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| format!("--metrics: cannot listen on {addr}: {e}"))?;
            let bound = listener.local_addr().map_err(|e| e.to_string())?;
            metrics_line = Some(format!("mcp-demo metrics on http://{bound}/metrics"));
            // Scraped until the MCP endpoint stopped (through its drain period too).
            tokio::spawn(mcp_server::http::serve_metrics(
                listener,
                metrics.clone(),
                async move {
                    let _ = metrics_stopped.await;
                },
            ));
        }
        #[cfg(not(feature = "metrics"))]
        return Err(format!(
            "--metrics {addr}: mcp-demo was built without the `metrics` feature: build with the \
             default features (cargo run -p everymcp-demo), or --features demo,metrics"
        ));
    }
    let listener = tokio::net::TcpListener::bind(&options.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    if options.auth && !bound.ip().is_loopback() && !options.allow_remote {
        return Err(format!(
            "--auth on {bound}, which is not a loopback address: the development authorization \
             server authenticates no user, so anyone who reaches it could approve requests. \
             Listen on 127.0.0.1, or pass --auth-allow-remote (unsafe) to do it anyway"
        ));
    }
    let tls = match (&options.tls_cert, &options.tls_key) {
        (Some(cert), Some(key)) => Some(tls(cert, key)?),
        (None, None) => None,
        _ => return Err("--tls-cert and --tls-key go together".into()),
    };
    let listening = match tls {
        Some(_) => format!("https://{bound}"),
        None => format!("http://{bound}"),
    };
    // The origin clients use: the issuer and resource of --auth are made from it.
    let base = options
        .public_url
        .clone()
        .unwrap_or_else(|| listening.clone());
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "mcp-demo listening on {listening}");
    if let Some(line) = metrics_line {
        let _ = writeln!(stdout, "{line}");
    }
    let _ = stdout.flush();
    let mut config = if options.auth {
        protection(&base, &options, store)?
    } else {
        HttpConfig::default()
    };
    if let Some(public) = &options.public_url {
        if let Some(host) = public_host(public) {
            config = config.allowed_host(&host);
        }
        config = config.allowed_origin(public);
    }
    for host in &options.allowed_hosts {
        config = config.allowed_host(host);
    }
    config = config.trusted_proxies(options.trusted_proxies.iter().copied());
    let config = config
        .drain_period(options.drain_period)
        .hub_label(hub_label(options.hub.as_deref().unwrap_or("memory")));
    let endpoint = HttpEndpoint::new(server, config);
    // SIGTERM or Ctrl-C: not ready, serve for the drain period, then stop.
    let served = match tls {
        Some(tls) => serve_tls_with_shutdown(listener, endpoint, tls, shutdown_signal()).await,
        None => serve_with_shutdown(listener, endpoint, shutdown_signal()).await,
    };
    drop(metrics_stop);
    served.map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() {
    let result = match options() {
        Ok(options) => run(options).await,
        Err(err) => Err(err),
    };
    if let Err(err) = result {
        eprintln!("mcp-demo: {err}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::hub_label;

    #[test]
    fn the_hub_label_keeps_no_credentials() {
        assert_eq!(
            hub_label("redis://user:pa@ss@cache:6379/0?password=x"),
            "redis://cache:6379/0"
        );
        assert_eq!(
            hub_label("postgres://mcp:secret@db/mcp?sslmode=require"),
            "postgres://db/mcp"
        );
        assert_eq!(hub_label("rediss://cache:6380"), "rediss://cache:6380");
        assert_eq!(
            hub_label("sqlite:/var/lib/mcp.db"),
            "sqlite:/var/lib/mcp.db"
        );
        assert_eq!(hub_label("redis://u:p/w@cache"), "redis://cache");
        assert_eq!(hub_label("memory"), "memory");
    }
}
