//! The `mcp` binary against the stdio demo server (`mcp-stdio-demo`): every command, human and
//! `--json` output, questions answered by `--answer` and through stdin, progress and log lines,
//! errors and exit codes, and every revision pinned with what the CLI sent validated against
//! the official schemas.

use crate::support;

use serde_json::Value;
use support::{Running, mcp, mcp_with_input, recorded_demo, schema, scratch, stdio_demo};

const REVISIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

fn demo() -> String {
    stdio_demo().display().to_string()
}

/// `mcp <command> --stdio DEMO --timeout 30 <rest>`.
fn run(command: &str, rest: &[&str]) -> support::Run {
    let demo = demo();
    let mut args = vec![command, "--stdio", &demo, "--timeout", "30"];
    args.extend_from_slice(rest);
    mcp(&args)
}

fn single_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one error line, got {stderr:?}");
    lines[0]
}

#[test]
fn tools_as_a_table_and_as_json() {
    let table = run("tools", &[]);
    let out = table.ok();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{out}");
    let column = lines[0].find("ARGUMENTS").expect("an ARGUMENTS column");
    let add = lines
        .iter()
        .find(|l| l.starts_with("add "))
        .expect("add is listed");
    assert_eq!(
        &add[column..column + 19],
        "a:integer b:integer",
        "aligned: {out}"
    );
    assert!(
        lines.iter().all(|l| l == &l.trim_end()),
        "no trailing spaces"
    );

    let json = run("tools", &["--json"]).json();
    let tools = json["tools"].as_array().expect("a tools array");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for expected in ["add", "echo", "deploy", "boom", "count"] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let add = tools.iter().find(|t| t["name"] == "add").expect("add");
    assert_eq!(add["inputSchema"]["type"], "object");
}

#[test]
fn call_reads_json_and_key_values() {
    let sum = run("call", &["add", "a=2", "b=40", "--json"]).json();
    assert_eq!(sum["structuredContent"]["sum"], 42);
    let object = run("call", &["add", r#"{"a": 1, "b": 2}"#, "--json"]).json();
    assert_eq!(object["structuredContent"]["sum"], 3);
    // JSON when it parses, a string otherwise, and := forces a string.
    assert_eq!(
        run("call", &["echo", "text=hello world"]).ok(),
        "hello world\n"
    );
    assert_eq!(run("call", &["echo", "text:=123"]).ok(), "123\n");
    let number = run("call", &["echo", "text=123"]);
    assert_eq!(number.code, 1, "a number where a string is due: {number:?}");
}

#[test]
fn a_tool_error_exits_1_with_one_line() {
    let boom = run("call", &["boom"]);
    assert_eq!(boom.code, 1, "{boom:?}");
    let line = single_line(&boom.stderr);
    assert!(
        line.starts_with("mcp: error [tool]: tool \"boom\" reported an error: boom"),
        "{line}"
    );
    let json = run("call", &["boom", "--json"]);
    assert_eq!(json.code, 1);
    assert_eq!(json.json()["isError"], true);
}

#[test]
fn a_server_refusal_exits_4_with_its_code() {
    let unknown = run("read", &["res://items/missing"]);
    assert_eq!(unknown.code, 4, "{unknown:?}");
    let line = single_line(&unknown.stderr);
    assert!(line.starts_with("mcp: error [-32"), "{line}");
    assert!(line.contains("(try: "), "{line}");
}

#[test]
fn usage_and_connection_errors() {
    let cases: [(&[&str], i32); 10] = [
        (&["tools"], 2),
        (&["tools", "not-a-url"], 2),
        (&["tools", "--stdio", "x", "--revision", "2099-01-01"], 2),
        (&["call", "--stdio", "x", "add", "{bad"], 2),
        (
            &["tools", "--stdio", "/nonexistent/mcp-server-for-tests"],
            3,
        ),
        (&["call", "--stdio", "x"], 2),
        (&["tools", "--stdio", "x", "--timeout", "1e300"], 2),
        (&["tools", "--stdio", "x", "--timeout", "0"], 2),
        (&["tools", "--stdio", "x", "--answer", "maybe"], 2),
        (&["tools", "--stdio", "x", "-H", "no colon"], 2),
    ];
    for (args, code) in cases {
        let run = mcp(args);
        assert_eq!(run.code, code, "{args:?}: {run:?}");
        let line = single_line(&run.stderr);
        assert!(line.starts_with("mcp: error ["), "{line}");
    }
    let help = mcp(&["--help"]);
    let text = help.ok();
    assert!(text.contains("Exit codes:"), "{text}");
    assert!(text.contains("7  the server asked a question"), "{text}");
    let call_help = mcp(&["call", "--help"]);
    assert!(
        call_help.ok().contains("key:=value always sends a string"),
        "{}",
        call_help.stdout
    );
}

#[test]
fn every_revision_answers_questions_and_sends_valid_messages() {
    for revision in REVISIONS {
        for (answer, expected) in [
            ("accept", "deployed web"),
            ("decline", "stopped at decline"),
        ] {
            let log = scratch(&format!("deploy-{revision}-{answer}"));
            let command = recorded_demo(&log);
            let out = mcp(&[
                "call",
                "--stdio",
                &command,
                "--revision",
                revision,
                "--timeout",
                "30",
                "--answer",
                answer,
                "deploy",
                "service=web",
            ]);
            assert_eq!(out.ok(), format!("{expected}\n"), "{revision} {answer}");
            let sent = schema::check_log(&log, revision);
            assert!(
                sent.iter().any(|m| m["method"] == "tools/call"),
                "{revision}: {sent:?}"
            );
        }
    }
}

#[test]
fn two_questions_take_two_answers() {
    let out = run(
        "call",
        &[
            "rename",
            "path=a.txt",
            "--answer",
            "accept",
            "--answer",
            r#"{"name": "b.txt"}"#,
        ],
    );
    assert_eq!(out.ok(), "renamed a.txt to b.txt\n");
    let cancelled = run("call", &["rename", "path=a.txt", "--answer", "cancel"]);
    assert_eq!(cancelled.ok(), "stopped at cancel\n");
}

#[test]
fn questions_are_prompted_field_by_field_on_stdin() {
    let demo = demo();
    let typed = "yes\nwhat\naccept\n\nnew.txt\n";
    let out = mcp_with_input(
        &[
            "call",
            "--stdio",
            &demo,
            "--interactive",
            "rename",
            "path=a.txt",
        ],
        typed,
    );
    assert_eq!(out.ok(), "renamed a.txt to new.txt\n");
    assert!(
        out.stderr.contains("? The server asks: Rename a.txt?"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("? The server asks: New name for a.txt?")
    );
    assert!(out.stderr.contains("! type a, d or c"));
    assert!(out.stderr.contains("! New name is required"));
    assert!(out.stderr.contains("New name: The new file name"));
    let declined = mcp_with_input(
        &[
            "call",
            "--stdio",
            &demo,
            "--interactive",
            "deploy",
            "service=web",
        ],
        "d\n",
    );
    assert_eq!(declined.ok(), "stopped at decline\n");
}

#[test]
fn an_unanswerable_question_exits_7() {
    let out = run("call", &["deploy", "service=web"]);
    assert_eq!(out.code, 7, "{out:?}");
    let line = single_line(&out.stderr);
    assert!(
        line.contains("Deploy web?") && line.contains("--answer"),
        "{line}"
    );
}

#[test]
fn progress_and_logs_go_to_stderr_as_lines() {
    let out = run("call", &["count", "n=3"]);
    assert_eq!(out.ok(), "counted to 3\n");
    for expected in [
        "progress 1/3 step 1",
        "progress 3/3 step 3",
        "[info]",
        "counted 2",
    ] {
        assert!(
            out.stderr.contains(expected),
            "{expected:?} in {}",
            out.stderr
        );
    }
    let quiet = run("call", &["count", "n=2", "--log-level", "error"]);
    assert!(!quiet.stderr.contains("[info]"), "{}", quiet.stderr);
}

#[test]
fn resources_and_read() {
    let out = run("resources", &[]);
    let table = out.ok();
    assert!(table.starts_with("URI "), "{table}");
    assert!(table.contains("config://app"), "{table}");
    assert!(table.contains("res://items/{id}"), "{table}");
    let json = run("resources", &["--json"]).json();
    assert!(json["resources"].as_array().is_some_and(|r| !r.is_empty()));
    assert_eq!(
        json["resourceTemplates"][0]["uriTemplate"],
        "res://items/{id}"
    );

    let config = run("read", &["config://app"]);
    let parsed: Value = serde_json::from_str(config.ok()).expect("the config is JSON");
    assert_eq!(parsed["mode"], "demo");
    assert_eq!(run("read", &["res://items/7"]).ok(), "item 7\n");
    let json = run("read", &["res://items/7", "--json"]).json();
    assert_eq!(json["contents"][0]["text"], "item 7");
}

#[test]
fn prompts_and_prompt() {
    let table = run("prompts", &[]);
    assert!(table.ok().contains("greet  name "), "{}", table.stdout);
    assert_eq!(
        run("prompts", &["--json"]).json()["prompts"][0]["name"],
        "greet"
    );
    assert_eq!(
        run("prompt", &["greet", "name=Ada"]).ok(),
        "[user] Please greet Ada warmly.\n"
    );
    let json = run("prompt", &["greet", "name=Ada", "--json"]).json();
    assert_eq!(json["messages"][0]["role"], "user");
}

#[test]
fn discover_probes_every_revision() {
    let json = run("discover", &["--json"]).json();
    assert_eq!(json["serverInfo"]["name"], "mcp-stdio-demo");
    assert_eq!(json["negotiated"], "2026-07-28");
    let revisions = json["revisions"].as_array().expect("revisions");
    assert_eq!(revisions.len(), 5);
    for row in revisions {
        assert_eq!(row["speaks"], true, "{row}");
        assert_eq!(row["transport"], "stdio");
    }
    let text = run("discover", &[]);
    let out = text.ok();
    assert!(out.contains("server       mcp-stdio-demo"), "{out}");
    assert!(out.contains("lists        2026-07-28"), "{out}");
    assert!(out.contains("2024-11-05  stdio      yes"), "{out}");
}

#[test]
fn listen_subscribes_and_stops_after_count() {
    let demo = demo();
    for revision in ["2026-07-28", "2025-06-18"] {
        let listener = Running::start(&[
            "listen",
            "--stdio",
            &demo,
            "--revision",
            revision,
            "--resource",
            "config://app",
            "--count",
            "0",
        ]);
        // The demo declares resource subscriptions (`resources.subscribe`): the CLI subscribes
        // to the URI as well as to the list changes.
        let line = listener.wait_for_stderr("listening for");
        assert!(line.contains("list changes"), "{line}");
        assert!(line.contains("updates of config://app"), "{line}");
        let run = listener.finish();
        assert_eq!(run.code, 0, "{revision}: {run:?}");
    }
}

/// A scripted 2026-07-28 stdio server: answers `server/discover`, then opens one listen stream
/// with an acknowledgement, a resource update and a list change; it records what it read.
const SCRIPTED_LISTEN: &str = r#"log=$1
read discover; printf '%s\n' "$discover" >> "$log"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"resources":{"subscribe":true,"listChanged":true}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"scripted","version":"1"}}}}'
read listen; printf '%s\n' "$listen" >> "$log"
printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2},"notifications":{"resourcesListChanged":true,"resourceSubscriptions":["config://app"]}}}'
printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2},"uri":"config://app"}}'
printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":2}}}'
while read rest; do :; done
"#;

#[test]
fn listen_prints_each_notification() {
    let script = scratch("listen-script");
    std::fs::write(&script, SCRIPTED_LISTEN).expect("write the script");
    for json in [false, true] {
        let log = scratch(&format!("listen-log-{json}"));
        let command = format!("sh '{}' '{}'", script.display(), log.display());
        let mut args = vec![
            "listen",
            "--stdio",
            &command,
            "--revision",
            "2026-07-28",
            "--timeout",
            "30",
            "--resource",
            "config://app",
            "--count",
            "2",
        ];
        if json {
            args.push("--json");
        }
        let out = mcp(&args);
        let printed = out.ok();
        if json {
            let lines: Vec<Value> = printed
                .lines()
                .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
                .collect();
            assert_eq!(lines.len(), 2, "{printed}");
            assert_eq!(lines[0]["method"], "notifications/resources/updated");
            assert_eq!(lines[0]["params"]["uri"], "config://app");
            assert_eq!(lines[1]["method"], "notifications/resources/list_changed");
        } else {
            assert_eq!(
                printed,
                "resources/updated config://app\nresources/list_changed\n"
            );
        }
        assert!(
            out.stderr
                .contains("the server accepted resourceSubscriptions"),
            "{}",
            out.stderr
        );
        let sent = schema::check_log(&log, "2026-07-28");
        assert_eq!(sent[1]["method"], "subscriptions/listen");
        assert_eq!(
            sent[1]["params"]["notifications"]["resourceSubscriptions"][0],
            "config://app"
        );
    }
}

/// A scripted 2026-07-28 stdio server that takes a `tools/call` and never answers it; it says
/// so on stderr (which `mcp` passes through).
const SCRIPTED_SILENCE: &str = r#"read discover
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"silent","version":"1"}}}}'
read call
echo "scripted: got the call" >&2
while read rest; do :; done
"#;

#[test]
fn ctrl_c_cancels_a_call_and_ends_a_listen() {
    let script = scratch("silent-script");
    std::fs::write(&script, SCRIPTED_SILENCE).expect("write the script");
    let command = format!("sh '{}'", script.display());
    let call = Running::start(&[
        "call",
        "--stdio",
        &command,
        "--revision",
        "2026-07-28",
        "slow",
    ]);
    call.wait_for_stderr("scripted: got the call");
    call.interrupt();
    let done = call.finish();
    assert_eq!(done.code, 130, "{done:?}");
    assert!(
        done.stderr.contains("mcp: error [interrupted]"),
        "{}",
        done.stderr
    );

    let demo = demo();
    // (On 2026-07-28 the demo, which offers no list changes, ends the listen stream at once.)
    let listen = Running::start(&["listen", "--stdio", &demo, "--revision", "2025-06-18"]);
    listen.wait_for_stderr("listening for");
    listen.interrupt();
    let done = listen.finish();
    assert_eq!(done.code, 0, "{done:?}");
    assert!(done.stderr.contains("stopped listening"), "{}", done.stderr);
}

/// A `--stdio` command that cannot be spoken to gets a hint about commands, never the HTTP
/// hints (paths, `--transport sse`) (issue 33, point 6).
#[test]
fn a_stdio_failure_gets_a_stdio_hint() {
    // (command, what the hint says)
    let cases = [
        ("no-such-command-for-mcp-cli-tests", "no such command"),
        ("true", "did not speak MCP"),
    ];
    for (command, hint) in cases {
        let run = mcp(&["tools", "--stdio", command, "--timeout", "30"]);
        assert_ne!(run.code, 0, "{command}");
        let line = single_line(&run.stderr);
        assert!(line.contains(hint), "{command}: {line}");
        assert!(!line.contains("--transport sse"), "{command}: {line}");
        assert!(!line.contains("/mcp"), "{command}: {line}");
    }
}

/// Transport failures say what went wrong where (issue 33): a missing command is named as
/// missing, a server process that ends shows its exit status and the end of its stderr (which
/// also reached the terminal as it came), and none of them gets the HTTP+SSE advice.
#[test]
fn transport_errors_say_what_happened() {
    struct Case {
        command: &'static str,
        line_has: &'static [&'static str],
        stderr_has: &'static str,
    }
    let cases = [
        Case {
            command: "/nonexistent/mcp-server-for-tests --flag",
            line_has: &[
                "[transport]",
                "command `/nonexistent/mcp-server-for-tests` not found",
                "no such command",
            ],
            stderr_has: "",
        },
        Case {
            command: "sh -c 'echo bad config: no key >&2; exit 3'",
            line_has: &[
                "[closed]",
                "the server process ended (exit status: 3)",
                "the end of its stderr: bad config: no key",
            ],
            stderr_has: "bad config: no key\n",
        },
        Case {
            // Reads the client's first message, then dies by a signal.
            command: "sh -c 'read line; echo dying >&2; kill -9 $$'",
            line_has: &["[closed]", "(signal: 9", "the end of its stderr: dying"],
            stderr_has: "dying\n",
        },
        Case {
            // Ends without a word on stderr.
            command: "true",
            line_has: &["(exit status: 0)", "did not speak MCP"],
            stderr_has: "",
        },
    ];
    for case in cases {
        let run = mcp(&["tools", "--stdio", case.command, "--timeout", "30"]);
        assert_eq!(run.code, 3, "{}: {run:?}", case.command);
        let line = run
            .stderr
            .lines()
            .last()
            .unwrap_or_else(|| panic!("{}: no error line", case.command));
        assert!(line.starts_with("mcp: error ["), "{line}");
        for part in case.line_has {
            assert!(line.contains(part), "{}: {part:?} in {line}", case.command);
        }
        assert!(!line.contains("--transport sse"), "{line}");
        assert!(
            run.stderr.starts_with(case.stderr_has),
            "{}: the child's stderr passed through: {:?}",
            case.command,
            run.stderr
        );
    }
}
