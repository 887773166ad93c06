//! The serverless path inside the local server, for DynamoDB (an emulator or AWS): a stream
//! poller feeds the same relay the relay Lambda runs, and queue pollers run the same handlers as
//! the agent worker and push worker Lambdas. The only difference is who calls them.

use std::sync::Arc;
use std::time::Duration;

use taskledger_app::compose;
use taskledger_app::runners::{give_up_turn, handle_turn, PerTask, DEAD_LETTERED};
use taskledger_app::Service;
use taskledger_domain::push::RetryPolicy;
use taskledger_infra::sqs::{self, SqsPushQueue, SqsTurnQueue};
use taskledger_infra::webhook::WebhookSender;
use tracing::{debug, warn, Instrument};

/// Pause between two empty receives (no long polling: the test emulator serves one request at
/// a time).
pub const IDLE: Duration = Duration::from_millis(100);
/// The dead-letter queue is looked at this often when empty.
const DLQ_IDLE: Duration = Duration::from_secs(1);
/// A turn that failed is received again after this long.
const TURN_RETRY_SECS: i32 = 2;
/// A received turn is hidden from other receivers for its lease, renewed every third of it
/// while the turn waits or runs: a turn a crashed process held is received again within the
/// lease (plus one `IDLE`), and a live one is never received twice at once.
pub const DEFAULT_TURN_LEASE_SECS: u32 = 30;
/// The shortest lease (a renewal every second) and the longest (the queue's own visibility
/// timeout, which the Lambda worker keeps).
pub const MIN_TURN_LEASE_SECS: u32 = 3;
pub const MAX_TURN_LEASE_SECS: u32 = sqs::VISIBILITY_TIMEOUT_SECS;

/// The lease, checked against its bounds.
pub fn turn_lease(secs: u32) -> Result<u32, String> {
    if (MIN_TURN_LEASE_SECS..=MAX_TURN_LEASE_SECS).contains(&secs) {
        Ok(secs)
    } else {
        Err(format!(
            "{secs} s is not between {MIN_TURN_LEASE_SECS} and {MAX_TURN_LEASE_SECS} s"
        ))
    }
}

/// A received message's lease, renewed until dropped (the turn is done, or the process ends).
struct Lease(tokio::task::JoinHandle<()>);

impl Lease {
    fn hold(queue: Arc<SqsTurnQueue>, receipt_handle: String, secs: u32) -> Self {
        let every = Duration::from_secs(u64::from(secs / 3).max(1));
        let secs = i32::try_from(secs).unwrap_or(i32::MAX);
        Self(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                if let Err(e) = queue.hide_for(&receipt_handle, secs).await {
                    // Not renewed: another receiver may get the turn after the lease ends (the
                    // turn's own checks make a second run do nothing twice).
                    warn!(error = %e, "cannot renew a turn's lease");
                }
            }
        }))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs turns from the FIFO turn queue: one at a time per task, tasks side by side, each under
/// a renewed lease; a message is deleted once its turn is handled, a failed one comes back
/// after a pause, and one that fails on its last receive is given up (its task fails).
pub async fn run_turn_poller(svc: Arc<Service>, queue: Arc<SqsTurnQueue>, lease_secs: u32) {
    let per_task = PerTask::default();
    let lease = i32::try_from(lease_secs).unwrap_or(i32::MAX);
    loop {
        let msgs = match queue.receive(Some(lease)).await {
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
            let lease = Lease::hold(queue.clone(), m.receipt_handle.clone(), lease_secs);
            let (svc, queue) = (svc.clone(), queue.clone());
            let span =
                tracing::info_span!("turn", task_id = %turn.task_id, work_seq = turn.work_seq);
            per_task.submit(
                &turn.task_id.to_string(),
                async move {
                    let done = match handle_turn(&svc, &turn).await {
                        Ok(outcome) => {
                            debug!(?outcome, "turn handled");
                            true
                        }
                        Err(e) if m.receives >= sqs::MAX_RECEIVES => give_up_turn(
                            &svc,
                            &turn,
                            m.receives,
                            &taskledger_app::telemetry::incident(
                                taskledger_app::runners::TURN_FAILED,
                                &e,
                            ),
                        )
                        .await
                        .inspect_err(|e| warn!(error = %e, "cannot give a turn up"))
                        .is_ok(),
                        Err(e) => {
                            warn!(error = %e, receives = m.receives, "turn failed; it comes back");
                            false
                        }
                    };
                    drop(lease);
                    let finished = if done {
                        queue.delete(&m.receipt_handle).await
                    } else {
                        queue.hide_for(&m.receipt_handle, TURN_RETRY_SECS).await
                    };
                    if let Err(e) = finished {
                        warn!(error = %e, "cannot settle a turn message");
                    }
                }
                .instrument(span),
            );
        }
    }
}

/// Gives up each turn the dead-letter queue holds (its receives spent without an answer: a
/// crash or a time-out every time): the task fails saying so.
pub async fn run_turn_dlq_poller(svc: Arc<Service>, dlq: SqsTurnQueue) {
    loop {
        let msgs = match dlq.receive(None).await {
            Ok(m) => m,
            Err(e) => {
                warn!(error = %e, "turn DLQ poller cannot receive");
                Vec::new()
            }
        };
        if msgs.is_empty() {
            tokio::time::sleep(DLQ_IDLE).await;
            continue;
        }
        for m in msgs {
            let given_up = match &m.turn {
                Some(turn) => give_up_turn(&svc, turn, sqs::MAX_RECEIVES, DEAD_LETTERED)
                    .await
                    .inspect_err(|e| warn!(task_id = %turn.task_id, error = %e, "cannot give a dead-lettered turn up"))
                    .is_ok(),
                None => true,
            };
            if given_up {
                if let Err(e) = dlq.delete(&m.receipt_handle).await {
                    warn!(error = %e, "cannot delete a dead-lettered turn");
                }
            }
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
