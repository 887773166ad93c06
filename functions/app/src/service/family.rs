//! Tasks that belong together: after a commit, a child's new state is recorded on its parent
//! (a parent whose children are all resolved goes back to its agent) and a canceled parent
//! cancels its unfinished children; the agent spawns sub-tasks here.

use std::future::Future;
use std::pin::Pin;

use taskledger_domain::error::ErrorKind;
use taskledger_domain::ids::{ParticipantId, TaskId};
use taskledger_domain::ports::StoreError;
use taskledger_domain::task::{child_creation, TaskAggregate, TaskCommand, TaskEvent, TaskHead};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::Message;
use tracing::warn;

use super::ledger::Keys;
use super::{Change, Service};
use crate::error::AppError;

impl Service {
    /// Consequences for related tasks: a child's state is recorded on its parent; a canceled
    /// parent cancels its unfinished children.
    pub(crate) fn follow_up<'a>(
        &'a self,
        state: &'a TaskAggregate,
        events: &'a [TaskEvent],
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            let Some(head) = state.head() else { return };
            let status_changed = events.iter().any(|e| {
                matches!(
                    e,
                    TaskEvent::StatusChanged { .. }
                        | TaskEvent::TaskCanceled { .. }
                        | TaskEvent::HelpRequested { .. }
                        | TaskEvent::HelpAnswered { .. }
                )
            });
            if status_changed {
                for parent in head.local_parents() {
                    self.record_on_parent(&parent, head).await;
                    self.surface_on_parent(&parent, head).await;
                }
            }
            self.forward_to_child(head, events).await;
            if events
                .iter()
                .any(|e| matches!(e, TaskEvent::TaskCanceled { .. }))
            {
                for child in head.unresolved_children() {
                    self.cancel_child(&child).await;
                }
            }
        })
    }

    async fn cancel_child(&self, child_id: &TaskId) {
        let r = self
            .execute(Change::by_agent(child_id), |s| {
                if s.head().is_some_and(|h| h.status.state.is_terminal()) {
                    return vec![];
                }
                vec![TaskCommand::CancelTask {
                    at: Timestamp::now(),
                    by: None,
                }]
            })
            .await;
        if let Err(e) = r {
            warn!(task_id = %child_id, error = %e, "could not cancel a sub-task");
        }
    }

    async fn record_on_parent(&self, parent_id: &TaskId, child: &TaskHead) {
        let summary = child
            .status
            .message
            .as_ref()
            .map(Message::text)
            .unwrap_or_default();
        let (child_id, state) = (&child.id, child.status.state);
        let r = self
            .execute(Change::by_agent(parent_id), |_| {
                vec![TaskCommand::RecordChildState {
                    child_id: child_id.clone(),
                    state,
                    summary: summary.clone(),
                    at: Timestamp::now(),
                }]
            })
            .await;
        // The agent is woken by the commit's AgentWorkRequested, when all are resolved.
        if let Err(e) = r {
            warn!(task_id = %parent_id, error = %e, "could not record a sub-task's state");
        }
    }

    /// Spawns a sub-task `<parent>.<n>` (same context, linked both ways, optionally from a plan
    /// step). With `for_participant`, it is a task for that participant: they become its
    /// assignee (the previous assignee a watcher) and it waits for their first message.
    pub async fn spawn_subtask(
        &self,
        parent_id: &TaskId,
        name: &str,
        goal: &str,
        step: Option<String>,
        for_participant: Option<ParticipantId>,
    ) -> Result<TaskId, AppError> {
        let linked = self
            .execute(Change::by_agent(parent_id), |_| {
                vec![TaskCommand::SpawnSubTask {
                    step: step.clone(),
                    at: Timestamp::now(),
                }]
            })
            .await?;
        let child_id = linked
            .events
            .iter()
            .find_map(|e| match e {
                TaskEvent::SubTaskSpawned { child_id, .. } => Some(child_id.clone()),
                _ => None,
            })
            .ok_or_else(|| AppError::protocol(ErrorKind::Internal, "no sub-task was spawned"))?;
        let head = linked
            .state
            .head()
            .ok_or_else(|| AppError::task_not_found(parent_id.as_str()))?;
        let create = child_creation(
            head,
            child_id.clone(),
            name,
            goal,
            for_participant.as_ref(),
            Timestamp::now(),
        )?;
        let created = self
            .execute(
                Change::by_agent(&child_id).creating(Keys::default()),
                |_| vec![TaskCommand::CreateTask(create.clone())],
            )
            .await;
        match created {
            // Already created by an earlier attempt of this same spawn.
            Ok(_) | Err(AppError::Store(StoreError::Conflict(_))) => {}
            Err(e) => return Err(e),
        }
        Ok(child_id)
    }
}
