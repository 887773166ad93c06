//! What a commit pushes to webhook subscribers: the status and artifact updates of the new
//! events, rendered as the `StreamResponse` JSON they receive (the deliveries are `push`'s).

use crate::push::PushUpdate;
use crate::task::{TaskAggregate, TaskEvent};
use crate::wire::{StreamResponse, TaskArtifactUpdateEvent};

/// The updates `events` (decided on `before`, numbered from `before.version + 1`) push: a
/// status update for each event that changes the task's status, an artifact update for each
/// artifact event, for events some subscription registered before them receives.
pub fn updates(before: &TaskAggregate, events: &[TaskEvent]) -> Vec<PushUpdate> {
    let subscribed = |s: &TaskAggregate| s.head.as_ref().is_some_and(|h| !h.push.is_empty());
    let registers = events
        .iter()
        .any(|e| matches!(e, TaskEvent::PushConfigSet { .. }));
    if !subscribed(before) && !registers {
        return Vec::new();
    }
    let mut state = before.clone();
    let mut out = Vec::new();
    for event in events {
        let earlier = subscribed(&state);
        state.apply_event(event);
        if earlier {
            out.extend(update_of(&state, event));
        }
    }
    out
}

/// The update one event pushes, given the state right after it, if some subscription
/// registered before the event: the caller checks that (`TaskHead.push` before the event).
pub fn update_of(state: &TaskAggregate, event: &TaskEvent) -> Option<PushUpdate> {
    let head = state.head.as_ref()?;
    let update = match artifact_update(head.id.as_str(), head.context_id.as_str(), event) {
        Some(artifact) => StreamResponse::ArtifactUpdate(artifact),
        // Carries the usage extension when the update ends an execution. A webhook is sent
        // the 1.0 shape: no draft 1.1 field (elicitations, like generations, are not pushed).
        None if head.status_version == state.version => {
            let mut update = head.status_update();
            update.status.elicitations.clear();
            StreamResponse::StatusUpdate(update)
        }
        None => return None,
    };
    let body = serde_json::to_string(&update).ok()?;
    Some(PushUpdate {
        seq: state.version,
        body,
    })
}

/// The artifact update an artifact event shows, from the event alone.
pub(crate) fn artifact_update(
    task_id: &str,
    context_id: &str,
    event: &TaskEvent,
) -> Option<TaskArtifactUpdateEvent> {
    match event {
        TaskEvent::ArtifactAdded {
            artifact,
            last_chunk,
            ..
        } => Some(TaskArtifactUpdateEvent {
            task_id: task_id.to_string(),
            context_id: context_id.to_string(),
            artifact: artifact.clone(),
            append: false,
            last_chunk: *last_chunk,
            metadata: None,
            generation: None,
        }),
        TaskEvent::ArtifactChunkAppended {
            artifact_id,
            parts,
            metadata,
            last_chunk,
            ..
        } => Some(TaskArtifactUpdateEvent {
            task_id: task_id.to_string(),
            context_id: context_id.to_string(),
            artifact: super::chunk_artifact(artifact_id, parts, metadata),
            append: true,
            last_chunk: *last_chunk,
            metadata: None,
            generation: None,
        }),
        _ => None,
    }
}
