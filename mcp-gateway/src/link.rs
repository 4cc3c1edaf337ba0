//! The upstream link: our client, bounded, and the forwarding of each downstream request.
//!
//! Every forwarded request waits for one of the link's call permits first
//! ([`GatewayBuilder::max_upstream_calls`](crate::GatewayBuilder::max_upstream_calls)), so
//! downstream clients cannot make the gateway hold more upstream requests than that.

use std::sync::Arc;
use std::time::Duration;

use mcp_client::{CallOptions, Client};
use mcp_server::{
    CallToolResult, Completion, CompletionRef, CompletionRequest, Exchange, GetPromptResult,
    Interrupt, PromptError, ResourceContents, ResourceError, ToolError,
};
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use crate::relay::{Call, InFlight, outside_calls};

/// The JSON-RPC code of "resource not found" on 2024-11-05 to 2025-11-25.
const RESOURCE_NOT_FOUND: i64 = -32002;
/// Invalid params (also "resource not found" on 2026-07-28).
const INVALID_PARAMS: i64 = -32602;
/// The `_meta` prefix reserved for the protocol: such keys describe the upstream hop and are
/// not passed on (the downstream server writes its own).
const PROTOCOL_META_PREFIX: &str = "io.modelcontextprotocol/";

/// The upstream client with its bounds. Shared by every declaration of the catalog.
pub(crate) struct Link {
    pub(crate) client: Client,
    permits: Semaphore,
    call_timeout: Option<Duration>,
    /// The relay's calls in flight, when the upstream's questions are relayed.
    in_flight: Option<Arc<InFlight>>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("client", &self.client)
            .field("available_permits", &self.permits.available_permits())
            .field("call_timeout", &self.call_timeout)
            .finish()
    }
}

impl Link {
    pub(crate) fn new(
        client: Client,
        max_calls: usize,
        call_timeout: Option<Duration>,
        in_flight: Option<Arc<InFlight>>,
    ) -> Self {
        Self {
            client,
            permits: Semaphore::new(max_calls),
            call_timeout,
            in_flight,
        }
    }

    /// Waits for a call permit. The semaphore is never closed, so this only waits.
    async fn permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.permits.acquire().await.ok()
    }

    fn options(&self) -> CallOptions {
        match self.call_timeout {
            Some(timeout) => CallOptions::new().timeout(timeout),
            None => CallOptions::new(),
        }
    }

    /// `tools/call` upstream: the downstream call's progress follows the upstream's, and a
    /// downstream cancellation drops the upstream call (which cancels it upstream).
    pub(crate) async fn call_tool(
        self: Arc<Self>,
        name: Arc<str>,
        arguments: Value,
        ex: Exchange,
    ) -> Result<CallToolResult, ToolError> {
        let call = Call::new(ex.clone());
        let _registered = self.in_flight.as_ref().map(|f| f.register(&call));
        let forward = call.scope(async {
            let _permit = self.permit().await;
            let progress = ex.clone();
            let options = self.options().on_progress(move |p| {
                progress.progress(p.progress, p.total, p.message.as_deref());
            });
            self.client.call_tool_with(&name, arguments, options).await
        });
        let result = tokio::select! {
            biased;
            // A relayed question ended the downstream call (it goes back as the question).
            interrupt = call.interrupted() => return Err(interrupt.into()),
            () = ex.cancelled() => return Err(Interrupt::Cancelled.into()),
            result = forward => result,
        };
        if let Some(interrupt) = call.interruption() {
            return Err(interrupt.into());
        }
        match result {
            Ok(value) => {
                let mut result: CallToolResult = serde_json::from_value(value).map_err(|e| {
                    ToolError::new(format!(
                        "the upstream's tools/call result is unreadable: {e}"
                    ))
                })?;
                result.result_type = None;
                strip_protocol_meta(&mut result.meta);
                Ok(result)
            }
            // A protocol error upstream: the tool could not run.
            Err(e) => Err(ToolError::new(format!("upstream: {e}"))),
        }
    }

    /// `resources/read` upstream.
    pub(crate) async fn read_resource(
        self: Arc<Self>,
        uri: String,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        let _permit = self.permit().await;
        let read = outside_calls(self.client.typed().read_resource(&uri)).await;
        match read {
            Ok(read) => Ok(read.contents),
            Err(e) if matches!(e.code(), Some(RESOURCE_NOT_FOUND | INVALID_PARAMS)) => {
                Err(ResourceError::NotFound(uri))
            }
            Err(e) => Err(ResourceError::Failed(format!("upstream: {e}"))),
        }
    }

    /// `prompts/get` upstream.
    pub(crate) async fn get_prompt(
        self: Arc<Self>,
        name: Arc<str>,
        arguments: Value,
    ) -> Result<GetPromptResult, PromptError> {
        let _permit = self.permit().await;
        // An empty argument object is sent as none (as a client that has none would).
        let arguments = match arguments {
            Value::Object(map) if map.is_empty() => Value::Null,
            other => other,
        };
        let got = outside_calls(self.client.typed().get_prompt(&name, arguments)).await;
        match got {
            Ok(mut prompt) => {
                prompt.result_type = None;
                strip_protocol_meta(&mut prompt.meta);
                Ok(prompt)
            }
            Err(e) if e.code() == Some(INVALID_PARAMS) => Err(PromptError::InvalidArguments(
                e.message().unwrap_or("refused upstream").to_owned(),
            )),
            Err(e) => Err(PromptError::Failed(format!("upstream: {e}"))),
        }
    }

    /// `completion/complete` upstream; no values when the upstream fails.
    pub(crate) async fn complete(self: Arc<Self>, request: CompletionRequest) -> Completion {
        let reference = match &request.reference {
            CompletionRef::Prompt(name) => json!({"type": "ref/prompt", "name": name}),
            CompletionRef::Resource(uri) => json!({"type": "ref/resource", "uri": uri}),
            _ => return Completion::default(),
        };
        let context = (!request.context.is_empty()).then(|| {
            let arguments: Map<String, Value> = request
                .context
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            json!({"arguments": arguments})
        });
        let _permit = self.permit().await;
        let answer = outside_calls(self.client.complete(
            reference,
            &request.argument,
            &request.value,
            context,
        ))
        .await;
        match answer {
            Ok(result) => completion_of(&result),
            Err(e) => {
                tracing::debug!(error = %e, "upstream completion/complete failed");
                Completion::default()
            }
        }
    }
}

/// Reads an upstream `CompleteResult`.
fn completion_of(result: &Value) -> Completion {
    let completion = &result["completion"];
    let values = completion["values"]
        .as_array()
        .map(|values| {
            values
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Completion {
        values,
        total: completion["total"].as_u64(),
        has_more: completion["hasMore"].as_bool().unwrap_or(false),
    }
}

/// Drops the protocol's own `_meta` keys of the upstream hop; the rest is the tool's.
fn strip_protocol_meta(meta: &mut Option<Map<String, Value>>) {
    if let Some(map) = meta {
        map.retain(|key, _| !key.starts_with(PROTOCOL_META_PREFIX));
        if map.is_empty() {
            *meta = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_meta_is_not_passed_on() {
        let mut meta = Some(
            json!({"io.modelcontextprotocol/serverInfo": {}, "app/trace": "x"})
                .as_object()
                .cloned()
                .unwrap(),
        );
        strip_protocol_meta(&mut meta);
        assert_eq!(meta.unwrap().keys().collect::<Vec<_>>(), ["app/trace"]);
        let mut only = json!({"io.modelcontextprotocol/x": 1}).as_object().cloned();
        strip_protocol_meta(&mut only);
        assert!(only.is_none());
    }

    #[test]
    fn completions_are_read_leniently() {
        let read = completion_of(
            &json!({"completion": {"values": ["a", 3, "b"], "total": 9, "hasMore": true}}),
        );
        assert_eq!(read.values, ["a", "b"]);
        assert_eq!(read.total, Some(9));
        assert!(read.has_more);
        assert_eq!(completion_of(&json!("garbage")), Completion::default());
    }
}
