//! Reading what the user typed: tool arguments (`JSON` or `key=value`), `--stdio` commands and
//! `--answer` values.

use serde_json::{Map, Value};

use crate::error::CliError;

/// The most bytes `mcp` reads for the arguments of one command: every `key=@FILE` and the
/// `--args-json` file or stdin together (64 MiB). A larger file is refused, naming it.
pub(crate) const MAX_ARGUMENT_BYTES: u64 = 64 * 1024 * 1024;

/// Reads the files and stdin named by arguments, within [`MAX_ARGUMENT_BYTES`] in all.
#[derive(Debug)]
pub(crate) struct Sources {
    /// Bytes allowed in all.
    cap: u64,
    /// Bytes still allowed.
    left: u64,
    /// Stdin was read already (it can be read once).
    stdin_read: bool,
}

impl Default for Sources {
    fn default() -> Self {
        Self::with_cap(MAX_ARGUMENT_BYTES)
    }
}

impl Sources {
    /// Sources that may read `cap` bytes in all.
    pub(crate) fn with_cap(cap: u64) -> Self {
        Self {
            cap,
            left: cap,
            stdin_read: false,
        }
    }

    /// The bytes read so far (files and stdin).
    pub(crate) fn read_so_far(&self) -> u64 {
        self.cap - self.left
    }

    /// The text of the file at `path` (UTF-8), for the argument `argument`.
    pub(crate) fn file(&mut self, path: &str, argument: &str) -> Result<String, CliError> {
        use std::io::Read as _;
        let unreadable = |source: std::io::Error| CliError::ArgumentFile {
            name: format!("the file {path:?}"),
            argument: argument.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(unreadable)?;
        // The size said up front refuses a huge file without reading it; the bounded read
        // below catches a file that grows, or a FIFO.
        if file.metadata().map_err(unreadable)?.len() > self.left {
            return Err(self.too_large(format!("the file {path:?}"), argument));
        }
        let bytes = self.read(
            file.take(self.left + 1),
            format!("the file {path:?}"),
            argument,
        )?;
        String::from_utf8(bytes).map_err(|_| {
            unreadable(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "it is not UTF-8 text",
            ))
        })
    }

    /// Everything on stdin (once), for `argument`.
    pub(crate) fn stdin(&mut self, argument: &str) -> Result<String, CliError> {
        use std::io::Read as _;
        if std::mem::replace(&mut self.stdin_read, true) {
            return Err(CliError::Usage(format!(
                "{argument}: stdin was read already (only one argument can come from it)"
            )));
        }
        let stdin = std::io::stdin().lock().take(self.left + 1);
        let bytes = self.read(stdin, "stdin".to_owned(), argument)?;
        String::from_utf8(bytes).map_err(|_| CliError::ArgumentFile {
            name: "stdin".into(),
            argument: argument.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"),
        })
    }

    /// Reads `reader` (already limited to one byte past what is left) to its end.
    fn read(
        &mut self,
        mut reader: impl std::io::Read,
        name: String,
        argument: &str,
    ) -> Result<Vec<u8>, CliError> {
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|source| CliError::ArgumentFile {
                name: name.clone(),
                argument: argument.to_owned(),
                source,
            })?;
        let read = bytes.len() as u64;
        if read > self.left {
            return Err(self.too_large(name, argument));
        }
        self.left -= read;
        Ok(bytes)
    }

    fn too_large(&self, name: String, argument: &str) -> CliError {
        CliError::ArgumentTooLarge {
            name,
            argument: argument.to_owned(),
            cap: self.cap,
        }
    }

    /// `raw` as the user meant it: `@PATH` is the text of that file, `@@...` the literal text
    /// after the first `@`, anything else itself.
    fn value(&mut self, raw: &str, word: &str) -> Result<Option<String>, CliError> {
        match raw.strip_prefix('@') {
            Some(rest) if rest.starts_with('@') => Ok(Some(rest.to_owned())),
            Some("") => Err(CliError::Usage(format!(
                "{word:?}: @ needs a file name (@@ starts a literal value with @)"
            ))),
            Some(path) => self.file(path, word).map(Some),
            None => Ok(None),
        }
    }

    /// The `--args-json` value: `-` reads stdin, `@FILE` a file, anything else is the JSON
    /// text itself. It must be an object.
    pub(crate) fn args_json(&mut self, given: &str) -> Result<Map<String, Value>, CliError> {
        let (text, from) = match given {
            "-" => (self.stdin("--args-json -")?, "stdin".to_owned()),
            _ => match given.strip_prefix('@') {
                Some(path) if !path.is_empty() => (
                    self.file(path, &format!("--args-json {given}"))?,
                    format!("the file {path:?}"),
                ),
                _ => (given.to_owned(), "--args-json".to_owned()),
            },
        };
        let parsed: Value = serde_json::from_str(&text)
            .map_err(|e| CliError::Usage(format!("{from} (--args-json) is not valid JSON: {e}")))?;
        match parsed {
            Value::Object(members) => Ok(members),
            _ => Err(CliError::Usage(format!(
                "{from} (--args-json) must hold a JSON object"
            ))),
        }
    }
}

/// Builds a tool's `arguments` object from the words after the tool name.
///
/// - A word starting with `{` is a JSON object; its members are merged in.
/// - `key=value`: the value is parsed as JSON when it parses (`n=3`, `ok=true`,
///   `tags=["a","b"]`, `opts={"x":1}`, `none=null`), and is a string otherwise (`name=Ada`).
/// - `key:=value`: the value is always a string, even when it looks like JSON (`zip:=01234`,
///   `flag:=true`).
/// - `key=@FILE` (or `key:=@FILE`): the value is the text of the file, as a string (read
///   within [`MAX_ARGUMENT_BYTES`]); `key=@@text` is the literal string `@text`.
/// - `json`: the members of `--args-json` (already read), merged first.
///
/// A key given twice is an error, so a typo does not silently overwrite a value.
pub(crate) fn tool_arguments(
    words: &[String],
    json: Option<Map<String, Value>>,
    sources: &mut Sources,
) -> Result<Value, CliError> {
    let mut out = Map::new();
    for (key, value) in json.into_iter().flatten() {
        insert(&mut out, key, value)?;
    }
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
        let (key, value) = key_value(word, sources)?;
        insert(&mut out, key, value)?;
    }
    Ok(Value::Object(out))
}

/// Builds a prompt's `arguments` (every value a string, as prompts require) from `key=value`
/// words; `key:=value` is accepted too and means the same, and `key=@FILE` reads the value
/// from a file (`@@` for a literal leading `@`).
pub(crate) fn prompt_arguments(words: &[String], sources: &mut Sources) -> Result<Value, CliError> {
    let mut out = Map::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(CliError::Usage(format!(
                "prompt arguments are key=value, got {word:?}"
            )));
        };
        let key = key.strip_suffix(':').unwrap_or(key);
        check_key(key, word)?;
        let value = sources
            .value(value, word)?
            .unwrap_or_else(|| value.to_owned());
        insert(&mut out, key.to_owned(), Value::String(value))?;
    }
    Ok(Value::Object(out))
}

fn key_value(word: &str, sources: &mut Sources) -> Result<(String, Value), CliError> {
    let Some((key, raw)) = word.split_once('=') else {
        return Err(CliError::Usage(format!(
            "tool arguments are a JSON object or key=value, got {word:?}"
        )));
    };
    let (key, always_string) = match key.strip_suffix(':') {
        Some(key) => (key, true),
        None => (key, false),
    };
    check_key(key, word)?;
    if let Some(text) = sources.value(raw, word)? {
        return Ok((key.to_owned(), Value::String(text)));
    }
    if always_string {
        return Ok((key.to_owned(), Value::String(raw.to_owned())));
    }
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

    fn tool_arguments_of(words: &[String]) -> Result<Value, CliError> {
        tool_arguments(words, None, &mut Sources::default())
    }

    /// A file under the target's temporary folder holding `bytes`.
    fn temp_file(name: &str, bytes: &[u8]) -> String {
        let dir = std::env::temp_dir().join(format!("mcp-cli-args-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    }

    #[test]
    fn values_from_files_and_the_at_escape() {
        let path = temp_file("text.txt", "line one\nline \"two\" {not json}\n".as_bytes());
        let args = tool_arguments(
            &words(&[
                &format!("text=@{path}"),
                &format!("raw:=@{path}"),
                "handle=@@ada",
                "n=3",
            ]),
            Some(Map::from_iter([("j".to_owned(), json!(true))])),
            &mut Sources::default(),
        )
        .unwrap();
        let text = "line one\nline \"two\" {not json}\n";
        assert_eq!(
            args,
            json!({"j": true, "text": text, "raw": text, "handle": "@ada", "n": 3})
        );
        let prompt = prompt_arguments(
            &words(&[&format!("name=@{path}"), "x=@@y"]),
            &mut Sources::default(),
        )
        .unwrap();
        assert_eq!(prompt, json!({"name": text, "x": "@y"}));
        // A missing file names itself; a bare @ is a usage error.
        let missing = tool_arguments_of(&words(&["text=@/no/such/file"])).unwrap_err();
        assert!(
            matches!(missing, CliError::ArgumentFile { .. }),
            "{missing:?}"
        );
        assert!(
            missing.line().contains("\"/no/such/file\""),
            "{}",
            missing.line()
        );
        assert!(missing.line().contains("@@"), "{}", missing.line());
        assert!(matches!(
            tool_arguments_of(&words(&["text=@"])),
            Err(CliError::Usage(_))
        ));
        // Not UTF-8.
        let binary = temp_file("binary.bin", &[0xff, 0xfe, 0x00]);
        let refused = tool_arguments_of(&words(&[&format!("b=@{binary}")])).unwrap_err();
        assert!(refused.to_string().contains("not UTF-8"), "{refused}");
    }

    #[test]
    fn files_past_the_cap_are_refused_by_name() {
        let path = temp_file("big.txt", &[b'x'; 100]);
        let mut sources = Sources::with_cap(64);
        let refused =
            tool_arguments(&words(&[&format!("t=@{path}")]), None, &mut sources).unwrap_err();
        assert!(
            matches!(refused, CliError::ArgumentTooLarge { .. }),
            "{refused:?}"
        );
        assert!(refused.line().contains("big.txt"), "{}", refused.line());
        // The cap counts every file of the command together.
        let small = temp_file("small.txt", &[b'y'; 40]);
        let mut sources = Sources::with_cap(64);
        let both = words(&[&format!("a=@{small}"), &format!("b=@{small}")]);
        assert!(matches!(
            tool_arguments(&both, None, &mut sources),
            Err(CliError::ArgumentTooLarge { .. })
        ));
    }

    #[test]
    fn args_json_inline_and_from_a_file() {
        let path = temp_file("args.json", br#"{"a": 1, "s": "x"}"#);
        let mut sources = Sources::default();
        assert_eq!(
            Value::Object(sources.args_json(&format!("@{path}")).unwrap()),
            json!({"a": 1, "s": "x"})
        );
        assert_eq!(
            Value::Object(sources.args_json(r#"{"b": 2}"#).unwrap()),
            json!({"b": 2})
        );
        let list = temp_file("list.json", b"[1]");
        assert!(matches!(
            sources.args_json(&format!("@{list}")),
            Err(CliError::Usage(_))
        ));
        // --args-json and a word naming the same key: given twice.
        let json = sources.args_json(r#"{"a": 1}"#).unwrap();
        assert!(matches!(
            tool_arguments(&words(&["a=2"]), Some(json), &mut sources),
            Err(CliError::Usage(_))
        ));
    }

    #[test]
    fn key_values_parse_json_when_they_can() {
        let args = tool_arguments_of(&words(&[
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
        let args = tool_arguments_of(&words(&["{\"a\": 1}", "b=2"])).unwrap();
        assert_eq!(args, json!({"a": 1, "b": 2}));
        assert_eq!(tool_arguments_of(&[]).unwrap(), json!({}));
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
                matches!(tool_arguments_of(&words(bad)), Err(CliError::Usage(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn prompt_arguments_are_strings() {
        assert_eq!(
            prompt_arguments(
                &words(&["name=Ada", "n=3", "s:=x"]),
                &mut Sources::default()
            )
            .unwrap(),
            json!({"name": "Ada", "n": "3", "s": "x"})
        );
        assert!(prompt_arguments(&words(&["x"]), &mut Sources::default()).is_err());
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
