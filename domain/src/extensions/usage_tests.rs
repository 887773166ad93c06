//! Given/when/then for the usage extension on status updates: the update that ends an
//! execution carries the task-lifetime totals, the same payload as `Task.metadata`.

use serde_json::{json, Value};

use crate::extensions::usage::{Usage, USAGE_EXTENSION_URI};
use crate::ids::{ContextId, HistoryLength, ParticipantId, Principal, TaskId};
use crate::projection::replay;
use crate::task::*;
use crate::time::Timestamp;
use crate::wire::*;

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}Z")).unwrap()
}

/// A task with two participants (so help requests and sub-tasks are possible), as events.
fn created() -> Vec<TaskEvent> {
    let mut m = Message::user_text("m-0", "start");
    m.metadata = json!({"participant_id": "ann"}).as_object().cloned();
    m.parts.push(Part {
        content: PartContent::Data(
            json!({"name": "Release", "goal": "Ship 1.0", "participants": [
            {"id": "ann", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "assignee"}]}),
        ),
        metadata: None,
        filename: None,
        media_type: Some(crate::extensions::harness::MEDIA_TYPE.into()),
    });
    TaskAggregate::default()
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            message: m,
            at: at(0),
            extension: None,
            awaiting_assignee: None,
        }))
        .unwrap()
}

/// Decides each command on the state so far and applies its events (like one commit each);
/// returns the state and every event.
fn run_all(events: &[TaskEvent], commands: Vec<TaskCommand>) -> (TaskAggregate, Vec<TaskEvent>) {
    let mut s = TaskAggregate::default();
    events.iter().for_each(|e| s.apply_event(e));
    let mut all = events.to_vec();
    for c in commands {
        let decided = s.decide(c).unwrap();
        decided.iter().for_each(|e| s.apply_event(e));
        all.extend(decided);
    }
    (s, all)
}

fn run(events: &[TaskEvent], commands: Vec<TaskCommand>) -> TaskAggregate {
    run_all(events, commands).0
}

fn usage(model: &str, input: u64, output: u64) -> TaskCommand {
    TaskCommand::RecordUsage {
        model: Some(model.into()),
        usage: Usage::of_response(input, output, 0, 0, None),
        at: at(1),
    }
}

fn status(state: TaskState) -> TaskCommand {
    TaskCommand::ChangeStatus {
        state,
        message: Some(Message::agent_text("a-1", "done")),
        at: at(2),
    }
}

fn update_usage(s: &TaskAggregate) -> Option<Value> {
    s.head()
        .unwrap()
        .status_update()
        .metadata
        .and_then(|m| m.get(USAGE_EXTENSION_URI).cloned())
}

#[test]
fn the_update_that_completes_the_task_carries_the_same_usage_as_task_metadata() {
    let (s, all) = run_all(
        &created(),
        vec![
            usage("mock-b", 10, 5),
            usage("mock-a", 20, 1),
            status(TaskState::Completed),
        ],
    );
    let update = s.head().unwrap().status_update();
    assert_eq!(update.task_id, "t-1");
    assert_eq!(update.status.state, TaskState::Completed);
    let on_update = update_usage(&s).expect("usage on the final status update");
    assert_eq!(on_update["totalTokens"], 36);
    assert_eq!(on_update["models"][0]["model"], "mock-a");
    // the stored task says the same
    let task = replay(&all, HistoryLength::All).unwrap();
    assert_eq!(task.metadata.unwrap()[USAGE_EXTENSION_URI], on_update);
    // and the wire shape is `TaskStatusUpdateEvent.metadata[URI]`
    let wire = serde_json::to_value(StreamResponse::StatusUpdate(update)).unwrap();
    assert_eq!(
        wire["statusUpdate"]["metadata"][USAGE_EXTENSION_URI]["inputTokens"],
        30
    );
}

#[test]
fn failed_input_required_and_canceled_updates_carry_usage_too() {
    for state in [
        TaskState::Failed,
        TaskState::InputRequired,
        TaskState::AuthRequired,
    ] {
        let s = run(&created(), vec![usage("m", 1, 1), status(state)]);
        assert_eq!(update_usage(&s).unwrap()["totalTokens"], 2, "{state:?}");
    }
    let s = run(
        &created(),
        vec![
            usage("m", 1, 1),
            TaskCommand::CancelTask {
                at: at(3),
                by: None,
            },
        ],
    );
    assert_eq!(update_usage(&s).unwrap()["totalTokens"], 2, "canceled");
}

#[test]
fn a_help_request_ends_the_execution_with_usage() {
    let s = run(
        &created(),
        vec![
            usage("m", 4, 2),
            TaskCommand::AskParticipant {
                participant_id: ParticipantId::parse("bob").unwrap(),
                question: "Which region?".into(),
                options: vec![],
                at: at(2),
            },
        ],
    );
    assert_eq!(s.head().unwrap().status.state, TaskState::InputRequired);
    assert_eq!(update_usage(&s).unwrap()["totalTokens"], 6);
}

#[test]
fn waiting_for_sub_tasks_is_a_status_update_with_usage() {
    let s = run(
        &created(),
        vec![
            TaskCommand::ChangeStatus {
                state: TaskState::Working,
                message: None,
                at: at(1),
            },
            usage("m", 7, 3),
            TaskCommand::SpawnSubTask {
                step: None,
                at: at(2),
            },
        ],
    );
    let before = s.head().unwrap().status_version;
    let events = s.decide(TaskCommand::AwaitSubTasks { at: at(3) }).unwrap();
    assert!(
        matches!(&events[..], [TaskEvent::SubTasksAwaited { children, .. }] if children == &[TaskId::parse("t-1.1").unwrap()])
    );
    let mut after = s.clone();
    events.iter().for_each(|e| after.apply_event(e));
    let head = after.head().unwrap();
    assert_eq!(head.status.state, TaskState::Working, "the state stays");
    assert!(head.status_version > before, "but it is a status update");
    assert_eq!(update_usage(&after).unwrap()["totalTokens"], 10);
    // nothing to wait for once the child is resolved
    let mut done = after.clone();
    let d = done
        .decide(TaskCommand::RecordChildState {
            child_id: TaskId::parse("t-1.1").unwrap(),
            state: TaskState::Completed,
            summary: "ok".into(),
            at: at(4),
        })
        .unwrap();
    d.iter().for_each(|e| done.apply_event(e));
    assert_eq!(
        done.decide(TaskCommand::AwaitSubTasks { at: at(5) })
            .unwrap(),
        vec![]
    );
}

#[test]
fn updates_that_end_no_execution_or_follow_no_usage_carry_none() {
    // working: an execution is under way
    let s = run(
        &created(),
        vec![
            usage("m", 1, 1),
            TaskCommand::ChangeStatus {
                state: TaskState::Working,
                message: None,
                at: at(2),
            },
        ],
    );
    assert_eq!(update_usage(&s), None);
    // no model call reported usage: the key is omitted
    let s = run(&created(), vec![status(TaskState::Completed)]);
    assert_eq!(s.head().unwrap().status_update().metadata, None);
    // a snapshot keeps it
    let s = run(
        &created(),
        vec![usage("m", 1, 1), status(TaskState::Completed)],
    );
    let back: TaskAggregate = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
    assert_eq!(update_usage(&back).unwrap()["totalTokens"], 2);
}
