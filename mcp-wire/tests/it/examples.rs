//! Every example message published with the 2026-07-28 schema
//! (`spec-schemas/2026-07-28/examples/<TypeName>/*.json`) deserializes into its mcp-wire type and
//! serializes back to an equal JSON value.
//!
//! Each folder is mapped to one or more Rust types in `TABLE`; a folder without a mapping fails the
//! test, so nothing is skipped silently. Besides the round trip, each example must leave every
//! `extra` map empty (so a misspelled member cannot hide in `extra`), unless its entry says
//! otherwise, and may have to match a variant or value.
//!
//! The spec-schemas folder is `../shared/spec-schemas` relative to the workspace root, or
//! `$MCP_SPEC_SCHEMAS`. When it is missing the test prints a notice and passes, except with
//! `CI=true`, where it fails.

use std::fmt::Debug;
use std::path::PathBuf;

use mcp_wire::jsonrpc::{self, Decoded, ErrorObject};
use mcp_wire::model::*;
use mcp_wire::names::error_code;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

type Check = fn(&Value) -> Result<(), String>;

/// Deserializes `value` as `T`, applies `check`, requires every `extra` map to be empty when
/// `strict`, and requires serializing back to give `value`.
fn round_trip<T: DeserializeOwned + Serialize + Debug>(
    value: &Value,
    check: impl Fn(&T) -> bool,
    strict: bool,
) -> Result<(), String> {
    let typed: T =
        serde_json::from_value(value.clone()).map_err(|e| format!("does not deserialize: {e}"))?;
    if !check(&typed) {
        return Err(format!("deserialized to an unexpected value: {typed:?}"));
    }
    let debug = format!("{typed:?}");
    if strict && debug.contains("extra: {\"") {
        return Err(format!(
            "members were not recognised and landed in `extra`: {debug}"
        ));
    }
    let back = serde_json::to_value(&typed).map_err(|e| format!("does not serialize: {e}"))?;
    if back != *value {
        return Err(format!(
            "round trip differs\n   read: {value}\n  wrote: {back}"
        ));
    }
    Ok(())
}

macro_rules! entry {
    ($folder:literal => $ty:ty) => {
        entry!($folder => $ty, |_| true)
    };
    ($folder:literal => $ty:ty, $check:expr) => {
        entry!(@make $folder, $ty, $check, true)
    };
    ($folder:literal => $ty:ty, $check:expr, lenient) => {
        entry!(@make $folder, $ty, $check, false)
    };
    (@make $folder:literal, $ty:ty, $check:expr, $strict:expr) => {
        (
            $folder,
            stringify!($ty),
            (|value: &Value| round_trip::<$ty>(value, $check, $strict)) as Check,
        )
    };
}

fn table() -> Vec<(&'static str, &'static str, Check)> {
    vec![
        // Content blocks are checked through the tagged enum, which owns the `type` member.
        entry!("AudioContent" => ContentBlock, |c| matches!(c, ContentBlock::Audio(_))),
        entry!("EmbeddedResource" => ContentBlock, |c| matches!(c, ContentBlock::Resource(_))),
        entry!("ImageContent" => ContentBlock, |c| matches!(c, ContentBlock::Image(_))),
        entry!("ResourceLink" => ContentBlock, |c| matches!(c, ContentBlock::ResourceLink(_))),
        entry!("TextContent" => ContentBlock, |c| matches!(c, ContentBlock::Text(_))),
        entry!("ToolResultContent" => ContentBlock, |c| matches!(c, ContentBlock::ToolResult(_))),
        entry!("ToolUseContent" => ContentBlock, |c| matches!(c, ContentBlock::ToolUse(_))),
        entry!("BlobResourceContents" => BlobResourceContents),
        entry!("BlobResourceContents" => ResourceContents, |c| matches!(c, ResourceContents::Blob(_))),
        entry!("TextResourceContents" => TextResourceContents),
        entry!("TextResourceContents" => ResourceContents, |c| matches!(c, ResourceContents::Text(_))),
        entry!("Resource" => Resource),
        entry!("Root" => Root),
        entry!("Tool" => Tool),
        entry!("ClientCapabilities" => ClientCapabilities),
        entry!("ServerCapabilities" => ServerCapabilities),
        entry!("ModelPreferences" => ModelPreferences),
        entry!("SamplingMessage" => SamplingMessage),
        // Elicitation schemas, through the dispatcher.
        entry!("BooleanSchema" => PrimitiveSchema, |s| matches!(s, PrimitiveSchema::Boolean(_))),
        entry!("NumberSchema" => PrimitiveSchema, |s| matches!(s, PrimitiveSchema::Number(_))),
        entry!("StringSchema" => PrimitiveSchema, |s| matches!(s, PrimitiveSchema::String(_))),
        entry!("TitledMultiSelectEnumSchema" => PrimitiveSchema,
            |s| matches!(s, PrimitiveSchema::TitledMultiSelectEnum(_))),
        entry!("TitledSingleSelectEnumSchema" => PrimitiveSchema,
            |s| matches!(s, PrimitiveSchema::TitledSingleSelectEnum(_))),
        entry!("UntitledMultiSelectEnumSchema" => PrimitiveSchema,
            |s| matches!(s, PrimitiveSchema::UntitledMultiSelectEnum(_))),
        entry!("UntitledSingleSelectEnumSchema" => PrimitiveSchema,
            |s| matches!(s, PrimitiveSchema::UntitledSingleSelectEnum(_))),
        // Params.
        entry!("CallToolRequestParams" => CallToolRequestParams),
        entry!("CancelledNotificationParams" => CancelledNotificationParams),
        entry!("CompleteRequestParams" => CompleteRequestParams),
        entry!("CreateMessageRequestParams" => CreateMessageRequestParams),
        entry!("ElicitRequestFormParams" => ElicitRequestFormParams),
        entry!("ElicitRequestFormParams" => ElicitRequestParams, |p| matches!(p, ElicitRequestParams::Form(_))),
        entry!("ElicitRequestURLParams" => ElicitRequestUrlParams),
        entry!("ElicitRequestURLParams" => ElicitRequestParams, |p| matches!(p, ElicitRequestParams::Url(_))),
        entry!("GetPromptRequestParams" => GetPromptRequestParams),
        entry!("LoggingMessageNotificationParams" => LoggingMessageNotificationParams),
        entry!("PaginatedRequestParams" => PaginatedRequestParams),
        entry!("ProgressNotificationParams" => ProgressNotificationParams),
        entry!("ResourceUpdatedNotificationParams" => ResourceUpdatedNotificationParams),
        // Results.
        entry!("CallToolResult" => CallToolResult),
        entry!("CallToolResult" => MrtrResult<CallToolResult>, |r| matches!(r, MrtrResult::Complete(_))),
        entry!("CompleteResult" => CompleteResult),
        entry!("CreateMessageResult" => CreateMessageResult),
        entry!("CreateMessageResult" => InputResponse, |r| matches!(r, InputResponse::CreateMessage(_))),
        entry!("DiscoverResult" => DiscoverResult),
        entry!("ElicitResult" => ElicitResult),
        entry!("ElicitResult" => InputResponse, |r| matches!(r, InputResponse::Elicit(_))),
        entry!("GetPromptResult" => GetPromptResult),
        entry!("ListPromptsResult" => ListPromptsResult),
        entry!("ListResourceTemplatesResult" => ListResourceTemplatesResult),
        entry!("ListResourcesResult" => ListResourcesResult),
        entry!("ListRootsResult" => ListRootsResult),
        entry!("ListRootsResult" => InputResponse, |r| matches!(r, InputResponse::ListRoots(_))),
        entry!("ListToolsResult" => ListToolsResult),
        entry!("ReadResourceResult" => ReadResourceResult),
        entry!("SubscriptionsListenResult" => SubscriptionsListenResult),
        // MRTR.
        entry!("InputRequests" => InputRequests),
        entry!("InputResponses" => InputResponses),
        entry!("InputRequiredResult" => InputRequiredResult, |r| r.is_well_formed()),
        entry!("InputRequiredResult" => MrtrResult<CallToolResult>,
            |r| matches!(r, MrtrResult::InputRequired(_))),
        // Embedded input requests (no `jsonrpc`).
        entry!("CreateMessageRequest" => CreateMessageRequest),
        entry!("CreateMessageRequest" => InputRequest, |r| matches!(r, InputRequest::CreateMessage(_))),
        entry!("ElicitRequest" => ElicitRequest),
        entry!("ElicitRequest" => InputRequest, |r| matches!(r, InputRequest::Elicit(_))),
        // The published example carries an `id` that `ListRootsRequest` does not define; it is
        // kept in `extra`.
        entry!("ListRootsRequest" => ListRootsRequest, |r| r.extra.contains_key("id"), lenient),
        entry!("ListRootsRequest" => InputRequest, |r| matches!(r, InputRequest::ListRoots(_)), lenient),
        // Whole requests.
        entry!("CallToolRequest" => CallToolRequest),
        entry!("CompleteRequest" => CompleteRequest),
        entry!("DiscoverRequest" => DiscoverRequest),
        entry!("GetPromptRequest" => GetPromptRequest),
        entry!("ListPromptsRequest" => ListPromptsRequest),
        entry!("ListResourceTemplatesRequest" => ListResourceTemplatesRequest),
        entry!("ListResourcesRequest" => ListResourcesRequest),
        entry!("ListToolsRequest" => ListToolsRequest),
        entry!("ReadResourceRequest" => ReadResourceRequest),
        entry!("SubscriptionsListenRequest" => SubscriptionsListenRequest),
        // Whole responses.
        entry!("CallToolResultResponse" => CallToolResultResponse),
        entry!("CompleteResultResponse" => CompleteResultResponse),
        entry!("DiscoverResultResponse" => DiscoverResultResponse),
        entry!("GetPromptResultResponse" => GetPromptResultResponse),
        entry!("ListPromptsResultResponse" => ListPromptsResultResponse),
        entry!("ListResourceTemplatesResultResponse" => ListResourceTemplatesResultResponse),
        entry!("ListResourcesResultResponse" => ListResourcesResultResponse),
        entry!("ListToolsResultResponse" => ListToolsResultResponse),
        entry!("ReadResourceResultResponse" => ReadResourceResultResponse),
        entry!("SubscriptionsListenResultResponse" => SubscriptionsListenResultResponse),
        // Whole notifications.
        entry!("CancelledNotification" => CancelledNotification),
        entry!("LoggingMessageNotification" => LoggingMessageNotification),
        entry!("ProgressNotification" => ProgressNotification),
        entry!("PromptListChangedNotification" => PromptListChangedNotification),
        entry!("ResourceListChangedNotification" => ResourceListChangedNotification),
        entry!("ResourceUpdatedNotification" => ResourceUpdatedNotification),
        entry!("SubscriptionsAcknowledgedNotification" => SubscriptionsAcknowledgedNotification),
        entry!("ToolListChangedNotification" => ToolListChangedNotification),
        // Errors: bare error objects, and whole error responses with typed data.
        entry!("InternalError" => ErrorObject, |e| e.code == error_code::INTERNAL_ERROR),
        entry!("InvalidParamsError" => ErrorObject, |e| e.code == error_code::INVALID_PARAMS),
        entry!("MethodNotFoundError" => ErrorObject, |e| e.code == error_code::METHOD_NOT_FOUND),
        entry!("ParseError" => ErrorObject, |e| e.code == error_code::PARSE_ERROR),
        entry!("HeaderMismatchError" => HeaderMismatchError,
            |e| e.error.code == error_code::HEADER_MISMATCH),
        entry!("MissingRequiredClientCapabilityError" => MissingRequiredClientCapabilityError,
            |e| e.error.code == error_code::MISSING_REQUIRED_CLIENT_CAPABILITY
                && e.error.data.as_ref().is_some_and(|d| d.required_capabilities.elicitation.is_some())),
        entry!("UnsupportedProtocolVersionError" => UnsupportedProtocolVersionError,
            |e| e.error.code == error_code::UNSUPPORTED_PROTOCOL_VERSION
                && e.error.data.as_ref().is_some_and(|d| !d.supported.is_empty())),
    ]
}

fn spec_schemas() -> Option<PathBuf> {
    let dir = std::env::var_os("MCP_SPEC_SCHEMAS").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/spec-schemas"
            ))
        },
        PathBuf::from,
    );
    if dir.is_dir() {
        return Some(dir);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        !ci,
        "spec-schemas folder {} is missing (CI=true)",
        dir.display()
    );
    eprintln!(
        "notice: spec-schemas folder {} not found; skipping",
        dir.display()
    );
    None
}

#[test]
fn every_2026_07_28_example_round_trips() {
    let Some(root) = spec_schemas() else { return };
    let examples = root.join("2026-07-28").join("examples");
    let table = table();
    let mut used = vec![false; table.len()];
    let mut failures = Vec::new();
    let mut files = 0;

    let mut folders: Vec<_> = std::fs::read_dir(&examples)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", examples.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    folders.sort();
    assert!(
        !folders.is_empty(),
        "no example folders in {}",
        examples.display()
    );

    for folder in folders {
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        let checks: Vec<usize> = (0..table.len()).filter(|&i| table[i].0 == name).collect();
        if checks.is_empty() {
            failures.push(format!("{name}: no Rust type is mapped to this folder"));
            continue;
        }
        let mut paths: Vec<_> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        paths.sort();
        for path in paths {
            files += 1;
            let label = format!("{name}/{}", path.file_name().unwrap().to_string_lossy());
            let text = std::fs::read_to_string(&path).unwrap();
            let value: Value = match serde_json::from_str(&text) {
                Ok(value) => value,
                Err(e) => {
                    failures.push(format!("{label}: not JSON: {e}"));
                    continue;
                }
            };
            for &i in &checks {
                used[i] = true;
                if let Err(e) = (table[i].2)(&value) {
                    failures.push(format!("{label} as {}: {e}", table[i].1));
                }
            }
            // Whole JSON-RPC messages also go through the envelope decoder and back.
            if value.get("jsonrpc").is_some() {
                match jsonrpc::decode(text.as_bytes()) {
                    Decoded::Single(Ok(message)) => {
                        let back = serde_json::to_value(&message).unwrap();
                        if back != value {
                            failures.push(format!("{label} via jsonrpc::decode: wrote {back}"));
                        }
                    }
                    other => failures.push(format!("{label} via jsonrpc::decode: {other:?}")),
                }
            }
        }
    }

    for (i, (folder, ty, _)) in table.iter().enumerate() {
        if !used[i] {
            failures.push(format!("mapping {folder} => {ty} matched no example file"));
        }
    }
    assert!(files > 0, "no example files found");
    assert!(
        failures.is_empty(),
        "{} of {files} example files failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{files} example files round-tripped");
}
