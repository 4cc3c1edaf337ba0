//! Issue 49: `--traceparent` puts the caller's trace context on every request, and `-v` prints
//! the trace id (a new trace for the command when none is given). Checked on what the stdio
//! demo receives (the lines `recorded_demo` logs, each validated against the revision's
//! schema), on every revision.

use serde_json::Value;

use crate::support::{mcp, recorded_demo, schema, scratch};

const REVISIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// The `traceparent` of every request in `sent` (notifications carry none).
fn traceparents(sent: &[Value]) -> Vec<Option<&str>> {
    sent.iter()
        .filter(|m| m.get("id").is_some() && m.get("method").is_some())
        .map(|m| m["params"]["_meta"]["traceparent"].as_str())
        .collect()
}

#[test]
fn every_request_carries_the_given_trace_and_v_prints_it() {
    let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    for revision in REVISIONS {
        let log = scratch(&format!("trace-given-{revision}"));
        let command = recorded_demo(&log);
        let out = mcp(&[
            "call",
            "--stdio",
            &command,
            "--revision",
            revision,
            "--timeout",
            "30",
            "--traceparent",
            given,
            "-v",
            "add",
            "a=1",
            "b=2",
        ]);
        assert!(out.ok().contains('3'), "{revision}: {out:?}");
        assert!(
            out.stderr.contains(
                "mcp: trace 4bf92f3577b34da6a3ce929d0e0e4736 (requests carry traceparent"
            ),
            "{revision}: {}",
            out.stderr
        );
        let sent = schema::check_log(&log, revision);
        let carried = traceparents(&sent);
        assert!(carried.len() >= 2, "{revision}: {sent:?}");
        assert!(
            carried.iter().all(|t| *t == Some(given)),
            "{revision}: {carried:?}"
        );
    }
}

#[test]
fn v_alone_starts_a_new_trace_and_no_flag_sends_none() {
    let log = scratch("trace-new");
    let out = mcp(&[
        "call",
        "--stdio",
        &recorded_demo(&log),
        "--timeout",
        "30",
        "-v",
        "add",
        "a=1",
        "b=2",
    ]);
    out.ok();
    let printed = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("mcp: trace "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no trace line: {}", out.stderr))
        .to_owned();
    assert!(
        printed.len() == 32 && printed.bytes().all(|b| b.is_ascii_hexdigit()),
        "{printed}"
    );
    let sent = schema::check_log(&log, "2026-07-28");
    for traceparent in traceparents(&sent) {
        let traceparent = traceparent.expect("every request is traced");
        assert_eq!(&traceparent[3..35], printed);
        assert!(traceparent.ends_with("-01"), "sampled: {traceparent}");
    }

    let log = scratch("trace-none");
    mcp(&[
        "call",
        "--stdio",
        &recorded_demo(&log),
        "--timeout",
        "30",
        "add",
        "a=1",
        "b=2",
    ])
    .ok();
    let sent = schema::check_log(&log, "2026-07-28");
    assert!(traceparents(&sent).iter().all(Option::is_none), "{sent:?}");
}

#[test]
fn a_malformed_traceparent_is_a_usage_error() {
    for bad in [
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "nonsense",
    ] {
        let out = mcp(&["call", "--stdio", "true", "--traceparent", bad, "add"]);
        assert_eq!(out.code, 2, "{bad}: {out:?}");
        assert!(
            out.stderr.contains("--traceparent"),
            "{bad}: {}",
            out.stderr
        );
    }
}
