//! The Task aggregate: commands in, events out (`decide`), events folded into state (`apply`).
//! Pure and synchronous; ids and the clock come in with the command.

use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};

use crate::error::DomainError;
use crate::ext::{self, Effort, Plan, Role, StepState, TaskExtensionData, TaskRef};
use crate::ids::{ArtifactId, ContextId, Principal, TaskId};
use crate::intake::{self, TASK_CREATED_AT_KEY};
use crate::time::{nanos, Timestamp};
use crate::wire::{
    Artifact, Message, Metadata, Part, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

/// Most artifacts one task may hold (the head lists them, so it stays small).
pub const MAX_ARTIFACTS_PER_TASK: usize = 256;
/// Most chunks one artifact may be streamed in.
pub const MAX_CHUNKS_PER_ARTIFACT: u32 = 10_000;

/// Version of the event payload shapes written today (see `upcast`).
pub const EVENT_VERSION: &str = "1.0";

// ------------------------------------------------------------------ commands

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
    pub awaiting_assignee: Option<String>,
}

/// A client sends a message to an existing task.
#[derive(Debug, Clone, PartialEq)]
pub struct AppendUserMessage {
    pub message: Message,
    pub at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TaskCommand {
    CreateTask(CreateTask),
    AppendUserMessage(AppendUserMessage),
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
    /// A client cancels the task.
    CancelTask {
        at: Timestamp,
    },
    /// `set_participant_role`: only an admin, and never removing the last admin.
    SetParticipantRole {
        participant_id: String,
        role: Role,
        by: Option<String>,
        at: Timestamp,
    },
    /// Attaches a plan (or replaces it, keeping done steps' outputs where ids match).
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
        child_id: String,
        state: TaskState,
        summary: String,
        at: Timestamp,
    },
    /// The worker finished the turn for the work requested at `work_seq`.
    FinishAgentTurn {
        work_seq: u64,
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
        usage: crate::llm::Usage,
        at: Timestamp,
    },
    /// Registers (or replaces, same id) a webhook subscription; allowed in any state.
    SetPushConfig {
        config: crate::push::PushConfigSpec,
        at: Timestamp,
    },
    /// Removes a subscription; removing one that does not exist changes nothing.
    DeletePushConfig {
        id: String,
        at: Timestamp,
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
        messages: crate::a2ui::UiMessages,
        at: Timestamp,
    },
    /// Asks a participant; the task waits (INPUT_REQUIRED) for that participant's reply.
    AskParticipant {
        participant_id: String,
        question: String,
        options: Vec<String>,
        at: Timestamp,
    },
}

// ------------------------------------------------------------------ events

/// What happened to a task. Serialized externally tagged (`{"MessageAppended": {…}}`) with
/// type and version stored beside it, so old shapes can be upcast.
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
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// A message was not accepted (the sender is not a participant); nothing else changed.
    MessageRefused {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        participant_id: Option<String>,
        reason: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ModelChanged {
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ReasoningEffortChanged {
        effort: Effort,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ParticipantRoleChanged {
        participant_id: String,
        role: Role,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    PlanCreated {
        plan: Plan,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    StepStarted {
        step_id: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    StepCompleted {
        step_id: String,
        output: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    StepFailed {
        step_id: String,
        reason: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    SubTaskSpawned {
        child_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step_id: Option<String>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ChildStateRecorded {
        child_id: String,
        state: TaskState,
        summary: String,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    HelpRequested {
        participant_id: String,
        question: String,
        #[serde(default)]
        options: Vec<String>,
        message: Message,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    HelpAnswered {
        participant_id: String,
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
        usage: crate::llm::Usage,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    /// A task for a participant: it completes on this assignee's first accepted message.
    ParticipantTaskOpened {
        assignee: String,
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
    PushConfigDeleted {
        id: String,
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
    /// The agent's execution ended waiting for these sub-tasks (a status update, same state).
    SubTasksAwaited {
        children: Vec<String>,
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

// ------------------------------------------------------------------ state

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awaiting_assignee: Option<String>,
    /// Token usage over the task's whole life (kagent usage extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::llm::UsageTotals>,
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
    #[serde(default, skip_serializing_if = "crate::a2ui::Surfaces::is_empty")]
    pub ui: crate::a2ui::Surfaces,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A help request waiting for its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingHelp {
    pub participant_id: String,
    pub question: String,
    #[serde(default)]
    pub options: Vec<String>,
}

/// Longest help question, in bytes.
pub const MAX_QUESTION_BYTES: usize = 4096;
/// Longest summary of a child's state recorded on its parent.
pub const MAX_CHILD_SUMMARY_CHARS: usize = 500;

/// The aggregate: `None` until created. `version` counts applied events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskAggregate {
    pub version: u64,
    pub head: Option<TaskHead>,
}

fn require_admin(
    data: &TaskExtensionData,
    by: Option<&str>,
    field: &str,
) -> Result<(), DomainError> {
    if data.participants.is_empty() {
        return Ok(());
    }
    let role = by.and_then(|b| data.participant(b)).map(|p| p.role);
    if role == Some(Role::Admin) {
        return Ok(());
    }
    Err(DomainError::NotPermitted {
        field: field.into(),
        reason: format!(
            "only an admin may change participants and roles ({} is {})",
            by.unwrap_or("an unnamed sender"),
            role.map(|r| format!("{r:?}").to_lowercase())
                .unwrap_or_else(|| "not a participant".into())
        ),
    })
}

impl TaskHead {
    fn with_step(&mut self, id: &str, f: impl FnOnce(&mut ext::Step)) {
        if let Some(step) = self
            .ext
            .as_mut()
            .and_then(|d| d.plan.as_mut())
            .and_then(|p| p.steps.iter_mut().find(|s| s.id == id))
        {
            f(step);
        }
    }

    fn ext_or_refuse(&self, field: &str) -> Result<&TaskExtensionData, DomainError> {
        self.ext.as_ref().ok_or_else(|| {
            DomainError::invalid(
                field,
                "this task has no task extension data; send an application/vnd.tiny-harness.task+json envelope first",
            )
        })
    }

    fn step_index(&self, step: &str) -> Result<(&Plan, usize), DomainError> {
        let plan = self
            .ext
            .as_ref()
            .and_then(|d| d.plan.as_ref())
            .ok_or_else(|| DomainError::invalid("plan", "the task has no plan"))?;
        let i = plan.index_of(step).ok_or_else(|| {
            DomainError::invalid("step", format!("the plan has no step {step:?}"))
        })?;
        Ok((plan, i))
    }

    /// A step that is still pending or active.
    fn open_step(&self, step: &str) -> Result<(&Plan, usize), DomainError> {
        let (plan, i) = self.step_index(step)?;
        let s = &plan.steps[i];
        if matches!(s.state, StepState::Done | StepState::Failed) {
            return Err(DomainError::invalid(
                "step",
                format!("step {} is already {:?}", s.id, s.state).to_lowercase(),
            ));
        }
        Ok((plan, i))
    }

    /// The status update that set the current status, as a streaming or push client receives
    /// it (`TaskStatusUpdateEvent`).
    pub fn status_update(&self) -> TaskStatusUpdateEvent {
        TaskStatusUpdateEvent {
            task_id: self.id.to_string(),
            context_id: self.context_id.to_string(),
            status: self.status.clone(),
            metadata: self.status_metadata.clone(),
        }
    }

    /// Metadata of a status update: the task-lifetime usage under the usage extension's URI
    /// when the update ends an execution (a terminal or interrupted state, or waiting for
    /// sub-tasks) and some model call reported usage; consumers replace, never sum.
    fn status_update_metadata(&self, awaiting_children: bool) -> Option<Metadata> {
        let state = self.status.state;
        if !(awaiting_children || state.is_terminal() || state.is_interrupted()) {
            return None;
        }
        let usage = serde_json::to_value(self.usage.as_ref()?).ok()?;
        let mut m = Metadata::new();
        m.insert(crate::llm::USAGE_EXTENSION_URI.into(), usage);
        Some(m)
    }

    /// Sub-tasks not yet completed, failed, canceled or rejected.
    pub fn unresolved_children(&self) -> Vec<String> {
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
                    .map(|r| r.task_id.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A plan event: a first plan, or a replacement keeping done outputs where ids match.
    fn plan_event(&self, plan: Plan, at: Timestamp) -> TaskEvent {
        let plan = match self.ext.as_ref().and_then(|d| d.plan.as_ref()) {
            Some(old) => plan.replacing(old),
            None => plan,
        };
        TaskEvent::PlanCreated {
            plan,
            at: self.next_stamp(at),
        }
    }

    /// A user message: membership, `/model` and `/effort`, envelopes, help answers and
    /// participant tasks, then the message itself.
    fn decide_user_message(
        &self,
        message: Message,
        at: Timestamp,
    ) -> Result<Vec<TaskEvent>, DomainError> {
        let at = self.next_stamp(at);
        let sender = ext::sender_of(&message).map(str::to_string);
        if let Some(data) = &self.ext {
            if !data.participants.is_empty() {
                let member = sender
                    .as_deref()
                    .and_then(|s| data.participant(s))
                    .is_some();
                if !member {
                    let reason = match &sender {
                        Some(s) => {
                            format!("message not accepted: {s} is not a participant of this task")
                        }
                        None => "message not accepted: name the sender in metadata.participant_id"
                            .to_string(),
                    };
                    return Ok(vec![TaskEvent::MessageRefused {
                        participant_id: sender,
                        reason,
                        at,
                    }]);
                }
            }
            match ext::slash_command(&message) {
                Some(ext::SlashCommand::Model(name)) => {
                    if name.is_empty()
                        || name.len() > ext::MAX_MODEL_NAME_BYTES
                        || name.contains(char::is_whitespace)
                    {
                        return Err(DomainError::invalid(
                            "model",
                            format!(
                                "/model needs one model name of 1 to {} bytes, e.g. /model gpt-5",
                                ext::MAX_MODEL_NAME_BYTES
                            ),
                        ));
                    }
                    return Ok(vec![TaskEvent::ModelChanged {
                        model: name,
                        by: sender,
                        at,
                    }]);
                }
                Some(ext::SlashCommand::Effort(level)) => {
                    let effort = match level.as_str() {
                        "low" => Effort::Low,
                        "medium" => Effort::Medium,
                        "high" => Effort::High,
                        other => {
                            return Err(DomainError::invalid(
                                "reasoning_effort",
                                format!("/effort takes low, medium or high (got {other:?})"),
                            ))
                        }
                    };
                    return Ok(vec![TaskEvent::ReasoningEffortChanged {
                        effort,
                        by: sender,
                        at,
                    }]);
                }
                None => {}
            }
        }
        // A user's action on a surface: only on one this task created; the agent reads it as text.
        let message = match crate::a2ui::action_of(&message) {
            None => message,
            Some(action) => match action.and_then(|a| self.ui.check(&a).map(|()| a)) {
                Ok(a) => {
                    let mut m = message;
                    m.parts.insert(0, Part::text(a.text()));
                    m
                }
                Err(reason) => {
                    return Ok(vec![TaskEvent::MessageRefused {
                        participant_id: sender,
                        reason,
                        at,
                    }])
                }
            },
        };
        let mut events = Vec::new();
        if let Some(raw) = ext::envelope_of(&message) {
            events.extend(self.decide_envelope(raw, sender.as_deref(), at)?);
        }
        // An envelope-only message updates the task; it is not work for the agent.
        let mut wake = !ext::is_envelope_only(&message);
        events.push(TaskEvent::MessageAppended {
            message: self.own_message(message, at),
            at,
        });
        if let Some(help) = &self.pending_help {
            // Only the asked participant's reply resumes the task.
            wake = sender.as_deref() == Some(help.participant_id.as_str());
            if wake {
                events.push(TaskEvent::HelpAnswered {
                    participant_id: help.participant_id.clone(),
                    at,
                });
            }
        } else if self.awaiting_assignee.is_some() {
            // A task for a participant is finished by that participant, not by the agent.
            wake = false;
        }
        if let (None, Some(assignee), Some(s)) =
            (&self.pending_help, &self.awaiting_assignee, &sender)
        {
            if assignee == s {
                if let Some(TaskEvent::MessageAppended { message, .. }) = events.last() {
                    let mut done = Message::agent_text(format!("{}:done", self.id), message.text());
                    done.task_id = Some(self.id.to_string());
                    done.context_id = Some(self.context_id.to_string());
                    intake::stamp_timeline(&mut done.metadata, at);
                    events.push(TaskEvent::StatusChanged {
                        state: TaskState::Completed,
                        message: Some(done),
                        at,
                    });
                }
            }
        }
        if wake {
            events.push(TaskEvent::AgentWorkRequested {
                reason: "new input".into(),
                at,
            });
        }
        Ok(events)
    }

    /// An envelope on an existing task: validated, permission-checked per field, merged.
    fn decide_envelope(
        &self,
        raw: &serde_json::Value,
        sender: Option<&str>,
        at: Timestamp,
    ) -> Result<Vec<TaskEvent>, DomainError> {
        let incoming = ext::validate_envelope(raw)?;
        let given = |k: &str| raw.get(k).is_some();
        let Some(current) = &self.ext else {
            let mut data = incoming;
            data.lifecycle = Some(data.lifecycle());
            let plan = data.plan.take();
            let mut events = vec![TaskEvent::ExtensionUpdated {
                data,
                by: sender.map(str::to_string),
                at,
            }];
            if let Some(p) = plan {
                events.push(TaskEvent::PlanCreated { plan: p, at });
            }
            return Ok(events);
        };
        let mut data = current.clone();
        data.name = incoming.name;
        data.goal = incoming.goal;
        if given("type") {
            data.kind = incoming.kind;
        }
        if given("description") {
            data.description = incoming.description;
        }
        if given("acceptance_criteria") {
            data.acceptance_criteria = incoming.acceptance_criteria;
        }
        if given("participants") && incoming.participants != current.participants {
            require_admin(current, sender, "participants")?;
            if current.admins() > 0 && !incoming.participants.iter().any(|p| p.role == Role::Admin)
            {
                return Err(DomainError::NotPermitted {
                    field: "participants".into(),
                    reason: "the last admin of the task cannot be removed".into(),
                });
            }
            data.participants = incoming.participants;
        }
        for (field, mine, theirs) in [
            (
                "parent_tasks",
                &current.parent_tasks,
                &incoming.parent_tasks,
            ),
            ("sub_tasks", &current.sub_tasks, &incoming.sub_tasks),
        ] {
            if given(field) && mine != theirs {
                return Err(DomainError::NotPermitted {
                    field: field.into(),
                    reason: "is kept by the server as sub-tasks are spawned".into(),
                });
            }
        }
        let mut events = Vec::new();
        if data != *current {
            events.push(TaskEvent::ExtensionUpdated {
                data,
                by: sender.map(str::to_string),
                at,
            });
        }
        if let Some(plan) = incoming.plan {
            events.extend(self.decide_plan_envelope(plan, at)?);
        }
        Ok(events)
    }

    /// A plan in an envelope: the same steps with new states are step transitions;
    /// anything else replaces the plan.
    fn decide_plan_envelope(
        &self,
        plan: Plan,
        at: Timestamp,
    ) -> Result<Vec<TaskEvent>, DomainError> {
        let Some(old) = self.ext.as_ref().and_then(|d| d.plan.as_ref()) else {
            return Ok(vec![TaskEvent::PlanCreated { plan, at }]);
        };
        let same_shape = old.steps.len() == plan.steps.len()
            && old
                .steps
                .iter()
                .zip(&plan.steps)
                .all(|(a, b)| a.id == b.id && a.depends_on == b.depends_on);
        if !same_shape {
            return Ok(vec![self.plan_event(plan, at)]);
        }
        let mut scratch = old.clone();
        let mut events = Vec::new();
        for (i, (was, now)) in old.steps.iter().zip(&plan.steps).enumerate() {
            if was.state == now.state {
                continue;
            }
            let field = format!("plan.steps[{i}].state");
            match (was.state, now.state) {
                (StepState::Pending, StepState::Active) => {
                    let blockers = scratch.blockers(i);
                    if !blockers.is_empty() {
                        return Err(DomainError::invalid(
                            field,
                            format!("step {} waits for {}", was.id, blockers.join(", ")),
                        ));
                    }
                    events.push(TaskEvent::StepStarted {
                        step_id: was.id.clone(),
                        at,
                    });
                }
                (StepState::Pending | StepState::Active, StepState::Done) => {
                    let blockers = scratch.blockers(i);
                    if !blockers.is_empty() {
                        return Err(DomainError::invalid(
                            field,
                            format!(
                                "step {} cannot complete before {} done",
                                was.id,
                                blockers.join(", ")
                            ),
                        ));
                    }
                    let Some(output) = now.output.clone() else {
                        return Err(DomainError::invalid(
                            format!("plan.steps[{i}].output"),
                            "a step completes with an output",
                        ));
                    };
                    events.push(TaskEvent::StepCompleted {
                        step_id: was.id.clone(),
                        output,
                        at,
                    });
                }
                (StepState::Pending | StepState::Active, StepState::Failed) => {
                    events.push(TaskEvent::StepFailed {
                        step_id: was.id.clone(),
                        reason: now.output.clone().unwrap_or_else(|| "failed".into()),
                        at,
                    });
                }
                (from, to) => {
                    return Err(DomainError::invalid(
                        field,
                        format!("a step does not go from {from:?} to {to:?}").to_lowercase(),
                    ))
                }
            }
            scratch.steps[i].state = now.state;
        }
        Ok(events)
    }

    fn next_stamp(&self, at: Timestamp) -> Timestamp {
        if at > self.last_timeline {
            at
        } else {
            self.last_timeline.next_nano()
        }
    }

    /// Gives an agent message its task, context and timeline stamp.
    fn own_message(&self, mut m: Message, at: Timestamp) -> Message {
        intake::strip_server_keys(&mut m.metadata);
        intake::stamp_timeline(&mut m.metadata, at);
        m.task_id = Some(self.id.to_string());
        m.context_id = Some(self.context_id.to_string());
        m
    }
}

impl TaskAggregate {
    pub fn head(&self) -> Option<&TaskHead> {
        self.head.as_ref()
    }

    /// The decision: which events a command causes, or why it is refused. Changes nothing.
    pub fn decide(&self, command: TaskCommand) -> Result<Vec<TaskEvent>, DomainError> {
        if let TaskCommand::CreateTask(c) = command {
            return self.decide_create(c);
        }
        let head = self
            .head
            .as_ref()
            .ok_or_else(|| DomainError::TaskNotFound {
                task_id: String::new(),
            })?;
        let state = head.status.state;
        match command {
            TaskCommand::CreateTask(_) => unreachable_create(),
            TaskCommand::AppendUserMessage(c) => {
                if state.is_terminal() {
                    return Err(DomainError::TaskTerminal {
                        task_id: head.id.to_string(),
                        state,
                    });
                }
                intake::validate_user_message(&c.message, "message")?;
                if let Some(ctx) = c.message.context_id.as_deref() {
                    if ctx != head.context_id.as_str() {
                        return Err(DomainError::invalid(
                            "message.contextId",
                            format!(
                                "does not match the context {} of task {}",
                                head.context_id, head.id
                            ),
                        ));
                    }
                }
                head.decide_user_message(c.message, c.at)
            }
            TaskCommand::AppendAgentMessage { message, at } => {
                refuse_if_terminal(head)?;
                intake::validate_agent_message(&message, "message")?;
                let at = head.next_stamp(at);
                Ok(vec![TaskEvent::MessageAppended {
                    message: head.own_message(message, at),
                    at,
                }])
            }
            TaskCommand::ChangeStatus {
                state: new_state,
                message,
                at,
            } => {
                refuse_if_terminal(head)?;
                if new_state == TaskState::Unspecified {
                    return Err(DomainError::invalid("status.state", "must be set"));
                }
                if new_state == TaskState::Canceled {
                    return Err(DomainError::invalid(
                        "status.state",
                        "a task is canceled with CancelTask",
                    ));
                }
                if new_state == TaskState::Completed {
                    if let Some(open) = head.unresolved_children().first() {
                        return Err(DomainError::NotPermitted {
                            field: "status.state".into(),
                            reason: format!(
                                "task {} cannot complete while sub-task {open} is unresolved",
                                head.id
                            ),
                        });
                    }
                }
                let at = head.next_stamp(at);
                let message = match message {
                    Some(m) => {
                        intake::validate_agent_message(&m, "status.message")?;
                        Some(head.own_message(m, at))
                    }
                    None => None,
                };
                Ok(vec![TaskEvent::StatusChanged {
                    state: new_state,
                    message,
                    at,
                }])
            }
            TaskCommand::AddArtifact {
                mut artifact,
                append,
                last_chunk,
                at,
            } => {
                refuse_if_terminal(head)?;
                let id = ArtifactId::parse(artifact.artifact_id.clone())
                    .map_err(|e| DomainError::invalid("artifact.artifactId", e))?;
                if artifact.parts.is_empty() {
                    return Err(DomainError::invalid(
                        "artifact.parts",
                        "an artifact needs at least one part",
                    ));
                }
                let existing = head.artifacts.iter().find(|a| a.artifact_id == id);
                let at = head.next_stamp(at);
                match (append, existing) {
                    (true, Some(a)) => {
                        if a.closed {
                            return Err(DomainError::invalid(
                                "artifact.artifactId",
                                format!("artifact {id} already received its last chunk"),
                            ));
                        }
                        if a.chunks >= MAX_CHUNKS_PER_ARTIFACT {
                            return Err(DomainError::invalid(
                                "artifact.parts",
                                format!(
                                    "an artifact may have at most {MAX_CHUNKS_PER_ARTIFACT} chunks"
                                ),
                            ));
                        }
                        intake::strip_server_keys(&mut artifact.metadata);
                        Ok(vec![TaskEvent::ArtifactChunkAppended {
                            artifact_id: id,
                            parts: artifact.parts,
                            metadata: artifact.metadata,
                            last_chunk,
                            at,
                        }])
                    }
                    _ => {
                        if existing.is_none() && head.artifacts.len() >= MAX_ARTIFACTS_PER_TASK {
                            return Err(DomainError::invalid(
                                "artifact",
                                format!(
                                    "a task may have at most {MAX_ARTIFACTS_PER_TASK} artifacts"
                                ),
                            ));
                        }
                        intake::strip_server_keys(&mut artifact.metadata);
                        intake::stamp_timeline(&mut artifact.metadata, at);
                        Ok(vec![TaskEvent::ArtifactAdded {
                            artifact,
                            last_chunk,
                            at,
                        }])
                    }
                }
            }
            TaskCommand::SetParticipantRole {
                participant_id,
                role,
                by,
                at,
            } => {
                refuse_if_terminal(head)?;
                let data = head.ext_or_refuse("participants")?;
                require_admin(data, by.as_deref(), "role")?;
                let Some(current) = data.participant(&participant_id) else {
                    return Err(DomainError::invalid(
                        "participant_id",
                        format!("{participant_id:?} is not a participant of this task"),
                    ));
                };
                if current.role == Role::Admin && role != Role::Admin && data.admins() == 1 {
                    return Err(DomainError::NotPermitted {
                        field: "role".into(),
                        reason: format!("{participant_id} is the last admin of the task"),
                    });
                }
                if current.role == role {
                    return Ok(vec![]);
                }
                Ok(vec![TaskEvent::ParticipantRoleChanged {
                    participant_id,
                    role,
                    by,
                    at: head.next_stamp(at),
                }])
            }
            TaskCommand::CreatePlan { plan, at } => {
                refuse_if_terminal(head)?;
                head.ext_or_refuse("plan")?;
                let plan = plan.normalize("plan")?;
                Ok(vec![head.plan_event(plan, at)])
            }
            TaskCommand::StartStep { step, at } => {
                refuse_if_terminal(head)?;
                let (plan, i) = head.step_index(&step)?;
                let s = &plan.steps[i];
                if s.state != StepState::Pending {
                    return Err(DomainError::invalid(
                        "step",
                        format!("step {} is {:?}, not pending", s.id, s.state).to_lowercase(),
                    ));
                }
                let blockers = plan.blockers(i);
                if !blockers.is_empty() {
                    return Err(DomainError::invalid(
                        "step",
                        format!("step {} waits for {}", s.id, blockers.join(", ")),
                    ));
                }
                Ok(vec![TaskEvent::StepStarted {
                    step_id: s.id.clone(),
                    at: head.next_stamp(at),
                }])
            }
            TaskCommand::CompleteStep { step, output, at } => {
                refuse_if_terminal(head)?;
                let (plan, i) = head.open_step(&step)?;
                let s = &plan.steps[i];
                let blockers = plan.blockers(i);
                if !blockers.is_empty() {
                    return Err(DomainError::invalid(
                        "step",
                        format!(
                            "step {} cannot complete before {} {} done",
                            s.id,
                            blockers.join(", "),
                            if blockers.len() == 1 { "is" } else { "are" }
                        ),
                    ));
                }
                Ok(vec![TaskEvent::StepCompleted {
                    step_id: s.id.clone(),
                    output,
                    at: head.next_stamp(at),
                }])
            }
            TaskCommand::FailStep { step, reason, at } => {
                refuse_if_terminal(head)?;
                let (plan, i) = head.open_step(&step)?;
                let s = &plan.steps[i];
                Ok(vec![TaskEvent::StepFailed {
                    step_id: s.id.clone(),
                    reason,
                    at: head.next_stamp(at),
                }])
            }
            TaskCommand::SpawnSubTask { step, at } => {
                refuse_if_terminal(head)?;
                head.ext_or_refuse("sub_tasks")?;
                let step_id = match step {
                    Some(name) => Some(head.step_index(&name).map(|(p, i)| p.steps[i].id.clone())?),
                    None => None,
                };
                Ok(vec![TaskEvent::SubTaskSpawned {
                    child_id: format!("{}.{}", head.id, head.children + 1),
                    step_id,
                    at: head.next_stamp(at),
                }])
            }
            TaskCommand::RecordChildState {
                child_id,
                state: child_state,
                summary,
                at,
            } => {
                let known = head
                    .ext
                    .as_ref()
                    .is_some_and(|d| d.sub_tasks.iter().any(|r| r.task_id == child_id));
                if !known {
                    return Err(DomainError::invalid(
                        "child_id",
                        format!("{child_id} is not a sub-task of {}", head.id),
                    ));
                }
                if state.is_terminal() {
                    // A finished parent keeps its record as it was.
                    return Ok(vec![]);
                }
                let at = head.next_stamp(at);
                let all_resolved = child_state.is_terminal()
                    && head.unresolved_children().iter().all(|c| *c == child_id);
                let mut events = vec![TaskEvent::ChildStateRecorded {
                    child_id,
                    state: child_state,
                    summary: summary.chars().take(MAX_CHILD_SUMMARY_CHARS).collect(),
                    at,
                }];
                if all_resolved {
                    events.push(TaskEvent::AgentWorkRequested {
                        reason: "sub-tasks resolved".into(),
                        at,
                    });
                }
                Ok(events)
            }
            TaskCommand::LoadSkill { name, at } => {
                if head.loaded_skills.contains(&name) {
                    return Ok(vec![]);
                }
                Ok(vec![TaskEvent::SkillLoaded {
                    name,
                    at: head.next_stamp(at),
                }])
            }
            TaskCommand::UnloadSkill { name, at } => {
                if !head.loaded_skills.contains(&name) {
                    return Err(DomainError::invalid(
                        "name",
                        format!("skill {name} is not loaded"),
                    ));
                }
                Ok(vec![TaskEvent::SkillUnloaded {
                    name,
                    at: head.next_stamp(at),
                }])
            }
            TaskCommand::FinishAgentTurn { work_seq, at } => {
                if work_seq <= head.turn_done {
                    return Ok(vec![]);
                }
                Ok(vec![TaskEvent::AgentTurnFinished {
                    work_seq,
                    at: head.next_stamp(at),
                }])
            }
            TaskCommand::RecordUsage { model, usage, at } => Ok(vec![TaskEvent::UsageRecorded {
                model,
                usage,
                at: head.next_stamp(at),
            }]),
            TaskCommand::SetPushConfig { config, at } => {
                let replaces = head.push.iter().any(|p| p.id == config.id);
                if !replaces && head.push.len() >= crate::push::MAX_PUSH_CONFIGS_PER_TASK {
                    return Err(DomainError::invalid(
                        "id",
                        format!(
                            "task {} already has {} push notification configs, the limit; delete one first",
                            head.id,
                            head.push.len()
                        ),
                    ));
                }
                Ok(vec![TaskEvent::PushConfigSet {
                    config,
                    at: head.next_stamp(at),
                }])
            }
            TaskCommand::DeletePushConfig { id, at } => {
                if !head.push.iter().any(|p| p.id == id) {
                    return Ok(vec![]);
                }
                Ok(vec![TaskEvent::PushConfigDeleted {
                    id,
                    at: head.next_stamp(at),
                }])
            }
            TaskCommand::AskParticipant {
                participant_id,
                question,
                options,
                at,
            } => {
                refuse_if_terminal(head)?;
                let data = head.ext_or_refuse("participant_id")?;
                if data.participant(&participant_id).is_none() {
                    return Err(DomainError::invalid(
                        "participant_id",
                        format!("{participant_id:?} is not a participant of this task"),
                    ));
                }
                if question.trim().is_empty() || question.len() > MAX_QUESTION_BYTES {
                    return Err(DomainError::invalid(
                        "question",
                        format!("must be 1 to {MAX_QUESTION_BYTES} bytes"),
                    ));
                }
                let at = head.next_stamp(at);
                let mut text = question.clone();
                if !options.is_empty() {
                    text.push_str(&format!("\nOptions: {}", options.join(", ")));
                }
                let mut m =
                    Message::agent_text(format!("{}:help:{}", head.id, head.history_len), text);
                m.parts.push(Part {
                    content: crate::wire::PartContent::Data(serde_json::json!({
                        "channel_id": head.id.to_string(),
                        "sender": "agent",
                        "kind": "help_request",
                        "text": question,
                    })),
                    metadata: None,
                    filename: None,
                    media_type: Some(ext::CHANNEL_MEDIA_TYPE.into()),
                });
                Ok(vec![TaskEvent::HelpRequested {
                    participant_id,
                    question,
                    options,
                    message: head.own_message(m, at),
                    at,
                }])
            }
            TaskCommand::ContinueAgentWork {
                after,
                steps_taken,
                at,
            } => {
                // Finished, waiting for an answer, or newer work that runs the loop anyway.
                if state.is_terminal()
                    || head.pending_help.is_some()
                    || head.work_requested != after
                {
                    return Ok(vec![]);
                }
                let at = head.next_stamp(at);
                Ok(vec![
                    TaskEvent::AgentWorkRequested {
                        reason: "continuation".into(),
                        at,
                    },
                    TaskEvent::ExecutionContinued { steps_taken, at },
                ])
            }
            TaskCommand::AwaitSubTasks { at } => {
                refuse_if_terminal(head)?;
                let children = head.unresolved_children();
                // Resolved meanwhile (their work request is already committed), or waiting on
                // a participant's answer instead: no wait to announce.
                if children.is_empty() || head.pending_help.is_some() {
                    return Ok(vec![]);
                }
                Ok(vec![TaskEvent::SubTasksAwaited {
                    children,
                    at: head.next_stamp(at),
                }])
            }
            TaskCommand::EmitUi { messages, at } => {
                refuse_if_terminal(head)?;
                // The event's own sequence: unique in the task, and fixed once committed.
                let seq = self.version + 1;
                self.decide(TaskCommand::AddArtifact {
                    artifact: Artifact {
                        artifact_id: format!("{}:{seq}", crate::a2ui::ARTIFACT_NAME),
                        name: Some(crate::a2ui::ARTIFACT_NAME.into()),
                        description: None,
                        parts: messages.parts(),
                        metadata: None,
                        extensions: vec![crate::a2ui::EXTENSION_URI.into()],
                    },
                    append: false,
                    last_chunk: true,
                    at,
                })
            }
            TaskCommand::CancelTask { at } => match state {
                // A repeated cancel is answered with the canceled task, nothing new happens.
                TaskState::Canceled => Ok(vec![]),
                s if s.is_terminal() => Err(DomainError::TaskNotCancelable {
                    task_id: head.id.to_string(),
                    state: s,
                }),
                _ => Ok(vec![TaskEvent::TaskCanceled {
                    at: head.next_stamp(at),
                }]),
            },
        }
    }

    fn decide_create(&self, c: CreateTask) -> Result<Vec<TaskEvent>, DomainError> {
        if let Some(h) = &self.head {
            return Err(DomainError::TaskAlreadyExists {
                task_id: h.id.to_string(),
            });
        }
        intake::validate_user_message(&c.message, "message")?;
        let extension = match c.extension {
            Some(d) => Some(*d),
            None => ext::envelope_of(&c.message)
                .map(ext::validate_envelope)
                .transpose()?,
        };
        let mut message = c.message;
        intake::strip_server_keys(&mut message.metadata);
        intake::stamp_timeline(&mut message.metadata, c.at);
        message.task_id = Some(c.task_id.to_string());
        message.context_id = Some(c.context_id.to_string());
        let mut events = vec![TaskEvent::TaskCreated {
            task_id: c.task_id.clone(),
            context_id: c.context_id,
            owner: c.owner,
            at: c.at,
        }];
        if let Some(mut data) = extension {
            data.lifecycle = Some(data.lifecycle());
            let plan = data.plan.take();
            events.push(TaskEvent::ExtensionUpdated {
                data,
                by: ext::sender_of(&message).map(str::to_string),
                at: c.at,
            });
            if let Some(p) = plan {
                events.push(TaskEvent::PlanCreated { plan: p, at: c.at });
            }
        }
        events.push(TaskEvent::MessageAppended {
            message: message.clone(),
            at: c.at,
        });
        if c.awaiting_assignee.is_none() {
            events.push(TaskEvent::AgentWorkRequested {
                reason: "task created".into(),
                at: c.at,
            });
        }
        if let Some(assignee) = c.awaiting_assignee {
            let goal = events
                .iter()
                .find_map(|e| match e {
                    TaskEvent::ExtensionUpdated { data, .. } => Some(data.goal.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| message.text());
            let mut ask = Message::agent_text(format!("{}:goal", c.task_id), goal);
            ask.task_id = Some(c.task_id.to_string());
            ask.context_id = message.context_id.clone();
            intake::stamp_timeline(&mut ask.metadata, c.at);
            events.push(TaskEvent::StatusChanged {
                state: TaskState::InputRequired,
                message: Some(ask),
                at: c.at,
            });
            events.push(TaskEvent::ParticipantTaskOpened { assignee, at: c.at });
        }
        Ok(events)
    }

    /// Folds one event into the state. No rules here: events are facts.
    pub fn apply_event(&mut self, event: &TaskEvent) {
        self.version += 1;
        let version = self.version;
        if let TaskEvent::TaskCreated {
            task_id,
            context_id,
            owner,
            at,
        } = event
        {
            let mut metadata = Metadata::new();
            metadata.insert(
                TASK_CREATED_AT_KEY.into(),
                serde_json::Value::String(at.to_rfc3339_nanos()),
            );
            self.head = Some(TaskHead {
                id: task_id.clone(),
                context_id: context_id.clone(),
                owner: owner.clone(),
                created_at: *at,
                status: TaskStatus {
                    state: TaskState::Submitted,
                    message: None,
                    timestamp: Some(*at),
                },
                status_version: version,
                status_metadata: None,
                metadata,
                artifacts: Vec::new(),
                history_len: 0,
                last_timeline: *at,
                ext: None,
                pending_help: None,
                children: 0,
                awaiting_assignee: None,
                usage: None,
                work_requested: 0,
                turn_done: 0,
                execution_steps: 0,
                loaded_skills: Vec::new(),
                push: Vec::new(),
                ui: Default::default(),
            });
            return;
        }
        let Some(head) = self.head.as_mut() else {
            return;
        };
        match event {
            TaskEvent::TaskCreated { .. } => {}
            TaskEvent::MessageAppended { at, .. } => {
                head.history_len += 1;
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::StatusChanged { state, message, at } => {
                if message.is_some() {
                    head.history_len += 1;
                }
                head.status = TaskStatus {
                    state: *state,
                    message: message.clone(),
                    timestamp: Some(*at),
                };
                head.status_version = version;
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::ArtifactAdded {
                artifact,
                last_chunk,
                at,
            } => {
                let id = ArtifactId::parse(artifact.artifact_id.clone());
                if let Ok(id) = id {
                    let entry = ArtifactHead {
                        artifact_id: id.clone(),
                        chunks: 1,
                        closed: *last_chunk,
                    };
                    match head.artifacts.iter_mut().find(|a| a.artifact_id == id) {
                        Some(a) => *a = entry,
                        None => head.artifacts.push(entry),
                    }
                }
                if artifact.name.as_deref() == Some(crate::a2ui::ARTIFACT_NAME) {
                    for p in &artifact.parts {
                        if let (crate::wire::PartContent::Data(m), Some(crate::a2ui::MEDIA_TYPE)) =
                            (&p.content, p.media_type.as_deref())
                        {
                            head.ui.apply(m);
                        }
                    }
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::ArtifactChunkAppended {
                artifact_id,
                last_chunk,
                at,
                ..
            } => {
                if let Some(a) = head
                    .artifacts
                    .iter_mut()
                    .find(|a| &a.artifact_id == artifact_id)
                {
                    a.chunks += 1;
                    a.closed = *last_chunk;
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::TaskCanceled { at } => {
                head.status = TaskStatus {
                    state: TaskState::Canceled,
                    message: None,
                    timestamp: Some(*at),
                };
                head.status_version = version;
                head.pending_help = None;
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::ExtensionUpdated { data, at, .. } => {
                head.ext = Some(data.clone());
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::MessageRefused { reason, at, .. } => {
                let mut m =
                    Message::agent_text(format!("{}:refused:{version}", head.id), reason.clone());
                m.task_id = Some(head.id.to_string());
                m.context_id = Some(head.context_id.to_string());
                head.status.message = Some(m);
                head.status.timestamp = Some(*at);
                head.status_version = version;
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::ModelChanged { model, at, .. } => {
                if let Some(d) = head.ext.as_mut() {
                    d.model = Some(model.clone());
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::ReasoningEffortChanged { effort, at, .. } => {
                if let Some(d) = head.ext.as_mut() {
                    d.reasoning_effort = Some(*effort);
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::ParticipantRoleChanged {
                participant_id,
                role,
                at,
                ..
            } => {
                if let Some(p) = head
                    .ext
                    .as_mut()
                    .and_then(|d| d.participants.iter_mut().find(|p| &p.id == participant_id))
                {
                    p.role = *role;
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::PlanCreated { plan, at } => {
                if let Some(d) = head.ext.as_mut() {
                    d.plan = Some(plan.clone());
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::StepStarted { step_id, at } => {
                head.with_step(step_id, |s| s.state = StepState::Active);
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::StepCompleted {
                step_id,
                output,
                at,
            } => {
                head.with_step(step_id, |s| {
                    s.state = StepState::Done;
                    s.output = Some(output.clone());
                });
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::StepFailed { step_id, at, .. } => {
                head.with_step(step_id, |s| s.state = StepState::Failed);
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::SubTaskSpawned {
                child_id,
                step_id,
                at,
            } => {
                head.children += 1;
                let r = TaskRef::local(child_id, Some(TaskState::Submitted.as_str()));
                if let Some(step) = step_id {
                    head.with_step(step, |s| s.linked_tasks.push(r.clone()));
                }
                if let Some(d) = head.ext.as_mut() {
                    d.sub_tasks.push(r);
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::ChildStateRecorded {
                child_id,
                state,
                at,
                ..
            } => {
                if let Some(d) = head.ext.as_mut() {
                    let name = state.as_str().to_string();
                    for r in d.sub_tasks.iter_mut().filter(|r| &r.task_id == child_id) {
                        r.state = Some(name.clone());
                    }
                    if let Some(plan) = d.plan.as_mut() {
                        for step in &mut plan.steps {
                            for r in step
                                .linked_tasks
                                .iter_mut()
                                .filter(|r| &r.task_id == child_id)
                            {
                                r.state = Some(name.clone());
                            }
                        }
                    }
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::HelpRequested {
                participant_id,
                question,
                options,
                message,
                at,
            } => {
                head.history_len += 1;
                head.pending_help = Some(PendingHelp {
                    participant_id: participant_id.clone(),
                    question: question.clone(),
                    options: options.clone(),
                });
                head.status = TaskStatus {
                    state: TaskState::InputRequired,
                    message: Some(message.clone()),
                    timestamp: Some(*at),
                };
                head.status_version = version;
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::HelpAnswered { at, .. } => {
                head.pending_help = None;
                head.status = TaskStatus {
                    state: TaskState::Working,
                    message: None,
                    timestamp: Some(*at),
                };
                head.status_version = version;
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::AgentWorkRequested { at, .. } => {
                head.work_requested = version;
                head.execution_steps = 0;
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::ExecutionContinued { steps_taken, at } => {
                head.execution_steps = *steps_taken;
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::SkillLoaded { name, at } => {
                if !head.loaded_skills.contains(name) {
                    head.loaded_skills.push(name.clone());
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::SkillUnloaded { name, at } => {
                head.loaded_skills.retain(|n| n != name);
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::PushConfigSet { config, at } => {
                let sub = config.clone().subscribe(version);
                match head.push.iter_mut().find(|p| p.id == sub.id) {
                    Some(p) => *p = sub,
                    None => head.push.push(sub),
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::PushConfigDeleted { id, at } => {
                head.push.retain(|p| &p.id != id);
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::AgentTurnFinished { work_seq, at } => {
                head.turn_done = head.turn_done.max(*work_seq);
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::UsageRecorded { model, usage, at } => {
                head.usage
                    .get_or_insert_with(Default::default)
                    .record(model.as_deref(), usage);
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::ParticipantTaskOpened { assignee, at } => {
                head.awaiting_assignee = Some(assignee.clone());
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::SubTasksAwaited { at, .. } => {
                head.status.timestamp = Some(*at);
                head.status_version = version;
                head.last_timeline = head.last_timeline.max(*at);
            }
        }
        if head.status_version == version {
            let awaiting = matches!(event, TaskEvent::SubTasksAwaited { .. });
            head.status_metadata = head.status_update_metadata(awaiting);
        }
    }

    /// True once the task has reached a terminal or interrupted state after `since`:
    /// what a blocking SendMessage waits for.
    pub fn settled_since(&self, since: u64) -> bool {
        self.head.as_ref().is_some_and(|h| {
            h.status.state.is_terminal()
                || (h.status.state.is_interrupted() && h.status_version > since)
        })
    }
}

fn refuse_if_terminal(head: &TaskHead) -> Result<(), DomainError> {
    let state = head.status.state;
    if state.is_terminal() {
        return Err(DomainError::TaskTerminal {
            task_id: head.id.to_string(),
            state,
        });
    }
    Ok(())
}

fn unreachable_create() -> Result<Vec<TaskEvent>, DomainError> {
    Err(DomainError::UnsupportedOperation(
        "task creation is decided separately".into(),
    ))
}

impl Aggregate for TaskAggregate {
    const TYPE: &'static str = "task";
    type Command = TaskCommand;
    type Event = TaskEvent;
    type Error = DomainError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _services: &Self::Services,
        sink: &cqrs_es::event_sink::EventSink<Self>,
    ) -> Result<(), Self::Error> {
        for event in self.decide(command)? {
            sink.write(event, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        self.apply_event(&event);
    }
}
