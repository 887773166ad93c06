//! The stream relay Lambda (DynamoDB Streams trigger): committed `AgentWorkRequested` events
//! become agent turns on the FIFO queue (group = task, de-duplication id = task + sequence), so a
//! replayed batch enqueues nothing new. Event items carrying a pushed update become webhook
//! deliveries on the push queue (one per subscription registered before the event). A failure
//! reports the first unrelayed record, and the event source mapping retries from there
//! (bisecting on error).

use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use taskledger_domain::turns::{turns_from_stream, StreamedEvent, TurnQueue};
use taskledger_infra::dynamo::DynamoStore;
use taskledger_infra::push_relay;
use taskledger_infra::sqs::{self, SqsPushQueue, SqsTurnQueue};

/// The update an event item pushes (its `push` attribute), if any.
fn pushed(image: &serde_json::Value) -> Option<String> {
    image
        .get(taskledger_infra::dynamo::store::PUSH_ATTR)
        .and_then(|v| v.get("S"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// A committed event item (`pk = T#<task>`, `sk = E#<seq>`) from a stream record's new image.
fn streamed(image: &serde_json::Value) -> Option<StreamedEvent> {
    let s = |k: &str| {
        image
            .get(k)
            .and_then(|v| v.get("S"))
            .and_then(|v| v.as_str())
    };
    let task_id = s("pk")?.strip_prefix("T#")?.to_string();
    let seq = s("sk")?.strip_prefix("E#")?.parse().ok()?;
    Some(StreamedEvent {
        task_id,
        seq,
        event_type: s("type")?.to_string(),
    })
}

struct Relay {
    turns: SqsTurnQueue,
    /// Absent when push notifications are off.
    push: Option<(DynamoStore, SqsPushQueue)>,
}

async fn relay_one(
    relay: &Relay,
    item: &StreamedEvent,
    image: &serde_json::Value,
) -> Result<(), String> {
    let turns = turns_from_stream(std::slice::from_ref(item));
    if !turns.is_empty() {
        relay
            .turns
            .enqueue(&turns)
            .await
            .map_err(|e| e.to_string())?;
    }
    if let (Some(body), Some((store, queue))) = (pushed(image), &relay.push) {
        let n = push_relay::relay_update(store, queue, &item.task_id, item.seq, &body)
            .await
            .map_err(|e| e.to_string())?;
        tracing::debug!(task_id = %item.task_id, seq = item.seq, deliveries = n, "pushed");
    }
    Ok(())
}

async fn handle(relay: &Relay, event: LambdaEvent<Event>) -> Result<DynamoDbEventResponse, Error> {
    let mut response = DynamoDbEventResponse::default();
    for record in &event.payload.records {
        let image = serde_json::to_value(&record.change.new_image).unwrap_or_default();
        let Some(item) = streamed(&image) else {
            continue;
        };
        if let Err(e) = relay_one(relay, &item, &image).await {
            tracing::error!(task_id = %item.task_id, seq = item.seq, error = %e, "relay failed");
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = record.change.sequence_number.clone();
            response.batch_item_failures.push(failure);
            // Records after a failure are retried with it, in order.
            break;
        }
    }
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    taskledger_infra::lambda::init_logging();
    let url = std::env::var("TASKLEDGER_TURNS_QUEUE_URL")
        .map_err(|_| "TASKLEDGER_TURNS_QUEUE_URL must name the agent-turn queue")?;
    let client = sqs::client_from_env().await;
    let push = match std::env::var("TASKLEDGER_PUSH_QUEUE_URL") {
        Ok(q) if !q.is_empty() => {
            let dlq = std::env::var("TASKLEDGER_PUSH_DLQ_URL").unwrap_or_default();
            let store = taskledger_infra::lambda::store_from_env().await?;
            Some(((*store).clone(), SqsPushQueue::new(client.clone(), q, dlq)))
        }
        _ => None,
    };
    let relay = Relay {
        turns: SqsTurnQueue::new(client, url),
        push,
    };
    run(service_fn(|event| handle(&relay, event))).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_items_become_streamed_events_and_other_items_are_skipped() {
        let image = serde_json::json!({"pk": {"S": "T#abc.1"}, "sk": {"S": "E#00000000000000000007"}, "type": {"S": "AgentWorkRequested"}});
        assert_eq!(
            streamed(&image),
            Some(StreamedEvent {
                task_id: "abc.1".into(),
                seq: 7,
                event_type: "AgentWorkRequested".into()
            })
        );
        let head = serde_json::json!({"pk": {"S": "T#abc"}, "sk": {"S": "HEAD"}});
        assert_eq!(streamed(&head), None);
    }
}
