//! The service as the agent sees it: `TaskPort`, every call acting as the agent.

use async_trait::async_trait;
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::{TaskAggregate, TaskEvent};
use taskledger_domain::wire::Message;

use super::{Actor, Service};
use crate::agent::{Build, SubTask, TaskPort};
use crate::error::AppError;

#[async_trait]
impl TaskPort for Service {
    async fn execute(
        &self,
        task_id: &TaskId,
        build: Build<'_>,
    ) -> Result<(TaskAggregate, Vec<TaskEvent>), AppError> {
        Service::execute(self, Actor::Agent, task_id, None, build).await
    }

    async fn view(&self, task_id: &TaskId) -> Result<(TaskAggregate, Vec<Message>), AppError> {
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
