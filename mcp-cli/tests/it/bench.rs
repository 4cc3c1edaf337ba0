//! `mcp bench` against the HTTP demo (`mcp-demo` on 127.0.0.1) and the stdio demo: the report,
//! `--json`, checks that fail (reported as errors by kind, exit code 1), every revision, the
//! refusal of a remote URL, and the bounds of the options. `--count` keeps every run short; no
//! assertion depends on how fast the machine is.

use serde_json::Value;

use crate::support;

use support::{Demo, mcp, stdio_demo};

/// `mcp bench TARGET... --timeout 30 <rest>`, with `--warmup 0` unless `rest` sets one.
fn bench(target: &[&str], rest: &[&str]) -> support::Run {
    let mut args = vec!["bench"];
    args.extend_from_slice(target);
    args.extend_from_slice(&["--timeout", "30"]);
    if !rest.contains(&"--warmup") {
        args.extend_from_slice(&["--warmup", "0"]);
    }
    args.extend_from_slice(rest);
    mcp(&args)
}

/// The latency percentiles are in order and the counts add up.
fn assert_consistent(report: &Value) {
    let latency = &report["latency_us"];
    let (p50, p90, p99, max) = (
        latency["p50"].as_u64().expect("p50"),
        latency["p90"].as_u64().expect("p90"),
        latency["p99"].as_u64().expect("p99"),
        latency["max"].as_u64().expect("max"),
    );
    assert!(p50 <= p90 && p90 <= p99 && p99 <= max, "{report:#}");
    let (calls, ok, errors) = (
        report["calls"].as_u64().expect("calls"),
        report["ok"].as_u64().expect("ok"),
        report["errors"].as_u64().expect("errors"),
    );
    assert_eq!(calls, ok + errors, "{report:#}");
    let by_kind: u64 = report["errors_by_kind"]
        .as_object()
        .expect("errors_by_kind")
        .values()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(by_kind, errors, "{report:#}");
    if ok > 0 {
        assert!(max > 0, "{report:#}");
        assert!(report["throughput"].as_f64().expect("throughput") > 0.0);
    }
}

#[test]
fn the_report_against_the_http_demo() {
    let demo = Demo::start();
    let url = demo.mcp();
    let run = bench(
        &[&url],
        &[
            "--tool",
            "add",
            "a=2",
            "b=3",
            "--expect-json",
            "/structuredContent/sum=5",
            "--concurrency",
            "8",
            "--count",
            "300",
        ],
    );
    let text = run.ok();
    for line in [
        &format!("target      {url} (streamable-http)") as &str,
        "server      mcp-demo",
        "revision    2026-07-28",
        "load        tools/call \"add\", 8 callers on 1 session, 300 calls",
        "calls       300: 300 ok, 0 errors",
        "throughput  ",
        "latency     p50 ",
        "errors      none",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
    // Stderr is not a terminal and --progress was not given: no progress line.
    assert!(!run.stderr.contains("calls/s"), "{}", run.stderr);

    let report = bench(
        &[&url],
        &[
            "--tool",
            "add",
            "a=2",
            "b=3",
            "--expect-json",
            "/structuredContent/sum=5",
            "--expect-text",
            r#"{"sum":5}"#,
            "--concurrency",
            "4",
            "--sessions",
            "2",
            "--count",
            "200",
            "--transport",
            "streamable",
            "--json",
        ],
    );
    assert_eq!(report.code, 0, "{report:#?}");
    let report = report.json();
    assert_consistent(&report);
    assert_eq!(report["calls"], 200);
    assert_eq!(report["ok"], 200);
    assert_eq!(report["errors"], 0);
    assert_eq!(report["count"], 200);
    assert_eq!(report["concurrency"], 4);
    assert_eq!(report["sessions"], 2);
    assert_eq!(report["transport"], "streamable-http");
    assert_eq!(report["server"]["name"], "mcp-demo");
    assert_eq!(report["operation"]["tool"], "add");
    assert_eq!(report["operation"]["arguments"]["a"], 2);
    assert_eq!(report["interrupted"], false);
}

#[test]
fn duration_runs_and_resource_reads_with_progress_lines() {
    let demo = Demo::start();
    let url = demo.mcp();
    let run = bench(
        &[&url],
        &[
            "--read",
            "config://app",
            "--expect-json",
            "/contents/0/uri=config://app",
            "--duration",
            "0.5",
            "--warmup",
            "0.2",
            "--concurrency",
            "2",
            "--progress",
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let report = run.json();
    assert_consistent(&report);
    assert_eq!(report["operation"]["method"], "resources/read");
    assert!(report["ok"].as_u64().expect("ok") > 0, "{report:#}");
    // The measured time is the duration asked for, never more (it is cut there).
    let measured = report["measured_s"].as_f64().expect("measured_s");
    assert!(measured > 0.0 && measured <= 0.5, "{report:#}");
    assert_eq!(report["warmup_s"], 0.2);
    assert!(
        run.stderr.lines().any(|l| l.starts_with("mcp: ")),
        "--progress prints lines on a stderr that is not a terminal: {}",
        run.stderr
    );
}

#[test]
fn the_stdio_demo_with_several_sessions() {
    let demo = stdio_demo().display().to_string();
    let run = bench(
        &["--stdio", &demo],
        &[
            "--tool",
            "echo",
            "text=hi there",
            "--expect-text",
            "hi there",
            "--concurrency",
            "6",
            "--sessions",
            "3",
            "--count",
            "150",
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    let report = run.json();
    assert_consistent(&report);
    assert_eq!(report["ok"], 150);
    assert_eq!(report["transport"], "stdio");
    assert_eq!(report["sessions"], 3);
    assert!(report["revision"].as_str().is_some_and(|r| r.len() == 10));

    let text = bench(
        &["--stdio", &demo],
        &["--tool", "add", "a=2", "b=3", "--count", "50"],
    );
    assert!(
        text.ok().contains("calls       50: 50 ok, 0 errors"),
        "{text:#?}"
    );
}

#[test]
fn wrong_answers_and_tool_errors_are_counted_by_kind() {
    let demo = Demo::start();
    let url = demo.mcp();
    // The demo's add answers {"sum":5} as its text: "5" is a wrong answer, every time.
    let wrong = bench(
        &[&url],
        &[
            "--tool",
            "add",
            "a=2",
            "b=3",
            "--expect-text",
            "5",
            "--count",
            "40",
            "--concurrency",
            "4",
        ],
    );
    assert_eq!(wrong.code, 1, "{wrong:#?}");
    assert!(
        wrong.stdout.contains("calls       40: 0 ok, 40 errors"),
        "{wrong:#?}"
    );
    assert!(
        wrong.stdout.contains(
            r#"errors      wrong answer: 40 (first: expected text "5", got "{\"sum\":5}")"#
        ),
        "{wrong:#?}"
    );
    assert!(
        wrong
            .stderr
            .contains("mcp: error [bench]: 40 of 40 measured calls failed or answered wrong"),
        "{}",
        wrong.stderr
    );

    // Over stdio, with --json: the tool's own error, and a JSON value that differs.
    let demo = stdio_demo().display().to_string();
    let boom = bench(
        &["--stdio", &demo],
        &["--tool", "boom", "--count", "10", "--json"],
    );
    assert_eq!(boom.code, 1, "{boom:#?}");
    let report = boom.json();
    assert_consistent(&report);
    assert_eq!(report["errors_by_kind"]["tool error"], 10, "{report:#}");
    assert!(
        report["first_errors"]["tool error"]
            .as_str()
            .is_some_and(|m| m.contains("boom")),
        "{report:#}"
    );
    let json = bench(
        &["--stdio", &demo],
        &[
            "--tool",
            "add",
            "a=2",
            "b=3",
            "--expect-json",
            "/structuredContent/sum=6",
            "--count",
            "10",
            "--json",
        ],
    );
    assert_eq!(json.code, 1, "{json:#?}");
    let report = json.json();
    assert_eq!(report["errors_by_kind"]["wrong answer"], 10, "{report:#}");
    assert_eq!(report["ok"], 0);

    // A tool the server does not have: its JSON-RPC error code is the kind.
    let unknown = bench(&[&url], &["--tool", "nope", "--count", "5", "--json"]);
    assert_eq!(unknown.code, 1, "{unknown:#?}");
    let kinds = unknown.json()["errors_by_kind"].clone();
    assert!(
        kinds.as_object().is_some_and(|k| k
            .keys()
            .all(|kind| kind.starts_with("json-rpc ") || kind == "tool error")),
        "{kinds:#}"
    );
}

#[test]
fn every_revision_and_http_sse() {
    let demo = Demo::start();
    for revision in [
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
    ] {
        let (url, transport) = if revision == "2024-11-05" {
            (demo.sse(), "sse")
        } else {
            (demo.mcp(), "streamable")
        };
        let run = bench(
            &[&url],
            &[
                "--tool",
                "add",
                "a=2",
                "b=3",
                // Structured content came with 2025-06-18; the text block is on every revision.
                "--expect-text",
                r#"{"sum":5}"#,
                "--count",
                "20",
                "--concurrency",
                "3",
                "--revision",
                revision,
                "--transport",
                transport,
                "--json",
            ],
        );
        assert_eq!(run.code, 0, "{revision}: {run:#?}");
        let report = run.json();
        assert_eq!(report["revision"], revision);
        assert_eq!(report["ok"], 20, "{revision}: {report:#}");
    }
    // --transport auto (the default) names the transport it ended on: HTTP+SSE after the
    // fallback from the /sse URL, Streamable HTTP on /mcp.
    for (url, transport) in [(demo.sse(), "http+sse"), (demo.mcp(), "streamable-http")] {
        let run = bench(
            &[&url],
            &["--tool", "add", "a=2", "b=3", "--count", "10", "--json"],
        );
        assert_eq!(run.code, 0, "{url}: {run:#?}");
        let report = run.json();
        assert_eq!(report["transport"], transport, "{url}: {report:#}");
        assert_eq!(report["ok"], 10, "{url}: {report:#}");
    }
}

#[test]
fn remote_urls_are_refused_without_allow_remote() {
    for url in [
        "http://192.0.2.1:8080/mcp",
        "https://example.com/mcp",
        "http://localhost.example.com/mcp",
    ] {
        let run = bench(&[url], &["--tool", "add", "--count", "1"]);
        assert_eq!(run.code, 2, "{url}: {run:#?}");
        assert!(
            run.stderr.contains("mcp: error [remote]:")
                && run.stderr.contains("is not on this machine")
                && run.stderr.contains("--allow-remote"),
            "{url}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{url}: {run:#?}");
    }
}

#[test]
fn options_out_of_bounds_are_usage_errors() {
    let demo = stdio_demo().display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--tool", "add", "--concurrency", "0"],
            "--concurrency must be 1 to 1024",
        ),
        (
            &["--tool", "add", "--concurrency", "1025"],
            "--concurrency must be 1 to 1024",
        ),
        (
            &["--tool", "add", "--concurrency", "2", "--sessions", "3"],
            "--sessions must be 1 to 2",
        ),
        (
            &["--tool", "add", "--sessions", "65", "--concurrency", "100"],
            "--sessions must be 1 to 64",
        ),
        (
            &["--tool", "add", "--count", "0"],
            "--count must be at least 1",
        ),
        (&["--tool", "add", "--duration", "0"], "--duration must be"),
        (
            &["--tool", "add", "--call-timeout", "0"],
            "--call-timeout must be",
        ),
        (
            &["--tool", "add", "--expect-json", "sum=5"],
            "a JSON pointer starts with /",
        ),
        (
            &["--tool", "add", "--expect-json", "/sum"],
            "--expect-json is POINTER=VALUE",
        ),
        (&[], "needs --tool NAME"),
        (&["--read", "config://app", "extra"], "takes no argument"),
    ];
    for (rest, message) in cases {
        let run = bench(&["--stdio", &demo], rest);
        assert_eq!(run.code, 2, "{rest:?}: {run:#?}");
        assert!(run.stderr.contains(message), "{rest:?}: {}", run.stderr);
    }
    // clap's own refusals: both ways of stopping, both operations.
    for rest in [
        &["--tool", "add", "--count", "1", "--duration", "1"][..],
        &["--tool", "add", "--read", "config://app"][..],
    ] {
        let run = bench(&["--stdio", &demo], rest);
        assert_eq!(run.code, 2, "{rest:?}: {run:#?}");
    }
}

#[test]
fn ctrl_c_prints_what_was_measured_and_exits_130() {
    let demo = stdio_demo().display().to_string();
    let running = support::Running::start(&[
        "bench",
        "--stdio",
        &demo,
        "--tool",
        "add",
        "a=2",
        "b=3",
        "--warmup",
        "0",
        "--duration",
        "600",
        "--progress",
    ]);
    // A progress line of the measured phase: the run is under way.
    running.wait_for_stderr("calls/s");
    running.interrupt();
    let run = running.finish();
    assert_eq!(run.code, 130, "{run:#?}");
    assert!(run.stdout.contains("(interrupted)"), "{run:#?}");
    assert!(run.stdout.contains("errors      none"), "{run:#?}");
    assert!(run.stderr.contains("mcp: error [interrupted]"), "{run:#?}");
}

#[test]
fn questions_are_answered_from_answer_only() {
    let demo = stdio_demo().display().to_string();
    let answered = bench(
        &["--stdio", &demo],
        &[
            "--tool",
            "deploy",
            "service=web",
            "--answer",
            "accept",
            "--expect-text",
            "deployed web",
            "--count",
            "20",
            "--concurrency",
            "4",
        ],
    );
    assert!(
        answered.ok().contains("calls       20: 20 ok, 0 errors"),
        "{answered:#?}"
    );
    // Nothing per question on stderr.
    assert!(
        !answered.stderr.contains("answering"),
        "{}",
        answered.stderr
    );

    // Without --answer nobody is asked: every call fails, and the run still ends.
    let unanswered = bench(
        &["--stdio", &demo],
        &["--tool", "deploy", "service=web", "--count", "5", "--json"],
    );
    assert_eq!(unanswered.code, 1, "{unanswered:#?}");
    let report = unanswered.json();
    assert_consistent(&report);
    assert_eq!(report["errors"], 5, "{report:#}");
}
