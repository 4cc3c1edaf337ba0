//! `mcp login`'s loopback redirect (issue 44, review finding 12 and "what a new user hit"),
//! against `mcp-demo --auth --auth-auto-approve`: the listener waits for the answer carrying
//! the login's own `state` (any other request gets a page and is ignored), serves connections
//! concurrently, listens on a port the system picks (two logins at once do not collide) or the
//! one `--redirect-port` pins; a denial reads as one sentence and the page says so; the
//! `--no-browser` prompt says where the browser lands; without a terminal the 401's hint
//! says to log in; a step-up says why. The browser is played by the test: a stand-in
//! `xdg-open` on PATH does nothing, the test reads the address `mcp` prints, follows the
//! authorization server's redirect and brings the answer to the listener.

use crate::support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use mcp_client::oauth::{FollowRedirect, RedirectHandler as _};
use support::{Demo, scratch};

/// A folder holding a stand-in `xdg-open` (and `open`) that opens nothing.
fn fake_opener() -> PathBuf {
    let dir = scratch("fake-opener");
    let _ = std::fs::remove_file(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["xdg-open", "open"] {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    dir
}

/// A running `mcp` with the stand-in opener first on PATH, its stderr read line by line.
struct Login {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Login {
    fn start(opener: &Path, args: &[&str]) -> Self {
        let path = format!(
            "{}:{}",
            opener.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp"))
            .args(args)
            .env("PATH", path)
            .env_remove("MCP_AUTH_FOLLOW_REDIRECT")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mcp starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next stderr line containing `needle` (within 60 s).
    fn wait_for(&mut self, needle: &str) -> String {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(e) => panic!("no stderr line with {needle:?} ({e}): {:?}", self.seen),
            }
        }
    }

    /// The authorization address `mcp` shows (the line after its announcement).
    fn authorization_url(&mut self) -> url::Url {
        let line = self.wait_for("/authorize?");
        url::Url::parse(line.trim()).expect("the address is a URL")
    }

    fn type_line(&mut self, text: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(format!("{text}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for the end (60 s at most); its exit code, stdout and every stderr line.
    fn finish(mut self) -> (i32, String, String) {
        let (tx, rx) = mpsc::channel();
        let mut child = self.child;
        let waiter = std::thread::spawn(move || {
            let status = child.wait().unwrap();
            let mut out = String::new();
            if let Some(mut stdout) = child.stdout.take() {
                let _ = stdout.read_to_string(&mut out);
            }
            let _ = tx.send(());
            (status.code().unwrap_or(-1), out)
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("mcp ends within 60 s");
        let (code, stdout) = waiter.join().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(10)) {
            self.seen.push(line);
        }
        (code, stdout, self.seen.join("\n"))
    }
}

fn param(url: &url::Url, name: &str) -> String {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| panic!("{url} has no {name}"))
}

/// One GET over a fresh connection: the status code and body.
fn get(url: &str) -> (u16, String) {
    let url = url::Url::parse(url).unwrap();
    let mut stream = TcpStream::connect((
        url.host_str().unwrap(),
        url.port_or_known_default().unwrap(),
    ))
    .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        url.authority()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// The browser at the authorization server (auto-approving): the address it is sent back to.
fn authorize(address: &url::Url) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let redirect_uri = param(address, "redirect_uri");
    runtime
        .block_on(FollowRedirect::new().authorize(address.as_str(), &redirect_uri))
        .expect("the authorization server redirects back")
}

fn token_file(name: &str) -> String {
    scratch(name).with_extension("json").display().to_string()
}

#[test]
fn the_listener_waits_for_its_own_state_and_serves_connections_concurrently() {
    let demo = Demo::start_with(&["--auth", "--auth-auto-approve"]);
    let url = demo.mcp();
    let opener = fake_opener();
    let tokens = token_file("login-state");
    let mut login = Login::start(
        &opener,
        &["login", &url, "--token-file", &tokens, "--timeout", "60"],
    );
    let address = login.authorization_url();
    let redirect_uri = param(&address, "redirect_uri");
    let state = param(&address, "state");

    // A connection that never sends its request does not hold the others up.
    let idle = TcpStream::connect(
        url::Url::parse(&redirect_uri)
            .unwrap()
            .socket_addrs(|| None)
            .unwrap()[0],
    )
    .unwrap();
    // Another local page's answers: an error without the state, a code with a wrong one, a
    // favicon. Each gets a page; the login goes on.
    for forged in [
        format!("{redirect_uri}?error=access_denied"),
        format!("{redirect_uri}?code=forged&state=not-{state}"),
        format!("{redirect_uri}?error=access_denied&state=not-{state}"),
        redirect_uri.replace("/callback", "/favicon.ico"),
    ] {
        let (status, body) = get(&forged);
        assert_eq!(status, 400, "{forged}: {body}");
        assert!(body.contains("not the answer"), "{body}");
    }
    // The real answer ends it.
    let landed = authorize(&address);
    assert!(landed.contains("code="), "{landed}");
    let (status, body) = get(&landed);
    assert_eq!(status, 200);
    assert!(body.starts_with("Authorized"), "{body}");
    drop(idle);
    let (code, stdout, stderr) = login.finish();
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("logged in to"), "{stdout}");
}

#[test]
fn two_logins_at_once_listen_on_ports_of_their_own() {
    let demo = Demo::start_with(&["--auth", "--auth-auto-approve"]);
    let url = demo.mcp();
    let opener = fake_opener();
    let (first_file, second_file) = (token_file("login-first"), token_file("login-second"));
    let mut first = Login::start(
        &opener,
        &[
            "login",
            &url,
            "--token-file",
            &first_file,
            "--timeout",
            "60",
        ],
    );
    let first_address = first.authorization_url();
    let mut second = Login::start(
        &opener,
        &[
            "login",
            &url,
            "--token-file",
            &second_file,
            "--timeout",
            "60",
        ],
    );
    let second_address = second.authorization_url();
    let (a, b) = (
        param(&first_address, "redirect_uri"),
        param(&second_address, "redirect_uri"),
    );
    assert_ne!(a, b, "each login has its own port");
    for uri in [&a, &b] {
        let parsed = url::Url::parse(uri).unwrap();
        assert_eq!(parsed.host_str(), Some("127.0.0.1"));
        assert_ne!(parsed.port(), Some(33418), "not the old fixed port");
        assert_eq!(parsed.path(), "/callback");
    }
    // Finished in the other order.
    assert_eq!(get(&authorize(&second_address)).0, 200);
    assert_eq!(get(&authorize(&first_address)).0, 200);
    for login in [first, second] {
        let (code, stdout, stderr) = login.finish();
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("logged in to"), "{stdout}");
    }
}

#[test]
fn redirect_port_pins_the_port_and_a_taken_one_is_a_clear_error() {
    let demo = Demo::start_with(&["--auth", "--auth-auto-approve"]);
    let url = demo.mcp();
    let opener = fake_opener();
    // A port that is free now (bound, then let go).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let tokens = token_file("login-pinned");
    let mut login = Login::start(
        &opener,
        &[
            "login",
            &url,
            "--redirect-port",
            &port,
            "--token-file",
            &tokens,
            "--timeout",
            "60",
        ],
    );
    let address = login.authorization_url();
    assert_eq!(
        param(&address, "redirect_uri"),
        format!("http://127.0.0.1:{port}/callback")
    );
    // While it listens, a second login on the same port says why it cannot.
    let taken = Login::start(
        &opener,
        &[
            "login",
            &url,
            "--redirect-port",
            &port,
            "--token-file",
            &token_file("login-pinned-2"),
            "--timeout",
            "60",
        ],
    );
    let (code, _, stderr) = taken.finish();
    assert_ne!(code, 0);
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    assert!(stderr.contains("--redirect-port"), "{stderr}");
    assert_eq!(get(&authorize(&address)).0, 200);
    let (code, _, stderr) = login.finish();
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_denial_says_so_on_the_page_and_in_one_sentence() {
    let demo = Demo::start_with(&["--auth", "--auth-auto-approve"]);
    let url = demo.mcp();
    let opener = fake_opener();
    let tokens = token_file("login-denied");
    let mut login = Login::start(
        &opener,
        &["login", &url, "--token-file", &tokens, "--timeout", "60"],
    );
    let address = login.authorization_url();
    // What the authorization server sends the browser to when the user presses Deny.
    let denied = format!(
        "{}?error=access_denied&error_description=the+user+denied&state={}",
        param(&address, "redirect_uri"),
        param(&address, "state")
    );
    let (status, body) = get(&denied);
    assert_eq!(status, 200);
    assert!(body.contains("denied"), "{body}");
    assert!(!body.contains("Authorized"), "{body}");
    let (code, _, stderr) = login.finish();
    assert_ne!(code, 0);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("mcp: error"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.contains(&format!(
            "the authorization for {url} was denied (access_denied: the user denied); nothing was kept"
        )),
        "{line}"
    );
    assert!(!line.contains("authorization failed"), "{line}");
    assert_eq!(line.matches("authoriz").count(), 1, "{line}");
}

#[test]
fn no_browser_says_where_the_browser_lands_and_what_to_paste() {
    let demo = Demo::start_with(&["--auth", "--auth-auto-approve"]);
    let url = demo.mcp();
    let opener = fake_opener();
    let tokens = token_file("login-no-browser");
    let mut login = Login::start(
        &opener,
        &[
            "login",
            &url,
            "--no-browser",
            "--token-file",
            &tokens,
            "--timeout",
            "60",
        ],
    );
    let address = login.authorization_url();
    let redirect_uri = param(&address, "redirect_uri");
    let lands = login.wait_for("cannot load");
    assert!(lands.contains(&redirect_uri), "{lands}");
    let paste = login.wait_for("paste");
    assert!(paste.contains("whole address bar"), "{paste}");
    let landed = authorize(&address);
    login.type_line(&landed);
    let (code, stdout, stderr) = login.finish();
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("logged in to"), "{stdout}");
}

#[test]
fn without_a_terminal_the_401_says_to_log_in_first() {
    let demo = Demo::start_with(&["--auth", "--auth-auto-approve"]);
    let url = demo.mcp();
    let tokens = token_file("login-none");
    let run = support::mcp(&["tools", &url, "--token-file", &tokens, "--timeout", "30"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains(
            "(try: run `mcp login URL` on a terminal first, or use --client-credentials)"
        ),
        "{}",
        run.stderr
    );
    // Nothing was registered or kept for a login that could not happen.
    assert!(
        std::fs::read_to_string(&tokens).map_or(true, |t| !t.contains("client_id")),
        "no registration kept"
    );
}

#[test]
fn a_step_up_says_why_and_scope_asks_up_front() {
    let demo = Demo::start_with(&["--auth", "--auth-auto-approve"]);
    let url = demo.mcp();
    let opener = fake_opener();
    let tokens = token_file("login-step-up");
    let common = ["--token-file", tokens.as_str(), "--timeout", "60"];
    // A login with the scope the server names (mcp:read).
    let mut args = vec!["login", url.as_str(), "--auth-follow-redirect"];
    args.extend(common);
    let login = support::mcp(&args);
    assert!(login.ok().contains("scopes mcp:read"), "{}", login.stdout);
    assert!(!login.stdout.contains("mcp:deploy"), "{}", login.stdout);

    // deploy needs mcp:deploy: the prompt says so before the browser opens.
    let mut args = vec![
        "call",
        url.as_str(),
        "deploy",
        "service=web",
        "--interactive",
        "--answer",
        "accept",
    ];
    args.extend(common);
    let mut call = Login::start(&opener, &args);
    let why = call.wait_for("needs");
    assert!(
        why.contains("deploy needs mcp:deploy; your token has mcp:read"),
        "{why}"
    );
    let address = call.authorization_url();
    assert_eq!(get(&authorize(&address)).0, 200);
    let (code, _, stderr) = call.finish();
    assert_eq!(code, 0, "{stderr}");

    // `mcp login --scope` asks for it up front: a token without it is replaced.
    let fresh = token_file("login-scope");
    let login = support::mcp(&[
        "login",
        &url,
        "--auth-follow-redirect",
        "--token-file",
        &fresh,
        "--scope",
        "mcp:deploy",
        "--timeout",
        "60",
    ]);
    let out = login.ok();
    assert!(
        out.contains("mcp:deploy") && out.contains("mcp:read"),
        "{out}"
    );
}
