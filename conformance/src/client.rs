//! The conformance client: what `conformance-client` does for each client scenario of the suite.
//!
//! The suite starts a test server per scenario and runs `conformance-client <server-url>` with
//! `MCP_CONFORMANCE_SCENARIO` (the scenario's name), `MCP_CONFORMANCE_PROTOCOL_VERSION` (the
//! revision the scenario runs at) and, for some scenarios, `MCP_CONFORMANCE_CONTEXT` (a JSON
//! object, such as the tool calls to make). Everything goes through [`mcp_client::Client`]: the
//! scenarios judge the library, not this driver.
//!
//! Most scenarios are served by one generic routine ([`Scenario::run`] with an unknown name):
//! connect, list the tools and call each one with arguments sampled from its input schema (or
//! the calls the context names), then list and read resources and list and get prompts when the
//! server offers them. The few that need more (MRTR isolation, JSON Schema round trips) have
//! their own routine. Every question the server asks is answered: form elicitation is accepted
//! with the schema's defaults, URL elicitation is accepted, sampling gets a canned message and
//! roots one root.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_adapters::Adapter;
use mcp_client::oauth::{EnterpriseIdp, FollowRedirect, Grant, OAuthConfig, PreRegistered};
use mcp_client::{
    Answer, Asks, Client, ErrorObject, Listener, Question, QuestionKind, Revision, Subscriptions,
};
use serde_json::{Value, json};

use crate::sample;

/// The environment variable holding the scenario's name.
pub const SCENARIO_VAR: &str = "MCP_CONFORMANCE_SCENARIO";
/// The environment variable holding the protocol version the scenario runs at.
pub const PROTOCOL_VERSION_VAR: &str = "MCP_CONFORMANCE_PROTOCOL_VERSION";
/// The environment variable holding the scenario's context (a JSON object).
pub const CONTEXT_VAR: &str = "MCP_CONFORMANCE_CONTEXT";

/// How long one call may take: below the suite's 30 s per-scenario timeout, so a hung call
/// fails the client visibly instead of timing the scenario out.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// The tool the MRTR scenario calls while another call waits for its answer.
const MRTR_UNRELATED_TOOL: &str = "test_mrtr_unrelated";
/// The tool whose input schema the JSON Schema 2020-12 preservation scenario inspects.
const FOCAL_SCHEMA_TOOL: &str = "json_schema_2020_12_tool";
/// The tool that echoes a schema back to the preservation scenario.
const SCHEMA_ECHO_TOOL: &str = "json_schema_echo";

/// The `client_id` the suite's authorization servers accept as a client ID metadata document
/// URL (`auth/basic-cimd`).
pub const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The authorization scenarios of OAuth extensions `mcp-client` does not implement yet (DPoP).
const UNSUPPORTED_AUTH: &[&str] = &[];

/// Why a scenario could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// No server URL was given on the command line.
    #[error("usage: conformance-client <server-url> (with {SCENARIO_VAR} set)")]
    MissingUrl,
    /// `MCP_CONFORMANCE_SCENARIO` is not set.
    #[error("{SCENARIO_VAR} is not set")]
    MissingScenario,
    /// `MCP_CONFORMANCE_CONTEXT` is not a JSON object.
    #[error("{CONTEXT_VAR} is not a JSON object: {0}")]
    BadContext(String),
    /// The scenario needs an OAuth extension `mcp-client` does not implement yet (DPoP).
    #[error("scenario {0}: this OAuth extension is not supported by mcp-client yet")]
    Authorization(String),
    /// The server did not offer what the scenario is about.
    #[error("scenario {scenario}: {detail}")]
    Expectation {
        /// The scenario.
        scenario: String,
        /// What was missing.
        detail: String,
    },
    /// The client failed.
    #[error("{0}")]
    Client(#[from] mcp_client::Error),
    /// A skills call failed (other than a file that failed verification, which the skills
    /// scenarios expect to be refused).
    #[error("{0}")]
    Skill(#[from] mcp_client::SkillError),
}

/// One client scenario to run: its name, the server's URL, the revision and the context.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The scenario's name, such as `tools_call` or `sse-retry`.
    pub name: String,
    /// The URL of the suite's test server.
    pub url: String,
    /// The revision to speak; `None` (no or an unknown version given) negotiates.
    pub revision: Option<Revision>,
    /// The scenario's context, when the suite gave one.
    pub context: Option<Value>,
}

impl Scenario {
    /// Reads the scenario from the process arguments (after the program name; the URL is the
    /// last one) and the suite's environment variables.
    pub fn from_env(args: impl IntoIterator<Item = String>) -> Result<Self, ScenarioError> {
        let url = args.into_iter().last().ok_or(ScenarioError::MissingUrl)?;
        let name = std::env::var(SCENARIO_VAR).map_err(|_| ScenarioError::MissingScenario)?;
        let revision = std::env::var(PROTOCOL_VERSION_VAR)
            .ok()
            .and_then(|v| Revision::parse(&v));
        let context = match std::env::var(CONTEXT_VAR) {
            Ok(raw) => match serde_json::from_str::<Value>(&raw) {
                Ok(value @ Value::Object(_)) => Some(value),
                Ok(_) => return Err(ScenarioError::BadContext(raw)),
                Err(e) => return Err(ScenarioError::BadContext(e.to_string())),
            },
            Err(_) => None,
        };
        Ok(Self {
            name,
            url,
            revision,
            context,
        })
    }

    /// Runs the scenario to its end. Progress is printed on stdout (the suite keeps it in the
    /// scenario's `stdout.txt`).
    pub async fn run(&self) -> Result<(), ScenarioError> {
        if UNSUPPORTED_AUTH.contains(&self.name.as_str()) {
            return Err(ScenarioError::Authorization(self.name.clone()));
        }
        match self.name.as_str() {
            "initialize" | "json-schema-ref-no-deref" | "request-metadata" => {
                let Session { client, _listener } = self.connect(Hooks::default()).await?;
                let tools = client.list_tools().await?;
                println!("listed {} tools", tools.len());
                client.close().await?;
                Ok(())
            }
            "sep-2322-client-request-state" => self.mrtr().await,
            "json-schema-2020-12-preservation" => self.schema_round_trip().await,
            "interop-accept" => self.interop(Some(true)).await,
            "interop-decline" => self.interop(Some(false)).await,
            "interop-none" => self.interop(None).await,
            "sep-2640-client-no-prefetch" => self.skills(false).await,
            name if name.starts_with("sep-2640-client-") => self.skills(true).await,
            _ => self.exercise().await,
        }
    }

    fn expectation(&self, detail: impl Into<String>) -> ScenarioError {
        ScenarioError::Expectation {
            scenario: self.name.clone(),
            detail: detail.into(),
        }
    }

    /// Connects, and where the revision has a standalone GET stream opens it (with a listener
    /// for no notification in particular): a 2025-era server may send its requests there rather
    /// than on the stream of the call they belong to, and `mcp-client` only opens that stream for
    /// a listener.
    async fn connect(&self, hooks: Hooks) -> Result<Session, ScenarioError> {
        let hooks = Arc::new(hooks);
        let answering = hooks.clone();
        let mut builder = Client::builder()
            .client_info("mcp-conformance-client", env!("CARGO_PKG_VERSION"))
            .timeout(CALL_TIMEOUT)
            .remember_era(false)
            .on_ask(Asks::all(), move |question| {
                let hooks = answering.clone();
                async move { hooks.answer(question).await }
            });
        if let Some(revision) = self.revision {
            builder = builder.revision(revision);
        }
        if self.name.starts_with("auth/") {
            builder = builder.oauth(self.oauth());
        }
        let client = if self.url.trim_end_matches('/').ends_with("/sse") {
            builder.connect_sse(&self.url).await?
        } else {
            builder.connect_http(&self.url).await?
        };
        println!(
            "connected to {} on {}",
            self.url,
            client.revision().as_str()
        );
        let _ = hooks.client.set(client.clone());
        // In `sse-retry` the test server answers the interrupted call on whichever GET comes
        // first, so a standalone stream would take the answer meant for the resumed one.
        let standalone = self.name != "sse-retry";
        let listener = if standalone && Adapter::new(client.revision()).features().has_get_stream {
            // `listen` resolves once the GET stream is open, so a question the server pushes
            // right after is not lost.
            let listener = client.listen(Subscriptions::new()).await?;
            Some(listener)
        } else {
            None
        };
        Ok(Session {
            client,
            _listener: listener,
        })
    }

    /// The library's OAuth client, as the suite's authorization scenarios need it: the
    /// authorization servers approve at once (their redirect is followed without a browser),
    /// the client ID metadata document URL the suite knows, and the pre-registered client of
    /// the context when it names one.
    fn oauth(&self) -> OAuthConfig {
        let mut config = OAuthConfig::new(FollowRedirect::new())
            .client_name("mcp-conformance-client")
            .redirect_uri("http://localhost:3000/callback")
            .client_metadata_url(CLIENT_METADATA_URL);
        let field = |name: &str| {
            self.context
                .as_ref()
                .and_then(|c| c.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        if let Some(client_id) = field("client_id") {
            let mut client = PreRegistered::new(client_id, field("client_secret"));
            if let Some(pem) = field("private_key_pem") {
                client = client.private_key_jwt(pem, field("signing_algorithm").as_deref());
            }
            config = config.client(client);
        }
        if self.name.starts_with("auth/client-credentials-") {
            config = config.grant(Grant::ClientCredentials);
        }
        if let Some(assertion) = field("valid_jwt") {
            config = config.jwt_bearer(assertion);
        }
        if let (Some(token_endpoint), Some(client_id), Some(id_token)) = (
            field("idp_token_endpoint"),
            field("idp_client_id"),
            field("idp_id_token"),
        ) {
            config = config.enterprise_managed(EnterpriseIdp {
                token_endpoint,
                client_id,
                client_secret: None,
                id_token,
            });
        }
        config
    }

    /// The Skills scenarios (SEP-2640): list the skills and, when `load`, load each one as a
    /// host would: read its `SKILL.md` verified against the entry (size, digest,
    /// frontmatter), and only when that passes its other files, each verified. A file that
    /// fails verification is reported and its skill is not loaded further. Without `load`,
    /// nothing is read: listing never fetches files.
    async fn skills(&self, load: bool) -> Result<(), ScenarioError> {
        let Session { client, _listener } = self.connect(Hooks::default()).await?;
        let mut cursor: Option<String> = None;
        let mut skills = Vec::new();
        // Bounded: a server that never ends its listing is not followed past 100 pages.
        for _ in 0..100 {
            let page = client.list_skills(cursor.as_deref()).await?;
            skills.extend(page.skills);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        println!("listed {} skills", skills.len());
        if load {
            for skill in &skills {
                match client.read_skill_file(skill, &skill.uri).await {
                    Ok(_) => println!("loaded {}", skill.uri),
                    Err(err @ mcp_client::SkillError::Request(_)) => return Err(err.into()),
                    Err(err) => {
                        println!("refused skill {}: {err}", skill.uri);
                        continue;
                    }
                }
                let mcp_client::SkillResources::Files(files) = &skill.resources else {
                    continue;
                };
                for file in files.iter().filter(|f| f.uri != skill.uri) {
                    match client.read_skill_file(skill, &file.uri).await {
                        Ok(_) => println!("read {}", file.uri),
                        Err(err @ mcp_client::SkillError::Request(_)) => return Err(err.into()),
                        Err(err) => println!("refused {}: {err}", file.uri),
                    }
                }
            }
        }
        client.close().await?;
        Ok(())
    }

    /// The generic routine: every tool, resource and prompt the server offers.
    async fn exercise(&self) -> Result<(), ScenarioError> {
        let Session { client, _listener } = self.connect(Hooks::default()).await?;
        let tools = client.list_tools().await?;
        println!("listed {} tools", tools.len());
        let planned = self
            .context
            .as_ref()
            .and_then(|c| c.get("toolCalls"))
            .and_then(Value::as_array);
        match planned {
            Some(calls) => {
                for call in calls {
                    let name = call.get("name").and_then(Value::as_str).unwrap_or("");
                    let arguments = call.get("arguments").cloned().unwrap_or(json!({}));
                    self.call(&client, name, arguments).await?;
                }
            }
            None => {
                for tool in &tools {
                    let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
                    let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
                    self.call(&client, name, sample::arguments(schema)).await?;
                }
            }
        }
        let capabilities = client
            .server()
            .map(|s| s.capabilities)
            .unwrap_or(Value::Null);
        if capabilities.get("resources").is_some() {
            let resources = client.list_resources().await?;
            println!("listed {} resources", resources.len());
            for resource in &resources {
                if let Some(uri) = resource.get("uri").and_then(Value::as_str) {
                    client.read_resource(uri).await?;
                    println!("read {uri}");
                }
            }
        }
        if capabilities.get("prompts").is_some() {
            let prompts = client.list_prompts().await?;
            println!("listed {} prompts", prompts.len());
            for prompt in &prompts {
                let Some(name) = prompt.get("name").and_then(Value::as_str) else {
                    continue;
                };
                client.get_prompt(name, prompt_arguments(prompt)).await?;
                println!("got prompt {name}");
            }
        }
        client.close().await?;
        Ok(())
    }

    async fn call(
        &self,
        client: &Client,
        name: &str,
        arguments: Value,
    ) -> Result<(), ScenarioError> {
        let result = client.call_tool(name, arguments).await?;
        let failed = result.get("isError").and_then(Value::as_bool) == Some(true);
        println!(
            "called {name}{}",
            if failed {
                " (the tool reported an error)"
            } else {
                ""
            }
        );
        Ok(())
    }

    /// SEP-2322: each tool asks through MRTR; while the first waits for its answer an
    /// unrelated tool is called, which must carry none of the first call's state.
    async fn mrtr(&self) -> Result<(), ScenarioError> {
        let hooks = Hooks {
            between_rounds: Some(MRTR_UNRELATED_TOOL),
            ..Hooks::default()
        };
        let Session { client, _listener } = self.connect(hooks).await?;
        let tools = client.list_tools().await?;
        println!("listed {} tools", tools.len());
        for name in [
            "test_mrtr_echo_state",
            "test_mrtr_no_state",
            "test_mrtr_no_result_type",
        ] {
            if tools.iter().any(|t| t.get("name") == Some(&json!(name))) {
                self.call(&client, name, json!({})).await?;
            }
        }
        client.close().await?;
        Ok(())
    }

    /// Interop with a peer server (`interop/ts-v1-server.mjs`): `echo` answers its text, and
    /// `confirm` asks through elicitation and reports the action this client chose (skipped with
    /// `None`, for revisions without elicitation).
    async fn interop(&self, accept: Option<bool>) -> Result<(), ScenarioError> {
        let hooks = Hooks {
            decline: accept == Some(false),
            ..Hooks::default()
        };
        let Session { client, _listener } = self.connect(hooks).await?;
        println!("revision {}", client.revision().as_str());
        let echoed = client.call_tool("echo", json!({"text": "hello"})).await?;
        if echoed["content"][0]["text"] != "hello" {
            return Err(self.expectation(format!("echo answered {echoed}")));
        }
        let Some(accept) = accept else {
            client.close().await?;
            return Ok(());
        };
        let confirmed = client.call_tool("confirm", json!({})).await?;
        let expected = if accept {
            "action=accept"
        } else {
            "action=decline"
        };
        if confirmed["content"][0]["text"] != expected {
            return Err(self.expectation(format!("confirm answered {confirmed}, not {expected}")));
        }
        println!("{expected}");
        client.close().await?;
        Ok(())
    }

    /// SEP-1613/SEP-2106: the focal tool's input schema goes back to the server exactly as the
    /// client received it.
    async fn schema_round_trip(&self) -> Result<(), ScenarioError> {
        let Session { client, _listener } = self.connect(Hooks::default()).await?;
        let tools = client.list_tools().await?;
        let focal = tools
            .iter()
            .find(|t| t.get("name") == Some(&json!(FOCAL_SCHEMA_TOOL)))
            .ok_or_else(|| self.expectation(format!("no tool {FOCAL_SCHEMA_TOOL}")))?;
        let schema = focal.get("inputSchema").cloned().unwrap_or(Value::Null);
        self.call(&client, SCHEMA_ECHO_TOOL, json!({"schema": schema}))
            .await?;
        client.close().await?;
        Ok(())
    }
}

/// A connected client and the listener that keeps its standalone stream open.
struct Session {
    client: Client,
    _listener: Option<Listener>,
}

/// Arguments for `prompts/get`: a string for every required argument.
fn prompt_arguments(prompt: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for argument in prompt
        .get("arguments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if argument.get("required").and_then(Value::as_bool) == Some(true)
            && let Some(name) = argument.get("name").and_then(Value::as_str)
        {
            out.insert(name.to_owned(), json!("test"));
        }
    }
    Value::Object(out)
}

/// What the answering callback may do besides answering.
#[derive(Default)]
struct Hooks {
    /// The connected client (set once connected).
    client: OnceLock<Client>,
    /// A tool to call (once) while a question is pending.
    between_rounds: Option<&'static str>,
    called_between: AtomicBool,
    /// Decline form elicitations instead of accepting them.
    decline: bool,
}

impl Hooks {
    async fn answer(&self, question: Question) -> Answer {
        if let (Some(tool), Some(client)) = (self.between_rounds, self.client.get())
            && !self.called_between.swap(true, Ordering::SeqCst)
        {
            match client.call_tool(tool, json!({})).await {
                Ok(_) => println!("called {tool} while a question was pending"),
                Err(e) => eprintln!("calling {tool} between rounds failed: {e}"),
            }
        }
        if self.decline && question.kind() == QuestionKind::Elicitation {
            return Answer::decline();
        }
        answer(&question)
    }
}

/// The answer to any question: accept, with the schema's defaults.
pub fn answer(question: &Question) -> Answer {
    match question.kind() {
        QuestionKind::Elicitation => {
            Answer::accept(sample::form_content(question.requested_schema()))
        }
        QuestionKind::UrlElicitation => Answer::accept_url(),
        QuestionKind::Sampling => Answer::result(json!({
            "role": "assistant",
            "content": {"type": "text", "text": "A sampled answer from the conformance client."},
            "model": "mcp-conformance-client",
            "stopReason": "endTurn",
        })),
        QuestionKind::Roots => Answer::result(json!({
            "roots": [{"uri": "file:///tmp/mcp-conformance", "name": "conformance"}],
        })),
        _ => Answer::error(ErrorObject::method_not_found(question.method())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_must_be_an_object() {
        let bad = ScenarioError::BadContext("[]".into());
        assert!(bad.to_string().contains(CONTEXT_VAR));
        assert!(
            ScenarioError::Authorization("auth/dpop".into())
                .to_string()
                .contains("OAuth")
        );
    }

    #[test]
    fn prompts_get_a_string_for_each_required_argument() {
        let prompt = json!({
            "name": "p",
            "arguments": [
                {"name": "arg1", "required": true},
                {"name": "arg2", "required": true},
                {"name": "optional"},
            ],
        });
        assert_eq!(
            prompt_arguments(&prompt),
            json!({"arg1": "test", "arg2": "test"})
        );
        assert_eq!(prompt_arguments(&json!({"name": "q"})), json!({}));
    }
}
