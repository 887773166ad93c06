//! The commands a task accepts: what clients, the agent and the service ask of it. Ids and the
//! clock come in with the command; `decide` turns each into events or a refusal.

use crate::extensions::harness::{Plan, Role, TaskExtensionData};
use crate::ids::{ContextId, ParticipantId, Principal, TaskId};
use crate::time::Timestamp;
use crate::wire::{Artifact, Message, TaskState};

/// A client starts a task with its first message.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTask {
    pub task_id: TaskId,
    pub context_id: ContextId,
    pub owner: Principal,
    pub message: Message,
    pub at: Timestamp,
    /// Extension data set by the server (sub-tasks); else read from the message's envelope.
    pub extension: Option<Box<TaskExtensionData>>,
    /// A task for a participant: waits for this assignee's first accepted message.
    pub awaiting_assignee: Option<ParticipantId>,
}

/// A client sends a message to an existing task.
#[derive(Debug, Clone, PartialEq)]
pub struct AppendUserMessage {
    pub message: Message,
    pub at: Timestamp,
    /// The authenticated principal sending it (none: the task's owner). It speaks as its own
    /// participant whatever `metadata.participant_id` says, unless it is an admin (ADR 021).
    pub caller: Option<Principal>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TaskCommand {
    CreateTask(CreateTask),
    AppendUserMessage(AppendUserMessage),
    /// A client's message opening a task that hands work over (DMP work/v1).
    ProposeHandoff(Box<super::shapes::ProposeHandoff>),
    /// A handoff's approved work item moves on (the agent or an operator says so).
    AdvanceWork(Box<super::shapes::AdvanceWork>),
    /// A deciding answer to one of the task's gates.
    AnswerGate(Box<super::shapes::AnswerGate>),
    /// The agent asks a person before running tool calls (kagent hitl/v1).
    RequestToolApproval(Box<super::shapes::RequestToolApproval>),
    /// A person decides the calls of the open tool-approval gate.
    AnswerToolApproval(Box<super::shapes::AnswerToolApproval>),
    /// The commands after it in the commit apply only if the task's generation is `expected`.
    RequireGeneration {
        expected: u64,
    },
    /// The agent says something (kept in history).
    AppendAgentMessage {
        message: Message,
        at: Timestamp,
    },
    /// The agent moves the task to a new state, optionally with a status message.
    ChangeStatus {
        state: TaskState,
        message: Option<Message>,
        at: Timestamp,
    },
    /// The agent adds an artifact, or a chunk of one (`append`).
    AddArtifact {
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
        at: Timestamp,
    },
    /// A client cancels the task: its owner or an admin participant (`by`; none: the owner
    /// or the service).
    CancelTask {
        at: Timestamp,
        by: Option<Principal>,
    },
    /// `set_participant_role`: only an admin, and never removing the last admin.
    SetParticipantRole {
        participant_id: ParticipantId,
        role: Role,
        by: Option<ParticipantId>,
        at: Timestamp,
    },
    /// Attaches a plan (or replaces it, keeping done steps' outputs where ids match). The step
    /// commands below name a step by its id or its name (as the tools do); the events that
    /// follow carry the step's id.
    CreatePlan {
        plan: Plan,
        at: Timestamp,
    },
    StartStep {
        step: String,
        at: Timestamp,
    },
    CompleteStep {
        step: String,
        output: String,
        at: Timestamp,
    },
    FailStep {
        step: String,
        reason: String,
        at: Timestamp,
    },
    /// Links a new child `<id>.<n>` (the service then creates it), optionally from a step.
    SpawnSubTask {
        step: Option<String>,
        at: Timestamp,
    },
    /// A child's state changed.
    RecordChildState {
        child_id: TaskId,
        state: TaskState,
        summary: String,
        at: Timestamp,
    },
    /// The worker finished the turn for the work requested at `work_seq`.
    FinishAgentTurn {
        work_seq: u64,
        at: Timestamp,
    },
    /// The turn for the work requested at `work_seq` was given up after `attempts` (its
    /// retries spent, or dead-lettered): the task fails with `reason` (`liveness`).
    GiveUpAgentWork {
        work_seq: u64,
        attempts: u32,
        reason: String,
        at: Timestamp,
    },
    /// The deadline reaper: a task at work with no event in the last `deadline_secs` fails.
    FailStalledTask {
        deadline_secs: u64,
        at: Timestamp,
    },
    /// A skill's instructions join (or leave) the agent's context for this task.
    LoadSkill {
        name: String,
        at: Timestamp,
    },
    UnloadSkill {
        name: String,
        at: Timestamp,
    },
    /// Records a model call's usage.
    RecordUsage {
        model: Option<String>,
        usage: crate::extensions::usage::Usage,
        at: Timestamp,
    },
    /// Registers (or replaces, same id) a webhook subscription; allowed in any state.
    /// `by`: the principal registering it (none: the task's owner); it becomes theirs.
    SetPushConfig {
        config: crate::push::PushConfigSpec,
        at: Timestamp,
        by: Option<Principal>,
    },
    /// Removes a subscription of `by`'s (none: the owner's); removing one that does not exist,
    /// or someone else's, changes nothing.
    DeletePushConfig {
        id: String,
        at: Timestamp,
        by: Option<Principal>,
    },
    /// The worker ran out of time before the agent's loop finished: the same execution goes on
    /// in a new turn (a new work request, so a new, de-duplicable queue message), after
    /// `steps_taken` model steps. `after` is the work request the stopping turn served; if a
    /// newer one exists, its own turn runs the loop and nothing is added.
    ContinueAgentWork {
        after: u64,
        steps_taken: u32,
        at: Timestamp,
    },
    /// The agent's execution ends waiting for its sub-tasks: a status update (state unchanged)
    /// that carries the usage totals, like every update that ends an execution.
    AwaitSubTasks {
        at: Timestamp,
    },
    /// `emit_ui`: checked A2UI messages become a new artifact `a2ui:<sequence of its event>`.
    EmitUi {
        messages: crate::extensions::a2ui::UiMessages,
        at: Timestamp,
    },
    /// What the task knows of the upstream agent's task, first in the commit of a batch of its
    /// events (`upstream_batch::plan`).
    RecordUpstream {
        upstream: Box<super::mirror::UpstreamHead>,
        at: Timestamp,
    },
    /// Asks a participant; the task waits (INPUT_REQUIRED) for that participant's reply.
    AskParticipant {
        participant_id: ParticipantId,
        question: String,
        options: Vec<String>,
        at: Timestamp,
    },
}
