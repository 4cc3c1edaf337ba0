//! A client: connect to any MCP server over HTTP, list what it offers, call a tool, read a
//! resource, and answer the server's questions.
//!
//! ```sh
//! cargo run -p mcp-examples --bin http_server &        # a server to talk to
//! cargo run -p mcp-examples --bin client -- http://127.0.0.1:8080/mcp
//! cargo run -p mcp-examples --bin client -- http://127.0.0.1:8080/mcp call add '{"a":2,"b":3}'
//! cargo run -p mcp-examples --bin client -- http://127.0.0.1:8080/mcp read docs://readme
//! cargo run -p mcp-examples --bin asking &             # on port 8080 instead: a tool that asks
//! cargo run -p mcp-examples --bin client -- --answer '{"reason":"hotfix"}' \
//!     http://127.0.0.1:8080/mcp call deploy '{"service":"web"}'
//! ```
//!
//! [`Client::builder`] negotiates the newest revision both sides speak (`connect_http` falls
//! back to the older handshake and to HTTP+SSE by itself; `ClientBuilder::revision` pins
//! one). The calls return the results as JSON values, whatever the revision.
//!
//! The server's questions (elicitation, sampling, roots) reach one `on_ask` callback, whatever
//! the revision uses to ask. A real client shows them to the user; this one prints each
//! question and answers from `--answer JSON`: it accepts, filling in the fields the question
//! asks for from that object, or declines when no `--answer` was given.

use std::process::ExitCode;

use mcp_client::{Answer, Asks, Client, Question, QuestionKind};
use serde_json::{Map, Value, json};

const USAGE: &str = "usage: client [--answer JSON] URL [call TOOL [JSON] | read URI]";

/// What the command line asks for.
enum Command {
    /// List the tools, resources and prompts.
    List,
    /// Call a tool with these arguments.
    Call(String, Value),
    /// Read a resource.
    Read(String),
}

/// The answer to one question: accept with the fields it asks for, or decline.
fn answer(question: &Question, answers: Option<&Map<String, Value>>) -> Answer {
    println!("question: {}", question.message().unwrap_or("(no message)"));
    let (QuestionKind::Elicitation, Some(answers)) = (question.kind(), answers) else {
        return Answer::decline();
    };
    // The fields the form asks for (none for a plain confirmation), taken from `--answer`.
    let wanted = question
        .requested_schema()
        .and_then(|schema| schema["properties"].as_object());
    let content: Map<String, Value> = answers
        .iter()
        .filter(|(field, _)| wanted.is_some_and(|w| w.contains_key(*field)))
        .map(|(field, value)| (field.clone(), value.clone()))
        .collect();
    Answer::accept(Value::Object(content))
}

/// Prints a tool result: its structured content when it has one, else its text blocks.
fn print_result(result: &Value) {
    if result["isError"] == true {
        print!("error: ");
    }
    if let Some(structured) = result.get("structuredContent") {
        println!("{structured}");
        return;
    }
    for block in result["content"].as_array().into_iter().flatten() {
        match block["text"].as_str() {
            Some(text) => println!("{text}"),
            None => println!("({} content)", block["type"]),
        }
    }
}

async fn run(args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let mut args = args.into_iter().peekable();
    let mut answers = None;
    if args.peek().map(String::as_str) == Some("--answer") {
        args.next();
        let json = args.next().ok_or(USAGE)?;
        answers = Some(serde_json::from_str::<Map<String, Value>>(&json)?);
    }
    let url = args.next().ok_or(USAGE)?;
    let command = match args.next().as_deref() {
        None => Command::List,
        Some("call") => {
            let tool = args.next().ok_or(USAGE)?;
            let arguments = match args.next() {
                Some(json) => serde_json::from_str(&json)?,
                None => json!({}),
            };
            Command::Call(tool, arguments)
        }
        Some("read") => Command::Read(args.next().ok_or(USAGE)?),
        Some(_) => return Err(USAGE.into()),
    };

    let client = Client::builder()
        .client_info("mcp-examples-client", "1.0")
        // Declares form elicitation, and answers it (on every revision) with this callback.
        .on_ask(Asks::none().elicitation(), move |question| {
            let reply = answer(&question, answers.as_ref());
            async move { reply }
        })
        .connect_http(&url)
        .await?;
    let name = client
        .server()
        .and_then(|server| server.server_info)
        .and_then(|info| info["name"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "a server".to_owned());
    println!("connected to {name} on revision {}", client.revision());

    match command {
        Command::List => {
            // Only the kinds the server offers (its capabilities say which).
            let capabilities = client.server().map(|s| s.capabilities).unwrap_or_default();
            if capabilities.get("tools").is_some() {
                for tool in client.list_tools().await? {
                    println!("tool {}: {}", tool["name"], tool["description"]);
                }
            }
            if capabilities.get("resources").is_some() {
                for resource in client.list_resources().await? {
                    println!("resource {}", resource["uri"]);
                }
            }
            if capabilities.get("prompts").is_some() {
                for prompt in client.list_prompts().await? {
                    println!("prompt {}", prompt["name"]);
                }
            }
        }
        Command::Call(tool, arguments) => {
            let result = client.call_tool(&tool, arguments).await?;
            print_result(&result);
        }
        Command::Read(uri) => {
            let read = client.read_resource(&uri).await?;
            for contents in read["contents"].as_array().into_iter().flatten() {
                match contents["text"].as_str() {
                    Some(text) => println!("{text}"),
                    None => println!(
                        "({} bytes, base64)",
                        contents["blob"].as_str().map_or(0, str::len)
                    ),
                }
            }
        }
    }
    // Ends the session (HTTP DELETE on the revisions that have sessions).
    client.close().await?;
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("client: {err}");
            ExitCode::FAILURE
        }
    }
}
