//! A task's first commit reads back exactly as its events alone show it
//! (`projection::first_commit_view`): the view a creation answers with, unread.

use std::sync::Arc;

use serde_json::json;
use taskledger_domain::ids::{ContextId, HistoryLength, TaskId};
use taskledger_domain::ports::{commit_for, ViewOptions};
use taskledger_domain::projection::first_commit_view;
use taskledger_domain::task::{CreateTask, TaskAggregate, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Artifact, Metadata, Part};

use super::{alice, user_message, Store};

pub async fn a_first_commit_reads_back_as_its_events_show<S: Store>(store: Arc<S>) {
    let task_id = TaskId::parse("t-first").expect("id");
    let mut message = user_message("m-0", "plan and go");
    let mut meta = Metadata::new();
    meta.insert(
        taskledger_domain::extensions::harness::METADATA_KEY.into(),
        json!({"name": "Release", "goal": "Ship", "plan": {"steps": [
            {"id": "build", "name": "Build", "description": "compile"}]}}),
    );
    message.metadata = Some(meta);
    let before = TaskAggregate::default();
    let mut events = before
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: task_id.clone(),
            context_id: ContextId::parse("c-first").expect("ctx"),
            owner: alice(),
            message,
            at: Timestamp::now(),
            extension: None,
            awaiting_assignee: None,
        }))
        .expect("created");
    let mut state = before.clone();
    for e in &events {
        state.apply_event(e);
    }
    events.extend(
        state
            .decide(TaskCommand::AddArtifact {
                artifact: Artifact {
                    artifact_id: "notes".into(),
                    name: Some("notes".into()),
                    description: None,
                    parts: vec![Part::text("draft")],
                    metadata: None,
                    extensions: vec![],
                    end_generation: Default::default(),
                    start_generation: Default::default(),
                },
                append: false,
                last_chunk: false,
                at: Timestamp::now(),
            })
            .expect("artifact"),
    );
    store
        .append(&commit_for(
            task_id.clone(),
            &before,
            &events,
            Timestamp::now(),
        ))
        .await
        .expect("first commit");
    for (history, include_artifacts) in [
        (HistoryLength::All, true),
        (HistoryLength::Last(1), true),
        (HistoryLength::Last(0), false),
        (HistoryLength::Last(10), false),
    ] {
        let read = store
            .get(
                &alice(),
                &task_id,
                ViewOptions::exact(history, include_artifacts),
            )
            .await
            .expect("get")
            .expect("visible");
        let read = taskledger_domain::projection::assemble(&read.head, read.history, read.chunks);
        let unread = first_commit_view(&events, history, include_artifacts).expect("a task");
        assert_eq!(
            serde_json::to_value(&unread).expect("json"),
            serde_json::to_value(&read).expect("json"),
            "history {history:?}, artifacts {include_artifacts}"
        );
    }
}
