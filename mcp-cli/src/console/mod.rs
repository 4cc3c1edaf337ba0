//! `mcp console`: a browser console on 127.0.0.1, backed by `mcp-client` in this process.
//!
//! The console listens on a random port of 127.0.0.1 and prints a URL carrying a random token
//! in its fragment (`http://127.0.0.1:PORT/#token=...`), which the browser never sends to a
//! server. The page (which holds no secret itself) keeps the token in the tab's
//! `sessionStorage`, clears it from the address bar and sends it in an `X-Mcp-Console-Token`
//! header with every API request: the only place the API takes it from (no cookie: cookies
//! are not isolated by port, so every server on 127.0.0.1 would get it). Every API request
//! must also carry a `Host` naming the console itself (against DNS rebinding) and no foreign
//! `Origin` or cross-site fetch metadata (against other pages driving it), else it is refused
//! with 403. The browser is opened on a launch file ([`launch`]), so the token is on no
//! command line. `stdio` connections run only the commands given with `--stdio CMD`, unless
//! `--allow-any-stdio` (unsafe) is given.
//!
//! The page (one embedded HTML file) calls a JSON API: `connect`, `list`, `call`,
//! `cancel-task`, `read`, `prompt`, `complete`, `log-level`, `answer`, `listen`, `unlisten`,
//! `lens`, `disconnect`, `login-address`. It posts them with `?async=1`: each is answered at
//! once with a job id and its result comes as a `result` event, so any number of calls waiting
//! for a question's answer hold no browser connection. It reads the events from one stream,
//! `GET /api/stream?after=SEQ` (server-sent events; `GET /api/events?after=SEQ` long polls
//! the same): every JSON-RPC message each client exchanges, notifications (progress, log
//! messages, list changes), the status of tasks the server runs calls as (the Tasks extension;
//! the page can cancel them), logins a server asks for, the server's questions, which wait for
//! an answer from a dialog in the page, and the results of its actions.
//!
//! Everything the console keeps is bounded ([`Limits`]).

mod api;
mod launch;
mod server;
mod state;

use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::args::split_command;
use crate::cli::{ConsoleArgs, Global, TransportChoice};
use crate::error::CliError;

/// The console's bounds; each is a command-line option (see `mcp console --help`).
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// MCP connections open at once (the revision lens takes one per revision). Default 16.
    pub(crate) max_connections: usize,
    /// Events kept for the page (protocol messages, notifications, questions). Default 5000.
    pub(crate) max_events: usize,
    /// Bytes of events kept (their JSON text); also bounds the results of the page's actions
    /// kept for `/api/result`. Default 32 MiB.
    pub(crate) max_event_bytes: usize,
    /// Questions waiting for the page at once; more are cancelled. Default 32.
    pub(crate) max_asks: usize,
    /// Listeners (list changes, resource subscriptions) at once. Default 16.
    pub(crate) max_listeners: usize,
    /// HTTP connections from the browser at once; more are closed. Default 64.
    pub(crate) max_http_connections: usize,
    /// Actions of the page running at once (`?async=1` jobs: calls waiting for their answer,
    /// connections logging in); more are refused (429) until one ends. Default 64.
    pub(crate) max_actions: usize,
    /// The largest request body the page may send to the console's API (`--max-body`), in
    /// bytes; a larger one is refused with 413, naming this limit and the flag. Default 4 MiB.
    pub(crate) max_body: usize,
    /// The client timeout of every MCP request, questions included (`--request-timeout`,
    /// default 300 s: a person answers them).
    pub(crate) timeout: Duration,
}

/// Runs the console until Ctrl-C.
pub(crate) async fn run(global: &Global, args: ConsoleArgs) -> Result<(), CliError> {
    let mut words = args.rest.words;
    let initial_url = if !words.is_empty() {
        Some(words.remove(0))
    } else {
        None
    };
    if let Some(extra) = words.first() {
        return Err(CliError::Usage(format!(
            "mcp console takes no argument {extra:?}"
        )));
    }
    let mut allowed = Vec::new();
    for command in &global.stdio {
        allowed.push(split_command(command)?);
    }
    let policy = state::StdioPolicy {
        allowed,
        any: args.allow_any_stdio,
    };
    let timeout = Duration::try_from_secs_f64(args.request_timeout)
        .ok()
        .filter(|t| !t.is_zero())
        .ok_or_else(|| {
            CliError::Usage("--request-timeout must be a positive number of seconds".into())
        })?;
    let limits = Limits {
        max_connections: args.max_connections.max(1),
        max_events: args.max_events.max(1),
        max_event_bytes: args.max_event_bytes.max(1024),
        max_asks: args.max_asks,
        max_listeners: args.max_listeners,
        max_http_connections: args.max_http_connections.max(2),
        max_actions: args.max_actions.max(1),
        max_body: args.max_body.max(1024),
        timeout,
    };
    let transport = match global.transport {
        TransportChoice::Auto => "auto",
        TransportChoice::Streamable => "streamable",
        TransportChoice::Sse => "sse",
    };
    let initial = json!({
        "url": initial_url,
        "stdio": global.stdio.first(),
        "revision": global.revision,
        "transport": transport,
        "logLevel": global.log_level,
        "headers": global.headers,
    });
    let listener = TcpListener::bind(("127.0.0.1", args.port))
        .await
        .map_err(|e| CliError::Usage(format!("cannot listen on 127.0.0.1: {e}")))?;
    let port = listener.local_addr()?.port();
    let token = new_token()?;
    // The token rides in the fragment, which the browser never sends to any server.
    let url = format!("http://127.0.0.1:{port}/#token={token}");
    println!("mcp console listening on {url}");
    eprintln!("mcp: open the URL above in a browser; Ctrl-C stops the console");
    // Kept until the console stops: the launch file is removed then.
    let _launch = if args.no_open || global.no_browser {
        None
    } else {
        match launch::Launch::write(&url) {
            Ok(launch) => {
                open_browser(launch.path());
                Some(launch)
            }
            Err(e) => {
                eprintln!("mcp: could not open a browser ({e}); open the URL yourself");
                None
            }
        }
    };
    let state = state::State::new(limits.clone(), initial, policy);
    let _ = state.net.set(net(global, &state)?);
    let guard = Arc::new(server::Guard { token, port });
    let slots = Arc::new(Semaphore::new(limits.max_http_connections));
    let serve = async {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            // At the limit the new connection is closed at once.
            let Ok(permit) = slots.clone().try_acquire_owned() else {
                drop(stream);
                continue;
            };
            let (state, guard) = (state.clone(), guard.clone());
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    server::handle(state.clone(), guard.clone(), request)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                drop(permit);
            });
        }
    };
    tokio::select! {
        () = serve => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    for connection in state.take_all() {
        let _ = tokio::time::timeout(Duration::from_secs(2), connection.client.close()).await;
    }
    eprintln!("mcp: console stopped");
    Ok(())
}

/// How the console's URL connections authorize and what they trust: the command line's token file, TLS settings
/// and client credentials; the login page opens from the console's page (a link it shows when
/// a server asks), and the browser comes back to the loopback redirect URI `mcp login` uses.
/// With `--auth-follow-redirect`, the console follows the redirect itself (tests, demos).
fn net(global: &Global, state: &Arc<state::State>) -> Result<state::Net, CliError> {
    let https = match &global.cacert {
        Some(path) => Some(
            mcp_client::transport::Https::new()
                .add_ca_file(path)
                .map_err(|e| CliError::Usage(format!("--cacert: {e}")))?,
        ),
        None => None,
    };
    let oauth = if crate::auth::follows_redirect(global) {
        crate::auth::config(global, https.as_ref(), true)?
    } else {
        let login = Login {
            state: Arc::downgrade(state),
            paste: global.no_browser,
        };
        crate::auth::configure(
            global,
            https.as_ref(),
            mcp_client::oauth::OAuthConfig::new(login).client_name("mcp-console"),
        )?
    };
    Ok(state::Net { oauth, https })
}

/// Takes the console's user through a login: the page shows the authorization address as a
/// link (event `authorize`), the console waits on the loopback redirect URI for the browser
/// (bounded by `--request-timeout`), then tells the page it is done (event `authorized`).
/// With `--no-browser` nothing listens on the redirect URI: the console prints the
/// authorization address on its terminal and shows it in the page, and the page takes back
/// the address the browser was sent to (event `authorize` with `paste`).
#[derive(Debug)]
struct Login {
    state: std::sync::Weak<state::State>,
    paste: bool,
}

impl mcp_client::oauth::RedirectHandler for Login {
    fn prepare<'a>(
        &'a self,
        redirect_uri: &'a str,
    ) -> mcp_client::transport::BoxFuture<'a, Result<String, mcp_client::oauth::OAuthError>> {
        // The loopback listener, on a free port unless one is pinned (as `mcp login`).
        Box::pin(crate::auth::prepare_redirect(redirect_uri, true))
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        redirect_uri: &'a str,
    ) -> mcp_client::transport::BoxFuture<'a, Result<String, mcp_client::oauth::OAuthError>> {
        Box::pin(async move {
            let gone =
                || mcp_client::oauth::OAuthError::LoginRequired("the console is stopping".into());
            let state = self.state.upgrade().ok_or_else(gone)?;
            let timeout = state.limits.timeout;
            let waiting: mcp_client::transport::BoxFuture<'_, _> = if self.paste {
                eprintln!(
                    "mcp: a server asks you to log in; open this address in a browser and \
                     authorize:\n  {authorization_url}\nmcp: the browser then lands on a page \
                     that cannot load: paste the whole address from its address bar into the \
                     console page"
                );
                Box::pin(async {
                    state.login_address(authorization_url).await.ok_or_else(|| {
                        mcp_client::oauth::OAuthError::LoginRequired(
                            "the login was abandoned, or more logins wait than \
                             --max-connections"
                                .into(),
                        )
                    })
                })
            } else {
                Box::pin(crate::auth::await_redirect(
                    authorization_url,
                    redirect_uri,
                    |url| {
                        state.push(json!({"type": "authorize", "url": url}));
                    },
                ))
            };
            let answer = match tokio::time::timeout(timeout, waiting).await {
                Ok(answer) => answer,
                Err(_) => Err(mcp_client::oauth::OAuthError::LoginRequired(format!(
                    "nobody logged in within {timeout:?} (--request-timeout)"
                ))),
            };
            let outcome = match &answer {
                Ok(_) => json!({"type": "authorized", "ok": true}),
                Err(e) => json!({"type": "authorized", "ok": false, "error": e.to_string()}),
            };
            state.push(outcome);
            answer
        })
    }
}

/// 32 random bytes, hex.
fn new_token() -> Result<String, CliError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| CliError::Usage(format!("no randomness for the console's token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Opens the launch file `path` with the platform's opener (the token is in the file, not
/// on the command line); a failure is only noted.
fn open_browser(path: &std::path::Path) {
    let mut command = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("cmd");
        c.args(["/C", "start", ""]);
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    let opened = command
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = opened {
        eprintln!("mcp: could not open a browser ({e}); open the URL yourself");
    }
}
