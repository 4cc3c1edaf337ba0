//! The fixture server of the suite's server scenarios, declared once with `mcp-server`.
//!
//! Every name and every answer below is what a scenario's description asks for: tools
//! `test_simple_text` ... `test_input_required_result_*`, resources under `test://`, prompts
//! `test_*_prompt*`, and completion. The same declarations serve every revision; whatever
//! differs (pushed questions on 2025-06-18 and 2025-11-25, `input_required` results on
//! 2026-07-28) is decided by `mcp-server` from the revision's adapter.

use std::time::Duration;

use mcp_adapters::InputRequest;
use mcp_server::{
    Answer, AnswerAction, Change, Completer, CompletionRequest, ContentBlock, Exchange,
    GetPromptResult, Interrupt, LogLevel, NoArgs, Notifier, Prompt, PromptError, PromptMessage,
    Question, RegistrationError, Resource, ResourceContents, ResourceError, ResourceRequest,
    ResourceTemplate, Revision, Role, Server, Skill, Skills, TaskSupport, Tool, ToolError,
    ToolSchemas,
};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The server's name in `serverInfo`.
pub const SERVER_NAME: &str = "mcp-conformance-target";

/// A 1x1 red PNG.
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0xc9, 0xfe, 0x92, 0xef, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file of one silent 16-bit sample at 8 kHz.
pub const WAV: &[u8] = &[
    0x52, 0x49, 0x46, 0x46, 0x26, 0x00, 0x00, 0x00, 0x57, 0x41, 0x56, 0x45, 0x66, 0x6d, 0x74, 0x20,
    0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x40, 0x1f, 0x00, 0x00, 0x80, 0x3e, 0x00, 0x00,
    0x02, 0x00, 0x10, 0x00, 0x64, 0x61, 0x74, 0x61, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
];

/// The pause between the notifications of the logging and progress tools: the scenarios want
/// them spread over the call, not sent at once.
const STEP: Duration = Duration::from_millis(50);

/// The fixture server.
pub fn server() -> Result<Server, RegistrationError> {
    let mut builder = Server::builder(SERVER_NAME, env!("CARGO_PKG_VERSION"))
        .title("MCP conformance target")
        .instructions("The fixture server of the MCP conformance suite's server scenarios.")
        // The suite checks that 2025-11-25 clients see `json_schema_2020_12_tool`'s 2020-12
        // keywords as declared (SEP-1613); projected, that tool is not offered there.
        .tool_schemas(ToolSchemas::Native);
    for tool in tools() {
        builder = builder.tool(tool);
    }
    builder
        .resource(
            Resource::new("test://static-text", "static-text", static_text)
                .description("A static text resource.")
                .mime_type("text/plain"),
        )
        .resource(
            Resource::new("test://static-binary", "static-binary", static_binary)
                .description("A static binary resource (a PNG image).")
                .mime_type("image/png"),
        )
        .resource(
            Resource::new("test://watched-resource", "watched-resource", watched)
                .description("A resource clients subscribe to.")
                .mime_type("text/plain"),
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "template-data", template_data)
                .description("Data for one id.")
                .mime_type("application/json"),
        )
        .prompt(
            Prompt::new("test_simple_prompt", simple_prompt)
                .description("A prompt without arguments."),
        )
        .prompt(
            Prompt::new("test_prompt_with_arguments", prompt_with_arguments)
                .description("A prompt with two required arguments."),
        )
        .prompt(
            Prompt::new(
                "test_prompt_with_embedded_resource",
                prompt_with_embedded_resource,
            )
            .description("A prompt that embeds a resource."),
        )
        .prompt(
            Prompt::new("test_prompt_with_image", prompt_with_image)
                .description("A prompt with an image."),
        )
        .prompt(
            Prompt::new("test_input_required_result_prompt", prompt_needing_input)
                .description("A prompt that asks the user for context first."),
        )
        .completion(Completer::new(complete))
        .skills(skills()?)
        .build()
}

/// The skill of the `sep-2640-*` scenarios (they discover it through `skills/list` and
/// `resources/list`): a manifest with frontmatter and one supporting file.
pub const SKILL_MANIFEST: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\n# PDF processing\n\nFor form fields, read references/FORMS.md.\n";

/// The supporting file of [`SKILL_MANIFEST`]'s skill.
pub const SKILL_FORMS: &str = "# Forms\n\nForm fields live in the AcroForm dictionary.\n";

fn skills() -> Result<Skills, RegistrationError> {
    Skills::builder()
        .directory_read(true)
        .skill(
            Skill::new("pdf-processing")
                .file("SKILL.md", SKILL_MANIFEST)
                .file("references/FORMS.md", SKILL_FORMS),
        )
        .build()
        .map_err(|err| RegistrationError::InvalidSetting {
            setting: "skills",
            reason: err.to_string(),
        })
}

fn tools() -> Vec<Tool> {
    let modern = Revision::V2026_07_28;
    vec![
        Tool::new("test_simple_text", simple_text).description("Returns simple text."),
        Tool::new("test_trace_context", trace_context).description(
            "Returns the W3C trace id its request carried (`_meta.traceparent`), or `none`.",
        ),
        Tool::new("test_image_content", image_content).description("Returns an image."),
        Tool::new("test_audio_content", audio_content).description("Returns audio."),
        Tool::new("test_embedded_resource", embedded_resource)
            .description("Returns an embedded resource."),
        Tool::new("test_multiple_content_types", multiple_content_types)
            .description("Returns text, an image and an embedded resource."),
        Tool::new("test_tool_with_logging", tool_with_logging)
            .description("Sends three log messages while it runs."),
        Tool::new("test_logging_tool", logging_tool)
            .description("Sends one log message, when the client asked for logs."),
        Tool::new("test_tool_with_progress", tool_with_progress)
            .description("Reports progress 0, 50 and 100 of 100."),
        Tool::new("test_error_handling", error_handling).description("Always fails."),
        Tool::new("test_sampling", sampling).description("Asks the client's LLM a question."),
        Tool::new("test_elicitation", elicitation).description("Asks the user for input."),
        Tool::new("test_elicitation_sep1034_defaults", elicitation_defaults)
            .description("Asks with a form whose fields have defaults (SEP-1034)."),
        Tool::new("test_elicitation_sep1330_enums", elicitation_enums)
            .description("Asks with every enum form of SEP-1330."),
        Tool::new("json_schema_2020_12_tool", json_schema_tool)
            .description("A tool whose input schema uses JSON Schema 2020-12 keywords."),
        Tool::new("test_missing_capability", missing_capability)
            .description("Needs the client's sampling capability."),
        Tool::new("test_streaming_elicitation", streaming_elicitation)
            .description("Asks the user to confirm."),
        Tool::new("test_trigger_tool_change", |notifier: Notifier| {
            trigger(notifier, Change::ToolsListChanged)
        })
        .description("Announces notifications/tools/list_changed to every listener."),
        Tool::new("test_trigger_prompt_change", |notifier: Notifier| {
            trigger(notifier, Change::PromptsListChanged)
        })
        .description("Announces notifications/prompts/list_changed to every listener."),
        Tool::new("test_headers", headers)
            .description("Answers plainly; clients send the standard Mcp-* headers with it."),
        Tool::new("test_custom_headers", custom_headers)
            .description("Takes a region that 2026-07-28 clients mirror in Mcp-Param-Region.")
            .header("region", "Region"),
        Tool::new("test_reconnection", reconnection)
            .description("Answers after a short pause (SSE polling scenarios)."),
        Tool::new("test_input_required_result_elicitation", ask_name)
            .description("Asks for the user's name (SEP-2322).")
            .min_revision(modern),
        Tool::new("test_input_required_result_sampling", ask_capital)
            .description("Asks the client's LLM a question (SEP-2322).")
            .min_revision(modern),
        Tool::new("test_input_required_result_list_roots", ask_roots)
            .description("Asks for the client's roots (SEP-2322).")
            .min_revision(modern),
        Tool::new("test_input_required_result_request_state", ask_with_state)
            .description("Asks for confirmation, keeping request state (SEP-2322).")
            .min_revision(modern),
        Tool::new("test_input_required_result_multiple_inputs", ask_three)
            .description("Asks three questions at once (SEP-2322).")
            .min_revision(modern),
        Tool::new("test_input_required_result_multi_round", ask_two_rounds)
            .description("Asks two questions in two rounds (SEP-2322).")
            .min_revision(modern),
        Tool::new("test_input_required_result_tampered_state", ask_with_state)
            .description("Asks with integrity-protected request state (SEP-2322).")
            .min_revision(modern),
        Tool::new(
            "test_input_required_result_capabilities",
            ask_what_client_can,
        )
        .description("Asks only what the client declared it can answer (SEP-2322).")
        .min_revision(modern),
        // The Tasks extension's fixtures (io.modelcontextprotocol/tasks, SEP-2663).
        Tool::new("greet", greet).description("Greets by name (never a task)."),
        Tool::new("slow_compute", slow_compute)
            .description("Sleeps `seconds` (at most 600), then reports; a task when it can be.")
            .task_support(TaskSupport::Optional),
        Tool::new("failing_job", failing_job)
            .description("Always ends with a tool error; runs only as a task.")
            .task_support(TaskSupport::Required),
        Tool::new("protocol_error_job", protocol_error_job)
            .description("Always fails with a protocol error; a task when it can be.")
            .task_support(TaskSupport::Optional),
        Tool::new("confirm_delete", confirm_delete)
            .description("Asks for confirmation before it pretends to delete a file.")
            .task_support(TaskSupport::Optional),
        Tool::new("multi_input", multi_input)
            .description("Asks two questions at once.")
            .task_support(TaskSupport::Optional),
        Tool::new("test_tool_with_task", tool_with_task)
            .description("Asks for a name on the call itself, then runs as a task.")
            .task_support(TaskSupport::Required)
            .deferred_task(),
    ]
}

/// `greet`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

async fn greet(args: GreetArgs) -> String {
    format!("Hello, {}!", args.name)
}

/// `slow_compute`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    /// How long to work, in seconds (at most 600).
    seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

async fn slow_compute(args: SlowArgs, ex: Exchange) -> Result<String, ToolError> {
    let seconds = if args.seconds.is_finite() {
        args.seconds.clamp(0.0, 600.0)
    } else {
        0.0
    };
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs_f64(seconds)) => {}
        () = ex.cancelled() => return Err(Interrupt::Cancelled.into()),
    }
    let label = args.label.as_deref().unwrap_or("unlabelled");
    Ok(format!("computed {label} after {seconds}s"))
}

async fn failing_job(_: NoArgs) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(500)).await;
    Err(ToolError::Failed(
        "the job failed, as it always does".into(),
    ))
}

async fn protocol_error_job(_: NoArgs) -> String {
    tokio::time::sleep(Duration::from_millis(100)).await;
    panic!("protocol_error_job fails with a protocol error by design")
}

/// `confirm_delete`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// The file to (pretend to) delete.
    filename: String,
}

async fn confirm_delete(args: DeleteArgs, ex: Exchange) -> Result<String, ToolError> {
    let question = Question::elicit_with(
        format!("Delete {}?", args.filename),
        json!({
            "type": "object",
            "properties": {"confirm": {"type": "boolean"}},
            "required": ["confirm"],
        }),
    );
    let answer = ex.ask("confirm_delete", question).await?;
    let confirmed = answer.accepted() && answer.get("confirm") == Some(&Value::Bool(true));
    Ok(if confirmed {
        format!("Deleted {}", args.filename)
    } else {
        format!("Kept {}", args.filename)
    })
}

async fn multi_input(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let (name, confirm) = tokio::join!(
        ex.ask("name", name_question("What is your name?", "name")),
        ex.ask(
            "confirm",
            Question::elicit_with(
                "Proceed?",
                json!({
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean"}},
                    "required": ["confirm"],
                }),
            ),
        ),
    );
    let (name, confirm) = (name?, confirm?);
    Ok(format!(
        "name: {}, confirmed: {}",
        field(&name, "name"),
        confirm.accepted()
    ))
}

async fn tool_with_task(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    // Asked on the call itself (an InputRequiredResult); the task starts once it is answered.
    let answer = ex
        .ask("user_name", name_question("What is your name?", "name"))
        .await?;
    ex.start_task().await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(format!("Hello, {}! (from a task)", field(&answer, "name")))
}

/// Ours, not a suite fixture: the interop matrix checks that a peer client's
/// `_meta.traceparent` reaches the handler (issue 49).
async fn trace_context(_: NoArgs, ex: Exchange) -> String {
    ex.trace_context()
        .map_or_else(|| "none".to_owned(), |c| c.traceparent.trace_id_hex())
}

async fn simple_text(_: NoArgs) -> &'static str {
    "This is a simple text response for testing."
}

async fn image_content(_: NoArgs) -> ContentBlock {
    ContentBlock::image(PNG, "image/png")
}

async fn audio_content(_: NoArgs) -> ContentBlock {
    ContentBlock::audio(WAV, "audio/wav")
}

async fn embedded_resource(_: NoArgs) -> ContentBlock {
    ContentBlock::embedded(
        ResourceContents::text(
            "test://embedded-resource",
            "This is an embedded resource content.",
        )
        .with_mime_type("text/plain"),
    )
}

async fn multiple_content_types(_: NoArgs) -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("Multiple content types test:"),
        ContentBlock::image(PNG, "image/png"),
        ContentBlock::embedded(
            ResourceContents::text(
                "test://mixed-content-resource",
                json!({"test": "data", "value": 123}).to_string(),
            )
            .with_mime_type("application/json"),
        ),
    ]
}

async fn tool_with_logging(_: NoArgs, ex: Exchange) -> &'static str {
    ex.log(LogLevel::Info, "Tool execution started");
    tokio::time::sleep(STEP).await;
    ex.log(LogLevel::Info, "Tool processing data");
    tokio::time::sleep(STEP).await;
    ex.log(LogLevel::Info, "Tool execution completed");
    "Tool with logging executed successfully"
}

async fn logging_tool(_: NoArgs, ex: Exchange) -> &'static str {
    ex.log(LogLevel::Info, "test_logging_tool ran");
    "Logged once, if the client asked for logs."
}

async fn tool_with_progress(_: NoArgs, ex: Exchange) -> &'static str {
    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(STEP).await;
        }
        ex.progress(
            step,
            Some(100.0),
            Some(&format!("Completed step {step} of 100")),
        );
    }
    "Progress reported"
}

async fn error_handling(_: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::new(
        "This tool intentionally returns an error for testing",
    ))
}

#[derive(Deserialize, JsonSchema)]
struct PromptArgs {
    /// The prompt to send to the LLM.
    prompt: String,
}

fn sampling_request(text: &str, max_tokens: u32) -> Question {
    let mut params = Map::new();
    params.insert(
        "messages".into(),
        json!([{"role": "user", "content": {"type": "text", "text": text}}]),
    );
    params.insert("maxTokens".into(), json!(max_tokens));
    Question::request(InputRequest::create_message(params))
}

/// The text of a `CreateMessageResult` (one content block or several).
fn sampled_text(result: &Value) -> String {
    let content = result.get("content");
    let block = match content {
        Some(Value::Array(blocks)) => blocks.first(),
        other => other,
    };
    block
        .and_then(|b| b.get("text"))
        .and_then(Value::as_str)
        .unwrap_or("No response")
        .to_owned()
}

async fn sampling(args: PromptArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask("sampling", sampling_request(&args.prompt, 100))
        .await?;
    Ok(format!("LLM response: {}", sampled_text(answer.content())))
}

#[derive(Deserialize, JsonSchema)]
struct MessageArgs {
    /// The message to show the user.
    message: String,
}

fn action_name(answer: &Answer) -> &'static str {
    match answer.action() {
        AnswerAction::Accept => "accept",
        AnswerAction::Decline => "decline",
        AnswerAction::Cancel => "cancel",
    }
}

async fn elicitation(args: MessageArgs, ex: Exchange) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    });
    let answer = ex
        .ask("response", Question::elicit_with(args.message, schema))
        .await?;
    Ok(format!(
        "User response: action={}, content={}",
        action_name(&answer),
        answer.content()
    ))
}

async fn elicitation_defaults(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true},
        },
        "required": [],
    });
    let answer = ex
        .ask(
            "form",
            Question::elicit_with(
                "Please review and update the form fields with defaults",
                schema,
            ),
        )
        .await?;
    Ok(completed(&answer))
}

fn completed(answer: &Answer) -> String {
    format!(
        "Elicitation completed: action={}, content={}",
        action_name(answer),
        answer.content()
    )
}

async fn elicitation_enums(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"],
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ],
                },
            },
        },
        "required": [],
    });
    let answer = ex
        .ask(
            "enums",
            Question::elicit_with("Please select options from the enum fields", schema),
        )
        .await?;
    Ok(completed(&answer))
}

/// Arguments described by a hand-written JSON Schema 2020-12 document (`$defs` with an
/// `$anchor`, `allOf`/`anyOf`, `if`/`then`/`else`), which no derive produces.
#[derive(Deserialize)]
struct ContactArgs {}

impl JsonSchema for ContactArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ContactArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {
                        "street": {"type": "string"},
                        "city": {"type": "string"},
                    },
                },
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {
                "properties": {"contactMethod": {"const": "phone"}},
                "required": ["contactMethod"],
            },
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false,
        })
    }
}

async fn json_schema_tool(_: ContactArgs) -> &'static str {
    "Contact details received."
}

async fn missing_capability(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask("sampling", sampling_request("Say something.", 20))
        .await?;
    Ok(format!("LLM response: {}", sampled_text(answer.content())))
}

async fn streaming_elicitation(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex.ask("confirm", Question::elicit("Continue?")).await?;
    Ok(format!("Confirmation: {}", action_name(&answer)))
}

/// Publishes `change` through the server's notifier (every listener of every worker that
/// shares the event log is told).
async fn trigger(notifier: Notifier, change: Change) -> Result<String, ToolError> {
    notifier
        .publish(&change)
        .await
        .map_err(|err| ToolError::new(format!("could not announce the change: {err}")))?;
    Ok(format!("announced {}", change.method()))
}

async fn headers(_: NoArgs) -> &'static str {
    "Headers test completed"
}

#[derive(Deserialize, JsonSchema)]
struct RegionArgs {
    /// The region to use, mirrored in the `Mcp-Param-Region` header.
    region: String,
}

async fn custom_headers(args: RegionArgs) -> String {
    format!("Region: {}", args.region)
}

async fn reconnection(_: NoArgs) -> &'static str {
    tokio::time::sleep(STEP * 2).await;
    "Reconnection test completed successfully."
}

fn name_question(message: &str, field: &str) -> Question {
    Question::elicit_with(
        message,
        json!({
            "type": "object",
            "properties": {field: {"type": "string"}},
            "required": [field],
        }),
    )
}

fn field(answer: &Answer, name: &str) -> String {
    answer
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_owned()
}

async fn ask_name(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    // A name is something the client could supply on its own: a client that sends it with
    // the first call (input-required-result-ignore-extra-params) is not asked again.
    let question = name_question("What is your name?", "name").answerable_up_front();
    let answer = ex.ask("user_name", question).await?;
    Ok(format!("Hello, {}!", field(&answer, "name")))
}

async fn ask_capital(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask(
            "capital_question",
            sampling_request("What is the capital of France?", 100),
        )
        .await?;
    Ok(format!("The LLM said: {}", sampled_text(answer.content())))
}

fn root_uris(answer: &Answer) -> String {
    let uris: Vec<&str> = answer
        .get("roots")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uri").and_then(Value::as_str))
        .collect();
    uris.join(", ")
}

async fn ask_roots(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask(
            "client_roots",
            Question::request(InputRequest::list_roots()),
        )
        .await?;
    Ok(format!("Client roots: {}", root_uris(&answer)))
}

async fn ask_with_state(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let had_state = ex.state().is_some();
    ex.save_state(json!({"step": "confirm"}));
    let answer = ex
        .ask(
            "confirm",
            Question::elicit_with(
                "Please confirm",
                json!({
                    "type": "object",
                    "properties": {"ok": {"type": "boolean"}},
                    "required": ["ok"],
                }),
            ),
        )
        .await?;
    let state = if had_state || ex.state().is_some() {
        "state-ok"
    } else {
        "state-missing"
    };
    Ok(format!("Confirmed ({}): {state}", action_name(&answer)))
}

async fn ask_three(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    ex.save_state(json!({"asked": ["user_name", "greeting", "client_roots"]}));
    // Ask every question before waiting for any, so they travel in one round.
    let name = ex
        .ask("user_name", name_question("What is your name?", "name"))
        .await;
    let greeting = ex
        .ask("greeting", sampling_request("Generate a greeting", 50))
        .await;
    let roots = ex
        .ask(
            "client_roots",
            Question::request(InputRequest::list_roots()),
        )
        .await;
    let (name, greeting, roots) = (name?, greeting?, roots?);
    Ok(format!(
        "{} — {} (roots: {})",
        sampled_text(greeting.content()),
        field(&name, "name"),
        root_uris(&roots)
    ))
}

async fn ask_two_rounds(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    // The client answers only the latest round's question: the first answer travels in the
    // state this handler saves, not in the retry's inputResponses.
    let remembered = ex
        .state()
        .and_then(|s| s.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let name = match remembered {
        Some(name) => name,
        None => {
            let answer = ex
                .ask("step1", name_question("Step 1: What is your name?", "name"))
                .await?;
            field(&answer, "name")
        }
    };
    ex.save_state(json!({"name": name}));
    let color = ex
        .ask(
            "step2",
            name_question("Step 2: What is your favorite color?", "color"),
        )
        .await?;
    Ok(format!("{name} likes {}.", field(&color, "color")))
}

async fn ask_what_client_can(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let declared = |name: &str| {
        ex.client_capabilities()
            .is_some_and(|caps| caps.contains_key(name))
    };
    let mut answers = Vec::new();
    if declared("elicitation") {
        let answer = ex
            .ask("user_name", name_question("What is your name?", "name"))
            .await;
        answers.push(answer.map(|a| field(&a, "name")));
    }
    if declared("sampling") {
        let answer = ex
            .ask("greeting", sampling_request("Generate a greeting", 50))
            .await;
        answers.push(answer.map(|a| sampled_text(a.content())));
    }
    if declared("roots") {
        let answer = ex
            .ask(
                "client_roots",
                Question::request(InputRequest::list_roots()),
            )
            .await;
        answers.push(answer.map(|a| root_uris(&a)));
    }
    let answers: Result<Vec<String>, Interrupt> = answers.into_iter().collect();
    let answers = answers?;
    Ok(if answers.is_empty() {
        "The client declared nothing to ask.".to_owned()
    } else {
        format!("Answers: {}", answers.join("; "))
    })
}

async fn static_text(_: ResourceRequest) -> &'static str {
    "This is the content of the static text resource."
}

async fn static_binary(_: ResourceRequest) -> Vec<u8> {
    PNG.to_vec()
}

async fn watched(_: ResourceRequest) -> &'static str {
    "Watched resource content"
}

async fn template_data(request: ResourceRequest) -> Result<String, ResourceError> {
    let id = request
        .var("id")
        .ok_or_else(|| ResourceError::NotFound(request.uri.clone()))?;
    Ok(json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string())
}

async fn simple_prompt(_: NoArgs) -> PromptMessage {
    PromptMessage::user("This is a simple prompt for testing.")
}

#[derive(Deserialize, JsonSchema)]
struct TwoArgs {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

async fn prompt_with_arguments(args: TwoArgs) -> PromptMessage {
    PromptMessage::user(format!(
        "Prompt with arguments: arg1='{}', arg2='{}'",
        args.arg1, args.arg2
    ))
}

#[derive(Deserialize, JsonSchema)]
struct ResourceArgs {
    /// URI of the resource to embed.
    #[serde(rename = "resourceUri")]
    #[schemars(rename = "resourceUri")]
    resource_uri: String,
}

async fn prompt_with_embedded_resource(args: ResourceArgs) -> Vec<PromptMessage> {
    vec![
        PromptMessage::new(
            Role::User,
            ContentBlock::embedded(
                ResourceContents::text(args.resource_uri, "Embedded resource content for testing.")
                    .with_mime_type("text/plain"),
            ),
        ),
        PromptMessage::user("Please process the embedded resource above."),
    ]
}

async fn prompt_with_image(_: NoArgs) -> Vec<PromptMessage> {
    vec![
        PromptMessage::new(Role::User, ContentBlock::image(PNG, "image/png")),
        PromptMessage::user("Please analyze the image above."),
    ]
}

async fn prompt_needing_input(_: NoArgs, ex: Exchange) -> Result<GetPromptResult, PromptError> {
    let answer = ex
        .ask(
            "user_context",
            name_question("What context should the prompt use?", "context"),
        )
        .await?;
    Ok(GetPromptResult::new(vec![PromptMessage::user(format!(
        "Use this context: {}",
        field(&answer, "context")
    ))])
    .with_description("A prompt built from the user's context."))
}

async fn complete(request: CompletionRequest) -> Vec<String> {
    ["hello", "help", "world", "test"]
        .iter()
        .filter(|v| v.starts_with(&request.value))
        .map(|v| (*v).to_owned())
        .collect()
}
