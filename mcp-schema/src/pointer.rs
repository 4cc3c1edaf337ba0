//! JSON Pointer (RFC 6901) helpers for `$ref` fragments and error paths.

use serde_json::Value;

/// Appends one reference token to a JSON Pointer, escaping `~` and `/`.
pub(crate) fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            _ => pointer.push(c),
        }
    }
}

/// Resolves a `$ref` value that is a fragment-only JSON Pointer (`#`, `#/$defs/Name`) against
/// `root`. Returns the target and its pointer without the leading `#`, percent-decoded.
///
/// Returns `None` for anything else: a reference with a URI part, an anchor fragment
/// (`#name`), bad escapes, or a pointer that leads nowhere.
pub(crate) fn resolve_local<'a>(root: &'a Value, reference: &str) -> Option<(&'a Value, String)> {
    let fragment = reference.strip_prefix('#')?;
    let pointer = percent_decode(fragment)?;
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return None;
    }
    let mut target = root;
    for raw in pointer.split('/').skip(1) {
        let token = unescape(raw)?;
        target = match target {
            Value::Object(map) => map.get(&token)?,
            Value::Array(items) => {
                if token.len() > 1 && token.starts_with('0') {
                    return None;
                }
                items.get(token.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some((target, pointer))
}

/// Undoes RFC 6901 escaping (`~1` is `/`, `~0` is `~`); any other `~` is an error.
fn unescape(token: &str) -> Option<String> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next()? {
                '0' => out.push('~'),
                '1' => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// Decodes `%XX` escapes of a URI fragment; the result must be UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn push_token_escapes() {
        let mut p = String::new();
        push_token(&mut p, "a/b");
        push_token(&mut p, "c~d");
        assert_eq!(p, "/a~1b/c~0d");
    }

    #[test]
    fn resolves_local_pointers_only() {
        let root = json!({
            "$defs": {"A": {"type": "string"}, "a/b": {"type": "integer"}, "sp ace": true},
            "definitions": {"B": {"type": "boolean"}},
            "list": [{"type": "null"}]
        });
        let cases: &[(&str, Option<Value>)] = &[
            ("#/$defs/A", Some(json!({"type": "string"}))),
            ("#/$defs/a~1b", Some(json!({"type": "integer"}))),
            ("#/$defs/sp%20ace", Some(json!(true))),
            ("#/definitions/B", Some(json!({"type": "boolean"}))),
            ("#/list/0", Some(json!({"type": "null"}))),
            ("#", Some(root.clone())),
            ("#/list/00", None),
            ("#/list/1", None),
            ("#/$defs/missing", None),
            ("#anchor", None),
            ("#/$defs/~2", None),
            ("#/$defs/%zz", None),
            ("other.json#/$defs/A", None),
            ("https://example.com/s.json", None),
        ];
        for (reference, expected) in cases {
            let got = resolve_local(&root, reference).map(|(v, _)| v.clone());
            assert_eq!(&got, expected, "{reference}");
        }
        assert_eq!(
            resolve_local(&root, "#/$defs/a~1b").unwrap().1,
            "/$defs/a~1b"
        );
    }
}
