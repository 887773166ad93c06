//! Given/when/then for handoffs and their task-proposal gate.

use cqrs_es::test::TestFramework;
use serde_json::json;

use crate::error::DomainError;
use crate::extensions::dmp::{WorkStatus, GATE_URI};
use crate::extensions::harness::{Participant, ParticipantKind, Role, TaskExtensionData};
use crate::ids::{ContextId, ParticipantId, Principal, TaskId};
use crate::task::*;
use crate::time::Timestamp;
use crate::wire::{Message, TaskState};

type Given = TestFramework<TaskAggregate>;

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}Z")).unwrap()
}

fn work() -> HandoffWork {
    HandoffWork {
        title: "Export the API".into(),
        acceptance: vec!["CSV and JSON".into()],
        writes: vec!["src/export/**".into()],
        priority: "medium".into(),
        labels: vec!["a2a/export".into()],
    }
}

fn propose() -> TaskCommand {
    TaskCommand::ProposeHandoff(Box::new(ProposeHandoff {
        task_id: TaskId::parse("t-1").unwrap(),
        context_id: ContextId::parse("c-1").unwrap(),
        owner: Principal::new("acme", "alice").unwrap(),
        message: Message::user_text("m-1", "please export the API"),
        work: work(),
        at: at(0),
    }))
}

/// The events of a proposal, decided.
fn proposed() -> Vec<TaskEvent> {
    TaskAggregate::default().decide(propose()).unwrap()
}

fn answer(choice: Option<&str>, by: Option<&str>, id: &str) -> TaskCommand {
    TaskCommand::AnswerGate(Box::new(AnswerGate {
        gate_id: id.into(),
        choice: choice.map(str::to_string),
        by: by.map(|p| ParticipantId::parse(p).unwrap()),
        message: Message::user_text("m-2", "ok"),
        at: at(1),
        caller: None,
    }))
}

fn state_after(events: &[TaskEvent]) -> TaskAggregate {
    let mut s = TaskAggregate::default();
    for e in events {
        s.apply_event(e);
    }
    s
}

#[test]
fn a_handoff_is_a_draft_waiting_on_a_task_proposal_gate_and_the_agent_does_not_run() {
    let events = proposed();
    assert!(!events
        .iter()
        .any(|e| matches!(e, TaskEvent::AgentWorkRequested { .. })));
    let s = state_after(&events);
    let head = s.head.unwrap();
    assert_eq!(head.status.state, TaskState::AuthRequired);
    let said = head.status.message.clone().unwrap();
    assert_eq!(
        said.text(),
        "Waiting for the project owner to approve this handoff."
    );
    assert_eq!(said.extensions, vec![GATE_URI.to_string()]);
    let gate = &said.metadata.unwrap()[GATE_URI]["gates"][0];
    assert_eq!(gate["type"], "task-proposal");
    assert_eq!(gate["waitingOn"], "owner");
    let open: Vec<&Gate> = head.open_gates().collect();
    assert_eq!(open.len(), 1);
    assert_eq!(gate["id"], json!(open[0].id));
    let h = head.handoff.unwrap();
    assert_eq!(h.status, WorkStatus::Draft);
    assert_eq!(h.risk, "high", "handoffs start at the highest risk");
}

#[test]
fn the_owner_approves_and_the_task_waits_to_be_scheduled() {
    let given = proposed();
    let gate = state_after(&given).head.unwrap().gates[0].id.clone();
    let events = state_after(&given)
        .decide(answer(Some("approve"), None, &gate))
        .unwrap();
    let mut all = given.clone();
    all.extend(events.clone());
    let head = state_after(&all).head.unwrap();
    assert_eq!(head.status.state, TaskState::Submitted);
    assert_eq!(
        head.status.message.clone().unwrap().text(),
        "Approved; waiting to be scheduled."
    );
    assert_eq!(head.open_gates().count(), 0);
    assert_eq!(head.handoff.unwrap().status, WorkStatus::Ready);
    assert!(matches!(events[1], TaskEvent::GateAnswered { ref choice, .. } if choice == "approve"));
}

#[test]
fn a_decline_rejects_the_task_and_drops_the_draft() {
    let given = proposed();
    let gate = state_after(&given).head.unwrap().gates[0].id.clone();
    let mut all = given.clone();
    all.extend(
        state_after(&given)
            .decide(answer(Some("decline"), None, &gate))
            .unwrap(),
    );
    let head = state_after(&all).head.unwrap();
    assert_eq!(head.status.state, TaskState::Rejected);
    assert_eq!(head.handoff.unwrap().status, WorkStatus::Dropped);
}

#[test]
fn a_wrong_or_missing_choice_is_invalid_on_choice() {
    // created 1, first message 2, the draft 3: the gate is event 4
    let gate = gate_id(4);
    assert_eq!(state_after(&proposed()).head.unwrap().gates[0].id, gate);
    for choice in [Some("reject"), None] {
        Given::with(())
            .given(proposed())
            .when(answer(choice, None, &gate))
            .then_expect_error(DomainError::invalid(
                "choice",
                format!("gate {gate} is answered with one of approve, decline"),
            ));
    }
}

#[test]
fn a_second_answer_is_refused_once_the_gate_closed() {
    let given = proposed();
    let gate = state_after(&given).head.unwrap().gates[0].id.clone();
    let mut all = given.clone();
    all.extend(
        state_after(&given)
            .decide(answer(Some("approve"), None, &gate))
            .unwrap(),
    );
    Given::with(())
        .given(all)
        .when(answer(Some("decline"), None, &gate))
        .then_expect_error(DomainError::GateClosed {
            gate_id: gate,
            choice: "approve".into(),
        });
}

#[test]
fn an_answer_to_a_gate_that_does_not_exist_is_invalid_on_reply_to() {
    let r = state_after(&proposed()).decide(answer(Some("approve"), None, "gate-99"));
    assert!(matches!(r, Err(DomainError::InvalidParams { ref field, .. }) if field == "replyTo"));
}

#[test]
fn only_an_admin_participant_decides_besides_the_owner() {
    let mut given = proposed();
    let member = |id: &str, role| Participant {
        id: id.into(),
        kind: ParticipantKind::Human,
        role,
        display_name: String::new(),
    };
    given.push(TaskEvent::ExtensionUpdated {
        data: serde_json::from_value::<TaskExtensionData>(json!({
            "name": "export", "goal": "export the API",
            "participants": [member("ann", Role::Admin), member("eve", Role::Watcher)],
        }))
        .unwrap(),
        by: None,
        at: at(0),
    });
    let gate = state_after(&given).head.unwrap().gates[0].id.clone();
    let refused = state_after(&given).decide(answer(Some("approve"), Some("eve"), &gate));
    assert!(
        matches!(refused, Err(DomainError::NotPermitted { ref field, .. }) if field == "replyTo"),
        "{refused:?}"
    );
    let refused = state_after(&given).decide(answer(Some("approve"), Some("mallory"), &gate));
    assert!(matches!(refused, Err(DomainError::NotPermitted { .. })));
    assert!(state_after(&given)
        .decide(answer(Some("approve"), Some("ann"), &gate))
        .is_ok());
}

#[test]
fn a_plain_message_to_a_task_waiting_on_a_gate_is_refused() {
    let r = state_after(&proposed()).decide(TaskCommand::AppendUserMessage(AppendUserMessage {
        message: Message::user_text("m-3", "hurry up"),
        at: at(2),
        caller: None,
    }));
    assert!(matches!(r, Err(DomainError::UnsupportedOperation(ref m)) if m.contains("gate")));
}

fn advance(
    status: WorkStatus,
    artifacts: Vec<crate::extensions::dmp::WorkArtifact>,
) -> TaskCommand {
    TaskCommand::AdvanceWork(Box::new(AdvanceWork {
        status,
        artifacts,
        at: at(3),
    }))
}

/// Proposed and approved.
fn approved() -> Vec<TaskEvent> {
    let mut all = proposed();
    let gate = state_after(&all).head.unwrap().gates[0].id.clone();
    let answered = state_after(&all)
        .decide(answer(Some("approve"), None, &gate))
        .unwrap();
    all.extend(answered);
    all
}

fn then(mut all: Vec<TaskEvent>, cmd: TaskCommand) -> Vec<TaskEvent> {
    let events = state_after(&all).decide(cmd).unwrap();
    all.extend(events);
    all
}

#[test]
fn an_approved_work_item_lands_with_its_artifacts_cut_to_size() {
    use crate::extensions::dmp::{FileStat, WorkArtifact};
    let all = then(approved(), advance(WorkStatus::Working, vec![]));
    let head = state_after(&all).head.unwrap();
    assert_eq!(head.status.state, TaskState::Working);
    let all = then(all, advance(WorkStatus::Review, vec![]));
    let head = state_after(&all).head.unwrap();
    let said = head.status.message.clone().unwrap();
    let state = &said.metadata.unwrap()[crate::extensions::dmp::WORK_URI];
    assert_eq!(state["status"], "review");
    assert_eq!(state["stage"], "review");
    let all = then(all, advance(WorkStatus::Landing, vec![]));
    let files: Vec<FileStat> = (0..250)
        .map(|i| FileStat {
            path: format!("src/f{i}.rs"),
            insertions: 1,
            deletions: 1,
        })
        .collect();
    let all = then(
        all,
        advance(
            WorkStatus::Landed,
            vec![
                WorkArtifact::Pr {
                    url: "https://git.example.com/p/7".into(),
                    number: 7,
                    state: Some(crate::extensions::dmp::PrState::Merged),
                },
                WorkArtifact::Diffstat {
                    files: 250,
                    insertions: 250,
                    deletions: 250,
                    per_file: files,
                },
            ],
        ),
    );
    let head = state_after(&all).head.unwrap();
    assert_eq!(head.status.state, TaskState::Completed);
    assert_eq!(head.status.message.clone().unwrap().text(), "Landed.");
    assert_eq!(head.handoff.as_ref().unwrap().status, WorkStatus::Landed);
    let ids: Vec<&str> = head
        .artifacts
        .iter()
        .map(|a| a.artifact_id.as_str())
        .collect();
    assert_eq!(ids, ["pr", "diffstat"]);
    let diffstat = all
        .iter()
        .find_map(|e| match e {
            TaskEvent::ArtifactAdded { artifact, .. } if artifact.artifact_id == "diffstat" => {
                Some(artifact.clone())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(diffstat.metadata.unwrap()["truncated"], true);
    // Landed is final.
    let r = state_after(&all).decide(advance(WorkStatus::Working, vec![]));
    assert!(matches!(r, Err(DomainError::InvalidParams { ref field, .. }) if field == "status"));
}

#[test]
fn a_draft_does_not_move_before_its_gate_is_answered_and_a_drop_rejects() {
    let r = state_after(&proposed()).decide(advance(WorkStatus::Working, vec![]));
    assert!(matches!(r, Err(DomainError::InvalidParams { .. })), "{r:?}");
    let all = then(approved(), advance(WorkStatus::Dropped, vec![]));
    let head = state_after(&all).head.unwrap();
    assert_eq!(head.status.state, TaskState::Rejected);
    assert_eq!(head.status.message.unwrap().text(), DROPPED_SENTENCE);
}
