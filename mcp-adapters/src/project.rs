//! What each revision is shown of a definition or a result.
//!
//! Definitions (tools, resources, templates, prompts, the server's identity and capabilities)
//! are declared once, in the superset shape of the newest revision, and projected onto each
//! revision. Projection is pure; tool projection (which goes through `mcp-schema`) is the
//! expensive one and is meant to run once per tool and revision: keep the [`ToolView`]s, for
//! example in a [`PerRevision`] cache built at registration time.
//!
//! | Step | 2026-07-28 | 2025-11-25 | 2025-06-18 | 2025-03-26 | 2024-11-05 |
//! | --- | --- | --- | --- | --- | --- |
//! | `inputSchema` | as declared (2020-12) | simplified; tool hidden when lossy | same | same | same |
//! | `x-mcp-header` | kept, bindings extracted | stripped | stripped | stripped | stripped |
//! | `mcpAnswers`/`mcpState` | – | – | – | added to tools that can ask | same |
//! | `outputSchema` | as declared | object-rooted, simplified | same | dropped | dropped |
//! | `title` | yes | yes | yes | moved to `annotations.title` (tools) | dropped |
//! | `icons` | yes | yes | dropped | dropped | dropped |
//! | `annotations` | yes | yes | yes | yes | dropped |
//! | `structuredContent` | any JSON | objects only | objects only | text only | text only |
//! | `audio` content | yes | yes | yes | yes | text |
//! | `resource_link` content | yes | yes | yes | text | text |

use std::sync::OnceLock;

use mcp_schema::{
    HeaderBinding, OutputProjection, Projection, SchemaProfile, extract_headers, project_input,
    project_output, with_asking_properties,
};
use serde_json::{Map, Value, json};

use crate::adapter::Adapter;
use crate::features::StructuredOutput;
use crate::revision::Revision;

/// A tool as declared: the full definition in the newest revision's shape, plus whether its
/// handler can ask the client something.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDefinition {
    /// `{name, title?, description?, inputSchema, outputSchema?, annotations?, icons?, _meta?,
    /// execution?}` with a full JSON Schema 2020-12 `inputSchema` (`x-mcp-header` allowed).
    pub tool: Map<String, Value>,
    /// The handler can ask (it takes the exchange): on revisions that ask in arguments, the
    /// tool gets the `mcpAnswers`/`mcpState` properties.
    pub can_ask: bool,
}

impl ToolDefinition {
    /// A definition from a JSON object (anything else gives an empty definition, which no
    /// revision offers).
    pub fn new(tool: Value, can_ask: bool) -> Self {
        let tool = match tool {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Self { tool, can_ask }
    }

    /// The tool's name (`""` if missing).
    pub fn name(&self) -> &str {
        self.tool.get("name").and_then(Value::as_str).unwrap_or("")
    }
}

/// What one revision is shown of one tool.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolView {
    /// The `Tool` object to list, or `None` when the tool is not offered on this revision.
    pub definition: Option<Value>,
    /// Why the tool is hidden, when it is.
    pub hidden_because: Option<String>,
    /// The `x-mcp-header` bindings (2026-07-28 only; empty elsewhere).
    pub header_bindings: Vec<HeaderBinding>,
    /// `structuredContent` may be sent in this tool's results.
    pub structured_content: bool,
}

impl ToolView {
    fn hidden(reason: impl Into<String>) -> Self {
        Self {
            definition: None,
            hidden_because: Some(reason.into()),
            header_bindings: Vec::new(),
            structured_content: false,
        }
    }

    /// The tool is listed on this revision.
    pub fn is_offered(&self) -> bool {
        self.definition.is_some()
    }
}

/// One lazily computed value per revision: the cache for projections that are computed once
/// per definition and revision, shared by every request (`Sync`; the first caller computes).
///
/// It holds up to [`PerRevision::CAPACITY`] revisions, claimed in the order they are first
/// asked for (a server serves the few revisions of its [`AdapterSet`](crate::AdapterSet)).
#[derive(Debug)]
pub struct PerRevision<T> {
    slots: [OnceLock<(Revision, T)>; PerRevision::<()>::CAPACITY],
}

impl<T> Default for PerRevision<T> {
    fn default() -> Self {
        Self {
            slots: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl<T> PerRevision<T> {
    /// How many revisions one cache holds: more than any process serves (there are five
    /// published revisions).
    pub const CAPACITY: usize = 8;

    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value for `revision`, computing it with `f` the first time.
    ///
    /// # Panics
    ///
    /// When [`PerRevision::CAPACITY`] other revisions were asked for first.
    pub fn get_or_init(&self, revision: Revision, f: impl FnOnce() -> T) -> &T {
        let mut f = Some(f);
        for slot in &self.slots {
            let (held, value) = slot.get_or_init(|| {
                let f = f.take().expect("a slot is claimed at most once per call");
                (revision, f())
            });
            if *held == revision {
                return value;
            }
        }
        panic!(
            "PerRevision holds at most {} revisions",
            PerRevision::<()>::CAPACITY
        )
    }

    /// The value for `revision`, if computed.
    pub fn get(&self, revision: Revision) -> Option<&T> {
        self.slots
            .iter()
            .map_while(OnceLock::get)
            .find(|(held, _)| *held == revision)
            .map(|(_, value)| value)
    }
}

impl Adapter {
    /// The schema profile (what `inputSchema`/`outputSchema` can hold) of this revision.
    pub const fn schema_profile(&self) -> SchemaProfile {
        self.features().schema
    }

    /// Projects a tool onto this revision (see the module table). Expensive: cache the result.
    pub fn project_tool(&self, tool: &ToolDefinition) -> ToolView {
        self.project_tool_in(tool, self.schema_profile())
    }

    /// [`Adapter::project_tool`] with the tool's schemas shown as `profile` can hold them
    /// instead of the revision's own profile: [`SchemaProfile::native`] of it shows 2025-11-25
    /// clients the declared 2020-12 schemas. Everything else about the revision applies.
    pub fn project_tool_in(&self, tool: &ToolDefinition, profile: SchemaProfile) -> ToolView {
        let f = self.features();
        let Some(declared_input) = tool.tool.get("inputSchema") else {
            return ToolView::hidden("the tool has no inputSchema");
        };
        if tool.name().is_empty() {
            return ToolView::hidden("the tool has no name");
        }
        let mut input = match project_input(declared_input, &profile) {
            Projection::Offered(schema) => schema,
            Projection::NotOffered(why) => return ToolView::hidden(why.to_string()),
        };
        let mut header_bindings = Vec::new();
        if f.mirrors_headers {
            match extract_headers(declared_input) {
                Ok(bindings) => header_bindings = bindings,
                Err(e) => return ToolView::hidden(e.to_string()),
            }
        }
        if f.asks_in_arguments() && tool.can_ask {
            input = match with_asking_properties(&input) {
                Ok(schema) => schema,
                Err(e) => return ToolView::hidden(e.to_string()),
            };
        }
        let mut out = tool.tool.clone();
        out.insert("inputSchema".into(), input);
        let mut structured_content = false;
        match out.remove("outputSchema") {
            Some(declared) => match project_output(&declared, &profile) {
                OutputProjection::Shown(schema) => {
                    out.insert("outputSchema".into(), schema);
                    structured_content = true;
                }
                OutputProjection::SchemaHidden(_) => structured_content = true,
                OutputProjection::Dropped(_) => {}
            },
            None => structured_content = f.structured_output != StructuredOutput::TextOnly,
        }
        if !f.has_titles
            && let Some(title) = out.remove("title")
            && f.has_annotations
        {
            let annotations = out
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(a) = annotations {
                a.entry("title").or_insert(title);
            }
        }
        if !f.has_annotations {
            out.remove("annotations");
        }
        self.strip_metadata(&mut out);
        if !f.core_tasks {
            out.remove("execution");
        }
        ToolView {
            definition: Some(Value::Object(out)),
            hidden_because: None,
            header_bindings,
            structured_content,
        }
    }

    /// Removes `title`, `icons` and `_meta` where the revision has none.
    fn strip_metadata(&self, def: &mut Map<String, Value>) {
        let f = self.features();
        if !f.has_titles {
            def.remove("title");
        }
        if !f.has_icons {
            def.remove("icons");
        }
        if !self.has_definition_meta() {
            def.remove("_meta");
        }
    }

    /// Definitions (tools, resources, prompts, content blocks) carry `_meta` from 2025-06-18.
    fn has_definition_meta(&self) -> bool {
        self.features().definition_meta
    }

    /// Projects a `Resource` or `ResourceTemplate`: `title`, `icons` and `_meta` only where the
    /// revision has them.
    pub fn project_resource(&self, resource: &Value) -> Value {
        let mut out = as_map(resource);
        self.strip_metadata(&mut out);
        Value::Object(out)
    }

    /// Projects a `Prompt` (and the `title` of its arguments).
    pub fn project_prompt(&self, prompt: &Value) -> Value {
        let mut out = as_map(prompt);
        self.strip_metadata(&mut out);
        if !self.features().has_titles
            && let Some(Value::Array(arguments)) = out.get_mut("arguments")
        {
            for argument in arguments {
                if let Value::Object(a) = argument {
                    a.remove("title");
                }
            }
        }
        Value::Object(out)
    }

    /// Projects an `Implementation` (`serverInfo`, `clientInfo`): `title` from 2025-06-18,
    /// `icons`, `description` and `websiteUrl` from 2025-11-25.
    pub fn project_implementation(&self, info: &Value) -> Value {
        let f = self.features();
        let mut out = as_map(info);
        if !f.has_titles {
            out.remove("title");
        }
        if !f.has_icons {
            for key in ["icons", "description", "websiteUrl"] {
                out.remove(key);
            }
        }
        Value::Object(out)
    }

    /// Projects `ServerCapabilities`: `completions` from 2025-03-26, `tasks` on 2025-11-25 only,
    /// `extensions` wherever extensions are negotiated (every revision: per request on
    /// 2026-07-28, at `initialize` before).
    pub fn project_server_capabilities(&self, capabilities: &Value) -> Value {
        let f = self.features();
        let mut out = as_map(capabilities);
        if !f.has_completions {
            out.remove("completions");
        }
        if !f.core_tasks {
            out.remove("tasks");
        }
        if !f.has_extensions() {
            out.remove("extensions");
        }
        Value::Object(out)
    }

    /// Projects `ClientCapabilities`: `elicitation` from 2025-06-18, `tasks` on 2025-11-25
    /// only, `extensions` wherever extensions are negotiated.
    pub fn project_client_capabilities(&self, capabilities: &Value) -> Value {
        let f = self.features();
        let mut out = as_map(capabilities);
        if !f.has_elicitation {
            out.remove("elicitation");
        }
        if !f.core_tasks {
            out.remove("tasks");
        }
        if !f.has_extensions() {
            out.remove("extensions");
        }
        if !f.url_elicitation
            && let Some(Value::Object(e)) = out.get_mut("elicitation")
        {
            e.remove("url");
            e.remove("form");
        }
        Value::Object(out)
    }

    /// Projects one content block. Kinds the revision lacks become the nearest kind it has:
    /// `resource_link` (before 2025-06-18) and `audio` (2024-11-05) become `text` that names
    /// what was there; `icons`, `title` and `_meta` go where the revision has none.
    pub fn project_content(&self, block: &Value) -> Value {
        self.project_content_owned(block.clone())
    }

    /// [`project_content`](Self::project_content), taking the block (no copy).
    fn project_content_owned(&self, block: Value) -> Value {
        let f = self.features();
        let mut out = match block {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        match out.get("type").and_then(Value::as_str) {
            Some("resource_link") if !f.has_resource_link => {
                let name = out
                    .get("title")
                    .or_else(|| out.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("resource");
                let uri = out.get("uri").and_then(Value::as_str).unwrap_or("");
                let mut text = format!("Resource: {name} <{uri}>");
                if let Some(d) = out.get("description").and_then(Value::as_str) {
                    text.push_str(&format!(" - {d}"));
                }
                return text_block(text, out.get("annotations"));
            }
            Some("audio") if !f.has_audio => {
                let mime = out
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or("audio");
                let text = format!(
                    "[{mime} audio content omitted: this protocol revision cannot carry audio]"
                );
                return text_block(text, out.get("annotations"));
            }
            Some("resource_link") => self.strip_metadata(&mut out),
            _ => {
                if !self.has_definition_meta() {
                    out.remove("_meta");
                }
            }
        }
        Value::Object(out)
    }

    /// Projects a `CallToolResult` in place: content blocks, and `structuredContent` as the
    /// revision allows (any JSON on 2026-07-28, objects on 2025-06-18/2025-11-25, none before).
    /// When `structuredContent` is dropped and no content is left, its JSON text becomes the
    /// content, so the value still reaches the client.
    pub fn project_tool_result(&self, result: &mut Map<String, Value>) {
        let dropped = if self.keeps_structured(result.get("structuredContent")) {
            None
        } else {
            result.remove("structuredContent")
        };
        // In place: the blocks and the `content` key stay where they are.
        match result.get_mut("content") {
            Some(Value::Array(blocks)) => self.project_tool_blocks(blocks, dropped),
            Some(other) => {
                let mut blocks = Vec::new();
                self.project_tool_blocks(&mut blocks, dropped);
                *other = Value::Array(blocks);
            }
            None => {
                let mut blocks = Vec::new();
                self.project_tool_blocks(&mut blocks, dropped);
                result.insert("content".into(), Value::Array(blocks));
            }
        }
    }

    /// [`project_tool_result`](Self::project_tool_result) on a typed result.
    pub(crate) fn project_tool_parts(&self, result: &mut crate::encode::ToolParts) {
        let dropped = if self.keeps_structured(result.structured_content.as_ref()) {
            None
        } else {
            result.structured_content.take()
        };
        self.project_tool_blocks(&mut result.content, dropped);
    }

    /// Whether this revision carries a tool result's `structuredContent`.
    fn keeps_structured(&self, structured: Option<&Value>) -> bool {
        match (self.features().structured_output, structured) {
            (_, None) | (StructuredOutput::Any, Some(_)) => true,
            (StructuredOutput::ObjectOnly, Some(v)) => v.is_object(),
            (StructuredOutput::TextOnly, Some(_)) => false,
        }
    }

    /// [`keeps_structured`](Self::keeps_structured) for structured output written as compact
    /// JSON text (an object starts with `{`).
    pub(crate) fn keeps_structured_json(&self, json: &str) -> bool {
        match self.features().structured_output {
            StructuredOutput::Any => true,
            StructuredOutput::ObjectOnly => json.starts_with('{'),
            StructuredOutput::TextOnly => false,
        }
    }

    /// Projects a tool result's content blocks in place; structured output the revision
    /// dropped becomes the text of the only block when there is no other.
    fn project_tool_blocks(&self, blocks: &mut Vec<Value>, dropped: Option<Value>) {
        for block in blocks.iter_mut() {
            *block = self.project_content_owned(block.take());
        }
        if let Some(structured) = dropped
            && blocks.is_empty()
        {
            blocks.push(json!({"type": "text", "text": structured.to_string()}));
        }
    }

    /// Projects a `GetPromptResult` in place (the content of each message).
    pub fn project_prompt_result(&self, result: &mut Map<String, Value>) {
        if let Some(Value::Array(messages)) = result.get_mut("messages") {
            for message in messages {
                if let Some(content) = message.get_mut("content") {
                    *content = self.project_content_owned(content.take());
                }
            }
        }
    }
}

fn as_map(value: &Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn text_block(text: String, annotations: Option<&Value>) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), "text".into());
    block.insert("text".into(), Value::String(text));
    if let Some(a) = annotations {
        block.insert("annotations".into(), a.clone());
    }
    Value::Object(block)
}
