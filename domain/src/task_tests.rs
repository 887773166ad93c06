//! Given/when/then: one test per rule of the Task aggregate and its projection.

use cqrs_es::test::TestFramework;
use serde_json::json;

use crate::error::DomainError;
use crate::ids::{ContextId, HistoryLength, Principal, TaskId};
use crate::projection::replay;
use crate::task::intake::{TASK_CREATED_AT_KEY, TIMELINE_POSITION_KEY};
use crate::task::*;
use crate::time::Timestamp;
use crate::wire::*;

type Given = TestFramework<TaskAggregate>;

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}Z")).unwrap()
}

fn user(id: &str, text: &str) -> Message {
    Message::user_text(id, text)
}

fn agent(id: &str, text: &str) -> Message {
    Message::agent_text(id, text)
}

fn owner() -> Principal {
    Principal::new("acme", "alice").unwrap()
}

fn create_cmd(msg: Message) -> TaskCommand {
    TaskCommand::CreateTask(CreateTask {
        task_id: TaskId::parse("t-1").unwrap(),
        context_id: ContextId::parse("c-1").unwrap(),
        owner: owner(),
        message: msg,
        at: at(0),
        extension: None,
        awaiting_assignee: None,
    })
}

/// The message as the task keeps it: ids set, timeline stamped.
fn kept(mut m: Message, stamp: Timestamp) -> Message {
    m.task_id = Some("t-1".into());
    m.context_id = Some("c-1".into());
    m.metadata.get_or_insert_with(Default::default).insert(
        TIMELINE_POSITION_KEY.into(),
        json!(stamp.to_rfc3339_nanos()),
    );
    m
}

fn created() -> Vec<TaskEvent> {
    vec![
        TaskEvent::TaskCreated {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: owner(),
            at: at(0),
        },
        TaskEvent::MessageAppended {
            message: kept(user("m-1", "hi"), at(0)),
            at: at(0),
            acted_by: None,
        },
        TaskEvent::AgentWorkRequested {
            reason: "task created".into(),
            at: at(0),
        },
    ]
}

fn work(at: Timestamp) -> TaskEvent {
    TaskEvent::AgentWorkRequested {
        reason: "new input".into(),
        at,
    }
}

fn status(state: TaskState, s: u32) -> TaskEvent {
    TaskEvent::StatusChanged {
        state,
        message: None,
        at: at(s),
    }
}

#[test]
fn creating_a_task_records_it_and_its_first_message() {
    Given::with(())
        .given_no_previous_events()
        .when(create_cmd(user("m-1", "hi")))
        .then_expect_events(created());
}

#[test]
fn caller_supplied_timeline_and_created_at_keys_are_stripped_on_intake() {
    let mut m = user("m-1", "hi");
    m.metadata = Some(
        json!({TIMELINE_POSITION_KEY: "1999-01-01T00:00:00Z", TASK_CREATED_AT_KEY: "x"})
            .as_object()
            .unwrap()
            .clone(),
    );
    Given::with(())
        .given_no_previous_events()
        .when(create_cmd(m))
        .then_expect_events(created());
}

#[test]
fn a_task_needs_a_first_message_with_parts() {
    let mut m = user("m-1", "hi");
    m.parts.clear();
    Given::with(())
        .given_no_previous_events()
        .when(create_cmd(m))
        .then_expect_error(DomainError::invalid(
            "message.parts",
            "a message needs at least one part",
        ));
}

#[test]
fn a_task_cannot_be_created_twice() {
    Given::with(())
        .given(created())
        .when(create_cmd(user("m-1", "hi")))
        .then_expect_error(DomainError::TaskAlreadyExists {
            task_id: "t-1".into(),
        });
}

#[test]
fn a_message_to_an_unknown_task_is_task_not_found() {
    let r = Given::with(())
        .given_no_previous_events()
        .when(TaskCommand::AppendUserMessage(AppendUserMessage {
            message: user("m-2", "x"),
            at: at(1),
            caller: None,
        }))
        .inspect_result();
    assert!(matches!(r, Err(DomainError::TaskNotFound { .. })));
}

#[test]
fn a_follow_up_message_is_appended_with_a_later_timeline_stamp() {
    Given::with(())
        .given(created())
        .and(vec![status(TaskState::InputRequired, 1)])
        .when(TaskCommand::AppendUserMessage(AppendUserMessage {
            message: user("m-2", "more"),
            at: at(2),
            caller: None,
        }))
        .then_expect_events(vec![
            TaskEvent::MessageAppended {
                message: kept(user("m-2", "more"), at(2)),
                at: at(2),
                acted_by: None,
            },
            work(at(2)),
        ]);
}

#[test]
fn timeline_stamps_stay_strictly_increasing_when_the_clock_does_not() {
    let later = at(0).next_nano();
    Given::with(())
        .given(created())
        .when(TaskCommand::AppendUserMessage(AppendUserMessage {
            message: user("m-2", "same instant"),
            at: at(0),
            caller: None,
        }))
        .then_expect_events(vec![
            TaskEvent::MessageAppended {
                message: kept(user("m-2", "same instant"), later),
                at: later,
                acted_by: None,
            },
            work(later),
        ]);
}

#[test]
fn a_message_whose_context_does_not_match_the_task_is_invalid_params() {
    let mut m = user("m-2", "x");
    m.context_id = Some("other".into());
    let r = Given::with(())
        .given(created())
        .when(TaskCommand::AppendUserMessage(AppendUserMessage {
            message: m,
            at: at(1),
            caller: None,
        }))
        .inspect_result();
    assert!(
        matches!(r, Err(DomainError::InvalidParams { ref field, .. }) if field == "message.contextId")
    );
}

#[test]
fn terminal_states_are_final_for_messages() {
    for terminal in [TaskState::Completed, TaskState::Failed, TaskState::Rejected] {
        Given::with(())
            .given(created())
            .and(vec![status(terminal, 1)])
            .when(TaskCommand::AppendUserMessage(AppendUserMessage {
                message: user("m-2", "x"),
                at: at(2),
                caller: None,
            }))
            .then_expect_error(DomainError::TaskTerminal {
                task_id: "t-1".into(),
                state: terminal,
            });
    }
}

#[test]
fn terminal_states_are_final_for_the_agent_too() {
    Given::with(())
        .given(created())
        .and(vec![status(TaskState::Completed, 1)])
        .when(TaskCommand::ChangeStatus {
            state: TaskState::Working,
            message: None,
            at: at(2),
        })
        .then_expect_error(DomainError::TaskTerminal {
            task_id: "t-1".into(),
            state: TaskState::Completed,
        });
}

#[test]
fn a_status_message_belongs_to_the_task() {
    Given::with(())
        .given(created())
        .when(TaskCommand::ChangeStatus {
            state: TaskState::InputRequired,
            message: Some(agent("a-1", "which city?")),
            at: at(1),
        })
        .then_expect_events(vec![TaskEvent::StatusChanged {
            state: TaskState::InputRequired,
            message: Some(kept(agent("a-1", "which city?"), at(1))),
            at: at(1),
        }]);
}

#[test]
fn canceling_a_working_task_cancels_it() {
    Given::with(())
        .given(created())
        .and(vec![status(TaskState::Working, 1)])
        .when(TaskCommand::CancelTask {
            at: at(2),
            by: None,
        })
        .then_expect_events(vec![TaskEvent::TaskCanceled { at: at(2) }]);
}

#[test]
fn canceling_a_canceled_task_again_changes_nothing() {
    Given::with(())
        .given(created())
        .and(vec![TaskEvent::TaskCanceled { at: at(1) }])
        .when(TaskCommand::CancelTask {
            at: at(2),
            by: None,
        })
        .then_expect_events(vec![]);
}

#[test]
fn other_terminal_tasks_are_not_cancelable() {
    Given::with(())
        .given(created())
        .and(vec![status(TaskState::Completed, 1)])
        .when(TaskCommand::CancelTask {
            at: at(2),
            by: None,
        })
        .then_expect_error(DomainError::TaskNotCancelable {
            task_id: "t-1".into(),
            state: TaskState::Completed,
        });
}

#[test]
fn the_agent_cannot_cancel_through_a_status_change() {
    let r = Given::with(())
        .given(created())
        .when(TaskCommand::ChangeStatus {
            state: TaskState::Canceled,
            message: None,
            at: at(1),
        })
        .inspect_result();
    assert!(matches!(r, Err(DomainError::InvalidParams { .. })));
}

fn artifact(id: &str, text: &str) -> Artifact {
    Artifact {
        artifact_id: id.into(),
        name: Some("out".into()),
        description: None,
        parts: vec![Part::text(text)],
        metadata: None,
        extensions: vec![],
        end_generation: Default::default(),
        start_generation: Default::default(),
    }
}

#[test]
fn an_artifact_is_added_with_a_timeline_stamp() {
    let mut stamped = artifact("a", "x");
    stamped.metadata = Some(
        json!({TIMELINE_POSITION_KEY: at(1).to_rfc3339_nanos()})
            .as_object()
            .unwrap()
            .clone(),
    );
    Given::with(())
        .given(created())
        .when(TaskCommand::AddArtifact {
            artifact: artifact("a", "x"),
            append: false,
            last_chunk: false,
            at: at(1),
        })
        .then_expect_events(vec![TaskEvent::ArtifactAdded {
            artifact: stamped,
            last_chunk: false,
            at: at(1),
        }]);
}

fn chunked() -> Vec<TaskEvent> {
    let mut e = created();
    e.push(TaskEvent::ArtifactAdded {
        artifact: artifact("a", "chunk-1 "),
        last_chunk: false,
        at: at(1),
    });
    e
}

#[test]
fn a_chunk_is_appended_to_an_open_artifact() {
    Given::with(())
        .given(chunked())
        .when(TaskCommand::AddArtifact {
            artifact: artifact("a", "chunk-2"),
            append: true,
            last_chunk: true,
            at: at(2),
        })
        .then_expect_events(vec![TaskEvent::ArtifactChunkAppended {
            artifact_id: "a".to_string().try_into().unwrap(),
            parts: vec![Part::text("chunk-2")],
            metadata: None,
            last_chunk: true,
            at: at(2),
        }]);
}

#[test]
fn no_chunk_follows_the_last_chunk() {
    let mut given = chunked();
    given.push(TaskEvent::ArtifactChunkAppended {
        artifact_id: "a".to_string().try_into().unwrap(),
        parts: vec![Part::text("end")],
        metadata: None,
        last_chunk: true,
        at: at(2),
    });
    let r = Given::with(())
        .given(given)
        .when(TaskCommand::AddArtifact {
            artifact: artifact("a", "more"),
            append: true,
            last_chunk: false,
            at: at(3),
        })
        .inspect_result();
    assert!(matches!(r, Err(DomainError::InvalidParams { .. })));
}

#[test]
fn artifacts_per_task_are_bounded() {
    let mut given = created();
    for i in 0..MAX_ARTIFACTS_PER_TASK {
        given.push(TaskEvent::ArtifactAdded {
            artifact: artifact(&format!("a{i}"), "x"),
            last_chunk: true,
            at: at(1),
        });
    }
    let r = Given::with(())
        .given(given.clone())
        .when(TaskCommand::AddArtifact {
            artifact: artifact("one-more", "x"),
            append: false,
            last_chunk: true,
            at: at(2),
        })
        .inspect_result();
    assert!(matches!(r, Err(DomainError::InvalidParams { .. })));
    // replacing an existing one is still fine at the limit
    let r = Given::with(())
        .given(given)
        .when(TaskCommand::AddArtifact {
            artifact: artifact("a0", "y"),
            append: false,
            last_chunk: true,
            at: at(2),
        })
        .inspect_result();
    assert!(r.is_ok());
}

// ------------------------------------------------------------------ projection

#[test]
fn the_projection_builds_the_a2a_task() {
    let mut events = chunked();
    events.push(TaskEvent::ArtifactChunkAppended {
        artifact_id: "a".to_string().try_into().unwrap(),
        parts: vec![Part::text("chunk-2")],
        metadata: None,
        last_chunk: true,
        at: at(2),
    });
    events.push(TaskEvent::StatusChanged {
        state: TaskState::Completed,
        message: Some(kept(agent("a-1", "done"), at(3))),
        at: at(3),
    });
    let task = replay(&events, HistoryLength::All).unwrap();
    assert_eq!(task.id, "t-1");
    assert_eq!(task.context_id, "c-1");
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.status.timestamp, Some(at(3)));
    assert_eq!(
        task.metadata.as_ref().unwrap()[TASK_CREATED_AT_KEY],
        json!(at(0).to_rfc3339_nanos())
    );
    let artifacts = task.artifacts.unwrap();
    assert_eq!(artifacts.len(), 1);
    assert_eq!(
        artifacts[0].parts,
        vec![Part::text("chunk-1 "), Part::text("chunk-2")]
    );
    let history = task.history.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].text(), "hi");
    assert_eq!(history[1].text(), "done");
    assert!(history.iter().all(|m| m
        .metadata
        .as_ref()
        .unwrap()
        .contains_key(TIMELINE_POSITION_KEY)));
}

#[test]
fn history_length_unset_all_zero_none_n_last_n() {
    let mut events = created();
    for i in 2..6 {
        events.push(TaskEvent::MessageAppended {
            message: kept(user(&format!("m-{i}"), &format!("msg {i}")), at(i)),
            at: at(i),
            acted_by: None,
        });
    }
    assert_eq!(
        replay(&events, HistoryLength::All)
            .unwrap()
            .history
            .unwrap()
            .len(),
        5
    );
    assert!(replay(&events, HistoryLength::Last(0))
        .unwrap()
        .history
        .is_none());
    let last2 = replay(&events, HistoryLength::Last(2))
        .unwrap()
        .history
        .unwrap();
    assert_eq!(
        last2.iter().map(Message::text).collect::<Vec<_>>(),
        ["msg 4", "msg 5"]
    );
    assert_eq!(
        replay(&events, HistoryLength::Last(99))
            .unwrap()
            .history
            .unwrap()
            .len(),
        5
    );
}

#[test]
fn a_replaced_artifact_keeps_its_place_and_loses_its_old_chunks() {
    let mut events = chunked();
    events.push(TaskEvent::ArtifactAdded {
        artifact: artifact("b", "second"),
        last_chunk: true,
        at: at(2),
    });
    events.push(TaskEvent::ArtifactAdded {
        artifact: artifact("a", "replaced"),
        last_chunk: true,
        at: at(3),
    });
    let artifacts = replay(&events, HistoryLength::All)
        .unwrap()
        .artifacts
        .unwrap();
    assert_eq!(artifacts.len(), 2);
    assert_eq!(artifacts[0].artifact_id, "a");
    assert_eq!(artifacts[0].parts, vec![Part::text("replaced")]);
    assert_eq!(artifacts[1].artifact_id, "b");
}

#[test]
fn a_blocking_send_settles_on_terminal_or_a_fresh_interruption() {
    let mut s = TaskAggregate::default();
    for e in created() {
        s.apply_event(&e);
    }
    s.apply_event(&status(TaskState::InputRequired, 1));
    let v = s.version;
    assert!(s.settled_since(v - 1));
    assert!(
        !s.settled_since(v),
        "an old interruption does not answer a new message"
    );
    s.apply_event(&status(TaskState::Completed, 2));
    assert!(s.settled_since(v));
}

#[test]
fn snapshots_round_trip_through_json() {
    let mut s = TaskAggregate::default();
    for e in chunked() {
        s.apply_event(&e);
    }
    let json = serde_json::to_value(&s).unwrap();
    let back: TaskAggregate = serde_json::from_value(json).unwrap();
    assert_eq!(back, s);
}

#[test]
fn a_send_conditional_on_the_current_generation_goes_ahead() {
    // created (1), then WORKING (2)
    let mut e = created();
    e.push(status(TaskState::Working, 1));
    Given::with(())
        .given(e)
        .when(TaskCommand::RequireGeneration { expected: 2 })
        .then_expect_events(vec![]);
}

#[test]
fn a_send_conditional_on_a_past_generation_is_refused() {
    let mut e = created();
    e.push(status(TaskState::Working, 1));
    e.push(status(TaskState::InputRequired, 2));
    Given::with(())
        .given(e)
        .when(TaskCommand::RequireGeneration { expected: 2 })
        .then_expect_error(DomainError::GenerationMismatch {
            task_id: "t-1".into(),
            expected: 2,
            current: 3,
        });
}

#[test]
fn history_alone_does_not_move_the_generation() {
    // A user message is no update a client is shown: the generation stays 1.
    let mut e = created();
    e.push(TaskEvent::MessageAppended {
        message: kept(user("m-2", "more"), at(1)),
        at: at(1),
        acted_by: None,
    });
    Given::with(())
        .given(e)
        .when(TaskCommand::RequireGeneration { expected: 1 })
        .then_expect_events(vec![]);
}
