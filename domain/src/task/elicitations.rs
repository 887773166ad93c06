//! Requests for client input as the draft A2A 1.1 shows them (a2aproject/A2A#2149,
//! elicitations): every gate (a kagent tool approval, a DMP handoff's task proposal), every
//! tiny-harness help request and every task for a participant is one. It is BLOCKED while the
//! task waits on it — each of them stops the agent, and the task is INPUT_REQUIRED or
//! AUTH_REQUIRED meanwhile, as the draft's guidance pairs them — and RESOLVED once answered,
//! or once the task ends without an answer (withdrawn). Nothing here is a new fact: where an
//! elicitation stands is read from the gate, the help request and the task's state the head
//! already keeps; the head only remembers the order they were asked in (`TaskHead::asked`) and
//! which changed since the last status update, whose delta (`TaskStatus.elicitations`) the
//! next status update carries.

use serde_json::Value;

use crate::wire::{Elicitation, ElicitationState, Metadata};

use super::head::TaskHead;
use super::shapes::{AskKind, Asked};

/// The metadata key naming what an elicitation is (`help-request`, `tool-approval`,
/// `task-proposal`, `participant-task`).
pub const KIND_KEY: &str = "kind";
/// The metadata key naming the participant a help request or a participant's task waits for.
pub const PARTICIPANT_KEY: &str = "participantId";

/// The elicitation id of a task for a participant: its asking status message's id.
fn participant_task_id(head: &TaskHead) -> String {
    format!("{}:goal", head.id)
}

/// The requests the task waits on now, by the head's facts: its open gates, its open help
/// request and, for a task for a participant, the assignee's reply — none once it has ended.
pub(super) fn open(head: &TaskHead) -> Vec<Asked> {
    if head.status.state.is_terminal() {
        return Vec::new();
    }
    let mut out: Vec<Asked> = head
        .open_gates()
        .map(|g| Asked {
            id: g.id.clone(),
            kind: g.kind.into(),
            participant: None,
        })
        .collect();
    if let Some(help) = &head.pending_help {
        out.push(Asked {
            id: help.id.clone(),
            kind: AskKind::HelpRequest,
            participant: Some(help.participant_id.clone()),
        });
    }
    if let Some(assignee) = &head.awaiting_assignee {
        out.push(Asked {
            id: participant_task_id(head),
            kind: AskKind::ParticipantTask,
            participant: Some(assignee.clone()),
        });
    }
    out
}

/// After an event is folded: the requests it opened are remembered, those it opened or
/// closed are marked changed, and when it set the status, that status carries every change
/// since the last one (`TaskStatus.elicitations`; none when nothing changed).
pub(super) fn fold(head: &mut TaskHead, open_before: Vec<Asked>, sets_status: bool) {
    let open_now = open(head);
    for a in &open_now {
        if !head.asked.iter().any(|k| k.id == a.id) {
            head.asked.push(a.clone());
        }
    }
    let opened = open_now.iter().filter(|a| !open_before.contains(a));
    let closed = open_before.iter().filter(|a| !open_now.contains(a));
    for a in opened.chain(closed) {
        if !head.unshown.contains(&a.id) {
            head.unshown.push(a.id.clone());
        }
    }
    if sets_status {
        let changed = std::mem::take(&mut head.unshown);
        head.status.elicitations = changed
            .iter()
            .filter_map(|id| head.elicitation(id))
            .collect();
    }
}

impl TaskHead {
    /// Every request for client input the task made, open and resolved, in the order asked
    /// (`Task.elicitations`).
    pub fn elicitations(&self) -> Vec<Elicitation> {
        let open = open(self);
        let is_open = |id: &str| open.iter().any(|a| a.id == id);
        let mut out: Vec<Elicitation> = self
            .asked
            .iter()
            .map(|a| shown(a, is_open(&a.id)))
            .collect();
        // A head from before `asked` existed that has not folded an event since.
        for a in &open {
            if !self.asked.iter().any(|k| k.id == a.id) {
                out.push(shown(a, true));
            }
        }
        out
    }

    /// Elicitation `id` as it stands now, if the task made it.
    pub fn elicitation(&self, id: &str) -> Option<Elicitation> {
        let open = open(self);
        let asked = self.asked.iter().chain(open.iter()).find(|a| a.id == id)?;
        Some(shown(asked, open.iter().any(|a| a.id == id)))
    }
}

/// The wire form of request `a`, open or resolved.
fn shown(a: &Asked, open: bool) -> Elicitation {
    let mut metadata = Metadata::new();
    metadata.insert(KIND_KEY.into(), Value::from(a.kind.name()));
    if let Some(p) = &a.participant {
        metadata.insert(PARTICIPANT_KEY.into(), Value::from(p.as_str()));
    }
    Elicitation {
        elicitation_id: a.id.clone(),
        state: if open {
            ElicitationState::Blocked
        } else {
            ElicitationState::Resolved
        },
        metadata: Some(metadata),
    }
}

#[cfg(test)]
#[path = "elicitations_tests.rs"]
mod tests;
