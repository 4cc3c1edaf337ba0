//! What each revision is shown of the registry: projected once per revision by the revision's
//! adapter, then served from here for every list and call.

use crate::FastMap;

use mcp_adapters::{Adapter, ToolDefinition, ToolHeaders, ToolView};
use mcp_schema::HeaderBinding;
use serde_json::{Value, json};

use crate::server::Catalog;

/// Everything list and describe answers need for one revision.
#[derive(Debug)]
pub(crate) struct RevisionView {
    /// Offered tools, sorted by name: (name, definition).
    pub(crate) tools: Vec<(String, Value)>,
    /// The projection of each offered tool (structured output allowed, header bindings).
    pub(crate) tool_views: FastMap<String, ToolView>,
    pub(crate) resources: Vec<(String, Value)>,
    pub(crate) templates: Vec<(String, Value)>,
    pub(crate) prompts: Vec<(String, Value)>,
    /// The server's capabilities as declared (the adapter projects them in the describe
    /// result).
    pub(crate) capabilities: Value,
    /// The server's `Implementation` as this revision shows it (result `_meta`), projected
    /// once here rather than for every result.
    pub(crate) server_info: Value,
}

impl RevisionView {
    pub(crate) fn build(catalog: &Catalog, adapter: Adapter) -> Self {
        let settings = &*catalog.settings;
        let mut tools = Vec::new();
        let mut tool_views = FastMap::default();
        for entry in &catalog.tools {
            let tool = &entry.tool;
            if tool
                .min_revision
                .is_some_and(|min| adapter.revision() < min)
            {
                continue;
            }
            let definition = tool.definition(&tool.input_schema, entry.output_schema.as_ref());
            let profile = match settings.tool_schemas {
                crate::ToolSchemas::Projected => adapter.schema_profile(),
                crate::ToolSchemas::Native => adapter.schema_profile().native(),
            };
            let view = adapter.project_tool_in(
                &ToolDefinition::new(definition, tool.takes_exchange),
                profile,
            );
            match &view.definition {
                Some(shown) => {
                    tools.push((tool.name.clone(), shown.clone()));
                    tool_views.insert(tool.name.clone(), view);
                }
                None => tracing::debug!(
                    tool = %tool.name,
                    revision = adapter.version(),
                    reason = view.hidden_because.as_deref().unwrap_or(""),
                    "tool not offered on this revision"
                ),
            }
        }
        let resources = catalog
            .resources
            .iter()
            .map(|r| (r.uri.clone(), adapter.project_resource(&r.definition())))
            .collect();
        let templates = catalog
            .templates
            .iter()
            .map(|t| {
                (
                    t.template.template.clone(),
                    adapter.project_resource(&t.template.definition()),
                )
            })
            .collect();
        let prompts = catalog
            .prompts
            .iter()
            .map(|p| {
                (
                    p.prompt.name.clone(),
                    adapter.project_prompt(&p.prompt.definition(&p.arguments)),
                )
            })
            .collect();
        let mut capabilities = serde_json::Map::new();
        // List changes and resource updates can be published at any time (`Notifier`,
        // runtime registry changes), so both are always advertised.
        if !tools.is_empty() {
            capabilities.insert("tools".into(), json!({"listChanged": true}));
        }
        if !catalog.resources.is_empty()
            || !catalog.templates.is_empty()
            || settings.declares_resources
        {
            capabilities.insert(
                "resources".into(),
                json!({"subscribe": true, "listChanged": true}),
            );
        }
        if !catalog.prompts.is_empty() {
            capabilities.insert("prompts".into(), json!({"listChanged": true}));
        }
        if settings.completer.is_some() {
            capabilities.insert("completions".into(), json!({}));
        }
        capabilities.insert("logging".into(), json!({}));
        if !settings.extensions.is_empty() {
            let extensions: serde_json::Map<String, Value> = settings
                .extensions
                .iter()
                .map(|e| (e.id.clone(), e.settings.clone()))
                .collect();
            capabilities.insert("extensions".into(), Value::Object(extensions));
        }
        Self {
            tools,
            tool_views,
            resources,
            templates,
            prompts,
            capabilities: Value::Object(capabilities),
            server_info: adapter.project_implementation(&settings.server_info),
        }
    }
}

impl ToolHeaders for RevisionView {
    fn header_bindings(&self, name: &str) -> Option<&[HeaderBinding]> {
        self.tool_views
            .get(name)
            .map(|view| view.header_bindings.as_slice())
    }
}
