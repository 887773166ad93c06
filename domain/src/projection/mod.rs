//! Task events projected into the read model (history, artifact chunks) and, in `push`, into
//! webhook updates, in `stream` into what streams read; an A2A `Task` assembled from the read model. Pure: stores persist what it says.

mod first;
pub mod lifecycle;
#[cfg(test)]
mod lifecycle_tests;
pub mod log;
#[cfg(test)]
mod log_tests;
pub mod push;
pub mod stream;
pub mod timeline;
pub mod tool_calls;
pub mod work;

pub use first::first_commit_view;

use serde::{Deserialize, Serialize};

use crate::ids::HistoryLength;
use crate::task::{TaskAggregate, TaskEvent, TaskHead};
use crate::wire::{Artifact, Message, Task, TaskStatus};

/// A message in history at position `pos` (0-based, contiguous).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub pos: u64,
    pub message: Message,
}

/// One chunk of the artifact at position `ord` in the task; chunk 0 carries name and description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactChunk {
    pub ord: u32,
    pub chunk: u32,
    pub artifact: Artifact,
}

/// A write to the read model caused by an event.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadWrite {
    History(HistoryEntry),
    /// An artifact was replaced: drop its earlier `chunks` chunks first.
    ArtifactReset {
        ord: u32,
        chunks: u32,
    },
    ArtifactChunk(ArtifactChunk),
}

/// An appended chunk as an artifact of its own (its parts, under the artifact's id).
pub(crate) fn chunk_artifact(
    artifact_id: &crate::ids::ArtifactId,
    parts: &[crate::wire::Part],
    metadata: &Option<crate::wire::Metadata>,
) -> Artifact {
    Artifact {
        artifact_id: artifact_id.to_string(),
        name: None,
        description: None,
        parts: parts.to_vec(),
        metadata: metadata.clone(),
        extensions: Vec::new(),
        end_generation: Default::default(),
        start_generation: Default::default(),
    }
}

/// Applies `events` to `state` and returns the read-model writes they cause, in order.
pub fn project(state: &mut TaskAggregate, events: &[TaskEvent]) -> Vec<ReadWrite> {
    let mut writes = Vec::new();
    for event in events {
        if let Some(head) = state.head.as_ref() {
            writes_for(head, event, &mut writes);
        } else if let TaskEvent::TaskCreated { .. } = event {
            // nothing but the head itself
        }
        state.apply_event(event);
    }
    writes
}

/// The history rows written when `message` enters the history of `head`: those of the messages
/// it pushes out of the head's tail (ADR 029).
fn spill(head: &TaskHead, message: &Message, out: &mut Vec<ReadWrite>) {
    out.extend(
        head.recent
            .spilled_by(message, head.history_len)
            .into_iter()
            .map(|(pos, message)| ReadWrite::History(HistoryEntry { pos, message })),
    );
}

/// A task's whole history: its rows (`rows`, the messages its tail let go of, in order), then
/// the messages its head's tail holds.
pub fn whole_history(head: &TaskHead, rows: Vec<Message>) -> Vec<Message> {
    let mut history = rows;
    history.extend(head.recent.messages().cloned());
    history
}

/// The read-model writes one event causes, given the head before it.
pub fn writes_for(head: &TaskHead, event: &TaskEvent, out: &mut Vec<ReadWrite>) {
    match event {
        TaskEvent::MessageAppended { message, .. } => spill(head, message, out),
        TaskEvent::StatusChanged {
            message: Some(m), ..
        } => spill(head, m, out),
        TaskEvent::ArtifactAdded { artifact, .. } => {
            let existing = head
                .artifacts
                .iter()
                .position(|a| a.artifact_id.as_str() == artifact.artifact_id);
            let ord = match existing {
                Some(i) => {
                    out.push(ReadWrite::ArtifactReset {
                        ord: i as u32,
                        chunks: head.artifacts[i].chunks,
                    });
                    i
                }
                None => head.artifacts.len(),
            } as u32;
            out.push(ReadWrite::ArtifactChunk(ArtifactChunk {
                ord,
                chunk: 0,
                artifact: artifact.clone(),
            }));
        }
        TaskEvent::ArtifactChunkAppended {
            artifact_id,
            parts,
            metadata,
            ..
        } => {
            if let Some((i, a)) = head
                .artifacts
                .iter()
                .enumerate()
                .find(|(_, a)| &a.artifact_id == artifact_id)
            {
                out.push(ReadWrite::ArtifactChunk(ArtifactChunk {
                    ord: i as u32,
                    chunk: a.chunks,
                    artifact: chunk_artifact(artifact_id, parts, metadata),
                }));
            }
        }
        TaskEvent::HelpRequested { message, .. } => spill(head, message, out),
        TaskEvent::TaskCreated { .. }
        | TaskEvent::StatusChanged { message: None, .. }
        | TaskEvent::TaskCanceled { .. }
        | TaskEvent::ExtensionUpdated { .. }
        | TaskEvent::MessageRefused { .. }
        | TaskEvent::ModelChanged { .. }
        | TaskEvent::ReasoningEffortChanged { .. }
        | TaskEvent::ParticipantRoleChanged { .. }
        | TaskEvent::PlanCreated { .. }
        | TaskEvent::StepStarted { .. }
        | TaskEvent::StepCompleted { .. }
        | TaskEvent::StepFailed { .. }
        | TaskEvent::SubTaskSpawned { .. }
        | TaskEvent::ChildStateRecorded { .. }
        | TaskEvent::HelpAnswered { .. }
        | TaskEvent::ParticipantTaskOpened { .. }
        | TaskEvent::SubTasksAwaited { .. }
        | TaskEvent::ExecutionContinued { .. }
        | TaskEvent::UsageRecorded { .. }
        | TaskEvent::AgentWorkRequested { .. }
        | TaskEvent::AgentTurnFinished { .. }
        | TaskEvent::SkillLoaded { .. }
        | TaskEvent::SkillUnloaded { .. }
        | TaskEvent::PushConfigSet { .. }
        | TaskEvent::PushConfigDeleted { .. }
        | TaskEvent::AccessRevoked { .. }
        | TaskEvent::HandoffProposed { .. }
        | TaskEvent::GateRaised { .. }
        | TaskEvent::WorkAdvanced { .. }
        | TaskEvent::GateAnswered { .. }
        | TaskEvent::UpstreamRecorded { .. } => {}
    }
}

/// Merges chunks (sorted by `ord`, then `chunk`) into whole artifacts.
pub fn merge_chunks(mut chunks: Vec<ArtifactChunk>) -> Vec<Artifact> {
    chunks.sort_by_key(|c| (c.ord, c.chunk));
    let mut out: Vec<(u32, Artifact)> = Vec::new();
    for c in chunks {
        match out.last_mut() {
            Some((ord, a)) if *ord == c.ord => {
                a.parts.extend(c.artifact.parts);
                if let Some(extra) = c.artifact.metadata {
                    a.metadata
                        .get_or_insert_with(Default::default)
                        .extend(extra);
                }
            }
            _ => out.push((c.ord, c.artifact)),
        }
    }
    out.into_iter().map(|(_, a)| a).collect()
}

/// Keeps the last `n` of an ordered history, per `historyLength`.
pub fn limit_history(history: Vec<Message>, len: HistoryLength) -> Option<Vec<Message>> {
    match len {
        HistoryLength::Last(0) => None,
        HistoryLength::All => Some(history),
        HistoryLength::Last(n) => {
            let skip = history.len().saturating_sub(n as usize);
            Some(history.into_iter().skip(skip).collect())
        }
    }
}

/// The A2A `Task` from a head, its (already limited) history and, when asked for, its chunks.
pub fn assemble(
    head: &TaskHead,
    history: Option<Vec<Message>>,
    chunks: Option<Vec<ArtifactChunk>>,
) -> Task {
    let artifacts = chunks.map(merge_chunks).filter(|a| !a.is_empty());
    let mut metadata = head.metadata.clone();
    if let Some(usage) = &head.usage {
        if let Ok(v) = serde_json::to_value(usage) {
            metadata.insert(crate::extensions::usage::USAGE_EXTENSION_URI.to_string(), v);
        }
    }
    if let Some(h) = &head.handoff {
        use crate::extensions::dmp::ExtensionData;
        h.work_state(head.id.as_str()).write_into(&mut metadata);
    }
    if let Some(ext) = &head.ext {
        let mut data = ext.clone();
        // Stored tasks from before `lifecycle` existed: derive it the same way.
        data.lifecycle = Some(data.lifecycle());
        if let Ok(v) = serde_json::to_value(&data) {
            metadata.insert(crate::extensions::harness::METADATA_KEY.to_string(), v);
        }
    }
    Task {
        id: head.id.to_string(),
        context_id: head.context_id.to_string(),
        status: TaskStatus {
            state: head.status.state,
            message: head.status.message.clone(),
            timestamp: head.status.timestamp,
            elicitations: head.status.elicitations.clone(),
        },
        artifacts,
        history: history.filter(|h| !h.is_empty()),
        metadata: (!metadata.is_empty()).then_some(metadata),
        generation: (head.generation > 0).then_some(head.generation),
        timeline: None,
        elicitations: head.elicitations(),
    }
}

/// The whole projection in one go: events → `Task` (used by rebuilds and tests).
pub fn replay(events: &[TaskEvent], history_length: HistoryLength) -> Option<Task> {
    let mut state = TaskAggregate::default();
    let writes = project(&mut state, events);
    let head = state.head.as_ref()?;
    let mut rows = Vec::new();
    let mut chunks: Vec<ArtifactChunk> = Vec::new();
    for w in writes {
        match w {
            ReadWrite::History(h) => rows.push(h.message),
            ReadWrite::ArtifactReset { ord, .. } => chunks.retain(|c| c.ord != ord),
            ReadWrite::ArtifactChunk(c) => chunks.push(c),
        }
    }
    Some(assemble(
        head,
        limit_history(whole_history(head, rows), history_length),
        Some(chunks),
    ))
}
