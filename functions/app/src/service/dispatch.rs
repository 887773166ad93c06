//! In-process dispatch (stores without a durable feed, tests): turns committed by this process
//! run right away on the turn handler, one at a time per task. Nothing survives a crash here;
//! the durable paths are the embedded feed relay and the stream relay with its queue.

use std::sync::{Arc, Weak};

use taskledger_domain::agent::turns::AgentTurn;
use tokio::sync::mpsc::UnboundedReceiver;
use tracing::{debug, warn};

use super::turns::{run_turn_retrying, Delivery};
use super::Service;
use crate::per_task::PerTask;

/// Runs the service's committed turns until the service is gone.
pub fn start(svc: &Arc<Service>, mut turns: UnboundedReceiver<AgentTurn>) {
    let svc: Weak<Service> = Arc::downgrade(svc);
    let per_task = PerTask::default();
    tokio::spawn(async move {
        while let Some(turn) = turns.recv().await {
            let Some(svc) = svc.upgrade() else { return };
            per_task.submit(&turn.task_id.to_string(), async move {
                match run_turn_retrying(&svc, &turn, Delivery::Once).await {
                    Ok(outcome) => debug!(task_id = %turn.task_id, ?outcome, "turn handled"),
                    // Not even the give-up could be recorded (the store is down).
                    Err(e) => warn!(task_id = %turn.task_id, error = %e, "turn failed"),
                }
            });
        }
    });
}
