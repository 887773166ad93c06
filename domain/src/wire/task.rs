//! The `Task` object and what streams about it: its status, its artifacts, and the status and
//! artifact update events (`StreamResponse`).

use serde::{Deserialize, Serialize};

use super::enums::{ElicitationState, TaskState};
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
    /// Draft A2A 1.1 (a2aproject/A2A#2149): the elicitations created or changed at this
    /// status — a delta, merged by id into `Task.elicitations`. Shown to 1.1 requests only.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub elicitations: Vec<Elicitation>,
}

impl TaskStatus {
    /// A status with no message and no elicitation changes.
    pub fn new(state: TaskState, timestamp: Option<Timestamp>) -> Self {
        Self {
            state,
            message: None,
            timestamp,
            elicitations: Vec::new(),
        }
    }
}

/// Draft A2A 1.1 (a2aproject/A2A#2149) `Elicitation`: a request for client input, by its id
/// (unique in the task), where it stands and what it is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Elicitation {
    #[serde(alias = "elicitation_id")]
    pub elicitation_id: String,
    pub state: ElicitationState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
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
    /// Draft A2A 1.1 (the task timeline): the generation the artifact first appeared at, and
    /// the one its last chunk did. Set only for requests that say 1.1.
    #[serde(
        alias = "start_generation",
        default,
        with = "super::proto::int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub start_generation: Option<u64>,
    #[serde(
        alias = "end_generation",
        default,
        with = "super::proto::int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub end_generation: Option<u64>,
}

/// One entry of a task's timeline (draft A2A 1.1): a message, or a status the task took, with
/// the generation it belongs to (several entries may share one: a message does not move it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    #[serde(with = "super::proto::int64_required")]
    pub generation: u64,
    #[serde(flatten)]
    pub entry: TimelineItem,
}

/// What a timeline entry holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TimelineItem {
    Message(Message),
    Status(TaskStatus),
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
    /// Draft A2A 1.1: the messages and statuses of the task in order, each with its
    /// generation (`projection::timeline`). Set only for requests that say 1.1; `history` is
    /// filled beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<TimelineEntry>>,
    /// Draft A2A 1.1 (a2aproject/A2A#2149): every request for client input the task made,
    /// open and resolved (`projection::elicitations`). Shown to 1.1 requests only.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub elicitations: Vec<Elicitation>,
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
