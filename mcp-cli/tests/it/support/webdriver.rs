//! A small WebDriver client (JSON over HTTP, W3C protocol) for the console's browser tests,
//! driving a headless Chromium through chromedriver. Built on the test's own HTTP/1.1 helper
//! ([`super::console::http`]), so the tests need no WebDriver crate.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use base64::Engine as _;
use serde_json::{Value, json};

use super::console::http;

/// The W3C key for an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Finds `name` on the `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    })
}

/// A chromedriver process and one browser session; both end on drop.
pub struct Browser {
    driver: Child,
    addr: String,
    session: String,
    shots: PathBuf,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium of 1280x800, screenshots going to `shots`.
    /// `None` (with the reason) when chromium or chromedriver is not installed.
    pub fn start(shots: &Path) -> Result<Self, String> {
        let driver_bin = which("chromedriver").ok_or("chromedriver is not installed")?;
        let chromium = ["chromium", "chromium-browser", "google-chrome"]
            .iter()
            .find_map(|name| which(name))
            .ok_or("chromium is not installed")?;
        // Port 0 is not accepted by chromedriver: take a free port and hand it over.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let mut driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("chromedriver does not start: {e}"))?;
        // It prints one line once it listens.
        let stdout = driver.stdout.take().expect("piped stdout");
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err("chromedriver exited before listening".into());
            }
            if line.contains("started successfully") {
                break;
            }
        }
        // Keep draining its stdout so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in reader.lines() {});
        let addr = format!("127.0.0.1:{port}");
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,800",
                         "--force-device-scale-factor=1"],
            },
            "timeouts": {"implicit": 15000, "script": 30000, "pageLoad": 30000},
        }}});
        let answer = http(
            &addr,
            "POST",
            "/session",
            &[("Content-Type", "application/json")],
            Some(&capabilities.to_string()),
        );
        if answer.status != 200 {
            let _ = driver.kill();
            return Err(format!("no browser session: {}", answer.body));
        }
        let session = answer.json()["value"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        std::fs::create_dir_all(shots).map_err(|e| e.to_string())?;
        Ok(Self {
            driver,
            addr,
            session,
            shots: shots.to_owned(),
        })
    }

    fn command(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let text = body.map(|b| b.to_string());
        let answer = http(
            &self.addr,
            method,
            &path,
            &[("Content-Type", "application/json")],
            text.as_deref(),
        );
        let value = answer.json();
        assert_eq!(
            answer.status, 200,
            "WebDriver {method} {path}: {}",
            value["value"]
        );
        value["value"].clone()
    }

    /// Opens `url`.
    pub fn go(&self, url: &str) {
        self.command("POST", "/url", Some(json!({"url": url})));
    }

    /// The first element `css` selects (waiting for it up to the implicit timeout).
    pub fn find(&self, css: &str) -> String {
        let found = self.command(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("{css}: no element in {found}"))
            .to_owned()
    }

    /// Every element `css` selects.
    pub fn find_all(&self, css: &str) -> Vec<String> {
        let found = self.command(
            "POST",
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        );
        found
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e[ELEMENT].as_str().map(str::to_owned))
            .collect()
    }

    /// Clicks what `css` selects. When the page drew the element again between finding and
    /// clicking it (a stale reference), it is found again, a few times at most.
    pub fn click(&self, css: &str) {
        for _ in 0..3 {
            let id = self.find(css);
            let path = format!("/session/{}/element/{id}/click", self.session);
            let answer = http(
                &self.addr,
                "POST",
                &path,
                &[("Content-Type", "application/json")],
                Some("{}"),
            );
            if answer.status == 200 {
                return;
            }
            let value = answer.json()["value"].clone();
            assert_eq!(
                value["error"], "stale element reference",
                "WebDriver click {css}: {value}"
            );
        }
        panic!("{css} was drawn again on every click");
    }

    /// Clears the field `css` selects and types `text` into it.
    pub fn fill(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.fill_element(&id, text);
    }

    /// Clears the field `id` and types `text`.
    pub fn fill_element(&self, id: &str, text: &str) {
        self.command("POST", &format!("/element/{id}/clear"), Some(json!({})));
        self.command(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({"text": text})),
        );
    }

    /// Runs `script` (a function body) with `args`; its return value.
    pub fn script(&self, script: &str, args: Value) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// Waits in the page (a poll inside the browser, bounded by the script timeout) until the
    /// text of what `css` selects contains `needle`; panics with what it shows otherwise.
    pub fn wait_text(&self, css: &str, needle: &str) -> String {
        let script = "const [css, needle, done] = arguments;
            const look = () => { const e = document.querySelector(css);
              return e && e.textContent.includes(needle) ? e.textContent : null; };
            const found = look(); if (found !== null) { done({ok: found}); return; }
            const observer = new MutationObserver(() => { const f = look();
              if (f !== null) { observer.disconnect(); done({ok: f}); } });
            observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});";
        let path = format!("/session/{}/execute/async", self.session);
        let body = json!({"script": script, "args": [css, needle]}).to_string();
        let answer = http(
            &self.addr,
            "POST",
            &path,
            &[("Content-Type", "application/json")],
            Some(&body),
        );
        let value = answer.json()["value"].clone();
        if let Some(text) = value["ok"].as_str() {
            return text.to_owned();
        }
        let shown = self.script(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : '(nothing)';",
            json!([css]),
        );
        panic!("{css} never showed {needle:?} ({value}); it shows: {shown}");
    }

    /// Waits in the page (bounded by the script timeout) until the function body `check`
    /// (given `args` as `args`) returns something other than `null`; that value. Checked
    /// again on every change of the document.
    pub fn wait_for(&self, check: &str, args: Value) -> Value {
        let script = format!(
            "const done = arguments[arguments.length - 1];
            const args = arguments[0];
            const check = () => {{ {check} }};
            const found = check(); if (found !== null) {{ done({{ok: found}}); return; }}
            const observer = new MutationObserver(() => {{ const f = check();
              if (f !== null) {{ observer.disconnect(); done({{ok: f}}); }} }});
            observer.observe(document.documentElement, {{subtree: true, childList: true, characterData: true, attributes: true}});"
        );
        let path = format!("/session/{}/execute/async", self.session);
        let body = json!({"script": script, "args": [args]}).to_string();
        let answer = http(
            &self.addr,
            "POST",
            &path,
            &[("Content-Type", "application/json")],
            Some(&body),
        );
        let value = answer.json()["value"].clone();
        if value.get("ok").is_some() {
            return value["ok"].clone();
        }
        panic!("never true: {check} ({value})");
    }

    /// The cookies the browser holds for the current page (HttpOnly ones included).
    pub fn cookies(&self) -> Value {
        self.command("GET", "/cookie", None)
    }

    /// Resizes the window.
    pub fn resize(&self, width: u32, height: u32) {
        self.command(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        );
    }

    /// Emulates `prefers-color-scheme: scheme` (through chromedriver's DevTools passthrough).
    pub fn color_scheme(&self, scheme: &str) {
        self.command(
            "POST",
            "/goog/cdp/execute",
            Some(json!({"cmd": "Emulation.setEmulatedMedia",
                "params": {"features": [{"name": "prefers-color-scheme", "value": scheme}]}})),
        );
    }

    /// Saves a PNG of the window as `NAME.png` in the screenshot folder; its path.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let data = self.command("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().expect("base64"))
            .expect("a PNG");
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("screenshot written");
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let path = format!("/session/{}", self.session);
        let addr = self.addr.clone();
        let _ = std::panic::catch_unwind(move || http(&addr, "DELETE", &path, &[], None));
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
