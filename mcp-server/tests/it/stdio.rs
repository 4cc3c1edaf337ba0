//! The demo server binary over real pipes, on every revision: handshake or discovery, lists,
//! calls, each way of asking, an over-long line, and end of input.

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use mcp_adapters::AskMechanism;
use mcp_server::Revision;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use support::check;

/// A guard against a hung server, not a synchronisation: every read waits for a real line.
const READ_LIMIT: Duration = Duration::from_secs(20);

struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    revision: Revision,
    next_id: i64,
}

impl Peer {
    fn spawn(revision: Revision) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-stdio-demo"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the demo binary starts");
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            lines,
            revision,
            next_id: 0,
        }
    }

    async fn write(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        stdin.write_all(&line).await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(READ_LIMIT, self.lines.next_line())
            .await
            .expect("the server answers in time")
            .unwrap()
            .expect("a line before end of output");
        let value: Value = serde_json::from_str(&line).expect("one JSON message per line");
        check(self.revision, "JSONRPCMessage", &value);
        value
    }

    fn params(&self, mut params: Value, capabilities: &Value) -> Value {
        if self.revision == Revision::V2026_07_28 {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": self.revision.as_str(),
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            });
        }
        params
    }

    /// Sends a request and returns the next message (its response, unless the server pushes
    /// something first).
    async fn request(&mut self, method: &str, params: Value, capabilities: &Value) -> Value {
        self.next_id += 1;
        let params = self.params(params, capabilities);
        self.write(
            &json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}),
        )
        .await;
        self.read().await
    }

    async fn result(&mut self, method: &str, params: Value, capabilities: &Value) -> Value {
        let response = self.request(method, params, capabilities).await;
        assert_eq!(response["id"], self.next_id, "{response}");
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    /// Closes stdin and waits for a clean exit; returns what was still written.
    async fn finish(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Some(line) = tokio::time::timeout(READ_LIMIT, self.lines.next_line())
            .await
            .unwrap()
            .unwrap()
        {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        let status = tokio::time::timeout(READ_LIMIT, self.child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(
            status.success(),
            "the server exits cleanly at end of input: {status}"
        );
        rest
    }
}

#[tokio::test]
async fn every_revision_over_pipes() {
    for revision in Revision::ALL {
        let caps = json!({"elicitation": {}});
        let mut peer = Peer::spawn(revision);
        if revision == Revision::V2026_07_28 {
            let discovered = peer.result("server/discover", json!({}), &caps).await;
            check(revision, "DiscoverResult", &discovered);
        } else {
            let init = peer
                .result(
                    "initialize",
                    json!({"protocolVersion": revision.as_str(), "capabilities": caps, "clientInfo": {"name": "pipe-test", "version": "1"}}),
                    &caps,
                )
                .await;
            check(revision, "InitializeResult", &init);
            assert_eq!(init["protocolVersion"], revision.as_str());
            peer.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await;
        }
        let tools = peer.result("tools/list", json!({}), &caps).await;
        check(revision, "ListToolsResult", &tools);
        assert_eq!(tools["tools"].as_array().unwrap().len(), 9);
        let sum = peer
            .result(
                "tools/call",
                json!({"name": "add", "arguments": {"a": 40, "b": 2}}),
                &caps,
            )
            .await;
        assert_eq!(sum["content"][0]["text"], "{\"sum\":42}", "{revision}");
        let failed = peer
            .result(
                "tools/call",
                json!({"name": "boom", "arguments": {}}),
                &caps,
            )
            .await;
        assert_eq!(failed["isError"], true);
        let read = peer
            .result("resources/read", json!({"uri": "config://app"}), &caps)
            .await;
        check(revision, "ReadResourceResult", &read);
        let prompt = peer
            .result(
                "prompts/get",
                json!({"name": "greet", "arguments": {"name": "Ada"}}),
                &caps,
            )
            .await;
        check(revision, "GetPromptResult", &prompt);

        // Ask, the revision's way.
        let deploy = json!({"name": "deploy", "arguments": {"service": "web"}});
        let done = match revision.features().ask {
            AskMechanism::InputRequired => {
                let asked = peer.result("tools/call", deploy.clone(), &caps).await;
                assert_eq!(asked["resultType"], "input_required");
                let mut retry = deploy.clone();
                retry["inputResponses"] = json!({"confirm": {"action": "accept", "content": {}}});
                retry["requestState"] = asked["requestState"].clone();
                peer.result("tools/call", retry, &caps).await
            }
            AskMechanism::Push => {
                let pushed = peer.request("tools/call", deploy.clone(), &caps).await;
                assert_eq!(pushed["method"], "elicitation/create", "{pushed}");
                let call_id = peer.next_id;
                peer.write(&json!({"jsonrpc": "2.0", "id": pushed["id"], "result": {"action": "accept", "content": {}}})).await;
                let response = peer.read().await;
                assert_eq!(response["id"], call_id);
                response["result"].clone()
            }
            _ => {
                let asked = peer.result("tools/call", deploy.clone(), &caps).await;
                let state =
                    asked["_meta"][mcp_adapters::INPUT_REQUIRED_META]["requestState"].clone();
                let mut retry = deploy.clone();
                retry["arguments"]["mcpAnswers"] =
                    json!({"confirm": {"action": "accept", "content": {}}});
                retry["arguments"]["mcpState"] = state;
                peer.result("tools/call", retry, &caps).await
            }
        };
        assert_eq!(done["content"][0]["text"], "deployed web", "{revision}");

        // Progress arrives before the response on the same pipe.
        let mut params = peer.params(json!({"name": "count", "arguments": {"n": 2}}), &caps);
        params["_meta"]["progressToken"] = json!(7);
        peer.next_id += 1;
        peer.write(&json!({"jsonrpc": "2.0", "id": peer.next_id, "method": "tools/call", "params": params})).await;
        let first = peer.read().await;
        assert_eq!(
            first["method"], "notifications/progress",
            "{revision}: {first}"
        );
        assert_eq!(peer.read().await["method"], "notifications/progress");
        assert_eq!(
            peer.read().await["result"]["content"][0]["text"],
            "counted to 2"
        );

        let rest = peer.finish().await;
        assert!(rest.is_empty(), "{rest:?}");
    }
}

#[tokio::test]
async fn an_over_long_line_is_answered_and_reading_goes_on() {
    let mut peer = Peer::spawn(Revision::V2025_11_25);
    let caps = json!({});
    peer.result(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "t", "version": "1"}}),
        &caps,
    )
    .await;
    let huge = "x".repeat(mcp_server::DEFAULT_MAX_LINE + 10);
    peer.write(&json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": huge}}}))
        .await;
    let refused = peer.read().await;
    assert_eq!(
        refused["error"]["code"],
        -32600,
        "{}",
        &refused.to_string()[..200.min(refused.to_string().len())]
    );
    assert_eq!(refused["id"], Value::Null);
    let echoed = peer
        .result(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "after"}}),
            &caps,
        )
        .await;
    assert_eq!(echoed["content"][0]["text"], "after");
    peer.finish().await;
}

#[tokio::test]
async fn end_of_input_lets_calls_in_flight_finish() {
    let mut peer = Peer::spawn(Revision::V2025_06_18);
    let caps = json!({});
    peer.result(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": caps, "clientInfo": {"name": "t", "version": "1"}}),
        &caps,
    )
    .await;
    for id in 10..13 {
        peer.write(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "count", "arguments": {"n": 50}}}))
            .await;
    }
    let rest = peer.finish().await;
    let mut answered: Vec<i64> = rest.iter().filter_map(|m| m["id"].as_i64()).collect();
    answered.sort_unstable();
    assert_eq!(
        answered,
        [10, 11, 12],
        "every call in flight is answered before exit"
    );
}
