//! What each revision is shown of the registry, computed once per revision and reused.
//!
//! Every decision here reads the adapter's flags (and mcp-schema's per-revision profile),
//! never a version string.

use std::collections::HashMap;

use mcp_adapters::{Adapter, StructuredOutput};
use mcp_schema::{SchemaProfile, ToolProjection};
use serde_json::{Map, Value, json};

use crate::server::Registry;

/// A revision's view of one tool, for calls.
#[derive(Clone, Debug)]
pub(crate) struct ToolShape {
    /// `structuredContent` may be sent (and must be an object when `object_only`).
    pub(crate) structured: bool,
    pub(crate) object_only: bool,
}

/// Everything list and describe answers need for one revision, serialized from here.
#[derive(Debug)]
pub(crate) struct RevisionView {
    /// Offered tools, sorted by name: (name, definition).
    pub(crate) tools: Vec<(String, Value)>,
    pub(crate) tool_shapes: HashMap<String, ToolShape>,
    pub(crate) resources: Vec<(String, Value)>,
    pub(crate) templates: Vec<(String, Value)>,
    pub(crate) prompts: Vec<(String, Value)>,
    pub(crate) capabilities: Value,
    pub(crate) server_info: Value,
}

impl RevisionView {
    pub(crate) fn build(registry: &Registry, adapter: Adapter) -> Self {
        let features = adapter.features();
        let profile = SchemaProfile::for_revision(adapter.version()).unwrap_or(SchemaProfile::V2026_07_28);
        let mut tools = Vec::new();
        let mut tool_shapes = HashMap::new();
        for entry in &registry.tools {
            let tool = &entry.tool;
            if tool.min_revision.is_some_and(|min| adapter.revision() < min) {
                continue;
            }
            let projection = ToolProjection::compute(&tool.input_schema, entry.output_schema.as_ref(), &profile);
            let Some(input) = projection.input.offered() else {
                tracing::debug!(tool = %tool.name, revision = adapter.version(), "tool not offered: its schema cannot be shown");
                continue;
            };
            let input = if tool.takes_exchange && adapter.asks_in_arguments() {
                match mcp_schema::with_asking_properties(input) {
                    Ok(schema) => schema,
                    Err(err) => {
                        tracing::warn!(tool = %tool.name, revision = adapter.version(), %err, "tool not offered");
                        continue;
                    }
                }
            } else {
                input.clone()
            };
            let output = projection.output.as_ref().and_then(|o| o.schema());
            let mut definition = tool.definition(&input, output);
            strip(&mut definition, features.has_titles, features.has_icons);
            if !features.has_annotations
                && let Some(object) = definition.as_object_mut()
            {
                object.remove("annotations");
            }
            let structured = match &projection.output {
                Some(output) => output.allows_structured_content(),
                None => features.structured_output != StructuredOutput::TextOnly,
            };
            tool_shapes.insert(
                tool.name.clone(),
                ToolShape { structured, object_only: features.structured_output == StructuredOutput::ObjectOnly },
            );
            tools.push((tool.name.clone(), definition));
        }
        let resources = registry
            .resources
            .iter()
            .map(|r| {
                let mut definition = r.definition();
                strip(&mut definition, features.has_titles, features.has_icons);
                (r.uri.clone(), definition)
            })
            .collect();
        let templates = registry
            .templates
            .iter()
            .map(|t| {
                let mut definition = t.template.definition();
                strip(&mut definition, features.has_titles, features.has_icons);
                (t.template.template.clone(), definition)
            })
            .collect();
        let prompts = registry
            .prompts
            .iter()
            .map(|p| {
                let arguments: Vec<Value> = p
                    .arguments
                    .iter()
                    .map(|a| {
                        let mut a = a.clone();
                        strip(&mut a, features.has_titles, features.has_icons);
                        a
                    })
                    .collect();
                let mut definition = p.prompt.definition(&arguments);
                strip(&mut definition, features.has_titles, features.has_icons);
                (p.prompt.name.clone(), definition)
            })
            .collect();
        let mut capabilities = Map::new();
        if !registry.tools.is_empty() {
            capabilities.insert("tools".into(), json!({}));
        }
        if !registry.resources.is_empty() || !registry.templates.is_empty() {
            capabilities.insert("resources".into(), json!({}));
        }
        if !registry.prompts.is_empty() {
            capabilities.insert("prompts".into(), json!({}));
        }
        if registry.completer.is_some() {
            capabilities.insert("completions".into(), json!({}));
        }
        capabilities.insert("logging".into(), json!({}));
        Self {
            tools,
            tool_shapes,
            resources,
            templates,
            prompts,
            capabilities: Value::Object(capabilities),
            server_info: registry.server_info(adapter),
        }
    }
}

/// Removes `title` and `icons` where the revision has none.
fn strip(definition: &mut Value, titles: bool, icons: bool) {
    if let Some(object) = definition.as_object_mut() {
        if !titles {
            object.remove("title");
        }
        if !icons {
            object.remove("icons");
        }
    }
}

/// A tool result as the revision can hold it: content blocks it lacks are dropped (their text
/// is lost, so a note replaces them), and `structuredContent` goes where it cannot be.
pub(crate) fn tool_result(adapter: Adapter, shape: Option<&ToolShape>, mut result: Value) -> Value {
    let features = adapter.features();
    let Some(object) = result.as_object_mut() else { return result };
    if let Some(Value::Array(content)) = object.get_mut("content") {
        for block in content.iter_mut() {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
            let kept = match kind {
                "resource_link" => features.has_resource_link,
                "audio" => features.has_audio,
                _ => true,
            };
            if !kept {
                let what = block.get("uri").and_then(Value::as_str).map(|u| format!(" ({u})")).unwrap_or_default();
                *block = json!({"type": "text", "text": format!("[{kind} content{what} not shown on this protocol revision]")});
            }
        }
    }
    let keep_structured = match object.get("structuredContent") {
        None => true,
        Some(value) => match shape {
            Some(shape) => shape.structured && (!shape.object_only || value.is_object()),
            None => features.structured_output == StructuredOutput::Any,
        },
    };
    if !keep_structured {
        object.remove("structuredContent");
    }
    result
}
