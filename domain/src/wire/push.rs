//! Push notification configs on the wire: a task's webhook config, its authentication, and the
//! requests and responses that get, list and delete configs.

use serde::{Deserialize, Serialize};

/// `lf.a2a.v1.AuthenticationInfo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    pub scheme: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// The protocol line a push config was registered over, which decides how its deliveries are
/// written (1.0: a `StreamResponse`; 0.3: the Task, in 0.3 JSON). Not on the 1.0 wire: the
/// 0.3 edge sets it on the config it hands on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PushProtocol {
    #[default]
    #[serde(rename = "1.0")]
    V1,
    #[serde(rename = "0.3")]
    V03,
}

impl PushProtocol {
    pub fn is_v1(&self) -> bool {
        *self == Self::V1
    }
}

/// `lf.a2a.v1.TaskPushNotificationConfig`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// How deliveries are written: set by the edge the config came through, never read from
    /// or written to the wire.
    #[serde(skip)]
    pub protocol: PushProtocol,
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
