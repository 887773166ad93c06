//! Agent turns: the unit of work the relay derives from committed events and the worker runs,
//! one per `AgentWorkRequested` event.

use serde::{Deserialize, Serialize};

use crate::ids::TaskId;
use crate::task::stored::StoredEvent;
use crate::task::TaskEvent;
use crate::wire::{Message, Role};

/// Name of the event that requests a turn.
pub const WORK_EVENT: &str = "AgentWorkRequested";

/// One turn; its identity (task, event sequence) makes queue de-duplication and the worker's
/// duplicate check exact. A queue body: `{"taskId": "…", "workSeq": n}`, the task id checked
/// when it is read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTurn {
    pub task_id: TaskId,
    /// Sequence of the `AgentWorkRequested` event.
    pub work_seq: u64,
    /// The trace of the commit that asked for it (`TraceContext::to_stored`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

impl AgentTurn {
    /// Queue de-duplication id: the same event never makes two turns.
    pub fn dedup_id(&self) -> String {
        format!("{}:{}", self.task_id, self.work_seq)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    #[error("the queue refused {failed} of the turns: {reason}")]
    Refused { failed: usize, reason: String },
    #[error("the queue is unavailable: {0}")]
    Unavailable(String),
}

/// Where turns go: a FIFO queue, one message group per task, de-duplicated by turn identity.
#[async_trait::async_trait]
pub trait TurnQueue: Send + Sync {
    async fn enqueue(&self, turns: &[AgentTurn]) -> Result<(), QueueError>;
}

/// One committed item as a change stream shows it: the task, the event's sequence and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamedEvent {
    pub task_id: TaskId,
    pub seq: u64,
    pub event_type: String,
}

/// The turns a batch of streamed items calls for (the stream relay); replays give the same.
pub fn turns_from_stream(items: &[StreamedEvent]) -> Vec<AgentTurn> {
    items
        .iter()
        .filter(|e| e.event_type == WORK_EVENT)
        .map(|e| AgentTurn {
            task_id: e.task_id.clone(),
            work_seq: e.seq,
            trace: None,
        })
        .collect()
}

/// The turns a task's committed events call for, in order.
pub fn turns_from(task_id: &TaskId, events: &[StoredEvent]) -> Vec<AgentTurn> {
    events
        .iter()
        .filter(|e| e.event_type == WORK_EVENT)
        .map(|e| AgentTurn {
            task_id: task_id.clone(),
            work_seq: e.seq,
            trace: None,
        })
        .collect()
}

/// What a window of a task's events says about the turn of the work request at `work_seq`.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnInput {
    /// The window holds no work request at `work_seq`.
    NotRequested,
    /// The turn works on this input: the user message committed right before the request (an
    /// answered help request may sit between them), or none when another event comes first (a
    /// request after resolved sub-tasks, a continuation) or the task has none before it.
    Input(Option<Box<Message>>),
    /// The window starts after the event that decides (and not at the task's first event).
    Undecided,
}

/// The input of the turn the work request at `work_seq` asks for, as far as `window` (a task's
/// events, numbered, oldest first) shows it.
pub fn turn_input<'a>(
    window: impl DoubleEndedIterator<Item = (u64, &'a TaskEvent)> + Clone,
    work_seq: u64,
) -> TurnInput {
    let requested = window
        .clone()
        .any(|(seq, e)| seq == work_seq && matches!(e, TaskEvent::AgentWorkRequested { .. }));
    if !requested {
        return TurnInput::NotRequested;
    }
    let mut earliest = work_seq;
    for (seq, e) in window.rev().filter(|(seq, _)| *seq < work_seq) {
        earliest = seq;
        match e {
            TaskEvent::HelpAnswered { .. } => continue,
            TaskEvent::MessageAppended { message, .. } if message.role == Role::User => {
                return TurnInput::Input(Some(Box::new(message.clone())))
            }
            _ => return TurnInput::Input(None),
        }
    }
    if earliest == 1 || work_seq == 1 {
        TurnInput::Input(None)
    } else {
        TurnInput::Undecided
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TaskId;
    use crate::task::TaskEvent;
    use crate::time::Timestamp;

    #[test]
    fn only_work_requests_make_turns_and_replays_make_the_same_ones() {
        let at = Timestamp::now();
        let events = vec![
            StoredEvent::new(1, &TaskEvent::TaskCanceled { at }, at),
            StoredEvent::new(
                2,
                &TaskEvent::AgentWorkRequested {
                    reason: "x".into(),
                    at,
                },
                at,
            ),
        ];
        let t = TaskId::parse("t").unwrap();
        let turns = turns_from(&t, &events);
        assert_eq!(
            turns,
            vec![AgentTurn {
                task_id: t.clone(),
                work_seq: 2,
                trace: None,
            }]
        );
        assert_eq!(
            turns,
            turns_from(&t, &events),
            "a replayed batch yields identical turns"
        );
        assert_eq!(turns[0].dedup_id(), "t:2");
    }

    mod input {
        use super::super::{turn_input, TurnInput};
        use crate::ids::ParticipantId;
        use crate::task::TaskEvent;
        use crate::time::Timestamp;
        use crate::wire::Message;

        fn message(m: Message) -> TaskEvent {
            TaskEvent::MessageAppended {
                message: m,
                at: Timestamp::from_unix_nanos(1),
                acted_by: None,
            }
        }
        fn work() -> TaskEvent {
            TaskEvent::AgentWorkRequested {
                reason: "input".into(),
                at: Timestamp::from_unix_nanos(1),
            }
        }
        fn help_answered() -> TaskEvent {
            TaskEvent::HelpAnswered {
                participant_id: ParticipantId::parse("bob").unwrap(),
                at: Timestamp::from_unix_nanos(1),
            }
        }
        fn numbered(first: u64, events: &[TaskEvent]) -> Vec<(u64, &TaskEvent)> {
            (first..).zip(events.iter()).collect()
        }

        #[test]
        fn given_a_message_then_its_request_when_asked_then_the_message_is_the_input() {
            let events = [message(Message::user_text("m-1", "hi")), work()];
            let w = numbered(2, &events);
            let found = turn_input(w.iter().copied(), 3);
            assert!(matches!(found, TurnInput::Input(Some(m)) if m.message_id == "m-1"));
        }

        #[test]
        fn given_help_answers_between_when_asked_then_the_message_before_them_is_the_input() {
            let events = [
                message(Message::user_text("m-1", "hi")),
                help_answered(),
                work(),
            ];
            let w = numbered(4, &events);
            let found = turn_input(w.iter().copied(), 6);
            assert!(matches!(found, TurnInput::Input(Some(m)) if m.message_id == "m-1"));
        }

        #[test]
        fn given_an_agent_message_before_the_request_when_asked_then_there_is_no_input() {
            let events = [message(Message::agent_text("a-1", "done")), work()];
            let w = numbered(7, &events);
            assert_eq!(turn_input(w.iter().copied(), 8), TurnInput::Input(None));
        }

        #[test]
        fn given_a_window_starting_at_the_request_when_asked_then_it_cannot_say() {
            let events = [work()];
            let w = numbered(5, &events);
            assert_eq!(turn_input(w.iter().copied(), 5), TurnInput::Undecided);
            let events = [help_answered(), work()];
            let w = numbered(4, &events);
            assert_eq!(turn_input(w.iter().copied(), 5), TurnInput::Undecided);
        }

        #[test]
        fn given_no_request_at_the_sequence_when_asked_then_it_is_not_requested() {
            let events = [message(Message::user_text("m-1", "hi")), work()];
            let w = numbered(2, &events);
            assert_eq!(turn_input(w.iter().copied(), 2), TurnInput::NotRequested);
            assert_eq!(turn_input(w.iter().copied(), 9), TurnInput::NotRequested);
        }
    }

    mod continuation {
        use crate::ids::{ContextId, Principal, TaskId};
        use crate::task::{AppendUserMessage, CreateTask, TaskAggregate, TaskCommand, TaskEvent};
        use crate::time::Timestamp;
        use crate::wire::{Message, TaskState};

        fn apply(s: &mut TaskAggregate, c: TaskCommand) -> Vec<TaskEvent> {
            let events = s.decide(c).unwrap();
            events.iter().for_each(|e| s.apply_event(e));
            events
        }

        fn working_task() -> TaskAggregate {
            let mut s = TaskAggregate::default();
            apply(
                &mut s,
                TaskCommand::CreateTask(CreateTask {
                    task_id: TaskId::parse("t-1").unwrap(),
                    context_id: ContextId::parse("c-1").unwrap(),
                    owner: Principal::anonymous(),
                    message: Message::user_text("m-1", "go"),
                    at: Timestamp::now(),
                    extension: None,
                    awaiting_assignee: None,
                }),
            );
            apply(
                &mut s,
                TaskCommand::ChangeStatus {
                    state: TaskState::Working,
                    message: None,
                    at: Timestamp::now(),
                },
            );
            s
        }

        fn continue_after(after: u64, steps_taken: u32) -> TaskCommand {
            TaskCommand::ContinueAgentWork {
                after,
                steps_taken,
                at: Timestamp::now(),
            }
        }

        #[test]
        fn a_continuation_is_a_new_work_request_carrying_the_steps_taken() {
            let mut s = working_task();
            let first = s.head().unwrap().work_requested;
            let events = apply(&mut s, continue_after(first, 3));
            assert!(matches!(
                &events[..],
                [
                    TaskEvent::AgentWorkRequested { .. },
                    TaskEvent::ExecutionContinued { steps_taken: 3, .. }
                ]
            ));
            let head = s.head().unwrap();
            assert_eq!(
                head.work_requested,
                s.version - 1,
                "a new turn: its own sequence"
            );
            assert!(head.work_requested > first);
            assert_eq!(head.execution_steps, 3);
            // the continuation's own turn continues again with its own sequence
            let second = head.work_requested;
            apply(&mut s, continue_after(second, 5));
            assert_eq!(s.head().unwrap().execution_steps, 5);
            // new input starts a new execution
            apply(
                &mut s,
                TaskCommand::AppendUserMessage(AppendUserMessage {
                    message: Message::user_text("m-2", "more"),
                    at: Timestamp::now(),
                    caller: None,
                }),
            );
            assert_eq!(s.head().unwrap().execution_steps, 0);
        }

        #[test]
        fn no_continuation_when_newer_work_waits_or_the_task_is_done() {
            let mut s = working_task();
            let first = s.head().unwrap().work_requested;
            apply(
                &mut s,
                TaskCommand::AppendUserMessage(AppendUserMessage {
                    message: Message::user_text("m-2", "more"),
                    at: Timestamp::now(),
                    caller: None,
                }),
            );
            assert_eq!(s.decide(continue_after(first, 1)).unwrap(), vec![]);
            let latest = s.head().unwrap().work_requested;
            apply(
                &mut s,
                TaskCommand::ChangeStatus {
                    state: TaskState::Completed,
                    message: None,
                    at: Timestamp::now(),
                },
            );
            assert_eq!(s.decide(continue_after(latest, 1)).unwrap(), vec![]);
        }
    }
}
