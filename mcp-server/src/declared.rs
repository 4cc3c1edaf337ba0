//! Declarations made from data rather than from Rust types: the schemas another server listed,
//! and a whole catalog replaced at once. What a gateway (`mcp-gateway`) needs to serve the
//! tools, resources and prompts of an upstream server as this server's own.

use std::sync::{Arc, PoisonError};

use serde_json::Value;

use crate::notifier::Change;
use crate::notify::ChangeError;
use crate::prompt::Prompt;
use crate::resource::{Resource, ResourceTemplate};
use crate::server::{Catalog, Server, build_prompts, build_resources, build_tools};
use crate::tool::Tool;

impl Tool {
    /// Replaces the input schema derived from the handler's argument type with `schema`, a
    /// JSON Schema given as data (say, the `inputSchema` another server listed). It is checked
    /// when the server is built or the tool added, as a derived one is: it must be
    /// object-rooted and compile. The handler still deserializes its arguments from the
    /// validated JSON, so give it a `serde_json::Value` input.
    ///
    /// ```
    /// use mcp_server::{Exchange, Server, Tool};
    /// use serde_json::{Value, json};
    ///
    /// async fn echo(args: Value, _ex: Exchange) -> String {
    ///     args.to_string()
    /// }
    ///
    /// let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    /// let tool = Tool::new("echo", echo).with_input_schema(schema.clone());
    /// assert_eq!(tool.input_schema(), &schema);
    /// let server = Server::builder("demo", "1.0").tool(tool).build().unwrap();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.input_schema = schema;
        self
    }

    /// Replaces the output schema (`outputSchema`) implied by the handler's return type:
    /// `Some` declares this one (checked when the server is built), `None` declares none.
    #[must_use]
    pub fn with_output_schema(mut self, schema: Option<Value>) -> Self {
        self.output_schema = schema.map(Ok);
        self
    }
}

impl Prompt {
    /// Replaces the argument list derived from the handler's argument type with the one
    /// `schema` describes: an object schema whose `properties` are the arguments (each
    /// property's `title` and `description` are listed) and whose `required` names the
    /// required ones. Give the handler a `serde_json::Value` input.
    ///
    /// ```
    /// use mcp_server::{Prompt, Server};
    /// use serde_json::{Value, json};
    ///
    /// async fn greet(args: Value) -> String {
    ///     format!("Greet {}.", args["name"].as_str().unwrap_or("everyone"))
    /// }
    ///
    /// let schema = json!({
    ///     "type": "object",
    ///     "properties": {"name": {"type": "string", "description": "Whom to greet."}},
    ///     "required": ["name"],
    /// });
    /// let prompt = Prompt::new("greet", greet).with_argument_schema(schema);
    /// let server = Server::builder("demo", "1.0").prompt(prompt).build().unwrap();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn with_argument_schema(mut self, schema: Value) -> Self {
        self.schema = schema;
        self
    }
}

/// The list-changed notifications a catalog replacement published (one per kind whose
/// listing changed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Replaced {
    /// The tools' listing changed (`notifications/tools/list_changed` was published).
    pub tools: bool,
    /// The resources' or templates' listing changed
    /// (`notifications/resources/list_changed`).
    pub resources: bool,
    /// The prompts' listing changed (`notifications/prompts/list_changed`).
    pub prompts: bool,
}

impl Server {
    /// Replaces every tool, resource, resource template and prompt at once, then publishes
    /// one list-changed notification for each kind whose listing is not the same as before
    /// (none when nothing changed).
    ///
    /// The declarations are checked as [`ServerBuilder::build`](crate::ServerBuilder::build)
    /// checks them; if one is refused nothing changes. Like
    /// [`add_tool`](Self::add_tool), only this process's catalog changes (every worker
    /// applies its own), calls in flight finish on the catalog they started with, and the
    /// resources of [`Skills`](crate::Skills) are not kept: a server with skills should not
    /// use this.
    ///
    /// # Errors
    ///
    /// [`ChangeError::Registration`] when a declaration is refused (nothing changed);
    /// [`ChangeError::Publish`] when the catalog changed but a notification could not be
    /// published.
    pub async fn replace_catalog(
        &self,
        tools: Vec<Tool>,
        resources: Vec<Resource>,
        templates: Vec<ResourceTemplate>,
        prompts: Vec<Prompt>,
    ) -> Result<Replaced, ChangeError> {
        let tools = build_tools(tools)?;
        let prompts = build_prompts(prompts)?;
        let (resources, templates) = build_resources(resources, templates)?;
        let replaced = {
            let _serial = self
                .live
                .edit
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let current = self.live.current();
            let next = current.with_catalog(tools, prompts, resources, templates);
            let replaced = Replaced {
                tools: tool_definitions(&current) != tool_definitions(&next),
                resources: resource_definitions(&current) != resource_definitions(&next),
                prompts: prompt_definitions(&current) != prompt_definitions(&next),
            };
            self.live.replace(Arc::new(next));
            replaced
        };
        let notifier = self.notifier();
        for (changed, change) in [
            (replaced.tools, Change::ToolsListChanged),
            (replaced.resources, Change::ResourcesListChanged),
            (replaced.prompts, Change::PromptsListChanged),
        ] {
            if changed {
                notifier
                    .publish(&change)
                    .await
                    .map_err(ChangeError::Publish)?;
            }
        }
        Ok(replaced)
    }
}

fn tool_definitions(catalog: &Catalog) -> Vec<Value> {
    catalog
        .tools
        .iter()
        .map(|entry| {
            entry
                .tool
                .definition(&entry.tool.input_schema, entry.output_schema.as_ref())
        })
        .collect()
}

fn resource_definitions(catalog: &Catalog) -> Vec<Value> {
    catalog
        .resources
        .iter()
        .map(Resource::definition)
        .chain(catalog.templates.iter().map(|t| t.template.definition()))
        .collect()
}

fn prompt_definitions(catalog: &Catalog) -> Vec<Value> {
    catalog
        .prompts
        .iter()
        .map(|entry| entry.prompt.definition(&entry.arguments))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{Exchange, NoArgs, Server, Tool};

    async fn echo(args: serde_json::Value, _ex: Exchange) -> String {
        args.to_string()
    }

    async fn hello(_: NoArgs) -> String {
        "hello".into()
    }

    #[tokio::test]
    async fn a_replacement_reports_only_the_kinds_that_changed() {
        let server = Server::builder("demo", "1.0")
            .tool(Tool::new("hello", hello))
            .build()
            .unwrap();
        let same = server
            .replace_catalog(
                vec![Tool::new("hello", hello)],
                Vec::new(),
                Vec::new(),
                Vec::new(),
            )
            .await
            .unwrap();
        assert_eq!(same, super::Replaced::default());
        let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
        let changed = server
            .replace_catalog(
                vec![Tool::new("echo", echo).with_input_schema(schema)],
                Vec::new(),
                Vec::new(),
                Vec::new(),
            )
            .await
            .unwrap();
        assert!(changed.tools && !changed.resources && !changed.prompts);
        // A refused declaration changes nothing.
        let refused = server
            .replace_catalog(
                vec![Tool::new("bad", echo).with_input_schema(json!({"type": "string"}))],
                Vec::new(),
                Vec::new(),
                Vec::new(),
            )
            .await;
        assert!(refused.is_err());
        assert!(server.live.current().tool("echo").is_some());
    }
}
