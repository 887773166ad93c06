//! What an operator does to a deployment's tasks from the command line, on the same store
//! the servers use: `taskledger work advance` moves a handoff's approved work item on
//! (DMP work/v1), committed through the one commit path like any change.

use std::sync::Arc;

use taskledger_app::agent::ScenarioAgent;
use taskledger_app::{Dispatch, Service, ServiceSettings};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::extensions::dmp::{WorkArtifact, WorkStatus};
use taskledger_domain::retention::Retention;
use taskledger_domain::wire::Task;

use crate::{open_store, LocalError, Storage};

/// Moves the work item of handoff `task` to `status`, reporting `artifacts` (work/v1 kinds:
/// answer, pr, diffstat, evidence); the task as it is afterwards.
pub async fn advance_work(
    storage: &Storage,
    retention: &Retention,
    task: &str,
    status: &str,
    artifacts: Vec<WorkArtifact>,
) -> Result<Task, LocalError> {
    let stores = open_store(storage, retention).await?;
    // The servers' relays pick the commit up from the feed (pushes, streams).
    let service = Service::new(
        stores.events,
        stores.reads,
        ScenarioAgent::new(Default::default()),
        // Commands write no page tokens: any key will do.
        CursorCodec::new(uuid::Uuid::new_v4().as_bytes().to_vec()),
        ServiceSettings {
            dispatch: Dispatch::Feed,
            retention: retention.clone(),
            ..Default::default()
        },
    );
    let service: Arc<Service> = service;
    Ok(service
        .advance_work(task, WorkStatus::parse(status), artifacts)
        .await?)
}
