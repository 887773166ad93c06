//! What a stream reads of the event log: the update each event shows a client, recorded with
//! the event at commit (`recorded`) and read back at any position (`item`), so any instance
//! can serve a stream from the store alone and every subscriber gets the same bytes.

use crate::task::stored::{EventUpdate, RecordedStatus, StoredEvent};
use crate::task::{TaskAggregate, TaskEvent};
use crate::wire::{StreamResponse, TaskState};

use super::push::artifact_update;

/// What `event` (already applied to `state`) shows a stream: an artifact update, or a status
/// update when it changed the task's status; `None` for events a client does not see.
pub fn recorded(state: &TaskAggregate, event: &TaskEvent) -> Option<EventUpdate> {
    let head = state.head.as_ref()?;
    if matches!(
        event,
        TaskEvent::ArtifactAdded { .. } | TaskEvent::ArtifactChunkAppended { .. }
    ) {
        return Some(EventUpdate {
            generation: head.generation,
            status: None,
        });
    }
    if head.status_version != state.version {
        return None;
    }
    let update = StreamResponse::StatusUpdate(head.status_update());
    Some(EventUpdate {
        generation: head.generation,
        status: Some(RecordedStatus {
            state: head.status.state,
            body: serde_json::to_string(&update).ok()?,
        }),
    })
}

/// One update a stream sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamItem {
    /// The event's sequence: the position a client resumes after (SSE `id:`).
    pub seq: u64,
    pub generation: u64,
    /// The state a status update reports; `None` for an artifact update.
    pub state: Option<TaskState>,
    /// The `StreamResponse` JSON (`{"statusUpdate": …}` or `{"artifactUpdate": …}`).
    pub body: String,
}

/// The update a stored event of the task (`task_id`, `context_id`) shows, if any.
pub fn item(task_id: &str, context_id: &str, event: &StoredEvent) -> Option<StreamItem> {
    let update = event.update.as_ref()?;
    let (state, body) = match &update.status {
        Some(status) => (Some(status.state), status.body.clone()),
        None => {
            let decoded = event.decode().ok()?;
            let artifact = artifact_update(task_id, context_id, &decoded)?;
            let body = serde_json::to_string(&StreamResponse::ArtifactUpdate(artifact)).ok()?;
            (None, body)
        }
    };
    Some(StreamItem {
        seq: event.seq,
        generation: update.generation,
        state,
        body,
    })
}

/// The principals a stored event takes the task away from (`AccessRevoked`): a stream of
/// theirs ends before it. `None` for every other event (read without decoding them).
pub fn revoked(event: &StoredEvent) -> Option<Vec<crate::ids::Principal>> {
    if event.event_type != "AccessRevoked" {
        return None;
    }
    match event.decode().ok()? {
        TaskEvent::AccessRevoked { principals, .. } => Some(principals),
        _ => None,
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
