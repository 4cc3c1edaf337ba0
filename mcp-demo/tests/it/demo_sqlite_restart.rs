//! A demo process restarted on the same SQLite file keeps its sessions (issue 32): a session
//! made before the restart is served after it, and an unknown one is still refused; a client
//! resumes its GET stream after the restart with `Last-Event-ID`, and gets the events
//! published before the restart that it had not read, then the new ones, each exactly once.
#![cfg(feature = "sqlite")]

use crate::demo_process::DemoProcess;
use crate::raw_http;

use std::path::Path;

use raw_http::{RawRequest, RawStream};
use serde_json::{Value, json};

/// A demo process on `--hub sqlite:PATH`, killed when dropped.
async fn demo(path: &Path) -> DemoProcess {
    let hub = format!("sqlite:{}", path.display());
    DemoProcess::start(&["--addr", "127.0.0.1:0", "--hub", &hub], &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_restarted_on_the_same_sqlite_file_keeps_its_sessions() {
    let path = std::env::temp_dir().join(format!("mcp-demo-restart-{}.sqlite", std::process::id()));
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"restart-test","version":"1"}}}"#;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let session = {
        let demo = demo(&path).await;
        let (status, session, _) = demo.send("POST", None, initialize).await;
        assert_eq!(status, 200);
        let session = session.expect("a session id");
        let (status, _, body) = demo.send("POST", Some(&session), list).await;
        assert_eq!(status, 200, "{body}");
        session
    };
    // The first process is gone (killed on drop); a new one opens the same file.
    let demo = demo(&path).await;
    let (status, _, body) = demo.send("POST", Some(&session), list).await;
    assert_eq!(status, 200, "the session survives the restart: {body}");
    assert!(body.contains("\"tools\""), "{body}");
    let (status, _, _) = demo
        .send("POST", Some("not-a-session-of-this-file"), list)
        .await;
    assert_eq!(status, 404, "an unknown session is still refused");
    drop(demo);
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.clone().into_os_string();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
}

/// A POST of `body` to `/mcp` for `session` (2025-06-18), through the raw client.
fn post(session: &str, body: &Value) -> RawRequest<'static> {
    RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .header("Mcp-Session-Id", session)
        .json(body)
}

/// Opens the session's GET stream, resuming after `last_event_id` when given.
async fn get_stream(demo: &DemoProcess, session: &str, last_event_id: Option<&str>) -> RawStream {
    let mut request = RawRequest::new("GET", "/mcp")
        .header("Accept", "text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .header("Mcp-Session-Id", session);
    if let Some(id) = last_event_id {
        request = request.header("Last-Event-ID", id);
    }
    let stream = request.open(demo.addr).await;
    assert_eq!(stream.status, 200, "the GET stream opens");
    assert_eq!(stream.header("content-type"), Some("text/event-stream"));
    stream
}

/// The next event of `stream` that carries a message: its SSE id and the message.
async fn next_update(stream: &mut RawStream) -> (Option<String>, Value) {
    loop {
        let event = stream.event().await.expect("the stream goes on");
        if !event.data.is_empty() {
            let message: Value = serde_json::from_str(&event.data).unwrap();
            return (event.id, message);
        }
    }
}

/// Calls `touch` (which publishes `notifications/resources/updated` for `config://app`) and
/// checks the publish was acknowledged.
async fn touch(demo: &DemoProcess, session: &str, id: u64) {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "touch", "arguments": {}}});
    let done = post(session, &call).send(demo.addr).await;
    assert_eq!(done.status, 200);
    let result = done.messages().pop().expect("a result");
    assert_eq!(
        result["result"]["content"][0]["text"], "touched config://app",
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_stream_resumes_with_last_event_id_after_the_demo_restarts() {
    let path = std::env::temp_dir().join(format!(
        "mcp-demo-restart-stream-{}.sqlite",
        std::process::id()
    ));
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"restart-test","version":"1"}}}"#;
    let (session, seen, unread) = {
        let demo = demo(&path).await;
        let (status, session, _) = demo.send("POST", None, initialize).await;
        assert_eq!(status, 200);
        let session = session.expect("a session id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(
            post(&session, &initialized).send(demo.addr).await.status,
            202
        );
        let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
            "params": {"uri": "config://app"}});
        assert_eq!(post(&session, &subscribe).send(demo.addr).await.status, 200);
        let mut stream = get_stream(&demo, &session, None).await;
        // Three updates, each acknowledged; the client reads them all, so it knows their ids,
        // but it will say it saw only the first.
        let mut ids = Vec::new();
        for id in 3..6 {
            touch(&demo, &session, id).await;
            let (event_id, update) = next_update(&mut stream).await;
            assert_eq!(update["method"], "notifications/resources/updated");
            assert_eq!(update["params"]["uri"], "config://app");
            ids.push(event_id.expect("an update carries an event id"));
        }
        let seen = ids.remove(0);
        (session, seen, ids)
        // The stream and the process end here (killed on drop).
    };
    let demo = demo(&path).await;
    let mut resumed = get_stream(&demo, &session, Some(&seen)).await;
    // The two updates published before the restart after `seen`, under the same ids, and
    // nothing before them (a resync would come first and without an id).
    for expected in &unread {
        let (event_id, update) = next_update(&mut resumed).await;
        assert_eq!(
            update["method"], "notifications/resources/updated",
            "{update}"
        );
        assert_eq!(event_id.as_deref(), Some(expected.as_str()), "{update}");
    }
    // Then what the new process publishes, once.
    touch(&demo, &session, 6).await;
    let (event_id, update) = next_update(&mut resumed).await;
    assert_eq!(update["params"]["uri"], "config://app");
    let event_id = event_id.expect("an update carries an event id");
    assert!(
        !unread.contains(&event_id) && event_id != seen,
        "a new event gets a new id: {event_id}"
    );
    drop(resumed);
    drop(demo);
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.clone().into_os_string();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
}
