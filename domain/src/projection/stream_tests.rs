//! Given a task's events, when a commit records them, then a stream reads back the updates a
//! client sees, each once, with the generation after it.

use crate::ids::{ArtifactId, ContextId, Principal, TaskId};
use crate::ports::{commit_for, CommitBuilder};
use crate::task::stored::StoredEvent;
use crate::task::{TaskAggregate, TaskEvent};
use crate::time::Timestamp;
use crate::wire::{Artifact, Message, Part, StreamResponse, TaskState};

use super::*;

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}Z")).unwrap()
}

fn created() -> Vec<TaskEvent> {
    vec![
        TaskEvent::TaskCreated {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            at: at(0),
        },
        TaskEvent::MessageAppended {
            message: Message::user_text("m-1", "hi"),
            at: at(0),
            acted_by: None,
        },
        TaskEvent::AgentWorkRequested {
            reason: "task created".into(),
            at: at(0),
        },
    ]
}

fn status(state: TaskState, s: u32) -> TaskEvent {
    TaskEvent::StatusChanged {
        state,
        message: None,
        at: at(s),
    }
}

fn artifact(last_chunk: bool) -> TaskEvent {
    TaskEvent::ArtifactAdded {
        artifact: Artifact {
            artifact_id: "a-1".into(),
            name: Some("report".into()),
            description: None,
            parts: vec![Part::text("part one")],
            metadata: None,
            extensions: Vec::new(),
            end_generation: Default::default(),
            start_generation: Default::default(),
        },
        last_chunk,
        at: at(2),
    }
}

fn chunk(last_chunk: bool) -> TaskEvent {
    TaskEvent::ArtifactChunkAppended {
        artifact_id: ArtifactId::parse("a-1").unwrap(),
        parts: vec![Part::text("part two")],
        metadata: None,
        last_chunk,
        at: at(3),
    }
}

/// The stored events of `events` committed one after another from an empty task.
fn stored(events: &[TaskEvent]) -> Vec<StoredEvent> {
    commit_for(
        TaskId::parse("t-1").unwrap(),
        &TaskAggregate::default(),
        events,
        at(9),
    )
    .events
}

fn items(events: &[StoredEvent]) -> Vec<StreamItem> {
    events
        .iter()
        .filter_map(|e| item("t-1", "c-1", e))
        .collect()
}

fn kind(body: &str) -> String {
    match serde_json::from_str::<StreamResponse>(body).unwrap() {
        StreamResponse::StatusUpdate(s) => format!("status {}", s.status.state.as_str()),
        StreamResponse::ArtifactUpdate(a) => format!(
            "artifact {} append={} last={}",
            a.artifact.artifact_id, a.append, a.last_chunk
        ),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_created_task_shows_one_submitted_update_at_generation_one() {
    let events = stored(&created());
    let shown = items(&events);
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].seq, 1);
    assert_eq!(shown[0].generation, 1);
    assert_eq!(shown[0].state, Some(TaskState::Submitted));
    assert_eq!(kind(&shown[0].body), "status TASK_STATE_SUBMITTED");
    assert!(
        events[1].update.is_none(),
        "a message append shows no update"
    );
    assert!(events[2].update.is_none(), "a work request shows no update");
}

#[test]
fn status_and_chunked_artifact_updates_read_back_in_commit_order() {
    let mut all = created();
    all.extend([
        status(TaskState::Working, 1),
        artifact(false),
        chunk(true),
        status(TaskState::Completed, 4),
    ]);
    let shown = items(&stored(&all));
    let kinds: Vec<String> = shown.iter().map(|i| kind(&i.body)).collect();
    assert_eq!(
        kinds,
        [
            "status TASK_STATE_SUBMITTED",
            "status TASK_STATE_WORKING",
            "artifact a-1 append=false last=false",
            "artifact a-1 append=true last=true",
            "status TASK_STATE_COMPLETED",
        ]
    );
    let seqs: Vec<u64> = shown.iter().map(|i| i.seq).collect();
    assert_eq!(seqs, [1, 4, 5, 6, 7]);
    let generations: Vec<u64> = shown.iter().map(|i| i.generation).collect();
    assert_eq!(
        generations,
        [1, 2, 3, 4, 5],
        "no gap between updates a client sees"
    );
    assert_eq!(shown[2].state, None);
    assert_eq!(shown[4].state, Some(TaskState::Completed));
}

#[test]
fn the_generation_after_a_commit_is_the_heads() {
    let mut all = created();
    all.extend([status(TaskState::Working, 1), artifact(true)]);
    let mut b = CommitBuilder::new(TaskId::parse("t-1").unwrap(), TaskAggregate::default());
    for e in all {
        b.add(e);
    }
    let head_generation = b.state().head.as_ref().unwrap().generation;
    let (commit, _) = b.finish(at(9));
    let last = commit.events.iter().rev().find_map(|e| e.update.as_ref());
    assert_eq!(head_generation, 3);
    assert_eq!(last.unwrap().generation, head_generation);
}

#[test]
fn a_stored_event_without_an_update_shows_nothing() {
    let mut events = stored(&created());
    events[0].update = None;
    assert!(items(&events).is_empty());
}

#[test]
fn an_undecodable_artifact_event_shows_nothing_rather_than_failing() {
    let mut all = created();
    all.push(artifact(true));
    let mut events = stored(&all);
    events[3].payload = serde_json::json!({"ArtifactAdded": {"nonsense": true}}).into();
    assert_eq!(items(&events).len(), 1);
}
