//! Which operation a call is, and the small ones answered here: `initialize` and
//! `server/discover`, ping, the log level, the lists, completion and extension methods. The
//! handler calls (tools, resources, prompts) go on to `invoke`.

use std::sync::Arc;

use futures::FutureExt as _;
use mcp_adapters::{Adapter, Call, Failure, Operation, Outcome};
use serde_json::{Value, json};

use super::invoke::Invocation;
use super::session::stated_nothing;
use super::{Context, Done, declared_extension, panicked};
use crate::completion::{Completion, CompletionRequest};
use crate::exchange::CancelHandle;
use crate::page::{ListKind, page};
use crate::server::{Catalog, Served};
use crate::sink::Sink;
use crate::tool::panic_message;

impl Served {
    /// Routes a call to what serves its operation.
    pub(super) async fn call(
        &self,
        adapter: Adapter,
        call: &mut Call,
        ctx: &Context,
        sink: &Sink,
        cancel: &CancelHandle,
    ) -> Done {
        let registry = &*self.registry;
        if !adapter.features().per_request_meta {
            let connection = ctx.conn();
            // Other calls read the connection's client through their exchange, shared.
            if call.operation == Operation::Describe {
                call.client.fill_from(connection.client());
            }
            if call.operation != Operation::SetLogLevel {
                call.log_level = connection.log_level;
            }
        }
        let view = registry.view(adapter);
        match call.operation {
            Operation::Describe => self.describe(adapter, call, ctx),
            Operation::HandshakeComplete
            | Operation::Progress
            | Operation::RootsListChanged
            | Operation::Notification => Done::Silent,
            Operation::Cancelled => {
                if let Some(id) = call.cancelled_request() {
                    ctx.cancel(&id);
                }
                Done::Silent
            }
            Operation::Ping => Done::value(json!({})),
            Operation::SetLogLevel => match call.log_level {
                Some(level) => {
                    ctx.conn().log_level = Some(level);
                    Done::value(json!({}))
                }
                None => Done::failure(Failure::invalid_params(
                    "logging/setLevel needs a valid level",
                )),
            },
            Operation::ListTools => match ctx
                .owner()
                .auth
                .filter(crate::exchange::AuthPrincipal::hides_tools)
            {
                // Only what the token may call (the resource server's option): filtered per
                // request, so paging runs over the principal's own list.
                Some(auth) => {
                    let callable: Vec<(String, Value)> = view
                        .tools
                        .iter()
                        .filter(|(name, _)| {
                            registry
                                .tool(name)
                                .is_none_or(|entry| auth.0.scopes.contains_all(&entry.tool.scopes))
                        })
                        .cloned()
                        .collect();
                    list(registry, ListKind::Tools, "tools", &callable, call)
                }
                None => list(registry, ListKind::Tools, "tools", &view.tools, call),
            },
            Operation::ListResources => list(
                registry,
                ListKind::Resources,
                "resources",
                &view.resources,
                call,
            ),
            Operation::ListResourceTemplates => list(
                registry,
                ListKind::Templates,
                "resourceTemplates",
                &view.templates,
                call,
            ),
            Operation::ListPrompts => {
                list(registry, ListKind::Prompts, "prompts", &view.prompts, call)
            }
            // Boxed like the other handlers: the driver of every call then stays small
            // enough for the allocator's per-thread cache (about 1 KB), where a larger box
            // takes glibc's slow path on every call.
            Operation::CallTool => {
                Box::pin(self.call_tool(invocation(adapter, call, ctx, sink, cancel), view)).await
            }
            Operation::ReadResource => {
                Box::pin(self.read_resource(invocation(adapter, call, ctx, sink, cancel))).await
            }
            Operation::GetPrompt => {
                Box::pin(self.get_prompt(invocation(adapter, call, ctx, sink, cancel))).await
            }
            Operation::Complete => Box::pin(self.complete(call)).await,
            Operation::Listen => Box::pin(self.listen(adapter, call, ctx, sink, cancel)).await,
            Operation::Subscribe => self.subscribe(call, ctx),
            Operation::Unsubscribe => self.unsubscribe(call, ctx),
            Operation::Extension => Box::pin(self.extension(adapter, call, ctx)).await,
            _ => Done::failure(Failure::unknown_method(&call.method)),
        }
    }

    /// A method some extension adds; `-32601` when none does.
    async fn extension(&self, adapter: Adapter, call: &mut Call, ctx: &Context) -> Done {
        let settings = self.settings();
        let Some((index, handler)) = settings.extension_methods.get(&*call.method) else {
            return Done::failure(Failure::unknown_method(&call.method));
        };
        let extension = &settings.extensions[*index];
        let client_settings = declared_extension(adapter, call, ctx, &extension.id);
        if extension.required && client_settings.is_none() {
            return Done::failure(Failure::missing_capability(
                json!({"extensions": {extension.id.as_str(): {}}}),
            ));
        }
        let mut params = std::mem::take(&mut call.params);
        // The revision's reserved `_meta` members are the protocol's, not the extension's.
        if let Some(Value::Object(meta)) = params.get_mut("_meta") {
            meta.retain(|key, _| !key.starts_with(mcp_wire::names::meta::PREFIX));
            if meta.is_empty() {
                params.remove("_meta");
            }
        }
        let request = crate::ExtensionRequest {
            method: call.method.to_string(),
            params,
            client_settings,
            principal: ctx.principal(),
            namespace: ctx.inner.namespace.clone(),
        };
        match std::panic::AssertUnwindSafe(handler(request))
            .catch_unwind()
            .await
        {
            Ok(Ok(result)) => Done::value(result),
            Ok(Err(crate::ExtensionError::InvalidParams(message))) => {
                Done::failure(Failure::invalid_params(message))
            }
            Ok(Err(crate::ExtensionError::Internal(message))) => {
                Done::failure(Failure::internal(message))
            }
            Err(panic) => Done::failure(panicked(&call.method, &panic_message(&*panic))),
        }
    }

    fn describe(&self, adapter: Adapter, call: &mut Call, ctx: &Context) -> Done {
        let (registry, settings) = (&*self.registry, self.settings());
        if adapter.has_handshake() {
            let mut connection = ctx.conn();
            // The handshake's revision holds for the rest of the connection.
            connection.adapter = Some(adapter);
            // Keep the client's identity and capabilities for the life of the connection
            // (nothing reads them from the call after this).
            let client = std::mem::take(&mut call.client);
            connection.client = (!stated_nothing(&client)).then(|| Arc::new(client));
        }
        let view = registry.view(adapter);
        let result = adapter.describe_result(
            &settings.adapters,
            &settings.server_info,
            &view.capabilities,
            settings.instructions.as_deref(),
        );
        Done::Send(Outcome::Value(result), settings.list_cache)
    }

    async fn complete(&self, call: &Call) -> Done {
        let Some(completer) = &self.settings().completer else {
            return Done::value(Completion::default().to_value());
        };
        let Some(request) = CompletionRequest::from_params(&Value::Object(call.params.clone()))
        else {
            return Done::failure(Failure::invalid_params(
                "completion/complete needs `ref` and `argument`",
            ));
        };
        match std::panic::AssertUnwindSafe((completer.0)(request))
            .catch_unwind()
            .await
        {
            Ok(completion) => Done::value(completion.to_value()),
            Err(panic) => Done::failure(panicked("completion", &panic_message(&*panic))),
        }
    }
}

fn list(
    registry: &Catalog,
    kind: ListKind,
    field: &str,
    entries: &[(String, Value)],
    call: &Call,
) -> Done {
    let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    let Ok((range, next)) = page(
        kind,
        &keys,
        call.cursor.as_deref(),
        registry.settings.page_size,
    ) else {
        return Done::failure(Failure::invalid_params("unknown cursor"));
    };
    let mut result = serde_json::Map::new();
    result.insert(
        field.into(),
        Value::Array(entries[range].iter().map(|(_, v)| v.clone()).collect()),
    );
    if let Some(next) = next {
        result.insert("nextCursor".into(), Value::String(next));
    }
    Done::Send(
        Outcome::Value(Value::Object(result)),
        registry.settings.list_cache,
    )
}

/// A handler call's [`Invocation`].
fn invocation<'a>(
    adapter: Adapter,
    call: &'a mut Call,
    ctx: &'a Context,
    sink: &'a Sink,
    cancel: &'a CancelHandle,
) -> Invocation<'a> {
    Invocation {
        adapter,
        call,
        ctx,
        sink,
        cancel,
    }
}
