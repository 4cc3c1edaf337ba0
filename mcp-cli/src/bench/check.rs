//! What `mcp bench` checks in every reply, and how a failed call is sorted into a kind.

use serde_json::Value;

use crate::error::{CliError, one_line};

/// The longest excerpt of a reply quoted in a failure's message (characters).
const EXCERPT: usize = 120;

/// The longest message kept for a failure (characters).
const MESSAGE: usize = 400;

/// One expectation every reply must meet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expect {
    /// `--expect-text S`: the first content block is text and equals `S`.
    Text(String),
    /// `--expect-json POINTER=VALUE`: the value at the JSON pointer in the result equals
    /// `VALUE`.
    Json {
        /// The pointer (`/structuredContent/sum`), as given.
        pointer: String,
        /// The value wanted there.
        value: Value,
    },
}

impl Expect {
    /// Reads `--expect-json POINTER=VALUE`: the pointer up to the first `=`, then the value
    /// (JSON when it parses, a string otherwise: `/a=5` wants the number 5, `/a=five` the
    /// string "five", `/a="5"` the string "5").
    pub(crate) fn json(text: &str) -> Result<Self, CliError> {
        let Some((pointer, value)) = text.split_once('=') else {
            return Err(CliError::Usage(format!(
                "--expect-json is POINTER=VALUE (such as /structuredContent/sum=5), got {text:?}"
            )));
        };
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(CliError::Usage(format!(
                "--expect-json {text:?}: a JSON pointer starts with / (such as \
                 /structuredContent/sum, /content/0/text), or is empty for the whole result"
            )));
        }
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into()));
        Ok(Self::Json {
            pointer: pointer.to_owned(),
            value,
        })
    }

    /// Whether `result` meets the expectation; the reason when not.
    fn check(&self, result: &Value) -> Result<(), String> {
        match self {
            Self::Text(wanted) => match first_text(result) {
                Some(text) if text == wanted => Ok(()),
                Some(text) => Err(format!(
                    "expected text {:?}, got {:?}",
                    excerpt(wanted, EXCERPT),
                    excerpt(text, EXCERPT)
                )),
                None => Err(format!(
                    "expected text {:?}, got no text block",
                    excerpt(wanted, EXCERPT)
                )),
            },
            Self::Json { pointer, value } => match result.pointer(pointer) {
                Some(found) if found == value => Ok(()),
                Some(found) => Err(format!(
                    "expected {} at {pointer:?}, got {}",
                    excerpt(&value.to_string(), EXCERPT),
                    excerpt(&found.to_string(), EXCERPT)
                )),
                None => Err(format!(
                    "expected {} at {pointer:?}, found nothing there",
                    excerpt(&value.to_string(), EXCERPT)
                )),
            },
        }
    }
}

/// The text of the first content block: `content[0].text` of a tool result, `contents[0].text`
/// of a resource read.
fn first_text(result: &Value) -> Option<&str> {
    let first = result
        .get("content")
        .or_else(|| result.get("contents"))
        .and_then(|blocks| blocks.get(0))?;
    first.get("text").and_then(Value::as_str)
}

/// `text` on one line, cut to `limit` characters.
fn excerpt(text: &str, limit: usize) -> String {
    let line = one_line(text);
    match line.char_indices().nth(limit) {
        Some((at, _)) => format!("{}...", &line[..at]),
        None => line,
    }
}

/// How one call went wrong: its kind (a key of the report's errors) and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// `timeout`, `transport`, `json-rpc -32602`, `tool error`, `wrong answer`, ...
    pub(crate) kind: String,
    /// One line about this call.
    pub(crate) message: String,
}

impl Failure {
    fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: excerpt(&message.into(), MESSAGE),
        }
    }

    /// A call that passed `--call-timeout`.
    pub(crate) fn timed_out(after: std::time::Duration) -> Self {
        Self::new("timeout", format!("no answer within {after:?}"))
    }

    /// A call the client failed.
    pub(crate) fn of_client(error: &mcp_client::Error) -> Self {
        use mcp_client::ErrorKind;
        let kind = if error.is_rate_limited() {
            "rate limited".to_owned()
        } else if let Some(code) = error.code() {
            format!("json-rpc {code}")
        } else {
            match error.kind() {
                ErrorKind::Timeout => "timeout",
                ErrorKind::Transport | ErrorKind::Closed | ErrorKind::Tls => "transport",
                ErrorKind::Protocol => "protocol",
                ErrorKind::InputRequired | ErrorKind::TooManyRounds => "unanswered",
                ErrorKind::Authorization => "authorization",
                ErrorKind::Unsupported | ErrorKind::UnsupportedVersion => "unsupported",
                _ => "client",
            }
            .to_owned()
        };
        Self::new(kind, error.to_string())
    }
}

/// Checks one reply: a tool's `isError: true` is a `tool error`, a reply that misses an
/// expectation a `wrong answer`.
pub(crate) fn check(result: &Value, expects: &[Expect]) -> Result<(), Failure> {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = first_text(result).unwrap_or("(no text)");
        return Err(Failure::new("tool error", text));
    }
    for expect in expects {
        expect
            .check(result)
            .map_err(|why| Failure::new("wrong answer", why))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn expectations_read_and_check() {
        let result = json!({
            "content": [{"type": "text", "text": "{\"sum\":5}"}],
            "structuredContent": {"sum": 5}
        });
        let sum = Expect::json("/structuredContent/sum=5").expect("valid");
        assert_eq!(check(&result, &[sum]), Ok(()));
        let text = Expect::Text("{\"sum\":5}".into());
        assert_eq!(check(&result, &[text]), Ok(()));

        let wrong = check(&result, &[Expect::Text("5".into())]).expect_err("5 is not the text");
        assert_eq!(wrong.kind, "wrong answer");
        assert_eq!(wrong.message, r#"expected text "5", got "{\"sum\":5}""#);
        let string = Expect::json("/structuredContent/sum=\"5\"").expect("valid");
        assert_eq!(
            check(&result, &[string]).expect_err("a string").kind,
            "wrong answer"
        );
        let missing = Expect::json("/nothing=1").expect("valid");
        assert!(
            check(&result, &[missing])
                .expect_err("missing")
                .message
                .contains("found nothing there")
        );

        // A resource read's first text.
        let read = json!({"contents": [{"uri": "x://a", "text": "hello"}]});
        assert_eq!(check(&read, &[Expect::Text("hello".into())]), Ok(()));
        let plain = Expect::json("/contents/0/text=hello").expect("valid");
        assert_eq!(check(&read, &[plain]), Ok(()));
    }

    #[test]
    fn a_tool_error_is_its_own_kind() {
        let result = json!({"content": [{"type": "text", "text": "boom"}], "isError": true});
        let failure = check(&result, &[]).expect_err("isError");
        assert_eq!(
            (failure.kind.as_str(), failure.message.as_str()),
            ("tool error", "boom")
        );
    }

    #[test]
    fn bad_expectations_are_usage_errors() {
        for bad in ["no-equals", "sum=5", "structuredContent/sum=5"] {
            assert!(
                matches!(Expect::json(bad), Err(CliError::Usage(_))),
                "{bad:?} is refused"
            );
        }
        assert_eq!(
            Expect::json("=7").expect("the whole result"),
            Expect::Json {
                pointer: String::new(),
                value: json!(7)
            }
        );
        assert_eq!(
            Expect::json("/a=b=c").expect("the value keeps its ="),
            Expect::Json {
                pointer: "/a".into(),
                value: json!("b=c")
            }
        );
    }

    #[test]
    fn long_replies_are_cut() {
        let long = "x".repeat(1000);
        let failure = check(
            &json!({"content": [{"type": "text", "text": long}]}),
            &[Expect::Text("y".into())],
        )
        .expect_err("differs");
        assert!(failure.message.len() < 300, "{}", failure.message);
        assert!(failure.message.ends_with("...\""), "{}", failure.message);
    }
}
