//! OAuth for the command line: where tokens are kept, how the user's browser is brought to
//! the authorization server and back, and `mcp login`, `mcp logout`, `mcp auth status`.

use std::path::PathBuf;
use std::time::Duration;

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

/// The loopback redirect URI `mcp` registers and listens on while a login runs.
const REDIRECT_URI: &str = "http://127.0.0.1:33418/callback";
/// The longest request line and headers read from the browser.
const MAX_REQUEST: usize = 16 * 1024;

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
    let config = config.redirect_uri(REDIRECT_URI);
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

/// Sends the user's browser to the authorization server and waits for it on the loopback
/// redirect URI; with `--no-browser`, prints the URL and reads back the address the browser
/// ended on.
#[derive(Debug, Clone)]
struct Browser {
    open: bool,
    interactive: bool,
}

impl RedirectHandler for Browser {
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin(async move {
            if !self.interactive {
                return Err(OAuthError::LoginRequired(
                    "run `mcp login URL` on a terminal first, or use --client-credentials".into(),
                ));
            }
            if !self.open {
                eprintln!(
                    "mcp: open this address in a browser and authorize:\n  {authorization_url}"
                );
                eprintln!("mcp: then paste the address the browser was sent to:");
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

/// Listens on the loopback `redirect_uri`, calls `show` with `authorization_url` once it
/// listens (to open a browser, or to show the address to the user), and returns the address
/// the browser arrives at with the authorization server's answer (`code` or `error`). Other
/// requests to the listener get a waiting page; each request line is read within 10 s.
pub(crate) async fn await_redirect(
    authorization_url: &str,
    redirect_uri: &str,
    show: impl FnOnce(&str),
) -> Result<String, OAuthError> {
    let url = url_of(redirect_uri)?;
    let address = format!(
        "{}:{}",
        url.host_str().unwrap_or("127.0.0.1"),
        url.port_or_known_default().unwrap_or(80)
    );
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .map_err(|e| OAuthError::Redirect(format!("listening on {address}: {e}")))?;
    show(authorization_url);
    loop {
        let (mut stream, _) = listener
            .accept()
            .await
            .map_err(|e| OAuthError::Redirect(e.to_string()))?;
        let Ok(Some(target)) =
            tokio::time::timeout(Duration::from_secs(10), request_target(&mut stream)).await
        else {
            continue;
        };
        let done = target.starts_with(url.path())
            && (target.contains("code=") || target.contains("error="));
        let page = if done {
            "Authorized: you can close this window and go back to the terminal or the console."
        } else {
            "Waiting for the authorization server's redirect."
        };
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = stream.write_all(answer.as_bytes()).await;
        if done {
            return Ok(format!(
                "{}://{}{target}",
                url.scheme(),
                url.host_str()
                    .map_or(address.clone(), |h| match url.port() {
                        Some(port) => format!("{h}:{port}"),
                        None => h.to_owned(),
                    })
            ));
        }
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
