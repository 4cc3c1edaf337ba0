//! Prompts: named message templates with typed arguments.
//!
//! ```sh
//! cargo run -p mcp-examples --bin prompts              # http://127.0.0.1:8080/mcp
//! cargo run -p mcp-examples --bin prompts 127.0.0.1:0  # any free port
//! ```
//!
//! A prompt's arguments are the fields of a `Deserialize + JsonSchema` type: `prompts/list`
//! shows each with its doc comment as description, and an `Option` field is optional
//! (prompt arguments are strings on the wire). The handler returns a `String` (one user
//! message), [`PromptMessage`]s, a [`GetPromptResult`] (messages and a description), or a
//! `Result` of these with a [`PromptError`].

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{GetPromptResult, Prompt, PromptError, PromptMessage, Server};
use schemars::JsonSchema;
use serde::Deserialize;

/// The arguments of `code_review`.
#[derive(Deserialize, JsonSchema)]
struct ReviewArgs {
    /// The code to review.
    code: String,
    /// The language it is written in (optional).
    language: Option<String>,
    /// How strict to be: `gentle` or `strict` (optional; default `gentle`).
    tone: Option<String>,
}

/// Several messages, a description, and a refusal of a bad argument.
async fn code_review(args: ReviewArgs) -> Result<GetPromptResult, PromptError> {
    let tone = args.tone.as_deref().unwrap_or("gentle");
    if tone != "gentle" && tone != "strict" {
        // The client gets an invalid-params error (-32602) with this text.
        return Err(PromptError::InvalidArguments(format!(
            "tone must be gentle or strict, not {tone:?}"
        )));
    }
    let language = args.language.as_deref().unwrap_or("an unnamed language");
    Ok(GetPromptResult::new(vec![
        PromptMessage::user(format!(
            "Review this code, written in {language}. Be {tone}.\n\n{}",
            args.code
        )),
        // An assistant message primes the model's answer.
        PromptMessage::assistant("Here is my review, point by point:"),
    ])
    .with_description(format!("A {tone} review of code in {language}")))
}

/// A prompt without arguments: the handler takes nothing, and a `String` is one user message.
async fn daily_summary() -> String {
    "Summarise what happened today in three bullet points.".to_owned()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("prompts-example", "1.0")
        .prompt(
            Prompt::new("code_review", code_review)
                .title("Code review")
                .description("Asks for a review of a piece of code."),
        )
        .prompt(Prompt::new("daily_summary", daily_summary).description("Today in brief."))
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
