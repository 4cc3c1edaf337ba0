//! `mcp console`: its guard (token, Host, Origin) and its API against the demo server, over real
//! sockets on 127.0.0.1.

use crate::support;

use serde_json::{Value, json};
use support::Demo;
use support::console::{Console, http};

const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// Issue 44, finding 1: the API takes the token only from the `X-Mcp-Console-Token` header
/// (no cookie, no query), the page carries no secret, and no answer sets a cookie.
#[test]
fn requests_without_the_token_are_refused() {
    let console = Console::start(&[]);
    let addr = console.addr.as_str();
    assert_eq!(
        console.url,
        format!("http://{addr}/#token={}", console.token),
        "the token rides in the fragment, which no browser sends to a server"
    );
    // No token, a wrong token, the right token in a cookie or in the URL: 403.
    let wrong = "0".repeat(console.token.len());
    let cookie_name = format!("mcp_console_{}", addr.rsplit(':').next().unwrap());
    let right_cookie = format!("{cookie_name}={}", console.token);
    let bare_cookie = console.token.clone();
    let token_query = format!("/api/connections?token={}", console.token);
    for (path, headers) in [
        ("/api/connections", vec![]),
        (
            "/api/connections",
            vec![("X-Mcp-Console-Token", wrong.as_str())],
        ),
        ("/api/connections", vec![("Cookie", right_cookie.as_str())]),
        ("/api/connections", vec![("Cookie", bare_cookie.as_str())]),
        (&*token_query, vec![]),
        (
            "/api/stream?after=0",
            vec![("Cookie", right_cookie.as_str())],
        ),
        (
            "/api/events?after=0&wait=0",
            vec![("X-Mcp-Console-Token", "")],
        ),
    ] {
        let answer = http(addr, "GET", path, &headers, None);
        assert_eq!(answer.status, 403, "{path} {headers:?}: {}", answer.body);
        assert!(answer.header("set-cookie").is_none(), "{path}");
    }
    for cookie in [right_cookie.as_str(), bare_cookie.as_str()] {
        let answer = http(
            addr,
            "POST",
            "/api/connect",
            &[("Content-Type", "application/json"), ("Cookie", cookie)],
            Some(r#"{"url": "http://127.0.0.1:1/mcp"}"#),
        );
        assert_eq!(answer.status, 403, "{}", answer.body);
    }

    // The page: no token needed (it holds no secret), no cookie set, even asked with the old
    // token URL.
    let old_url = format!("/?token={}", console.token);
    for path in ["/", old_url.as_str()] {
        let page = http(addr, "GET", path, &[], None);
        assert_eq!(page.status, 200, "{path}");
        assert!(page.body.contains("<title>mcp console</title>"));
        assert!(!page.body.contains(&console.token), "{path}");
        assert!(page.header("set-cookie").is_none(), "{path}");
        assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    }
    // A page opened from another origin's script (a foreign Origin) is refused.
    let foreign = http(addr, "GET", "/", &[("Origin", "http://127.0.0.1:1")], None);
    assert_eq!(foreign.status, 403);
    // Only the page's own script and style run: a fresh nonce per page, no 'unsafe-inline'.
    let page = http(addr, "GET", "/", &[], None);
    let policy = page
        .header("content-security-policy")
        .expect("a CSP")
        .to_owned();
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    let nonce = policy
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .expect("a nonce");
    assert!(page.body.contains(&format!("<script nonce=\"{nonce}\">")));
    let again = http(addr, "GET", "/", &[], None);
    assert!(
        !again
            .header("content-security-policy")
            .unwrap()
            .contains(nonce),
        "a new nonce per page"
    );
    // The header opens the API; no answer of it sets a cookie either.
    let answer = console.get("/api/connections");
    assert_eq!(answer.status, 200);
    assert!(answer.header("set-cookie").is_none());
}

#[test]
fn foreign_origins_and_hosts_are_refused() {
    let console = Console::start(&[]);
    let addr = console.addr.as_str();
    let port = addr.rsplit(':').next().unwrap();
    let token = console.token.as_str();
    let own = format!("http://127.0.0.1:{port}");
    let localhost = format!("localhost:{port}");
    let evil_port = format!("evil.example:{port}");
    let cases: Vec<(Vec<(&str, &str)>, u16)> = vec![
        (vec![("Origin", "http://evil.example")], 403),
        (vec![("Origin", "null")], 403),
        (vec![("Origin", "http://127.0.0.1:1")], 403),
        (vec![("Sec-Fetch-Site", "cross-site")], 403),
        (vec![("Sec-Fetch-Site", "same-site")], 403),
        // DNS rebinding: a name of the attacker's that resolves to 127.0.0.1.
        (vec![("Host", "evil.example")], 403),
        (vec![("Host", evil_port.as_str())], 403),
        (vec![("Origin", own.as_str())], 200),
        (vec![("Sec-Fetch-Site", "same-origin")], 200),
        (vec![("Host", localhost.as_str())], 200),
    ];
    for (extra, status) in cases {
        let mut headers = vec![("X-Mcp-Console-Token", token)];
        headers.extend(extra.iter().copied());
        let answer = http(addr, "GET", "/api/connections", &headers, None);
        assert_eq!(answer.status, status, "{extra:?}: {}", answer.body);
    }
    // A form post (no JSON content type) from anywhere is refused before it does anything.
    let answer = http(
        addr,
        "POST",
        "/api/connect",
        &[
            ("X-Mcp-Console-Token", token),
            ("Content-Type", "text/plain"),
        ],
        Some(r#"{"url": "http://127.0.0.1:1/mcp"}"#),
    );
    assert_eq!(answer.status, 400);
    // A body that is not JSON, one too large, an unknown route: answered, never a crash.
    let json_type = [
        ("X-Mcp-Console-Token", token),
        ("Content-Type", "application/json"),
    ];
    for body in ["{", "[1]", "\"x\"", "null"] {
        let answer = http(addr, "POST", "/api/call", &json_type, Some(body));
        assert_eq!(answer.status, 400, "{body}: {}", answer.body);
    }
    let huge = format!("{{\"url\": \"{}\"}}", "x".repeat(4 * 1024 * 1024));
    let answer = http(addr, "POST", "/api/connect", &json_type, Some(&huge));
    assert_eq!(answer.status, 413, "{}", answer.body);
    assert!(answer.body.contains("--max-body"), "{}", answer.body);
    let answer = http(addr, "POST", "/api/nothing", &json_type, Some("{}"));
    assert_eq!(answer.status, 404);
    assert_eq!(console.get("/api/connections").status, 200, "still serving");
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[test]
fn connect_and_call_add_on_every_revision() {
    let demo = Demo::start();
    let console = Console::start(&[&demo.mcp(), "-H", "X-Trace: 1", "--revision", "2025-06-18"]);
    let initial = console.get("/api/connections").json();
    assert_eq!(initial["initial"]["url"], demo.mcp());
    assert_eq!(initial["initial"]["headers"], json!(["X-Trace: 1"]));
    assert_eq!(initial["initial"]["revision"], "2025-06-18");
    for revision in REVISIONS {
        let mark = console.events(0)["next"].as_u64().unwrap();
        let summary = console.ok(
            "/api/connect",
            &json!({"url": demo.mcp(), "revision": revision}),
        );
        assert_eq!(summary["revision"], revision);
        assert_eq!(
            summary["server"]["serverInfo"]["name"], "mcp-demo",
            "{summary}"
        );
        let conn = summary["conn"].clone();
        let tools = console.ok("/api/list", &json!({"conn": conn, "kind": "tools"}));
        assert!(
            tools["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "add")
        );
        let result = console.ok(
            "/api/call",
            &json!({"conn": conn, "name": "add", "arguments": {"a": 2, "b": 3}}),
        );
        assert!(text(&result).contains('5'), "{revision}: {result}");
        let read = console.ok("/api/read", &json!({"conn": conn, "uri": "res://items/7"}));
        assert!(
            read["contents"][0]["text"].as_str().is_some(),
            "{revision}: {read}"
        );
        // The protocol log saw the call go out and its answer come back.
        let events = console.events(mark);
        let messages: Vec<&Value> = events["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "message" && e["conn"] == conn)
            .collect();
        let call = messages
            .iter()
            .find(|e| e["dir"] == "sent" && e["message"]["method"] == "tools/call")
            .unwrap_or_else(|| panic!("{revision}: no tools/call in {messages:?}"));
        // From 2025-06-18 on, the revision rides in a header: the log shows the headers sent.
        if ["2025-06-18", "2025-11-25", "2026-07-28"].contains(&revision) {
            assert_eq!(
                call["headers"]["mcp-protocol-version"], revision,
                "{revision}: {call}"
            );
        }
        // Each request starts a trace of its own: in its `_meta`, its header (HTTP) and the
        // event the page shows it from.
        let trace = call["traceId"].as_str().unwrap_or_else(|| panic!("{call}"));
        let traceparent = call["message"]["params"]["_meta"]["traceparent"]
            .as_str()
            .unwrap_or_else(|| panic!("{call}"));
        assert_eq!(&traceparent[3..35], trace, "{call}");
        assert_eq!(call["headers"]["traceparent"], traceparent, "{call}");
        let id = &call["message"]["id"];
        assert!(
            messages.iter().any(|e| e["dir"] == "received"
                && &e["message"]["id"] == id
                && e["message"]["result"].is_object()),
            "{revision}: no answer to {id}"
        );
        console.ok("/api/disconnect", &json!({"conn": conn}));
    }
    // A connection that does not exist, a bad body: clear errors.
    let answer = console.post("/api/call", &json!({"conn": 999, "name": "add"}));
    assert_eq!(answer.status, 404);
    assert!(
        answer.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("999")
    );
    assert_eq!(console.post("/api/connect", &json!({})).status, 400);
    let refused = console.post("/api/connect", &json!({"url": "http://127.0.0.1:1/mcp"}));
    assert_eq!(refused.status, 502, "{}", refused.body);
}

#[test]
fn questions_are_answered_from_the_page_and_progress_is_reported() {
    let demo = Demo::start();
    let console = std::sync::Arc::new(Console::start(&[]));
    for revision in ["2025-03-26", "2025-06-18", "2026-07-28"] {
        let conn = console.ok(
            "/api/connect",
            &json!({"url": demo.mcp(), "revision": revision}),
        )["conn"]
            .clone();
        let mark = console.events(0)["next"].as_u64().unwrap();
        let caller = {
            let console = console.clone();
            let conn = conn.clone();
            std::thread::spawn(move || {
                console.ok(
                    "/api/call",
                    &json!({"conn": conn, "name": "deploy", "arguments": {"service": "web"}}),
                )
            })
        };
        let ask = console.wait_event(mark, |e| e["type"] == "ask" && e["conn"] == conn);
        assert_eq!(ask["method"], "elicitation/create");
        assert!(
            ask["params"]["message"].as_str().unwrap().contains("web"),
            "{ask}"
        );
        console.ok(
            "/api/answer",
            &json!({"ask": ask["ask"], "action": "accept", "content": {}}),
        );
        let result = caller.join().expect("the call returns");
        assert!(text(&result).contains("deployed"), "{revision}: {result}");
        // Answering twice is an error, not a second answer.
        assert_eq!(
            console
                .post(
                    "/api/answer",
                    &json!({"ask": ask["ask"], "action": "accept"})
                )
                .status,
            404
        );

        let mark = console.events(0)["next"].as_u64().unwrap();
        let result = console.ok(
            "/api/call",
            &json!({"conn": conn, "name": "count", "arguments": {"n": 3}, "call": "c1"}),
        );
        assert!(!text(&result).is_empty(), "{result}");
        let events = console.events(mark);
        let progress: Vec<f64> = events["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "progress" && e["call"] == "c1")
            .map(|e| e["progress"].as_f64().unwrap())
            .collect();
        assert_eq!(progress.len(), 3, "{revision}: {events}");
    }
}

#[test]
fn limits_hold() {
    let demo = Demo::start();
    // One connection at most; five events kept; no question may wait.
    let console = Console::start(&[
        "--max-connections",
        "1",
        "--max-events",
        "5",
        "--max-asks",
        "0",
    ]);
    let conn = console.ok("/api/connect", &json!({"url": demo.mcp()}))["conn"].clone();
    let second = console.post("/api/connect", &json!({"url": demo.mcp()}));
    assert_eq!(second.status, 429, "{}", second.body);
    let lens = console.ok("/api/lens", &json!({"url": demo.mcp()}));
    assert!(
        lens["columns"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("connections"))),
        "{lens}"
    );

    // The question is cancelled at once: the call ends without anyone answering.
    let result = console.ok(
        "/api/call",
        &json!({"conn": conn, "name": "deploy", "arguments": {"service": "web"}}),
    );
    assert!(!text(&result).contains("deployed web"), "{result}");
    let events = console.events(0);
    let list = events["events"].as_array().unwrap();
    assert!(list.len() <= 5, "{}", list.len());
    assert!(events["missed"].as_u64().unwrap() > 0, "{events}");
    assert!(list.iter().any(|e| e["type"] == "ask-refused"), "{events}");

    // Disconnecting frees the slot.
    console.ok("/api/disconnect", &json!({"conn": conn}));
    console.ok("/api/connect", &json!({"url": demo.mcp()}));
}

#[test]
fn the_lens_connects_once_per_revision() {
    let demo = Demo::start();
    let console = Console::start(&[]);
    let lens = console.ok("/api/lens", &json!({"url": demo.mcp()}));
    let columns = lens["columns"].as_array().unwrap();
    assert_eq!(columns.len(), 5);
    let column = |revision: &str| columns.iter().find(|c| c["revision"] == revision).unwrap();
    let tool = |revision: &str, name: &str| {
        column(revision)["tools"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
    };
    for revision in REVISIONS {
        assert_eq!(column(revision)["summary"]["revision"], revision);
    }
    // outputSchema and titles came with 2025-06-18: 2025-03-26 is offered neither.
    assert!(tool("2026-07-28", "add").unwrap()["outputSchema"].is_object());
    assert!(
        tool("2025-03-26", "add")
            .unwrap()
            .get("outputSchema")
            .is_none()
    );
    assert!(tool("2025-03-26", "add").unwrap().get("title").is_none());
    // Replay on every revision through the lens connections.
    for c in columns {
        let result = console.ok(
            "/api/call",
            &json!({"conn": c["summary"]["conn"], "name": "add", "arguments": {"a": 20, "b": 22}}),
        );
        assert!(text(&result).contains("42"), "{}: {result}", c["revision"]);
    }
}

#[test]
fn connects_to_a_stdio_server() {
    let command = support::stdio_demo().display().to_string();
    let console = Console::start(&["--stdio", &command]);
    let initial = console.get("/api/connections").json();
    assert_eq!(initial["initial"]["stdio"], command);
    let summary = console.ok("/api/connect", &json!({"stdio": command}));
    assert_eq!(summary["transport"], "stdio");
    let result = console.ok(
        "/api/call",
        &json!({"conn": summary["conn"], "name": "add", "arguments": {"a": 2, "b": 3}}),
    );
    assert!(text(&result).contains('5'), "{result}");
    let unterminated = console.post("/api/connect", &json!({"stdio": "x 'open"}));
    assert_eq!(unterminated.status, 400, "{}", unterminated.body);
}

/// Issue 44, finding 1 (c): the page runs only the commands given with `--stdio` (several may
/// be), unless `--allow-any-stdio`; another command is refused with 403 and a clear message,
/// and nothing runs.
#[test]
fn stdio_connections_run_only_the_commands_given_on_the_command_line() {
    let demo = support::stdio_demo().display().to_string();
    let marker = support::scratch("console-stdio-marker");
    let _ = std::fs::remove_file(&marker);
    let attack = format!("sh -c 'touch {}'", marker.display());
    let console = Console::start(&["--stdio", &demo, "--stdio", "true"]);
    let listed = console.get("/api/connections").json();
    assert_eq!(listed["stdio"]["choices"], json!([demo, "true"]));
    assert_eq!(listed["stdio"]["any"], false);
    for route in ["/api/connect", "/api/lens"] {
        let refused = console.post(route, &json!({"stdio": attack}));
        assert_eq!(refused.status, 403, "{route}: {}", refused.body);
        let message = refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            message.contains("--stdio") && message.contains("sh -c"),
            "{message}"
        );
        // The same refusal as a job of the page.
        let job = http(
            &console.addr,
            "POST",
            &format!("{route}?async=1"),
            &[
                ("X-Mcp-Console-Token", &console.token),
                ("Content-Type", "application/json"),
            ],
            Some(&json!({"stdio": attack}).to_string()),
        );
        assert_eq!(job.status, 202, "{}", job.body);
        let id = job.json()["job"].clone();
        let result = console.wait_event(0, |e| e["type"] == "result" && e["job"] == id);
        assert_eq!(result["status"], 403, "{result}");
    }
    assert!(!marker.exists(), "the refused command ran");
    // A command given on the command line runs.
    let summary = console.ok("/api/connect", &json!({"stdio": demo}));
    assert_eq!(summary["transport"], "stdio");
    drop(console);

    // Without --stdio, no command runs.
    let console = Console::start(&[]);
    let refused = console.post("/api/connect", &json!({"stdio": demo}));
    assert_eq!(refused.status, 403, "{}", refused.body);
    drop(console);

    // --allow-any-stdio (unsafe) lets the page run any command.
    let console = Console::start(&["--allow-any-stdio"]);
    assert_eq!(console.get("/api/connections").json()["stdio"]["any"], true);
    let summary = console.ok("/api/connect", &json!({"stdio": demo}));
    assert_eq!(summary["transport"], "stdio");
}

/// `mcp console --help` names --allow-any-stdio as unsafe.
#[test]
fn the_help_names_allow_any_stdio_unsafe() {
    let help = support::mcp(&["console", "--help"]);
    let text = help.ok();
    let line = text
        .lines()
        .skip_while(|l| !l.contains("--allow-any-stdio"))
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(line.contains("UNSAFE"), "{text}");
}

#[test]
fn resource_subscriptions_reach_the_page_on_every_revision() {
    let demo = Demo::start();
    let console = Console::start(&["--max-listeners", "1"]);
    for revision in REVISIONS {
        let conn = console.ok(
            "/api/connect",
            &json!({"url": demo.mcp(), "revision": revision}),
        )["conn"]
            .clone();
        let listener = console.ok(
            "/api/listen",
            &json!({"conn": conn, "uris": ["config://app"]}),
        );
        // At the limit, a second listener is refused.
        let second = console.post("/api/listen", &json!({"conn": conn, "tools": true}));
        assert_eq!(second.status, 429, "{revision}: {}", second.body);
        let mark = console.events(0)["next"].as_u64().unwrap();
        console.ok(
            "/api/call",
            &json!({"conn": conn, "name": "touch", "arguments": {}}),
        );
        let updated = console.wait_event(mark, |e| e["type"] == "listened" && e["conn"] == conn);
        assert_eq!(
            updated["method"], "notifications/resources/updated",
            "{revision}"
        );
        assert_eq!(updated["params"]["uri"], "config://app", "{revision}");
        console.ok("/api/unlisten", &json!({"listener": listener["listener"]}));
        assert_eq!(
            console
                .post("/api/unlisten", &json!({"listener": listener["listener"]}))
                .status,
            404
        );
        console.ok("/api/disconnect", &json!({"conn": conn}));
    }
    assert_eq!(console.post("/api/listen", &json!({"conn": 1})).status, 404);
}

/// Issue 44 (the console's `--no-browser` must apply to its login): with `--no-browser`
/// nothing listens for the browser; the page is told to take back the address the browser
/// was sent to, and the login goes on with it.
#[test]
fn no_browser_logins_take_the_address_from_the_page() {
    let protected = Demo::start_with(&["--auth", "--auth-auto-approve"]);
    let tokens = support::scratch("console-no-browser-tokens")
        .with_extension("json")
        .display()
        .to_string();
    let console = Console::start(&["--no-browser", "--token-file", &tokens]);
    let job = http(
        &console.addr,
        "POST",
        "/api/connect?async=1",
        &[
            ("X-Mcp-Console-Token", &console.token),
            ("Content-Type", "application/json"),
        ],
        Some(&json!({"url": protected.mcp()}).to_string()),
    );
    assert_eq!(job.status, 202, "{}", job.body);
    let job = job.json()["job"].clone();
    let authorize = console.wait_event(0, |e| e["type"] == "authorize");
    assert_eq!(authorize["paste"], true, "{authorize}");
    let url = authorize["url"].as_str().unwrap();
    // The user's browser: the authorization server approves at once and redirects.
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let approved = http(addr, "GET", path, &[], None);
    assert!(
        (300..400).contains(&approved.status),
        "{}: {}",
        approved.status,
        approved.body
    );
    let address = approved.header("location").unwrap().to_owned();
    assert!(address.contains("code="), "{address}");
    // A login that does not wait is an error; the right one goes on.
    let wrong = console.post(
        "/api/login-address",
        &json!({"login": 999_999, "address": address}),
    );
    assert_eq!(wrong.status, 404, "{}", wrong.body);
    console.ok(
        "/api/login-address",
        &json!({"login": authorize["login"], "address": address}),
    );
    let result = console.wait_event(0, |e| e["type"] == "result" && e["job"] == job);
    assert_eq!(result["status"], 200, "{result}");
    assert_eq!(result["body"]["server"]["serverInfo"]["name"], "mcp-demo");
    let kept = std::fs::read_to_string(&tokens).expect("the console kept the tokens");
    assert!(kept.contains(&protected.mcp()), "{kept}");
}

/// The page's actions run as jobs (`?async=1`): answered at once, the result on the event
/// stream and from `/api/result`; at `--max-actions` running jobs one more is refused (429)
/// naming the limit, and a finished job frees its place.
#[test]
fn actions_run_as_bounded_jobs() {
    let demo = Demo::start();
    let console = Console::start(&["--max-actions", "1"]);
    let conn = console.ok("/api/connect", &json!({"url": demo.mcp()}))["conn"].clone();
    let start = |body: &Value| {
        http(
            &console.addr,
            "POST",
            "/api/call?async=1",
            &[
                ("X-Mcp-Console-Token", &console.token),
                ("Content-Type", "application/json"),
            ],
            Some(&body.to_string()),
        )
    };
    let deploy = json!({"conn": conn, "name": "deploy", "arguments": {"service": "web"}});
    let first = start(&deploy);
    assert_eq!(first.status, 202, "{}", first.body);
    let job = first.json()["job"].clone();
    let ask = console.wait_event(0, |e| e["type"] == "ask");
    // The job waits for its question: the next one is refused.
    let second = start(&deploy);
    assert_eq!(second.status, 429, "{}", second.body);
    assert!(second.body.contains("--max-actions"), "{}", second.body);
    assert_eq!(
        console.get(&format!("/api/result?job={job}")).status,
        404,
        "no result yet"
    );
    console.ok(
        "/api/answer",
        &json!({"ask": ask["ask"], "action": "accept", "content": {}}),
    );
    let done = console.wait_event(0, |e| e["type"] == "result" && e["job"] == job);
    assert_eq!(done["status"], 200, "{done}");
    assert!(text(&done["body"]).contains("deployed web"), "{done}");
    let kept = console.get(&format!("/api/result?job={job}"));
    assert_eq!(kept.status, 200);
    assert_eq!(kept.json()["body"], done["body"]);
    // Its place is free again.
    let third = start(&json!({"conn": conn, "name": "add", "arguments": {"a": 1, "b": 2}}));
    assert_eq!(third.status, 202, "{}", third.body);
}

/// Issue 47: a request over the console's body cap is refused with 413, and the answer names
/// the cap and the flag that raises it (`--max-body`), which `mcp console --help` documents.
#[test]
fn an_oversized_request_names_the_cap_and_its_flag() {
    let demo = Demo::start();
    let padding = "x".repeat(5000);
    let body = json!({"url": demo.mcp(), "padding": padding});
    // The default cap (4 MiB): a 5 MB body is refused, naming 4194304 bytes.
    let console = Console::start(&[]);
    let huge = json!({"url": demo.mcp(), "padding": "y".repeat(5_000_000)});
    let refused = console.post("/api/connect", &huge);
    assert_eq!(refused.status, 413, "{}", refused.body);
    let message = refused.json()["error"]["message"]
        .as_str()
        .expect("a message")
        .to_owned();
    assert!(message.contains("4194304 bytes"), "{message}");
    assert!(
        message.contains("mcp console --max-body BYTES"),
        "{message}"
    );
    // Under the cap the same request goes through.
    console.ok("/api/connect", &body);
    drop(console);

    // A lower cap refuses what the default took, and says so.
    let console = Console::start(&["--max-body", "2048"]);
    let refused = console.post("/api/connect", &body);
    assert_eq!(refused.status, 413, "{}", refused.body);
    assert!(refused.body.contains("2048 bytes"), "{}", refused.body);
    assert!(refused.body.contains("--max-body"), "{}", refused.body);
    console.ok("/api/connect", &json!({"url": demo.mcp()}));

    let help = support::mcp(&["console", "--help"]);
    assert!(help.ok().contains("--max-body <BYTES>"), "{}", help.stdout);
}

/// Issue 47: the prompt forms' completion goes through `/api/complete`: a prompt argument with
/// the other filled arguments as context, a template variable, on each revision; bad requests
/// are refused with 400.
#[test]
fn completion_of_prompt_arguments_through_the_api() {
    let demo = Demo::start();
    let console = Console::start(&[]);
    for revision in ["2026-07-28", "2025-06-18", "2025-03-26"] {
        let conn = console.ok(
            "/api/connect",
            &json!({"url": demo.mcp(), "revision": revision}),
        )["conn"]
            .clone();
        let answer = console.ok(
            "/api/complete",
            &json!({"conn": conn, "ref": {"type": "ref/prompt", "name": "greet"},
                    "argument": {"name": "name", "value": "Al"},
                    "context": {"arguments": {"tone": "warm"}}}),
        );
        assert_eq!(
            answer["completion"]["values"],
            json!(["Alice", "Albert"]),
            "{revision}: {answer}"
        );
        let answer = console.ok(
            "/api/complete",
            &json!({"conn": conn, "ref": {"type": "ref/resource", "uri": "res://items/{id}"},
                    "argument": {"name": "id", "value": "B"}}),
        );
        assert_eq!(answer["completion"]["values"], json!(["Bob"]), "{revision}");
        let bad = console.post(
            "/api/complete",
            &json!({"conn": conn, "argument": {"name": "name", "value": "Al"}}),
        );
        assert_eq!(bad.status, 400, "{}", bad.body);
    }
    // The page asks as the user types in a prompt's argument fields, debounced.
    let page = http(&console.addr, "GET", "/", &[], None).body;
    assert!(
        page.contains("ref/prompt"),
        "the prompt forms ask for completions"
    );
    assert!(page.contains("COMPLETE_DELAY"), "the asking is debounced");
}
