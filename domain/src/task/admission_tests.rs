//! Given a task, when an event that no decision made arrives, then the gate says why not —
//! one test per rule, each with the case the aggregate itself decides passing.

use super::*;
use crate::extensions::harness::{Participant, ParticipantKind, Role};
use crate::ids::{ContextId, ParticipantId, Principal, TaskId};
use crate::push::PushConfigSpec;
use crate::task::{CreateTask, TaskCommand};
use crate::wire::PushProtocol;

fn at(s: i64) -> Timestamp {
    Timestamp::parse("2026-01-01T00:00:00Z")
        .unwrap()
        .plus_secs(s)
}

fn gate() -> Admission {
    Admission::new(at(3600), AddressPolicy::strict())
}

fn owner() -> Principal {
    Principal::new("acme", "alice").unwrap()
}

/// A created task, decided by the aggregate, every event passing the gate on the way.
fn given(extra: Vec<TaskCommand>) -> TaskAggregate {
    let mut state = TaskAggregate::default();
    let mut commands = vec![TaskCommand::CreateTask(CreateTask {
        task_id: TaskId::parse("t-1").unwrap(),
        context_id: ContextId::parse("c-1").unwrap(),
        owner: owner(),
        message: Message::user_text("m-1", "hello"),
        at: at(0),
        extension: None,
        awaiting_assignee: None,
    })];
    commands.extend(extra);
    for c in commands {
        for e in state.decide(c).expect("decided") {
            state
                .admit(&e, at(1), &gate())
                .unwrap_or_else(|why| panic!("a decided {} refused: {why}", e.name()));
            state.apply_event(&e);
        }
    }
    state
}

fn completed() -> TaskAggregate {
    given(vec![TaskCommand::ChangeStatus {
        state: TaskState::Completed,
        message: None,
        at: at(2),
    }])
}

fn refused(state: &TaskAggregate, e: TaskEvent) -> String {
    state
        .admit(&e, at(10), &gate())
        .expect_err("the gate refuses it")
}

#[test]
fn a_task_is_created_once_and_first() {
    let created = TaskEvent::TaskCreated {
        task_id: TaskId::parse("t-1").unwrap(),
        context_id: ContextId::parse("c-1").unwrap(),
        owner: owner(),
        at: at(0),
    };
    assert!(TaskAggregate::default()
        .admit(&created, at(0), &gate())
        .is_ok());
    assert!(refused(&given(vec![]), created).contains("created a second time"));
    let early = TaskEvent::AgentWorkRequested {
        reason: "x".into(),
        at: at(0),
    };
    assert!(TaskAggregate::default()
        .admit(&early, at(0), &gate())
        .unwrap_err()
        .contains("before the task was created"));
}

#[test]
fn times_lie_between_the_epoch_and_a_day_past_now() {
    let state = given(vec![]);
    let work = |t: Timestamp| TaskEvent::AgentWorkRequested {
        reason: "x".into(),
        at: t,
    };
    let late = Timestamp::parse("9999-12-31T23:59:59Z").unwrap();
    assert!(refused(&state, work(late)).contains("outside the times"));
    assert!(
        state.admit(&work(at(1)), late, &gate()).is_err(),
        "recorded late"
    );
    let before_epoch = Timestamp::parse("1969-12-31T23:59:59Z").unwrap();
    assert!(refused(&state, work(before_epoch)).contains("outside the times"));
    // At the bound and one past it.
    let bound = gate().now.plus_secs(MAX_CLOCK_AHEAD_SECS);
    assert!(state.admit(&work(bound), at(1), &gate()).is_ok());
    assert!(state
        .admit(&work(bound.next_nano()), at(1), &gate())
        .is_err());
    assert!(state
        .admit(&work(Admission::earliest()), at(1), &gate())
        .is_ok());
}

#[test]
fn nothing_but_subscriptions_and_usage_follows_a_finished_task() {
    let done = completed();
    let working = TaskEvent::StatusChanged {
        state: TaskState::Working,
        message: None,
        at: at(3),
    };
    assert!(refused(&done, working).contains("after task t-1 finished (TASK_STATE_COMPLETED)"));
    let message = TaskEvent::MessageAppended {
        message: Message::user_text("m-2", "more"),
        at: at(3),
        acted_by: None,
    };
    assert!(refused(&done, message).contains("MessageAppended after task t-1 finished"));
    let canceled = given(vec![TaskCommand::CancelTask {
        at: at(2),
        by: None,
    }]);
    let after_cancel = TaskEvent::MessageAppended {
        message: Message::user_text("m-2", "more"),
        at: at(3),
        acted_by: None,
    };
    assert!(refused(&canceled, after_cancel).contains("finished (TASK_STATE_CANCELED)"));
    let usage = TaskEvent::UsageRecorded {
        model: None,
        usage: Default::default(),
        at: at(3),
    };
    assert!(done.admit(&usage, at(3), &gate()).is_ok());
    let unsubscribe = TaskEvent::PushConfigDeleted {
        id: "p".into(),
        key: None,
        at: at(3),
    };
    assert!(done.admit(&unsubscribe, at(3), &gate()).is_ok());
}

#[test]
fn a_status_moves_only_where_a_decision_moves_it() {
    let state = given(vec![]);
    let to = |s| TaskEvent::StatusChanged {
        state: s,
        message: None,
        at: at(3),
    };
    assert!(refused(&state, to(TaskState::Unspecified)).contains("no state"));
    assert!(refused(&state, to(TaskState::Canceled)).contains("TaskCanceled"));
    assert!(state.admit(&to(TaskState::Working), at(3), &gate()).is_ok());
    assert!(state
        .admit(&to(TaskState::InputRequired), at(3), &gate())
        .is_ok());
}

#[test]
fn a_message_past_the_intake_bounds_is_refused() {
    let state = given(vec![]);
    let big = |bytes: usize| {
        let mut m = Message::agent_text("m-2", "x".repeat(bytes));
        m.task_id = Some("t-1".into());
        TaskEvent::MessageAppended {
            message: m,
            at: at(3),
            acted_by: None,
        }
    };
    // A 3 MiB message, as the attack had it; and the bound, exactly and one past it.
    assert!(refused(&state, big(3 * 1024 * 1024)).contains("past 1048576"));
    let overhead = json_size(&match big(0) {
        TaskEvent::MessageAppended { message, .. } => message,
        _ => unreachable!(),
    });
    assert!(state
        .admit(&big(MAX_STORED_MESSAGE_BYTES - overhead), at(3), &gate())
        .is_ok());
    assert!(state
        .admit(
            &big(MAX_STORED_MESSAGE_BYTES - overhead + 1),
            at(3),
            &gate()
        )
        .is_err());
    let mut many = Message::agent_text("m-3", "x");
    many.parts = (0..=MAX_PARTS_PER_MESSAGE)
        .map(|i| Part::text(i.to_string()))
        .collect();
    let e = TaskEvent::MessageAppended {
        message: many,
        at: at(3),
        acted_by: None,
    };
    assert!(refused(&state, e).contains("101 parts"));
}

#[test]
fn history_keeps_its_count_and_byte_budget() {
    let mut state = given(vec![]);
    let head = state.head.as_mut().unwrap();
    head.history_bytes = MAX_HISTORY_BYTES - 10;
    let e = TaskEvent::MessageAppended {
        message: Message::agent_text("m-2", "more than ten bytes"),
        at: at(3),
        acted_by: None,
    };
    assert!(refused(&state, e.clone()).contains("would pass"));
    let head = state.head.as_mut().unwrap();
    head.history_bytes = 0;
    head.history_len = MAX_HISTORY_MESSAGES;
    assert!(refused(&state, e.clone()).contains("10000 messages"));
    state.head.as_mut().unwrap().history_len = MAX_HISTORY_MESSAGES - 1;
    assert!(state.admit(&e, at(3), &gate()).is_ok());
}

fn shared() -> TaskAggregate {
    let mut state = given(vec![]);
    let head = state.head.as_mut().unwrap();
    let person = |id: &str, role| Participant {
        id: id.into(),
        kind: ParticipantKind::Human,
        role,
        display_name: String::new(),
    };
    head.ext = Some(TaskExtensionData {
        name: "shared".into(),
        goal: "work together".into(),
        kind: None,
        description: String::new(),
        acceptance_criteria: vec![],
        participants: vec![person("alice", Role::Admin), person("bob", Role::Watcher)],
        parent_tasks: vec![],
        sub_tasks: vec![],
        plan: None,
        lifecycle: None,
        model: None,
        reasoning_effort: None,
        approve_tools: vec![],
    });
    state
}

#[test]
fn a_participant_does_not_make_themself_admin() {
    let state = shared();
    let me = ParticipantId::parse("bob").unwrap();
    let promote = TaskEvent::ParticipantRoleChanged {
        participant_id: me.clone(),
        role: Role::Admin,
        by: Some(me.clone()),
        at: at(3),
    };
    assert!(refused(&state, promote).contains("only an admin"));
    let unnamed = TaskEvent::ParticipantRoleChanged {
        participant_id: me.clone(),
        role: Role::Admin,
        by: None,
        at: at(3),
    };
    assert!(refused(&state, unnamed).contains("only an admin"));
    let mut data = state.head().unwrap().ext.clone().unwrap();
    data.participants[1].role = Role::Admin;
    let envelope = TaskEvent::ExtensionUpdated {
        data: data.clone(),
        by: Some(me),
        at: at(3),
    };
    assert!(refused(&state, envelope).contains("only an admin"));
    let by_admin = TaskEvent::ExtensionUpdated {
        data,
        by: Some(ParticipantId::parse("alice").unwrap()),
        at: at(3),
    };
    assert!(state.admit(&by_admin, at(3), &gate()).is_ok());
}

#[test]
fn an_admin_acts_for_others_but_nobody_else_does() {
    let state = shared();
    let acted = |who: &str| TaskEvent::MessageAppended {
        message: Message::user_text("m-2", "for you"),
        at: at(3),
        acted_by: Some(Principal::new("acme", who).unwrap()),
    };
    assert!(refused(&state, acted("bob")).contains("without administering"));
    assert!(state.admit(&acted("alice"), at(3), &gate()).is_ok());
}

#[test]
fn artifacts_chunks_need_their_artifact_open_and_within_bounds() {
    let state = given(vec![]);
    let chunk = TaskEvent::ArtifactChunkAppended {
        artifact_id: crate::ids::ArtifactId::parse("a-9").unwrap(),
        parts: vec![Part::text("x")],
        metadata: None,
        last_chunk: false,
        at: at(3),
    };
    assert!(refused(&state, chunk).contains("which it does not have"));
    let mut full = given(vec![]);
    for i in 0..MAX_ARTIFACTS_PER_TASK {
        full.head
            .as_mut()
            .unwrap()
            .artifacts
            .push(super::super::ArtifactHead {
                artifact_id: crate::ids::ArtifactId::parse(format!("a-{i}")).unwrap(),
                chunks: 1,
                closed: true,
            });
    }
    let one_more = TaskEvent::ArtifactAdded {
        artifact: Artifact {
            artifact_id: "a-new".into(),
            name: None,
            description: None,
            parts: vec![Part::text("x")],
            metadata: None,
            extensions: vec![],
            start_generation: None,
            end_generation: None,
        },
        last_chunk: true,
        at: at(3),
    };
    assert!(refused(&full, one_more).contains("more than 256 artifacts"));
}

#[test]
fn a_push_config_is_one_the_api_would_have_registered() {
    let state = given(vec![]);
    let config = |url: &str, owner: Option<Principal>| TaskEvent::PushConfigSet {
        config: PushConfigSpec {
            id: "p-1".into(),
            url: url.into(),
            token: None,
            scheme: None,
            credentials: None,
            owner,
            protocol: PushProtocol::V1,
        },
        at: at(3),
    };
    assert!(refused(&state, config("http://127.0.0.1:9/hook", None)).contains("url"));
    assert!(refused(&state, config("file:///etc/passwd", None)).contains("http or https"));
    let stranger = Principal::new("acme", "mallory").unwrap();
    assert!(
        refused(&state, config("https://example.com/hook", Some(stranger)))
            .contains("does not see task")
    );
    assert!(state
        .admit(&config("https://example.com/hook", None), at(3), &gate())
        .is_ok());
}

#[test]
fn a_push_config_past_its_principals_room_is_refused() {
    use crate::push::MAX_PUSH_CONFIGS_PER_PRINCIPAL;
    let config = |id: String| TaskEvent::PushConfigSet {
        config: PushConfigSpec {
            id,
            url: "https://example.com/hook".into(),
            token: None,
            scheme: None,
            credentials: None,
            owner: None,
            protocol: PushProtocol::V1,
        },
        at: at(3),
    };
    let mut state = given(vec![]);
    // Given the owner's room filled to the limit, each config admitted on the way.
    for i in 0..MAX_PUSH_CONFIGS_PER_PRINCIPAL {
        let e = config(format!("p-{i}"));
        state.admit(&e, at(4), &gate()).expect("within the room");
        state.apply_event(&e);
    }
    // Then one more is refused, and replacing one the owner holds is still admitted.
    let why = refused(&state, config("p-one-more".into()));
    assert!(why.contains("the limit"), "{why}");
    assert!(state.admit(&config("p-0".into()), at(4), &gate()).is_ok());
}
