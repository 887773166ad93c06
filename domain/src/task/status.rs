//! The task's state: the agent's status changes, cancellation, and the terminal checks (most
//! commands are refused on a finished task; a blocking send waits for a settled one).

use crate::error::DomainError;
use crate::ids::Principal;
use crate::task::intake;
use crate::time::Timestamp;
use crate::wire::{Message, TaskState, TaskStatus};

use super::events::TaskEvent;
use super::head::{TaskAggregate, TaskHead};

/// Refuses a command on a terminal task.
pub(super) fn refuse_if_terminal(head: &TaskHead) -> Result<(), DomainError> {
    let state = head.status.state;
    if state.is_terminal() {
        return Err(DomainError::TaskTerminal {
            task_id: head.id.to_string(),
            state,
        });
    }
    Ok(())
}

/// `ChangeStatus`: the agent moves the task to a new state, optionally with a status message.
/// Canceling is `CancelTask`'s; completing waits for every sub-task.
pub(super) fn change_status(
    head: &TaskHead,
    new_state: TaskState,
    message: Option<Message>,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
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

/// `CancelTask`: a client cancels the task.
pub(super) fn cancel(
    head: &TaskHead,
    by: Option<&Principal>,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    if let Some(who) = by.filter(|w| !head.administered_by(w)) {
        return Err(DomainError::NotPermitted {
            field: "id".into(),
            reason: format!(
                "only the task's owner or an admin participant cancels task {} ({who} is not one)",
                head.id
            ),
        });
    }
    match head.status.state {
        // A repeated cancel is answered with the canceled task, nothing new happens.
        TaskState::Canceled => Ok(vec![]),
        s if s.is_terminal() => Err(DomainError::TaskNotCancelable {
            task_id: head.id.to_string(),
            state: s,
        }),
        _ => Ok(vec![TaskEvent::TaskCanceled {
            at: head.next_stamp(at),
        }]),
    }
}

pub(super) fn apply_status_changed(
    head: &mut TaskHead,
    version: u64,
    state: TaskState,
    message: Option<&Message>,
    at: Timestamp,
) {
    if let Some(m) = message {
        head.record_history(m);
    }
    head.status = TaskStatus {
        state,
        message: message.cloned(),
        timestamp: Some(at),
        elicitations: Vec::new(),
    };
    head.status_version = version;
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_canceled(head: &mut TaskHead, version: u64, at: Timestamp) {
    head.status = TaskStatus {
        state: TaskState::Canceled,
        message: None,
        timestamp: Some(at),
        elicitations: Vec::new(),
    };
    head.status_version = version;
    head.pending_help = None;
    head.last_timeline = head.last_timeline.max(at);
}

impl TaskAggregate {
    /// True once the task has reached a terminal or interrupted state after `since`:
    /// what a blocking SendMessage waits for.
    pub fn settled_since(&self, since: u64) -> bool {
        self.head.as_ref().is_some_and(|h| {
            h.status.state.is_terminal()
                || (h.status.state.is_interrupted() && h.status_version > since)
        })
    }
}
