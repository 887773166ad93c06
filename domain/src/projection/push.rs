//! What a commit pushes to webhook subscribers: the status and artifact updates of the new
//! events, rendered as the `StreamResponse` JSON they receive (the deliveries are `push`'s).

use crate::push::PushUpdate;
use crate::task::{TaskAggregate, TaskEvent};
use crate::wire::{Artifact, StreamResponse, TaskArtifactUpdateEvent};

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
        let earlier = state.head.as_ref().is_some_and(|h| !h.push.is_empty());
        state.apply_event(event);
        let Some(head) = state.head.as_ref() else {
            continue;
        };
        if !earlier {
            continue;
        }
        let update = match event {
            TaskEvent::ArtifactAdded {
                artifact,
                last_chunk,
                ..
            } => Some(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: head.id.to_string(),
                context_id: head.context_id.to_string(),
                artifact: artifact.clone(),
                append: false,
                last_chunk: *last_chunk,
                metadata: None,
            })),
            TaskEvent::ArtifactChunkAppended {
                artifact_id,
                parts,
                metadata,
                last_chunk,
                ..
            } => Some(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: head.id.to_string(),
                context_id: head.context_id.to_string(),
                artifact: Artifact {
                    artifact_id: artifact_id.to_string(),
                    name: None,
                    description: None,
                    parts: parts.clone(),
                    metadata: metadata.clone(),
                    extensions: vec![],
                },
                append: true,
                last_chunk: *last_chunk,
                metadata: None,
            })),
            // Carries the usage extension when the update ends an execution.
            _ if head.status_version == state.version => {
                Some(StreamResponse::StatusUpdate(head.status_update()))
            }
            _ => None,
        };
        if let Some(u) = update {
            if let Ok(body) = serde_json::to_string(&u) {
                out.push(PushUpdate {
                    seq: state.version,
                    body,
                });
            }
        }
    }
    out
}
