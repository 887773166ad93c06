//! The parts the task's central types are made of: what a command carries (`AnswerGate`,
//! `RequestToolApproval`, `AnswerToolApproval`, `ProposeHandoff`, `AdvanceWork`), what an event
//! records (`Gate`, `HandoffWork`) and what the head holds (`Gate`, `HandoffHead`, `Asked`). They name
//! nothing of the aggregate, so `commands`, `events` and `head` name them and each concept's
//! file names those central types — never the other way round (no import circle in `task/`).

use serde::{Deserialize, Serialize};

use crate::extensions::dmp::{Handoff, WorkArtifact, WorkStatus};
use crate::extensions::hitl::{Approval, Nested, PendingTool};
use crate::ids::{stored, ContextId, ParticipantId, Principal, TaskId};
use crate::time::{nanos, Timestamp};
use crate::wire::Message;

/// What a gate decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateKind {
    /// DMP work/v1: a handed-off piece of work is approved (promoted) or declined (dropped).
    TaskProposal,
    /// kagent hitl/v1: each of the agent's calls is approved (it runs) or rejected (the model
    /// is told why); answered by a `tool_approval_response`, not by a choice.
    ToolApproval,
}

impl GateKind {
    /// The registry name (DMP §11.6).
    pub const fn name(self) -> &'static str {
        match self {
            Self::TaskProposal => "task-proposal",
            Self::ToolApproval => "tool-approval",
        }
    }

    /// The choices a deciding answer may make.
    pub const fn choices(self) -> &'static [&'static str] {
        match self {
            Self::TaskProposal => &["approve", "decline"],
            Self::ToolApproval => &[],
        }
    }

    /// The one sentence a client is shown while the gate is open (gate data never leaves).
    pub fn sentence(self) -> &'static str {
        crate::extensions::dmp::gate_sentence(self.name())
    }
}

/// An open or answered gate of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub id: String,
    pub kind: GateKind,
    #[serde(with = "nanos")]
    pub opened_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<GateAnswer>,
    /// The calls a tool-approval gate asks about.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<PendingTool>,
    /// A child task's pause this gate surfaces (its calls are the child's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested: Option<Nested>,
}

/// How a gate was answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateAnswer {
    pub choice: String,
    /// The deciding participant, when the answer named one (else the task's owner).
    #[serde(
        default,
        deserialize_with = "stored::opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub by: Option<ParticipantId>,
    #[serde(with = "nanos")]
    pub at: Timestamp,
    /// A tool-approval gate's decision on each call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<Approval>,
}

/// `AnswerGate`: a message answering gate `gate_id` with `choice`.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerGate {
    pub gate_id: String,
    pub choice: Option<String>,
    /// The participant the sender says it is (none: the task's owner, who may decide).
    pub by: Option<ParticipantId>,
    pub message: Message,
    pub at: Timestamp,
    /// The authenticated principal answering (none: the task's owner).
    pub caller: Option<Principal>,
}

/// A tool call the agent wants to run, as it asks about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallAsked {
    pub call_id: String,
    pub name: String,
    pub args: serde_json::Value,
}

/// `RequestToolApproval`: the agent asks before running `calls` (or, for a parent, before
/// its child runs `nested`'s).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestToolApproval {
    pub calls: Vec<ToolCallAsked>,
    pub nested: Option<Nested>,
    pub at: Timestamp,
}

/// `AnswerToolApproval`: a resume message deciding the open tool-approval gate.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerToolApproval {
    pub approvals: Vec<Approval>,
    /// The participant the sender says it is (none: the task's owner).
    pub by: Option<ParticipantId>,
    pub message: Message,
    pub at: Timestamp,
    /// The authenticated principal answering (none: the task's owner).
    pub caller: Option<Principal>,
}

/// The work a handoff proposes, in the stored form of a checked request (`dmp::Handoff`):
/// the title, acceptance criteria, repository paths it may write, the priority as kept
/// (capped at `medium`) and the labels as kept (under `a2a/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffWork {
    pub title: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
    pub priority: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

impl From<&Handoff> for HandoffWork {
    fn from(h: &Handoff) -> Self {
        Self {
            title: h.title.as_str().to_string(),
            acceptance: h
                .acceptance
                .iter()
                .map(|c| c.as_str().to_string())
                .collect(),
            writes: h.writes.iter().map(|w| w.as_str().to_string()).collect(),
            priority: h.priority.capped().as_str().to_string(),
            labels: h.stored_labels(),
        }
    }
}

/// The handoff a task is, in its head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffHead {
    pub work: HandoffWork,
    pub status: WorkStatus,
    /// Handoffs start at the host's highest risk: none of their gates decides itself.
    pub risk: String,
}

/// `ProposeHandoff`: a client's message opening a task that proposes `work`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposeHandoff {
    pub task_id: TaskId,
    pub context_id: ContextId,
    pub owner: Principal,
    pub message: Message,
    pub work: HandoffWork,
    pub at: Timestamp,
}

/// `AdvanceWork`: the work item moves to `status`, reporting `artifacts` on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct AdvanceWork {
    pub status: WorkStatus,
    pub artifacts: Vec<WorkArtifact>,
    pub at: Timestamp,
}

/// What a request for client input is (draft A2A 1.1 elicitations: `task::elicitations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AskKind {
    /// tiny-harness: the agent asked a participant (`ask_participant`).
    HelpRequest,
    /// kagent hitl/v1: a tool-approval gate (a child's pause surfaced on its parent too).
    ToolApproval,
    /// DMP work/v1: a handoff's task-proposal gate.
    TaskProposal,
    /// tiny-harness: a task for a participant, waiting for the assignee's reply.
    ParticipantTask,
}

impl AskKind {
    /// The name an elicitation's metadata gives it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::HelpRequest => "help-request",
            Self::ToolApproval => GateKind::ToolApproval.name(),
            Self::TaskProposal => GateKind::TaskProposal.name(),
            Self::ParticipantTask => "participant-task",
        }
    }
}

impl From<GateKind> for AskKind {
    fn from(k: GateKind) -> Self {
        match k {
            GateKind::ToolApproval => Self::ToolApproval,
            GateKind::TaskProposal => Self::TaskProposal,
        }
    }
}

/// A request for client input the task made: its elicitation id (unique in the task) and kind.
/// Where it stands is read from the facts that answer it (the gate, the help request, the
/// task's state), never kept twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    pub id: String,
    pub kind: AskKind,
    /// The participant it waits for (a help request, a task for a participant).
    #[serde(
        default,
        deserialize_with = "stored::opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub participant: Option<ParticipantId>,
}
