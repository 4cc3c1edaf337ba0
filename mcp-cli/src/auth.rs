//! OAuth for the command line: where tokens are kept, how the user's browser is brought to
//! the authorization server and back, and `mcp login`, `mcp logout`, `mcp auth status`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use mcp_client::oauth::{
    FileTokenStore, FollowRedirect, Grant, MemoryTokenStore, OAuthConfig, OAuthError,
    PreRegistered, RedirectHandler,
};
use mcp_client::transport::{BoxFuture, Https};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::cli::Global;
use crate::error::CliError;

/// The environment variable naming the token file.
pub(crate) const TOKEN_FILE_VAR: &str = "MCP_TOKEN_FILE";
/// The environment variables of client credentials for scripts.
pub(crate) const CLIENT_ID_VAR: &str = "MCP_CLIENT_ID";
/// See [`CLIENT_ID_VAR`].
pub(crate) const CLIENT_SECRET_VAR: &str = "MCP_CLIENT_SECRET";
/// When set (to anything but `0`), the authorization URL is fetched and its redirect followed
/// without a browser: for authorization servers that approve at once (tests, demos).
pub(crate) const FOLLOW_REDIRECT_VAR: &str = "MCP_AUTH_FOLLOW_REDIRECT";

/// The loopback redirect URI by default: port 0 stands for the port the system gives the
/// login's listener (RFC 8252 §7.3), so two logins (a console's and a terminal's) never
/// collide. `--redirect-port` and `--redirect-uri` pin one.
const EPHEMERAL_REDIRECT_URI: &str = "http://127.0.0.1:0/callback";
/// The redirect URI of `--auth-follow-redirect` (nothing listens on it; a fixed one keeps the
/// interop rows' registrations stable).
const FOLLOWED_REDIRECT_URI: &str = mcp_client::oauth::DEFAULT_REDIRECT_URI;
/// The longest request line and headers read from the browser.
const MAX_REQUEST: usize = 16 * 1024;
/// Connections the login's listener serves at once; more are closed at once.
const MAX_CONNECTIONS: usize = 16;
/// How long one connection to the login's listener may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a listener bound for a login that never came to its redirect is kept.
const PREPARED_FOR: Duration = Duration::from_secs(15 * 60);

/// What the command is doing, named in a step-up prompt ("deploy needs mcp:deploy").
static DOING: Mutex<Option<String>> = Mutex::new(None);

/// Names what the command does (a tool's name) for the step-up prompt.
pub(crate) fn doing(what: &str) {
    if let Ok(mut doing) = DOING.lock() {
        *doing = Some(what.to_owned());
    }
}

/// The token file: `--token-file`, else `$MCP_TOKEN_FILE`, else `mcp/tokens.json` in the
/// user's configuration folder (`$XDG_CONFIG_HOME`, else `~/.config`).
pub(crate) fn token_file(global: &Global) -> Result<PathBuf, CliError> {
    if let Some(path) = &global.token_file {
        return Ok(path.clone());
    }
    if let Some(path) = std::env::var_os(TOKEN_FILE_VAR).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|p| !p.is_empty())
                .map(|home| PathBuf::from(home).join(".config"))
        })
        .ok_or_else(|| {
            CliError::Usage("no home folder for the token file: give --token-file FILE".into())
        })?;
    Ok(base.join("mcp").join("tokens.json"))
}

/// The OAuth configuration every command against a URL uses: tokens in the token file,
/// client credentials from the flags or the environment, the browser (or `--no-browser`).
/// `interactive`: a user is there to log in (a terminal, `--interactive`, `mcp login`);
/// otherwise a server's challenge without a kept token fails the command with its `401`.
pub(crate) fn config(
    global: &Global,
    https: Option<&Https>,
    interactive: bool,
) -> Result<OAuthConfig, CliError> {
    let config = if follows_redirect(global) {
        OAuthConfig::new(match https {
            Some(https) => FollowRedirect::with_https(https.clone()),
            None => FollowRedirect::new(),
        })
    } else {
        OAuthConfig::new(Browser {
            open: !global.no_browser,
            interactive,
        })
    };
    configure(global, https, config.client_name("mcp-cli"))
}

/// Whether `--auth-follow-redirect` (or its environment variable) replaces the browser.
pub(crate) fn follows_redirect(global: &Global) -> bool {
    global.auth_follow_redirect
        || std::env::var(FOLLOW_REDIRECT_VAR).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// What every OAuth configuration of the command line shares, applied to `config` (made with
/// its redirect handler): the loopback redirect URI, the token file, the TLS settings, the
/// client credentials from the flags or the environment.
pub(crate) fn configure(
    global: &Global,
    https: Option<&Https>,
    config: OAuthConfig,
) -> Result<OAuthConfig, CliError> {
    let config = config.redirect_uri(redirect_uri(global)?);
    let config = match &global.scope {
        Some(scope) => config.scope(scope.clone()),
        None => config,
    };
    // Without a home folder (and no token file named) tokens last for the command only.
    let mut config = match token_file(global) {
        Ok(path) => config.store(FileTokenStore::new(path)),
        Err(_) => config.store(MemoryTokenStore::new()),
    };
    if let Some(https) = https {
        config = config.https(https.clone());
    }
    let client_id = global
        .client_id
        .clone()
        .or_else(|| std::env::var(CLIENT_ID_VAR).ok().filter(|v| !v.is_empty()));
    let client_secret = global.client_secret.clone().or_else(|| {
        std::env::var(CLIENT_SECRET_VAR)
            .ok()
            .filter(|v| !v.is_empty())
    });
    if let Some(client_id) = client_id {
        config = config.client(PreRegistered::new(client_id, client_secret));
    } else if global.client_credentials {
        return Err(CliError::Usage(format!(
            "--client-credentials needs --client-id (or {CLIENT_ID_VAR})"
        )));
    }
    if global.client_credentials {
        config = config.grant(Grant::ClientCredentials);
    }
    Ok(config)
}

/// The redirect URI of the command line's logins: `--redirect-uri`, else
/// `http://127.0.0.1:PORT/callback` with `--redirect-port`, else a free port picked when the
/// login starts (the fixed [`FOLLOWED_REDIRECT_URI`] with `--auth-follow-redirect`).
fn redirect_uri(global: &Global) -> Result<String, CliError> {
    if let Some(uri) = &global.redirect_uri {
        let bad = |why: &str| CliError::Usage(format!("--redirect-uri {uri:?}: {why}"));
        let url = url::Url::parse(uri).map_err(|e| bad(&e.to_string()))?;
        if url.scheme() != "http" || !mcp_client::oauth::is_loopback(&url) {
            return Err(bad(
                "must be http to a loopback host (127.0.0.1, [::1] or localhost), where mcp listens",
            ));
        }
        if url.port().is_none() {
            return Err(bad("give its port"));
        }
        return Ok(uri.clone());
    }
    if let Some(port) = global.redirect_port {
        if port == 0 {
            return Err(CliError::Usage(
                "--redirect-port 0: give a port, or leave the option out for a free one".into(),
            ));
        }
        return Ok(format!("http://127.0.0.1:{port}/callback"));
    }
    Ok(if follows_redirect(global) {
        FOLLOWED_REDIRECT_URI.to_owned()
    } else {
        EPHEMERAL_REDIRECT_URI.to_owned()
    })
}

/// Listeners bound for logins that have not reached their redirect yet, by redirect URI.
fn prepared() -> &'static Mutex<HashMap<String, (tokio::net::TcpListener, Instant)>> {
    static PREPARED: OnceLock<Mutex<HashMap<String, (tokio::net::TcpListener, Instant)>>> =
        OnceLock::new();
    PREPARED.get_or_init(Default::default)
}

/// Binds the listener of a login's loopback `redirect_uri` (port 0: one the system picks) and
/// returns the redirect URI with its real port; [`await_redirect`] then serves that listener.
/// `listen: false` (the browser is on another machine, `--no-browser`): only picks the port.
pub(crate) async fn prepare_redirect(
    redirect_uri: &str,
    listen: bool,
) -> Result<String, OAuthError> {
    let mut url = url_of(redirect_uri)?;
    if url.scheme() != "http"
        || !mcp_client::oauth::is_loopback(&url)
        || (!listen && url.port() != Some(0))
    {
        // Not ours to listen on (a pasted address brings the answer back).
        return Ok(redirect_uri.to_owned());
    }
    let host = match url.host() {
        Some(url::Host::Domain(_)) | None => "127.0.0.1".to_owned(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
    };
    let address = format!("{host}:{}", url.port_or_known_default().unwrap_or(80));
    let listener = tokio::net::TcpListener::bind(&address).await.map_err(|e| {
        let pinned = if url.port() == Some(0) {
            ""
        } else {
            " (another login or program uses it: leave out --redirect-port/--redirect-uri for a free port)"
        };
        OAuthError::Redirect(format!("listening on {address}: {e}{pinned}"))
    })?;
    let port = listener
        .local_addr()
        .map_err(|e| OAuthError::Redirect(e.to_string()))?
        .port();
    let _ = url.set_port(Some(port));
    let uri = url.to_string();
    if listen {
        let mut table = prepared().lock().unwrap_or_else(|e| e.into_inner());
        table.retain(|_, (_, at)| at.elapsed() < PREPARED_FOR);
        table.insert(uri.clone(), (listener, Instant::now()));
    }
    Ok(uri)
}

/// Sends the user's browser to the authorization server and waits for it on the loopback
/// redirect URI; with `--no-browser`, prints the URL and reads back the address the browser
/// ended on.
#[derive(Debug, Clone)]
struct Browser {
    open: bool,
    interactive: bool,
}

impl RedirectHandler for Browser {
    fn prepare<'a>(&'a self, redirect_uri: &'a str) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin(async move {
            if !self.interactive {
                // Nobody to log in: refused before anything is registered.
                crate::error::note_login_needed();
                return Err(OAuthError::LoginRequired(crate::error::LOGIN_HINT.into()));
            }
            prepare_redirect(redirect_uri, self.open).await
        })
    }

    fn step_up(&self, held: &str, needed: &str) {
        if !self.interactive {
            return;
        }
        let what = DOING
            .lock()
            .ok()
            .and_then(|d| d.clone())
            .unwrap_or_else(|| "this request".into());
        let held = if held.is_empty() { "no scope" } else { held };
        eprintln!("mcp: {what} needs {needed}; your token has {held}: authorize again");
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin(async move {
            if !self.interactive {
                crate::error::note_login_needed();
                return Err(OAuthError::LoginRequired(crate::error::LOGIN_HINT.into()));
            }
            // The OAuth client checked the endpoint already; the opener gets nothing else.
            mcp_client::oauth::browser_url(authorization_url)
                .map_err(|e| OAuthError::Redirect(e.to_string()))?;
            if !self.open {
                eprintln!(
                    "mcp: open this address in a browser and authorize:\n  {authorization_url}"
                );
                eprintln!(
                    "mcp: the browser then lands on {redirect_uri}?... and shows a page that \
                     cannot load (nothing listens there): that is expected."
                );
                eprintln!(
                    "mcp: then paste the address the browser was sent to (the whole address \
                     bar, starting with {redirect_uri}):"
                );
                let line = tokio::task::spawn_blocking(|| {
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line).map(|_| line)
                })
                .await
                .map_err(|e| OAuthError::Redirect(e.to_string()))?
                .map_err(|e| OAuthError::Redirect(format!("reading stdin: {e}")))?;
                return Ok(line.trim().to_owned());
            }
            await_redirect(authorization_url, redirect_uri, |url| {
                eprintln!("mcp: authorize in the browser (opening it now):\n  {url}");
                open_browser(url);
            })
            .await
        })
    }
}

/// Serves the loopback `redirect_uri` (the listener [`prepare_redirect`] bound, else one bound
/// now), calls `show` with `authorization_url` once it listens (to open a browser, or to show
/// the address to the user), and returns the address the browser arrives at with the
/// authorization server's answer: a request on the redirect path whose `state` is the one of
/// `authorization_url`, with `code` or `error`. Every other request (another local page, a
/// forged answer, a favicon) gets a short page and is ignored: nobody but the authorization
/// server can end the login. Up to [`MAX_CONNECTIONS`] connections are served at once (more
/// are closed), each given [`READ_TIMEOUT`] for its request. The wait itself is bounded by
/// the caller (the command's `--timeout`, the console's `--request-timeout`).
pub(crate) async fn await_redirect(
    authorization_url: &str,
    redirect_uri: &str,
    show: impl FnOnce(&str),
) -> Result<String, OAuthError> {
    let url = url_of(redirect_uri)?;
    let listener = {
        let mut table = prepared().lock().unwrap_or_else(|e| e.into_inner());
        table.remove(redirect_uri).map(|(listener, _)| listener)
    };
    let listener = match listener {
        Some(listener) => listener,
        None => {
            let uri = prepare_redirect(redirect_uri, true).await?;
            let mut table = prepared().lock().unwrap_or_else(|e| e.into_inner());
            table
                .remove(&uri)
                .map(|(listener, _)| listener)
                .ok_or_else(|| OAuthError::Redirect(format!("cannot listen on {redirect_uri}")))?
        }
    };
    let expected_state = url_of(authorization_url)?
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned());
    let path = url.path().to_owned();
    show(authorization_url);
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let (answered, mut answers) = tokio::sync::mpsc::channel::<String>(1);
    let mut connections = tokio::task::JoinSet::new();
    let target = loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    // Too many at once: this one is closed unanswered.
                    drop(stream);
                    continue;
                };
                let answered = answered.clone();
                let expected_state = expected_state.clone();
                let path = path.clone();
                connections.spawn(async move {
                    let _slot = slot;
                    serve_redirect(stream, &path, expected_state.as_deref(), answered).await;
                });
            }
            Some(target) = answers.recv() => break target,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    };
    // The answering connection has written its page; the others are dropped with the set.
    drop(connections);
    let authority = match (url.host_str(), url.port()) {
        (Some(h), Some(port)) => format!("{h}:{port}"),
        (Some(h), None) => h.to_owned(),
        (None, _) => "127.0.0.1".to_owned(),
    };
    Ok(format!("{}://{authority}{target}", url.scheme()))
}

/// One connection to the login's listener: reads its request line (within [`READ_TIMEOUT`]),
/// answers with a page, and hands the target on when it is the authorization server's answer.
async fn serve_redirect(
    mut stream: tokio::net::TcpStream,
    path: &str,
    expected_state: Option<&str>,
    answered: tokio::sync::mpsc::Sender<String>,
) {
    let Ok(Some(target)) = tokio::time::timeout(READ_TIMEOUT, request_target(&mut stream)).await
    else {
        return;
    };
    let (status, page, answer) = match redirect_answer(&target, path, expected_state) {
        Some(Answer::Code) => (
            "200 OK",
            "Authorized: you can close this window and go back to the terminal or the console.",
            true,
        ),
        Some(Answer::Denied) => (
            "200 OK",
            "Authorization denied: nothing was authorized. You can close this window; the terminal or the console says what happened.",
            true,
        ),
        None => (
            "400 Bad Request",
            "This is not the answer the login is waiting for; the login goes on.",
            false,
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nX-Frame-Options: DENY\r\nConnection: close\r\n\r\n{page}",
        page.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
    if answer {
        let _ = answered.try_send(target);
    }
}

/// What a request to the redirect listener brings.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// A code with the expected state.
    Code,
    /// An error with the expected state (the user denied, or the server refused).
    Denied,
}

/// The authorization server's answer in `target` (`/callback?code=...&state=...`): on the
/// redirect `path`, with the expected `state` (any, when the authorization URL had none), and
/// a `code` or an `error`.
fn redirect_answer(target: &str, path: &str, expected_state: Option<&str>) -> Option<Answer> {
    let url = url::Url::parse("http://127.0.0.1")
        .ok()?
        .join(target)
        .ok()?;
    if url.path() != path {
        return None;
    }
    let param = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(expected) = expected_state
        && param("state").as_deref() != Some(expected)
    {
        return None;
    }
    if param("error").is_some() {
        Some(Answer::Denied)
    } else if param("code").is_some() {
        Some(Answer::Code)
    } else {
        None
    }
}

fn url_of(text: &str) -> Result<url::Url, OAuthError> {
    url::Url::parse(text).map_err(|e| OAuthError::Redirect(format!("{text}: {e}")))
}

/// The target of the request line (`GET /callback?code=... HTTP/1.1`), bounded.
async fn request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buffer.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buffer.len() + n > MAX_REQUEST {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buffer);
    let line = text.lines().next()?;
    let mut words = line.split(' ');
    (words.next()? == "GET").then_some(())?;
    words.next().map(str::to_owned)
}

/// Asks the desktop to open `url`; a failure leaves the printed URL to the user.
fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_answer_with_the_logins_state_ends_it() {
        let state = Some("s3");
        assert_eq!(
            redirect_answer("/callback?code=c&state=s3", "/callback", state),
            Some(Answer::Code)
        );
        assert_eq!(
            redirect_answer("/callback?error=access_denied&state=s3", "/callback", state),
            Some(Answer::Denied)
        );
        for other in [
            "/callback?error=access_denied",
            "/callback?code=c",
            "/callback?code=c&state=s4",
            "/callback?code=c&state=s3x",
            "/callback?state=s3",
            "/other?code=c&state=s3",
            "/favicon.ico",
            "http://evil/callback?code=c&state=s4",
        ] {
            assert_eq!(redirect_answer(other, "/callback", state), None, "{other}");
        }
    }

    #[tokio::test]
    async fn the_opener_gets_only_https_or_loopback_http() {
        let browser = Browser {
            open: true,
            interactive: true,
        };
        for url in [
            "file:///etc/passwd?response_type=code",
            "smb://host/share",
            "http://attacker.example/authorize",
        ] {
            let refused = browser
                .authorize(url, "http://127.0.0.1:1/callback")
                .await
                .unwrap_err();
            assert!(refused.to_string().contains(url), "{refused}");
        }
    }
}
