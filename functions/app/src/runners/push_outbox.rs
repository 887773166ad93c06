//! The embedded push worker: sends what the store's outbox holds, one delivery at a time per
//! (task, config) so each subscriber sees updates in event order, many groups at once. A failed
//! attempt is scheduled again by the retry policy or dead-lettered with its reason. The AWS
//! path (stream relay → SQS FIFO push queue → push worker Lambda) applies the same policy.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use taskledger_domain::ports::{OutboxEntry, PushOutbox, WebhookSend};
use taskledger_domain::push::{NextStep, RetryPolicy};
use taskledger_domain::time::Timestamp;
use tracing::{debug, info, warn, Instrument};

use crate::locks::jitter;
use crate::service::Service;

/// Deliveries in flight at once.
pub const MAX_IN_FLIGHT: usize = 64;
/// The worker looks at the outbox at least this often.
const IDLE: Duration = Duration::from_millis(500);

fn now_ms() -> i64 {
    Timestamp::now().unix_nanos() / 1_000_000
}

/// One attempt at one outbox entry, and its bookkeeping.
pub async fn attempt(
    outbox: &dyn PushOutbox,
    sender: &dyn WebhookSend,
    retry: &RetryPolicy,
    entry: &OutboxEntry,
) -> NextStep {
    let d = &entry.delivery;
    let started = now_ms();
    let first = if entry.first_attempt_ms > 0 {
        entry.first_attempt_ms
    } else {
        started
    };
    let attempts = entry.attempts + 1;
    let result = sender.send(d).await;
    let elapsed = Duration::from_millis((now_ms() - first).max(0) as u64);
    let next = retry.next(&result, attempts, elapsed, jitter());
    let saved = match &next {
        NextStep::Done => {
            debug!(attempts, "delivered");
            outbox.delivered(entry.id).await
        }
        NextStep::RetryIn(pause) => {
            let reason = match &result {
                taskledger_domain::push::AttemptResult::Transient { reason, .. } => reason.clone(),
                _ => String::new(),
            };
            info!(attempts, pause_ms = pause.as_millis() as u64, %reason, "delivery failed, retrying");
            outbox
                .retry_at(
                    entry.id,
                    attempts,
                    first,
                    now_ms() + pause.as_millis() as i64,
                    &reason,
                )
                .await
        }
        NextStep::DeadLetter(reason) => {
            warn!(attempts, %reason, "delivery dead-lettered");
            outbox.dead_letter(entry.id, attempts, reason).await
        }
    };
    if let Err(e) = saved {
        // The entry stays due: it is sent again (receivers de-duplicate by sequence).
        warn!(error = %e, "cannot record a delivery attempt");
    }
    next
}

/// Runs until the process ends: drains due deliveries, then sleeps until the next one falls
/// due, a commit makes new ones, or `IDLE` passes.
pub async fn run_outbox_worker(
    svc: Arc<Service>,
    outbox: Arc<dyn PushOutbox>,
    sender: Arc<dyn WebhookSend>,
    retry: RetryPolicy,
) {
    let busy: Arc<Mutex<HashSet<u64>>> = Arc::default();
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let done = Arc::new(tokio::sync::Notify::new());
    loop {
        let free = slots.available_permits();
        let in_flight: Vec<u64> = busy
            .lock()
            .map(|b| b.iter().copied().collect())
            .unwrap_or_default();
        let entries = if free == 0 {
            Vec::new()
        } else {
            match outbox.due(now_ms(), free as u32, &in_flight).await {
                Ok(e) => e,
                Err(e) => {
                    warn!(error = %e, "push worker cannot read the outbox");
                    Vec::new()
                }
            }
        };
        for entry in entries {
            let Ok(permit) = slots.clone().acquire_owned().await else {
                return;
            };
            if let Ok(mut b) = busy.lock() {
                b.insert(entry.id);
            }
            let (outbox, sender, busy, done) =
                (outbox.clone(), sender.clone(), busy.clone(), done.clone());
            let span = tracing::info_span!(
                "push",
                task_id = %entry.delivery.task_id,
                seq = entry.delivery.seq,
                config_id = %entry.delivery.config.id
            );
            tokio::spawn(
                async move {
                    attempt(outbox.as_ref(), sender.as_ref(), &retry, &entry).await;
                    if let Ok(mut b) = busy.lock() {
                        b.remove(&entry.id);
                    }
                    drop(permit);
                    done.notify_one();
                }
                .instrument(span),
            );
        }
        // Due entries not taken now are in flight (or all slots are): their end wakes us.
        let pause = match outbox.next_due().await {
            Ok(Some(at)) if at > now_ms() => {
                Duration::from_millis((at - now_ms()).min(IDLE.as_millis() as i64) as u64)
            }
            _ => IDLE,
        };
        tokio::select! {
            _ = svc.pushes_committed() => {}
            _ = done.notified() => {}
            _ = tokio::time::sleep(pause) => {}
        }
    }
}
