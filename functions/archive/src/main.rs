//! The archive Lambda (the table's stream, filtered to event items that carry an expiry): the
//! one archiver of the app crate writes each expiring task of a batch whole to the bucket
//! `TASKLEDGER_ARCHIVE_BUCKET`, before TTL deletes it. A failure reports the first record of
//! the task that failed, and the event source mapping retries from there; writing a task again
//! is harmless (the newest write holds every event).

use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use taskledger_app::compose;
use taskledger_app::runners::Archiver;
use taskledger_infra::relay::committed;

async fn handle(
    archiver: &Archiver,
    event: LambdaEvent<Event>,
) -> Result<DynamoDbEventResponse, Error> {
    let mut events = Vec::new();
    let mut sequence = Vec::new();
    for record in &event.payload.records {
        let image = serde_json::to_value(&record.change.new_image).unwrap_or_default();
        for committed in committed(&image) {
            events.push(committed);
            sequence.push(record.change.sequence_number.clone());
        }
    }
    let mut response = DynamoDbEventResponse::default();
    if let Err(e) = archiver.archive(&events).await {
        tracing::error!(error = %e, "archive failed");
        let first = events.iter().position(|c| c.task_id == e.task_id);
        let mut failure = DynamoDbBatchItemFailure::default();
        failure.item_identifier = first.and_then(|i| sequence[i].clone());
        response.batch_item_failures.push(failure);
    }
    taskledger_app::compose::report().await;
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (settings, _) = compose::init_lambda()?;
    let archiver = compose::lambda_archiver(&settings).await?;
    run(service_fn(|event| handle(&archiver, event))).await
}
