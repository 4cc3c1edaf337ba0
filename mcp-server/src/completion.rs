//! Argument completion (`completion/complete`): one handler serves the whole server.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use serde_json::{Value, json};

/// The most values one completion result carries (the spec's limit).
pub const MAX_COMPLETION_VALUES: usize = 100;

/// What is being completed: a prompt's argument or a resource template's variable.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompletionRef {
    /// `ref/prompt` with this prompt name.
    Prompt(String),
    /// `ref/resource` with this URI or URI template.
    Resource(String),
}

/// A `completion/complete` request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionRequest {
    /// What is being completed.
    pub reference: CompletionRef,
    /// The argument's name.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Arguments already filled in (`context.arguments`), when the client sends them.
    pub context: BTreeMap<String, String>,
}

impl CompletionRequest {
    pub(crate) fn from_params(params: &Value) -> Option<Self> {
        let reference = params.get("ref")?;
        let reference = match reference.get("type")?.as_str()? {
            "ref/prompt" => CompletionRef::Prompt(reference.get("name")?.as_str()?.to_owned()),
            "ref/resource" => CompletionRef::Resource(reference.get("uri")?.as_str()?.to_owned()),
            _ => return None,
        };
        let argument = params.get("argument")?;
        let context = params
            .pointer("/context/arguments")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Some(Self {
            reference,
            argument: argument.get("name")?.as_str()?.to_owned(),
            value: argument.get("value")?.as_str()?.to_owned(),
            context,
        })
    }
}

/// Completion values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// The suggestions (at most [`MAX_COMPLETION_VALUES`] are sent).
    pub values: Vec<String>,
    /// How many there are in all, if known.
    pub total: Option<u64>,
    /// More exist than were sent.
    pub has_more: bool,
}

impl From<Vec<String>> for Completion {
    /// Keeps the first 100 values and reports the full count in `total`.
    fn from(mut values: Vec<String>) -> Self {
        let total = values.len();
        let has_more = total > MAX_COMPLETION_VALUES;
        values.truncate(MAX_COMPLETION_VALUES);
        Self {
            values,
            total: Some(total as u64),
            has_more,
        }
    }
}

impl Completion {
    pub(crate) fn to_value(&self) -> Value {
        let mut values = self.values.clone();
        values.truncate(MAX_COMPLETION_VALUES);
        let mut completion = json!({"values": values, "hasMore": self.has_more || self.values.len() > MAX_COMPLETION_VALUES});
        if let Some(total) = self.total {
            completion["total"] = Value::from(total);
        }
        json!({"completion": completion})
    }
}

pub(crate) type ErasedCompleter =
    Arc<dyn Fn(CompletionRequest) -> BoxFuture<'static, Completion> + Send + Sync>;

/// The server's completion handler.
#[derive(Clone)]
pub struct Completer(pub(crate) ErasedCompleter);

impl fmt::Debug for Completer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Completer")
    }
}

impl Completer {
    /// A completion handler: `async fn(CompletionRequest) -> R` with `R: Into<Completion>`
    /// (a `Vec<String>` works).
    pub fn new<F, Fut, R>(handler: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: Into<Completion>,
    {
        Self(Arc::new(move |request| {
            let fut = handler(request);
            async move { fut.await.into() }.boxed()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lists_are_cut_to_one_hundred() {
        let values: Vec<String> = (0..150).map(|i| i.to_string()).collect();
        let completion = Completion::from(values).to_value();
        assert_eq!(
            completion["completion"]["values"].as_array().unwrap().len(),
            100
        );
        assert_eq!(completion["completion"]["total"], 150);
        assert_eq!(completion["completion"]["hasMore"], true);
    }

    #[test]
    fn requests_parse_from_params() {
        let params = json!({
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "name", "value": "Al"},
            "context": {"arguments": {"lang": "en"}}
        });
        let request = CompletionRequest::from_params(&params).unwrap();
        assert_eq!(request.reference, CompletionRef::Prompt("greet".into()));
        assert_eq!(request.value, "Al");
        assert_eq!(request.context["lang"], "en");
        assert!(CompletionRequest::from_params(&json!({"ref": {"type": "ref/x"}})).is_none());
    }
}
