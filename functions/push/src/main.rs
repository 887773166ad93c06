//! The push worker Lambda (SQS trigger on the FIFO push queue, batch item failures reported).
//! Each delivery is attempted once per receive: delivered → done; a transient failure → the
//! message's visibility is set to the backoff pause and it is reported failed (it comes back,
//! its group waiting behind it, so a subscriber's updates stay in order); given up → a copy with
//! the reason goes to the DLQ and the message is done. With `redrive` as its only argument the
//! binary moves every dead letter back to the push queue and exits.

use std::sync::Arc;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use taskledger_domain::push::RetryPolicy;
use taskledger_infra::sqs::{self, PushOutcome, ReceivedPush, SqsPushQueue};
use taskledger_infra::webhook::WebhookSender;

struct Worker {
    queue: SqsPushQueue,
    sender: WebhookSender,
    retry: RetryPolicy,
}

fn jitter() -> f64 {
    (uuid::Uuid::new_v4().as_u128() % 1_000_000) as f64 / 1_000_000.0
}

async fn handle(w: &Worker, event: LambdaEvent<SqsEvent>) -> Result<SqsBatchResponse, Error> {
    let records = event.payload.records;
    let msgs: Vec<ReceivedPush> = records
        .iter()
        .map(|r| {
            let attr = |k: &str| r.attributes.get(k).cloned();
            ReceivedPush {
                body: r.body.clone().unwrap_or_default(),
                receipt_handle: r.receipt_handle.clone().unwrap_or_default(),
                receive_count: attr("ApproximateReceiveCount")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1),
                first_receive_ms: attr("ApproximateFirstReceiveTimestamp")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                group: attr("MessageGroupId").unwrap_or_default(),
            }
        })
        .collect();
    let outcomes = w
        .queue
        .process_batch(&w.sender, &w.retry, &msgs, jitter)
        .await;
    let mut response = SqsBatchResponse::default();
    for (record, outcome) in records.iter().zip(outcomes) {
        let id = record.message_id.clone().unwrap_or_default();
        let done = match outcome {
            Ok(PushOutcome::Delivered) => {
                tracing::info!(message_id = %id, "delivered");
                true
            }
            Ok(PushOutcome::DeadLettered(reason)) => {
                tracing::warn!(message_id = %id, %reason, "dead-lettered");
                true
            }
            Ok(PushOutcome::RetryIn(pause)) => {
                tracing::info!(message_id = %id, pause_s = pause.as_secs(), "retrying later");
                false
            }
            Err(e) => {
                tracing::error!(message_id = %id, error = %e, "delivery bookkeeping failed");
                false
            }
        };
        if !done {
            // Not deleted: it comes back when its visibility pause ends.
            let mut f = BatchItemFailure::default();
            f.item_identifier = id;
            response.batch_item_failures.push(f);
        }
    }
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    taskledger_infra::lambda::init_logging();
    let url = std::env::var("TASKLEDGER_PUSH_QUEUE_URL")
        .map_err(|_| "TASKLEDGER_PUSH_QUEUE_URL must name the push queue")?;
    let dlq = std::env::var("TASKLEDGER_PUSH_DLQ_URL")
        .map_err(|_| "TASKLEDGER_PUSH_DLQ_URL must name the push dead-letter queue")?;
    let env = taskledger_infra::lambda::push_from_env()?;
    let queue = SqsPushQueue::new(sqs::client_from_env().await, url, dlq);
    if std::env::args().nth(1).as_deref() == Some("redrive") {
        let n = queue.redrive().await?;
        println!("moved {n} dead letters back to the push queue");
        return Ok(());
    }
    let worker = Arc::new(Worker {
        sender: WebhookSender::new(env.policy, env.signer)?,
        queue,
        retry: env.retry,
    });
    run(service_fn(|event| handle(&worker, event))).await
}
