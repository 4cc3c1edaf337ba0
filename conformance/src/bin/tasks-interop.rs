//! `tasks-interop <server-url>`: our client drives every fixture of the Tasks extension's
//! scenarios (the tools `conformance-target` serves for the suite's `tasks-*` scenarios) on a
//! server, over Streamable HTTP on 2026-07-28, through the library's task support
//! (`ClientBuilder::tasks`): `call_tool` following each task, questions inside a task answered
//! by `on_ask`, and a task cancelled through its handle.
//!
//! Prints one JSON line per fixture, `{"fixture", "ok", "detail"}`; exits 1 when one failed.

use std::time::Duration;

use mcp_client::{
    Answer, Asks, Client, ErrorKind, QuestionKind, Revision, TaskPolling, TaskStatus, ToolCall,
};
use serde_json::{Map, Value, json};

/// Accepts every form, filling each field of its schema: strings `Ada`, booleans `true`.
async fn fill(question: mcp_client::Question) -> Answer {
    if question.kind() != QuestionKind::Elicitation {
        return Answer::decline();
    }
    let mut content = Map::new();
    let properties = question
        .params()
        .get("requestedSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (name, schema) in properties {
        let value = match schema.get("type").and_then(Value::as_str) {
            Some("boolean") => json!(true),
            Some("number" | "integer") => json!(1),
            _ => json!("Ada"),
        };
        content.insert(name, value);
    }
    Answer::accept(Value::Object(content))
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// What one fixture did: `Ok(detail)` when it behaved as the scenario expects.
async fn fixture(client: &Client, name: &str) -> Result<String, String> {
    let call = |tool: &'static str, arguments: Value| async move {
        client
            .call_tool(tool, arguments)
            .await
            .map_err(|e| e.to_string())
    };
    let expect = |result: Value, needle: &str| {
        let shown = text(&result);
        if result["isError"] != true && shown.contains(needle) {
            Ok(shown)
        } else {
            Err(format!("expected {needle:?}, got {result}"))
        }
    };
    match name {
        "greet" => expect(call("greet", json!({"name": "Ada"})).await?, "Ada"),
        "slow_compute" => {
            let result = call("slow_compute", json!({"seconds": 0.3})).await?;
            expect(result, "omput")
        }
        "failing_job" => {
            let result = call("failing_job", json!({})).await?;
            if result["isError"] == true {
                Ok(format!("tool error: {}", text(&result)))
            } else {
                Err(format!("expected a tool error, got {result}"))
            }
        }
        "protocol_error_job" => match client.call_tool("protocol_error_job", json!({})).await {
            Err(e) if e.kind() == ErrorKind::Task && e.rpc().is_some() => {
                Ok(format!("task failed: {e}"))
            }
            other => Err(format!("expected a failed task, got {other:?}")),
        },
        "confirm_delete" => expect(
            call("confirm_delete", json!({"filename": "a.txt"})).await?,
            "Deleted a.txt",
        ),
        "multi_input" => expect(call("multi_input", json!({})).await?, "Ada"),
        "test_tool_with_task" => expect(call("test_tool_with_task", json!({})).await?, "Ada"),
        "cancel" => {
            let started = client
                .call_tool_as_task("slow_compute", json!({"seconds": 60}))
                .await
                .map_err(|e| e.to_string())?;
            let ToolCall::Task(mut handle) = started else {
                return Err("slow_compute answered without a task".into());
            };
            handle.cancel().await.map_err(|e| e.to_string())?;
            let id = handle.id().to_owned();
            match handle.wait().await {
                Err(e) if e.kind() == ErrorKind::Task => {}
                other => return Err(format!("expected a cancelled task, got {other:?}")),
            }
            let status = client
                .get_task(&id)
                .await
                .map_err(|e| e.to_string())?
                .status();
            if status == TaskStatus::Cancelled {
                Ok(format!("task {id} cancelled"))
            } else {
                Err(format!("task {id} is {status:?} after tasks/cancel"))
            }
        }
        other => Err(format!("no fixture {other:?}")),
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: tasks-interop <server-url>");
        return std::process::ExitCode::from(2);
    };
    let client = match Client::builder()
        .revision(Revision::V2026_07_28)
        .timeout(Duration::from_secs(30))
        .tasks(TaskPolling::new().max_wait(Duration::from_secs(60)))
        .on_ask(Asks::all(), fill)
        .connect_http(&url)
        .await
    {
        Ok(client) => client,
        Err(e) => {
            eprintln!("tasks-interop: cannot connect to {url}: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut failed = false;
    for name in [
        "greet",
        "slow_compute",
        "failing_job",
        "protocol_error_job",
        "confirm_delete",
        "multi_input",
        "test_tool_with_task",
        "cancel",
    ] {
        let outcome = tokio::time::timeout(Duration::from_secs(90), fixture(&client, name))
            .await
            .unwrap_or_else(|_| Err("no end within 90 s".into()));
        failed |= outcome.is_err();
        let (ok, detail) = match outcome {
            Ok(detail) => (true, detail),
            Err(detail) => (false, detail),
        };
        println!("{}", json!({"fixture": name, "ok": ok, "detail": detail}));
    }
    let _ = client.close().await;
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
