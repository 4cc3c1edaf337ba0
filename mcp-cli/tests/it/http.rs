//! The `mcp` binary against the HTTP demo server (`mcp-demo` on 127.0.0.1, a port per test):
//! every command over Streamable HTTP, every revision pinned, HTTP+SSE with `--transport sse`
//! and by fallback, `discover` on both transports, `listen` on both eras, questions, and a
//! refused connection's exit code.

use crate::support;

use support::{Demo, Running, mcp, mcp_with_input};

const REVISIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// `mcp <command> URL --timeout 30 <rest>`.
fn run(command: &str, url: &str, rest: &[&str]) -> support::Run {
    let mut args = vec![command, url, "--timeout", "30"];
    args.extend_from_slice(rest);
    mcp(&args)
}

#[test]
fn every_command_over_streamable_http() {
    let demo = Demo::start();
    let url = demo.mcp();
    let tools = run("tools", &url, &[]);
    assert!(
        tools.ok().contains("add     a:integer b:integer"),
        "{}",
        tools.stdout
    );
    let listed = run("tools", &url, &["--json"]).json();
    assert!(listed["tools"].as_array().is_some_and(|t| t.len() >= 5));

    let sum = run("call", &url, &["add", "a=20", "b=22", "--json"]).json();
    assert_eq!(sum["structuredContent"]["sum"], 42);
    let counted = run("call", &url, &["count", "n=2"]);
    assert_eq!(counted.ok(), "counted to 2\n");
    assert!(
        counted.stderr.contains("progress 2/2 step 2"),
        "{}",
        counted.stderr
    );
    assert!(
        counted.stderr.contains("[info] counted 1"),
        "{}",
        counted.stderr
    );
    let deployed = run(
        "call",
        &url,
        &["deploy", "service=web", "--answer", "accept"],
    );
    assert_eq!(deployed.ok(), "deployed web\n");

    let resources = run("resources", &url, &["--json"]).json();
    let uris: Vec<&str> = resources["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&"config://app"), "{uris:?}");
    assert_eq!(run("read", &url, &["res://items/9"]).ok(), "item 9\n");

    let prompts = run("prompts", &url, &[]);
    assert!(prompts.ok().contains("greet"), "{}", prompts.stdout);
    let greeting = run("prompt", &url, &["greet", "name=Lin", "--json"]).json();
    assert_eq!(
        greeting["messages"][0]["content"]["text"],
        "Please greet Lin warmly."
    );
}

#[test]
fn every_revision_pinned_over_streamable_http() {
    let demo = Demo::start();
    let url = demo.mcp();
    for revision in REVISIONS {
        for (answer, expected) in [
            ("accept", "deployed web"),
            ("decline", "stopped at decline"),
        ] {
            let out = run(
                "call",
                &url,
                &[
                    "--revision",
                    revision,
                    "--answer",
                    answer,
                    "deploy",
                    "service=web",
                ],
            );
            assert_eq!(out.ok(), format!("{expected}\n"), "{revision} {answer}");
        }
    }
}

#[test]
fn http_sse_by_flag_and_by_fallback() {
    let demo = Demo::start();
    let sse = demo.sse();
    for revision in ["2024-11-05", "2025-06-18"] {
        let out = run(
            "call",
            &sse,
            &[
                "--transport",
                "sse",
                "--revision",
                revision,
                "echo",
                "text=over sse",
            ],
        );
        assert_eq!(out.ok(), "over sse\n", "{revision}");
    }
    let asked = run(
        "call",
        &sse,
        &[
            "--transport",
            "sse",
            "--answer",
            "accept",
            "deploy",
            "service=db",
        ],
    );
    assert_eq!(asked.ok(), "deployed db\n");
    // auto: Streamable HTTP is refused at the SSE URL, so the client falls back to HTTP+SSE.
    let tools = run("tools", &sse, &["--json"]).json();
    assert!(tools["tools"].as_array().is_some_and(|t| !t.is_empty()));
}

#[test]
fn discover_probes_both_transports() {
    let demo = Demo::start();
    let streamable = run("discover", &demo.mcp(), &["--json"]).json();
    assert_eq!(streamable["serverInfo"]["name"], "mcp-demo");
    assert_eq!(streamable["negotiated"], "2026-07-28");
    let rows = streamable["revisions"].as_array().expect("revisions");
    assert_eq!(rows.len(), 5);
    for row in rows {
        assert_eq!(row["transport"], "streamable-http");
        assert_eq!(row["speaks"], true, "{row}");
    }
    let sse = run("discover", &demo.sse(), &["--transport", "sse", "--json"]).json();
    let speaks = |revision: &str| {
        sse["revisions"]
            .as_array()
            .expect("revisions")
            .iter()
            .find(|r| r["revision"] == revision)
            .map(|r| r["speaks"] == true)
    };
    assert_eq!(speaks("2024-11-05"), Some(true), "{sse}");
    // HTTP+SSE carries only the revisions with a handshake.
    assert_eq!(speaks("2026-07-28"), Some(false), "{sse}");
    let text = run("discover", &demo.sse(), &["--transport", "sse"]);
    assert!(
        text.ok().contains("2024-11-05  http+sse   yes"),
        "{}",
        text.stdout
    );
}

#[test]
fn listen_over_http_on_both_eras() {
    let demo = Demo::start();
    let url = demo.mcp();
    for revision in ["2026-07-28", "2025-06-18"] {
        let listener = Running::start(&[
            "listen",
            &url,
            "--revision",
            revision,
            "--count",
            "0",
            "--json",
        ]);
        let line = listener.wait_for_stderr("listening for");
        assert!(line.contains("list changes"), "{line}");
        let done = listener.finish();
        assert_eq!(done.code, 0, "{revision}: {done:?}");
    }
}

/// `mcp listen` subscribed to `config://app`, on Streamable HTTP or (`sse`) HTTP+SSE.
fn listen_to_config(url: &str, revision: &str, sse: bool, extra: &[&str]) -> Running {
    let mut args = vec![
        "listen",
        url,
        "--revision",
        revision,
        "--resource",
        "config://app",
        "--count",
        "1",
        "--json",
        "--timeout",
        "30",
    ];
    if sse {
        args.extend(["--transport", "sse"]);
    }
    args.extend_from_slice(extra);
    Running::start(&args)
}

/// Newcomer point 5: the server restarts (a new process on the same port, which has forgotten
/// every session); `listen` notices, reconnects, subscribes again, and gets the next update.
#[test]
fn listen_reconnects_and_subscribes_again_after_a_restart() {
    for (revision, sse) in [
        ("2026-07-28", false),
        ("2025-06-18", false),
        ("2024-11-05", true),
    ] {
        let demo = Demo::start();
        let port = demo.port();
        let url = if sse { demo.sse() } else { demo.mcp() };
        let listener = listen_to_config(&url, revision, sse, &[]);
        listener.wait_for_stderr("listening for");
        drop(demo);
        let demo = Demo::start_on(port, &[]);
        let line = listener.wait_for_stderr("reconnected;");
        assert!(
            line.contains("updates of config://app"),
            "{revision}: {line}"
        );
        let touched = run("call", &demo.mcp(), &["touch"]);
        assert_eq!(touched.code, 0, "{revision}: {touched:?}");
        let done = listener.finish();
        assert_eq!(done.code, 0, "{revision}: {done:?}");
        let update: serde_json::Value =
            serde_json::from_str(done.stdout.trim()).expect("one JSON line");
        assert_eq!(
            update["method"], "notifications/resources/updated",
            "{revision}"
        );
        assert_eq!(update["params"]["uri"], "config://app", "{revision}");
    }
}

/// Issue 47: a server stopped with SIGTERM drains and ends the subscription cleanly (on
/// 2026-07-28 it answers `subscriptions/listen`; on the handshake revisions it closes the
/// streams); the user did not ask to stop, so `listen` reconnects to the server started in its
/// place instead of exiting 0, and gets the next update there.
#[test]
fn listen_reconnects_after_a_sigterm_drain() {
    for (revision, sse) in [
        ("2026-07-28", false),
        ("2025-06-18", false),
        ("2024-11-05", true),
    ] {
        let demo = Demo::start_with(&["--drain-period", "0"]);
        let port = demo.port();
        let url = if sse { demo.sse() } else { demo.mcp() };
        let listener = listen_to_config(&url, revision, sse, &[]);
        listener.wait_for_stderr("listening for");
        demo.terminate();
        let demo = Demo::start_on(port, &["--drain-period", "0"]);
        let line = listener.wait_for_stderr("reconnected;");
        assert!(
            line.contains("updates of config://app"),
            "{revision}: {line}"
        );
        let touched = run("call", &demo.mcp(), &["touch"]);
        assert_eq!(touched.code, 0, "{revision}: {touched:?}");
        let done = listener.finish();
        assert_eq!(done.code, 0, "{revision}: {done:?}");
        let update: serde_json::Value =
            serde_json::from_str(done.stdout.trim()).expect("one JSON line");
        assert_eq!(
            update["method"], "notifications/resources/updated",
            "{revision}: {done:?}"
        );
        assert_eq!(update["params"]["uri"], "config://app", "{revision}");
    }
}

/// Newcomer point 5: a server that stays away ends `listen` with exit code 3 once
/// `--reconnect-for` has passed, instead of claiming to listen forever.
#[test]
fn listen_gives_up_when_the_server_stays_away() {
    for (revision, sse) in [("2026-07-28", false), ("2025-03-26", true)] {
        let demo = Demo::start();
        let url = if sse { demo.sse() } else { demo.mcp() };
        let listener = listen_to_config(&url, revision, sse, &["--reconnect-for", "1"]);
        listener.wait_for_stderr("listening for");
        drop(demo);
        listener.wait_for_stderr("lost the connection to the server");
        let done = listener.finish();
        assert_eq!(done.code, 3, "{revision}: {done:?}");
        assert!(
            done.stderr.contains("could not reconnect within 1s"),
            "{revision}: {}",
            done.stderr
        );
        assert!(done.stdout.is_empty(), "{revision}: {}", done.stdout);
    }
}

#[test]
fn questions_prompted_on_stdin_over_http() {
    let demo = Demo::start();
    let url = demo.mcp();
    for revision in ["2026-07-28", "2025-06-18", "2025-03-26"] {
        let out = mcp_with_input(
            &[
                "call",
                &url,
                "--revision",
                revision,
                "--interactive",
                "rename",
                "path=a.txt",
            ],
            "a\na\nz.txt\n",
        );
        assert_eq!(out.ok(), "renamed a.txt to z.txt\n", "{revision}");
        assert!(
            out.stderr
                .contains("? The server asks: New name for a.txt?")
        );
    }
}

#[test]
fn a_refused_connection_exits_3_with_one_line() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let out = run("tools", &url, &[]);
    assert_eq!(out.code, 3, "{out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with("mcp: error [transport]: cannot connect to"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("(try: is the server running"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_wrong_path_names_the_usual_endpoints() {
    let demo = Demo::start();
    let out = run("tools", &format!("{}/nope", demo.base), &[]);
    assert_eq!(out.code, 3, "{out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with("mcp: error [http 404]: "),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("usually at /mcp"), "{}", lines[0]);
}

/// A `client_credentials` token from the demo's development authorization server, by a
/// plain HTTP/1.1 request (client `script`, secret `s3cret`).
fn client_credentials_token(base: &str, scope: &str) -> String {
    use std::io::{Read as _, Write as _};
    let authority = base.strip_prefix("http://").expect("an http base");
    let resource = format!("{base}/mcp");
    let form = format!(
        "grant_type=client_credentials&scope={}&resource={}",
        scope.replace(' ', "%20"),
        resource.replace(':', "%3A").replace('/', "%2F")
    );
    let request = format!(
        "POST /token HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Basic c2NyaXB0OnMzY3JldA==\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    );
    let mut tcp = std::net::TcpStream::connect(authority).expect("the demo accepts");
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    tcp.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let body = &response[response.find("\r\n\r\n").expect("a body") + 4..];
    let token: serde_json::Value = serde_json::from_str(body).expect("a JSON token response");
    token["access_token"]
        .as_str()
        .expect("an access token")
        .to_owned()
}

#[test]
fn a_protected_demo_is_called_with_a_bearer_token() {
    // The README's "Protecting a server" commands: the demo with --auth, a token taken with
    // client_credentials, and `mcp -H "Authorization: Bearer ..."`.
    // The client's secret comes from a file, never the command line.
    let clients = std::env::temp_dir().join(format!("mcp-demo-clients-{}", std::process::id()));
    std::fs::write(&clients, "script:s3cret=http://127.0.0.1/unused\n").unwrap();
    let demo = Demo::start_with(&["--auth", "--auth-client-file", clients.to_str().unwrap()]);
    let _ = std::fs::remove_file(&clients);
    let url = demo.mcp();
    let refused = run("tools", &url, &[]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(refused.stderr.contains("401"), "{}", refused.stderr);

    let read = format!(
        "Authorization: Bearer {}",
        client_credentials_token(&demo.base, "mcp:read")
    );
    let tools = run("tools", &url, &["-H", &read]);
    assert!(tools.ok().contains("deploy"), "{}", tools.stdout);
    let sum = run("call", &url, &["add", "a=1", "b=2", "--json", "-H", &read]).json();
    assert_eq!(sum["structuredContent"]["sum"], 3);
    // deploy needs mcp:deploy: the read-only token gets 403 insufficient_scope.
    let narrow = run(
        "call",
        &url,
        &["deploy", "service=web", "--answer", "accept", "-H", &read],
    );
    assert_ne!(narrow.code, 0, "{}", narrow.stdout);
    assert!(narrow.stderr.contains("403"), "{}", narrow.stderr);

    let wide = format!(
        "Authorization: Bearer {}",
        client_credentials_token(&demo.base, "mcp:read mcp:deploy")
    );
    let deployed = run(
        "call",
        &url,
        &["deploy", "service=web", "--answer", "accept", "-H", &wide],
    );
    assert_eq!(deployed.ok(), "deployed web\n");
}

/// Ctrl-C while a prompt waits for the user ends `mcp` at once with 130 (issue 33, point 1):
/// the read of the terminal no longer keeps the process alive.
#[test]
fn ctrl_c_at_a_prompt_exits() {
    let demo = Demo::start();
    let url = demo.mcp();
    let running = Running::start_with_stdin(
        &["--interactive", "call", &url, "deploy", "service=web"],
        std::process::Stdio::piped(),
    );
    running.wait_for_stderr("? The server asks: Deploy web?");
    running.interrupt();
    let run = running.finish();
    assert_eq!(run.code, 130, "{}", run.stderr);
    assert!(run.stderr.contains("interrupted"), "{}", run.stderr);
}

/// Issue 47: `--timeout` bounds the machines, not the person: the time spent reading and
/// answering a question on the terminal is not counted, on either kind of question (a
/// 2026-07-28 input-required round, a pushed request on 2025-06-18).
#[test]
fn the_timeout_does_not_count_the_time_spent_answering() {
    let demo = Demo::start();
    let url = demo.mcp();
    for revision in ["2026-07-28", "2025-06-18"] {
        let mut running = Running::start_with_stdin(
            &[
                "--interactive",
                "call",
                &url,
                "deploy",
                "service=web",
                "--revision",
                revision,
                "--timeout",
                "2",
            ],
            std::process::Stdio::piped(),
        );
        running.wait_for_stderr("? The server asks: Deploy web?");
        // The person reads for longer than the whole --timeout: this pause is the time under
        // test (a slow human), not a synchronisation.
        std::thread::sleep(std::time::Duration::from_secs(3));
        running.type_in("a\n");
        let run = running.finish();
        assert_eq!(run.code, 0, "{revision}: {run:?}");
        assert_eq!(run.stdout, "deployed web\n", "{revision}: {run:?}");
    }
}

/// The one error line of a failed run, asserted to be a single line with `label`.
fn error_line(out: &support::Run, label: &str) -> String {
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].starts_with(&format!("mcp: error [{label}]: ")),
        "{}",
        lines[0]
    );
    lines[0].to_owned()
}

/// Issue 47: the hints of a transport or revision mix-up point the right way.
#[test]
fn mix_ups_get_hints_that_point_the_right_way() {
    let demo = Demo::start();
    // --transport sse aimed at the Streamable HTTP endpoint.
    let out = run("tools", &demo.mcp(), &["--transport", "sse"]);
    assert_eq!(out.code, 3, "{out:?}");
    let line = error_line(&out, "http 400");
    assert!(
        line.contains("(try: this is a Streamable HTTP endpoint (/mcp), not an HTTP+SSE stream: drop --transport sse"),
        "{line}"
    );
    // 2026-07-28 over HTTP+SSE, at the /sse URL or at /mcp.
    for url in [demo.sse(), demo.mcp()] {
        let out = run(
            "tools",
            &url,
            &["--transport", "sse", "--revision", "2026-07-28"],
        );
        assert_ne!(out.code, 0, "{out:?}");
        let line = out.stderr.trim();
        assert!(
            line.contains("(try: HTTP+SSE carries only the revisions with an initialize handshake"),
            "{line}"
        );
        assert!(line.contains("drop --transport sse"), "{line}");
        assert!(!line.contains("mcp tools`)"), "{line}");
    }
    // https:// to the plain-HTTP demo.
    let https = demo.mcp().replacen("http://", "https://", 1);
    let out = run("tools", &https, &[]);
    assert_eq!(out.code, 3, "{out:?}");
    let line = error_line(&out, "tls");
    assert!(line.contains("answered in plain HTTP, not TLS"), "{line}");
    assert!(
        line.contains("(try: the server speaks plain HTTP; use http:// instead of https://)"),
        "{line}"
    );
}

/// Issue 47: `mcp complete` reaches the demo's completion of `greet` (the README lists it) and
/// of the `res://items/{id}` template, on every revision.
#[test]
fn complete_a_prompt_argument_and_a_template_variable() {
    let demo = Demo::start();
    let url = demo.mcp();
    for revision in REVISIONS {
        let out = run(
            "complete",
            &url,
            &[
                "--revision",
                revision,
                "--prompt",
                "greet",
                "--arg",
                "name=Al",
            ],
        );
        assert_eq!(out.ok(), "Alice\nAlbert\n", "{revision}: {out:?}");
        let json = run(
            "complete",
            &url,
            &[
                "--revision",
                revision,
                "--resource-template",
                "res://items/{id}",
                "--arg",
                "id=B",
                "--json",
            ],
        )
        .json();
        assert_eq!(
            json["completion"]["values"],
            serde_json::json!(["Bob"]),
            "{revision}: {json}"
        );
    }
    // Earlier --args are the context; an empty value lists everything.
    let out = run(
        "complete",
        &url,
        &["--prompt", "greet", "--arg", "tone=warm", "--arg", "name="],
    );
    assert_eq!(out.ok(), "Alice\nAlbert\nBob\n", "{out:?}");
    // Nothing matches: empty stdout, a note on stderr.
    let none = run(
        "complete",
        &url,
        &["--prompt", "greet", "--arg", "name=Zed"],
    );
    assert_eq!(none.ok(), "");
    assert!(none.stderr.contains("no completions"), "{}", none.stderr);
    // Usage: neither --prompt nor --resource-template, or a bad --arg.
    let usage = run("complete", &url, &["--arg", "name=Al"]);
    assert_eq!(usage.code, 2, "{usage:?}");
    let usage = run("complete", &url, &["--prompt", "greet", "--arg", "nameAl"]);
    assert_eq!(usage.code, 2, "{usage:?}");
    assert!(usage.stderr.contains("NAME=VALUE"), "{}", usage.stderr);
}
