//! The agent worker Lambda (SQS trigger on the FIFO turn queue): runs each turn; a turn that
//! fails is reported as a batch item failure (retried, then dead-lettered), the others are done.
//! Duplicates and stale turns do nothing. A turn that would run past the invocation's deadline
//! (less `TASKLEDGER_TURN_MARGIN_SECS`) continues in a new turn.

use std::sync::Arc;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use taskledger_app::agent::{ScenarioTimings, TurnBudget};
use taskledger_app::compose::{self, AgentChoice, DEFAULT_TURN_MARGIN};
use taskledger_app::runners::handle_turn_within;
use taskledger_app::{Dispatch, Service, ServiceSettings};

async fn handle(
    svc: &Arc<Service>,
    budget: TurnBudget,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, Error> {
    let mut response = SqsBatchResponse::default();
    for record in event.payload.records {
        let id = record.message_id.clone().unwrap_or_default();
        let Some(turn) = record
            .body
            .as_deref()
            .and_then(|b| serde_json::from_str(b).ok())
        else {
            tracing::warn!(message_id = %id, "unreadable turn message dropped");
            continue;
        };
        if let Err(e) = handle_turn_within(svc, &turn, budget).await {
            tracing::error!(task_id = %turn.task_id, error = %e, "turn failed");
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            response.batch_item_failures.push(failure);
        }
    }
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    taskledger_infra::lambda::init_logging();
    let agent = AgentChoice::from_env()?
        .build(ScenarioTimings::default())
        .await?;
    // New work (a sub-task, a follow-up) reaches the queue through the stream relay.
    let settings = ServiceSettings {
        dispatch: Dispatch::Feed,
        ..Default::default()
    };
    let svc = compose::lambda_service(agent, settings).await?;
    let margin = compose::secs_from_env("TASKLEDGER_TURN_MARGIN_SECS", DEFAULT_TURN_MARGIN)?;
    run(service_fn(|event: LambdaEvent<SqsEvent>| {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        // Long turns stop `margin` before the invocation's deadline and continue in a new turn.
        let budget = TurnBudget::from_epoch_deadline(event.context.deadline, now_ms, margin);
        let svc = svc.clone();
        async move { handle(&svc, budget, event).await }
    }))
    .await
}
