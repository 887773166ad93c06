//! Agent turns: the unit of work the relay derives from committed events and the worker runs,
//! one per `AgentWorkRequested` event.

use serde::{Deserialize, Serialize};

use crate::events::StoredEvent;
use crate::ids::TaskId;

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
        })
        .collect()
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
                work_seq: 2
            }]
        );
        assert_eq!(
            turns,
            turns_from(&t, &events),
            "a replayed batch yields identical turns"
        );
        assert_eq!(turns[0].dedup_id(), "t:2");
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
