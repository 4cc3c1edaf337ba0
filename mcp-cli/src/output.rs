//! Human output: aligned tables, tool results, resource contents, prompt messages.

use std::fmt::Write as _;
use std::io::Write as _;

use serde_json::Value;

use crate::error::CliError;

/// Lays `rows` out under `headers` in aligned columns separated by two spaces. The last column is
/// not padded, so no line ends in spaces. Cells are cut at their first line.
pub(crate) fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let cells: Vec<Vec<String>> =
        std::iter::once(headers.iter().map(|h| (*h).to_owned()).collect())
            .chain(rows.iter().cloned())
            .map(|row| row.into_iter().map(|c| first_line(&c)).collect())
            .collect();
    let columns = headers.len();
    let mut widths = vec![0usize; columns];
    for row in &cells {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &cells {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate().take(columns) {
            if i + 1 == columns {
                line.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_owned()
}

/// A string member, or `""`.
pub(crate) fn text_of<'a>(item: &'a Value, key: &str) -> &'a str {
    item.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A tool's arguments as `name:type`, required first-class, optional ones with a `?`:
/// `a:integer b?:string`.
pub(crate) fn tool_arguments(tool: &Value) -> String {
    let Some(schema) = tool.get("inputSchema") else {
        return String::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let mut words = Vec::new();
    // The argument convention's answer slots (2025-03-26, 2024-11-05) are plumbing, not input.
    let plumbing = ["mcpAnswers", "mcpState"];
    for (name, property) in properties
        .iter()
        .filter(|(n, _)| !plumbing.contains(&n.as_str()))
    {
        let kind = match property.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(types)) => types
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("|"),
            _ => "any".to_owned(),
        };
        let mark = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        words.push(format!("{name}{mark}:{kind}"));
    }
    words.join(" ")
}

/// A prompt's arguments, optional ones with a `?`: `name topic?`.
pub(crate) fn prompt_arguments(prompt: &Value) -> String {
    prompt
        .get("arguments")
        .and_then(Value::as_array)
        .map(|args| {
            args.iter()
                .map(|a| {
                    let required = a.get("required").and_then(Value::as_bool) == Some(true);
                    format!("{}{}", text_of(a, "name"), if required { "" } else { "?" })
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The description, else the title.
pub(crate) fn describe(item: &Value) -> String {
    let description = text_of(item, "description");
    if description.is_empty() {
        text_of(item, "title").to_owned()
    } else {
        description.to_owned()
    }
}

/// The content blocks of a tool result or prompt message, as text for a person.
pub(crate) fn content(blocks: &[Value]) -> String {
    let mut out = String::new();
    for block in blocks {
        let line = match text_of(block, "type") {
            "text" => text_of(block, "text").to_owned(),
            kind @ ("image" | "audio") => format!(
                "[{kind} {}, {} bytes of base64]",
                text_of(block, "mimeType"),
                text_of(block, "data").len()
            ),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                resource_contents(std::slice::from_ref(&resource))
                    .trim_end()
                    .to_owned()
            }
            "resource_link" => format!(
                "[link] {} {}",
                text_of(block, "uri"),
                text_of(block, "name")
            ),
            _ => block.to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The contents of a `resources/read` result: a lone text printed as it is, several under a
/// header line each, binary ones summarized.
pub(crate) fn resource_contents(contents: &[Value]) -> String {
    let mut out = String::new();
    let several = contents.len() > 1;
    for item in contents {
        if several {
            let _ = writeln!(
                out,
                "== {} ({})",
                text_of(item, "uri"),
                text_of(item, "mimeType")
            );
        }
        if let Some(text) = item.get("text").and_then(Value::as_str) {
            out.push_str(text);
            if !text.ends_with('\n') {
                out.push('\n');
            }
        } else if let Some(blob) = item.get("blob").and_then(Value::as_str) {
            let _ = writeln!(
                out,
                "[blob {} {}, {} bytes of base64]",
                text_of(item, "uri"),
                text_of(item, "mimeType"),
                blob.len()
            );
        }
    }
    out
}

/// The messages of a `prompts/get` result: `[role] text`.
pub(crate) fn prompt_messages(result: &Value) -> String {
    let mut out = String::new();
    if let Some(description) = result.get("description").and_then(Value::as_str) {
        let _ = writeln!(out, "# {description}");
    }
    for message in result
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = text_of(message, "role");
        let blocks = match message.get("content") {
            Some(Value::Array(blocks)) => blocks.clone(),
            Some(block) => vec![block.clone()],
            None => Vec::new(),
        };
        let _ = write!(out, "[{role}] {}", content(&blocks));
    }
    out
}

/// The most completion values shown (`mcp complete`) or passed to the console's page: the
/// spec caps a server's answer at 100; a server that sends more is cut here, and `hasMore`
/// says so.
pub(crate) const MAX_COMPLETIONS: usize = 100;

/// Cuts `completion.values` of a `completion/complete` result to [`MAX_COMPLETIONS`], setting
/// `hasMore` and keeping (or setting) `total` when it cut.
pub(crate) fn bound_completion(result: &mut Value) {
    let Some(completion) = result.get_mut("completion").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(values) = completion.get_mut("values").and_then(Value::as_array_mut) else {
        return;
    };
    if values.len() <= MAX_COMPLETIONS {
        return;
    }
    let all = values.len();
    values.truncate(MAX_COMPLETIONS);
    completion.insert("hasMore".into(), Value::Bool(true));
    completion
        .entry("total")
        .or_insert_with(|| serde_json::json!(all));
}

/// Writes `text` on stdout.
pub(crate) fn print(text: &str) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// Writes `value` on stdout as pretty JSON.
pub(crate) fn print_json(value: &Value) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    print(&format!("{text}\n"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tables_align_and_do_not_trail() {
        let out = table(
            &["NAME", "ARGUMENTS", "DESCRIPTION"],
            &[
                vec![
                    "add".into(),
                    "a:integer b:integer".into(),
                    "Adds.\nMore".into(),
                ],
                vec!["echo".into(), "".into(), "".into()],
            ],
        );
        assert_eq!(
            out,
            "NAME  ARGUMENTS            DESCRIPTION\nadd   a:integer b:integer  Adds.\necho\n"
        );
    }

    #[test]
    fn tool_and_prompt_arguments() {
        let tool = json!({"inputSchema": {"type": "object", "properties": {
            "a": {"type": "integer"}, "b": {"type": ["string", "null"]}, "c": {},
            "mcpAnswers": {"type": "object"}, "mcpState": {"type": "string"}}, "required": ["a"]}});
        assert_eq!(tool_arguments(&tool), "a:integer b?:string|null c?:any");
        let prompt = json!({"arguments": [{"name": "who", "required": true}, {"name": "tone"}]});
        assert_eq!(prompt_arguments(&prompt), "who tone?");
    }

    #[test]
    fn contents_render() {
        let blocks = [
            json!({"type": "text", "text": "hi"}),
            json!({"type": "image", "mimeType": "image/png", "data": "AAAA"}),
            json!({"type": "resource_link", "uri": "u://x", "name": "x"}),
            json!({"type": "resource", "resource": {"uri": "u://y", "text": "body"}}),
        ];
        assert_eq!(
            content(&blocks),
            "hi\n[image image/png, 4 bytes of base64]\n[link] u://x x\nbody\n"
        );
        let read = [
            json!({"uri": "a://1", "mimeType": "text/plain", "text": "one"}),
            json!({"uri": "a://2", "mimeType": "image/png", "blob": "AA=="}),
        ];
        assert_eq!(
            resource_contents(&read),
            "== a://1 (text/plain)\none\n== a://2 (image/png)\n[blob a://2 image/png, 4 bytes of base64]\n"
        );
        let prompt =
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hello"}}]});
        assert_eq!(prompt_messages(&prompt), "[user] Hello\n");
    }
}
