//! Given/when/then for the task extension rules on the aggregate.

use cqrs_es::test::TestFramework;
use serde_json::{json, Value};

use crate::error::DomainError;
use crate::extensions::harness::{
    Effort, Lifecycle, Role, StepState, TaskExtensionData, MEDIA_TYPE, METADATA_KEY,
};
use crate::ids::{ContextId, HistoryLength, ParticipantId, Principal, StepId, TaskId};
use crate::projection::replay;
use crate::task::*;
use crate::time::Timestamp;
use crate::wire::*;

type Given = TestFramework<TaskAggregate>;

fn pid(id: &str) -> ParticipantId {
    ParticipantId::parse(id).unwrap()
}

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}Z")).unwrap()
}

fn msg(id: &str, text: &str, sender: Option<&str>, envelope: Option<Value>) -> Message {
    let mut parts = vec![Part::text(text)];
    if let Some(e) = envelope {
        parts.push(Part {
            content: PartContent::Data(e),
            metadata: None,
            filename: None,
            media_type: Some(MEDIA_TYPE.into()),
        });
    }
    Message {
        message_id: id.into(),
        context_id: None,
        task_id: None,
        role: crate::wire::Role::User,
        parts,
        metadata: sender.map(|s| json!({"participant_id": s}).as_object().unwrap().clone()),
        extensions: vec![],
        reference_task_ids: vec![],
        elicitation_ids: vec![],
    }
}

fn envelope() -> Value {
    json!({
        "name": "Release", "goal": "Ship 1.0",
        "participants": [
            {"id": "ann", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "assignee"},
            {"id": "eve", "kind": "agent", "role": "watcher"}
        ]
    })
}

/// Events of a created task with the envelope above.
fn created_with(env: Value) -> Vec<TaskEvent> {
    TaskAggregate::default()
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            message: msg("m-0", "start", Some("ann"), Some(env)),
            at: at(0),
            extension: None,
            awaiting_assignee: None,
        }))
        .unwrap()
}

fn created() -> Vec<TaskEvent> {
    created_with(envelope())
}

fn user(id: &str, text: &str, sender: Option<&str>) -> TaskCommand {
    TaskCommand::AppendUserMessage(AppendUserMessage {
        message: msg(id, text, sender, None),
        at: at(5),
        caller: None,
    })
}

fn with_envelope(sender: &str, env: Value) -> TaskCommand {
    TaskCommand::AppendUserMessage(AppendUserMessage {
        message: msg("m-env", "update", Some(sender), Some(env)),
        at: at(5),
        caller: None,
    })
}

fn result(given: Vec<TaskEvent>, cmd: TaskCommand) -> Result<Vec<TaskEvent>, DomainError> {
    Given::with(()).given(given).when(cmd).inspect_result()
}

fn state_after(events: &[TaskEvent]) -> TaskAggregate {
    let mut s = TaskAggregate::default();
    for e in events {
        s.apply_event(e);
    }
    s
}

#[test]
fn an_envelope_on_the_first_message_creates_the_extension_data_as_a_conversation() {
    let events = created();
    assert!(
        matches!(&events[1], TaskEvent::ExtensionUpdated { data, .. }
        if data.name == "Release" && data.lifecycle == Some(Lifecycle::Conversation))
    );
    let task = replay(&events, HistoryLength::All).unwrap();
    let meta = &task.metadata.unwrap()[METADATA_KEY];
    assert_eq!(meta["goal"], "Ship 1.0");
    assert_eq!(meta["lifecycle"], "conversation");
}

#[test]
fn an_envelope_setting_a_server_controlled_field_is_refused_whole() {
    for (field, value) in [
        ("model", json!("gpt")),
        ("reasoning_effort", json!("high")),
        ("lifecycle", json!("delegated")),
    ] {
        let mut env = envelope();
        env[field] = value;
        env["description"] = json!("would change");
        let r = result(created(), with_envelope("ann", env));
        assert!(
            matches!(r, Err(DomainError::InvalidParams { field: ref f, .. }) if f == field),
            "{field}: {r:?}"
        );
    }
}

#[test]
fn a_message_from_a_non_participant_is_refused_and_changes_nothing_else() {
    let r = result(created(), user("m-1", "let me in", Some("mallory"))).unwrap();
    assert_eq!(r.len(), 1);
    assert!(
        matches!(&r[0], TaskEvent::MessageRefused { reason, .. } if reason.contains("mallory is not a participant"))
    );
    let mut events = created();
    events.extend(r);
    let task = replay(&events, HistoryLength::All).unwrap();
    assert_eq!(
        task.history.unwrap().len(),
        1,
        "its text never enters history"
    );
    assert!(task
        .status
        .message
        .unwrap()
        .text()
        .contains("not a participant"));
}

#[test]
fn a_message_naming_no_sender_is_refused_when_the_task_has_participants() {
    let r = result(created(), user("m-1", "who am i", None)).unwrap();
    assert!(matches!(
        &r[0],
        TaskEvent::MessageRefused {
            participant_id: None,
            ..
        }
    ));
}

#[test]
fn a_participants_message_is_appended() {
    let r = result(created(), user("m-1", "hello", Some("bob"))).unwrap();
    assert!(matches!(
        &r[..],
        [
            TaskEvent::MessageAppended { .. },
            TaskEvent::AgentWorkRequested { .. }
        ]
    ));
}

#[test]
fn an_envelope_only_update_is_not_work_for_the_agent() {
    let mut env = envelope();
    env["description"] = json!("more detail");
    let message = Message {
        parts: vec![Part {
            content: PartContent::Data(env),
            metadata: None,
            filename: None,
            media_type: Some(MEDIA_TYPE.into()),
        }],
        ..msg("m-1", "x", Some("ann"), None)
    };
    let r = result(
        created(),
        TaskCommand::AppendUserMessage(AppendUserMessage {
            message,
            at: at(5),
            caller: None,
        }),
    )
    .unwrap();
    assert!(
        matches!(
            &r[..],
            [
                TaskEvent::ExtensionUpdated { .. },
                TaskEvent::MessageAppended { .. }
            ]
        ),
        "{r:?}"
    );
}

#[test]
fn model_and_effort_change_only_through_their_commands() {
    let r = result(created(), user("m-1", "/model gpt-5", Some("bob"))).unwrap();
    assert!(matches!(&r[..], [TaskEvent::ModelChanged { model, .. }] if model == "gpt-5"));
    let r = result(created(), user("m-1", "/effort high", Some("bob"))).unwrap();
    assert!(matches!(
        &r[..],
        [TaskEvent::ReasoningEffortChanged {
            effort: Effort::High,
            ..
        }]
    ));
    let r = result(created(), user("m-1", "/effort extreme", Some("bob")));
    assert!(
        matches!(r, Err(DomainError::InvalidParams { ref field, .. }) if field == "reasoning_effort")
    );
    let r = result(created(), user("m-1", "/model", Some("bob")));
    assert!(matches!(r, Err(DomainError::InvalidParams { ref field, .. }) if field == "model"));
    let mut events = created();
    events.push(TaskEvent::ModelChanged {
        model: "gpt-5".into(),
        by: Some(pid("bob")),
        at: at(1),
    });
    let task = replay(&events, HistoryLength::All).unwrap();
    assert_eq!(task.metadata.unwrap()[METADATA_KEY]["model"], "gpt-5");
}

#[test]
fn any_participant_who_sends_may_change_name_description_and_criteria() {
    let mut env = envelope();
    env["description"] = json!("now with notes");
    env["acceptance_criteria"] = json!([{"text": "tests pass"}]);
    let r = result(created(), with_envelope("bob", env.clone())).unwrap();
    assert!(matches!(&r[0], TaskEvent::ExtensionUpdated { data, .. }
        if data.description == "now with notes" && data.acceptance_criteria.len() == 1));
    // a watcher reads: its update is refused, and nothing else happens
    let r = result(created(), with_envelope("eve", env)).unwrap();
    assert!(
        matches!(&r[..], [TaskEvent::MessageRefused { reason, .. }] if reason.contains("eve is a watcher")),
        "{r:?}"
    );
}

#[test]
fn only_an_admin_changes_participants() {
    let mut env = envelope();
    env["participants"][2]["role"] = json!("reporter");
    let r = result(created(), with_envelope("bob", env.clone()));
    assert!(
        matches!(r, Err(DomainError::NotPermitted { ref field, .. }) if field == "participants"),
        "{r:?}"
    );
    let r = result(created(), with_envelope("ann", env)).unwrap();
    assert!(
        matches!(&r[0], TaskEvent::ExtensionUpdated { data, .. } if data.participants[2].role == Role::Reporter)
    );
}

#[test]
fn the_last_admin_cannot_be_removed() {
    let mut env = envelope();
    env["participants"][0]["role"] = json!("watcher");
    let r = result(created(), with_envelope("ann", env));
    assert!(matches!(r, Err(DomainError::NotPermitted { .. })), "{r:?}");
    let r = result(
        created(),
        TaskCommand::SetParticipantRole {
            participant_id: pid("ann"),
            role: Role::Watcher,
            by: Some(pid("ann")),
            at: at(1),
        },
    );
    assert!(matches!(r, Err(DomainError::NotPermitted { .. })), "{r:?}");
}

#[test]
fn set_participant_role_is_for_admins() {
    let cmd = |by: &str| TaskCommand::SetParticipantRole {
        participant_id: pid("eve"),
        role: Role::Admin,
        by: Some(pid(by)),
        at: at(1),
    };
    assert!(matches!(
        result(created(), cmd("bob")),
        Err(DomainError::NotPermitted { .. })
    ));
    let r = result(created(), cmd("ann")).unwrap();
    assert!(matches!(
        &r[..],
        [TaskEvent::ParticipantRoleChanged {
            role: Role::Admin,
            ..
        }]
    ));
    // with a second admin, the first may step down
    let mut events = created();
    events.extend(r);
    let r = result(
        events,
        TaskCommand::SetParticipantRole {
            participant_id: pid("ann"),
            role: Role::Watcher,
            by: Some(pid("ann")),
            at: at(2),
        },
    );
    assert!(r.is_ok());
}

#[test]
fn the_server_keeps_the_sub_task_links() {
    let mut env = envelope();
    env["sub_tasks"] = json!([{"task_id": "forged"}]);
    let r = result(created(), with_envelope("ann", env));
    assert!(matches!(r, Err(DomainError::NotPermitted { ref field, .. }) if field == "sub_tasks"));
}

fn planned() -> Vec<TaskEvent> {
    let mut env = envelope();
    env["plan"] = json!({"steps": [
        {"id": "", "name": "Gather data"},
        {"id": "", "name": "Write report", "depends_on": ["Gather data"]}
    ]});
    created_with(env)
}

#[test]
fn a_plan_gets_slug_ids_and_resolves_dependencies_by_name() {
    let s = state_after(&planned());
    let plan = s
        .head()
        .unwrap()
        .ext
        .as_ref()
        .unwrap()
        .plan
        .clone()
        .unwrap();
    assert_eq!(plan.steps[0].id, "gather-data");
    assert_eq!(plan.steps[1].depends_on, vec!["gather-data".to_string()]);
}

#[test]
fn a_plan_with_a_cycle_is_a_plan_cycle_error_naming_the_steps() {
    let mut env = envelope();
    env["plan"] = json!({"steps": [
        {"id": "a", "name": "A", "depends_on": ["b"]},
        {"id": "b", "name": "B", "depends_on": ["a"]}
    ]});
    let r = result(created(), with_envelope("ann", env));
    assert!(
        matches!(r, Err(DomainError::PlanCycle { ref steps, .. }) if steps.contains(&"a".to_string()) && steps.contains(&"b".to_string())),
        "{r:?}"
    );
}

#[test]
fn a_step_completes_only_when_its_dependencies_are_done() {
    let r = result(
        planned(),
        TaskCommand::CompleteStep {
            step: "write-report".into(),
            output: "x".into(),
            at: at(1),
        },
    );
    assert!(
        matches!(r, Err(DomainError::InvalidParams { ref reason, .. }) if reason.contains("gather-data")),
        "{r:?}"
    );
    let r = result(
        planned(),
        TaskCommand::StartStep {
            step: "Gather data".into(),
            at: at(1),
        },
    )
    .unwrap();
    assert!(matches!(&r[..], [TaskEvent::StepStarted { step_id, .. }] if step_id == "gather-data"));
    let mut events = planned();
    events.extend(r);
    let r = result(
        events.clone(),
        TaskCommand::CompleteStep {
            step: "gather-data".into(),
            output: "rows".into(),
            at: at(2),
        },
    )
    .unwrap();
    events.extend(r);
    let r = result(
        events.clone(),
        TaskCommand::CompleteStep {
            step: "write-report".into(),
            output: "report".into(),
            at: at(3),
        },
    );
    assert!(r.is_ok());
    let r = result(
        events,
        TaskCommand::FailStep {
            step: "gather-data".into(),
            reason: "x".into(),
            at: at(3),
        },
    );
    assert!(r.is_err(), "a done step does not fail");
}

#[test]
fn a_replaced_plan_keeps_outputs_of_done_steps_with_the_same_id() {
    let mut events = planned();
    events.push(TaskEvent::StepCompleted {
        step_id: StepId::parse("gather-data").unwrap(),
        output: "rows".into(),
        at: at(1),
    });
    let mut env = envelope();
    env["plan"] = json!({"steps": [
        {"id": "gather-data", "name": "Gather data"},
        {"id": "publish", "name": "Publish", "depends_on": ["gather-data"]}
    ]});
    let r = result(events.clone(), with_envelope("ann", env)).unwrap();
    events.extend(r);
    let s = state_after(&events);
    let plan = s
        .head()
        .unwrap()
        .ext
        .as_ref()
        .unwrap()
        .plan
        .clone()
        .unwrap();
    assert_eq!(plan.steps[0].state, StepState::Done);
    assert_eq!(plan.steps[0].output.as_deref(), Some("rows"));
    assert_eq!(plan.steps[1].id, "publish");
}

#[test]
fn sub_tasks_are_numbered_and_linked_from_their_step() {
    let r = result(
        planned(),
        TaskCommand::SpawnSubTask {
            step: Some("gather-data".into()),
            at: at(1),
        },
    )
    .unwrap();
    assert!(
        matches!(&r[..], [TaskEvent::SubTaskSpawned { child_id, step_id: Some(s), .. }] if child_id == "t-1.1" && s == "gather-data")
    );
    let mut events = planned();
    events.extend(r);
    let r = result(
        events.clone(),
        TaskCommand::SpawnSubTask {
            step: None,
            at: at(2),
        },
    )
    .unwrap();
    assert!(matches!(&r[..], [TaskEvent::SubTaskSpawned { child_id, .. }] if child_id == "t-1.2"));
    let s = state_after(&events);
    let d = s.head().unwrap().ext.clone().unwrap();
    assert_eq!(d.sub_tasks[0].task_id, "t-1.1");
    assert_eq!(d.plan.unwrap().steps[0].linked_tasks[0].task_id, "t-1.1");
}

#[test]
fn a_parent_cannot_complete_while_a_sub_task_is_unresolved() {
    let mut events = created();
    events.push(TaskEvent::SubTaskSpawned {
        child_id: TaskId::parse("t-1.1").unwrap(),
        step_id: None,
        at: at(1),
    });
    let complete = || TaskCommand::ChangeStatus {
        state: TaskState::Completed,
        message: None,
        at: at(3),
    };
    let r = result(events.clone(), complete());
    assert!(
        matches!(r, Err(DomainError::NotPermitted { ref reason, .. }) if reason.contains("t-1.1")),
        "{r:?}"
    );
    events.push(TaskEvent::ChildStateRecorded {
        child_id: TaskId::parse("t-1.1").unwrap(),
        state: TaskState::InputRequired,
        summary: String::new(),
        at: at(2),
    });
    assert!(
        result(events.clone(), complete()).is_err(),
        "input-required is unresolved"
    );
    events.push(TaskEvent::ChildStateRecorded {
        child_id: TaskId::parse("t-1.1").unwrap(),
        state: TaskState::Completed,
        summary: "done".into(),
        at: at(2),
    });
    assert!(result(events, complete()).is_ok());
}

#[test]
fn every_child_state_change_is_recorded_on_the_parent() {
    let mut events = created();
    events.push(TaskEvent::SubTaskSpawned {
        child_id: TaskId::parse("t-1.1").unwrap(),
        step_id: None,
        at: at(1),
    });
    let r = result(
        events.clone(),
        TaskCommand::RecordChildState {
            child_id: TaskId::parse("t-1.1").unwrap(),
            state: TaskState::Working,
            summary: "x".repeat(600),
            at: at(2),
        },
    )
    .unwrap();
    assert!(
        matches!(&r[..], [TaskEvent::ChildStateRecorded { summary, .. }] if summary.chars().count() == MAX_CHILD_SUMMARY_CHARS)
    );
    let r = result(
        events,
        TaskCommand::RecordChildState {
            child_id: TaskId::parse("t-9").unwrap(),
            state: TaskState::Working,
            summary: String::new(),
            at: at(2),
        },
    );
    assert!(r.is_err(), "not a child");
}

fn asked() -> Vec<TaskEvent> {
    let mut events = created();
    let r = result(
        events.clone(),
        TaskCommand::AskParticipant {
            participant_id: pid("bob"),
            question: "Which region?".into(),
            options: vec!["eu".into(), "us".into()],
            at: at(1),
        },
    )
    .unwrap();
    events.extend(r);
    events
}

#[test]
fn a_help_request_asks_with_a_channel_part_and_waits() {
    let events = asked();
    let task = replay(&events, HistoryLength::All).unwrap();
    assert_eq!(task.status.state, TaskState::InputRequired);
    let q = task.status.message.unwrap();
    assert!(q.text().contains("Which region?\nOptions: eu, us"));
    assert!(q
        .parts
        .iter()
        .any(|p| matches!(&p.content, PartContent::Data(d) if d["kind"] == "help_request")));
    assert!(result(
        created(),
        TaskCommand::AskParticipant {
            participant_id: pid("zed"),
            question: "?".into(),
            options: vec![],
            at: at(1)
        }
    )
    .is_err());
}

#[test]
fn only_the_asked_participant_resumes_the_task() {
    let r = result(asked(), user("m-2", "try eu", Some("ann"))).unwrap();
    assert!(
        matches!(&r[..], [TaskEvent::MessageAppended { .. }]),
        "recorded, still waiting"
    );
    let mut events = asked();
    events.extend(r);
    assert_eq!(
        state_after(&events).head().unwrap().status.state,
        TaskState::InputRequired
    );
    let r = result(events.clone(), user("m-3", "eu", Some("bob"))).unwrap();
    assert!(
        matches!(&r[..], [TaskEvent::MessageAppended { .. }, TaskEvent::HelpAnswered { participant_id, .. }, TaskEvent::AgentWorkRequested { .. }] if participant_id == "bob")
    );
    events.extend(r);
    let s = state_after(&events);
    assert_eq!(s.head().unwrap().status.state, TaskState::Working);
    assert!(s.head().unwrap().pending_help.is_none());
}

fn participant_task() -> Vec<TaskEvent> {
    let data: TaskExtensionData = serde_json::from_value(json!({
        "name": "Review", "goal": "Review the draft",
        "participants": [{"id": "ann", "kind": "human", "role": "admin"}, {"id": "bob", "kind": "human", "role": "assignee"}],
        "parent_tasks": [{"task_id": "t-0"}]
    }))
    .unwrap();
    TaskAggregate::default()
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-0.1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            message: msg("t-0.1:goal", "Review the draft", Some("ann"), None),
            at: at(0),
            extension: Some(Box::new(data)),
            awaiting_assignee: Some(pid("bob")),
        }))
        .unwrap()
}

#[test]
fn a_task_for_a_participant_waits_with_the_goal_and_completes_on_the_assignees_message() {
    let events = participant_task();
    let task = replay(&events, HistoryLength::All).unwrap();
    assert_eq!(task.status.state, TaskState::InputRequired);
    assert_eq!(task.status.message.unwrap().text(), "Review the draft");
    assert_eq!(
        task.metadata.unwrap()[METADATA_KEY]["lifecycle"],
        "delegated"
    );
    let r = result(events.clone(), user("m-1", "not me", Some("ann"))).unwrap();
    assert!(matches!(&r[..], [TaskEvent::MessageAppended { .. }]));
    let r = result(events, user("m-2", "looks good", Some("bob"))).unwrap();
    assert!(
        matches!(&r[..], [TaskEvent::MessageAppended { .. }, TaskEvent::StatusChanged { state: TaskState::Completed, message: Some(m), .. }] if m.text() == "looks good")
    );
}

#[test]
fn lifecycle_is_derived_when_a_stored_task_lacks_it() {
    let mut events = created();
    if let TaskEvent::ExtensionUpdated { data, .. } = &mut events[1] {
        data.lifecycle = None;
        data.parent_tasks = vec![crate::extensions::harness::TaskRef::local("t-0", None)];
    }
    let task = replay(&events, HistoryLength::All).unwrap();
    assert_eq!(
        task.metadata.unwrap()[METADATA_KEY]["lifecycle"],
        "delegated"
    );
}
