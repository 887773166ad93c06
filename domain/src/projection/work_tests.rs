use super::*;
use crate::wire::Message;

fn at(s: i64) -> Timestamp {
    Timestamp::from_unix_nanos(s * 1_000_000_000)
}

fn requested(seq: u64) -> (u64, TaskEvent, Timestamp) {
    (
        seq,
        TaskEvent::AgentWorkRequested {
            reason: "input".into(),
            at: at(seq as i64),
        },
        at(seq as i64),
    )
}

fn finished(seq: u64, work_seq: u64) -> (u64, TaskEvent, Timestamp) {
    (
        seq,
        TaskEvent::AgentTurnFinished {
            work_seq,
            at: at(seq as i64),
        },
        at(seq as i64),
    )
}

fn status(seq: u64, state: TaskState, message_id: &str) -> (u64, TaskEvent, Timestamp) {
    (
        seq,
        TaskEvent::StatusChanged {
            state,
            message: Some(Message::agent_text(message_id, "why")),
            at: at(seq as i64),
        },
        at(seq as i64),
    )
}

#[test]
fn given_a_request_and_its_finish_then_one_finished_turn() {
    let t = turns(&[requested(2), finished(4, 2)]);
    assert_eq!(t.len(), 1);
    assert_eq!(
        (t[0].work_seq, &t[0].end, t[0].ended_at),
        (2, &TurnEnd::Finished, Some(at(4)))
    );
}

#[test]
fn given_a_newer_request_first_then_the_older_turn_is_folded_into_it() {
    let t = turns(&[requested(2), requested(3), finished(5, 3)]);
    assert_eq!(t[0].end, TurnEnd::Folded { into: 3 });
    assert_eq!(t[1].end, TurnEnd::Finished);
}

#[test]
fn given_a_give_up_then_that_turn_is_given_up_and_others_end_with_the_task() {
    let t = turns(&[requested(2), status(3, TaskState::Failed, "give-up-2")]);
    assert_eq!(t[0].end, TurnEnd::GivenUp);
    let t = turns(&[requested(2), status(3, TaskState::Completed, "done")]);
    assert_eq!(t[0].end, TurnEnd::Ended(TaskState::Completed));
    // A waiting state ends nothing.
    let t = turns(&[requested(2), status(3, TaskState::InputRequired, "ask")]);
    assert_eq!(t[0].end, TurnEnd::Open);
}

#[test]
fn given_no_ending_then_the_turn_is_open() {
    let t = turns(&[requested(7)]);
    assert_eq!((t[0].end.clone(), t[0].ended_at), (TurnEnd::Open, None));
    assert!(turns(&[]).is_empty());
}
