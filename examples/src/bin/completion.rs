//! Completion: suggestions for prompt arguments and template variables as the user types.
//!
//! ```sh
//! cargo run -p mcp-examples --bin completion              # http://127.0.0.1:8080/mcp
//! cargo run -p mcp-examples --bin completion 127.0.0.1:0  # any free port
//! ```
//!
//! One [`Completer`] serves the whole server's `completion/complete` requests. Each request
//! says what is being completed ([`CompletionRef`]: a prompt by name, or a resource template
//! by its URI template), which argument, what the user typed so far, and the arguments
//! already filled in ([`CompletionRequest::context`]), so one suggestion can depend on
//! another. The handler returns a `Vec<String>` (the first 100 are sent, with the total) or a
//! [`Completion`] that states the total and whether more exist.

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{
    Completer, Completion, CompletionRef, CompletionRequest, Prompt, ResourceRequest,
    ResourceTemplate, Server,
};
use schemars::JsonSchema;
use serde::Deserialize;

const LANGUAGES: &[&str] = &["Dutch", "English", "French", "German", "Greek", "Spanish"];

/// Cities by country, for a completion that depends on another argument.
const CITIES: &[(&str, &[&str])] = &[
    ("France", &["Paris", "Lyon", "Marseille"]),
    ("Spain", &["Madrid", "Barcelona", "Malaga"]),
];

/// The arguments of `translate`.
#[derive(Deserialize, JsonSchema)]
struct TranslateArgs {
    /// The text to translate.
    text: String,
    /// The language to translate into (completed from a list).
    language: String,
}

async fn translate(args: TranslateArgs) -> String {
    format!("Translate into {}: {}", args.language, args.text)
}

/// `cities://{country}/{city}`: a template whose variables are completed too.
async fn city(request: ResourceRequest) -> String {
    format!(
        "{} is a city in {}.",
        request.var("city").unwrap_or_default(),
        request.var("country").unwrap_or_default()
    )
}

/// The values of `candidates` that start with what was typed, ignoring case.
fn starting_with(candidates: &[&str], typed: &str) -> Vec<String> {
    let typed = typed.to_lowercase();
    candidates
        .iter()
        .filter(|c| c.to_lowercase().starts_with(&typed))
        .map(|c| (*c).to_owned())
        .collect()
}

/// The server's one completion handler: it looks at what is being completed.
async fn complete(request: CompletionRequest) -> Completion {
    match (&request.reference, request.argument.as_str()) {
        // A prompt argument: a plain list of matches (`Vec<String>` converts).
        (CompletionRef::Prompt(name), "language") if name == "translate" => {
            starting_with(LANGUAGES, &request.value).into()
        }
        // A template variable.
        (CompletionRef::Resource(template), "country")
            if template == "cities://{country}/{city}" =>
        {
            let countries: Vec<&str> = CITIES.iter().map(|(country, _)| *country).collect();
            starting_with(&countries, &request.value).into()
        }
        // A variable that depends on another: the cities of the country already chosen
        // (sent by the client in `context.arguments`); none until a country is chosen.
        (CompletionRef::Resource(template), "city") if template == "cities://{country}/{city}" => {
            let country = request.context.get("country").map(String::as_str);
            let cities = CITIES
                .iter()
                .find(|(name, _)| Some(*name) == country)
                .map_or(&[][..], |(_, cities)| *cities);
            let values = starting_with(cities, &request.value);
            Completion {
                total: Some(values.len() as u64),
                values,
                has_more: false,
            }
        }
        // Anything else: no suggestions.
        _ => Completion::default(),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("completion-example", "1.0")
        .prompt(Prompt::new("translate", translate).description("Translates text."))
        .resource_template(ResourceTemplate::new(
            "cities://{country}/{city}",
            "city",
            city,
        ))
        // Declaring a completer advertises the `completions` capability.
        .completion(Completer::new(complete))
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
