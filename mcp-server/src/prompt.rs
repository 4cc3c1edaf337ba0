//! Prompts: typed arguments and messages.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::PromptError;
use crate::exchange::Exchange;
use crate::handler::{Handler, Token};
use crate::icon::{Icon, icons_value};
use crate::schema;
use mcp_wire::model::{GetPromptResult, PromptMessage};

/// What a prompt handler may return: `String` (one user message), [`PromptMessage`],
/// `Vec<PromptMessage>`, [`GetPromptResult`], or `Result<T, E>` of these where
/// `E: Into<PromptError>`.
pub trait IntoPromptResult: Send + 'static {
    /// The rendered prompt.
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError>;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError> {
        Ok(self)
    }
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError> {
        Ok(GetPromptResult::new(vec![PromptMessage::user(self)]))
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError> {
        Ok(GetPromptResult::new(vec![self]))
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError> {
        Ok(GetPromptResult::new(self))
    }
}

impl<T: IntoPromptResult, E: Into<PromptError> + Send + 'static> IntoPromptResult for Result<T, E> {
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError> {
        self.map_err(Into::into)?.into_prompt_result()
    }
}

pub(crate) type ErasedPrompt = Arc<
    dyn Fn(
            Value,
            Exchange,
        ) -> Result<BoxFuture<'static, Result<GetPromptResult, PromptError>>, String>
        + Send
        + Sync,
>;

/// A prompt declaration.
///
/// The handler's argument type lists the prompt's arguments (its doc comments become their
/// descriptions; an `Option` field is optional).
///
/// ```
/// use mcp_server::{Prompt, Server};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct GreetArgs {
///     /// Whom to greet.
///     name: String,
/// }
///
/// async fn greet(args: GreetArgs) -> String {
///     format!("Please greet {} warmly.", args.name)
/// }
///
/// let server = Server::builder("demo", "1.0")
///     .prompt(Prompt::new("greet", greet).title("Greeting").description("Greets someone."))
///     .build()
///     .unwrap();
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct Prompt {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) icons: Vec<Icon>,
    pub(crate) schema: Value,
    /// The types of the shared state the handler's parts take (none, one, or a conflict the
    /// build reports).
    pub(crate) state_types: Vec<(std::any::TypeId, &'static str)>,
    pub(crate) render: ErasedPrompt,
}

impl fmt::Debug for Prompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prompt")
            .field("name", &self.name)
            .field("title", &self.title)
            .finish_non_exhaustive()
    }
}

impl Prompt {
    /// A prompt named `name` rendered by `handler`.
    ///
    /// The handler is an async function of one of the [handler shapes](crate::Handler)
    /// whose input (`A: DeserializeOwned + JsonSchema`) lists the prompt's arguments (prompt
    /// arguments are strings on the wire) and whose output is an [`IntoPromptResult`].
    pub fn new<H, M>(name: impl Into<String>, handler: H) -> Self
    where
        H: Handler<M>,
        H::Input: DeserializeOwned + JsonSchema,
        H::Output: IntoPromptResult,
    {
        let handler = Arc::new(handler);
        let state_types = H::state_types();
        let render: ErasedPrompt = Arc::new(move |arguments: Value, ex: Exchange| {
            let args: H::Input = serde_json::from_value(arguments).map_err(|e| e.to_string())?;
            Ok(handler.start(
                args,
                &mut || ex.clone(),
                <H::Output as IntoPromptResult>::into_prompt_result,
                Token(()),
            ))
        });
        Self {
            name: name.into(),
            title: None,
            description: None,
            icons: Vec::new(),
            schema: schema::derive::<H::Input>(schema::Purpose::Input),
            state_types,
            render,
        }
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets the display title (not shown before 2025-06-18). Default is none.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description. Default is none.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds an icon (shown from 2025-11-25). Default is none.
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// The prompt arguments, from the argument type's top-level properties.
    pub(crate) fn arguments(&self) -> Result<Vec<Value>, String> {
        if !schema::is_object_rooted(&self.schema) {
            return Err("prompt arguments must be a struct (an object schema)".into());
        }
        let required: Vec<&str> = self
            .schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(properties) = self.schema.get("properties").and_then(Value::as_object) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(properties.len());
        for (name, property) in properties {
            let mut arg = Map::new();
            arg.insert("name".into(), Value::String(name.clone()));
            if let Some(title) = property.get("title").and_then(Value::as_str) {
                arg.insert("title".into(), Value::String(title.to_owned()));
            }
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                arg.insert("description".into(), Value::String(description.to_owned()));
            }
            if required.contains(&name.as_str()) {
                arg.insert("required".into(), Value::Bool(true));
            }
            out.push(Value::Object(arg));
        }
        Ok(out)
    }

    pub(crate) fn definition(&self, arguments: &[Value]) -> Value {
        let mut out = Map::new();
        out.insert("name".into(), Value::String(self.name.clone()));
        if let Some(title) = &self.title {
            out.insert("title".into(), Value::String(title.clone()));
        }
        if let Some(description) = &self.description {
            out.insert("description".into(), Value::String(description.clone()));
        }
        if !arguments.is_empty() {
            out.insert("arguments".into(), Value::Array(arguments.to_vec()));
        }
        if let Some(icons) = icons_value(&self.icons) {
            out.insert("icons".into(), icons);
        }
        Value::Object(out)
    }
}
