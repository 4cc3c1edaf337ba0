//! Resource templates: one declaration for every URI that matches a pattern.
//!
//! ```sh
//! cargo run -p mcp-examples --bin templates              # http://127.0.0.1:8080/mcp
//! cargo run -p mcp-examples --bin templates 127.0.0.1:0  # any free port
//! ```
//!
//! A [`ResourceTemplate`] has an RFC 6570 level 1 URI template (`{name}` matches one
//! non-empty run of characters without `/`). `resources/templates/list` shows the templates;
//! a `resources/read` of a matching URI runs the reader with the variables, percent-decoded,
//! in [`ResourceRequest::vars`] (or typed, with [`ResourceRequest::parse`]). A reader answers
//! [`ResourceError::NotFound`] for a URI that matches but names nothing, and the client gets
//! the revision's resource-not-found error.
//!
//! Templates appear in completion requests too (`ref/resource`): see `completion.rs`.

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{ResourceError, ResourceRequest, ResourceTemplate, Server};
use serde::Deserialize;

/// A tiny in-memory "database".
const USERS: &[(&str, &str, &str)] = &[
    ("1", "Ada Lovelace", "ada@example.com"),
    ("2", "Alan Turing", "alan@example.com"),
];

/// `users://{id}/profile`: one variable, read by name.
async fn profile(request: ResourceRequest) -> Result<String, ResourceError> {
    let id = request.var("id").unwrap_or_default();
    let (_, name, email) = USERS
        .iter()
        .find(|(user, _, _)| *user == id)
        // The URI matched the template, but there is no such user.
        .ok_or_else(|| ResourceError::NotFound(request.uri.clone()))?;
    Ok(format!("{name} <{email}>"))
}

/// The variables of `weather://{city}/{day}`, read as a typed value.
#[derive(Deserialize)]
struct Forecast {
    city: String,
    day: String,
}

/// `weather://{city}/{day}`: several variables, parsed into a struct. Variables are
/// percent-decoded, so `weather://New%20York/monday` gives the city `New York`.
async fn forecast(request: ResourceRequest) -> Result<String, ResourceError> {
    let Forecast { city, day } = request.parse()?;
    Ok(format!("{city} on {day}: sunny, 21 °C"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("templates-example", "1.0")
        .resource_template(
            ResourceTemplate::new("users://{id}/profile", "profile", profile)
                .title("User profile")
                .description("A user's name and e-mail address, by id.")
                .mime_type("text/plain"),
        )
        .resource_template(
            ResourceTemplate::new("weather://{city}/{day}", "forecast", forecast)
                .description("The forecast for a city and a day.")
                .mime_type("text/plain"),
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
