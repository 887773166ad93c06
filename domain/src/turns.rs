//! Agent turns: the unit of work the relay derives from committed events and the worker runs.
//! One turn per `AgentWorkRequested` event; its identity (task, event sequence) makes queue
//! de-duplication and the worker's duplicate check exact.

use serde::{Deserialize, Serialize};

use crate::events::StoredEvent;

/// Name of the event that requests a turn.
pub const WORK_EVENT: &str = "AgentWorkRequested";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTurn {
    pub task_id: String,
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
    pub task_id: String,
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
pub fn turns_from(task_id: &str, events: &[StoredEvent]) -> Vec<AgentTurn> {
    events
        .iter()
        .filter(|e| e.event_type == WORK_EVENT)
        .map(|e| AgentTurn {
            task_id: task_id.to_string(),
            work_seq: e.seq,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let turns = turns_from("t", &events);
        assert_eq!(
            turns,
            vec![AgentTurn {
                task_id: "t".into(),
                work_seq: 2
            }]
        );
        assert_eq!(
            turns,
            turns_from("t", &events),
            "a replayed batch yields identical turns"
        );
        assert_eq!(turns[0].dedup_id(), "t:2");
    }
}
