//! A task's timeline (draft A2A 1.1, the coherent task history of a2aproject/A2A ADR-002): the
//! messages and the statuses of the task in the order they happened, each with the generation
//! it belongs to, and each artifact's first and last generation — read from the event log, so
//! any instance answers it from the store alone. A message does not move the generation: it
//! belongs to the one of the last update before it (1 for the task's first message).

use std::collections::BTreeMap;

use crate::ids::HistoryLength;
use crate::task::stored::StoredEvent;
use crate::task::TaskEvent;
use crate::wire::{TaskStatus, TimelineEntry, TimelineItem};

/// A task's timeline and its artifacts' generations (`artifact id → (start, end)`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    pub entries: Vec<TimelineEntry>,
    pub artifacts: BTreeMap<String, (u64, u64)>,
}

/// The status a recorded status update (`{"statusUpdate": {…, "status": …}}`) reports.
fn status_of(body: &str) -> Option<TaskStatus> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    serde_json::from_value(v.get("statusUpdate")?.get("status")?.clone()).ok()
}

/// The timeline of `events` (the whole log of a task, in order): its last `length` entries.
pub fn timeline(events: &[StoredEvent], length: HistoryLength) -> Result<Timeline, String> {
    let mut out = Timeline::default();
    let mut generation = 1u64;
    for e in events {
        if let Some(u) = &e.update {
            generation = u.generation.max(1);
            if let Some(status) = u.status.as_ref().and_then(|s| status_of(&s.body)) {
                out.entries.push(TimelineEntry {
                    generation,
                    entry: TimelineItem::Status(status),
                });
            }
        }
        match e.event_type.as_str() {
            "MessageAppended" => {
                if let TaskEvent::MessageAppended { message, .. } = e.decode()? {
                    out.entries.push(TimelineEntry {
                        generation,
                        entry: TimelineItem::Message(message),
                    });
                }
            }
            "ArtifactAdded" | "ArtifactChunkAppended" => {
                let id = match e.decode()? {
                    TaskEvent::ArtifactAdded { artifact, .. } => artifact.artifact_id,
                    TaskEvent::ArtifactChunkAppended { artifact_id, .. } => artifact_id.to_string(),
                    _ => continue,
                };
                let at = out.artifacts.entry(id).or_insert((generation, generation));
                at.1 = generation;
            }
            _ => {}
        }
    }
    if let HistoryLength::Last(n) = length {
        let keep = n as usize;
        let drop = out.entries.len().saturating_sub(keep);
        out.entries.drain(..drop);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ContextId, Principal, TaskId};
    use crate::projection::stream::recorded;
    use crate::task::stored::EventUpdate;
    use crate::task::{CreateTask, TaskAggregate, TaskCommand};
    use crate::time::Timestamp;
    use crate::wire::{Artifact, Message, Part, TaskState};

    /// The stored events of a task that is created, asked, answered, given an artifact in two
    /// chunks and completed.
    fn log() -> Vec<StoredEvent> {
        let mut state = TaskAggregate::default();
        let mut out = Vec::new();
        let mut run = |state: &mut TaskAggregate, c: TaskCommand| {
            for e in state.decide(c).unwrap() {
                state.apply_event(&e);
                let update: Option<EventUpdate> = recorded(state, &e);
                let mut stored = StoredEvent::new(state.version, &e, Timestamp::now());
                stored.update = update;
                out.push(stored);
            }
        };
        let at = Timestamp::now;
        run(
            &mut state,
            TaskCommand::CreateTask(CreateTask {
                task_id: TaskId::parse("t").unwrap(),
                context_id: ContextId::parse("c").unwrap(),
                owner: Principal::anonymous(),
                message: Message::user_text("m-1", "hello"),
                at: at(),
                extension: None,
                awaiting_assignee: None,
            }),
        );
        run(
            &mut state,
            TaskCommand::ChangeStatus {
                state: TaskState::Working,
                message: None,
                at: at(),
            },
        );
        run(
            &mut state,
            TaskCommand::AppendAgentMessage {
                message: Message::agent_text("a-1", "on it"),
                at: at(),
            },
        );
        let artifact = |text: &str| Artifact {
            artifact_id: "r".into(),
            name: None,
            description: None,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: vec![],
            start_generation: None,
            end_generation: None,
        };
        run(
            &mut state,
            TaskCommand::AddArtifact {
                artifact: artifact("one "),
                append: false,
                last_chunk: false,
                at: at(),
            },
        );
        run(
            &mut state,
            TaskCommand::AddArtifact {
                artifact: artifact("two"),
                append: true,
                last_chunk: true,
                at: at(),
            },
        );
        run(
            &mut state,
            TaskCommand::ChangeStatus {
                state: TaskState::Completed,
                message: None,
                at: at(),
            },
        );
        out
    }

    #[test]
    fn messages_and_statuses_in_order_each_with_its_generation() {
        let t = timeline(&log(), HistoryLength::All).unwrap();
        let shown: Vec<(u64, String)> = t
            .entries
            .iter()
            .map(|e| {
                let what = match &e.entry {
                    TimelineItem::Message(m) => format!("message {}", m.message_id),
                    TimelineItem::Status(s) => format!("status {}", s.state.as_str()),
                };
                (e.generation, what)
            })
            .collect();
        let gens: Vec<u64> = shown.iter().map(|(g, _)| *g).collect();
        assert!(
            gens.windows(2).all(|w| w[0] <= w[1]),
            "generations never go back: {shown:?}"
        );
        let kinds: Vec<&str> = shown.iter().map(|(_, w)| w.as_str()).collect();
        let pos = |w: &str| {
            kinds
                .iter()
                .position(|k| k.starts_with(w))
                .unwrap_or_else(|| panic!("{w}: {kinds:?}"))
        };
        assert!(pos("message m-1") < pos("status TASK_STATE_WORKING"));
        assert!(pos("status TASK_STATE_WORKING") < pos("message a-1"));
        assert!(pos("message a-1") < pos("status TASK_STATE_COMPLETED"));
        // The agent's message belongs to the working status's generation; the artifact came after.
        let working = shown[pos("status TASK_STATE_WORKING")].0;
        assert_eq!(shown[pos("message a-1")].0, working);
        let (start, end) = t.artifacts["r"];
        assert!(
            working < start && start < end,
            "{start}..{end} after {working}"
        );
        assert!(end < shown[pos("status TASK_STATE_COMPLETED")].0);
    }

    #[test]
    fn a_length_keeps_the_last_entries() {
        let events = log();
        let all = timeline(&events, HistoryLength::All).unwrap();
        let two = timeline(&events, HistoryLength::Last(2)).unwrap();
        assert_eq!(two.entries, all.entries[all.entries.len() - 2..]);
        assert!(timeline(&events, HistoryLength::Last(0))
            .unwrap()
            .entries
            .is_empty());
        assert_eq!(
            two.artifacts, all.artifacts,
            "artifacts keep their generations"
        );
    }
}
