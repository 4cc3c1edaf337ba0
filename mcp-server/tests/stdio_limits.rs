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
