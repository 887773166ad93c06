//! Given/when/then: a given-up turn and a stalled task end FAILED; anything else is left alone.

use crate::ids::{ContextId, Principal, TaskId};
use crate::task::*;
use crate::time::Timestamp;
use crate::wire::{Message, TaskState};

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:{:02}:{:02}Z", s / 60, s % 60)).unwrap()
}

/// A task just created: SUBMITTED, its first work requested (the event at sequence 3).
fn given_created() -> TaskAggregate {
    let mut s = TaskAggregate::default();
    let events = s
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            message: Message::user_text("m-1", "hello"),
            at: at(0),
            extension: None,
            awaiting_assignee: None,
        }))
        .unwrap();
    given(&mut s, events);
    s
}

fn given(s: &mut TaskAggregate, events: Vec<TaskEvent>) {
    for e in &events {
        s.apply_event(e);
    }
}

fn work_seq(s: &TaskAggregate) -> u64 {
    s.head().unwrap().work_requested
}

fn give_up(seq: u64, reason: &str) -> TaskCommand {
    TaskCommand::GiveUpAgentWork {
        work_seq: seq,
        attempts: 5,
        reason: reason.into(),
        at: at(10),
    }
}

fn failed_with(events: &[TaskEvent]) -> String {
    match events {
        [TaskEvent::StatusChanged {
            state: TaskState::Failed,
            message: Some(m),
            ..
        }] => m.text(),
        other => panic!("expected one FAILED status change, got {other:?}"),
    }
}

#[test]
fn a_given_up_turn_fails_the_task_saying_why() {
    let s = given_created();
    let events = s
        .decide(give_up(work_seq(&s), "the model said 503"))
        .unwrap();
    let text = failed_with(&events);
    assert!(text.contains("given up after 5 attempts"), "{text}");
    assert!(text.ends_with("the model said 503"), "{text}");
    let mut after = s.clone();
    given(&mut after, events);
    assert_eq!(after.head().unwrap().status.state, TaskState::Failed);
    // the status message is kept in history like any status message
    assert_eq!(after.head().unwrap().history_len, 2);
}

#[test]
fn a_give_up_changes_nothing_once_the_work_is_done_superseded_or_the_task_waits() {
    let s = given_created();
    let seq = work_seq(&s);
    // done
    let mut done = s.clone();
    let events = done
        .decide(TaskCommand::FinishAgentTurn {
            work_seq: seq,
            at: at(5),
        })
        .unwrap();
    given(&mut done, events);
    assert_eq!(done.decide(give_up(seq, "x")).unwrap(), vec![]);
    // an older request than the latest (its own turn runs), or one that was never made
    assert_eq!(s.decide(give_up(seq - 1, "x")).unwrap(), vec![]);
    assert_eq!(s.decide(give_up(seq + 1, "x")).unwrap(), vec![]);
    // the task is waiting for someone, or finished
    for state in [TaskState::InputRequired, TaskState::Completed] {
        let mut other = s.clone();
        let events = other
            .decide(TaskCommand::ChangeStatus {
                state,
                message: None,
                at: at(5),
            })
            .unwrap();
        given(&mut other, events);
        assert_eq!(
            other.decide(give_up(seq, "x")).unwrap(),
            vec![],
            "{state:?}"
        );
    }
}

#[test]
fn a_reason_is_kept_up_to_its_limit_and_cut_past_it() {
    let at_limit = "é".repeat(MAX_REASON_CHARS);
    assert_eq!(clip_reason(&at_limit), at_limit);
    let past = "é".repeat(MAX_REASON_CHARS + 1);
    let clipped = clip_reason(&past);
    assert_eq!(clipped.chars().count(), MAX_REASON_CHARS + 1);
    assert!(clipped.ends_with('…'));
    let s = given_created();
    let text = failed_with(&s.decide(give_up(work_seq(&s), &past)).unwrap());
    assert!(text.ends_with(&clipped), "{text}");
}

#[test]
fn a_task_with_no_progress_past_its_deadline_fails_and_one_that_moved_does_not() {
    let s = given_created(); // its last event at 0 s
    let stalled = |deadline_secs, now| TaskCommand::FailStalledTask {
        deadline_secs,
        at: at(now),
    };
    // 60 s deadline: at 60 s exactly the task is not yet past it; at 61 s it is
    assert_eq!(s.decide(stalled(60, 60)).unwrap(), vec![]);
    let text = failed_with(&s.decide(stalled(60, 61)).unwrap());
    assert!(text.starts_with("No progress for more than 60 s"), "{text}");
    // a racing turn moved it to WORKING at 50 s: not stalled at 61 s any more
    let mut moved = s.clone();
    let events = moved
        .decide(TaskCommand::ChangeStatus {
            state: TaskState::Working,
            message: None,
            at: at(50),
        })
        .unwrap();
    given(&mut moved, events);
    assert_eq!(moved.decide(stalled(60, 61)).unwrap(), vec![]);
    assert!(!moved.decide(stalled(60, 111)).unwrap().is_empty());
    // waiting for someone is not stalling
    let mut waiting = s.clone();
    let events = waiting
        .decide(TaskCommand::ChangeStatus {
            state: TaskState::InputRequired,
            message: None,
            at: at(1),
        })
        .unwrap();
    given(&mut waiting, events);
    assert_eq!(waiting.decide(stalled(60, 3000)).unwrap(), vec![]);
}

#[test]
fn a_deadline_past_its_maximum_counts_as_the_maximum() {
    let s = given_created();
    let events = s
        .decide(TaskCommand::FailStalledTask {
            deadline_secs: u64::MAX,
            at: at(10),
        })
        .unwrap();
    assert_eq!(events, vec![]);
}

#[test]
fn a_finished_task_records_nothing_more_from_a_turn() {
    // Given a task whose turn finished it (canceled while the agent worked)
    let mut s = given_created();
    let seq = work_seq(&s);
    let canceled = s
        .decide(TaskCommand::CancelTask {
            at: at(4),
            by: None,
        })
        .unwrap();
    given(&mut s, canceled);
    let finish = TaskCommand::FinishAgentTurn {
        work_seq: seq,
        at: at(5),
    };
    // When the turn reports that it finished, then nothing is recorded
    assert_eq!(s.decide(finish.clone()).unwrap(), vec![]);
    // and the decision holds for every later state: a kept state needs no second look
    assert!(s.records_nothing_more(std::slice::from_ref(&finish)));
    assert!(!s.records_nothing_more(&[]));
    assert!(!s.records_nothing_more(&[finish.clone(), give_up(seq, "x")]));
    // while a task still working records its finished turn
    let working = given_created();
    assert_eq!(working.decide(finish.clone()).unwrap().len(), 1);
    assert!(!working.records_nothing_more(&[finish]));
}

#[test]
fn a_turn_ends_waiting_when_it_asks_for_input_and_its_record_joins_that_commit() {
    let ask = |state| TaskCommand::ChangeStatus {
        state,
        message: None,
        at: at(3),
    };
    // Given a task at work, when the turn asks for input
    let mut s = given_created();
    let seq = work_seq(&s);
    let commands = [ask(TaskState::Working), ask(TaskState::InputRequired)];
    assert!(ends_turn_waiting(&commands));
    assert!(ends_turn_waiting(&[ask(TaskState::AuthRequired)]));
    // (a status that goes on working, or finishes the task, leaves the record where it was)
    assert!(!ends_turn_waiting(&[ask(TaskState::Working)]));
    assert!(!ends_turn_waiting(&[ask(TaskState::Completed)]));
    assert!(!ends_turn_waiting(&[]));
    // then the record decided after those commands, in the same commit, is made
    for c in commands {
        let events = s.decide(c).unwrap();
        given(&mut s, events);
    }
    let recorded = s
        .decide(TaskCommand::FinishAgentTurn {
            work_seq: seq,
            at: at(3),
        })
        .unwrap();
    assert!(matches!(
        recorded.as_slice(),
        [TaskEvent::AgentTurnFinished { work_seq, .. }] if *work_seq == seq
    ));
    given(&mut s, recorded);
    assert_eq!(s.head().unwrap().turn_done, seq);
}
