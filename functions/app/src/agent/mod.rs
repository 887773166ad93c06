//! The agent that works on tasks after a message is committed, behind a small port: an agent
//! sees only `TaskPort` (commit commands, read the task, spawn a sub-task, fail the task), never
//! the service. The built-in agent is the model loop (`llm`) on the deterministic scripted
//! model, behind a thin rule layer for what the conformance kits ask that no model can do
//! (`scenario`: the a2a-tck kit's `messageId` prefixes, ACTS's text prefixes in `acts`; the
//! steps both play, in `steps`).
//!
//! **The agent port is public API** (issue 52, ADR 034): a team writes its own agent in Rust by
//! implementing `Agent` — one `run_turn` per turn, on the message that asked for it — against
//! `TaskPort`: `view` reads the task and its history; `execute` commits `TaskCommand`s
//! (messages, artifacts and their chunks, status changes, INPUT_REQUIRED with a question,
//! tool approvals) through the one commit path, each decided by the task's rules and held by
//! the gate; `spawn_subtask` and `fail_task`. A turn that runs out of its `TurnBudget` records
//! `ContinueAgentWork` and returns `TurnEnd::Continued`. The scenario agent, the model loop,
//! the upstream forwarder (`crate::upstream`) and the example crate `functions/example-agent`
//! (`--custom-agent greeter`) all implement it.

pub mod acts;
pub mod llm;
pub mod scenario;
pub mod steps;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use taskledger_domain::ids::{ParticipantId, TaskId};
use taskledger_domain::task::{TaskAggregate, TaskCommand, TaskEvent, TaskHead};
use taskledger_domain::wire::Message;

use crate::error::AppError;

pub use acts::ActsTimings;
pub use llm::{LlmAgent, DEFAULT_MAX_TURNS};
pub use scenario::{Scenario, ScenarioAgent, ScenarioTimings};

/// What a Lambda invocation leaves, by default, for the step in flight and the commit of a
/// continuation: a model call may take its timeout several times over with retries.
pub const DEFAULT_TURN_MARGIN: Duration = Duration::from_secs(300);

/// The commands an agent commits, decided on the task's state at the moment of the commit.
pub type Build<'a> = &'a (dyn Fn(&TaskAggregate) -> Vec<TaskCommand> + Send + Sync);

/// A sub-task the agent starts: its name and goal, the plan step it belongs to (its id or name),
/// and whether it is a task for a participant (who then becomes its assignee).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubTask {
    pub name: String,
    pub goal: String,
    pub step: Option<String>,
    pub for_participant: Option<ParticipantId>,
}

/// What an agent may do to tasks. The service implements it; agents depend on nothing else.
#[async_trait]
pub trait TaskPort: Send + Sync {
    /// Commits the commands `build` decides (decided again after a lost race); returns the
    /// state reached and the events committed (none: nothing to do).
    async fn execute(
        &self,
        task_id: &TaskId,
        build: Build<'_>,
    ) -> Result<(Arc<TaskAggregate>, Vec<TaskEvent>), AppError>;
    /// The task's state and its whole history.
    async fn view(&self, task_id: &TaskId) -> Result<(Arc<TaskAggregate>, Vec<Message>), AppError>;
    /// Starts a sub-task `<parent>.<n>`; returns its id.
    async fn spawn_subtask(&self, parent: &TaskId, sub: SubTask) -> Result<TaskId, AppError>;
    /// Fails the task with a reason the agent cannot recover from (a finished task stays so).
    async fn fail_task(&self, task_id: &TaskId, reason: &str);
}

/// How long a turn may keep starting model steps: until `margin` before its deadline. A turn
/// always takes its first step, so every turn makes progress whatever the budget.
#[derive(Debug, Clone, Copy)]
pub struct TurnBudget {
    stop_at: Option<tokio::time::Instant>,
}

impl TurnBudget {
    /// No deadline (the embedded worker, in-process dispatch).
    pub fn unlimited() -> Self {
        Self { stop_at: None }
    }

    /// Stop starting steps `margin` before `deadline`.
    pub fn until(deadline: tokio::time::Instant, margin: Duration) -> Self {
        Self {
            stop_at: Some(
                deadline
                    .checked_sub(margin)
                    .unwrap_or_else(tokio::time::Instant::now),
            ),
        }
    }

    /// From a deadline in milliseconds since the Unix epoch (a Lambda invocation's) and the
    /// wall clock now, in the same unit.
    pub fn from_epoch_deadline(deadline_ms: u64, now_ms: u64, margin: Duration) -> Self {
        let left = Duration::from_millis(deadline_ms.saturating_sub(now_ms));
        Self::until(tokio::time::Instant::now() + left, margin)
    }

    /// Time left before no further step should start (none: no deadline).
    pub fn remaining(&self) -> Option<Duration> {
        self.stop_at
            .map(|t| t.saturating_duration_since(tokio::time::Instant::now()))
    }

    /// True once no further step should start.
    pub fn exhausted(&self) -> bool {
        self.stop_at
            .is_some_and(|t| tokio::time::Instant::now() >= t)
    }
}

/// How a queued turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// The agent is done with this work (the task may be finished or waiting).
    Finished,
    /// Out of time: a continuation was recorded and goes on in its own turn.
    Continued,
}

#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// A direct reply instead of a task (`{"message": …}`), for a message that starts no task.
    fn direct_reply(&self, _message: &Message) -> Option<Message> {
        None
    }

    /// The one entry point: runs one turn within `budget`, on `input` (the message that
    /// requested it) or with none on the task as it is (resolved sub-tasks, a continuation).
    /// An error leaves the turn unfinished, to be delivered again.
    async fn run_turn(
        &self,
        tasks: Arc<dyn TaskPort>,
        task_id: TaskId,
        input: Option<Message>,
        budget: TurnBudget,
    ) -> Result<TurnEnd, AppError>;

    /// The task was canceled (the commit is made): whoever works on it elsewhere is told —
    /// the upstream forwarder cancels the upstream task. Nothing by default.
    async fn canceled(&self, _head: &TaskHead) {}

    /// What the deployment's card advertises of the agent besides its own (an upstream's
    /// skills and modes); none by default.
    fn advertised(&self) -> Option<taskledger_domain::agent::upstream::Advertised> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_spent_margin_before_its_deadline() {
        assert!(!TurnBudget::unlimited().exhausted());
        let now = tokio::time::Instant::now();
        let margin = DEFAULT_TURN_MARGIN;
        let second = Duration::from_secs(1);
        assert!(!TurnBudget::until(now + margin + second, margin).exhausted());
        assert!(TurnBudget::until(now + margin, margin).exhausted());
        assert!(TurnBudget::until(now + margin - second, margin).exhausted());
        assert!(
            TurnBudget::until(now, Duration::ZERO).exhausted(),
            "a tiny budget"
        );
        // a Lambda deadline in epoch milliseconds
        let at = 1_800_000_000_000u64;
        assert!(!TurnBudget::from_epoch_deadline(at + 900_000, at, margin).exhausted());
        assert!(TurnBudget::from_epoch_deadline(at + 200_000, at, margin).exhausted());
        assert!(
            TurnBudget::from_epoch_deadline(at - 1, at, margin).exhausted(),
            "a deadline already passed"
        );
    }
}
