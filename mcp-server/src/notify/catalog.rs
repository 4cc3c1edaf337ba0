//! Changes to the registry at run time, announced to every listener.

use super::*;

impl Server {
    /// Adds a tool at run time, then publishes `notifications/tools/list_changed`.
    ///
    /// The tool is checked as [`ServerBuilder::build`](crate::ServerBuilder::build) checks it;
    /// a name already registered is refused. The per-revision views are rebuilt now, once, so
    /// requests stay as cheap as before. Only this process's registry changes: every worker
    /// applies its own changes, while the notification reaches the listeners of all of them.
    /// Calls in flight finish on the registry they started with.
    pub async fn add_tool(&self, tool: Tool) -> Result<(), ChangeError> {
        self.change(Change::ToolsListChanged, |registry| {
            let mut added = build_tools(vec![tool])?;
            let mut tools = registry.tools.clone();
            let entry = added.pop().expect("one tool built");
            if registry.tool(&entry.tool.name).is_some() {
                return Err(RegistrationError::Duplicate {
                    kind: "tool",
                    name: entry.tool.name,
                }
                .into());
            }
            tools.push(entry);
            tools.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
            Ok(registry.with_catalog(
                tools,
                registry.prompts.clone(),
                registry.resources.clone(),
                registry.templates.clone(),
            ))
        })
        .await
    }

    /// Removes the tool `name` at run time, then publishes
    /// `notifications/tools/list_changed`. See [`add_tool`](Self::add_tool).
    pub async fn remove_tool(&self, name: &str) -> Result<(), ChangeError> {
        self.change(Change::ToolsListChanged, |registry| {
            let before = registry.tools.len();
            let mut tools = registry.tools.clone();
            tools.retain(|t| t.tool.name != name);
            if tools.len() == before {
                return Err(not_registered("tool", name));
            }
            Ok(registry.with_catalog(
                tools,
                registry.prompts.clone(),
                registry.resources.clone(),
                registry.templates.clone(),
            ))
        })
        .await
    }

    /// Adds a prompt at run time, then publishes `notifications/prompts/list_changed`. See
    /// [`add_tool`](Self::add_tool).
    pub async fn add_prompt(&self, prompt: Prompt) -> Result<(), ChangeError> {
        self.change(Change::PromptsListChanged, |registry| {
            let mut added = build_prompts(vec![prompt])?;
            let entry = added.pop().expect("one prompt built");
            if registry.prompt(&entry.prompt.name).is_some() {
                return Err(RegistrationError::Duplicate {
                    kind: "prompt",
                    name: entry.prompt.name,
                }
                .into());
            }
            let mut prompts = registry.prompts.clone();
            prompts.push(entry);
            prompts.sort_by(|a, b| a.prompt.name.cmp(&b.prompt.name));
            Ok(registry.with_catalog(
                registry.tools.clone(),
                prompts,
                registry.resources.clone(),
                registry.templates.clone(),
            ))
        })
        .await
    }

    /// Removes the prompt `name` at run time, then publishes
    /// `notifications/prompts/list_changed`. See [`add_tool`](Self::add_tool).
    pub async fn remove_prompt(&self, name: &str) -> Result<(), ChangeError> {
        self.change(Change::PromptsListChanged, |registry| {
            let mut prompts = registry.prompts.clone();
            prompts.retain(|p| p.prompt.name != name);
            if prompts.len() == registry.prompts.len() {
                return Err(not_registered("prompt", name));
            }
            Ok(registry.with_catalog(
                registry.tools.clone(),
                prompts,
                registry.resources.clone(),
                registry.templates.clone(),
            ))
        })
        .await
    }

    /// Adds a resource at a fixed URI at run time, then publishes
    /// `notifications/resources/list_changed`. See [`add_tool`](Self::add_tool).
    pub async fn add_resource(&self, resource: Resource) -> Result<(), ChangeError> {
        self.change(Change::ResourcesListChanged, |registry| {
            let (mut added, _) = build_resources(vec![resource], Vec::new())?;
            let resource = added.pop().expect("one resource built");
            if registry.resource_index.contains_key(&resource.uri) {
                return Err(RegistrationError::Duplicate {
                    kind: "resource",
                    name: resource.uri,
                }
                .into());
            }
            let mut resources = registry.resources.clone();
            resources.push(resource);
            resources.sort_by(|a, b| a.uri.cmp(&b.uri));
            Ok(registry.with_catalog(
                registry.tools.clone(),
                registry.prompts.clone(),
                resources,
                registry.templates.clone(),
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
        self.change(Change::ResourcesListChanged, |registry| {
            let (_, mut added) = build_resources(Vec::new(), vec![template])?;
            let entry = added.pop().expect("one template built");
            if registry
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
            let mut templates = registry.templates.clone();
            templates.push(entry);
            templates.sort_by(|a, b| a.template.template.cmp(&b.template.template));
            Ok(registry.with_catalog(
                registry.tools.clone(),
                registry.prompts.clone(),
                registry.resources.clone(),
                templates,
            ))
        })
        .await
    }

    /// Removes the resource at `uri`, or the resource template spelled `uri`, at run time,
    /// then publishes `notifications/resources/list_changed`. See
    /// [`add_tool`](Self::add_tool).
    pub async fn remove_resource(&self, uri: &str) -> Result<(), ChangeError> {
        self.change(Change::ResourcesListChanged, |registry| {
            let mut resources = registry.resources.clone();
            resources.retain(|r| r.uri != uri);
            let mut templates = registry.templates.clone();
            templates.retain(|t| t.template.template != uri);
            if resources.len() == registry.resources.len()
                && templates.len() == registry.templates.len()
            {
                return Err(not_registered("resource", uri));
            }
            Ok(registry.with_catalog(
                registry.tools.clone(),
                registry.prompts.clone(),
                resources,
                templates,
            ))
        })
        .await
    }

    /// Rebuilds the registry with `edit`, swaps it in, and publishes `change`.
    async fn change(
        &self,
        change: Change,
        edit: impl FnOnce(&Registry) -> Result<Registry, ChangeError>,
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
