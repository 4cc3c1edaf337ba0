//! The client rows: the load of [`crate::load`], but every call goes through our `mcp-client`
//! ([`mcp_client::Client::call_tool_as`], reading the result into the few members the check
//! needs).
//!
//! Each worker has its own [`Client`] (its own connection or child process, and session),
//! pinned to the configured revision, and calls `add {a: 2, b: 3}` one call at a time; every
//! result is checked as in [`crate::reply`]. Compared with `mcp-load` against the same server
//! in the same round, this is the client's overhead over a raw hyper loop.

use std::{
    fmt,
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
    },
    time::Instant,
};

use mcp_client::{
    Client,
    transport::{Stderr, Stdio},
};
use serde::{
    Deserialize, Deserializer,
    de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor},
};
use serde_json::{Value, json};

use crate::{
    Transport,
    load::{
        self, LoadConfig, LoadError, MAX_OPEN_FAILURES, MEASURE, REOPEN_BACKOFF, Report, STOP,
        Stats,
    },
    reply::ReplyError,
    request::{ADD_A, ADD_B, EXPECTED_SUM},
};

/// Runs the load described by `config` through our client and reports it.
///
/// [`LoadConfig::fixed_reply`] and [`LoadConfig::sessions`] do not apply: the target must
/// answer like a server (the echo floor does).
pub async fn run(config: &LoadConfig) -> Result<Report, LoadError> {
    if config.transport == Transport::Stdio && config.command.is_empty() {
        return Err(LoadError::NoCommand);
    }
    let shared = Arc::new(config.clone());
    let phase = Arc::new(AtomicU8::new(load::WARMUP));
    let workers: Vec<_> = (0..config.concurrency.max(1))
        .map(|_| tokio::spawn(worker(shared.clone(), phase.clone())))
        .collect();
    let measured = load::timeline(config, &phase).await;
    let mut total = Stats::new();
    for worker in workers {
        match worker.await {
            Ok(stats) => total.merge(stats),
            Err(join) => total.error(format!("worker failed: {join}")),
        }
    }
    Ok(load::report(config, &total, measured))
}

async fn worker(config: Arc<LoadConfig>, phase: Arc<AtomicU8>) -> Stats {
    let mut stats = Stats::new();
    let mut open_failures = 0;
    let arguments = json!({"a": ADD_A, "b": ADD_B});
    while phase.load(Ordering::Relaxed) != STOP {
        let client = match tokio::time::timeout(config.timeout, connect(&config)).await {
            Ok(Ok(client)) => client,
            Ok(Err(error)) => {
                stats.error(format!("connect: {error}"));
                open_failures += 1;
                if open_failures >= MAX_OPEN_FAILURES {
                    break;
                }
                tokio::time::sleep(REOPEN_BACKOFF).await;
                continue;
            }
            Err(_) => {
                stats.error("connect: timed out".to_owned());
                break;
            }
        };
        open_failures = 0;
        loop {
            let before = phase.load(Ordering::Relaxed);
            if before == STOP {
                break;
            }
            let started = Instant::now();
            // No timeout of its own around the call: the client bounds every call by
            // `config.timeout` (set in `connect`), and fails it with a timeout error.
            let outcome = call(&client, &config, &arguments).await;
            let elapsed = started.elapsed();
            let checked = match outcome {
                Ok(result) => check(&result).map_err(|e| e.to_string()),
                Err(error) => Err(error.to_string()),
            };
            match checked {
                Ok(()) => {
                    if before == MEASURE && phase.load(Ordering::Relaxed) == MEASURE {
                        stats.calls += 1;
                        stats
                            .latency
                            .record(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
                    }
                }
                Err(error) => {
                    stats.error(error);
                    break;
                }
            }
        }
        let _ = client.close().await;
    }
    stats
}

async fn connect(config: &LoadConfig) -> Result<Client, String> {
    let revision = mcp_client::Revision::parse(config.revision.as_str())
        .ok_or_else(|| format!("revision {} unknown to mcp-client", config.revision))?;
    let builder = Client::builder()
        .client_info("mcp-bench-client", env!("CARGO_PKG_VERSION"))
        .revision(revision)
        .timeout(config.timeout);
    let client = match config.transport {
        Transport::HttpSse => builder.connect_sse(&config.url).await,
        Transport::Stdio => {
            let (program, args) = config.command.split_first().ok_or("no command")?;
            let command = Stdio::builder(program).args(args).stderr(Stderr::Null);
            builder.connect_stdio(command).await
        }
        _ => builder.connect_http(&config.url).await,
    };
    client.map_err(|e| e.to_string())
}

/// One `add` call. Over HTTP (Streamable HTTP, and HTTP+SSE) the client reads the result
/// straight into a [`ToolReply`] ([`Client::call_tool_as`]); stdio hands the client a parsed
/// message, so the reply is taken from the result [`Value`] instead of deserialized from it.
async fn call(
    client: &Client,
    config: &LoadConfig,
    arguments: &Value,
) -> Result<ToolReply, mcp_client::Error> {
    if config.transport != Transport::Stdio {
        client.call_tool_as("add", arguments.clone()).await
    } else {
        let result = client.call_tool("add", arguments.clone()).await?;
        Ok(ToolReply::of(&result))
    }
}

/// The members of a `tools/call` result that [`check`] reads, deserialized by the client
/// straight from the reply ([`Client::call_tool_as`]); the others are skipped.
#[derive(Debug, Default, Deserialize)]
struct ToolReply {
    #[serde(rename = "isError", default)]
    is_error: Option<Value>,
    #[serde(rename = "resultType", default)]
    result_type: Option<Value>,
    /// `Some` whenever the member is there, `null` included.
    #[serde(rename = "structuredContent", default, deserialize_with = "present")]
    structured_content: Option<Value>,
    #[serde(default)]
    content: FirstText,
}

impl ToolReply {
    /// The members of a result already parsed.
    fn of(result: &Value) -> Self {
        let text = result
            .get("content")
            .and_then(Value::as_array)
            .and_then(|blocks| {
                blocks
                    .iter()
                    .find(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            })
            .and_then(|block| block.get("text").and_then(Value::as_str));
        Self {
            is_error: result.get("isError").cloned(),
            result_type: result.get("resultType").cloned(),
            structured_content: result.get("structuredContent").cloned(),
            content: FirstText(text.map(str::to_owned)),
        }
    }
}

/// The `text` of the first block of `content` whose `type` is `"text"`: `None` when that block's
/// `text` is not a string, when there is no such block or when `content` is not an array. Read
/// without building the blocks.
#[derive(Debug, Default)]
struct FirstText(Option<String>);

/// A member name of a content block.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum BlockKey {
    Type,
    Text,
    #[serde(other)]
    Other,
}

/// Reads any JSON value: `content` (`array: true`) into the [`FirstText`] of its blocks, a block
/// into `Some(text)` when its `type` is `"text"` (the text when a string), anything else into
/// nothing.
struct Scan {
    array: bool,
}

/// What [`Scan`] found.
enum Scanned {
    Nothing,
    TextBlock(Option<String>),
    Array(FirstText),
}

impl<'de> de::DeserializeSeed<'de> for Scan {
    type Value = Scanned;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Scanned, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scan {
    type Value = Scanned;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Scanned, E> {
        Ok(Scanned::Nothing)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Scanned, E> {
        Ok(Scanned::Nothing)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Scanned, E> {
        Ok(Scanned::Nothing)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Scanned, E> {
        Ok(Scanned::Nothing)
    }

    fn visit_str<E>(self, _: &str) -> Result<Scanned, E> {
        Ok(Scanned::Nothing)
    }

    fn visit_unit<E>(self) -> Result<Scanned, E> {
        Ok(Scanned::Nothing)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scanned, A::Error> {
        let mut found = None;
        while let Some(item) = seq.next_element_seed(Self { array: false })? {
            if let (None, Scanned::TextBlock(text)) = (&found, item) {
                found = Some(text);
            }
        }
        Ok(if self.array {
            Scanned::Array(FirstText(found.flatten()))
        } else {
            Scanned::Nothing
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scanned, A::Error> {
        let (mut kind, mut text) = (None, None);
        while let Some(key) = map.next_key::<BlockKey>()? {
            match key {
                BlockKey::Type => kind = Some(map.next_value::<Value>()?),
                BlockKey::Text => text = Some(map.next_value::<Value>()?),
                BlockKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if self.array || kind.as_ref().and_then(Value::as_str) != Some("text") {
            return Ok(Scanned::Nothing);
        }
        Ok(Scanned::TextBlock(match text {
            Some(Value::String(text)) => Some(text),
            _ => None,
        }))
    }
}

impl<'de> Deserialize<'de> for FirstText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match de::DeserializeSeed::deserialize(Scan { array: true }, deserializer)? {
            Scanned::Array(first) => Ok(first),
            Scanned::Nothing | Scanned::TextBlock(_) => Ok(Self(None)),
        }
    }
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Checks a `tools/call` result by the rules of [`crate::reply`].
fn check(result: &ToolReply) -> Result<(), ReplyError> {
    if result.is_error == Some(Value::Bool(true)) {
        return Err(ReplyError::ToolError);
    }
    if let Some(kind) = result.result_type.as_ref().and_then(Value::as_str)
        && kind != "complete"
    {
        return Err(ReplyError::ResultType(kind.to_owned()));
    }
    let first_number = |value: &Value| match value {
        Value::Number(n) => n.as_f64(),
        Value::Object(fields) => fields.values().find_map(Value::as_f64),
        _ => None,
    };
    let sum = match &result.structured_content {
        Some(structured) => first_number(structured),
        None => result
            .content
            .0
            .as_deref()
            .and_then(|text| serde_json::from_str::<Value>(text.trim()).ok())
            .and_then(|value| first_number(&value)),
    };
    match sum {
        Some(sum) if sum == EXPECTED_SUM as f64 => Ok(()),
        Some(sum) => Err(ReplyError::WrongSum(sum)),
        None => Err(ReplyError::NoSum),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results() {
        let table = [
            (json!({"structuredContent": {"sum": 5}}), Ok(())),
            (json!({"structuredContent": 5}), Ok(())),
            (
                json!({"structuredContent": null, "content": [{"type": "text", "text": "5"}]}),
                Err(ReplyError::NoSum),
            ),
            (
                json!({"content": "5", "isError": null}),
                Err(ReplyError::NoSum),
            ),
            (
                json!({"content": [5, {"type": "image"}, {"text": "5", "type": "text", "x": [1]}, {"type": "text", "text": "6"}]}),
                Ok(()),
            ),
            (
                json!({"content": [{"type": "text", "text": 5}, {"type": "text", "text": "5"}]}),
                Err(ReplyError::NoSum),
            ),
            (
                json!({"content": {"type": "text", "text": "5"}}),
                Err(ReplyError::NoSum),
            ),
            (
                json!({"content": [{"type": "text", "text": "{\"sum\": 5}"}]}),
                Ok(()),
            ),
            (json!({"content": [{"type": "text", "text": "5"}]}), Ok(())),
            (
                json!({"structuredContent": {"sum": 6}}),
                Err(ReplyError::WrongSum(6.0)),
            ),
            (
                json!({"content": [{"type": "text", "text": "five"}]}),
                Err(ReplyError::NoSum),
            ),
            (
                json!({"structuredContent": {"sum": 5}, "isError": true}),
                Err(ReplyError::ToolError),
            ),
            (
                json!({"resultType": "input_required"}),
                Err(ReplyError::ResultType("input_required".into())),
            ),
        ];
        for (result, expected) in table {
            let reply: ToolReply = serde_json::from_value(result.clone()).unwrap();
            assert_eq!(check(&reply), expected, "{result}");
            assert_eq!(check(&ToolReply::of(&result)), expected, "{result}");
        }
    }
}
