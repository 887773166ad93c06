//! Given/when/then for tool approvals (kagent hitl/v1) and hitl/v1 questions.

use serde_json::json;

use crate::error::DomainError;
use crate::extensions::hitl::{Approval, HITL_URI};
use crate::ids::{ContextId, ParticipantId, Principal, TaskId};
use crate::task::*;
use crate::time::Timestamp;
use crate::wire::{Message, Metadata, TaskState};

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}Z")).unwrap()
}

fn hitl_message(id: &str, text: &str) -> Message {
    let mut m = Message::user_text(id, text);
    m.extensions = vec![HITL_URI.into()];
    m
}

/// A task whose client activated hitl/v1, with `extra` events decided after its creation.
fn given(first: Message) -> TaskAggregate {
    let mut s = TaskAggregate::default();
    let created = s
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            message: first,
            at: at(0),
            extension: None,
            awaiting_assignee: None,
        }))
        .unwrap();
    for e in &created {
        s.apply_event(e);
    }
    s
}

fn when(s: &mut TaskAggregate, c: TaskCommand) -> Result<Vec<TaskEvent>, DomainError> {
    let events = s.decide(c)?;
    for e in &events {
        s.apply_event(e);
    }
    Ok(events)
}

fn ask(calls: &[(&str, &str)]) -> TaskCommand {
    TaskCommand::RequestToolApproval(Box::new(RequestToolApproval {
        calls: calls
            .iter()
            .map(|(id, name)| ToolCallAsked {
                call_id: id.to_string(),
                name: name.to_string(),
                args: json!({"env": "prod"}),
            })
            .collect(),
        nested: None,
        at: at(2),
    }))
}

fn decide(decisions: &[(&str, bool)], by: Option<&str>) -> TaskCommand {
    TaskCommand::AnswerToolApproval(Box::new(AnswerToolApproval {
        approvals: decisions
            .iter()
            .map(|(id, ok)| Approval {
                id: id.to_string(),
                approved: *ok,
                rejection_reason: (!ok).then(|| "not today".to_string()),
            })
            .collect(),
        by: by.map(|p| ParticipantId::parse(p).unwrap()),
        message: hitl_message("m-2", ""),
        at: at(3),
        caller: None,
    }))
}

/// The ids the pause asks about, in order.
fn asked_ids(s: &TaskAggregate) -> Vec<String> {
    let said = s.head().unwrap().status.message.clone().unwrap();
    said.metadata.unwrap()[HITL_URI]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_hitl_message_marks_the_task_and_a_plain_one_does_not() {
    assert!(given(hitl_message("m-1", "go")).head().unwrap().hitl);
    assert!(!given(Message::user_text("m-1", "go")).head().unwrap().hitl);
}

#[test]
fn asking_pauses_input_required_with_the_request_on_the_status_message() {
    let mut s = given(hitl_message("m-1", "deploy it"));
    when(&mut s, ask(&[("call-1", "deploy"), ("call-2", "notify")])).unwrap();
    let head = s.head().unwrap();
    assert_eq!(head.status.state, TaskState::InputRequired);
    let said = head.status.message.clone().unwrap();
    assert_eq!(said.extensions, vec![HITL_URI.to_string()]);
    assert_eq!(
        said.text(),
        "Approval is required for tool(s): deploy, notify"
    );
    let payload = &said.metadata.unwrap()[HITL_URI];
    assert_eq!(payload["type"], "tool_approval_request");
    assert_eq!(payload["tools"][0]["call_id"], "call-1");
    assert_eq!(payload["tools"][0]["name"], "deploy");
    assert_eq!(payload["tools"][0]["args"], json!({"env": "prod"}));
    assert!(head.tool_awaits_decision("call-2"));
    assert!(head.open_tool_approval().is_some());
}

#[test]
fn deciding_every_call_records_each_decision_and_wakes_the_agent() {
    let mut s = given(hitl_message("m-1", "deploy it"));
    when(&mut s, ask(&[("call-1", "deploy"), ("call-2", "notify")])).unwrap();
    let ids = asked_ids(&s);
    let events = when(&mut s, decide(&[(&ids[0], true), (&ids[1], false)], None)).unwrap();
    assert!(events
        .iter()
        .any(|e| matches!(e, TaskEvent::AgentWorkRequested { .. })));
    let head = s.head().unwrap();
    assert_eq!(head.status.state, TaskState::Working);
    assert!(head.tool_decision("call-1").unwrap().approved);
    let rejected = head.tool_decision("call-2").unwrap();
    assert!(!rejected.approved);
    assert_eq!(rejected.rejection_reason.as_deref(), Some("not today"));
    assert!(head.open_tool_approval().is_none());
}

#[test]
fn omission_never_means_approval() {
    let mut s = given(hitl_message("m-1", "deploy it"));
    when(&mut s, ask(&[("call-1", "deploy"), ("call-2", "notify")])).unwrap();
    let ids = asked_ids(&s);
    let before = s.clone();
    let e = when(&mut s, decide(&[(&ids[0], true)], None)).unwrap_err();
    assert!(
        matches!(&e, DomainError::InvalidParams { field, reason }
            if field.ends_with(".approvals") && reason.contains("notify")),
        "{e:?}"
    );
    assert_eq!(s, before, "nothing changed");
}

#[test]
fn an_unknown_call_id_is_refused_on_its_entry() {
    let mut s = given(hitl_message("m-1", "deploy it"));
    when(&mut s, ask(&[("call-1", "deploy")])).unwrap();
    let ids = asked_ids(&s);
    let e = when(
        &mut s,
        decide(&[(&ids[0], true), ("gate-99.0", true)], None),
    )
    .unwrap_err();
    assert!(
        matches!(&e, DomainError::InvalidParams { field, .. } if field.ends_with(".approvals[1].id")),
        "{e:?}"
    );
}

#[test]
fn a_second_decision_is_stale_and_resumes_nothing() {
    let mut s = given(hitl_message("m-1", "deploy it"));
    when(&mut s, ask(&[("call-1", "deploy")])).unwrap();
    let ids = asked_ids(&s);
    when(&mut s, decide(&[(&ids[0], true)], None)).unwrap();
    let e = when(&mut s, decide(&[(&ids[0], false)], None)).unwrap_err();
    assert!(matches!(e, DomainError::GateClosed { .. }), "{e:?}");
    assert!(s.head().unwrap().tool_decision("call-1").unwrap().approved);
}

#[test]
fn without_a_pending_request_a_decision_is_invalid() {
    let mut s = given(hitl_message("m-1", "deploy it"));
    let e = when(&mut s, decide(&[("gate-3.0", true)], None)).unwrap_err();
    assert!(matches!(e, DomainError::InvalidParams { .. }), "{e:?}");
}

#[test]
fn only_the_owner_or_an_admin_decides() {
    let mut first = hitl_message("m-1", "deploy it");
    let mut meta = Metadata::new();
    meta.insert(
        crate::extensions::harness::METADATA_KEY.into(),
        json!({"name": "deploy", "goal": "ship", "participants": [
            {"id": "ann", "kind": "human", "role": "admin"},
            {"id": "wes", "kind": "human", "role": "watcher"}
        ]}),
    );
    first.metadata = Some(meta);
    let mut s = given(first);
    when(&mut s, ask(&[("call-1", "deploy")])).unwrap();
    let ids = asked_ids(&s);
    let e = when(&mut s, decide(&[(&ids[0], true)], Some("wes"))).unwrap_err();
    assert!(matches!(e, DomainError::NotPermitted { .. }), "{e:?}");
    when(&mut s, decide(&[(&ids[0], true)], Some("ann"))).unwrap();
}

#[test]
fn while_calls_wait_a_plain_message_or_a_gate_answer_is_refused_with_how_to_answer() {
    let mut s = given(hitl_message("m-1", "deploy it"));
    when(&mut s, ask(&[("call-1", "deploy")])).unwrap();
    let e = when(
        &mut s,
        TaskCommand::AppendUserMessage(AppendUserMessage {
            message: Message::user_text("m-3", "hurry"),
            at: at(4),
            caller: None,
        }),
    )
    .unwrap_err();
    assert!(e.to_string().contains("tool_approval_response"), "{e}");
    let gate = s.head().unwrap().open_tool_approval().unwrap().id.clone();
    let e = when(
        &mut s,
        TaskCommand::AnswerGate(Box::new(AnswerGate {
            gate_id: gate,
            choice: Some("approve".into()),
            by: None,
            message: Message::user_text("m-4", "ok"),
            at: at(4),
            caller: None,
        })),
    )
    .unwrap_err();
    assert!(e.to_string().contains("tool_approval_response"), "{e}");
}

#[test]
fn a_decided_call_is_not_asked_about_again() {
    let mut s = given(hitl_message("m-1", "deploy it"));
    when(&mut s, ask(&[("call-1", "deploy")])).unwrap();
    let ids = asked_ids(&s);
    when(&mut s, decide(&[(&ids[0], true)], None)).unwrap();
    assert!(when(&mut s, ask(&[("call-1", "deploy")])).is_err());
    assert!(
        when(&mut s, ask(&[])).is_err(),
        "an approval asks about a call"
    );
}

#[test]
fn a_help_question_on_a_hitl_task_is_an_ask_user_request_answered_by_its_id() {
    let mut first = hitl_message("m-1", "paint it");
    let mut meta = Metadata::new();
    meta.insert(
        crate::extensions::harness::METADATA_KEY.into(),
        json!({"name": "paint", "goal": "paint", "participants": [
            {"id": "ann", "kind": "human", "role": "admin"}
        ]}),
    );
    first.metadata = Some(meta);
    let mut s = given(first);
    when(
        &mut s,
        TaskCommand::AskParticipant {
            participant_id: ParticipantId::parse("ann").unwrap(),
            question: "Which colour?".into(),
            options: vec!["blue".into(), "red".into()],
            at: at(2),
        },
    )
    .unwrap();
    let said = s.head().unwrap().status.message.clone().unwrap();
    assert_eq!(said.extensions, vec![HITL_URI.to_string()]);
    let request = said.metadata.unwrap()[HITL_URI].clone();
    assert_eq!(request["type"], "ask_user_request");
    assert_eq!(request["questions"][0]["choices"], json!(["blue", "red"]));
    let id = request["id"].as_str().unwrap().to_string();

    let reply = |qid: &str, answers: serde_json::Value| {
        let mut m = hitl_message("m-5", "");
        let mut meta = Metadata::new();
        meta.insert(
            HITL_URI.into(),
            json!({"type": "ask_user_response", "id": qid, "answers": answers}),
        );
        meta.insert(
            crate::extensions::harness::PARTICIPANT_ID_KEY.into(),
            json!("ann"),
        );
        m.metadata = Some(meta);
        TaskCommand::AppendUserMessage(AppendUserMessage {
            message: m,
            at: at(5),
            caller: None,
        })
    };
    let e = when(&mut s, reply("nope", json!([{"answer": ["blue"]}]))).unwrap_err();
    assert!(matches!(&e, DomainError::InvalidParams { field, .. } if field.ends_with(".id")));
    let e = when(&mut s, reply(&id, json!([]))).unwrap_err();
    assert!(matches!(&e, DomainError::InvalidParams { field, .. } if field.ends_with(".answers")));
    let events = when(&mut s, reply(&id, json!([{"answer": ["blue"]}]))).unwrap();
    assert!(events
        .iter()
        .any(|e| matches!(e, TaskEvent::HelpAnswered { .. })));
    let answered = events
        .iter()
        .find_map(|e| match e {
            TaskEvent::MessageAppended { message, .. } => Some(message.text()),
            _ => None,
        })
        .unwrap();
    assert_eq!(answered, "blue", "the agent reads the answer as text");
}
