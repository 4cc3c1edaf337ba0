//! Typed results: the calls of [`Client`], read into `mcp_wire::model` types.
//!
//! The client's own methods return results as `serde_json::Value`, exactly as the server sent
//! them; that stays the escape hatch for fields no model type knows yet and for servers that
//! bend the schema. [`Client::typed`] reads the same results into the model types, which are one
//! superset of every revision (a field a revision lacks is `None`, unknown fields are kept in
//! `extra`).

use mcp_wire::model::{
    CallToolResult, CompleteResult, GetPromptResult, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, Tool,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::calls::ListKind;
use crate::client::{CallOptions, Client};
use crate::error::Error;

/// The typed view of a [`Client`], from [`Client::typed`].
///
/// Each method makes the same request as the `Client` method of the same name (same `_meta`,
/// headers, asking, cache, timeout and cancellation) and reads its result into a model type.
/// A result that does not have the type's shape is [`crate::ErrorKind::Protocol`]; in a list,
/// an item that does not is left out with a warning (`tracing`), so one malformed definition
/// does not hide the others.
#[derive(Debug, Clone, Copy)]
pub struct Typed<'a> {
    client: &'a Client,
}

impl Client {
    /// The typed view: the same calls, with results read into `mcp_wire::model` types.
    ///
    /// ```no_run
    /// # async fn run(client: mcp_client::Client) -> Result<(), mcp_client::Error> {
    /// for tool in client.typed().list_tools().await? {
    ///     println!("{}: {}", tool.name, tool.description.unwrap_or_default());
    /// }
    /// let result = client.typed().call_tool("add", serde_json::json!({"a": 2, "b": 3})).await?;
    /// if result.is_error == Some(true) {
    ///     eprintln!("the tool failed");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn typed(&self) -> Typed<'_> {
        Typed { client: self }
    }
}

fn read<T: DeserializeOwned>(what: &str, value: Value) -> Result<T, Error> {
    serde_json::from_value(value)
        .map_err(|e| Error::protocol(format!("the {what} result does not have its shape: {e}")))
}

fn read_items<T: DeserializeOwned>(kind: ListKind, items: Vec<Value>) -> Vec<T> {
    items
        .into_iter()
        .filter_map(|item| {
            let name = item
                .get("name")
                .or_else(|| item.get("uri"))
                .or_else(|| item.get("uriTemplate"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            match serde_json::from_value(item) {
                Ok(typed) => Some(typed),
                Err(e) => {
                    tracing::warn!(?kind, item = name, error = %e, "list item left out: malformed");
                    None
                }
            }
        })
        .collect()
}

impl Typed<'_> {
    /// Every tool, following all pages ([`Client::list_tools`]).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        let items = self.client.list_tools().await?;
        Ok(read_items(ListKind::Tools, items))
    }

    /// Every resource, following all pages ([`Client::list_resources`]).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        let items = self.client.list_resources().await?;
        Ok(read_items(ListKind::Resources, items))
    }

    /// Every resource template, following all pages ([`Client::list_resource_templates`]).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        let items = self.client.list_resource_templates().await?;
        Ok(read_items(ListKind::ResourceTemplates, items))
    }

    /// Every prompt, following all pages ([`Client::list_prompts`]).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        let items = self.client.list_prompts().await?;
        Ok(read_items(ListKind::Prompts, items))
    }

    /// Calls a tool ([`Client::call_tool`]). A tool failure is `is_error: Some(true)`, not an
    /// `Err`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, CallOptions::new())
            .await
    }

    /// [`Typed::call_tool`] with per-call options ([`Client::call_tool_with`]).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, Error> {
        let result = self.client.call_tool_with(name, arguments, options).await?;
        read("tools/call", result)
    }

    /// Reads a resource ([`Client::read_resource`]).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        read("resources/read", self.client.read_resource(uri).await?)
    }

    /// Gets a prompt ([`Client::get_prompt`]).
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<GetPromptResult, Error> {
        read(
            "prompts/get",
            self.client.get_prompt(name, arguments).await?,
        )
    }

    /// Asks for completions of one argument ([`Client::complete`]).
    pub async fn complete(
        &self,
        reference: Value,
        argument: &str,
        value: &str,
        context: Option<Value>,
    ) -> Result<CompleteResult, Error> {
        let result = self
            .client
            .complete(reference, argument, value, context)
            .await?;
        read("completion/complete", result)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn malformed_items_are_left_out_and_malformed_results_are_protocol_errors() {
        let tools: Vec<Tool> = read_items(
            ListKind::Tools,
            vec![
                json!({"name": "ok", "inputSchema": {"type": "object"}}),
                json!({"name": "no schema"}),
                json!(42),
            ],
        );
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "ok");
        let result: CallToolResult = read(
            "tools/call",
            json!({"content": [{"type": "text", "text": "hi"}], "isError": false, "x": 1}),
        )
        .unwrap();
        assert_eq!(result.content[0].as_text(), Some("hi"));
        assert_eq!(result.extra.get("x"), Some(&json!(1)));
        let error = read::<CallToolResult>("tools/call", json!({"content": 5})).unwrap_err();
        assert_eq!(error.kind(), crate::ErrorKind::Protocol);
    }
}
