//! The stream relay Lambda (DynamoDB Streams trigger), around the one relay of the app crate:
//! committed work requests become agent turns, pushed updates become webhook deliveries. A
//! failure reports the first unrelayed record, and the event source mapping retries from there
//! (bisecting on error).

use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use taskledger_app::runners::Relay;
use taskledger_infra::relay::committed;

async fn handle(relay: &Relay, event: LambdaEvent<Event>) -> Result<DynamoDbEventResponse, Error> {
    let mut response = DynamoDbEventResponse::default();
    for record in &event.payload.records {
        let image = serde_json::to_value(&record.change.new_image).unwrap_or_default();
        // A record holds the events of one commit (ADR 036); relaying one again is harmless.
        let mut failed = false;
        for committed in committed(&image) {
            if let Err(e) = relay.relay(&committed).await {
                tracing::error!(error = %e, "relay failed");
                failed = true;
                break;
            }
        }
        if failed {
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = record.change.sequence_number.clone();
            response.batch_item_failures.push(failure);
            // Records after a failure are retried with it, in order.
            break;
        }
    }
    taskledger_app::compose::report().await;
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (settings, lambda) = taskledger_app::compose::init_lambda()?;
    let relay = taskledger_app::compose::lambda_relay(&settings, &lambda).await?;
    run(service_fn(|event| handle(&relay, event))).await
}
