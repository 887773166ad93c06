//! DMP work/v1 beyond the proposal: `status` requests (the caller's handoffs and where their
//! work items are, `WorkStateV1`, answered at once as a message — one handoff, or the
//! caller's newest), and the work item's lifecycle as an operator moves it.

use serde_json::{json, Value};
use taskledger_domain::extensions::dmp::{ExtensionData, WORK_URI};
use taskledger_domain::ids::{Principal, TaskId};
use taskledger_domain::wire::{ListTasksRequest, Message, Part, PartContent};

use taskledger_domain::extensions::dmp::{WorkArtifact, WorkStatus};
use taskledger_domain::task::{AdvanceWork, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::Task;

use super::{task_id_of, Actor, Change, Service};
use crate::error::AppError;

/// The most handoffs one status answer lists (newest first).
pub const MAX_STATUS_HANDOFFS: i32 = 100;

impl Service {
    /// An operator moves a handoff's approved work item on (`taskledger work advance`; the
    /// agent does the same through its `advance_work` tool), through the one commit path.
    pub async fn advance_work(
        &self,
        task_id: &str,
        status: WorkStatus,
        artifacts: Vec<WorkArtifact>,
    ) -> Result<Task, AppError> {
        let task_id = task_id_of(task_id)?;
        let command = AdvanceWork {
            status,
            artifacts,
            at: Timestamp::now(),
        };
        let state = self
            .execute(Change::by_agent(&task_id), |_| {
                vec![TaskCommand::AdvanceWork(Box::new(command.clone()))]
            })
            .await?
            .state;
        let head = state
            .head
            .as_ref()
            .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
        self.view(
            &head.owner,
            &task_id,
            taskledger_domain::ids::HistoryLength::Last(0),
            true,
        )
        .await
    }

    /// The work state of `task` (one of the caller's handoffs), or of the caller's newest.
    pub(super) async fn work_status(
        &self,
        who: &Principal,
        task: Option<TaskId>,
    ) -> Result<Message, AppError> {
        let states: Vec<Value> = match task {
            Some(id) => {
                let state = self.ledger.visible(Actor::Client(who), &id).await?;
                let handoff = state
                    .head
                    .as_ref()
                    .and_then(|h| h.handoff.as_ref())
                    .ok_or_else(|| {
                        AppError::invalid_params("work.task", format!("task {id} is no handoff"))
                    })?;
                vec![handoff.work_state(id.as_str()).to_value()]
            }
            None => {
                let page = self
                    .list_tasks(
                        who,
                        ListTasksRequest {
                            page_size: Some(MAX_STATUS_HANDOFFS),
                            history_length: Some(0),
                            ..Default::default()
                        },
                    )
                    .await?;
                page.tasks
                    .iter()
                    .filter_map(|t| t.metadata.as_ref()?.get(WORK_URI).cloned())
                    .collect()
            }
        };
        let body = json!({ "handoffs": states });
        let mut reply = Message::agent_text(
            uuid::Uuid::now_v7().to_string(),
            format!("{} handoff(s).", states_len(&body)),
        );
        reply.parts.push(Part {
            content: PartContent::Data(body.clone()),
            metadata: None,
            filename: None,
            media_type: Some("application/json".into()),
        });
        reply.extensions = vec![WORK_URI.into()];
        reply.metadata = Some(serde_json::Map::from_iter([(WORK_URI.to_string(), body)]));
        Ok(reply)
    }
}

fn states_len(body: &Value) -> usize {
    body["handoffs"].as_array().map_or(0, Vec::len)
}
