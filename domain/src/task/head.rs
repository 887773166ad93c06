//! The state of a task: its head (the snapshot, small whatever the history), what it keeps of
//! artifacts and help requests, the aggregate around it, and the helpers every rule uses.

use serde::{Deserialize, Serialize};

use crate::error::DomainError;
use crate::extensions::harness::TaskExtensionData;
use crate::ids::stored::{self, Stored};
use crate::ids::{ArtifactId, ContextId, ParticipantId, Principal, TaskId};
use crate::task::intake;
use crate::time::{nanos, Timestamp};
use crate::wire::{Message, Metadata, TaskState, TaskStatus, TaskStatusUpdateEvent};

/// What the head remembers of an artifact (its content lives in the read model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactHead {
    pub artifact_id: ArtifactId,
    /// Chunks written so far (the first one is chunk 0).
    pub chunks: u32,
    /// A chunk marked `lastChunk` arrived: no more appends.
    pub closed: bool,
}

/// The current state of a created task, small whatever its history (the snapshot).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskHead {
    pub id: TaskId,
    pub context_id: ContextId,
    pub owner: Principal,
    #[serde(with = "nanos")]
    pub created_at: Timestamp,
    /// Its time is kept to the nanosecond (the wire shows milliseconds): the stores order
    /// lists by it, and a head read back must order where it was written.
    #[serde(serialize_with = "status_to_the_nanosecond")]
    pub status: TaskStatus,
    /// Version of the event that last changed the status.
    pub status_version: u64,
    /// `TaskStatusUpdateEvent.metadata` of that status update: the usage totals (kagent usage
    /// extension) when the update ends an execution and a model call reported usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_metadata: Option<Metadata>,
    pub metadata: Metadata,
    pub artifacts: Vec<ArtifactHead>,
    /// Messages in history so far.
    pub history_len: u64,
    /// Their size as JSON, summed (`MAX_HISTORY_BYTES`). Counted from the first event for a
    /// task replayed; from when it was first kept for a head restored from an older snapshot.
    #[serde(default)]
    pub history_bytes: u64,
    /// The most recent of them (bounded), so short histories are read from the head.
    #[serde(
        default,
        skip_serializing_if = "super::recent::RecentHistory::is_empty"
    )]
    pub recent: super::recent::RecentHistory,
    /// The last timeline stamp handed out; the next one is strictly later.
    #[serde(with = "nanos")]
    pub last_timeline: Timestamp,
    /// The tiny-harness task extension data, when the task has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext: Option<TaskExtensionData>,
    /// An open help request: only this participant's reply resumes the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_help: Option<PendingHelp>,
    /// Children spawned so far (the next child is `<id>.<children + 1>`).
    #[serde(default)]
    pub children: u32,
    /// A task for a participant: completes on this assignee's first accepted message.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "stored::opt"
    )]
    pub awaiting_assignee: Option<ParticipantId>,
    /// Token usage over the task's whole life (kagent usage extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::extensions::usage::UsageTotals>,
    /// Version of the last `AgentWorkRequested` event (0: none yet).
    #[serde(default)]
    pub work_requested: u64,
    /// The last `AgentWorkRequested` version whose turn finished.
    #[serde(default)]
    pub turn_done: u64,
    /// Model steps the current execution took in earlier turns (continuations); new work
    /// starts a new execution at 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub execution_steps: u32,
    /// Skills whose instructions are in the agent's context.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded_skills: Vec<String>,
    /// Webhook subscriptions (push notification configs), in registration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub push: Vec<crate::push::Subscription>,
    /// A2UI surfaces the agent created (from `a2ui` artifacts) and not deleted.
    #[serde(
        default,
        skip_serializing_if = "crate::extensions::a2ui::Surfaces::is_empty"
    )]
    pub ui: crate::extensions::a2ui::Surfaces,
    /// The task's generation (A2A 1.1 draft): how many events changed what a client sees of
    /// the task — a status update or an artifact update each, 1 once created. Heads written
    /// before it existed count from their next such event.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub generation: u64,
    /// The decisions raised on the task, open and answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<super::shapes::Gate>,
    /// The work a handoff proposed, and where its work item is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<super::shapes::HandoffHead>,
    /// A client activated kagent's hitl/v1 on a message of the task: its pauses (tool
    /// approvals, questions) carry the extension's payloads.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hitl: bool,
    /// Every request for client input the task made, in the order asked (draft A2A 1.1
    /// elicitations, `task::elicitations`). Heads written before it existed list theirs from
    /// the first event folded after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<super::shapes::Asked>,
    /// Ids of the elicitations changed since the last status update: the next one carries them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unshown: Vec<String>,
    /// The upstream agent's task this one mirrors, when an upstream agent works on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<super::mirror::UpstreamHead>,
}

/// `TaskStatus` as the wire writes it, but for its time: to the nanosecond, as every other
/// time of a head (`TaskStatus`'s own deserialisation reads either).
fn status_to_the_nanosecond<S: serde::Serializer>(
    status: &TaskStatus,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Kept<'a> {
        state: TaskState,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<&'a Message>,
        #[serde(skip_serializing_if = "Option::is_none")]
        timestamp: Option<String>,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        elicitations: &'a [crate::wire::Elicitation],
    }
    Kept {
        state: status.state,
        message: status.message.as_ref(),
        timestamp: status.timestamp.map(Timestamp::to_rfc3339_nanos),
        elicitations: &status.elicitations,
    }
    .serialize(s)
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A help request waiting for its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingHelp {
    /// The question's message id: a hitl/v1 `ask_user_response` names it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(deserialize_with = "stored::id")]
    pub participant_id: ParticipantId,
    pub question: String,
    #[serde(default)]
    pub options: Vec<String>,
}

/// The aggregate: `None` until created. `version` counts applied events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskAggregate {
    pub version: u64,
    pub head: Option<TaskHead>,
}

impl TaskAggregate {
    pub fn head(&self) -> Option<&TaskHead> {
        self.head.as_ref()
    }
}

impl TaskHead {
    /// The status update that set the current status, as a streaming or push client receives
    /// it (`TaskStatusUpdateEvent`).
    pub fn status_update(&self) -> TaskStatusUpdateEvent {
        TaskStatusUpdateEvent {
            task_id: self.id.to_string(),
            context_id: self.context_id.to_string(),
            status: self.status.clone(),
            metadata: self.status_metadata.clone(),
            // Stored without it: a stream adds it for the clients that ask (A2A 1.1).
            generation: None,
        }
    }

    /// Metadata of a status update: the task-lifetime usage under the usage extension's URI
    /// when the update ends an execution (a terminal or interrupted state, or waiting for
    /// sub-tasks) and some model call reported usage; consumers replace, never sum.
    pub(super) fn status_update_metadata(&self, awaiting_children: bool) -> Option<Metadata> {
        let state = self.status.state;
        if !(awaiting_children || state.is_terminal() || state.is_interrupted()) {
            return None;
        }
        let usage = serde_json::to_value(self.usage.as_ref()?).ok()?;
        let mut m = Metadata::new();
        m.insert(crate::extensions::usage::USAGE_EXTENSION_URI.into(), usage);
        Some(m)
    }

    /// Sub-tasks not yet completed, failed, canceled or rejected. Their ids are read from the
    /// extension data as stored (a task id is checked where a reference enters: the envelope).
    pub fn unresolved_children(&self) -> Vec<TaskId> {
        self.ext
            .as_ref()
            .map(|d| {
                d.sub_tasks
                    .iter()
                    .filter(|r| {
                        !r.state
                            .as_deref()
                            .and_then(TaskState::from_name)
                            .is_some_and(TaskState::is_terminal)
                    })
                    .map(|r| TaskId::from_stored(r.task_id.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The parent tasks on this harness (references without an agent), as stored.
    pub fn local_parents(&self) -> Vec<TaskId> {
        self.ext
            .as_ref()
            .map(|d| {
                d.parent_tasks
                    .iter()
                    .filter(|p| p.agent.is_none())
                    .map(|p| TaskId::from_stored(p.task_id.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The task extension data, or the refusal of a command that needs it.
    pub(super) fn ext_or_refuse(&self, field: &str) -> Result<&TaskExtensionData, DomainError> {
        self.ext.as_ref().ok_or_else(|| {
            DomainError::invalid(
                field,
                "this task has no task extension data; send an application/vnd.tiny-harness.task+json envelope first",
            )
        })
    }

    /// The stamp of the next event: `at`, or just after the last timeline stamp.
    pub(super) fn next_stamp(&self, at: Timestamp) -> Timestamp {
        if at > self.last_timeline {
            at
        } else {
            self.last_timeline.next_nano()
        }
    }

    /// A message entered history (the read model writes its row).
    pub(super) fn record_history(&mut self, m: &Message) {
        self.history_len += 1;
        self.history_bytes = self
            .history_bytes
            .saturating_add(crate::wire::json_size(m) as u64);
        self.recent.push(m);
    }

    /// Gives an agent message its task, context and timeline stamp.
    pub(super) fn own_message(&self, mut m: Message, at: Timestamp) -> Message {
        intake::strip_server_keys(&mut m.metadata);
        intake::stamp_timeline(&mut m.metadata, at);
        m.task_id = Some(self.id.to_string());
        m.context_id = Some(self.context_id.to_string());
        m
    }
}

#[cfg(test)]
mod tests {
    use crate::ids::{ContextId, Principal, TaskId};
    use crate::task::{TaskAggregate, TaskEvent};
    use crate::time::Timestamp;
    use crate::wire::TaskState;

    #[test]
    fn a_head_read_back_keeps_its_status_time_to_the_nanosecond() {
        let at = Timestamp::parse("2026-05-01T00:00:00.001234567Z").unwrap();
        let mut s = TaskAggregate::default();
        s.apply_event(&TaskEvent::TaskCreated {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            at,
        });
        s.apply_event(&TaskEvent::StatusChanged {
            state: TaskState::Working,
            message: None,
            at: at.plus_millis(1),
        });
        let head = s.head.clone().unwrap();
        let json = serde_json::to_string(&head).unwrap();
        let back: super::TaskHead = serde_json::from_str(&json).unwrap();
        assert_eq!(back.status.timestamp, Some(at.plus_millis(1)));
        assert_eq!(back, head);
        // What a client is shown stays in milliseconds.
        let wire = serde_json::to_value(&head.status).unwrap();
        assert_eq!(wire["timestamp"], "2026-05-01T00:00:00.002Z");
    }
}
