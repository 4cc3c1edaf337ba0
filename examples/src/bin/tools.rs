//! Tools: typed arguments, structured output, a tool error, and shared state.
//!
//! ```sh
//! cargo run -p mcp-examples --bin tools              # http://127.0.0.1:8080/mcp
//! cargo run -p mcp-examples --bin tools 127.0.0.1:0  # any free port, printed on the first line
//! mcp call http://127.0.0.1:8080/mcp divide dividend=7 divisor=2
//! ```
//!
//! - A tool's arguments are a `Deserialize + JsonSchema` type: the derived JSON Schema is the
//!   tool's `inputSchema` (doc comments become descriptions), and the server checks every
//!   call's arguments against it before the handler runs.
//! - Returning [`Json<T>`] gives structured output: `structuredContent` plus the same JSON as
//!   text, and `T`'s schema as the tool's `outputSchema`.
//! - An `Err` (here a [`ToolError`]) becomes a result with `isError: true` and the error's
//!   text, which the model sees and can react to; it is not a protocol error.
//! - [`State<S>`] hands every call the value given to `ServerBuilder::with_state`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{Json, NoArgs, Server, State, Tool, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The arguments of `divide`.
#[derive(Deserialize, JsonSchema)]
struct DivideArgs {
    /// The number to divide.
    dividend: i64,
    /// The number to divide by; must not be zero.
    divisor: i64,
}

/// The structured result of `divide`.
#[derive(Serialize, JsonSchema)]
struct Division {
    /// `dividend / divisor`, rounded toward zero.
    quotient: i64,
    /// What is left over.
    remainder: i64,
}

/// Divides two integers. Dividing by zero is a tool error: the caller gets a result with
/// `isError: true` and the message, and may try again with other arguments.
async fn divide(args: DivideArgs) -> Result<Json<Division>, ToolError> {
    if args.divisor == 0 {
        return Err(ToolError::new(
            "cannot divide by zero; pick another divisor",
        ));
    }
    // checked_div also refuses i64::MIN / -1, which would overflow.
    let quotient = args
        .dividend
        .checked_div(args.divisor)
        .ok_or_else(|| ToolError::new("the quotient does not fit in 64 bits"))?;
    Ok(Json(Division {
        quotient,
        remainder: args.dividend % args.divisor,
    }))
}

/// The arguments of `shout`.
#[derive(Deserialize, JsonSchema)]
struct ShoutArgs {
    /// The text to shout.
    text: String,
    /// How many exclamation marks to add (default 1).
    #[serde(default)]
    marks: Option<u8>,
}

/// A plain text result: a `String` becomes one text content block.
async fn shout(args: ShoutArgs) -> String {
    let marks = "!".repeat(usize::from(args.marks.unwrap_or(1)));
    format!("{}{marks}", args.text.to_uppercase())
}

/// The server's shared state: how many calls `count` has answered. Clone is cheap (an `Arc`).
#[derive(Clone, Default)]
struct Calls(Arc<AtomicU64>);

/// A tool without arguments (`NoArgs`) that reads and changes the server's state.
async fn count(State(calls): State<Calls>, _: NoArgs) -> String {
    let now = calls.0.fetch_add(1, Ordering::SeqCst) + 1;
    format!("count has been called {now} time(s)")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("tools-example", "1.0")
        .with_state(Calls::default())
        .tool(
            Tool::new("divide", divide)
                .title("Divide")
                .description("Divides two integers; refuses a zero divisor.")
                .read_only()
                .idempotent(),
        )
        .tool(
            Tool::new("shout", shout)
                .description("Upper-cases text.")
                .read_only(),
        )
        .tool(Tool::new("count", count).description("Counts its own calls."))
        // `build` checks every declaration (names, schemas, the state type) up front.
        .build()?;

    // The address from the first argument; `127.0.0.1:0` picks a free port.
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    serve_with_shutdown(listener, endpoint, shutdown_signal()).await?;
    Ok(())
}
