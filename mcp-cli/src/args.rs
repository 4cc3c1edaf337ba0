//! Reading what the user typed: tool arguments (`JSON` or `key=value`), `--stdio` commands and
//! `--answer` values.

use serde_json::{Map, Value};

use crate::error::CliError;

/// Builds a tool's `arguments` object from the words after the tool name.
///
/// - A word starting with `{` is a JSON object; its members are merged in.
/// - `key=value`: the value is parsed as JSON when it parses (`n=3`, `ok=true`,
///   `tags=["a","b"]`, `opts={"x":1}`, `none=null`), and is a string otherwise (`name=Ada`).
/// - `key:=value`: the value is always a string, even when it looks like JSON (`zip:=01234`,
///   `flag:=true`).
///
/// A key given twice is an error, so a typo does not silently overwrite a value.
pub(crate) fn tool_arguments(words: &[String]) -> Result<Value, CliError> {
    let mut out = Map::new();
    for word in words {
        if word.trim_start().starts_with('{') {
            let parsed: Value = serde_json::from_str(word).map_err(|e| {
                CliError::Usage(format!("the arguments {word:?} are not valid JSON: {e}"))
            })?;
            let Value::Object(members) = parsed else {
                return Err(CliError::Usage(format!(
                    "the arguments {word:?} must be a JSON object"
                )));
            };
            for (key, value) in members {
                insert(&mut out, key, value)?;
            }
            continue;
        }
        let (key, value) = key_value(word)?;
        insert(&mut out, key, value)?;
    }
    Ok(Value::Object(out))
}

/// Builds a prompt's `arguments` (every value a string, as prompts require) from `key=value`
/// words; `key:=value` is accepted too and means the same.
pub(crate) fn prompt_arguments(words: &[String]) -> Result<Value, CliError> {
    let mut out = Map::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(CliError::Usage(format!(
                "prompt arguments are key=value, got {word:?}"
            )));
        };
        let key = key.strip_suffix(':').unwrap_or(key);
        check_key(key, word)?;
        insert(&mut out, key.to_owned(), Value::String(value.to_owned()))?;
    }
    Ok(Value::Object(out))
}

fn key_value(word: &str) -> Result<(String, Value), CliError> {
    let Some((key, raw)) = word.split_once('=') else {
        return Err(CliError::Usage(format!(
            "tool arguments are a JSON object or key=value, got {word:?}"
        )));
    };
    if let Some(key) = key.strip_suffix(':') {
        check_key(key, word)?;
        return Ok((key.to_owned(), Value::String(raw.to_owned())));
    }
    check_key(key, word)?;
    let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
    Ok((key.to_owned(), value))
}

fn check_key(key: &str, word: &str) -> Result<(), CliError> {
    if key.is_empty() {
        return Err(CliError::Usage(format!("{word:?} has no key before '='")));
    }
    Ok(())
}

fn insert(out: &mut Map<String, Value>, key: String, value: Value) -> Result<(), CliError> {
    if out.contains_key(&key) {
        return Err(CliError::Usage(format!(
            "the argument {key:?} is given twice"
        )));
    }
    out.insert(key, value);
    Ok(())
}

/// Splits a `--stdio` command line into program and arguments, the way a shell would for plain
/// words: whitespace separates, single quotes keep everything literally, double quotes keep
/// whitespace, a backslash escapes the next character outside single quotes.
pub(crate) fn split_command(line: &str) -> Result<Vec<String>, CliError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(unterminated(line)),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => word.push(c),
                            None => return Err(unterminated(line)),
                        },
                        Some(c) => word.push(c),
                        None => return Err(unterminated(line)),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(CliError::Usage("--stdio needs a command".into()));
    }
    Ok(words)
}

fn unterminated(line: &str) -> CliError {
    CliError::Usage(format!(
        "unterminated quote in the --stdio command {line:?}"
    ))
}

/// One `--answer`: what to answer a question with, without asking anyone.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Canned {
    /// Accept; with this content for a form (an empty object when none was given).
    Accept(Map<String, Value>),
    /// Decline.
    Decline,
    /// Cancel.
    Cancel,
    /// A whole result object, sent as it is (`{"action": ..., "content": ...}`).
    Result(Value),
}

/// Reads one `--answer`: `accept`, `decline`, `cancel`, a JSON object of field values (accept
/// with that content), or a whole `{"action": ...}` result.
pub(crate) fn canned_answer(text: &str) -> Result<Canned, CliError> {
    match text.trim() {
        "accept" => return Ok(Canned::Accept(Map::new())),
        "decline" => return Ok(Canned::Decline),
        "cancel" => return Ok(Canned::Cancel),
        _ => {}
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        CliError::Usage(format!(
            "--answer {text:?} is neither accept, decline, cancel nor JSON: {e}"
        ))
    })?;
    match value {
        Value::Object(map) if map.get("action").is_some_and(Value::is_string) => {
            Ok(Canned::Result(Value::Object(map)))
        }
        Value::Object(map) => Ok(Canned::Accept(map)),
        _ => Err(CliError::Usage(format!(
            "--answer {text:?} must be accept, decline, cancel or a JSON object"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn key_values_parse_json_when_they_can() {
        let args = tool_arguments(&words(&[
            "a=1",
            "b=-2.5",
            "ok=true",
            "name=Ada",
            "tags=[\"x\"]",
            "o={\"k\":1}",
            "n=null",
            "zip:=01234",
            "flag:=true",
            "eq=a=b",
            "empty=",
            "quoted=\"7\"",
        ]))
        .unwrap();
        assert_eq!(
            args,
            json!({"a": 1, "b": -2.5, "ok": true, "name": "Ada", "tags": ["x"], "o": {"k": 1},
                   "n": null, "zip": "01234", "flag": "true", "eq": "a=b", "empty": "",
                   "quoted": "7"})
        );
    }

    #[test]
    fn json_objects_merge_with_key_values() {
        let args = tool_arguments(&words(&["{\"a\": 1}", "b=2"])).unwrap();
        assert_eq!(args, json!({"a": 1, "b": 2}));
        assert_eq!(tool_arguments(&[]).unwrap(), json!({}));
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        for bad in [
            &["{nope"][..],
            &["[1]"],
            &["noequals"],
            &["=1"],
            &["a=1", "a=2"],
            &["{\"a\":1}", "a=2"],
            &["{\"a\":1}x"],
        ] {
            assert!(
                matches!(tool_arguments(&words(bad)), Err(CliError::Usage(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn prompt_arguments_are_strings() {
        assert_eq!(
            prompt_arguments(&words(&["name=Ada", "n=3", "s:=x"])).unwrap(),
            json!({"name": "Ada", "n": "3", "s": "x"})
        );
        assert!(prompt_arguments(&words(&["x"])).is_err());
    }

    #[test]
    fn commands_split_like_a_shell() {
        assert_eq!(
            split_command("  server --flag 'a b' \"c \\\" d\" e\\ f ''").unwrap(),
            words(&["server", "--flag", "a b", "c \" d", "e f", ""])
        );
        assert!(split_command("x 'open").is_err());
        assert!(split_command("   ").is_err());
    }

    #[test]
    fn canned_answers() {
        assert_eq!(canned_answer("accept").unwrap(), Canned::Accept(Map::new()));
        assert_eq!(canned_answer("decline").unwrap(), Canned::Decline);
        assert_eq!(canned_answer(" cancel ").unwrap(), Canned::Cancel);
        let Canned::Accept(content) = canned_answer("{\"name\": \"x\"}").unwrap() else {
            panic!("an object of fields accepts");
        };
        assert_eq!(Value::Object(content), json!({"name": "x"}));
        assert_eq!(
            canned_answer("{\"action\": \"decline\"}").unwrap(),
            Canned::Result(json!({"action": "decline"}))
        );
        assert!(canned_answer("maybe").is_err());
        assert!(canned_answer("[1]").is_err());
    }
}
