//! What handlers return, in the shared model of `mcp_wire::model`: content blocks, tool
//! results, resource contents, prompt messages.
//!
//! Each is the newest revision's shape; the adapter of the revision a call arrived on removes
//! what that revision cannot hold (a `resource_link` block before 2025-06-18,
//! `structuredContent` before 2025-06-18, and so on). This module only turns them into what
//! the adapters write.

use mcp_wire::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value};

/// A content block's wire JSON. A plain text block (the usual one) is built directly; the
/// others go through serde.
pub(crate) fn block_value(block: ContentBlock) -> Value {
    match block {
        ContentBlock::Text(text)
            if text.annotations.is_none() && text.meta.is_none() && text.extra.is_empty() =>
        {
            let mut out = Map::new();
            out.insert("type".into(), Value::from("text"));
            out.insert("text".into(), Value::String(text.text));
            Value::Object(out)
        }
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

/// The typed result the adapters write straight to the wire. `resultType` is the adapter's
/// to write; members the model does not know (`extra`) are not sent.
pub(crate) fn tool_result(result: CallToolResult) -> mcp_adapters::ToolResult {
    let mut out =
        mcp_adapters::ToolResult::new(result.content.into_iter().map(block_value).collect())
            .with_is_error(result.is_error == Some(true));
    if let Some(structured) = result.structured_content {
        out = out.with_structured_content(structured);
    }
    if let Some(meta) = result.meta {
        out = out.with_meta(meta);
    }
    out
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
        let mut text = mcp_wire::model::TextContent::new("hi");
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
        ] {
            let model = serde_json::to_value(&result).unwrap();
            assert_eq!(tool_result(result).into_value(), model);
        }
    }
}
