//! The push worker Lambda (SQS trigger on the FIFO push queue, batch item failures reported),
//! around the one attempt loop of the app crate: delivered or dead-lettered (a copy with the
//! reason on the DLQ) → done; a transient failure → a visibility pause and a reported failure
//! (it comes back, its group waiting behind it, so a subscriber's updates stay in order). With
//! `redrive` as its only argument the binary moves every dead letter back and exits.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use taskledger_app::compose::{process_push_batch, PushWorker};
use taskledger_infra::sqs::{self, ReceivedPush};

async fn handle(
    worker: &PushWorker,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, Error> {
    let records = event.payload.records;
    let msgs: Vec<ReceivedPush> = records.iter().map(sqs::received_push).collect();
    let finished = process_push_batch(&worker.queue, &worker.sender, &worker.retry, &msgs).await;
    let mut response = SqsBatchResponse::default();
    for (record, done) in records.iter().zip(finished) {
        if !done {
            // Not deleted: it comes back when its visibility pause ends.
            let mut f = BatchItemFailure::default();
            f.item_identifier = record.message_id.clone().unwrap_or_default();
            response.batch_item_failures.push(f);
        }
    }
    taskledger_app::compose::report().await;
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (settings, lambda) = taskledger_app::compose::init_lambda()?;
    let worker = taskledger_app::compose::lambda_push_worker(&settings, &lambda).await?;
    if std::env::args().nth(1).as_deref() == Some("redrive") {
        let n = worker.queue.redrive().await?;
        println!("moved {n} dead letters back to the push queue");
        return Ok(());
    }
    run(service_fn(|event| handle(&worker, event))).await
}
