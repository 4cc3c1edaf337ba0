//! `mcp login` on a real terminal (a tmux session of its own), then `mcp tools` with the kept
//! tokens, against `mcp-demo --auth` serving HTTPS with a test certificate. The login runs with
//! `--no-browser`: the test reads the authorization address off the screen, plays the browser
//! by following the authorization server's redirect (trusting the test CA, as the user's
//! browser would after the warning), and types the address it ended on back into the terminal.

use crate::support;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use mcp_client::oauth::{FollowRedirect, RedirectHandler as _};
use mcp_client::transport::{Https, Proxy};
use support::{Demo, scratch};

/// A tmux server of its own (its own socket), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(width: u16) -> Self {
        let socket = format!("mcp-login-test-{}", std::process::id());
        let tmux = Self { socket };
        let started = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "login",
            "-x",
            &width.to_string(),
            "-y",
            "50",
            "sh",
        ]);
        assert!(
            started.status.success(),
            "tmux starts: {}",
            String::from_utf8_lossy(&started.stderr)
        );
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .env("TERM", "xterm")
            .env_remove("TMUX")
            .output()
            .expect("tmux runs (apt-get install tmux)")
    }

    /// Types `text` literally, then Enter.
    fn type_line(&self, text: &str) {
        assert!(
            self.run(&["send-keys", "-t", "login", "-l", text])
                .status
                .success()
        );
        assert!(
            self.run(&["send-keys", "-t", "login", "Enter"])
                .status
                .success()
        );
    }

    /// The screen and its history, wrapped lines joined.
    fn screen(&self) -> String {
        let shown = self.run(&["capture-pane", "-p", "-J", "-S", "-200", "-t", "login"]);
        String::from_utf8_lossy(&shown.stdout).into_owned()
    }

    /// Waits until the screen shows `needle` (polling the screen, up to 60 s).
    fn wait_for(&self, needle: &str) -> String {
        self.wait_until(needle, |screen| screen.contains(needle))
    }

    /// Waits until a line of the screen starts with `start` (a command's own output, not the
    /// command line typed, which starts with the prompt).
    fn wait_for_line(&self, start: &str) -> String {
        self.wait_until(start, |screen| screen.lines().any(|l| l.starts_with(start)))
    }

    fn wait_until(&self, needle: &str, shown: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            if shown(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the terminal never showed {needle:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[test]
fn login_on_a_terminal_then_tools_over_https() {
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).expect("test CA");
    let cert = scratch("login-tmux-cert").with_extension("pem");
    let key = scratch("login-tmux-key").with_extension("pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let cert_path = cert.display().to_string();
    let demo = Demo::start_with(&[
        "--auth",
        "--auth-auto-approve",
        "--tls-cert",
        &cert_path,
        "--tls-key",
        &key.display().to_string(),
    ]);
    let url = demo.mcp();
    assert!(url.starts_with("https://"), "{url}");
    let tokens = scratch("login-tmux-tokens").with_extension("json");
    let tokens = tokens.display().to_string();
    let mcp = quote(env!("CARGO_BIN_EXE_mcp"));
    let common = format!(
        "--cacert {} --token-file {} --timeout 60",
        quote(&cert_path),
        quote(&tokens)
    );

    // Wide enough that the address is one line; -J joins it anyway if not.
    let tmux = Tmux::start(400);
    tmux.type_line(&format!(
        "{mcp} login {} --no-browser {common}; echo login-exit=$?",
        quote(&url)
    ));
    let screen = tmux.wait_for("then paste the address");
    let address = screen
        .split_whitespace()
        .find(|w| w.contains("/authorize?"))
        .unwrap_or_else(|| panic!("no authorization address on screen:\n{screen}"))
        .to_owned();
    let redirect_uri = url::Url::parse(&address)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .expect("the address names its redirect_uri");

    // The browser: follows the authorization server to the redirect.
    let https = Https::new()
        .web_pki_roots(false)
        .add_ca_der(certified.cert.der().clone())
        .unwrap()
        .proxy(Proxy::none());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let landed = runtime
        .block_on(FollowRedirect::with_https(https).authorize(&address, &redirect_uri))
        .expect("the authorization server redirects back");
    assert!(landed.contains("code="), "{landed}");

    tmux.type_line(&landed);
    let screen = tmux.wait_for_line("login-exit=");
    assert!(screen.contains("login-exit=0"), "{screen}");
    assert!(screen.contains("logged in to"), "{screen}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&tokens).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let kept = std::fs::read_to_string(&tokens).unwrap();

    // The next command uses the kept token: no second login, the file untouched.
    tmux.type_line(&format!(
        "{mcp} tools {} {common}; echo tools-exit=$?",
        quote(&url)
    ));
    let screen = tmux.wait_for_line("tools-exit=");
    assert!(screen.contains("tools-exit=0"), "{screen}");
    assert!(screen.contains("Adds two integers."), "{screen}");
    assert_eq!(
        screen.matches("then paste the address").count(),
        1,
        "one login only:\n{screen}"
    );
    assert_eq!(std::fs::read_to_string(&tokens).unwrap(), kept);
}
