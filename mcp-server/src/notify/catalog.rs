//! Changes to the catalog at run time, announced to every listener.

use super::*;

impl Server {
    /// Adds a tool at run time, then publishes `notifications/tools/list_changed`.
    ///
    /// The tool is checked as [`ServerBuilder::build`](crate::ServerBuilder::build) checks it;
    /// a name already registered is refused. The per-revision views are rebuilt now, once, so
    /// requests stay as cheap as before. Only this process's catalog changes: every worker
    /// applies its own changes, while the notification reaches the listeners of all of them.
    /// Calls in flight finish on the catalog they started with.
    pub async fn add_tool(&self, tool: Tool) -> Result<(), ChangeError> {
        self.change(Change::ToolsListChanged, |catalog| {
            let mut added = build_tools(vec![tool])?;
            let mut tools = catalog.tools.clone();
            let entry = added.pop().expect("one tool built");
            if catalog.tool(&entry.tool.name).is_some() {
                return Err(RegistrationError::Duplicate {
                    kind: "tool",
                    name: entry.tool.name,
                }
                .into());
            }
            tools.push(entry);
            tools.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
            Ok(catalog.with_catalog(
                tools,
                catalog.prompts.clone(),
                catalog.resources.clone(),
                catalog.templates.clone(),
            ))
        })
        .await
    }

    /// Removes the tool `name` at run time, then publishes
    /// `notifications/tools/list_changed`. See [`add_tool`](Self::add_tool).
    pub async fn remove_tool(&self, name: &str) -> Result<(), ChangeError> {
        self.change(Change::ToolsListChanged, |catalog| {
            let before = catalog.tools.len();
            let mut tools = catalog.tools.clone();
            tools.retain(|t| t.tool.name != name);
            if tools.len() == before {
                return Err(not_registered("tool", name));
            }
            Ok(catalog.with_catalog(
                tools,
                catalog.prompts.clone(),
                catalog.resources.clone(),
                catalog.templates.clone(),
            ))
        })
        .await
    }

    /// Adds a prompt at run time, then publishes `notifications/prompts/list_changed`. See
    /// [`add_tool`](Self::add_tool).
    pub async fn add_prompt(&self, prompt: Prompt) -> Result<(), ChangeError> {
        self.change(Change::PromptsListChanged, |catalog| {
            let mut added = build_prompts(vec![prompt])?;
            let entry = added.pop().expect("one prompt built");
            if catalog.prompt(&entry.prompt.name).is_some() {
                return Err(RegistrationError::Duplicate {
                    kind: "prompt",
                    name: entry.prompt.name,
                }
                .into());
            }
            let mut prompts = catalog.prompts.clone();
            prompts.push(entry);
            prompts.sort_by(|a, b| a.prompt.name.cmp(&b.prompt.name));
            Ok(catalog.with_catalog(
                catalog.tools.clone(),
                prompts,
                catalog.resources.clone(),
                catalog.templates.clone(),
            ))
        })
        .await
    }

    /// Removes the prompt `name` at run time, then publishes
    /// `notifications/prompts/list_changed`. See [`add_tool`](Self::add_tool).
    pub async fn remove_prompt(&self, name: &str) -> Result<(), ChangeError> {
        self.change(Change::PromptsListChanged, |catalog| {
            let mut prompts = catalog.prompts.clone();
            prompts.retain(|p| p.prompt.name != name);
            if prompts.len() == catalog.prompts.len() {
                return Err(not_registered("prompt", name));
            }
            Ok(catalog.with_catalog(
                catalog.tools.clone(),
                prompts,
                catalog.resources.clone(),
                catalog.templates.clone(),
            ))
        })
        .await
    }

    /// Adds a resource at a fixed URI at run time, then publishes
    /// `notifications/resources/list_changed`. See [`add_tool`](Self::add_tool).
    pub async fn add_resource(&self, resource: Resource) -> Result<(), ChangeError> {
        self.change(Change::ResourcesListChanged, |catalog| {
            let (mut added, _) = build_resources(vec![resource], Vec::new())?;
            let resource = added.pop().expect("one resource built");
            if catalog.resource_index.contains_key(&resource.uri) {
                return Err(RegistrationError::Duplicate {
                    kind: "resource",
                    name: resource.uri,
                }
                .into());
            }
            let mut resources = catalog.resources.clone();
            resources.push(resource);
            resources.sort_by(|a, b| a.uri.cmp(&b.uri));
            Ok(catalog.with_catalog(
                catalog.tools.clone(),
                catalog.prompts.clone(),
                resources,
                catalog.templates.clone(),
            ))
        })
        .await
    }

    /// Adds a resource template at run time, then publishes
    /// `notifications/resources/list_changed`. See [`add_tool`](Self::add_tool).
    pub async fn add_resource_template(
        &self,
        template: ResourceTemplate,
    ) -> Result<(), ChangeError> {
        self.change(Change::ResourcesListChanged, |catalog| {
            let (_, mut added) = build_resources(Vec::new(), vec![template])?;
            let entry = added.pop().expect("one template built");
            if catalog
                .templates
                .iter()
                .any(|t| t.template.template == entry.template.template)
            {
                return Err(RegistrationError::Duplicate {
                    kind: "resource template",
                    name: entry.template.template,
                }
                .into());
            }
            let mut templates = catalog.templates.clone();
            templates.push(entry);
            templates.sort_by(|a, b| a.template.template.cmp(&b.template.template));
            Ok(catalog.with_catalog(
                catalog.tools.clone(),
                catalog.prompts.clone(),
                catalog.resources.clone(),
                templates,
            ))
        })
        .await
    }

    /// Removes the resource at `uri`, or the resource template spelled `uri`, at run time,
    /// then publishes `notifications/resources/list_changed`. See
    /// [`add_tool`](Self::add_tool).
    pub async fn remove_resource(&self, uri: &str) -> Result<(), ChangeError> {
        self.change(Change::ResourcesListChanged, |catalog| {
            let mut resources = catalog.resources.clone();
            resources.retain(|r| r.uri != uri);
            let mut templates = catalog.templates.clone();
            templates.retain(|t| t.template.template != uri);
            if resources.len() == catalog.resources.len()
                && templates.len() == catalog.templates.len()
            {
                return Err(not_registered("resource", uri));
            }
            Ok(catalog.with_catalog(
                catalog.tools.clone(),
                catalog.prompts.clone(),
                resources,
                templates,
            ))
        })
        .await
    }

    /// Builds the next catalog with `edit` (the settings stay shared), swaps it in, and publishes `change`.
    async fn change(
        &self,
        change: Change,
        edit: impl FnOnce(&Catalog) -> Result<Catalog, ChangeError>,
    ) -> Result<(), ChangeError> {
        {
            let _serial = self
                .live
                .edit
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let current = self.live.current();
            let next = Arc::new(edit(&current)?);
            self.live.replace(next);
        }
        self.notifier()
            .publish(&change)
            .await
            .map(|_| ())
            .map_err(ChangeError::Publish)
    }
}

fn not_registered(kind: &'static str, name: &str) -> ChangeError {
    ChangeError::NotRegistered {
        kind,
        name: name.to_owned(),
    }
}
