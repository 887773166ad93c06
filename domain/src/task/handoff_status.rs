//! A handoff task's A2A status, always the DMP §8.7 projection of its facts: every decision
//! that moves a handoff (its proposal, the proposal's answer, the work item's steps) folds its
//! own fact events onto the head, gathers the §8.7 facts from it and commits the status the
//! projection gives. GetTask, ListTasks, streams and pushes all read that committed status,
//! so they cannot disagree, and no rule of the table is written twice.

use crate::error::DomainError;
use crate::extensions::dmp::projection::{
    DroppedBy, Facts, Skill, TaskFact, WorkItemFact, WORKING_SENTENCE,
};
use crate::extensions::dmp::{project, OpenGate, Row, WorkStatus};
use crate::wire::{Message, TaskState};

use super::events::TaskEvent;
use super::gates::GateKind;
use super::head::{TaskAggregate, TaskHead};

/// Row 2's sentence when the owner declined the proposal.
pub const DECLINED_SENTENCE: &str = "Declined by the project owner.";

/// Row 2's sentence when the work item was dropped after approval.
pub const DROPPED_SENTENCE: &str = "The work item was dropped.";

/// What the projection shows of a handoff task.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub state: TaskState,
    pub text: &'static str,
    pub row: Row,
}

/// What §8.7 shows of the task once `events` apply to `head` (`None` before creation).
pub(super) fn shown_after(
    head: Option<&TaskHead>,
    events: &[TaskEvent],
) -> Result<Shown, DomainError> {
    let mut scratch = TaskAggregate {
        version: 0,
        head: head.cloned(),
    };
    for e in events {
        scratch.apply_event(e);
    }
    scratch.head.as_ref().map(shown).ok_or_else(|| {
        DomainError::UnsupportedOperation("a handoff's status needs a created task".into())
    })
}

/// The §8.7 facts a handoff task's head holds: its work item, the task-proposal gates still
/// open, and the owner's decline. (A handoff is never an `ask`: rows 3, 5, 7 and 11 do not
/// apply; a handoff task is never deleted while it is read: row 4 neither.)
pub fn facts(head: &TaskHead) -> Facts {
    let proposal = || {
        head.gates
            .iter()
            .filter(|g| g.kind == GateKind::TaskProposal)
    };
    let declined_at = proposal()
        .filter_map(|g| g.answer.as_ref())
        .find(|a| a.choice == "decline")
        .map(|a| a.at);
    let approved = proposal()
        .filter_map(|g| g.answer.as_ref())
        .any(|a| a.choice == "approve");
    let task = head.handoff.as_ref().map(|h| {
        TaskFact::Item(WorkItemFact {
            id: head.id.to_string(),
            title: h.work.title.clone(),
            status: h.status.clone(),
            approved,
        })
    });
    let dropped = head
        .handoff
        .as_ref()
        .filter(|h| h.status == WorkStatus::Dropped)
        .map(|_| DroppedBy::Other);
    Facts {
        canceled_at: (head.status.state == TaskState::Canceled)
            .then_some(head.status.timestamp)
            .flatten(),
        declined_at,
        skill: if head.handoff.is_some() {
            Skill::Handoff
        } else {
            Skill::Ask
        },
        task,
        dropped,
        open_gates: proposal()
            .filter(|g| g.answer.is_none())
            .map(|g| OpenGate {
                id: g.id.clone(),
                gate_type: g.kind.name().to_string(),
                opened_at: g.opened_at,
            })
            .collect(),
        ..Facts::default()
    }
}

/// A gate answer's `events`, followed by the status §8.7 gives the task once they apply.
pub(super) fn answered(
    head: &TaskHead,
    mut events: Vec<TaskEvent>,
) -> Result<Vec<TaskEvent>, DomainError> {
    let Some((gate_id, at)) = events.iter().find_map(|e| match e {
        TaskEvent::GateAnswered { gate_id, at, .. } => Some((gate_id.clone(), *at)),
        _ => None,
    }) else {
        return Ok(events);
    };
    let shown = shown_after(Some(head), &events)?;
    let at = head.next_stamp(at);
    let reply_id = format!("{}:{gate_id}:answered", head.id);
    events.push(TaskEvent::StatusChanged {
        state: shown.state,
        message: Some(Message::agent_text(reply_id, shown.text)),
        at,
    });
    Ok(events)
}

/// The status §8.7 gives the handoff task `head`, with its `status.message` text.
pub fn shown(head: &TaskHead) -> Shown {
    let facts = facts(head);
    let p = project(&facts);
    let text = p.sentence.unwrap_or(match p.row {
        Row::Rejected if facts.declined_at.is_some() => DECLINED_SENTENCE,
        Row::Rejected => DROPPED_SENTENCE,
        _ => WORKING_SENTENCE,
    });
    Shown {
        state: p.state,
        text,
        row: p.row,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extensions::dmp::WorkStatus;
    use crate::ids::{ContextId, Principal, TaskId};
    use crate::task::{AnswerGate, HandoffWork, ProposeHandoff, TaskCommand};
    use crate::time::Timestamp;
    use crate::wire::Message;

    fn proposed() -> TaskAggregate {
        let mut s = TaskAggregate::default();
        let events = s
            .decide(TaskCommand::ProposeHandoff(Box::new(ProposeHandoff {
                task_id: TaskId::parse("t-1").unwrap(),
                context_id: ContextId::parse("c-1").unwrap(),
                owner: Principal::new("acme", "alice").unwrap(),
                message: Message::user_text("m-1", "export"),
                work: HandoffWork {
                    title: "Export".into(),
                    acceptance: vec![],
                    writes: vec![],
                    priority: "medium".into(),
                    labels: vec![],
                },
                at: Timestamp::now(),
            })))
            .unwrap();
        for e in &events {
            s.apply_event(e);
        }
        s
    }

    #[test]
    fn each_step_of_a_handoff_is_the_row_the_table_gives() {
        let mut s = proposed();
        let head = s.head().unwrap();
        assert_eq!(shown(head).row, Row::AuthRequired);
        assert_eq!(head.status.state, shown(head).state, "committed as shown");
        let gate = head.open_gates().next().unwrap().id.clone();
        let events = s
            .decide(TaskCommand::AnswerGate(Box::new(AnswerGate {
                gate_id: gate,
                choice: Some("approve".into()),
                by: None,
                message: Message::user_text("m-2", "ok"),
                at: Timestamp::now(),
                caller: None,
            })))
            .unwrap();
        for e in &events {
            s.apply_event(e);
        }
        let head = s.head().unwrap();
        assert_eq!(shown(head).row, Row::Approved);
        assert_eq!(head.status.state, TaskState::Submitted);
        assert_eq!(
            head.status.message.as_ref().unwrap().text(),
            crate::extensions::dmp::projection::APPROVED_SENTENCE
        );
        for (to, row, state) in [
            (WorkStatus::Working, Row::Working, TaskState::Working),
            (WorkStatus::Landing, Row::Working, TaskState::Working),
            (WorkStatus::Landed, Row::Landed, TaskState::Completed),
        ] {
            let events = s
                .decide(TaskCommand::AdvanceWork(Box::new(
                    crate::task::AdvanceWork {
                        status: to,
                        artifacts: vec![],
                        at: Timestamp::now(),
                    },
                )))
                .unwrap();
            for e in &events {
                s.apply_event(e);
            }
            let head = s.head().unwrap();
            assert_eq!(shown(head).row, row);
            assert_eq!(head.status.state, state);
        }
    }
}
