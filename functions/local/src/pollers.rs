//! The serverless path inside the local server, for DynamoDB (an emulator or AWS): a stream
//! poller feeds the same relay the relay Lambda runs, and queue pollers run the same handlers as
//! the agent worker and push worker Lambdas. The only difference is who calls them.

use std::sync::Arc;
use std::time::Duration;

use taskledger_app::compose;
use taskledger_app::runners::{handle_turn, PerTask};
use taskledger_app::Service;
use taskledger_domain::push::RetryPolicy;
use taskledger_infra::sqs::{SqsPushQueue, SqsTurnQueue};
use taskledger_infra::webhook::WebhookSender;
use tracing::{debug, warn, Instrument};

/// Pause between two empty receives (no long polling: the test emulator serves one request at
/// a time).
pub const IDLE: Duration = Duration::from_millis(100);
/// A turn that failed is received again after this long.
const TURN_RETRY_SECS: i32 = 2;

/// Runs turns from the FIFO turn queue: one at a time per task, tasks side by side; a message is
/// deleted once its turn is handled, and a failed one comes back after a pause.
pub async fn run_turn_poller(svc: Arc<Service>, queue: Arc<SqsTurnQueue>) {
    let per_task = PerTask::default();
    loop {
        let msgs = match queue.receive().await {
            Ok(m) => m,
            Err(e) => {
                warn!(error = %e, "turn poller cannot receive");
                Vec::new()
            }
        };
        if msgs.is_empty() {
            tokio::time::sleep(IDLE).await;
            continue;
        }
        for m in msgs {
            let Some(turn) = m.turn.clone() else {
                warn!("unreadable turn message dropped");
                let _ = queue.delete(&m.receipt_handle).await;
                continue;
            };
            let (svc, queue) = (svc.clone(), queue.clone());
            let span =
                tracing::info_span!("turn", task_id = %turn.task_id, work_seq = turn.work_seq);
            per_task.submit(
                &turn.task_id.to_string(),
                async move {
                    match handle_turn(&svc, &turn).await {
                        Ok(outcome) => {
                            debug!(?outcome, "turn handled");
                            if let Err(e) = queue.delete(&m.receipt_handle).await {
                                warn!(error = %e, "cannot delete a handled turn");
                            }
                        }
                        Err(e) => {
                            warn!(error = %e, "turn failed; it comes back");
                            let _ = queue.retry_later(&m.receipt_handle, TURN_RETRY_SECS).await;
                        }
                    }
                }
                .instrument(span),
            );
        }
    }
}

/// Sends deliveries from the FIFO push queue with the push worker's batch processing.
pub async fn run_push_poller(queue: SqsPushQueue, sender: WebhookSender, retry: RetryPolicy) {
    loop {
        let batch = match queue.receive(0).await {
            Ok(b) => b,
            Err(e) => {
                warn!(error = %e, "push poller cannot receive");
                Vec::new()
            }
        };
        if batch.is_empty() {
            tokio::time::sleep(IDLE).await;
            continue;
        }
        let finished = compose::process_push_batch(&queue, &sender, &retry, &batch).await;
        for (m, done) in batch.iter().zip(finished) {
            if done {
                if let Err(e) = queue.delete(&m.receipt_handle).await {
                    warn!(error = %e, "cannot delete a finished delivery");
                }
            }
        }
    }
}
