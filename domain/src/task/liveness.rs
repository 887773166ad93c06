//! No task waits forever: a turn the worker gave up on (its retries spent, or dead-lettered) and
//! a task that made no progress past its deadline both end FAILED, with a status message that
//! says why. Either is decided against the task as it is now, so a racing turn that committed
//! first (optimistic concurrency) wins and the give-up changes nothing.

use crate::error::DomainError;
use crate::time::Timestamp;
use crate::wire::{Message, TaskState};

use super::events::TaskEvent;
use super::head::TaskHead;

/// Characters of a failure's reason kept in the status message (an error chain can be long).
pub const MAX_REASON_CHARS: usize = 500;

/// The longest deadline a deployment may set for a task's progress (a year).
pub const MAX_STALL_DEADLINE_SECS: u64 = 366 * 24 * 3600;

/// The states in which the agent's side is at work: a give-up or a deadline ends only these
/// (a task waiting for someone, or finished, is left as it is).
fn agent_at_work(state: TaskState) -> bool {
    matches!(state, TaskState::Submitted | TaskState::Working)
}

/// `reason` cut to `MAX_REASON_CHARS` characters (an ellipsis says it was cut).
pub fn clip_reason(reason: &str) -> String {
    let reason = reason.trim();
    match reason.char_indices().nth(MAX_REASON_CHARS) {
        None => reason.to_string(),
        Some((cut, _)) => format!("{}…", &reason[..cut]),
    }
}

fn failed(head: &TaskHead, message_id: String, text: String, at: Timestamp) -> Vec<TaskEvent> {
    let at = head.next_stamp(at);
    let message = head.own_message(Message::agent_text(message_id, text), at);
    vec![TaskEvent::StatusChanged {
        state: TaskState::Failed,
        message: Some(message),
        at,
    }]
}

/// `GiveUpAgentWork`: the turn for the work requested at `work_seq` will not run again. The
/// task fails, unless that work is done, a newer request supersedes it (its own turn runs), or
/// the task is not at work any more.
pub(super) fn give_up(
    head: &TaskHead,
    work_seq: u64,
    attempts: u32,
    reason: &str,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    if !agent_at_work(head.status.state)
        || work_seq <= head.turn_done
        || work_seq != head.work_requested
    {
        return Ok(vec![]);
    }
    let text = format!(
        "The agent's turn failed and was given up after {attempts} attempt{}: {}",
        if attempts == 1 { "" } else { "s" },
        clip_reason(reason)
    );
    Ok(failed(head, format!("give-up-{work_seq}"), text, at))
}

/// `FailStalledTask`: a task at work whose last event is older than `deadline_secs` before
/// `at` fails; one that moved since (a racing turn) is left alone.
pub(super) fn fail_stalled(
    head: &TaskHead,
    deadline_secs: u64,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    let deadline_secs = deadline_secs.min(MAX_STALL_DEADLINE_SECS);
    let cutoff = at.minus_secs(deadline_secs);
    // An upstream agent's task progresses when the upstream's events arrive, not when a turn
    // that only follows it continues (ADR 034).
    let progress = head.progress_at();
    if !agent_at_work(head.status.state) || progress >= cutoff {
        return Ok(vec![]);
    }
    let text = format!(
        "No progress for more than {deadline_secs} s (the last at {}): the task was given up",
        progress.to_rfc3339_millis()
    );
    let id = format!("stalled-{}", progress.unix_nanos());
    Ok(failed(head, id, text, at))
}

#[cfg(test)]
#[path = "liveness_tests.rs"]
mod tests;
