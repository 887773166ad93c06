//! Given/when/then for typed ids: strings are parsed where they enter (a message's sender, an
//! envelope's participants, references and plan, a tool call), and events and snapshots stored
//! before the ids were typed read back as they were written.

use serde_json::{json, Value};

use crate::agent::llm::ToolCall;
use crate::agent::tools::{plan_call, ToolError};
use crate::error::DomainError;
use crate::extensions::harness::{validate_envelope, MEDIA_TYPE};
use crate::ids::{ContextId, ParticipantId, Principal, StepId, TaskId, MAX_ID_BYTES};
use crate::ports::replay_state;
use crate::task::stored::StoredEvent;
use crate::task::*;
use crate::time::Timestamp;
use crate::wire::{Message, Part, PartContent};

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}.000000007Z")).unwrap()
}

fn from(sender: &str, envelope: Option<Value>) -> Message {
    let mut m = Message::user_text("m-1", "hello");
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

fn create(message: Message) -> TaskCommand {
    TaskCommand::CreateTask(CreateTask {
        task_id: TaskId::parse("t-1").unwrap(),
        context_id: ContextId::parse("c-1").unwrap(),
        owner: Principal::anonymous(),
        message,
        at: at(1),
        extension: None,
        awaiting_assignee: None,
    })
}

fn refused_field(r: Result<Vec<TaskEvent>, DomainError>) -> String {
    match r {
        Err(DomainError::InvalidParams { field, .. } | DomainError::PlanCycle { field, .. }) => {
            field
        }
        other => panic!("expected a refusal naming a field, got {other:?}"),
    }
}

fn envelope_field(v: Value) -> String {
    match validate_envelope(&v) {
        Err(DomainError::InvalidParams { field, .. } | DomainError::PlanCycle { field, .. }) => {
            field
        }
        other => panic!("expected a refusal naming a field, got {other:?}"),
    }
}

#[test]
fn a_senders_participant_id_is_parsed_where_the_message_enters() {
    let long = "p".repeat(MAX_ID_BYTES + 1);
    for bad in ["", "a\u{7}b", long.as_str()] {
        let r = TaskAggregate::default().decide(create(from(bad, None)));
        assert_eq!(
            refused_field(r),
            "message.metadata.participant_id",
            "{bad:?}"
        );
    }
    let at_limit = "p".repeat(MAX_ID_BYTES);
    let events = TaskAggregate::default()
        .decide(create(from(
            &at_limit,
            Some(json!({"name": "n", "goal": "g"})),
        )))
        .unwrap();
    assert!(events.iter().any(|e| matches!(
        e,
        TaskEvent::ExtensionUpdated { by: Some(by), .. } if by.as_str() == at_limit
    )));
}

#[test]
fn an_envelopes_participant_ids_references_and_step_ids_are_parsed_where_it_enters() {
    let base = || json!({"name": "n", "goal": "g"});
    let long = "x".repeat(MAX_ID_BYTES + 1);
    let mut v = base();
    v["participants"] = json!([
        {"id": "ann", "kind": "human", "role": "admin"},
        {"id": long, "kind": "human", "role": "watcher"}
    ]);
    assert_eq!(envelope_field(v), "participants[1].id");
    let mut v = base();
    v["participants"] = json!([{"id": "a\tb", "kind": "human", "role": "admin"}]);
    assert_eq!(envelope_field(v), "participants[0].id");
    let mut v = base();
    v["sub_tasks"] = json!([{"task_id": "t.1"}, {"task_id": ""}]);
    assert_eq!(envelope_field(v), "sub_tasks[1].task_id");
    let mut v = base();
    v["parent_tasks"] = json!([{"task_id": "x\ny"}]);
    assert_eq!(envelope_field(v), "parent_tasks[0].task_id");
    let mut v = base();
    v["plan"] = json!({"steps": [{"id": "a", "name": "A", "linked_tasks": [{"task_id": long}]}]});
    assert_eq!(envelope_field(v), "plan.steps[0].linked_tasks[0].task_id");
    let mut v = base();
    v["plan"] = json!({"steps": [{"id": "a", "name": "A"}, {"id": long, "name": "B"}]});
    assert_eq!(envelope_field(v), "plan.steps[1].id");
    // a step named past the limit gets an id past it too: refused at the plan
    let mut v = base();
    v["plan"] = json!({"steps": [{"id": "", "name": "n".repeat(MAX_ID_BYTES + 1)}]});
    assert_eq!(envelope_field(v), "plan.steps[0].id");
    let mut v = base();
    v["plan"] = json!({"steps": [{"id": "s".repeat(MAX_ID_BYTES), "name": "A"}]});
    v["participants"] = json!([{"id": "p".repeat(MAX_ID_BYTES), "kind": "human", "role": "admin"}]);
    v["sub_tasks"] = json!([{"task_id": "t".repeat(MAX_ID_BYTES)}]);
    assert!(validate_envelope(&v).is_ok(), "at the limit");
}

#[test]
fn a_tool_calls_participant_id_is_parsed_where_it_enters() {
    let long = "p".repeat(MAX_ID_BYTES + 1);
    for (name, args) in [
        (
            "ask_participant",
            json!({"participant_id": long, "question": "q"}),
        ),
        (
            "set_participant_role",
            json!({"participant_id": long, "role": "admin"}),
        ),
        (
            "create_task_for_participant",
            json!({"participant_id": long, "name": "n", "goal": "g"}),
        ),
    ] {
        let call = ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args,
        };
        let e = plan_call(&call, None, at(1)).unwrap_err();
        assert!(
            matches!(e, ToolError::InvalidArguments { ref field, .. } if field == "participant_id"),
            "{name}: {e}"
        );
    }
}

#[test]
fn a_child_id_past_the_limit_is_refused_before_it_is_linked() {
    let parent = "t".repeat(MAX_ID_BYTES - 2);
    let mut s = TaskAggregate::default();
    let events = s
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse(parent).unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::anonymous(),
            message: from("ann", Some(json!({"name": "n", "goal": "g"}))),
            at: at(1),
            extension: None,
            awaiting_assignee: None,
        }))
        .unwrap();
    events.iter().for_each(|e| s.apply_event(e));
    let spawn = || TaskCommand::SpawnSubTask {
        step: None,
        at: at(2),
    };
    for _ in 0..9 {
        // `<parent>.1` … `<parent>.9`: at the limit
        let events = s.decide(spawn()).unwrap();
        events.iter().for_each(|e| s.apply_event(e));
    }
    // `<parent>.10`: one past it
    assert_eq!(refused_field(s.decide(spawn())), "id");
}

/// Events the code before typed ids stored for inputs it accepted then and refuses now.
fn legacy_events() -> Vec<StoredEvent> {
    let p300 = "p".repeat(300);
    let s300 = "s".repeat(300);
    let participants = json!([
        {"display_name": "", "id": p300, "kind": "human", "role": "admin"},
        {"display_name": "", "id": "c\td", "kind": "human", "role": "assignee"}
    ]);
    let plan = json!({"steps": [
        {"depends_on": [], "description": "", "id": s300, "linked_tasks": [], "name": "A", "state": "pending"}
    ]});
    let data = json!({"acceptance_criteria": [], "description": "", "goal": "g",
        "lifecycle": "conversation", "name": "n", "parent_tasks": [], "participants": participants,
        "sub_tasks": [{"task_id": ""}, {"task_id": "x\ny"}]});
    let payloads = [
        json!({"TaskCreated": {"at": "2026-01-01T00:00:01.000000007Z", "context_id": "c",
            "owner": {"subject": "anonymous", "tenant": "default"}, "task_id": "t-a"}}),
        json!({"ExtensionUpdated": {"at": "2026-01-01T00:00:01.000000007Z", "by": "", "data": data}}),
        json!({"PlanCreated": {"at": "2026-01-01T00:00:01.000000007Z", "plan": plan}}),
        json!({"MessageRefused": {"at": "2026-01-01T00:00:02.000000007Z", "participant_id": "",
            "reason": "message not accepted:  is not a participant of this task"}}),
        json!({"ModelChanged": {"at": "2026-01-01T00:00:04.000000007Z", "by": p300, "model": "m"}}),
        json!({"ReasoningEffortChanged": {"at": "2026-01-01T00:00:04.000000007Z", "by": "a\u{0}b", "effort": "low"}}),
        json!({"ParticipantRoleChanged": {"at": "2026-01-01T00:00:05.000000007Z", "by": p300,
            "participant_id": "c\td", "role": "reporter"}}),
        json!({"StepStarted": {"at": "2026-01-01T00:00:06.000000007Z", "step_id": s300}}),
        json!({"SubTaskSpawned": {"at": "2026-01-01T00:00:08.000000007Z", "child_id": "t-a.1", "step_id": s300}}),
        json!({"SubTasksAwaited": {"at": "2026-01-01T00:00:09.000000007Z", "children": ["", "x\ny", "t-a.1"]}}),
        json!({"ParticipantTaskOpened": {"assignee": "c\td", "at": "2026-01-01T00:00:09.000000007Z"}}),
    ];
    payloads
        .into_iter()
        .enumerate()
        .map(|(i, payload)| StoredEvent {
            seq: i as u64 + 1,
            event_type: payload.as_object().unwrap().keys().next().unwrap().clone(),
            event_version: EVENT_VERSION.into(),
            payload: payload.into(),
            recorded_at: at(59),
            update: None,
        })
        .collect()
}

#[test]
fn events_stored_before_the_ids_were_typed_read_back_as_written() {
    let events = legacy_events();
    for e in &events {
        let decoded = e.decode().unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(
            serde_json::to_value(&decoded).unwrap().to_string(),
            e.payload.to_value().to_string(),
            "{} re-serialises byte for byte",
            e.event_type
        );
    }
    let state = replay_state(&events).unwrap();
    let head = state.head().unwrap();
    assert_eq!(
        head.awaiting_assignee.as_ref().map(ParticipantId::as_str),
        Some("c\td")
    );
    let children = head.unresolved_children();
    let unresolved: Vec<&str> = children.iter().map(TaskId::as_str).collect();
    assert_eq!(unresolved, ["", "x\ny", "t-a.1"]);
    // and the snapshot of that state reads back as written
    let snapshot = serde_json::to_string(&state).unwrap();
    let back: TaskAggregate = serde_json::from_str(&snapshot).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), snapshot);
}

#[test]
fn a_snapshot_stored_before_the_ids_were_typed_reads_back_as_written() {
    let mut events = legacy_events();
    events.truncate(3);
    let mut state = replay_state(&events).unwrap();
    let mut v = serde_json::to_value(&state).unwrap();
    v["head"]["pending_help"] = json!({"participant_id": "c\td", "question": "q?", "options": []});
    v["head"]["awaiting_assignee"] = json!("");
    state = serde_json::from_value(v.clone()).expect("an old snapshot reads");
    assert_eq!(serde_json::to_value(&state).unwrap(), v);
    assert_eq!(
        state
            .head()
            .unwrap()
            .pending_help
            .as_ref()
            .unwrap()
            .participant_id,
        "c\td"
    );
    // the ids themselves still read strictly where nothing old is stored under them
    assert!(serde_json::from_value::<StepId>(json!("")).is_err());
}
