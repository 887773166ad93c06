//! A task's agent turns as the board shows them, read from its events: each work request and
//! how its turn ended — finished, folded into a newer request, given up (its task failed,
//! saying so), or ending the task — or that it is still to run.

use crate::task::TaskEvent;
use crate::time::Timestamp;
use crate::wire::TaskState;

/// How a turn ended, as far as the events say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// Not yet: queued or running.
    Open,
    /// The agent finished the work (`AgentTurnFinished`).
    Finished,
    /// A newer request came first; its turn took this work too.
    Folded { into: u64 },
    /// Given up after its attempts or from the dead-letter queue: the task failed.
    GivenUp,
    /// The task reached a terminal state during the turn.
    Ended(TaskState),
}

/// One agent turn: the work request that asked for it and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRecord {
    pub work_seq: u64,
    pub reason: String,
    pub requested_at: Timestamp,
    pub end: TurnEnd,
    /// When it ended (the event that says so).
    pub ended_at: Option<Timestamp>,
}

/// The turns of a task's events `(seq, event, recorded_at)`, oldest first.
pub fn turns(events: &[(u64, TaskEvent, Timestamp)]) -> Vec<TurnRecord> {
    let mut out: Vec<TurnRecord> = Vec::new();
    for (seq, e, at) in events {
        match e {
            TaskEvent::AgentWorkRequested { reason, .. } => {
                for t in out.iter_mut().filter(|t| t.end == TurnEnd::Open) {
                    t.end = TurnEnd::Folded { into: *seq };
                    t.ended_at = Some(*at);
                }
                out.push(TurnRecord {
                    work_seq: *seq,
                    reason: reason.clone(),
                    requested_at: *at,
                    end: TurnEnd::Open,
                    ended_at: None,
                });
            }
            TaskEvent::AgentTurnFinished { work_seq, .. } => {
                for t in out
                    .iter_mut()
                    .filter(|t| t.end == TurnEnd::Open && t.work_seq <= *work_seq)
                {
                    t.end = TurnEnd::Finished;
                    t.ended_at = Some(*at);
                }
            }
            TaskEvent::StatusChanged { state, message, .. } if state.is_terminal() => {
                let given_up = message
                    .as_ref()
                    .and_then(|m| m.message_id.strip_prefix("give-up-"))
                    .and_then(|s| s.parse::<u64>().ok());
                for t in out.iter_mut().filter(|t| t.end == TurnEnd::Open) {
                    t.end = if given_up == Some(t.work_seq) {
                        TurnEnd::GivenUp
                    } else {
                        TurnEnd::Ended(*state)
                    };
                    t.ended_at = Some(*at);
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
#[path = "work_tests.rs"]
mod tests;
