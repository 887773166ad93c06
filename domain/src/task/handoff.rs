//! DMP work/v1 handoffs: a client hands work over; it becomes a draft waiting on a
//! task-proposal gate (AUTH_REQUIRED) that a deciding principal approves (SUBMITTED, the
//! work item is ready to be scheduled) or declines (REJECTED, the draft is dropped). The
//! agent does not run on a proposal.

use crate::error::DomainError;
use crate::extensions::dmp::{ExtensionData, WorkStateV1, WorkStatus, GATE_URI};
use crate::wire::Message;

use super::commands::CreateTask;
use super::create;
use super::events::TaskEvent;
use super::gates::{self, GateKind};
use super::handoff_status;
use super::head::TaskHead;
pub use super::shapes::{HandoffHead, HandoffWork, ProposeHandoff};

/// The risk every handoff starts at.
pub const HANDOFF_RISK: &str = "high";

/// The task, its first message, the draft and its task-proposal gate, AUTH_REQUIRED with
/// the gate's sentence — and no agent work.
pub(super) fn propose(
    existing: Option<&TaskHead>,
    c: ProposeHandoff,
) -> Result<Vec<TaskEvent>, DomainError> {
    let task_id = c.task_id.to_string();
    let mut events = create::create_task(
        existing,
        CreateTask {
            task_id: c.task_id,
            context_id: c.context_id,
            owner: c.owner,
            message: c.message,
            at: c.at,
            extension: None,
            awaiting_assignee: None,
        },
    )?;
    events.retain(|e| !matches!(e, TaskEvent::AgentWorkRequested { .. }));
    events.push(TaskEvent::HandoffProposed {
        work: c.work,
        at: c.at,
    });
    // The events are the task's first: the gate is event number len + 1.
    let seq = events.len() as u64 + 1;
    let gate = gates::raise(GateKind::TaskProposal, seq, c.at);
    events.push(gate.clone());
    let shown = handoff_status::shown_after(None, &events)?;
    let mut said = Message::agent_text(format!("{task_id}:{}", gates::gate_id(seq)), shown.text);
    if let TaskEvent::GateRaised { gate } = &gate {
        said.extensions = vec![GATE_URI.into()];
        said.metadata = Some(gates::gate_state(std::iter::once(gate)).to_metadata());
    }
    events.push(TaskEvent::StatusChanged {
        state: shown.state,
        message: Some(said),
        at: c.at,
    });
    Ok(events)
}

impl HandoffHead {
    /// `WorkStateV1` (`{task, title, status}`) of the handoff task `task_id`.
    pub fn work_state(&self, task_id: &str) -> WorkStateV1 {
        WorkStateV1::new(task_id, self.work.title.clone(), self.status.clone())
    }
}

pub(super) fn apply_proposed(head: &mut TaskHead, work: &HandoffWork) {
    head.handoff = Some(HandoffHead {
        work: work.clone(),
        status: WorkStatus::Draft,
        risk: HANDOFF_RISK.into(),
    });
}

/// A task-proposal answer moves the draft: approve → ready, anything else → dropped.
pub(super) fn apply_decided(head: &mut TaskHead, kind: GateKind, choice: &str) {
    if let (GateKind::TaskProposal, Some(h)) = (kind, head.handoff.as_mut()) {
        h.status = if choice == "approve" {
            WorkStatus::Ready
        } else {
            WorkStatus::Dropped
        };
    }
}
