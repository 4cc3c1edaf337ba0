//! Whole typed messages: JSON-RPC requests, notifications and responses whose method is fixed by
//! a marker type and whose params and result are typed.
//!
//! ```
//! use mcp_wire::jsonrpc::Id;
//! use mcp_wire::model::{CallToolRequest, CallToolRequestParams, methods};
//!
//! let request = CallToolRequest::new(Id::Number(1), CallToolRequestParams::new("get_weather", None));
//! let json = serde_json::to_value(&request).unwrap();
//! assert_eq!(json["method"], "tools/call");
//! assert_eq!(serde_json::from_value::<CallToolRequest>(json).unwrap(), request);
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::tags;
use crate::jsonrpc::{self, ErrorObject, Id};

/// A request method: its name, params type and result type.
///
/// Implemented by the marker types in [`methods`].
pub trait RequestMethod {
    /// The method name.
    const METHOD: &'static str;
    /// The params.
    type Params: Serialize + DeserializeOwned;
    /// The result.
    type Result: Serialize + DeserializeOwned;
}

/// A notification method: its name and params type.
///
/// Implemented by the marker types in [`methods`].
pub trait NotificationMethod {
    /// The method name.
    const METHOD: &'static str;
    /// The params.
    type Params: Serialize + DeserializeOwned;
}

/// Why a raw JSON-RPC message could not be typed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// The message is for another method.
    #[error("expected method {expected:?}, found {found:?}")]
    WrongMethod {
        /// The method of the target type.
        expected: &'static str,
        /// The method of the message.
        found: String,
    },
    /// The params or result do not have the expected shape.
    #[error("invalid {what}: {source}")]
    Shape {
        /// `"params"` or `"result"`.
        what: &'static str,
        /// What serde reported.
        #[source]
        source: serde_json::Error,
    },
    /// A success response has no id.
    #[error("the response has no id")]
    MissingId,
    /// The response is an error response.
    #[error("the response is an error: {0}")]
    ErrorResponse(ErrorObject),
}

/// Absent or `null` params read as an empty object, so that params types whose members are all
/// optional accept a bare `{"method": ...}`.
fn params_or_empty<P: DeserializeOwned>(params: Option<Value>) -> Result<P, serde_json::Error> {
    match params {
        Some(Value::Null) | None => P::deserialize(Map::new()),
        Some(params) => P::deserialize(params),
    }
}

/// A JSON-RPC request for method `M`: `{jsonrpc, id, method: M::METHOD, params}`.
///
/// `params` is always written. When reading, absent params are read as `{}`.
pub struct TypedRequest<M: RequestMethod> {
    /// The request id.
    pub id: Id,
    /// The params.
    pub params: M::Params,
}

impl<M: RequestMethod> TypedRequest<M> {
    /// A request with `id` and `params`.
    pub fn new(id: Id, params: M::Params) -> Self {
        Self { id, params }
    }

    /// Types a raw request.
    pub fn from_request(request: jsonrpc::Request) -> Result<Self, ConvertError> {
        if request.method != M::METHOD {
            return Err(ConvertError::WrongMethod {
                expected: M::METHOD,
                found: request.method.into_owned(),
            });
        }
        let params = params_or_empty(request.params).map_err(|source| ConvertError::Shape {
            what: "params",
            source,
        })?;
        Ok(Self {
            id: request.id,
            params,
        })
    }

    /// The raw request.
    pub fn into_request(self) -> Result<jsonrpc::Request, serde_json::Error> {
        Ok(jsonrpc::Request {
            id: self.id,
            method: Cow::Borrowed(M::METHOD),
            params: Some(serde_json::to_value(self.params)?),
        })
    }
}

/// A JSON-RPC notification for method `M`: `{jsonrpc, method: M::METHOD, params}`.
///
/// `params` is always written. When reading, absent params are read as `{}`.
pub struct TypedNotification<M: NotificationMethod> {
    /// The params.
    pub params: M::Params,
}

impl<M: NotificationMethod> TypedNotification<M> {
    /// A notification with `params`.
    pub fn new(params: M::Params) -> Self {
        Self { params }
    }

    /// Types a raw notification.
    pub fn from_notification(notification: jsonrpc::Notification) -> Result<Self, ConvertError> {
        if notification.method != M::METHOD {
            return Err(ConvertError::WrongMethod {
                expected: M::METHOD,
                found: notification.method.into_owned(),
            });
        }
        let params =
            params_or_empty(notification.params).map_err(|source| ConvertError::Shape {
                what: "params",
                source,
            })?;
        Ok(Self { params })
    }

    /// The raw notification.
    pub fn into_notification(self) -> Result<jsonrpc::Notification, serde_json::Error> {
        Ok(jsonrpc::Notification {
            method: Cow::Borrowed(M::METHOD),
            params: Some(serde_json::to_value(self.params)?),
        })
    }
}

/// A successful JSON-RPC response to method `M`: `{jsonrpc, id, result}`.
pub struct TypedResponse<M: RequestMethod> {
    /// The id of the request answered.
    pub id: Id,
    /// The result.
    pub result: M::Result,
}

impl<M: RequestMethod> TypedResponse<M> {
    /// A response with `id` and `result`.
    pub fn new(id: Id, result: M::Result) -> Self {
        Self { id, result }
    }

    /// Types a raw response. An error response yields [`ConvertError::ErrorResponse`].
    pub fn from_response(response: jsonrpc::Response) -> Result<Self, ConvertError> {
        let result = response.outcome.map_err(ConvertError::ErrorResponse)?;
        let result = M::Result::deserialize(result).map_err(|source| ConvertError::Shape {
            what: "result",
            source,
        })?;
        let id = response.id.ok_or(ConvertError::MissingId)?;
        Ok(Self { id, result })
    }

    /// The raw response.
    pub fn into_response(self) -> Result<jsonrpc::Response, serde_json::Error> {
        Ok(jsonrpc::Response::success(
            self.id,
            serde_json::to_value(self.result)?,
        ))
    }
}

/// A JSON-RPC error response with typed `data`: `{jsonrpc, id, error: {code, message, data?}}`.
///
/// `id: None` is written as `"id": null`; an absent or `null` id reads as `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse<D = Value> {
    /// The id of the request answered, if it was known.
    pub id: Option<Id>,
    /// The error.
    pub error: ErrorObject<D>,
}

impl<D: Serialize> Serialize for ErrorResponse<D> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("ErrorResponse", 3)?;
        s.serialize_field("jsonrpc", jsonrpc::VERSION)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("error", &self.error)?;
        s.end()
    }
}

impl<'de, D: Deserialize<'de>> Deserialize<'de> for ErrorResponse<D> {
    fn deserialize<De: Deserializer<'de>>(deserializer: De) -> Result<Self, De::Error> {
        #[derive(Deserialize)]
        #[serde(bound = "D: Deserialize<'de>")]
        struct Raw<D> {
            #[serde(rename = "jsonrpc")]
            _jsonrpc: tags::JsonRpcVersion,
            #[serde(default)]
            id: Option<Id>,
            error: ErrorObject<D>,
        }
        let raw = Raw::<D>::deserialize(deserializer)?;
        Ok(Self {
            id: raw.id,
            error: raw.error,
        })
    }
}

impl<M: RequestMethod> Serialize for TypedRequest<M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Request", 4)?;
        s.serialize_field("jsonrpc", jsonrpc::VERSION)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("method", M::METHOD)?;
        s.serialize_field("params", &self.params)?;
        s.end()
    }
}

impl<'de, M: RequestMethod> Deserialize<'de> for TypedRequest<M> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let request = jsonrpc::Request::deserialize(deserializer)?;
        Self::from_request(request).map_err(de::Error::custom)
    }
}

impl<M: NotificationMethod> Serialize for TypedNotification<M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Notification", 3)?;
        s.serialize_field("jsonrpc", jsonrpc::VERSION)?;
        s.serialize_field("method", M::METHOD)?;
        s.serialize_field("params", &self.params)?;
        s.end()
    }
}

impl<'de, M: NotificationMethod> Deserialize<'de> for TypedNotification<M> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let notification = jsonrpc::Notification::deserialize(deserializer)?;
        Self::from_notification(notification).map_err(de::Error::custom)
    }
}

impl<M: RequestMethod> Serialize for TypedResponse<M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Response", 3)?;
        s.serialize_field("jsonrpc", jsonrpc::VERSION)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("result", &self.result)?;
        s.end()
    }
}

impl<'de, M: RequestMethod> Deserialize<'de> for TypedResponse<M> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(bound = "R: DeserializeOwned")]
        struct Raw<R> {
            #[serde(rename = "jsonrpc")]
            _jsonrpc: tags::JsonRpcVersion,
            id: Id,
            result: R,
        }
        let raw = Raw::<M::Result>::deserialize(deserializer)?;
        Ok(Self {
            id: raw.id,
            result: raw.result,
        })
    }
}

// Derives would put the bounds on `M`; these put them on the params and result types.

impl<M: RequestMethod> fmt::Debug for TypedRequest<M>
where
    M::Params: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedRequest")
            .field("method", &M::METHOD)
            .field("id", &self.id)
            .field("params", &self.params)
            .finish()
    }
}

impl<M: RequestMethod> Clone for TypedRequest<M>
where
    M::Params: Clone,
{
    fn clone(&self) -> Self {
        Self {
            id: self.id.clone(),
            params: self.params.clone(),
        }
    }
}

impl<M: RequestMethod> PartialEq for TypedRequest<M>
where
    M::Params: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.params == other.params
    }
}

impl<M: NotificationMethod> fmt::Debug for TypedNotification<M>
where
    M::Params: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedNotification")
            .field("method", &M::METHOD)
            .field("params", &self.params)
            .finish()
    }
}

impl<M: NotificationMethod> Clone for TypedNotification<M>
where
    M::Params: Clone,
{
    fn clone(&self) -> Self {
        Self {
            params: self.params.clone(),
        }
    }
}

impl<M: NotificationMethod> PartialEq for TypedNotification<M>
where
    M::Params: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.params == other.params
    }
}

impl<M: RequestMethod> fmt::Debug for TypedResponse<M>
where
    M::Result: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedResponse")
            .field("method", &M::METHOD)
            .field("id", &self.id)
            .field("result", &self.result)
            .finish()
    }
}

impl<M: RequestMethod> Clone for TypedResponse<M>
where
    M::Result: Clone,
{
    fn clone(&self) -> Self {
        Self {
            id: self.id.clone(),
            result: self.result.clone(),
        }
    }
}

impl<M: RequestMethod> PartialEq for TypedResponse<M>
where
    M::Result: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.result == other.result
    }
}

/// Marker types, one per method, tying a name to its params and result types.
///
/// ```
/// use mcp_wire::model::{RequestMethod, methods};
///
/// assert_eq!(<methods::CallTool as RequestMethod>::METHOD, "tools/call");
/// ```
pub mod methods {
    use serde_json::Value;

    use super::super::*;
    use super::{NotificationMethod, RequestMethod};
    use crate::names::method;

    macro_rules! request_methods {
        ($($(#[$doc:meta])* $name:ident = $method:path, $params:ty => $result:ty;)*) => {$(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum $name {}

            impl RequestMethod for $name {
                const METHOD: &'static str = $method;
                type Params = $params;
                type Result = $result;
            }
        )*};
    }

    macro_rules! notification_methods {
        ($($(#[$doc:meta])* $name:ident = $method:path, $params:ty;)*) => {$(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum $name {}

            impl NotificationMethod for $name {
                const METHOD: &'static str = $method;
                type Params = $params;
            }
        )*};
    }

    request_methods! {
        /// `initialize` (2024-11-05 to 2025-11-25).
        Initialize = method::INITIALIZE, InitializeRequestParams => InitializeResult;
        /// `ping` (2024-11-05 to 2025-11-25).
        Ping = method::PING, RequestParams => EmptyResult;
        /// `server/discover` (2026-07-28).
        Discover = method::SERVER_DISCOVER, RequestParams => DiscoverResult;
        /// `tools/list`.
        ListTools = method::TOOLS_LIST, PaginatedRequestParams => ListToolsResult;
        /// `tools/call`; may answer `input_required` in 2026-07-28.
        CallTool = method::TOOLS_CALL, CallToolRequestParams => MrtrResult<CallToolResult>;
        /// `prompts/list`.
        ListPrompts = method::PROMPTS_LIST, PaginatedRequestParams => ListPromptsResult;
        /// `prompts/get`; may answer `input_required` in 2026-07-28.
        GetPrompt = method::PROMPTS_GET, GetPromptRequestParams => MrtrResult<GetPromptResult>;
        /// `resources/list`.
        ListResources = method::RESOURCES_LIST, PaginatedRequestParams => ListResourcesResult;
        /// `resources/templates/list`.
        ListResourceTemplates = method::RESOURCES_TEMPLATES_LIST, PaginatedRequestParams => ListResourceTemplatesResult;
        /// `resources/read`; may answer `input_required` in 2026-07-28.
        ReadResource = method::RESOURCES_READ, ReadResourceRequestParams => MrtrResult<ReadResourceResult>;
        /// `resources/subscribe` (2024-11-05 to 2025-11-25).
        Subscribe = method::RESOURCES_SUBSCRIBE, SubscribeRequestParams => EmptyResult;
        /// `resources/unsubscribe` (2024-11-05 to 2025-11-25).
        Unsubscribe = method::RESOURCES_UNSUBSCRIBE, UnsubscribeRequestParams => EmptyResult;
        /// `subscriptions/listen` (2026-07-28).
        SubscriptionsListen = method::SUBSCRIPTIONS_LISTEN, SubscriptionsListenRequestParams => SubscriptionsListenResult;
        /// `completion/complete`.
        Complete = method::COMPLETION_COMPLETE, CompleteRequestParams => CompleteResult;
        /// `logging/setLevel` (2024-11-05 to 2025-11-25).
        SetLevel = method::LOGGING_SET_LEVEL, SetLevelRequestParams => EmptyResult;
        /// `sampling/createMessage` as a JSON-RPC request (up to 2025-11-25).
        CreateMessage = method::SAMPLING_CREATE_MESSAGE, CreateMessageRequestParams => CreateMessageResult;
        /// `roots/list` as a JSON-RPC request (up to 2025-11-25).
        ListRoots = method::ROOTS_LIST, RequestParams => ListRootsResult;
        /// `elicitation/create` as a JSON-RPC request (2025-06-18 and 2025-11-25).
        Elicit = method::ELICITATION_CREATE, ElicitRequestParams => ElicitResult;
        /// `tasks/get` (2025-11-25).
        GetTask = method::TASKS_GET, TaskIdParams => TaskResult;
        /// `tasks/result` (2025-11-25): the result of the original request.
        GetTaskPayload = method::TASKS_RESULT, TaskIdParams => Value;
        /// `tasks/list` (2025-11-25).
        ListTasks = method::TASKS_LIST, PaginatedRequestParams => ListTasksResult;
        /// `tasks/cancel` (2025-11-25).
        CancelTask = method::TASKS_CANCEL, TaskIdParams => TaskResult;
    }

    notification_methods! {
        /// `notifications/initialized` (2024-11-05 to 2025-11-25).
        Initialized = method::NOTIFICATION_INITIALIZED, NotificationParams;
        /// `notifications/cancelled`.
        Cancelled = method::NOTIFICATION_CANCELLED, CancelledNotificationParams;
        /// `notifications/progress`.
        Progress = method::NOTIFICATION_PROGRESS, ProgressNotificationParams;
        /// `notifications/message`.
        LoggingMessage = method::NOTIFICATION_MESSAGE, LoggingMessageNotificationParams;
        /// `notifications/resources/updated`.
        ResourceUpdated = method::NOTIFICATION_RESOURCES_UPDATED, ResourceUpdatedNotificationParams;
        /// `notifications/resources/list_changed`.
        ResourceListChanged = method::NOTIFICATION_RESOURCES_LIST_CHANGED, NotificationParams;
        /// `notifications/tools/list_changed`.
        ToolListChanged = method::NOTIFICATION_TOOLS_LIST_CHANGED, NotificationParams;
        /// `notifications/prompts/list_changed`.
        PromptListChanged = method::NOTIFICATION_PROMPTS_LIST_CHANGED, NotificationParams;
        /// `notifications/roots/list_changed` (2024-11-05 to 2025-11-25).
        RootsListChanged = method::NOTIFICATION_ROOTS_LIST_CHANGED, NotificationParams;
        /// `notifications/subscriptions/acknowledged` (2026-07-28).
        SubscriptionsAcknowledged = method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, SubscriptionsAcknowledgedNotificationParams;
        /// `notifications/elicitation/complete` (2025-11-25).
        ElicitationComplete = method::NOTIFICATION_ELICITATION_COMPLETE, ElicitationCompleteNotificationParams;
        /// `notifications/tasks/status` (2025-11-25).
        TaskStatus = method::NOTIFICATION_TASKS_STATUS, TaskStatusNotificationParams;
    }
}

// Aliases named as the schemas name the whole messages.

/// `initialize` request.
pub type InitializeRequest = TypedRequest<methods::Initialize>;
/// `initialize` response.
pub type InitializeResultResponse = TypedResponse<methods::Initialize>;
/// `ping` request.
pub type PingRequest = TypedRequest<methods::Ping>;
/// `server/discover` request.
pub type DiscoverRequest = TypedRequest<methods::Discover>;
/// `server/discover` response.
pub type DiscoverResultResponse = TypedResponse<methods::Discover>;
/// `tools/list` request.
pub type ListToolsRequest = TypedRequest<methods::ListTools>;
/// `tools/list` response.
pub type ListToolsResultResponse = TypedResponse<methods::ListTools>;
/// `tools/call` request.
pub type CallToolRequest = TypedRequest<methods::CallTool>;
/// `tools/call` response (complete or `input_required`).
pub type CallToolResultResponse = TypedResponse<methods::CallTool>;
/// `prompts/list` request.
pub type ListPromptsRequest = TypedRequest<methods::ListPrompts>;
/// `prompts/list` response.
pub type ListPromptsResultResponse = TypedResponse<methods::ListPrompts>;
/// `prompts/get` request.
pub type GetPromptRequest = TypedRequest<methods::GetPrompt>;
/// `prompts/get` response (complete or `input_required`).
pub type GetPromptResultResponse = TypedResponse<methods::GetPrompt>;
/// `resources/list` request.
pub type ListResourcesRequest = TypedRequest<methods::ListResources>;
/// `resources/list` response.
pub type ListResourcesResultResponse = TypedResponse<methods::ListResources>;
/// `resources/templates/list` request.
pub type ListResourceTemplatesRequest = TypedRequest<methods::ListResourceTemplates>;
/// `resources/templates/list` response.
pub type ListResourceTemplatesResultResponse = TypedResponse<methods::ListResourceTemplates>;
/// `resources/read` request.
pub type ReadResourceRequest = TypedRequest<methods::ReadResource>;
/// `resources/read` response (complete or `input_required`).
pub type ReadResourceResultResponse = TypedResponse<methods::ReadResource>;
/// `resources/subscribe` request.
pub type SubscribeRequest = TypedRequest<methods::Subscribe>;
/// `resources/unsubscribe` request.
pub type UnsubscribeRequest = TypedRequest<methods::Unsubscribe>;
/// `subscriptions/listen` request.
pub type SubscriptionsListenRequest = TypedRequest<methods::SubscriptionsListen>;
/// `subscriptions/listen` response (graceful close).
pub type SubscriptionsListenResultResponse = TypedResponse<methods::SubscriptionsListen>;
/// `completion/complete` request.
pub type CompleteRequest = TypedRequest<methods::Complete>;
/// `completion/complete` response.
pub type CompleteResultResponse = TypedResponse<methods::Complete>;
/// `logging/setLevel` request.
pub type SetLevelRequest = TypedRequest<methods::SetLevel>;

/// `notifications/initialized`.
pub type InitializedNotification = TypedNotification<methods::Initialized>;
/// `notifications/cancelled`.
pub type CancelledNotification = TypedNotification<methods::Cancelled>;
/// `notifications/progress`.
pub type ProgressNotification = TypedNotification<methods::Progress>;
/// `notifications/message`.
pub type LoggingMessageNotification = TypedNotification<methods::LoggingMessage>;
/// `notifications/resources/updated`.
pub type ResourceUpdatedNotification = TypedNotification<methods::ResourceUpdated>;
/// `notifications/resources/list_changed`.
pub type ResourceListChangedNotification = TypedNotification<methods::ResourceListChanged>;
/// `notifications/tools/list_changed`.
pub type ToolListChangedNotification = TypedNotification<methods::ToolListChanged>;
/// `notifications/prompts/list_changed`.
pub type PromptListChangedNotification = TypedNotification<methods::PromptListChanged>;
/// `notifications/roots/list_changed`.
pub type RootsListChangedNotification = TypedNotification<methods::RootsListChanged>;
/// `notifications/subscriptions/acknowledged`.
pub type SubscriptionsAcknowledgedNotification =
    TypedNotification<methods::SubscriptionsAcknowledged>;
/// `notifications/elicitation/complete`.
pub type ElicitationCompleteNotification = TypedNotification<methods::ElicitationComplete>;
/// `notifications/tasks/status`.
pub type TaskStatusNotification = TypedNotification<methods::TaskStatus>;

/// -32020 HeaderMismatch response (2026-07-28; no `data` defined).
pub type HeaderMismatchError = ErrorResponse<Value>;
/// -32021 MissingRequiredClientCapability response (2026-07-28).
pub type MissingRequiredClientCapabilityError =
    ErrorResponse<super::MissingRequiredClientCapabilityData>;
/// -32022 UnsupportedProtocolVersion response (2026-07-28).
pub type UnsupportedProtocolVersionError = ErrorResponse<super::UnsupportedProtocolVersionData>;
/// -32042 URLElicitationRequired response (2025-11-25).
pub type UrlElicitationRequiredError = ErrorResponse<super::UrlElicitationRequiredData>;
