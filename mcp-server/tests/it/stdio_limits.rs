//! The stdio loop in process, over an in-memory pipe: a bounded number of calls run at once,
//! and replies to pushed questions still get through when every slot is taken.

use std::time::Duration;

use mcp_server::{
    Exchange, NoArgs, Question, Server, StdioConfig, Tool, ToolError, serve_stdio_with,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

async fn ask(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex.ask("go", Question::elicit("Go?")).await?;
    Ok(format!("accepted: {}", answer.accepted()))
}

async fn plain(_: NoArgs) -> String {
    "plain".to_owned()
}

#[tokio::test]
async fn a_full_server_still_reads_replies() {
    let server = Server::builder("s", "1")
        .tool(Tool::new("ask", ask))
        .tool(Tool::new("plain", plain))
        .build()
        .unwrap();
    let (client, server_side) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_side);
    let config = StdioConfig::new()
        .max_in_flight(1)
        .shutdown_grace(Duration::from_secs(5));
    let serving = tokio::spawn(serve_stdio_with(server, server_read, server_write, config));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let mut send = async |message: Value| {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        client_write.write_all(&line).await.unwrap();
    };
    let limit = Duration::from_secs(20);
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}}})).await;
    let init: Value = serde_json::from_str(
        &tokio::time::timeout(limit, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(init["id"], 1);
    // The asking call takes the only slot; the plain call waits behind it.
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask", "arguments": {}}})).await;
    let question: Value = serde_json::from_str(
        &tokio::time::timeout(limit, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(question["method"], "elicitation/create");
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "plain", "arguments": {}}})).await;
    // The reply is read although no slot is free.
    send(json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {}}})).await;
    let mut answered = Vec::new();
    for _ in 0..2 {
        let line = tokio::time::timeout(limit, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let response: Value = serde_json::from_str(&line).unwrap();
        answered.push((
            response["id"].as_i64().unwrap(),
            response["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned(),
        ));
    }
    assert_eq!(
        answered,
        [(2, "accepted: true".to_owned()), (3, "plain".to_owned())]
    );
    client_write.shutdown().await.unwrap();
    tokio::time::timeout(limit, serving)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

async fn flood(_: NoArgs, ex: Exchange) -> String {
    for i in 1..=10_000 {
        ex.progress(f64::from(i), Some(10_000.0), None);
    }
    "flooded".to_owned()
}

/// Issue 27, defect 1 on stdio: 64 calls that each report 10,000 steps, from a client that
/// reads only once everything was sent, cost each call's queue (64 messages), not 640,000
/// lines waiting for stdout; every response still arrives, with the newest progress first.
#[tokio::test]
async fn a_progress_flood_on_stdio_costs_the_queues_not_what_the_handlers_send() {
    let server = Server::builder("s", "1")
        .tool(Tool::new("flood", flood))
        .build()
        .unwrap();
    let (client, server_side) = tokio::io::duplex(1 << 12);
    let (server_read, server_write) = tokio::io::split(server_side);
    let serving = tokio::spawn(serve_stdio_with(
        server,
        server_read,
        server_write,
        StdioConfig::new(),
    ));
    let (client_read, mut client_write) = tokio::io::split(client);
    let calls = 64;
    let writer = tokio::spawn(async move {
        let mut out = Vec::new();
        let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        out.extend(serde_json::to_vec(&init).unwrap());
        out.push(b'\n');
        for id in 0..calls {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "flood", "arguments": {}, "_meta": {"progressToken": id}}});
            out.extend(serde_json::to_vec(&call).unwrap());
            out.push(b'\n');
        }
        client_write.write_all(&out).await.unwrap();
        client_write
    });
    let mut lines = BufReader::new(client_read).lines();
    let (mut responses, mut progress) = (0, 0);
    let mut newest = std::collections::HashMap::new();
    while responses < calls {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server keeps answering")
            .unwrap()
            .expect("a line");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "notifications/progress" {
            progress += 1;
            let token = message["params"]["progressToken"].as_i64().unwrap();
            newest.insert(token, message["params"]["progress"].as_f64().unwrap());
        } else if message["id"].is_i64() {
            assert_eq!(message["result"]["content"][0]["text"], "flooded");
            responses += 1;
        }
    }
    assert!(progress <= calls as usize * 64, "{progress} progress lines");
    assert!(newest.values().all(|&p| p == 10_000.0), "{newest:?}");
    let mut client_write = writer.await.unwrap();
    client_write.shutdown().await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), serving)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
