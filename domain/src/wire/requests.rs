//! Requests and responses of the task methods: SendMessage (with its configuration), GetTask,
//! ListTasks and CancelTask.

use serde::{Deserialize, Serialize};

use super::enums::TaskState;
use super::message::Message;
use super::proto::{is_false, null_as_default, Metadata};
use super::push::TaskPushNotificationConfig;
use super::task::Task;
use crate::time::Timestamp;

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
    /// Draft A2A 1.1: the send is refused unless the task's generation is this.
    #[serde(
        alias = "if_generation_match",
        default,
        with = "super::proto::int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub if_generation_match: Option<u64>,
    /// Draft A2A 1.1: how many timeline entries each task returned carries (the last ones).
    #[serde(
        alias = "timeline_length",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub timeline_length: Option<i32>,
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

/// `lf.a2a.v1.SendMessageResponse`: `{"task": …}` or `{"message": …}` (the task boxed: it
/// is more than twice a message's size).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Box<Task>),
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
    /// Draft A2A 1.1: answer once the task's generation exceeds this (long-poll).
    #[serde(
        alias = "current_generation",
        default,
        with = "super::proto::int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub current_generation: Option<u64>,
    /// Draft A2A 1.1: how many timeline entries to return (the last ones), as `historyLength`.
    #[serde(
        alias = "timeline_length",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub timeline_length: Option<i32>,
    /// taskledger's events extension (`urn:taskledger:ext:events:v1`): GetTask answers with
    /// the task as of this generation, folded from its log.
    #[serde(
        alias = "as_of_generation",
        default,
        with = "super::proto::int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub as_of_generation: Option<u64>,
    /// taskledger's events extension: a SubscribeToTask stream starts after this event of the
    /// task's log, as it would resuming with `Last-Event-ID`.
    #[serde(
        default,
        with = "super::proto::int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub after: Option<u64>,
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
    /// taskledger's sharing filter, not A2A's (ADR 021): `owned`, `shared`, or unset for both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Draft A2A 1.1: how many timeline entries each task returned carries (the last ones).
    #[serde(
        alias = "timeline_length",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub timeline_length: Option<i32>,
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
