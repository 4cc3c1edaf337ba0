//! Asking: a tool that asks the user (elicitation) or the client's model (sampling) before it
//! answers, on every revision.
//!
//! ```sh
//! cargo run -p mcp-examples --bin asking              # http://127.0.0.1:8080/mcp
//! cargo run -p mcp-examples --bin asking 127.0.0.1:0  # any free port
//! mcp call http://127.0.0.1:8080/mcp deploy service=web   # the CLI asks on the terminal
//! ```
//!
//! A handler that takes an [`Exchange`] calls [`Exchange::ask`] with a key and a
//! [`Question`]. The revision decides how the question travels: on 2026-07-28 it is the
//! call's result (`input_required`) and the client calls again with the answer; on 2025-06-18
//! and 2025-11-25 it is a request pushed to the client on the call's stream; on 2025-03-26 and
//! 2024-11-05 it rides in the tool call's arguments (`mcpAnswers`/`mcpState`). The handler
//! reads the same either way.
//!
//! **The handler may run more than once.** Where the question is the result or rides in the
//! arguments, the call starts over from the top when the answers come (possibly on another
//! worker); `ask` then returns the recorded answer at once. So read and ask first, and do the
//! irreversible work only after the last question, as `deploy` does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{Exchange, Question, Server, State, Tool, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// The arguments of `deploy`.
#[derive(Deserialize, JsonSchema)]
struct DeployArgs {
    /// The service to deploy.
    service: String,
}

/// How many deployments really happened (the irreversible part), to show it runs once.
#[derive(Clone, Default)]
struct Deployments(Arc<AtomicU64>);

/// Asks twice: a yes/no confirmation, then a form with fields. A question the user declines
/// or cancels is an answer too (not an error): the tool reports it.
async fn deploy(
    State(deployments): State<Deployments>,
    args: DeployArgs,
    ex: Exchange,
) -> Result<String, ToolError> {
    // Form-mode elicitation with no fields: a confirmation. `?` passes an interruption on
    // (the question goes to the client, or the client cannot be asked).
    let sure = ex
        .ask(
            "confirm",
            Question::elicit(format!("Deploy {} to production?", args.service)),
        )
        .await?;
    if !sure.accepted() {
        return Ok(format!("{} was not deployed", args.service));
    }
    // A form: a flat object schema of primitive fields.
    let form = json!({
        "type": "object",
        "properties": {
            "reason": {"type": "string", "title": "Reason", "description": "Why deploy now?"},
            "notify": {"type": "boolean", "title": "Tell the team", "default": true}
        },
        "required": ["reason"]
    });
    let details = ex
        .ask("details", Question::elicit_with("Deployment details", form))
        .await?;
    let Some(reason) = details.get("reason").and_then(|r| r.as_str()) else {
        return Ok(format!(
            "{} was not deployed: no reason given",
            args.service
        ));
    };
    let notify = details
        .get("notify")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(true);
    // After the last question: this runs once, on the attempt that has every answer.
    let number = deployments.0.fetch_add(1, Ordering::SeqCst) + 1;
    Ok(format!(
        "deployment #{number}: {} deployed ({reason}){}",
        args.service,
        if notify { ", team notified" } else { "" }
    ))
}

/// The arguments of `summarize`.
#[derive(Deserialize, JsonSchema)]
struct SummarizeArgs {
    /// The text to summarise.
    text: String,
}

/// Sampling: asks the client's model for a completion. A client that did not declare
/// `sampling` cannot be asked, and a question it cannot answer fails the whole call (even if
/// the handler goes on), so this tool looks at the client's capabilities first and falls back
/// to a crude summary without asking.
async fn summarize(args: SummarizeArgs, ex: Exchange) -> Result<String, ToolError> {
    let can_sample = ex
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.contains_key("sampling"));
    if !can_sample {
        let first: Vec<&str> = args.text.split_whitespace().take(5).collect();
        return Ok(format!(
            "summary (no model available): {}...",
            first.join(" ")
        ));
    }
    let prompt = format!("Summarise in one sentence:\n\n{}", args.text);
    let answer = ex.ask("summary", Question::sample(prompt, 200)).await?;
    if !answer.accepted() {
        return Ok("the client refused to sample".to_owned());
    }
    // The content of an accepted sampling answer is the `CreateMessageResult`.
    let text = answer.content()["content"]["text"].as_str().unwrap_or("");
    Ok(format!("summary: {text}"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("asking-example", "1.0")
        .with_state(Deployments::default())
        .tool(
            Tool::new("deploy", deploy)
                .description("Deploys a service after asking for confirmation and a reason.")
                .destructive(),
        )
        .tool(
            Tool::new("summarize", summarize)
                .description("Summarises text with the client's model.")
                .read_only(),
        )
        .build()?;

    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    serve_with_shutdown(listener, endpoint, shutdown_signal()).await?;
    Ok(())
}
