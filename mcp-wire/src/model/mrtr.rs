//! Multi round-trip requests (MRTR, 2026-07-28): the `input_required` interim result, the embedded
//! input requests it carries, and the input responses a retry sends back.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{Extra, from_map, tags};
use super::elicitation::{ElicitRequest, ElicitResult};
use super::roots::{ListRootsRequest, ListRootsResult};
use super::sampling::{CreateMessageRequest, CreateMessageResult};
use crate::names::method;

/// A request the server needs the client to fulfil before it can finish: `{method, params}` with
/// no `jsonrpc` and no `id`. Chosen by `method`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicit(ElicitRequest),
    /// `sampling/createMessage`.
    CreateMessage(CreateMessageRequest),
    /// `roots/list`.
    ListRoots(ListRootsRequest),
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        match map.get("method").and_then(Value::as_str) {
            Some(method::ELICITATION_CREATE) => from_map::<_, D::Error>(map).map(Self::Elicit),
            Some(method::SAMPLING_CREATE_MESSAGE) => {
                from_map::<_, D::Error>(map).map(Self::CreateMessage)
            }
            Some(method::ROOTS_LIST) => from_map::<_, D::Error>(map).map(Self::ListRoots),
            Some(other) => Err(de::Error::unknown_variant(
                other,
                &[
                    method::ELICITATION_CREATE,
                    method::SAMPLING_CREATE_MESSAGE,
                    method::ROOTS_LIST,
                ],
            )),
            None => Err(de::Error::missing_field("method")),
        }
    }
}

impl InputRequest {
    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Elicit(_) => method::ELICITATION_CREATE,
            Self::CreateMessage(_) => method::SAMPLING_CREATE_MESSAGE,
            Self::ListRoots(_) => method::ROOTS_LIST,
        }
    }
}

/// Input requests keyed by server-assigned ids (unique within one result).
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The client's answer to one [`InputRequest`]; it carries no `resultType`.
///
/// An object with `action` is an elicitation result, one with `roots` a roots result, anything
/// else is read as a sampling result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // reason: the large variant is the common one; a Box would add an allocation per answer
pub enum InputResponse {
    /// Answer to `elicitation/create`.
    Elicit(ElicitResult),
    /// Answer to `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// Answer to `roots/list`.
    ListRoots(ListRootsResult),
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        if map.contains_key("action") {
            from_map::<_, D::Error>(map).map(Self::Elicit)
        } else if map.contains_key("roots") {
            from_map::<_, D::Error>(map).map(Self::ListRoots)
        } else {
            from_map::<_, D::Error>(map).map(Self::CreateMessage)
        }
    }
}

/// Input responses keyed by the ids of the [`InputRequests`] they answer.
pub type InputResponses = BTreeMap<String, InputResponse>;

/// The interim result `{resultType: "input_required", inputRequests?, requestState?}`.
///
/// At least one of the two fields must be present; [`is_well_formed`](Self::is_well_formed)
/// checks that. Allowed only on `tools/call`, `prompts/get` and `resources/read`, and never cached.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Always `"input_required"`.
    pub result_type: tags::InputRequired,
    /// What the client must fulfil before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client must echo unchanged on the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Unknown members.
    #[serde(flatten)]
    pub extra: Extra,
}

impl InputRequiredResult {
    /// Whether `inputRequests` or `requestState` is present, as the specification requires.
    pub fn is_well_formed(&self) -> bool {
        self.input_requests.is_some() || self.request_state.is_some()
    }
}

/// The result of a method that may answer `input_required` (`tools/call`, `prompts/get`,
/// `resources/read`): the final result, or an interim one.
///
/// A result whose `resultType` is `"input_required"` is [`InputRequired`](Self::InputRequired);
/// any other (including none, from a server of an earlier revision) is
/// [`Complete`](Self::Complete).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MrtrResult<T> {
    /// The final result.
    Complete(T),
    /// The server needs input first.
    InputRequired(InputRequiredResult),
}

impl<'de, T: de::DeserializeOwned> Deserialize<'de> for MrtrResult<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        if map.get("resultType").and_then(Value::as_str) == Some(tags::InputRequired::VALUE) {
            from_map::<_, D::Error>(map).map(Self::InputRequired)
        } else {
            from_map::<_, D::Error>(map).map(Self::Complete)
        }
    }
}

impl<T> MrtrResult<T> {
    /// The final result, if this is one.
    pub fn complete(self) -> Option<T> {
        match self {
            Self::Complete(t) => Some(t),
            Self::InputRequired(_) => None,
        }
    }
}

impl<T> From<InputRequiredResult> for MrtrResult<T> {
    fn from(r: InputRequiredResult) -> Self {
        Self::InputRequired(r)
    }
}
