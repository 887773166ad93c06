//! The `Task` object and what streams about it: its status, its artifacts, and the status and
//! artifact update events (`StreamResponse`).

use serde::{Deserialize, Serialize};

use super::enums::TaskState;
use super::message::Message;
use super::part::Part;
use super::proto::{is_false, null_as_default, Metadata};
use crate::time::Timestamp;

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
    /// The task's generation (draft A2A 1.1): set only for requests that say 1.1.
    #[serde(
        default,
        with = "super::proto::int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub generation: Option<u64>,
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
    /// The task's generation (draft A2A 1.1): set only for requests that say 1.1.
    #[serde(
        default,
        with = "super::proto::int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub generation: Option<u64>,
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
    /// The task's generation (draft A2A 1.1): set only for requests that say 1.1.
    #[serde(
        default,
        with = "super::proto::int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub generation: Option<u64>,
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
