//! Given a task's events, when a bus is told of them, then each status change, artifact update,
//! gate and handoff is one event (two for a status that asks something), with ids, tenant,
//! state and generation — and the task's text only at the full detail level.

use crate::ids::{ArtifactId, ContextId, Principal, TaskId};
use crate::ports::{commit_for, replay_state};
use crate::task::stored::StoredEvent;
use crate::task::TaskEvent;
use crate::time::Timestamp;
use crate::wire::{Artifact, Message, Part, TaskState};

use super::lifecycle::*;

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}Z")).unwrap()
}

fn log() -> Vec<StoredEvent> {
    let events = vec![
        TaskEvent::TaskCreated {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            at: at(0),
        },
        TaskEvent::MessageAppended {
            message: Message::user_text("m-1", "a private question"),
            at: at(0),
            acted_by: None,
        },
        TaskEvent::StatusChanged {
            state: TaskState::InputRequired,
            message: Some(Message::agent_text("m-2", "which seat?")),
            at: at(1),
        },
        TaskEvent::ArtifactAdded {
            artifact: Artifact {
                artifact_id: "a-1".into(),
                name: Some("ticket".into()),
                description: None,
                parts: vec![Part::text("seat 12A")],
                metadata: None,
                extensions: Vec::new(),
                end_generation: Default::default(),
                start_generation: Default::default(),
            },
            last_chunk: false,
            at: at(2),
        },
        TaskEvent::ArtifactChunkAppended {
            artifact_id: ArtifactId::parse("a-1").unwrap(),
            parts: vec![Part::text("gate B")],
            metadata: None,
            last_chunk: true,
            at: at(3),
        },
    ];
    commit_for(
        TaskId::parse("t-1").unwrap(),
        &Default::default(),
        &events,
        at(9),
    )
    .events
}

fn told(level: DetailLevel) -> Vec<LifecycleEvent> {
    let log = log();
    let head = replay_state(&log).unwrap().head.unwrap();
    log.iter()
        .flat_map(|e| events_of(&head, e, level))
        .collect()
}

#[test]
fn given_a_task_then_the_bus_hears_its_statuses_artifacts_and_what_it_asks() {
    let events = told(DetailLevel::Summary);
    let kinds: Vec<(&str, u64)> = events.iter().map(|e| (e.detail_type, e.seq)).collect();
    assert_eq!(
        kinds,
        [
            ("Task Status Changed", 1),
            ("Task Status Changed", 3),
            ("Task Input Required", 3),
            ("Task Artifact Updated", 4),
            ("Task Artifact Updated", 5),
        ]
    );
    let d = &events[1].detail;
    assert_eq!(d["taskId"], "t-1");
    assert_eq!(d["contextId"], "c-1");
    assert_eq!(d["tenant"], "acme");
    assert_eq!(d["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(d["generation"], 2);
    assert_eq!(d["seq"], 3);
    assert_eq!(events[4].detail["append"], true);
    assert_eq!(events[4].detail["lastChunk"], true);
    assert_eq!(events[3].detail["name"], "ticket");
}

#[test]
fn a_summary_carries_no_text_of_the_task_and_full_does() {
    let summary = serde_json::to_string(
        &told(DetailLevel::Summary)
            .iter()
            .map(|e| e.detail.clone())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    for text in ["which seat?", "seat 12A", "gate B", "a private question"] {
        assert!(!summary.contains(text), "{text} in {summary}");
    }
    let full = told(DetailLevel::Full);
    assert_eq!(
        full[1].detail["statusMessage"]["parts"][0]["text"],
        "which seat?"
    );
    assert_eq!(full[3].detail["parts"][0]["text"], "seat 12A");
    assert!(!serde_json::to_string(&full[0].detail)
        .unwrap()
        .contains("a private question"));
}

#[test]
fn the_detail_level_reads_as_configured_and_refuses_anything_else() {
    assert_eq!(DetailLevel::parse("summary"), Ok(DetailLevel::Summary));
    assert_eq!(DetailLevel::parse(""), Ok(DetailLevel::Summary));
    assert_eq!(DetailLevel::parse("FULL"), Ok(DetailLevel::Full));
    assert!(DetailLevel::parse("everything").is_err());
    assert!(is_lifecycle("GateRaised", false));
    assert!(is_lifecycle("HandoffProposed", false));
    assert!(!is_lifecycle("AgentWorkRequested", false));
    assert!(is_lifecycle("StatusChanged", true));
}
