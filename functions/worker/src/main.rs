//! The agent worker Lambda (SQS trigger on the FIFO turn queue and its dead-letter queue): runs
//! each turn; a turn that fails is reported as a batch item failure (retried), and one that
//! fails on its last receive, or reaches the dead-letter queue, is given up (its task fails).
//! Duplicates and stale turns do nothing. A turn that would run past the invocation's deadline
//! (less `TASKLEDGER_TURN_MARGIN_SECS`) continues in a new turn.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use taskledger_app::agent::TurnBudget;
use taskledger_app::compose::{self, TurnMessage};
use taskledger_app::{Dispatch, ServiceSettings};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (settings, lambda) = compose::init_lambda()?;
    // The deployment's agent (a custom one built in: functions/example-agent).
    let agent = compose::worker_agent(&settings, taskledger_example_agent::by_name).await?;
    // New work (a sub-task, a follow-up) reaches the queue through the stream relay.
    let service = ServiceSettings {
        dispatch: Dispatch::Feed,
        ..Default::default()
    };
    let svc = compose::lambda_service(agent, service, &settings).await?;
    let margin = lambda.turn_margin();
    run(service_fn(|event: LambdaEvent<SqsEvent>| {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        // Long turns stop `margin` before the invocation's deadline and continue in a new turn.
        let budget = TurnBudget::from_epoch_deadline(event.context.deadline, now_ms, margin);
        let messages = event.payload.records.into_iter();
        let messages = messages
            .map(|r| {
                let arn = r.event_source_arn.as_deref();
                TurnMessage::from_record(r.message_id, r.body, &r.attributes, arn)
            })
            .collect();
        let svc = svc.clone();
        async move {
            let mut response = SqsBatchResponse::default();
            for id in compose::run_turn_batch(&svc, budget, messages).await {
                let mut failure = BatchItemFailure::default();
                failure.item_identifier = id;
                response.batch_item_failures.push(failure);
            }
            taskledger_app::compose::report().await;
            Ok::<_, Error>(response)
        }
    }))
    .await
}
