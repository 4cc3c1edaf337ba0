//! The upstream's listings, read whole, and the downstream declarations made from them.
//!
//! A declaration carries what the upstream listed (names, titles, descriptions, schemas,
//! annotations, icons, MIME types, `_meta`) in the newest revision's shape; the downstream
//! server projects it for each revision as it does its own declarations. Anything the
//! downstream server refuses (a tool name outside the 2025-11-25 guidance, a schema that does
//! not compile, a URI template beyond RFC 6570 level 1) is left out and reported as
//! [`Skipped`], never served half-way.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_adapters::{ANSWERS_ARGUMENT, STATE_ARGUMENT};
use mcp_client::task::TASKS_EXTENSION;
use mcp_server::{
    Completer, Exchange, Extension, ExtensionRequest, Icon, Prompt, Resource, ResourceRequest,
    ResourceTemplate, SKILLS_EXTENSION, Server, TaskSupport, Tool, ToolAnnotations,
};
use serde_json::{Map, Value, json};

use crate::error::GatewayError;
use crate::link::Link;

/// An upstream declaration the gateway does not serve, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skipped {
    /// `"tool"`, `"resource"`, `"resource template"` or `"prompt"`.
    pub kind: &'static str,
    /// Its name, URI or URI template (as much of it as could be read).
    pub name: String,
    /// Why it is not served.
    pub reason: String,
}

/// What the upstream listed, every page of each list its capabilities offer.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    tools: Vec<Value>,
    resources: Vec<Value>,
    templates: Vec<Value>,
    prompts: Vec<Value>,
}

/// The downstream declarations of one listing.
#[derive(Debug, Default)]
pub(crate) struct Declarations {
    pub(crate) tools: Vec<Tool>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) skipped: Vec<Skipped>,
}

/// Which lists the upstream offers, from its capabilities.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Offers {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
    pub(crate) completions: bool,
    pub(crate) subscribe: bool,
}

impl Offers {
    pub(crate) fn of(link: &Link) -> Self {
        let capabilities = link
            .client
            .server()
            .map(|server| server.capabilities)
            .unwrap_or(Value::Null);
        let has = |name: &str| capabilities.get(name).is_some_and(Value::is_object);
        // Before the `completions` capability (2024-11-05), completion/complete came with
        // prompts and resources.
        let implied_completions = !link.client.revision().features().has_completions
            && (has("prompts") || has("resources"));
        Self {
            tools: has("tools"),
            resources: has("resources"),
            prompts: has("prompts"),
            completions: has("completions") || implied_completions,
            subscribe: capabilities
                .pointer("/resources/subscribe")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }
}

/// Lists everything the upstream offers (all pages; the client's list limits bound it).
pub(crate) async fn list(link: &Link, offers: Offers) -> Result<Listing, GatewayError> {
    let client = &link.client;
    let upstream = |doing| move |source| GatewayError::Upstream { doing, source };
    let mut listing = Listing::default();
    if offers.tools {
        listing.tools = client.list_tools().await.map_err(upstream("tools/list"))?;
    }
    if offers.resources {
        listing.resources = client
            .list_resources()
            .await
            .map_err(upstream("resources/list"))?;
        listing.templates = client
            .list_resource_templates()
            .await
            .map_err(upstream("resources/templates/list"))?;
    }
    if offers.prompts {
        listing.prompts = client
            .list_prompts()
            .await
            .map_err(upstream("prompts/list"))?;
    }
    Ok(listing)
}

/// The fixed resources' URIs of a listing, at most `limit` of them.
pub(crate) fn resource_uris(listing: &Listing, limit: usize) -> Vec<String> {
    listing
        .resources
        .iter()
        .filter_map(|r| r.get("uri").and_then(Value::as_str))
        .take(limit)
        .map(str::to_owned)
        .collect()
}

/// Scopes a downstream access token needs per proxied tool, by tool name.
pub(crate) type ToolScopes = BTreeMap<String, Vec<String>>;

/// The declarations of `listing`, each forwarding to `link`.
pub(crate) fn declare(link: &Arc<Link>, listing: Listing, scopes: &ToolScopes) -> Declarations {
    let mut out = Declarations::default();
    let tasks = passes_tasks(link);
    for definition in &listing.tools {
        let scoped = tool(link, definition, tasks).map(|tool| match scopes.get(tool.name()) {
            Some(needed) => tool.scopes(needed),
            None => tool,
        });
        match scoped.and_then(accepted_tool) {
            Ok(tool) => out.tools.push(tool),
            Err(reason) => out
                .skipped
                .push(skipped("tool", definition, "name", reason)),
        }
    }
    for definition in &listing.resources {
        match resource(link, definition).and_then(accepted_resource) {
            Ok(resource) => out.resources.push(resource),
            Err(reason) => out
                .skipped
                .push(skipped("resource", definition, "uri", reason)),
        }
    }
    for definition in &listing.templates {
        match template(link, definition).and_then(accepted_template) {
            Ok(template) => out.templates.push(template),
            Err(reason) => out.skipped.push(skipped(
                "resource template",
                definition,
                "uriTemplate",
                reason,
            )),
        }
    }
    for definition in &listing.prompts {
        match prompt(link, definition).and_then(accepted_prompt) {
            Ok(prompt) => out.prompts.push(prompt),
            Err(reason) => out
                .skipped
                .push(skipped("prompt", definition, "name", reason)),
        }
    }
    // The first of two declarations with one name or URI is served.
    dedupe(&mut out.tools, Tool::name, "tool", &mut out.skipped);
    dedupe(
        &mut out.resources,
        Resource::uri,
        "resource",
        &mut out.skipped,
    );
    dedupe(
        &mut out.templates,
        ResourceTemplate::uri_template,
        "resource template",
        &mut out.skipped,
    );
    dedupe(&mut out.prompts, Prompt::name, "prompt", &mut out.skipped);
    for skip in &out.skipped {
        tracing::warn!(kind = skip.kind, name = %skip.name, reason = %skip.reason, "upstream declaration not served");
    }
    out
}

/// The completion handler forwarding to `link`.
pub(crate) fn completer(link: &Arc<Link>) -> Completer {
    let link = link.clone();
    Completer::new(move |request| link.clone().complete(request))
}

fn skipped(kind: &'static str, definition: &Value, key: &str, reason: String) -> Skipped {
    Skipped {
        kind,
        name: definition
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("(unnamed)")
            .to_owned(),
        reason,
    }
}

fn dedupe<T>(
    items: &mut Vec<T>,
    key: impl Fn(&T) -> &str,
    kind: &'static str,
    skipped: &mut Vec<Skipped>,
) {
    let mut seen = std::collections::HashSet::new();
    items.retain(|item| {
        let name = key(item).to_owned();
        if seen.insert(name.clone()) {
            true
        } else {
            skipped.push(Skipped {
                kind,
                name,
                reason: "listed twice upstream; the first is served".into(),
            });
            false
        }
    });
}

fn text<'a>(definition: &'a Value, key: &str) -> Option<&'a str> {
    definition.get(key).and_then(Value::as_str)
}

fn required_text<'a>(definition: &'a Value, key: &str) -> Result<&'a str, String> {
    text(definition, key).ok_or_else(|| format!("no `{key}` string"))
}

fn icons(definition: &Value) -> Vec<Icon> {
    let Some(list) = definition.get("icons").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|icon| {
            let mut out = Icon::new(text(icon, "src")?);
            if let Some(mime) = text(icon, "mimeType") {
                out = out.mime_type(mime);
            }
            if let Some(sizes) = icon.get("sizes").and_then(Value::as_array) {
                for size in sizes.iter().filter_map(Value::as_str) {
                    out = out.size(size);
                }
            }
            if let Some(theme) = text(icon, "theme") {
                out = out.theme(theme);
            }
            Some(out)
        })
        .collect()
}

fn meta(definition: &Value) -> Option<Map<String, Value>> {
    definition.get("_meta").and_then(Value::as_object).cloned()
}

/// A tool forwarding `tools/call` upstream.
/// The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) as the upstream declares
/// it, when it does: the same settings, and its methods (`skills/list`, `skills/get`, and
/// `resources/directory/read` when the settings offer it) forwarded upstream as they are.
/// The skills' files are the upstream's resources, which the gateway serves as any other.
pub(crate) fn skills(link: &Arc<Link>) -> Option<Extension> {
    let settings = link
        .client
        .server()?
        .capabilities
        .get("extensions")?
        .get(SKILLS_EXTENSION)?
        .clone();
    let mut methods = vec!["skills/list", "skills/get"];
    if settings.get("directoryRead").and_then(Value::as_bool) == Some(true) {
        methods.push("resources/directory/read");
    }
    let mut extension = Extension::new(SKILLS_EXTENSION).settings(settings);
    for method in methods {
        let link = link.clone();
        extension = extension.method(method, move |request: ExtensionRequest| {
            link.clone()
                .forward_method(request.method().to_owned(), request.params().clone())
        });
    }
    Some(extension)
}

/// Whether the upstream may answer the gateway's tool calls with tasks: it declares the Tasks
/// extension, and so does the gateway's client. Every proxied tool then supports tasks
/// downstream, started only when the upstream answers with one (the spec's tool listing does
/// not say which tools do).
fn passes_tasks(link: &Link) -> bool {
    let pointer = format!("/extensions/{}", TASKS_EXTENSION.replace('/', "~1"));
    link.client.task_polling().is_some()
        && link
            .client
            .server()
            .is_some_and(|server| server.capabilities.pointer(&pointer).is_some())
}

/// A proxied tool; with `tasks`, one that runs as a task downstream whenever the upstream
/// answers it with one.
fn tool(link: &Arc<Link>, definition: &Value, tasks: bool) -> Result<Tool, String> {
    let name = required_text(definition, "name")?;
    let input_schema = definition
        .get("inputSchema")
        .filter(|schema| schema.is_object())
        .cloned()
        .ok_or("no `inputSchema` object")?;
    let output_schema = definition
        .get("outputSchema")
        .filter(|schema| schema.is_object())
        .cloned();
    let mut input_schema = input_schema;
    // Whether the upstream tool takes answers in its arguments (it may ask, on an
    // argument-convention revision): answers a downstream client gives up front go there.
    let takes_answers = link.client.revision().features().asks_in_arguments()
        && input_schema
            .pointer(&format!("/properties/{ANSWERS_ARGUMENT}"))
            .is_some();
    if link.client.revision().features().asks_in_arguments() {
        drop_argument_convention(&mut input_schema);
    }
    let upstream_name: Arc<str> = name.into();
    let link = link.clone();
    let handler = move |arguments: Value, ex: Exchange| {
        link.clone()
            .call_tool(upstream_name.clone(), takes_answers, arguments, ex)
    };
    let mut tool = Tool::new(name, handler)
        .with_input_schema(input_schema)
        .with_output_schema(output_schema);
    if tasks {
        tool = tool.task_support(TaskSupport::Optional).deferred_task();
    }
    if let Some(title) = text(definition, "title") {
        tool = tool.title(title);
    }
    if let Some(description) = text(definition, "description") {
        tool = tool.description(description);
    }
    if let Some(annotations) = definition.get("annotations") {
        tool = tool.annotations(annotations_of(annotations));
    }
    for icon in icons(definition) {
        tool = tool.icon(icon);
    }
    if let Some(meta) = meta(definition) {
        tool = tool.meta(meta);
    }
    Ok(tool)
}

/// Takes the upstream revision's `mcpAnswers` / `mcpState` properties out of a tool's input
/// schema: they are that hop's way of asking (our client answers them), and the downstream
/// server adds its own on the revisions that have them.
fn drop_argument_convention(schema: &mut Value) {
    let plumbing = [ANSWERS_ARGUMENT, STATE_ARGUMENT];
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for key in plumbing {
            properties.remove(key);
        }
    }
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|name| !name.as_str().is_some_and(|n| plumbing.contains(&n)));
    }
}

fn annotations_of(value: &Value) -> ToolAnnotations {
    let hint = |key: &str| value.get(key).and_then(Value::as_bool);
    let mut out = ToolAnnotations::default();
    out.title = text(value, "title").map(str::to_owned);
    out.read_only_hint = hint("readOnlyHint");
    out.destructive_hint = hint("destructiveHint");
    out.idempotent_hint = hint("idempotentHint");
    out.open_world_hint = hint("openWorldHint");
    out
}

/// A resource forwarding `resources/read` upstream.
fn resource(link: &Arc<Link>, definition: &Value) -> Result<Resource, String> {
    let uri = required_text(definition, "uri")?;
    let name = text(definition, "name").unwrap_or(uri);
    let link = link.clone();
    let handler =
        move |request: ResourceRequest, ex: Exchange| link.clone().read_resource(request.uri, ex);
    let mut resource = Resource::new(uri, name, handler);
    if let Some(title) = text(definition, "title") {
        resource = resource.title(title);
    }
    if let Some(description) = text(definition, "description") {
        resource = resource.description(description);
    }
    if let Some(mime) = text(definition, "mimeType") {
        resource = resource.mime_type(mime);
    }
    if let Some(size) = definition.get("size").and_then(Value::as_u64) {
        resource = resource.size(size);
    }
    for icon in icons(definition) {
        resource = resource.icon(icon);
    }
    Ok(resource)
}

/// A resource template forwarding `resources/read` of its URIs upstream.
fn template(link: &Arc<Link>, definition: &Value) -> Result<ResourceTemplate, String> {
    let uri_template = required_text(definition, "uriTemplate")?;
    let name = text(definition, "name").unwrap_or(uri_template);
    let link = link.clone();
    let handler =
        move |request: ResourceRequest, ex: Exchange| link.clone().read_resource(request.uri, ex);
    let mut template = ResourceTemplate::new(uri_template, name, handler);
    if let Some(title) = text(definition, "title") {
        template = template.title(title);
    }
    if let Some(description) = text(definition, "description") {
        template = template.description(description);
    }
    if let Some(mime) = text(definition, "mimeType") {
        template = template.mime_type(mime);
    }
    for icon in icons(definition) {
        template = template.icon(icon);
    }
    Ok(template)
}

/// A prompt forwarding `prompts/get` upstream. Its argument list becomes an object schema of
/// string properties (prompt arguments are strings on the wire).
fn prompt(link: &Arc<Link>, definition: &Value) -> Result<Prompt, String> {
    let name = required_text(definition, "name")?;
    let mut properties = Map::new();
    let mut required = Vec::new();
    for argument in definition
        .get("arguments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let arg_name = required_text(argument, "name")?;
        let mut property = Map::new();
        property.insert("type".into(), json!("string"));
        for key in ["title", "description"] {
            if let Some(value) = text(argument, key) {
                property.insert(key.into(), json!(value));
            }
        }
        if argument.get("required").and_then(Value::as_bool) == Some(true) {
            required.push(json!(arg_name));
        }
        properties.insert(arg_name.to_owned(), Value::Object(property));
    }
    let schema = json!({"type": "object", "properties": properties, "required": required});
    let upstream_name: Arc<str> = name.into();
    let link = link.clone();
    let handler = move |arguments: Value, ex: Exchange| {
        link.clone()
            .get_prompt(upstream_name.clone(), arguments, ex)
    };
    let mut prompt = Prompt::new(name, handler).with_argument_schema(schema);
    if let Some(title) = text(definition, "title") {
        prompt = prompt.title(title);
    }
    if let Some(description) = text(definition, "description") {
        prompt = prompt.description(description);
    }
    for icon in icons(definition) {
        prompt = prompt.icon(icon);
    }
    Ok(prompt)
}

/// Checks one declaration as the server's build does, alone, so one refusal skips only it.
fn accepted(builder: mcp_server::ServerBuilder) -> Result<(), String> {
    builder
        .build()
        .map(|_: Server| ())
        .map_err(|e| e.to_string())
}

fn checker() -> mcp_server::ServerBuilder {
    Server::builder("gateway-check", "0")
}

fn accepted_tool(tool: Tool) -> Result<Tool, String> {
    accepted(checker().tool(tool.clone())).map(|()| tool)
}

fn accepted_resource(resource: Resource) -> Result<Resource, String> {
    accepted(checker().resource(resource.clone())).map(|()| resource)
}

fn accepted_template(template: ResourceTemplate) -> Result<ResourceTemplate, String> {
    accepted(checker().resource_template(template.clone())).map(|()| template)
}

fn accepted_prompt(prompt: Prompt) -> Result<Prompt, String> {
    accepted(checker().prompt(prompt.clone())).map(|()| prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_convention_is_not_carried_over() {
        let mut schema = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "mcpAnswers": {}, "mcpState": {}},
            "required": ["a", "mcpState"],
        });
        drop_argument_convention(&mut schema);
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
        );
    }
}
