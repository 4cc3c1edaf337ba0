//! A server on stdio: the client starts it as a child process and speaks JSON-RPC, one
//! message per line, on its stdin and stdout.
//!
//! ```sh
//! cargo build -p mcp-examples --bin stdio_server
//! mcp tools --stdio target/debug/stdio_server
//! mcp call --stdio target/debug/stdio_server add_note text="buy milk"
//! ```
//!
//! or type JSON-RPC yourself (`cargo run -p mcp-examples --bin stdio_server`, then paste
//! `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`).
//!
//! [`serve_stdio`] serves every revision with a handshake and 2026-07-28 on the same pipe,
//! delivers notifications itself (subscriptions, list changes, progress, logs), and returns
//! when stdin closes. Stdout belongs to the protocol: never print to it; write diagnostics to
//! stderr, which clients show or log.

use std::sync::{Arc, Mutex, PoisonError};

use mcp_server::{NoArgs, Prompt, Resource, ResourceRequest, Server, State, Tool, serve_stdio};
use schemars::JsonSchema;
use serde::Deserialize;

/// The notes taken so far, shared by the handlers.
#[derive(Clone, Default)]
struct Notes(Arc<Mutex<Vec<String>>>);

impl Notes {
    fn all(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The arguments of `add_note`.
#[derive(Deserialize, JsonSchema)]
struct AddNoteArgs {
    /// The note's text.
    text: String,
}

async fn add_note(State(notes): State<Notes>, args: AddNoteArgs) -> String {
    let mut all = notes.0.lock().unwrap_or_else(PoisonError::into_inner);
    all.push(args.text);
    format!("{} note(s)", all.len())
}

async fn clear(State(notes): State<Notes>, _: NoArgs) -> String {
    notes
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
    "cleared".to_owned()
}

/// `notes://all`: one note per line.
async fn all_notes(State(notes): State<Notes>, _: ResourceRequest) -> String {
    notes.all().join("\n")
}

/// A prompt built from the notes.
async fn review(State(notes): State<Notes>) -> String {
    let notes = notes.all();
    format!(
        "Here are my notes:\n- {}\nWhich should I do first?",
        notes.join("\n- ")
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let server = Server::builder("stdio-example", "1.0")
        .instructions("Takes notes: add_note, then read notes://all or get the prompt review.")
        .with_state(Notes::default())
        .tool(Tool::new("add_note", add_note).description("Adds a note."))
        .tool(
            Tool::new("clear", clear)
                .description("Forgets every note.")
                .destructive(),
        )
        .resource(Resource::new("notes://all", "notes", all_notes).mime_type("text/plain"))
        .prompt(Prompt::new("review", review).description("Asks which note comes first."))
        .build()
        .expect("the declarations are valid");
    // Diagnostics go to stderr: stdout carries the protocol.
    eprintln!("stdio-example: ready");
    if let Err(err) = serve_stdio(server).await {
        eprintln!("stdio-example: {err}");
        std::process::exit(1);
    }
}
