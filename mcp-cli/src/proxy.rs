//! `mcp proxy`: the upstream reached as every command reaches a server, served again by the
//! gateway on every revision and transport.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use mcp_gateway::{DownstreamAuth, Gateway, GatewayError, QuestionRelay, ToolSchemas};

use crate::cli::{Global, ProxyArgs};
use crate::connect::Session;
use crate::error::CliError;

/// Connects upstream, starts the gateway and serves until Ctrl-C (HTTP) or stdin closes
/// (`--stdio-front`).
pub(crate) async fn run(global: &Global, args: Box<ProxyArgs>) -> Result<(), CliError> {
    let mut words = Vec::new();
    match (&args.upstream, global.stdio.is_empty()) {
        (Some(_), false) => {
            return Err(CliError::Usage(
                "give the upstream as --upstream URL or --stdio CMD, not both".into(),
            ));
        }
        (None, true) => {
            return Err(CliError::Usage(
                "mcp proxy needs the upstream: --upstream URL or --stdio CMD".into(),
            ));
        }
        (Some(url), true) => words.push(url.clone()),
        (None, false) => {}
    }
    if args.stdio_front && global.interactive {
        return Err(CliError::Usage(
            "--stdio-front speaks MCP on stdin, so --interactive cannot prompt on it".into(),
        ));
    }
    let mut tool_scopes = Vec::new();
    for given in &args.tool_scope {
        match given.split_once('=') {
            Some((tool, scope)) if !tool.is_empty() && !scope.is_empty() => {
                tool_scopes.push((tool.to_owned(), scope.to_owned()));
            }
            _ => {
                return Err(CliError::Usage(format!(
                    "--tool-scope {given:?} is not TOOL=SCOPE"
                )));
            }
        }
    }
    // A child per downstream session: a stdio upstream served over HTTP.
    let per_session = !global.stdio.is_empty() && !args.stdio_front;
    if args.max_children < 2 {
        return Err(CliError::Usage(
            "--max-children must be at least 2: the first child and one session's".into(),
        ));
    }
    let child_idle = Duration::try_from_secs_f64(args.child_idle)
        .ok()
        .filter(|idle| !idle.is_zero())
        .ok_or_else(|| {
            CliError::Usage("--child-idle must be a positive number of seconds".into())
        })?;
    #[cfg(not(feature = "metrics"))]
    if let Some(addr) = &args.metrics {
        return Err(CliError::Usage(format!(
            "--metrics {addr}: mcp was built without the `metrics` feature (a default feature): \
             install it with the default features"
        )));
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(
            mcp_gateway::Tls::from_pem_files(cert, key)
                .map_err(|e| CliError::Usage(format!("--tls-cert {cert} --tls-key {key}: {e}")))?,
        ),
        _ => None,
    };
    if !args.stdio_front && args.auth_issuer.is_none() && !args.unsafe_unauthenticated {
        refuse_open_listener(&args.addr).await?;
    }
    let hub = mcp_gateway::connect_hub(&args.hub)
        .await
        .map_err(|e| CliError::Usage(format!("--hub {}: {e}", args.hub)))?;
    let session = Arc::new(Session::new(global, &mut words)?);
    // The upstream's questions go to the downstream client whose call caused them.
    let relay = QuestionRelay::new();
    let connecting = session.connect_configured(|builder| upstream_builder(&relay, builder));
    let upstream = match tokio::time::timeout(session.timeout, connecting).await {
        Ok(connected) => connected?,
        Err(_) => return Err(session.deadline_passed("connecting")),
    };
    let mut builder = Gateway::builder()
        .question_relay(relay)
        .max_upstream_calls(args.max_upstream_calls)
        .max_upstream_subscriptions(args.max_upstream_subscriptions)
        .call_timeout(session.timeout);
    for (tool, scope) in &tool_scopes {
        builder = builder.tool_scopes(tool, [scope]);
    }
    if args.native_schemas {
        builder = builder.tool_schemas(ToolSchemas::Native);
    }
    if let Some(messages) = args.max_queued_messages {
        builder = builder.max_queued_messages(messages);
    }
    if let Some(hub) = hub {
        builder = builder.hub(hub);
    }
    #[cfg(feature = "metrics")]
    let metrics = args.metrics.as_ref().map(|_| mcp_gateway::Metrics::new());
    #[cfg(feature = "metrics")]
    if let Some(metrics) = &metrics {
        builder = builder.metrics(metrics);
    }
    let gateway = if per_session {
        let session = session.clone();
        let connect = move |relay: QuestionRelay| {
            let session = session.clone();
            async move {
                let connecting =
                    session.connect_configured(|builder| upstream_builder(&relay, builder));
                match tokio::time::timeout(session.timeout, connecting).await {
                    Ok(connected) => connected.map_err(|e| e.to_string()),
                    Err(_) => Err(format!("no answer within {:?}", session.timeout)),
                }
            }
        };
        builder
            .max_children(args.max_children)
            .child_idle(child_idle)
            .start_per_session(upstream, connect)
            .await
    } else {
        builder.start(upstream).await
    }
    .map_err(proxy_error)?;
    for skipped in gateway.skipped() {
        session.ui.note(&format!(
            "not served: {} {:?}: {}",
            skipped.kind, skipped.name, skipped.reason
        ));
    }
    // Scraped until the MCP endpoint stopped.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    let (metrics_stop, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
    let served = if args.stdio_front {
        gateway.serve_stdio().await
    } else {
        #[cfg_attr(not(feature = "metrics"), allow(unused_mut))]
        let mut metrics_line: Option<String> = None;
        #[cfg(feature = "metrics")]
        if let (Some(addr), Some(metrics)) = (&args.metrics, metrics) {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| CliError::Proxy(format!("--metrics: cannot listen on {addr}: {e}")))?;
            let bound = listener
                .local_addr()
                .map_err(|e| CliError::Proxy(e.to_string()))?;
            metrics_line = Some(format!("mcp proxy metrics on http://{bound}/metrics"));
            tokio::spawn(mcp_gateway::serve_metrics(listener, metrics, async move {
                let _ = metrics_stopped.await;
            }));
        }
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .map_err(|e| CliError::Proxy(format!("cannot listen on {}: {e}", args.addr)))?;
        let bound = listener
            .local_addr()
            .map_err(|e| CliError::Proxy(e.to_string()))?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let mut stdout = std::io::stdout();
        writeln!(
            stdout,
            "mcp proxy listening on {scheme}://{bound}/mcp (Streamable HTTP) and {scheme}://{bound}/sse (HTTP+SSE)"
        )?;
        if let Some(line) = metrics_line {
            writeln!(stdout, "{line}")?;
        }
        stdout.flush()?;
        let stop = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        match (tls, downstream_auth(&args, bound, scheme)) {
            (Some(tls), Some(auth)) => {
                let config = auth.http_config().map_err(proxy_error)?;
                gateway.serve_https_with(listener, config, tls, stop).await
            }
            (Some(tls), None) => {
                gateway
                    .serve_https_with(listener, Default::default(), tls, stop)
                    .await
            }
            (None, Some(auth)) => gateway.serve_http_protected(listener, &auth, stop).await,
            (None, None) => gateway.serve_http(listener, stop).await,
        }
    };
    drop(metrics_stop);
    served.map_err(proxy_error)?;
    gateway.close().await.map_err(proxy_error)
}

/// Refuses to serve an unprotected proxy where others can reach it: every downstream client
/// would call the upstream with this proxy's credentials (its kept OAuth tokens, its headers).
/// A loopback `--addr` (a literal address, or a name that resolves only to loopback
/// addresses) is served; anything else needs `--auth-issuer` or `--unsafe-unauthenticated`.
async fn refuse_open_listener(addr: &str) -> Result<(), CliError> {
    let resolved: Vec<std::net::SocketAddr> = match tokio::net::lookup_host(addr).await {
        Ok(found) => found.collect(),
        Err(e) => return Err(CliError::Usage(format!("--addr {addr}: {e}"))),
    };
    if !resolved.is_empty() && resolved.iter().all(|a| a.ip().is_loopback()) {
        return Ok(());
    }
    Err(CliError::Usage(format!(
        "--addr {addr} is reachable from other hosts, and every client there would call the \
         upstream with this proxy's credentials: protect it with --auth-issuer (and \
         --auth-jwks-uri), listen on 127.0.0.1, or pass --unsafe-unauthenticated"
    )))
}

/// The downstream protection `--auth-issuer` asks for, for the endpoint bound at `bound` and
/// served with `scheme`.
fn downstream_auth(
    args: &ProxyArgs,
    bound: std::net::SocketAddr,
    scheme: &str,
) -> Option<DownstreamAuth> {
    let issuer = args.auth_issuer.as_ref()?;
    let jwks = args.auth_jwks_uri.clone().unwrap_or_default();
    let resource = args
        .auth_resource
        .clone()
        .unwrap_or_else(|| format!("{scheme}://{bound}/mcp"));
    Some(DownstreamAuth::jwt(resource, issuer, jwks).required_scopes(args.auth_scope.clone()))
}

fn proxy_error(error: GatewayError) -> CliError {
    match error {
        GatewayError::Upstream { doing, source } => CliError::Request {
            what: format!("upstream {doing}"),
            source,
        },
        other => CliError::Proxy(other.to_string()),
    }
}

/// The upstream client's builder: questions relayed to the downstream clients, and the tasks
/// the upstream answers with followed as the downstream client's (the questions a task asks
/// at once put to the downstream client together, as its own task shows them).
fn upstream_builder(
    relay: &QuestionRelay,
    builder: mcp_client::ClientBuilder,
) -> mcp_client::ClientBuilder {
    relay
        .install(builder)
        .tasks(mcp_client::TaskPolling::new().answer_together(true))
}
