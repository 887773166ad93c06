//! Given/when/then for `child_creation`, compared field by field with what `spawn_subtask` in
//! functions/app/src/service.rs composes today.

use serde_json::{json, Value};

use super::child_creation;
use crate::error::DomainError;
use crate::extensions::harness::{
    Effort, Lifecycle, Participant, ParticipantKind, Role, TaskExtensionData, TaskRef, MEDIA_TYPE,
    PARTICIPANT_ID_KEY,
};
use crate::ids::{ContextId, ParticipantId, Principal, TaskId};
use crate::task::{AppendUserMessage, CreateTask, TaskAggregate, TaskCommand, TaskEvent, TaskHead};
use crate::time::Timestamp;
use crate::wire::{self, Message, Part, PartContent, TaskState};

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}Z")).unwrap()
}

fn pid(id: impl Into<String>) -> ParticipantId {
    ParticipantId::parse(id).unwrap()
}

fn owner() -> Principal {
    Principal::new("acme", "alice").unwrap()
}

fn participant(id: &str, role: Role) -> Participant {
    Participant {
        id: id.into(),
        kind: ParticipantKind::Human,
        role,
        display_name: String::new(),
    }
}

/// ann admin, bob assignee, eve watcher.
fn team() -> Value {
    json!([
        {"id": "ann", "kind": "human", "role": "admin"},
        {"id": "bob", "kind": "human", "role": "assignee"},
        {"id": "eve", "kind": "human", "role": "watcher"}
    ])
}

/// A user message from `sender`, with an envelope when given.
fn from(id: &str, text: &str, sender: &str, envelope: Option<Value>) -> Message {
    let mut m = Message::user_text(id, text);
    m.metadata = json!({ "participant_id": sender }).as_object().cloned();
    if let Some(e) = envelope {
        m.parts.push(Part {
            content: PartContent::Data(e),
            metadata: None,
            filename: None,
            media_type: Some(MEDIA_TYPE.into()),
        });
    }
    m
}

fn run(task: &mut TaskAggregate, command: TaskCommand) -> Vec<TaskEvent> {
    let events = task.decide(command).unwrap();
    events.iter().for_each(|e| task.apply_event(e));
    events
}

/// The parent `t-1` (context `c-1`, owner acme/alice): created by ann with these participants
/// (none: no task extension data), then `then` applied.
fn parent(participants: Option<Value>, then: Vec<TaskCommand>) -> TaskAggregate {
    let envelope =
        participants.map(|p| json!({"name": "Release", "goal": "Ship 1.0", "participants": p}));
    let mut task = TaskAggregate::default();
    run(
        &mut task,
        TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: owner(),
            message: from("m-0", "start", "ann", envelope),
            at: at(0),
            extension: None,
            awaiting_assignee: None,
        }),
    );
    for command in then {
        run(&mut task, command);
    }
    task
}

fn said_by_ann(id: &str, text: &str) -> TaskCommand {
    TaskCommand::AppendUserMessage(AppendUserMessage {
        message: from(id, text, "ann", None),
        at: at(1),
        caller: None,
    })
}

/// The parent with ann, bob and eve, `/model gpt-5`, `/effort high`, and one child spawned.
fn parent_with_a_child() -> (TaskAggregate, TaskId) {
    let mut task = parent(
        Some(team()),
        vec![
            said_by_ann("m-1", "/model gpt-5"),
            said_by_ann("m-2", "/effort high"),
        ],
    );
    let spawned = run(
        &mut task,
        TaskCommand::SpawnSubTask {
            step: None,
            at: at(2),
        },
    );
    let [TaskEvent::SubTaskSpawned { child_id, .. }] = spawned.as_slice() else {
        panic!("one child: {spawned:?}")
    };
    (task, child_id.clone())
}

fn head(task: &TaskAggregate) -> &TaskHead {
    task.head().unwrap()
}

/// The goal message a child starts with.
fn goal_message(child: &str, goal: &str, admin: Option<&str>) -> Message {
    Message {
        message_id: format!("{child}:goal"),
        context_id: None,
        task_id: None,
        role: wire::Role::User,
        parts: vec![Part::text(goal)],
        metadata: admin.map(|a| {
            json!({ PARTICIPANT_ID_KEY: a })
                .as_object()
                .unwrap()
                .clone()
        }),
        extensions: vec![],
        reference_task_ids: vec!["t-1".into()],
        elicitation_ids: vec![],
    }
}

fn child_data(
    participants: Vec<Participant>,
    model: Option<&str>,
    effort: Option<Effort>,
) -> TaskExtensionData {
    TaskExtensionData {
        name: "Research".into(),
        goal: "Find the facts".into(),
        kind: None,
        description: String::new(),
        acceptance_criteria: vec![],
        participants,
        parent_tasks: vec![TaskRef::local("t-1", None)],
        sub_tasks: vec![],
        plan: None,
        lifecycle: None,
        model: model.map(str::to_string),
        reasoning_effort: effort,
        approve_tools: vec![],
    }
}

#[test]
fn a_child_inherits_context_owner_participants_model_and_effort_and_names_its_parent() {
    // given
    let (task, child) = parent_with_a_child();
    // when
    let create = child_creation(
        head(&task),
        child.clone(),
        "Research",
        "Find the facts",
        None,
        at(3),
    )
    .unwrap();
    // then
    assert_eq!(
        create,
        CreateTask {
            task_id: child,
            context_id: ContextId::parse("c-1").unwrap(),
            owner: owner(),
            message: goal_message("t-1.1", "Find the facts", Some("ann")),
            at: at(3),
            extension: Some(Box::new(child_data(
                vec![
                    participant("ann", Role::Admin),
                    participant("bob", Role::Assignee),
                    participant("eve", Role::Watcher),
                ],
                Some("gpt-5"),
                Some(Effort::High),
            ))),
            awaiting_assignee: None,
        }
    );
}

#[test]
fn a_task_for_a_participant_makes_them_the_only_assignee_and_waits_for_them() {
    // given
    let (task, child) = parent_with_a_child();
    // when
    let create = child_creation(
        head(&task),
        child,
        "Research",
        "Find the facts",
        Some(&pid("eve")),
        at(3),
    )
    .unwrap();
    // then
    let data = create.extension.as_deref().unwrap();
    assert_eq!(
        data.participants,
        vec![
            participant("ann", Role::Admin),
            participant("bob", Role::Watcher),
            participant("eve", Role::Assignee),
        ],
        "eve is the assignee, bob (the parent's assignee) watches"
    );
    assert_eq!(
        create.awaiting_assignee.as_ref().map(ParticipantId::as_str),
        Some("eve")
    );
    assert_eq!(
        create.message,
        goal_message("t-1.1", "Find the facts", Some("ann"))
    );
}

#[test]
fn the_goal_message_names_the_first_admin_left_after_the_roles_change() {
    // given: ann and carl are admins, in that order
    let mut task = parent(
        Some(json!([
            {"id": "ann", "kind": "human", "role": "admin"},
            {"id": "carl", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "assignee"}
        ])),
        vec![],
    );
    run(
        &mut task,
        TaskCommand::SpawnSubTask {
            step: None,
            at: at(2),
        },
    );
    let child = TaskId::parse("t-1.1").unwrap();
    let sender = |for_participant: Option<&str>| {
        let create = child_creation(
            head(&task),
            child.clone(),
            "Research",
            "Find the facts",
            for_participant.map(pid).as_ref(),
            at(3),
        )
        .unwrap();
        create
            .message
            .metadata
            .map(|m| m[PARTICIPANT_ID_KEY].clone())
    };
    // when / then
    assert_eq!(sender(None), Some(json!("ann")));
    assert_eq!(sender(Some("bob")), Some(json!("ann")));
    assert_eq!(
        sender(Some("ann")),
        Some(json!("carl")),
        "ann is the child's assignee, carl its first admin"
    );
    // given: a single admin, who becomes the assignee
    let (task, child) = parent_with_a_child();
    // when
    let create = child_creation(
        head(&task),
        child,
        "Research",
        "Find the facts",
        Some(&pid("ann")),
        at(3),
    )
    .unwrap();
    // then: no admin left to name
    assert_eq!(create.message.metadata, None);
    assert!(!create
        .extension
        .unwrap()
        .participants
        .iter()
        .any(|p| p.role == Role::Admin));
}

#[test]
fn an_unknown_participant_is_refused_on_participant_id() {
    // given
    let (task, child) = parent_with_a_child();
    // when
    let refused = child_creation(
        head(&task),
        child,
        "Research",
        "Find the facts",
        Some(&pid("zed")),
        at(3),
    );
    // then
    assert_eq!(
        refused,
        Err(DomainError::InvalidParams {
            field: "participant_id".into(),
            reason: "\"zed\" is not a participant of t-1".into(),
        })
    );
}

#[test]
fn a_parent_without_extension_data_gives_a_child_without_participants() {
    // given
    let task = parent(None, vec![]);
    let child = TaskId::parse("t-1.1").unwrap();
    // when
    let create = child_creation(
        head(&task),
        child.clone(),
        "Research",
        "Find the facts",
        None,
        at(3),
    )
    .unwrap();
    // then
    assert_eq!(
        create,
        CreateTask {
            task_id: child.clone(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: owner(),
            message: goal_message("t-1.1", "Find the facts", None),
            at: at(3),
            extension: Some(Box::new(child_data(vec![], None, None))),
            awaiting_assignee: None,
        }
    );
    // and a task for a participant needs one
    assert!(matches!(
        child_creation(head(&task), child, "Research", "Find the facts", Some(&pid("ann")), at(3)),
        Err(DomainError::InvalidParams { field, .. }) if field == "participant_id"
    ));
}

/// What `spawn_subtask` (functions/app/src/service.rs) composes today, transcribed: the service
/// returns `AppError::invalid_params(field, reason)` where this returns
/// `DomainError::invalid(field, reason)`.
fn composed_by_the_service_today(
    head: &TaskHead,
    child: String,
    name: &str,
    goal: &str,
    for_participant: Option<String>,
    at: Timestamp,
) -> Result<CreateTask, DomainError> {
    let parent_id = &head.id;
    let parent_ext = head.ext.clone();
    let mut participants: Vec<Participant> = parent_ext
        .as_ref()
        .map(|d| d.participants.clone())
        .unwrap_or_default();
    if let Some(target) = &for_participant {
        for p in &mut participants {
            if p.role == Role::Assignee && &p.id != target {
                p.role = Role::Watcher;
            }
        }
        match participants.iter_mut().find(|p| &p.id == target) {
            Some(p) => p.role = Role::Assignee,
            None => {
                return Err(DomainError::invalid(
                    "participant_id",
                    format!("{target:?} is not a participant of {parent_id}"),
                ))
            }
        }
    }
    let data = TaskExtensionData {
        name: name.to_string(),
        goal: goal.to_string(),
        kind: None,
        description: String::new(),
        acceptance_criteria: vec![],
        participants,
        parent_tasks: vec![TaskRef::local(parent_id.as_str(), None)],
        sub_tasks: vec![],
        plan: None,
        lifecycle: None,
        model: parent_ext.as_ref().and_then(|d| d.model.clone()),
        reasoning_effort: parent_ext.as_ref().and_then(|d| d.reasoning_effort),
        approve_tools: vec![],
    };
    let child_id = TaskId::parse(child).map_err(|e| DomainError::invalid("id", e))?;
    let mut goal_message = Message {
        message_id: format!("{child_id}:goal"),
        context_id: None,
        task_id: None,
        role: wire::Role::User,
        parts: vec![Part::text(goal)],
        metadata: None,
        extensions: vec![],
        reference_task_ids: vec![parent_id.to_string()],
        elicitation_ids: vec![],
    };
    if let Some(p) = data.participants.iter().find(|p| p.role == Role::Admin) {
        goal_message
            .metadata
            .get_or_insert_with(Default::default)
            .insert(
                PARTICIPANT_ID_KEY.into(),
                serde_json::Value::String(p.id.clone()),
            );
    }
    Ok(CreateTask {
        task_id: child_id.clone(),
        context_id: head.context_id.clone(),
        owner: head.owner.clone(),
        message: goal_message.clone(),
        at,
        extension: Some(Box::new(data)),
        awaiting_assignee: for_participant.clone().map(pid),
    })
}

#[test]
fn the_composed_creation_is_what_the_service_composes_today() {
    // given: parents with and without extension data, one or two admins, a model and an effort
    let (with_a_child, _) = parent_with_a_child();
    let two_admins = parent(
        Some(json!([
            {"id": "ann", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "agent", "role": "assignee", "display_name": "Bob"},
            {"id": "carl", "kind": "human", "role": "admin"},
            {"id": "dan", "kind": "human", "role": "assignee"},
            {"id": "eve", "kind": "human", "role": "reporter"}
        ])),
        vec![said_by_ann("m-1", "/effort low")],
    );
    let plain = parent(None, vec![]);
    for task in [&with_a_child, &two_admins, &plain] {
        let head = head(task);
        let mut targets: Vec<Option<&str>> = vec![None, Some("zed")];
        if let Some(d) = &head.ext {
            targets.extend(d.participants.iter().map(|p| Some(p.id.as_str())));
        }
        for target in targets {
            // when
            let ours = child_creation(
                head,
                TaskId::parse("t-1.7").unwrap(),
                "Check the numbers",
                "Re-run the model",
                target.map(pid).as_ref(),
                at(9),
            );
            // then
            let theirs = composed_by_the_service_today(
                head,
                "t-1.7".into(),
                "Check the numbers",
                "Re-run the model",
                target.map(str::to_string),
                at(9),
            );
            assert_eq!(ours, theirs, "for {target:?} on {:?}", head.ext);
        }
    }
}

#[test]
fn the_child_created_from_it_is_delegated_and_a_task_for_a_participant_completes_on_their_reply() {
    // given
    let (task, child) = parent_with_a_child();
    let create = child_creation(
        head(&task),
        child,
        "Research",
        "Find the facts",
        Some(&pid("bob")),
        at(3),
    )
    .unwrap();
    // when
    let mut child = TaskAggregate::default();
    let events = run(&mut child, TaskCommand::CreateTask(create));
    // then
    assert_eq!(
        events.iter().map(TaskEvent::name).collect::<Vec<_>>(),
        [
            "TaskCreated",
            "ExtensionUpdated",
            "MessageAppended",
            "ParticipantTaskOpened",
            "StatusChanged"
        ]
    );
    let h = head(&child);
    let data = h.ext.as_ref().unwrap();
    assert_eq!(data.lifecycle, Some(Lifecycle::Delegated));
    assert_eq!(data.model.as_deref(), Some("gpt-5"));
    assert_eq!(h.status.state, TaskState::InputRequired);
    assert_eq!(h.status.message.as_ref().unwrap().text(), "Find the facts");
    assert_eq!(
        h.awaiting_assignee.as_ref().map(ParticipantId::as_str),
        Some("bob")
    );
    // when bob replies
    let reply = run(
        &mut child,
        TaskCommand::AppendUserMessage(AppendUserMessage {
            message: from("m-1", "the facts", "bob", None),
            at: at(4),
            caller: None,
        }),
    );
    // then
    assert!(matches!(
        &reply[..],
        [
            TaskEvent::MessageAppended { .. },
            TaskEvent::StatusChanged {
                state: TaskState::Completed,
                ..
            }
        ]
    ));
}
