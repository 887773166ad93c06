//! Given a task's log, when a reader pages through it, then each event comes once, in order,
//! with the generation after it, and no secret and no other principal's push config with it.

use crate::ids::{ContextId, Principal, TaskId};
use crate::ports::{commit_for, replay_state};
use crate::push::PushConfigSpec;
use crate::task::stored::StoredEvent;
use crate::task::TaskEvent;
use crate::time::Timestamp;
use crate::wire::{Message, PushProtocol, TaskState};

use super::log::*;

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}Z")).unwrap()
}

fn alice() -> Principal {
    Principal::new("acme", "alice").unwrap()
}

fn bob() -> Principal {
    Principal::new("acme", "bob").unwrap()
}

fn push(id: &str, owner: Option<Principal>) -> TaskEvent {
    TaskEvent::PushConfigSet {
        config: PushConfigSpec {
            id: id.into(),
            url: "https://hooks.example.com/a".into(),
            token: Some("tok-secret".into()),
            scheme: Some("Bearer".into()),
            credentials: Some("cred-secret".into()),
            owner,
            protocol: PushProtocol::V1,
        },
        at: at(1),
    }
}

fn status(state: TaskState, s: u32) -> TaskEvent {
    TaskEvent::StatusChanged {
        state,
        message: None,
        at: at(s),
    }
}

/// seq 1 created (generation 1), 2 message, 3 alice's push config, 4 bob's, 5 working
/// (generation 2), 6 bob's deleted, 7 completed (generation 3).
fn log() -> Vec<StoredEvent> {
    let events = vec![
        TaskEvent::TaskCreated {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: alice(),
            at: at(0),
        },
        TaskEvent::MessageAppended {
            message: Message::user_text("m-1", "hi"),
            at: at(0),
            acted_by: None,
        },
        push("p-a", None),
        push("p-b", Some(bob())),
        status(TaskState::Working, 2),
        TaskEvent::PushConfigDeleted {
            id: "p-b".into(),
            key: Some(format!("p-b\n{}", bob())),
            at: at(3),
        },
        status(TaskState::Completed, 4),
    ];
    commit_for(
        TaskId::parse("t-1").unwrap(),
        &Default::default(),
        &events,
        at(9),
    )
    .events
}

fn seqs(records: &[crate::wire::TaskEventRecord]) -> Vec<u64> {
    records.iter().map(|r| r.seq).collect()
}

#[test]
fn given_a_log_when_the_agent_pages_it_then_every_event_comes_once_in_order() {
    let log = log();
    let head = replay_state(&log).unwrap().head.unwrap();
    let (first, last, more) = page(&head, &log, 0, 3, LogReader::Agent);
    assert_eq!((seqs(&first), last, more), (vec![1, 2, 3], 3, true));
    let (second, last, more) = page(&head, &log, last, 3, LogReader::Agent);
    assert_eq!((seqs(&second), last, more), (vec![4, 5, 6], 6, true));
    let (third, last, more) = page(&head, &log, last, 3, LogReader::Agent);
    assert_eq!((seqs(&third), last, more), (vec![7], 7, false));
    let (after_end, last, more) = page(&head, &log, last, 3, LogReader::Agent);
    assert!(after_end.is_empty());
    assert_eq!(
        (last, more),
        (7, false),
        "polled at the end, the cursor stays"
    );
    assert_eq!(first[0].event_type, "TaskCreated");
    assert_eq!(first[0].payload["TaskCreated"]["task_id"], "t-1");
    assert_eq!(first[0].recorded_time, "2026-01-01T00:00:09.000000000Z");
}

#[test]
fn given_a_log_then_each_event_carries_the_generation_after_it() {
    let log = log();
    let head = replay_state(&log).unwrap().head.unwrap();
    let (all, _, _) = page(&head, &log, 0, MAX_EVENTS_PAGE, LogReader::Agent);
    let generations: Vec<u64> = all.iter().map(|r| r.generation).collect();
    assert_eq!(generations, [1, 1, 1, 1, 2, 2, 3]);
    assert_eq!(head.generation, 3);
}

#[test]
fn given_a_generation_then_the_task_as_of_it_is_the_events_up_to_the_last_that_leaves_it_there() {
    let log = log();
    assert_eq!(events_as_of(&log, 1), 4);
    assert_eq!(events_as_of(&log, 2), 6);
    assert_eq!(events_as_of(&log, 3), 7);
    let as_of = replay_state(&log[..events_as_of(&log, 2)]).unwrap();
    let head = as_of.head.unwrap();
    assert_eq!(head.status.state, TaskState::Working);
    assert_eq!(head.generation, 2);
}

#[test]
fn given_push_configs_of_two_principals_then_each_sees_its_own_and_no_one_a_secret() {
    let log = log();
    let head = replay_state(&log).unwrap().head.unwrap();
    let (alice_sees, _, _) = page(&head, &log, 0, 100, LogReader::Client(&alice()));
    assert_eq!(seqs(&alice_sees), [1, 2, 3, 5, 7]);
    let (bob_sees, last, _) = page(&head, &log, 0, 100, LogReader::Client(&bob()));
    assert_eq!(seqs(&bob_sees), [1, 2, 4, 5, 6, 7]);
    assert_eq!(last, 7, "the cursor passes what a reader does not see");
    let (agent_sees, _, _) = page(&head, &log, 0, 100, LogReader::Agent);
    for r in alice_sees.iter().chain(&bob_sees).chain(&agent_sees) {
        let text = r.payload.to_string();
        assert!(!text.contains("secret"), "a secret in {text}");
    }
    let config = &alice_sees[2].payload["PushConfigSet"]["config"];
    assert_eq!(config["id"], "p-a");
    assert_eq!(config["url"], "https://hooks.example.com/a");
    assert_eq!(config["scheme"], "Bearer");
}

#[test]
fn a_page_size_is_between_one_and_the_most_and_zero_is_the_default() {
    assert_eq!(page_limit(None), Ok(DEFAULT_EVENTS_PAGE));
    assert_eq!(page_limit(Some(0)), Ok(DEFAULT_EVENTS_PAGE));
    assert_eq!(page_limit(Some(1)), Ok(1));
    assert_eq!(
        page_limit(Some(i64::from(MAX_EVENTS_PAGE))),
        Ok(MAX_EVENTS_PAGE)
    );
    assert!(page_limit(Some(i64::from(MAX_EVENTS_PAGE) + 1)).is_err());
    assert!(page_limit(Some(-1)).is_err());
    assert!(page_limit(Some(i64::MAX)).is_err());
}
