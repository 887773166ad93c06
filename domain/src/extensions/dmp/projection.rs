//! The DMP task-state projection (§8.7): a task's A2A state decided from the facts the host
//! holds, by the first of twelve rows that matches. One pure function, so GetTask, ListTasks,
//! streams and pushes can never disagree.
//!
//! `Facts` mirrors the `facts` of the `a2a.project` conformance step (§12), so the vectors
//! deserialize straight into it. The caller gathers the facts already reduced to the task's
//! scope (§8.7 "Scope"): `openQuestions` are the open questions to the client in scope, oldest
//! first; `openGates` the open in-scope gates.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::gate_state::{gate_sentence, OpenGate};
use super::work_state::{Stage, WorkStatus};
use crate::time::Timestamp;
use crate::wire::TaskState;

/// Row 1's `status.message` (§8.7).
pub const CANCELED_SENTENCE: &str = "Canceled by the client.";
/// Row 4's `status.message` (§8.7).
pub const DELETED_SENTENCE: &str = "The task was deleted.";
/// Row 6's `status.message`, with the work artifacts (§8.7).
pub const LANDED_SENTENCE: &str = "Landed.";
/// Row 10's `status.message` (§8.7).
pub const APPROVED_SENTENCE: &str = "Approved; waiting to be scheduled.";
/// Rows 9 and 12 show the latest in-scope message not from the client, else this (§8.7).
pub const WORKING_SENTENCE: &str = "Working.";

/// The `type` of the system's close marker (§4.8, §13.14).
pub const CLOSE_MARKER: &str = "x-closed";
/// The delivery state of a message waiting in a mailbox (§6.2; row 11).
pub const HELD: &str = "held";

/// Which skill opened the task (§8.1): an `ask` unless a work/v1 handoff did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Skill {
    #[default]
    Ask,
    Handoff,
}

/// Who dropped a handoff's work item: row 2 counts anyone but the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DroppedBy {
    Client,
    Other,
}

/// A handoff's work item as the task sees it (facts `task`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkItemFact {
    pub id: String,
    pub title: String,
    pub status: WorkStatus,
    /// Whether its task-proposal gate was answered `approve` (§8.6).
    pub approved: bool,
}

/// Facts `task`: the work item, or `"deleted"` when it no longer exists (row 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskFact {
    Deleted,
    Item(WorkItemFact),
}

impl Serialize for TaskFact {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Deleted => s.serialize_str("deleted"),
            Self::Item(item) => item.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for TaskFact {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if s == "deleted" => Ok(Self::Deleted),
            v => serde_json::from_value(v)
                .map(Self::Item)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// A message's sender: the host's system address (the vectors' `$system`) or any other
/// address. Only the system address closes (row 3, §13.14); an external sender never is it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Sender {
    System,
    #[default]
    Unknown,
    Address(String),
}

/// How the vectors write the system address.
pub const SYSTEM_SYMBOL: &str = "$system";

impl Serialize for Sender {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::System => s.serialize_str(SYSTEM_SYMBOL),
            Self::Unknown => s.serialize_str(""),
            Self::Address(a) => s.serialize_str(a),
        }
    }
}

impl<'de> Deserialize<'de> for Sender {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.as_str() {
            SYSTEM_SYMBOL => Self::System,
            "" => Self::Unknown,
            _ => Self::Address(s),
        })
    }
}

/// A DMP message among the facts (the root's `answer`, an open question): only the members
/// the rows read. Other members of the vectors' messages (`to`, `body`, `thread`) are ignored.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FactMessage {
    pub id: Option<String>,
    pub from: Sender,
    pub kind: Option<String>,
    pub reply_to: Option<String>,
    pub blocking: bool,
    pub choice: Option<String>,
    pub data: Option<Value>,
    /// Whether the message it replies to has gate data (§8.7 row 7). Ours: the vectors'
    /// messages carry no replied-to message, so the caller states it here.
    pub replies_to_gate_data: bool,
}

impl FactMessage {
    fn data_type(&self) -> Option<&str> {
        self.data.as_ref()?.get("type")?.as_str()
    }

    /// Gate data (§5.1): `data` is an object whose `type` is a string not starting `x-`,
    /// whatever the type and whether or not the host knows it (§8.7 on row 7).
    pub fn has_gate_data(&self) -> bool {
        self.data_type().is_some_and(|t| !t.starts_with("x-"))
    }

    /// A close (§4.8): the `x-closed` marker, honoured only from the system address (§13.14).
    pub fn is_system_close(&self) -> bool {
        self.from == Sender::System && self.data_type() == Some(CLOSE_MARKER)
    }

    /// Row 7's question: blocking, with no gate data, replying to none.
    fn needs_input(&self) -> bool {
        self.kind.as_deref().is_none_or(|k| k == "question")
            && self.blocking
            && !self.has_gate_data()
            && !self.replies_to_gate_data
    }
}

/// The task's root message, as far as row 11 reads it (the mailbox it waits in).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Root {
    pub to: Vec<String>,
}

/// Everything the projection reads about one task (the `a2a.project` step's `facts`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Facts {
    /// When the client canceled the task (row 1).
    pub canceled_at: Option<Timestamp>,
    /// When the owner declined the ask, or the handoff's proposal (row 2).
    pub declined_at: Option<Timestamp>,
    pub skill: Skill,
    /// The handoff's work item (rows 2, 4, 6, 9, 10).
    pub task: Option<TaskFact>,
    /// Who dropped the handoff's work item (row 2); absent is not the client.
    pub dropped: Option<DroppedBy>,
    /// The answer on the ask's root, if any (rows 3 and 5).
    pub answer: Option<FactMessage>,
    /// The ask's recipient work item was dropped (row 3).
    pub recipient_task_dropped: bool,
    /// Open questions to the client in scope, oldest first (row 7).
    pub open_questions: Vec<FactMessage>,
    /// Open gates in scope (row 8).
    pub open_gates: Vec<OpenGate>,
    pub root: Option<Root>,
    /// The delivery state of each of the root's deliveries (row 11).
    pub root_deliveries: Vec<String>,
}

/// Which §8.7 row decided the state, so the caller can write the matching `status.message`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// 1: the client canceled.
    Canceled,
    /// 2: a declined or dropped handoff, or a declined ask: show the decline or drop.
    Rejected,
    /// 3: an ask the system closed, or whose recipient was dropped: show the reason.
    Failed,
    /// 4: the handoff's work item no longer exists.
    Deleted,
    /// 5: the ask's root has an answer: show it, with the `answer` artifact.
    Answered,
    /// 6: the handoff landed: with the work artifacts.
    Landed,
    /// 7: show `facts.open_questions[question]`, the oldest that needs input.
    InputRequired { question: usize },
    /// 8: an open gate: the sentence of the oldest, and gate/v1 of all.
    AuthRequired,
    /// 9: the handoff is being worked on.
    Working,
    /// 10: an approved draft or ready handoff.
    Approved,
    /// 11: the ask waits in a mailbox: name it (`facts.root.to`).
    Held,
    /// 12: nothing else matched.
    Otherwise,
}

impl Row {
    /// The row's number in the §8.7 table.
    pub const fn number(self) -> u8 {
        match self {
            Self::Canceled => 1,
            Self::Rejected => 2,
            Self::Failed => 3,
            Self::Deleted => 4,
            Self::Answered => 5,
            Self::Landed => 6,
            Self::InputRequired { .. } => 7,
            Self::AuthRequired => 8,
            Self::Working => 9,
            Self::Approved => 10,
            Self::Held => 11,
            Self::Otherwise => 12,
        }
    }
}

/// The projection's answer: the A2A state, the WORKING stage, and the fixed sentence when the
/// row has one (rows 1, 4, 6, 8, 10); otherwise `status.message` comes from a message the row
/// names (see `Row`), or `WORKING_SENTENCE` for rows 9 and 12 when there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Projected {
    pub state: TaskState,
    pub stage: Option<Stage>,
    pub sentence: Option<&'static str>,
    pub row: Row,
}

impl Projected {
    fn new(row: Row, state: TaskState) -> Self {
        Self {
            state,
            stage: None,
            sentence: None,
            row,
        }
    }
    fn saying(mut self, sentence: &'static str) -> Self {
        self.sentence = Some(sentence);
        self
    }
}

/// The §8.7 table, first matching row wins. Row 3 honours a close only from the system
/// address (the same data from anyone else is an answer: row 5); an unapproved draft with no
/// open gate matches no handoff row and falls to row 12.
pub fn project(facts: &Facts) -> Projected {
    use TaskState as S;
    let handoff = facts.skill == Skill::Handoff;
    let ask = facts.skill == Skill::Ask;
    let item = match &facts.task {
        Some(TaskFact::Item(item)) if handoff => Some(item),
        _ => None,
    };

    if facts.canceled_at.is_some() {
        return Projected::new(Row::Canceled, S::Canceled).saying(CANCELED_SENTENCE);
    }
    let dropped_by_other = item.is_some_and(|i| {
        i.status == WorkStatus::Dropped && facts.dropped != Some(DroppedBy::Client)
    });
    if facts.declined_at.is_some() || dropped_by_other {
        return Projected::new(Row::Rejected, S::Rejected);
    }
    let closed = facts
        .answer
        .as_ref()
        .is_some_and(FactMessage::is_system_close);
    if ask && (closed || facts.recipient_task_dropped) {
        return Projected::new(Row::Failed, S::Failed);
    }
    if handoff && facts.task == Some(TaskFact::Deleted) {
        return Projected::new(Row::Deleted, S::Failed).saying(DELETED_SENTENCE);
    }
    if ask && facts.answer.is_some() {
        return Projected::new(Row::Answered, S::Completed);
    }
    if item.is_some_and(|i| i.status == WorkStatus::Landed) {
        return Projected::new(Row::Landed, S::Completed).saying(LANDED_SENTENCE);
    }
    if let Some(question) = facts
        .open_questions
        .iter()
        .position(FactMessage::needs_input)
    {
        return Projected::new(Row::InputRequired { question }, S::InputRequired);
    }
    if let Some(oldest) = facts.open_gates.iter().min_by_key(|g| g.opened_at) {
        return Projected::new(Row::AuthRequired, S::AuthRequired)
            .saying(gate_sentence(&oldest.gate_type));
    }
    if let Some(i) = item {
        match &i.status {
            WorkStatus::Working
            | WorkStatus::Review
            | WorkStatus::Landing
            | WorkStatus::Host(_) => {
                let mut p = Projected::new(Row::Working, S::Working);
                p.stage = i.status.stage();
                return p;
            }
            WorkStatus::Draft | WorkStatus::Ready if i.approved => {
                return Projected::new(Row::Approved, S::Submitted).saying(APPROVED_SENTENCE);
            }
            _ => {}
        }
    }
    let held = !facts.root_deliveries.is_empty() && facts.root_deliveries.iter().all(|d| d == HELD);
    if ask && held {
        return Projected::new(Row::Held, S::Submitted);
    }
    Projected::new(Row::Otherwise, S::Working)
}

#[cfg(test)]
#[path = "projection_tests.rs"]
mod tests;
