//! The service as the agent sees it: `TaskPort`, every call acting as the agent; and for one
//! turn, the same with the view the turn started from.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::{ends_turn_waiting, TaskAggregate, TaskCommand, TaskEvent};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::Message;

use super::{Change, Service};
use crate::agent::{Build, SubTask, TaskPort};
use crate::error::AppError;

#[async_trait]
impl TaskPort for Service {
    async fn execute(
        &self,
        task_id: &TaskId,
        build: Build<'_>,
    ) -> Result<(Arc<TaskAggregate>, Vec<TaskEvent>), AppError> {
        let c = Service::execute(self, Change::by_agent(task_id), build).await?;
        Ok((c.state, c.events))
    }

    async fn view(&self, task_id: &TaskId) -> Result<View, AppError> {
        self.agent_view(task_id).await
    }

    async fn spawn_subtask(&self, parent: &TaskId, sub: SubTask) -> Result<TaskId, AppError> {
        Service::spawn_subtask(
            self,
            parent,
            &sub.name,
            &sub.goal,
            sub.step,
            sub.for_participant,
        )
        .await
    }

    async fn fail_task(&self, task_id: &TaskId, reason: &str) {
        Service::fail_task(self, task_id, reason).await
    }
}

/// The task as a turn's first step sees it.
pub(crate) type View = (Arc<TaskAggregate>, Vec<Message>);

/// The service for one turn: its first view is of the state the turn started from (no second
/// read of what the turn just looked at); every later view is read as usual. It remembers the
/// latest state of the turn's task it saw committed, for the turn's own record.
pub(crate) struct TurnPort {
    service: Arc<Service>,
    /// The work request whose record joins the turn's commit that leaves the task waiting
    /// (`None`: a turn delivered once needs no record).
    record: Option<u64>,
    first: Mutex<Option<Arc<TaskAggregate>>>,
    latest: Mutex<Arc<TaskAggregate>>,
}

impl TurnPort {
    pub(crate) fn new(
        service: Arc<Service>,
        started_from: Arc<TaskAggregate>,
        record: Option<u64>,
    ) -> Self {
        Self {
            service,
            record,
            first: Mutex::new(Some(started_from.clone())),
            latest: Mutex::new(started_from),
        }
    }

    /// The newest state of the turn's task the turn started from or committed.
    pub(crate) fn latest(&self) -> Option<Arc<TaskAggregate>> {
        self.latest.lock().ok().map(|l| l.clone())
    }
}

#[async_trait]
impl TaskPort for TurnPort {
    async fn execute(
        &self,
        task_id: &TaskId,
        build: Build<'_>,
    ) -> Result<(Arc<TaskAggregate>, Vec<TaskEvent>), AppError> {
        // The turn's own task is decided on the newest state the turn holds of it (the store's
        // version check refuses a stale one, and the command is decided again on the stored
        // state): no read before each of the agent's commits.
        let mine = self
            .latest()
            .filter(|l| l.head().map(|h| &h.id) == Some(task_id));
        let own_task = mine.is_some();
        // A commit that leaves the task waiting ends the turn: the turn's record joins it
        // (one commit, not two; the record after the turn then finds it made).
        let record = self.record.filter(|_| own_task);
        let folded = move |state: &TaskAggregate| {
            let mut commands = build(state);
            if let Some(work_seq) = record.filter(|_| ends_turn_waiting(&commands)) {
                commands.push(TaskCommand::FinishAgentTurn {
                    work_seq,
                    at: Timestamp::now(),
                });
            }
            commands
        };
        let c = self
            .service
            .execute(Change::by_agent(task_id).knowing(mine), &folded)
            .await?;
        if let (true, Ok(mut latest)) = (own_task, self.latest.lock()) {
            if c.state.version > latest.version {
                *latest = c.state.clone();
            }
        }
        Ok((c.state, c.events))
    }

    async fn view(&self, task_id: &TaskId) -> Result<View, AppError> {
        let first = self.first.lock().ok().and_then(|mut f| f.take());
        match first {
            Some(state) if state.head().is_some_and(|h| &h.id == task_id) => {
                let history = self.service.history_of(&state, task_id).await?;
                Ok((state, history))
            }
            _ => self.service.agent_view(task_id).await,
        }
    }

    async fn spawn_subtask(&self, parent: &TaskId, sub: SubTask) -> Result<TaskId, AppError> {
        TaskPort::spawn_subtask(self.service.as_ref(), parent, sub).await
    }

    async fn fail_task(&self, task_id: &TaskId, reason: &str) {
        TaskPort::fail_task(self.service.as_ref(), task_id, reason).await
    }
}
