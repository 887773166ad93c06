//! Given/when/then for the draft A2A 1.1 elicitations: each kind of request for input is
//! BLOCKED while the task waits on it and RESOLVED once answered (or withdrawn), and each
//! change rides the status update that made it.

use serde_json::json;

use crate::extensions::harness::{METADATA_KEY, PARTICIPANT_ID_KEY};
use crate::extensions::hitl::{Approval, HITL_URI};
use crate::ids::{ContextId, HistoryLength, ParticipantId, Principal, TaskId};
use crate::projection::{push, replay, stream};
use crate::task::*;
use crate::time::Timestamp;
use crate::wire::{Elicitation, ElicitationState, Message, Metadata, StreamResponse, TaskState};

use ElicitationState::{Blocked, Resolved};

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}Z")).unwrap()
}

fn pid(p: &str) -> ParticipantId {
    ParticipantId::parse(p).unwrap()
}

/// A first message with a tiny-harness envelope naming ann (admin) and bob (assignee).
fn first_message(extensions: Vec<String>) -> Message {
    let mut m = Message::user_text("m-1", "paint it");
    m.extensions = extensions;
    let mut meta = Metadata::new();
    meta.insert(
        METADATA_KEY.into(),
        json!({"name": "paint", "goal": "paint the shed", "participants": [
            {"id": "ann", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "assignee"}
        ]}),
    );
    m.metadata = Some(meta);
    m
}

struct Run {
    state: TaskAggregate,
    events: Vec<TaskEvent>,
}

impl Run {
    fn given(first: Message, awaiting: Option<&str>) -> Self {
        let mut run = Self {
            state: TaskAggregate::default(),
            events: Vec::new(),
        };
        run.when(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            message: first,
            at: at(0),
            extension: None,
            awaiting_assignee: awaiting.map(pid),
        }));
        run
    }

    fn when(&mut self, c: TaskCommand) -> Vec<TaskEvent> {
        let events = self.state.decide(c).expect("decided");
        for e in &events {
            self.state.apply_event(e);
        }
        self.events.extend(events.clone());
        events
    }

    fn head(&self) -> &TaskHead {
        self.state.head().unwrap()
    }

    /// `(id, state, kind)` of every elicitation the task shows.
    fn shown(&self) -> Vec<(String, ElicitationState, String)> {
        brief(&self.head().elicitations())
    }

    /// The delta the current status carries.
    fn delta(&self) -> Vec<(String, ElicitationState, String)> {
        brief(&self.head().status.elicitations)
    }
}

fn brief(list: &[Elicitation]) -> Vec<(String, ElicitationState, String)> {
    list.iter()
        .map(|e| {
            let kind = e.metadata.as_ref().unwrap()[ELICITATION_KIND_KEY]
                .as_str()
                .unwrap()
                .to_string();
            (e.elicitation_id.clone(), e.state, kind)
        })
        .collect()
}

fn user(id: &str, sender: &str) -> TaskCommand {
    let mut m = Message::user_text(id, "blue");
    let mut meta = Metadata::new();
    meta.insert(PARTICIPANT_ID_KEY.into(), json!(sender));
    m.metadata = Some(meta);
    TaskCommand::AppendUserMessage(AppendUserMessage {
        message: m,
        at: at(5),
        caller: None,
    })
}

fn ask_ann() -> TaskCommand {
    TaskCommand::AskParticipant {
        participant_id: pid("ann"),
        question: "Which colour?".into(),
        options: vec![],
        at: at(2),
    }
}

#[test]
fn a_pending_help_request_is_blocked_and_its_answer_resolves_it() {
    let mut run = Run::given(first_message(vec![]), None);
    assert!(run.shown().is_empty(), "nothing asked yet");
    // when the agent asks ann
    run.when(ask_ann());
    let id = run.head().pending_help.as_ref().unwrap().id.clone();
    let waiting = vec![(id.clone(), Blocked, "help-request".to_string())];
    assert_eq!(run.shown(), waiting);
    assert_eq!(run.delta(), waiting, "the asking status carries it");
    assert_eq!(
        run.head().elicitations()[0].metadata.as_ref().unwrap()[ELICITATION_PARTICIPANT_KEY],
        "ann"
    );
    // a message from someone else answers nothing
    run.when(user("m-2", "bob"));
    assert_eq!(run.shown(), waiting);
    // when ann replies
    run.when(user("m-3", "ann"));
    let resolved = vec![(id, Resolved, "help-request".to_string())];
    assert_eq!(run.head().status.state, TaskState::Working);
    assert_eq!(run.shown(), resolved);
    assert_eq!(run.delta(), resolved, "the answering status carries it");
    // a later status changes no elicitation: it carries none
    run.when(TaskCommand::ChangeStatus {
        state: TaskState::Completed,
        message: None,
        at: at(6),
    });
    assert!(run.delta().is_empty());
    assert_eq!(run.shown(), resolved, "never removed");
}

fn ask_approval() -> TaskCommand {
    TaskCommand::RequestToolApproval(Box::new(RequestToolApproval {
        calls: vec![ToolCallAsked {
            call_id: "call-1".into(),
            name: "deploy".into(),
            args: json!({}),
        }],
        nested: None,
        at: at(2),
    }))
}

#[test]
fn a_tool_approval_is_blocked_until_decided() {
    let mut run = Run::given(first_message(vec![HITL_URI.into()]), None);
    run.when(ask_approval());
    let gate = run.head().open_tool_approval().unwrap().clone();
    let waiting = vec![(gate.id.clone(), Blocked, "tool-approval".to_string())];
    assert_eq!(run.head().status.state, TaskState::InputRequired);
    assert_eq!(run.shown(), waiting);
    assert_eq!(run.delta(), waiting);
    // when the owner decides the call
    let mut m = Message::user_text("m-2", "");
    m.extensions = vec![HITL_URI.into()];
    run.when(TaskCommand::AnswerToolApproval(Box::new(
        AnswerToolApproval {
            approvals: vec![Approval {
                id: gate.tools[0].id.clone(),
                approved: true,
                rejection_reason: None,
            }],
            by: None,
            message: m,
            at: at(3),
            caller: None,
        },
    )));
    let resolved = vec![(gate.id, Resolved, "tool-approval".to_string())];
    assert_eq!(run.shown(), resolved);
    assert_eq!(run.delta(), resolved);
}

#[test]
fn a_handoff_proposal_is_blocked_until_approved() {
    let mut run = Run {
        state: TaskAggregate::default(),
        events: Vec::new(),
    };
    run.when(TaskCommand::ProposeHandoff(Box::new(ProposeHandoff {
        task_id: TaskId::parse("t-1").unwrap(),
        context_id: ContextId::parse("c-1").unwrap(),
        owner: Principal::new("acme", "alice").unwrap(),
        message: Message::user_text("m-1", "please export the API"),
        work: HandoffWork {
            title: "Export the API".into(),
            acceptance: vec![],
            writes: vec![],
            priority: "medium".into(),
            labels: vec![],
        },
        at: at(0),
    })));
    let gate = run.head().gates[0].id.clone();
    let waiting = vec![(gate.clone(), Blocked, "task-proposal".to_string())];
    assert_eq!(run.head().status.state, TaskState::AuthRequired);
    assert_eq!(run.shown(), waiting);
    assert_eq!(run.delta(), waiting);
    run.when(TaskCommand::AnswerGate(Box::new(AnswerGate {
        gate_id: gate.clone(),
        choice: Some("approve".into()),
        by: None,
        message: Message::user_text("m-2", "ok"),
        at: at(1),
        caller: None,
    })));
    let resolved = vec![(gate, Resolved, "task-proposal".to_string())];
    assert_eq!(run.head().status.state, TaskState::Submitted);
    assert_eq!(run.shown(), resolved);
    assert_eq!(run.delta(), resolved);
}

#[test]
fn a_task_for_a_participant_is_blocked_until_the_assignee_replies() {
    let mut run = Run::given(first_message(vec![]), Some("bob"));
    let waiting = vec![(
        "t-1:goal".to_string(),
        Blocked,
        "participant-task".to_string(),
    )];
    assert_eq!(run.head().status.state, TaskState::InputRequired);
    assert_eq!(run.shown(), waiting);
    assert_eq!(
        run.delta(),
        waiting,
        "the status that asks the goal carries it"
    );
    run.when(user("m-2", "ann"));
    assert_eq!(run.shown(), waiting, "only the assignee answers");
    run.when(user("m-3", "bob"));
    let resolved = vec![(
        "t-1:goal".to_string(),
        Resolved,
        "participant-task".to_string(),
    )];
    assert_eq!(run.head().status.state, TaskState::Completed);
    assert_eq!(run.shown(), resolved);
    assert_eq!(run.delta(), resolved);
}

#[test]
fn a_task_that_ends_while_asking_withdraws_the_request() {
    let mut run = Run::given(first_message(vec![]), None);
    run.when(ask_ann());
    let id = run.head().pending_help.as_ref().unwrap().id.clone();
    run.when(TaskCommand::CancelTask {
        at: at(4),
        by: None,
    });
    let withdrawn = vec![(id, Resolved, "help-request".to_string())];
    assert_eq!(run.head().status.state, TaskState::Canceled);
    assert_eq!(run.shown(), withdrawn);
    assert_eq!(run.delta(), withdrawn, "the cancel carries the withdrawal");
}

#[test]
fn requests_are_listed_in_the_order_asked_and_each_keeps_its_id() {
    let mut run = Run::given(first_message(vec![HITL_URI.into()]), None);
    run.when(ask_ann());
    run.when(user("m-2", "ann"));
    run.when(ask_approval());
    let kinds: Vec<(ElicitationState, String)> =
        run.shown().into_iter().map(|(_, s, k)| (s, k)).collect();
    assert_eq!(
        kinds,
        [
            (Resolved, "help-request".to_string()),
            (Blocked, "tool-approval".to_string())
        ]
    );
    assert_eq!(
        run.delta().len(),
        1,
        "only the new request rides the new status"
    );
}

#[test]
fn a_head_from_before_elicitations_still_shows_what_it_waits_on() {
    let mut run = Run::given(first_message(vec![HITL_URI.into()]), None);
    run.when(ask_approval());
    let mut old = run.head().clone();
    old.asked.clear();
    old.unshown.clear();
    let gate = old.open_tool_approval().unwrap().id.clone();
    assert_eq!(
        brief(&old.elicitations()),
        [(gate, Blocked, "tool-approval".to_string())]
    );
}

#[test]
fn the_task_a_client_reads_and_the_stream_carry_them_and_a_webhook_does_not() {
    let mut run = Run::given(first_message(vec![]), None);
    let before = run.state.clone();
    let events = run.when(ask_ann());
    let task = replay(&run.events, HistoryLength::All).unwrap();
    assert_eq!(brief(&task.elicitations), run.shown());
    assert_eq!(brief(&task.status.elicitations), run.shown());
    // The status update a stream records at commit carries the delta.
    let recorded = stream::recorded(&run.state, &events[0]).unwrap();
    let body = recorded.status.unwrap().body;
    let update: StreamResponse = serde_json::from_str(&body).unwrap();
    let StreamResponse::StatusUpdate(u) = update else {
        panic!("{body}")
    };
    assert_eq!(brief(&u.status.elicitations), run.shown());
    // A webhook is sent the 1.0 shape.
    let mut subscribed = before;
    if let Some(h) = subscribed.head.as_mut() {
        h.push.push(
            serde_json::from_value(
                json!({"id": "p", "url": "https://example.com/hook", "from_seq": 0}),
            )
            .unwrap(),
        );
    }
    let pushed = push::updates(&subscribed, &events);
    assert_eq!(pushed.len(), 1);
    assert!(
        !pushed[0].body.contains("elicitation"),
        "{}",
        pushed[0].body
    );
}
