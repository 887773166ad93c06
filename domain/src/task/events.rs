//! The events of a task: what happened to it, as stored (externally tagged JSON, nanosecond
//! stamps), with the type name and payload version stored beside each.

use cqrs_es::DomainEvent;
use serde::{Deserialize, Serialize};

use crate::extensions::harness::{Effort, Plan, Role, TaskExtensionData};
use crate::ids::{stored, ArtifactId, ContextId, ParticipantId, Principal, StepId, TaskId};
use crate::time::{nanos, Timestamp};
use crate::wire::{Artifact, Message, Metadata, Part, TaskState};

/// Version of the event payload shapes written today (see `upcast`).
pub const EVENT_VERSION: &str = "1.0";

/// What happened to a task. Serialized externally tagged (`{"MessageAppended": {…}}`) with
/// type and version stored beside it, so old shapes can be upcast. Ids serialise as plain
/// strings; the step, participant and task ids typed after they were first stored are read
/// back as written (`ids::stored`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TaskEvent {
    TaskCreated {
        task_id: TaskId,
        context_id: ContextId,
        owner: Principal,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    MessageAppended {
        message: Message,
        #[serde(with = "nanos")]
        at: Timestamp,
        /// An admin who sent it for the participant it names (ADR 021).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        acted_by: Option<Principal>,
    },
    StatusChanged {
        state: TaskState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Message>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ArtifactAdded {
        artifact: Artifact,
        last_chunk: bool,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ArtifactChunkAppended {
        artifact_id: ArtifactId,
        parts: Vec<Part>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Metadata>,
        last_chunk: bool,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    TaskCanceled {
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// The task extension data, as it is after the change.
    ExtensionUpdated {
        data: TaskExtensionData,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "stored::opt"
        )]
        by: Option<ParticipantId>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// A message was not accepted (the sender is not a participant); nothing else changed.
    MessageRefused {
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "stored::opt"
        )]
        participant_id: Option<ParticipantId>,
        reason: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ModelChanged {
        model: String,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "stored::opt"
        )]
        by: Option<ParticipantId>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ReasoningEffortChanged {
        effort: Effort,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "stored::opt"
        )]
        by: Option<ParticipantId>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ParticipantRoleChanged {
        #[serde(deserialize_with = "stored::id")]
        participant_id: ParticipantId,
        role: Role,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "stored::opt"
        )]
        by: Option<ParticipantId>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    PlanCreated {
        plan: Plan,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    StepStarted {
        #[serde(deserialize_with = "stored::id")]
        step_id: StepId,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    StepCompleted {
        #[serde(deserialize_with = "stored::id")]
        step_id: StepId,
        output: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    StepFailed {
        #[serde(deserialize_with = "stored::id")]
        step_id: StepId,
        reason: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    SubTaskSpawned {
        #[serde(deserialize_with = "stored::id")]
        child_id: TaskId,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "stored::opt"
        )]
        step_id: Option<StepId>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ChildStateRecorded {
        #[serde(deserialize_with = "stored::id")]
        child_id: TaskId,
        state: TaskState,
        summary: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    HelpRequested {
        #[serde(deserialize_with = "stored::id")]
        participant_id: ParticipantId,
        question: String,
        #[serde(default)]
        options: Vec<String>,
        message: Message,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    HelpAnswered {
        #[serde(deserialize_with = "stored::id")]
        participant_id: ParticipantId,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// There is new work for the agent (new input, an answered help request, resolved
    /// sub-tasks): the relay turns this event into an agent turn.
    AgentWorkRequested {
        reason: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    SkillLoaded {
        name: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    SkillUnloaded {
        name: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// The agent finished the work requested at `work_seq` (turns at or before it are done).
    AgentTurnFinished {
        work_seq: u64,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// A model call's token usage, counted once on its final response.
    UsageRecorded {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        usage: crate::extensions::usage::Usage,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// A task for a participant: it completes on this assignee's first accepted message.
    ParticipantTaskOpened {
        #[serde(deserialize_with = "stored::id")]
        assignee: ParticipantId,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// A webhook subscription was registered (or replaced, same id); it receives the updates
    /// of events after this one.
    PushConfigSet {
        config: crate::push::PushConfigSpec,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// A client handed work over: the task is its draft.
    HandoffProposed {
        work: super::shapes::HandoffWork,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// A handoff's work item moved on in its lifecycle.
    WorkAdvanced {
        status: crate::extensions::dmp::WorkStatus,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// A decision is owed before work goes on.
    GateRaised { gate: super::shapes::Gate },
    /// The gate's deciding answer (its effect follows in the same commit).
    GateAnswered {
        gate_id: String,
        choice: String,
        #[serde(
            default,
            deserialize_with = "stored::opt",
            skip_serializing_if = "Option::is_none"
        )]
        by: Option<ParticipantId>,
        /// A tool-approval gate's decision on each call.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        approvals: Vec<crate::extensions::hitl::Approval>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    PushConfigDeleted {
        id: String,
        /// The deleted subscription's key (`Subscription::key`: ids are each principal's own);
        /// absent in events from before, when an id named one config of the task.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// Recorded right after a continuation's `AgentWorkRequested`: the execution it continues
    /// had taken this many model steps (the turn limit counts across continuations).
    ExecutionContinued {
        steps_taken: u32,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// A change of participants left these principals without sight of the task (recorded
    /// after the change, with a `PushConfigDeleted` for each of their push configs): their
    /// open streams end at this event, and nothing later is delivered to them.
    AccessRevoked {
        principals: Vec<Principal>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// The agent's execution ended waiting for these sub-tasks (a status update, same state).
    SubTasksAwaited {
        #[serde(deserialize_with = "stored::vec")]
        children: Vec<TaskId>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// What the task knows of the upstream agent's task after a batch of its events (ADR 034).
    UpstreamRecorded {
        upstream: Box<super::mirror::UpstreamHead>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
}

impl TaskEvent {
    pub fn name(&self) -> &'static str {
        match self {
            Self::TaskCreated { .. } => "TaskCreated",
            Self::MessageAppended { .. } => "MessageAppended",
            Self::StatusChanged { .. } => "StatusChanged",
            Self::ArtifactAdded { .. } => "ArtifactAdded",
            Self::ArtifactChunkAppended { .. } => "ArtifactChunkAppended",
            Self::TaskCanceled { .. } => "TaskCanceled",
            Self::ExtensionUpdated { .. } => "ExtensionUpdated",
            Self::MessageRefused { .. } => "MessageRefused",
            Self::ModelChanged { .. } => "ModelChanged",
            Self::ReasoningEffortChanged { .. } => "ReasoningEffortChanged",
            Self::ParticipantRoleChanged { .. } => "ParticipantRoleChanged",
            Self::PlanCreated { .. } => "PlanCreated",
            Self::StepStarted { .. } => "StepStarted",
            Self::StepCompleted { .. } => "StepCompleted",
            Self::StepFailed { .. } => "StepFailed",
            Self::SubTaskSpawned { .. } => "SubTaskSpawned",
            Self::ChildStateRecorded { .. } => "ChildStateRecorded",
            Self::HelpRequested { .. } => "HelpRequested",
            Self::HelpAnswered { .. } => "HelpAnswered",
            Self::ParticipantTaskOpened { .. } => "ParticipantTaskOpened",
            Self::SubTasksAwaited { .. } => "SubTasksAwaited",
            Self::ExecutionContinued { .. } => "ExecutionContinued",
            Self::UsageRecorded { .. } => "UsageRecorded",
            Self::AgentWorkRequested { .. } => "AgentWorkRequested",
            Self::AgentTurnFinished { .. } => "AgentTurnFinished",
            Self::SkillLoaded { .. } => "SkillLoaded",
            Self::SkillUnloaded { .. } => "SkillUnloaded",
            Self::PushConfigSet { .. } => "PushConfigSet",
            Self::PushConfigDeleted { .. } => "PushConfigDeleted",
            Self::AccessRevoked { .. } => "AccessRevoked",
            Self::HandoffProposed { .. } => "HandoffProposed",
            Self::GateRaised { .. } => "GateRaised",
            Self::WorkAdvanced { .. } => "WorkAdvanced",
            Self::GateAnswered { .. } => "GateAnswered",
            Self::UpstreamRecorded { .. } => "UpstreamRecorded",
        }
    }
}

impl DomainEvent for TaskEvent {
    fn event_type(&self) -> String {
        self.name().to_string()
    }
    fn event_version(&self) -> String {
        EVENT_VERSION.to_string()
    }
}
