//! A task worked on by an upstream A2A agent (ADR 034): the rules of its mirror of the
//! upstream's task (`mirror`). The mirror changes only through `RecordUpstream`, committed
//! first in the commit of each upstream batch (`upstream_batch`), and is held to its bounds by
//! the gate (`admit`); the deadline reaper reads the upstream's progress (`progress_at`).

use crate::error::DomainError;
use crate::time::Timestamp;

use super::events::TaskEvent;
use super::head::TaskHead;
use super::mirror::UpstreamHead;
use super::status::refuse_if_terminal;

/// `RecordUpstream`: the mirror after a batch of upstream events (or after our input reached
/// the upstream). Refused on a finished task and when the mirror is out of its bounds; a
/// batch that would go back (fewer events than the task has applied) records nothing.
pub(super) fn record(
    head: &TaskHead,
    upstream: UpstreamHead,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    upstream
        .check()
        .map_err(|e| DomainError::invalid("upstream", e))?;
    if let Some(held) = &head.upstream {
        if upstream.events < held.events || upstream == *held {
            return Ok(vec![]);
        }
        if !held.task_id.is_empty() && upstream.task_id != held.task_id {
            return Err(DomainError::invalid(
                "upstream.taskId",
                format!(
                    "the upstream task is {}, not {}",
                    held.task_id, upstream.task_id
                ),
            ));
        }
    }
    Ok(vec![TaskEvent::UpstreamRecorded {
        upstream: Box::new(upstream),
        at: head.next_stamp(at),
    }])
}

pub(super) fn apply_recorded(head: &mut TaskHead, upstream: &UpstreamHead, at: Timestamp) {
    head.upstream = Some(upstream.clone());
    head.last_timeline = head.last_timeline.max(at);
}

/// The gate's rule for a stored `UpstreamRecorded`: within its bounds, never going back, and
/// never naming another upstream task than the one the task holds.
pub(super) fn admit(head: &TaskHead, upstream: &UpstreamHead) -> Result<(), String> {
    upstream.check()?;
    if let Some(held) = &head.upstream {
        if upstream.events < held.events {
            return Err(format!(
                "the upstream mirror goes back from {} events to {}",
                held.events, upstream.events
            ));
        }
        if !held.task_id.is_empty() && upstream.task_id != held.task_id {
            return Err(format!(
                "the upstream task changes from {} to {}",
                held.task_id, upstream.task_id
            ));
        }
    }
    Ok(())
}

impl TaskHead {
    /// When the task last made progress, for the deadline reaper: the upstream's last applied
    /// event for a task an upstream agent works on (a turn that only follows it is no progress),
    /// else its last event.
    pub fn progress_at(&self) -> Timestamp {
        match &self.upstream {
            Some(u) => u
                .progress_at
                .max(self.status.timestamp.unwrap_or(u.progress_at)),
            None => self.last_timeline,
        }
    }
}
