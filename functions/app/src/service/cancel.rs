//! CancelTask (a client's) and a failure the agent cannot recover from (the agent's): both end
//! a task; the cancel cascades to unfinished sub-tasks through `family`.

use taskledger_domain::ids::{HistoryLength, Principal, TaskId};
use taskledger_domain::task::TaskCommand;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{CancelTaskRequest, Message, Task, TaskState};
use tracing::warn;

use super::{task_id_of, Actor, Change, Service};
use crate::error::AppError;

impl Service {
    pub async fn cancel_task(
        &self,
        who: &Principal,
        req: CancelTaskRequest,
    ) -> Result<Task, AppError> {
        let task_id = task_id_of(&req.id)?;
        let done = self
            .execute(Change::to(Actor::Client(who), &task_id), |_| {
                vec![TaskCommand::CancelTask {
                    at: Timestamp::now(),
                    by: Some(who.clone()),
                }]
            })
            .await?;
        let state = done.state;
        // Whoever works on the task elsewhere (an upstream agent) hears of it once.
        if let (false, Some(head)) = (done.events.is_empty(), state.head()) {
            self.agent().canceled(head).await;
        }
        match state.head() {
            Some(head) => self.answer_from(who, head, HistoryLength::All).await,
            None => Err(AppError::task_not_found(task_id.as_str())),
        }
    }

    /// The agent reports a failure it cannot recover from; the task fails with a reason.
    pub async fn fail_task(&self, task_id: &TaskId, reason: &str) {
        let message = Message::agent_text(uuid::Uuid::new_v4().to_string(), reason);
        let r = self
            .execute(Change::by_agent(task_id), |s| {
                if s.head().is_some_and(|h| h.status.state.is_terminal()) {
                    return vec![];
                }
                vec![TaskCommand::ChangeStatus {
                    state: TaskState::Failed,
                    message: Some(message.clone()),
                    at: Timestamp::now(),
                }]
            })
            .await;
        if let Err(e) = r {
            warn!(task_id = %task_id, error = %e, "could not mark the task failed");
        }
    }
}
