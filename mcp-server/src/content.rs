//! What handlers return, in the shared model of `mcp_wire::model`: content blocks, tool
//! results, resource contents, prompt messages.
//!
//! Each is the newest revision's shape; the adapter of the revision a call arrived on removes
//! what that revision cannot hold (a `resource_link` block before 2025-06-18,
//! `structuredContent` before 2025-06-18, and so on). This module only turns them into what
//! the adapters write.
//!
//! The conversions name every member of the model types they take apart (no `..`): a member
//! added to `CallToolResult` or `TextContent` in `mcp_wire::model` does not compile here until
//! it is either sent or left out on purpose, so it cannot be dropped without anyone noticing.

use mcp_wire::model::{CallToolResult, ContentBlock, ResourceContents, TextContent};
use serde_json::{Map, Value};

/// A content block's wire JSON. A plain text block (the usual one) is built directly; the
/// others go through serde.
pub(crate) fn block_value(block: ContentBlock) -> Value {
    match block {
        // Every member named: a text block with a member the fast path does not write goes
        // through serde.
        ContentBlock::Text(TextContent {
            text,
            annotations: None,
            meta: None,
            extra,
        }) if extra.is_empty() => {
            let mut out = Map::new();
            out.insert("type".into(), Value::from("text"));
            out.insert("text".into(), Value::String(text));
            Value::Object(out)
        }
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

/// The typed result the adapters write straight to the wire, with every member of the model.
pub(crate) fn tool_result(result: CallToolResult) -> mcp_adapters::ToolResult {
    // Every member named (no `..`): a new member of the model is a compile error here.
    let CallToolResult {
        // The adapter writes `resultType` as the revision has it (a tool result is always
        // `complete`; asking for input is the exchange's, not the result's).
        result_type: _,
        content,
        structured_content,
        is_error,
        meta,
        extra,
    } = result;
    let mut out = mcp_adapters::ToolResult::new(content.into_iter().map(block_value).collect())
        .with_is_error(is_error == Some(true));
    if let Some(structured) = structured_content {
        out = out.with_structured_content(structured);
    }
    if let Some(meta) = meta {
        out = out.with_meta(meta);
    }
    out.with_extra(extra)
}

/// Gives `contents` the MIME type its resource declares, unless it has its own.
pub(crate) fn fill_mime_type(contents: &mut ResourceContents, declared: Option<&str>) {
    let mime = contents.mime_type_mut();
    if mime.is_none() {
        *mime = declared.map(str::to_owned);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_have_their_wire_shape() {
        let cases = [
            (
                ContentBlock::text("hi"),
                json!({"type": "text", "text": "hi"}),
            ),
            (
                ContentBlock::image(b"ab", "image/png"),
                json!({"type": "image", "data": "YWI=", "mimeType": "image/png"}),
            ),
            (
                ContentBlock::resource_link("a://b", "b"),
                json!({"type": "resource_link", "uri": "a://b", "name": "b"}),
            ),
            (
                ContentBlock::embedded(ResourceContents::blob("a://b", b"ab")),
                json!({"type": "resource", "resource": {"uri": "a://b", "blob": "YWI="}}),
            ),
        ];
        for (block, wire) in cases {
            assert_eq!(serde_json::to_value(&block).unwrap(), wire);
            assert_eq!(block_value(block), wire);
        }
        // A text block with more than its text goes through serde and keeps it all.
        let mut text = TextContent::new("hi");
        text.extra.insert("x".into(), json!(1));
        assert_eq!(
            block_value(ContentBlock::Text(text)),
            json!({"type": "text", "text": "hi", "x": 1})
        );
    }

    #[test]
    fn tool_results_are_written_as_the_model_serializes_them() {
        let mut with_meta = CallToolResult::error("no");
        with_meta.meta = Some(json!({"k": 1}).as_object().unwrap().clone());
        for result in [
            CallToolResult::structured(json!({"sum": 3})),
            CallToolResult::error("no"),
            CallToolResult::success(Vec::new()),
            with_meta,
            every_member(),
        ] {
            let model = serde_json::to_value(&result).unwrap();
            assert_eq!(tool_result(result).into_value(), model);
        }
    }

    /// A tool result with every member of the model set (built with every member named, so
    /// a new member fails to compile here as well as in [`tool_result`]).
    fn every_member() -> CallToolResult {
        let mut text = TextContent::new("t");
        text.meta = Some(json!({"m": 1}).as_object().unwrap().clone());
        text.extra.insert("textExtra".into(), json!(true));
        let mut extra = mcp_wire::model::Extra::new();
        extra.insert("vendorField".into(), json!({"x": [1, 2]}));
        CallToolResult {
            result_type: None,
            content: vec![ContentBlock::Text(text), ContentBlock::text("plain")],
            structured_content: Some(json!({"sum": 3})),
            is_error: Some(true),
            meta: Some(json!({"k": 1}).as_object().unwrap().clone()),
            extra,
        }
    }

    /// Every member of the model reaches the wire: the bytes the newest revision's adapter
    /// writes for the converted result hold each of them, as the model serializes it.
    #[test]
    fn every_member_of_a_tool_result_reaches_the_wire() {
        let adapter = mcp_adapters::Adapter::new(mcp_adapters::Revision::LATEST);
        let model = serde_json::to_value(every_member()).unwrap();
        let context = mcp_adapters::ResultContext {
            server_info: None,
            server_info_projected: true,
            cache: mcp_adapters::CacheHint::NONE,
        };
        let written = adapter
            .encode_tool_result(
                mcp_wire::jsonrpc::Id::from(1),
                tool_result(every_member()),
                &context,
            )
            .to_value();
        let result = written["result"].as_object().unwrap();
        for (member, value) in model.as_object().unwrap() {
            assert_eq!(result.get(member), Some(value), "{member} in {written}");
        }
        assert_eq!(result["resultType"], "complete");
        // An unknown member never takes a named one's place.
        let mut clash = CallToolResult::success(Vec::new());
        clash.extra.insert("content".into(), json!("not blocks"));
        clash.extra.insert("resultType".into(), json!("bogus"));
        let value = tool_result(clash).into_value();
        assert_eq!(value, json!({"content": []}));
    }
}
