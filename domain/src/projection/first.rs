//! A task's first commit, answered from its own events: the read model after a task's first
//! commit holds exactly the head and what `writes_for` says those events write, so a creation
//! can answer with the task as GetTask would show it without reading back what it just wrote
//! (one store call fewer on SQLite, three fewer on DynamoDB).

use crate::ids::HistoryLength;
use crate::task::{TaskAggregate, TaskEvent};
use crate::wire::{Message, Task};

use super::{assemble, whole_history, writes_for, ArtifactChunk, ReadWrite};

/// The task after `events`, the whole of a new task's first commit, shaped like a view with
/// `history` and `include_artifacts`; `None` when the events create no task.
pub fn first_commit_view(
    events: &[TaskEvent],
    history: HistoryLength,
    include_artifacts: bool,
) -> Option<Task> {
    let mut state = TaskAggregate::default();
    let mut writes = Vec::new();
    for e in events {
        if let Some(head) = state.head() {
            writes_for(head, e, &mut writes);
        }
        state.apply_event(e);
    }
    let head = state.head()?;
    let mut messages: Vec<Message> = Vec::new();
    let mut chunks: Vec<ArtifactChunk> = Vec::new();
    for w in writes {
        match w {
            ReadWrite::History(h) => messages.push(h.message),
            ReadWrite::ArtifactReset { ord, chunks: n } => {
                chunks.retain(|c| !(c.ord == ord && c.chunk < n));
            }
            ReadWrite::ArtifactChunk(c) => chunks.push(c),
        }
    }
    let mut messages = whole_history(head, messages);
    let history = match history {
        HistoryLength::Last(0) => None,
        HistoryLength::Last(n) => {
            let skip = messages.len().saturating_sub(n as usize);
            Some(messages.split_off(skip))
        }
        HistoryLength::All => Some(messages),
    };
    let chunks = (include_artifacts && !head.artifacts.is_empty()).then(|| {
        chunks.sort_by_key(|c| (c.ord, c.chunk));
        chunks
    });
    Some(assemble(head, history, chunks))
}
