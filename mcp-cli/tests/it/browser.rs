//! `mcp console` in a real browser: a headless Chromium driven through chromedriver against the
//! demo server. Screenshots of each step go to `<target>/tmp/console-screenshots/`.
//!
//! Chromium and chromedriver come from Debian (`apt-get install chromium chromium-driver`, as
//! `.ci/run` does). Without them the test fails under `CI=true` and is skipped with a message
//! otherwise.

use crate::support;

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;
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

    // The token URL sets the cookie; the page connects to the URL given on the command line.
    b.go(&console.url);
    b.wait_text("#server-revision", "2026-07-28");
    b.wait_text("#server-name", "Demo server");
    b.screenshot("01-connected");

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
