//! Contract cases for what streams read: each event's update round-trips byte for byte.

use std::sync::Arc;

use taskledger_domain::ports::commit_for;
use taskledger_domain::projection::stream;
use taskledger_domain::task::TaskEvent;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Artifact, Part, TaskState};

use super::{create_task, state_of, Store};

/// A task's work to its end in one commit: WORKING, an artifact, COMPLETED.
pub(super) fn worked_then_done(now: Timestamp) -> [TaskEvent; 3] {
    [
        TaskEvent::StatusChanged {
            state: TaskState::Working,
            message: None,
            at: now,
        },
        TaskEvent::ArtifactAdded {
            artifact: Artifact {
                artifact_id: "a-1".into(),
                name: Some("notes".into()),
                description: None,
                parts: vec![Part::text("Grüße, \"quoted\" \u{1f600}")],
                metadata: None,
                extensions: Vec::new(),
                end_generation: Default::default(),
                start_generation: Default::default(),
            },
            last_chunk: true,
            at: now,
        },
        TaskEvent::StatusChanged {
            state: TaskState::Completed,
            message: None,
            at: now,
        },
    ]
}

pub async fn events_read_back_with_what_streams_show<S: Store>(store: Arc<S>) {
    let id = create_task(&*store, "t-stream", "c").await;
    let before = state_of(&*store, &id).await;
    let now = Timestamp::now();
    let events = worked_then_done(now);
    let commit = commit_for(id.clone(), &before, &events, now);
    let written: Vec<_> = commit.events.iter().map(|e| e.update.clone()).collect();
    store.append(&commit).await.expect("append");

    let read = store.events(&id, before.version).await.expect("events");
    let updates: Vec<_> = read.iter().map(|e| e.update.clone()).collect();
    assert_eq!(updates, written, "updates round-trip unchanged");
    let shown: Vec<_> = read
        .iter()
        .filter_map(|e| stream::item(id.as_str(), "c", e))
        .collect();
    assert_eq!(shown.len(), 3);
    assert_eq!(shown[0].state, Some(TaskState::Working));
    assert_eq!(shown[1].state, None);
    assert!(shown[1].body.contains("Grüße"), "{}", shown[1].body);
    assert_eq!(shown[2].state, Some(TaskState::Completed));
    let generations: Vec<u64> = shown.iter().map(|i| i.generation).collect();
    assert_eq!(generations, [2, 3, 4], "the created task was generation 1");

    let all = store.events(&id, 0).await.expect("events");
    assert!(
        stream::item(id.as_str(), "c", &all[0]).is_some(),
        "creation shows a submitted update"
    );
    assert!(all[1].update.is_none(), "a message append shows none");
}
