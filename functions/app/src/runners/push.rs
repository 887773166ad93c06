//! The one push attempt loop, on every queue: send a delivery, let the retry policy decide what
//! follows (done, a retry after a pause, a dead letter with the reason) and record it in the
//! queue's ledger — the embedded outbox (one delivery at a time per task and config, many groups
//! at once) or the SQS push queue (the Lambda and the local poller, a received batch at a time,
//! the rest of a group held behind a retry so each subscriber sees its updates in order).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use taskledger_domain::ports::{DeliveryAttempt, PushLedger, PushOutbox, WebhookSend};
use taskledger_domain::push::{AttemptResult, NextStep, RetryPolicy};
use taskledger_domain::time::Timestamp;
use tokio::sync::Notify;
use tracing::{debug, info, warn, Instrument};

use crate::per_task::jitter;
use crate::telemetry::{metrics, PushOutcome};

/// Deliveries in flight at once (embedded outbox).
pub const MAX_IN_FLIGHT: usize = 64;
/// The outbox worker looks at the outbox at least this often.
const IDLE: Duration = Duration::from_millis(500);
/// A delivery whose bookkeeping failed comes back after this long (its group waits).
const BOOKKEEPING_PAUSE: Duration = Duration::from_secs(1);

fn now_ms() -> i64 {
    Timestamp::now().unix_nanos() / 1_000_000
}

/// One attempt at one delivery, and its record in the ledger.
pub async fn attempt(
    ledger: &dyn PushLedger,
    sender: &dyn WebhookSend,
    retry: &RetryPolicy,
    a: &DeliveryAttempt,
) -> NextStep {
    let started = now_ms();
    let first = if a.first_attempt_ms > 0 {
        a.first_attempt_ms
    } else {
        started
    };
    let attempts = a.attempts + 1;
    // The webhook request joins the update's trace through this attempt's span (ADR 033) —
    // when the webhook is whose request brought the trace; another principal's starts a trace
    // of its own, linked to the update's, and gets no `tracestate`.
    let sent = std::time::Instant::now();
    let update = crate::telemetry::trace::stored(a.delivery.trace.as_deref());
    let theirs = update
        .as_ref()
        .and_then(|t| t.to_receiver(a.delivery.to.as_ref()))
        .cloned();
    // A client span: the one A2A call the server makes, a push notification (ADR 033).
    let span = crate::exported_span!(
        "push.delivery",
        otel.kind = "client",
        a2a.task.id = %a.delivery.task_id,
        task_id = %a.delivery.task_id,
        seq = a.delivery.seq,
        attempt = attempts
    );
    match &theirs {
        Some(t) => crate::telemetry::trace::set_parent(&span, Some(t)),
        None => crate::telemetry::trace::own_trace(&span, update.as_ref()),
    }
    let state = theirs
        .as_ref()
        .and_then(|p| p.tracestate().map(str::to_string));
    // Exported, the attempt's span (a child of theirs, or a root of its own); unexported,
    // theirs as it came, or nothing.
    let here = crate::telemetry::trace::of_span(&span).map(|c| c.with_state(state));
    let mut d = a.delivery.clone();
    d.trace = here.or(theirs).map(|t| t.to_stored());
    let result = sender.send(&d).instrument(span).await;
    // What is kept and shown of a failure carries no URL (`push::failure_reason`).
    let result = result.cleaned();
    let took = sent.elapsed();
    let elapsed = Duration::from_millis((now_ms() - first).max(0) as u64);
    let next = retry.next(&result, attempts, elapsed, jitter());
    let outcome = match next {
        NextStep::Done => PushOutcome::Delivered,
        NextStep::RetryIn(_) => PushOutcome::Retried,
        NextStep::DeadLetter(_) => PushOutcome::DeadLettered,
    };
    metrics().push(outcome, took);
    let saved = match next {
        NextStep::Done => {
            debug!(attempts, "delivered");
            ledger.delivered(a).await.map(|()| NextStep::Done)
        }
        NextStep::RetryIn(pause) => {
            let reason = match &result {
                AttemptResult::Transient { reason, .. } => reason.clone(),
                _ => String::new(),
            };
            info!(attempts, pause_ms = pause.as_millis() as u64, %reason, "delivery failed, retrying");
            ledger
                .retry_in(a, attempts, first, pause, &reason)
                .await
                .map(NextStep::RetryIn)
        }
        NextStep::DeadLetter(reason) => {
            warn!(attempts, %reason, "delivery dead-lettered");
            ledger
                .dead_letter(a, attempts, &reason)
                .await
                .map(|()| NextStep::DeadLetter(reason))
        }
    };
    match saved {
        Ok(next) => next,
        Err(e) => {
            // The delivery is not done: it comes back (receivers de-duplicate by delivery id).
            warn!(error = %e, "cannot record a delivery attempt");
            NextStep::RetryIn(BOOKKEEPING_PAUSE)
        }
    }
}

/// Attempts a received batch in order. Once a delivery of a group is not done, the later ones
/// of that group are held for the same pause instead of attempted, so each subscriber gets its
/// updates in event order. Outcomes match the input positions; a hold is a `RetryIn`.
pub async fn attempt_batch(
    ledger: &dyn PushLedger,
    sender: &dyn WebhookSend,
    retry: &RetryPolicy,
    batch: &[DeliveryAttempt],
) -> Vec<NextStep> {
    let mut held: HashMap<String, Duration> = HashMap::new();
    let mut out = Vec::with_capacity(batch.len());
    for a in batch {
        let group = a.delivery.group();
        if let Some(pause) = held.get(&group).copied() {
            let applied = ledger.hold(a, pause).await.unwrap_or_else(|e| {
                warn!(error = %e, "cannot hold a delivery behind its group");
                pause
            });
            out.push(NextStep::RetryIn(applied));
            continue;
        }
        let next = attempt(ledger, sender, retry, a).await;
        if let NextStep::RetryIn(pause) = next {
            held.insert(group, pause);
        }
        out.push(next);
    }
    out
}

/// The embedded push worker, until the process ends: drains due deliveries from the outbox
/// (the head of each group only), then sleeps until the next falls due, the relay queues new
/// ones (`queued`), an attempt ends, or `IDLE` passes.
pub async fn run_outbox_worker<S>(
    queued: Arc<Notify>,
    outbox: Arc<S>,
    sender: Arc<dyn WebhookSend>,
    retry: RetryPolicy,
) where
    S: PushOutbox + PushLedger + 'static,
{
    let busy: Arc<Mutex<HashSet<u64>>> = Arc::default();
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let done = Arc::new(Notify::new());
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
                    attempt(outbox.as_ref(), sender.as_ref(), &retry, &entry.attempt()).await;
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
            _ = queued.notified() => {}
            _ = done.notified() => {}
            _ = tokio::time::sleep(pause) => {}
        }
    }
}
