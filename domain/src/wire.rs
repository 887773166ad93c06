//! A2A 1.0 wire types (proto package `lf.a2a.v1`) in their ProtoJSON form.
//! camelCase out, camelCase and snake_case in, enum names as strings, unset fields omitted, never `null`.

use base64::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::time::Timestamp;

/// A JSON object (`google.protobuf.Struct`).
pub type Metadata = Map<String, Value>;

/// Treats an explicit `null` like an absent field (ProtoJSON: null means "default").
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn is_false(b: &bool) -> bool {
    !*b
}

macro_rules! proto_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $num:literal => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
            pub const fn number(self) -> i32 {
                match self { $(Self::$variant => $num),+ }
            }
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($text => Some(Self::$variant),)+ _ => None }
            }
            pub fn from_number(n: i64) -> Option<Self> {
                match n { $($num => Some(Self::$variant),)+ _ => None }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = Value::deserialize(d)?;
                let parsed = match &v {
                    Value::String(s) => Self::from_name(s),
                    Value::Number(n) => n.as_i64().and_then(Self::from_number),
                    _ => None,
                };
                parsed.ok_or_else(|| serde::de::Error::custom(format!(
                    concat!("invalid ", stringify!($name), " {}; expected one of: ", $($text, " "),+), v
                )))
            }
        }
    };
}

proto_enum!(
    /// `lf.a2a.v1.TaskState`.
    TaskState {
        Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
        Submitted = 1 => "TASK_STATE_SUBMITTED",
        Working = 2 => "TASK_STATE_WORKING",
        Completed = 3 => "TASK_STATE_COMPLETED",
        Failed = 4 => "TASK_STATE_FAILED",
        Canceled = 5 => "TASK_STATE_CANCELED",
        InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
        Rejected = 7 => "TASK_STATE_REJECTED",
        AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
    }
);

impl TaskState {
    /// Completed, failed, canceled or rejected: the task never changes again.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }
    /// Input- or auth-required: the agent waits for the client.
    pub const fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }
}

proto_enum!(
    /// `lf.a2a.v1.Role`.
    Role {
        Unspecified = 0 => "ROLE_UNSPECIFIED",
        User = 1 => "ROLE_USER",
        Agent = 2 => "ROLE_AGENT",
    }
);

/// The content of a part: exactly one of `text`, `raw`, `url`, `data` (proto oneof `content`).
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    Text(String),
    /// Decoded bytes; base64 (standard, padded) on the wire.
    Raw(Vec<u8>),
    Url(String),
    Data(Value),
}

/// `lf.a2a.v1.Part`.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub content: PartContent,
    pub metadata: Option<Metadata>,
    pub filename: Option<String>,
    pub media_type: Option<String>,
}

impl Part {
    pub fn text(t: impl Into<String>) -> Self {
        Self {
            content: PartContent::Text(t.into()),
            metadata: None,
            filename: None,
            media_type: None,
        }
    }
    pub fn data(v: Value) -> Self {
        Self {
            content: PartContent::Data(v),
            metadata: None,
            filename: None,
            media_type: None,
        }
    }
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartRepr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filename: Option<String>,
    #[serde(default, alias = "media_type", skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut r = PartRepr {
            text: None,
            raw: None,
            url: None,
            data: None,
            metadata: self.metadata.clone(),
            filename: self.filename.clone(),
            media_type: self.media_type.clone(),
        };
        match &self.content {
            PartContent::Text(t) => r.text = Some(t.clone()),
            PartContent::Raw(b) => {
                r.raw = Some(base64::engine::general_purpose::STANDARD.encode(b))
            }
            PartContent::Url(u) => r.url = Some(u.clone()),
            PartContent::Data(v) => r.data = Some(v.clone()),
        }
        r.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let r = PartRepr::deserialize(d)?;
        let mut contents = Vec::with_capacity(1);
        if let Some(t) = r.text {
            contents.push(PartContent::Text(t));
        }
        if let Some(b) = r.raw {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b.as_bytes())
                .map_err(|e| D::Error::custom(format!("raw is not valid base64: {e}")))?;
            contents.push(PartContent::Raw(bytes));
        }
        if let Some(u) = r.url {
            contents.push(PartContent::Url(u));
        }
        if let Some(v) = r.data {
            contents.push(PartContent::Data(v));
        }
        if contents.len() != 1 {
            return Err(D::Error::custom(format!(
                "a part must have exactly one of text, raw, url, data (found {})",
                contents.len()
            )));
        }
        Ok(Part {
            content: contents.remove(0),
            metadata: r.metadata,
            filename: r.filename,
            media_type: r.media_type,
        })
    }
}

/// `lf.a2a.v1.Message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(alias = "message_id", default)]
    pub message_id: String,
    #[serde(alias = "context_id", default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(alias = "task_id", default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default = "unspecified_role")]
    pub role: Role,
    #[serde(default, deserialize_with = "null_as_default")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
    #[serde(
        alias = "reference_task_ids",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<String>,
}

fn unspecified_role() -> Role {
    Role::Unspecified
}

impl Message {
    /// A user message with one text part.
    pub fn user_text(message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            ..Self::agent_text(message_id, text)
        }
    }

    /// An agent message with one text part.
    pub fn agent_text(message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            message_id: message_id.into(),
            context_id: None,
            task_id: None,
            role: Role::Agent,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }
    /// The concatenated text parts.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(Part::as_text)
            .collect::<Vec<_>>()
            .join("")
    }
}

/// `lf.a2a.v1.TaskStatus`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
}

/// `lf.a2a.v1.Artifact`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
}

/// `lf.a2a.v1.Task`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `lf.a2a.v1.TaskStatusUpdateEvent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `lf.a2a.v1.TaskArtifactUpdateEvent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    #[serde(alias = "last_chunk", default, skip_serializing_if = "is_false")]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `lf.a2a.v1.StreamResponse`: exactly one member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    #[serde(alias = "status_update")]
    StatusUpdate(TaskStatusUpdateEvent),
    #[serde(alias = "artifact_update")]
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// `lf.a2a.v1.AuthenticationInfo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    pub scheme: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// `lf.a2a.v1.TaskPushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(alias = "task_id", default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default)]
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// `lf.a2a.v1.SendMessageConfiguration`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(
        alias = "accepted_output_modes",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    #[serde(
        alias = "task_push_notification_config",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    #[serde(
        alias = "history_length",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
    #[serde(
        alias = "return_immediately",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_false"
    )]
    pub return_immediately: bool,
}

/// `lf.a2a.v1.SendMessageRequest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `lf.a2a.v1.SendMessageResponse`: `{"task": …}` or `{"message": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

/// `lf.a2a.v1.GetTaskRequest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(
        alias = "history_length",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
}

/// `lf.a2a.v1.ListTasksRequest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(alias = "context_id", default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    #[serde(alias = "page_size", default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    #[serde(alias = "page_token", default, skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    #[serde(
        alias = "history_length",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
    #[serde(
        alias = "status_timestamp_after",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub status_timestamp_after: Option<Timestamp>,
    #[serde(
        alias = "include_artifacts",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub include_artifacts: Option<bool>,
}

/// `lf.a2a.v1.ListTasksResponse`: every member is required and always present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    pub tasks: Vec<Task>,
    pub next_page_token: String,
    pub page_size: i32,
    pub total_size: i32,
}

/// `lf.a2a.v1.GetTaskPushNotificationConfigRequest` and
/// `lf.a2a.v1.DeleteTaskPushNotificationConfigRequest` (same fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfigRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(alias = "task_id")]
    pub task_id: String,
    pub id: String,
}

/// `lf.a2a.v1.ListTaskPushNotificationConfigsRequest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(alias = "page_size", default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    #[serde(alias = "page_token", default, skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
}

/// `lf.a2a.v1.ListTaskPushNotificationConfigsResponse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    pub configs: Vec<TaskPushNotificationConfig>,
    pub next_page_token: String,
}

/// `lf.a2a.v1.CancelTaskRequest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

// ---------------------------------------------------------------- Agent card

/// `lf.a2a.v1.AgentInterface`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    pub url: String,
    pub protocol_binding: String,
    pub protocol_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// `lf.a2a.v1.AgentProvider`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    pub organization: String,
    pub url: String,
}

/// `lf.a2a.v1.AgentExtension`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Metadata>,
}

/// `lf.a2a.v1.AgentCapabilities`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

/// `lf.a2a.v1.AgentSkill`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// `lf.a2a.v1.StringList`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StringList {
    #[serde(default)]
    pub list: Vec<String>,
}

/// `lf.a2a.v1.SecurityRequirement`: scheme name → scopes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SecurityRequirement {
    pub schemes: std::collections::BTreeMap<String, StringList>,
}

/// `lf.a2a.v1.SecurityScheme` (oneof `scheme`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SecurityScheme {
    ApiKeySecurityScheme(ApiKeySecurityScheme),
    HttpAuthSecurityScheme(HttpAuthSecurityScheme),
    Oauth2SecurityScheme(OAuth2SecurityScheme),
    OpenIdConnectSecurityScheme(OpenIdConnectSecurityScheme),
    MtlsSecurityScheme(MutualTlsSecurityScheme),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeySecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub location: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub scheme: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_format: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub flows: OAuthFlows,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth2_metadata_url: Option<String>,
}

/// `lf.a2a.v1.OAuthFlows` (oneof `flow`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OAuthFlows {
    AuthorizationCode(AuthorizationCodeOAuthFlow),
    ClientCredentials(ClientCredentialsOAuthFlow),
    DeviceCode(DeviceCodeOAuthFlow),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationCodeOAuthFlow {
    pub authorization_url: String,
    pub token_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    pub scopes: std::collections::BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub pkce_required: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCredentialsOAuthFlow {
    pub token_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    pub scopes: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCodeOAuthFlow {
    pub device_authorization_url: String,
    pub token_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    pub scopes: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub open_id_connect_url: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MutualTlsSecurityScheme {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `lf.a2a.v1.AgentCardSignature`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCardSignature {
    pub protected: String,
    pub signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Metadata>,
}

/// `lf.a2a.v1.AgentCard` (1.0 shape only: no top-level `url`, `protocolVersion`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    pub name: String,
    pub description: String,
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    pub capabilities: AgentCapabilities,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub security_schemes: std::collections::BTreeMap<String, SecurityScheme>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    pub default_input_modes: Vec<String>,
    pub default_output_modes: Vec<String>,
    pub skills: Vec<AgentSkill>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn contains_null(v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::Array(a) => a.iter().any(contains_null),
            Value::Object(o) => o.values().any(contains_null),
            _ => false,
        }
    }

    #[test]
    fn parts_round_trip_each_content_kind() {
        for v in [
            json!({"text": "hi"}),
            json!({"raw": "aGVsbG8=", "filename": "a.txt", "mediaType": "text/plain"}),
            json!({"url": "https://example.com/a.pdf", "mediaType": "application/pdf"}),
            json!({"data": {"k": 1}, "metadata": {"x": "y"}}),
        ] {
            let p: Part = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&p).unwrap(), v);
        }
    }

    #[test]
    fn part_accepts_snake_case_media_type() {
        let p: Part =
            serde_json::from_value(json!({"text": "x", "media_type": "text/plain"})).unwrap();
        assert_eq!(p.media_type.as_deref(), Some("text/plain"));
    }

    #[test]
    fn part_with_no_or_two_contents_is_refused() {
        assert!(serde_json::from_value::<Part>(json!({"metadata": {}})).is_err());
        assert!(serde_json::from_value::<Part>(json!({"text": "a", "url": "b"})).is_err());
        assert!(serde_json::from_value::<Part>(json!({"raw": "not base64!"})).is_err());
    }

    #[test]
    fn enums_accept_names_and_numbers_and_print_names() {
        let s: TaskState = serde_json::from_value(json!("TASK_STATE_WORKING")).unwrap();
        assert_eq!(s, TaskState::Working);
        let s: TaskState = serde_json::from_value(json!(6)).unwrap();
        assert_eq!(s, TaskState::InputRequired);
        assert_eq!(
            serde_json::to_value(Role::Agent).unwrap(),
            json!("ROLE_AGENT")
        );
        assert!(serde_json::from_value::<TaskState>(json!("working")).is_err());
    }

    #[test]
    fn message_accepts_snake_case_and_ignores_unknown_fields() {
        let m: Message = serde_json::from_value(json!({
            "message_id": "m1", "context_id": "c1", "task_id": "t1", "role": "ROLE_USER",
            "parts": [{"text": "hi"}], "reference_task_ids": ["t0"], "kind": "message", "extra": 1
        }))
        .unwrap();
        assert_eq!(m.message_id, "m1");
        assert_eq!(m.context_id.as_deref(), Some("c1"));
        assert_eq!(m.reference_task_ids, vec!["t0".to_string()]);
        let out = serde_json::to_value(&m).unwrap();
        assert_eq!(out["messageId"], "m1");
        assert_eq!(out["referenceTaskIds"], json!(["t0"]));
        assert!(out.get("kind").is_none());
    }

    #[test]
    fn unset_fields_are_omitted_never_null() {
        let t = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: None,
            metadata: None,
        };
        let v = serde_json::to_value(&t).unwrap();
        assert!(!contains_null(&v));
        assert_eq!(
            v,
            json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}})
        );
    }

    #[test]
    fn list_response_always_has_required_members() {
        let r = ListTasksResponse {
            tasks: vec![],
            next_page_token: String::new(),
            page_size: 50,
            total_size: 0,
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0})
        );
    }

    #[test]
    fn send_message_response_is_a_oneof_wrapper() {
        let m = Message::agent_text("m", "hi");
        let v = serde_json::to_value(SendMessageResponse::Message(m)).unwrap();
        assert!(v.get("message").is_some());
        let s = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        assert!(serde_json::to_value(s)
            .unwrap()
            .get("statusUpdate")
            .is_some());
    }

    #[test]
    fn list_request_accepts_snake_case() {
        let r: ListTasksRequest = serde_json::from_value(json!({
            "context_id": "c", "page_size": 2, "include_artifacts": false,
            "status": "TASK_STATE_COMPLETED", "status_timestamp_after": "2026-01-01T00:00:00Z"
        }))
        .unwrap();
        assert_eq!(r.page_size, Some(2));
        assert_eq!(r.status, Some(TaskState::Completed));
        assert!(r.status_timestamp_after.is_some());
    }
}
