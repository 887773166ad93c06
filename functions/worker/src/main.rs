//! The agent worker Lambda (SQS trigger on the FIFO turn queue): runs each turn; a turn that
//! fails is reported as a batch item failure (retried, then dead-lettered), the others are done.
//! Duplicates and stale turns do nothing (see `taskledger_app::worker`). A turn that would run
//! past the invocation's deadline (less `TASKLEDGER_TURN_MARGIN_SECS`) continues in a new turn.

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use taskledger_app::agent::{
    Agent, ScenarioAgent, ScenarioTimings, TurnBudget, DEFAULT_TURN_MARGIN,
};
use taskledger_app::llm_agent::{LlmAgent, DEFAULT_MAX_TURNS};
use taskledger_app::worker::handle_turn_within;
use taskledger_app::{Dispatch, Service, ServiceSettings};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::turns::AgentTurn;
use taskledger_infra::llm::{Bedrock, OpenAiCompatible, OpenAiSettings};

async fn handle(
    svc: &Arc<Service>,
    margin: Duration,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, Error> {
    // Long turns stop `margin` before the invocation's deadline and continue in a new turn.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let budget = TurnBudget::from_epoch_deadline(event.context.deadline, now_ms, margin);
    let mut response = SqsBatchResponse::default();
    for record in event.payload.records {
        let id = record.message_id.clone().unwrap_or_default();
        let turn: Option<AgentTurn> = record
            .body
            .as_deref()
            .and_then(|b| serde_json::from_str(b).ok());
        let Some(turn) = turn else {
            // Not a turn: nothing to retry.
            tracing::warn!(message_id = %id, "unreadable turn message dropped");
            continue;
        };
        match handle_turn_within(svc, &turn, budget).await {
            Ok(outcome) => tracing::info!(task_id = %turn.task_id, ?outcome, "turn handled"),
            Err(e) => {
                tracing::error!(task_id = %turn.task_id, error = %e, "turn failed");
                let mut failure = BatchItemFailure::default();
                failure.item_identifier = id;
                response.batch_item_failures.push(failure);
            }
        }
    }
    Ok(response)
}

async fn agent() -> Result<Arc<dyn Agent>, Error> {
    let skills = || {
        // Skills are packaged with the function; the folder is named by the environment.
        let skills = std::env::var("TASKLEDGER_SKILLS_DIR")
            .map(|d| taskledger_infra::skills::load_catalog(std::path::Path::new(&d)))
            .unwrap_or_default();
        for p in &skills.problems {
            tracing::warn!(problem = %p, "skill skipped");
        }
        skills
    };
    let turns = std::env::var("TASKLEDGER_MAX_TURNS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(DEFAULT_MAX_TURNS);
    if let Some(model) = std::env::var("TASKLEDGER_BEDROCK_MODEL")
        .ok()
        .filter(|m| !m.is_empty())
    {
        let bedrock = Bedrock::new(Bedrock::client(None).await, model);
        return Ok(LlmAgent::with_skills(Arc::new(bedrock), turns, skills()));
    }
    Ok(
        match std::env::var("TASKLEDGER_LLM_BASE_URL")
            .ok()
            .filter(|u| !u.is_empty())
        {
            Some(url) => {
                let model =
                    std::env::var("TASKLEDGER_LLM_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
                let mut s = OpenAiSettings::new(url, model);
                s.api_key = std::env::var("TASKLEDGER_LLM_API_KEY").ok();
                LlmAgent::with_skills(Arc::new(OpenAiCompatible::new(s)?), turns, skills())
            }
            None => ScenarioAgent::new(ScenarioTimings::default()),
        },
    )
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    taskledger_infra::lambda::init_logging();
    let store = taskledger_infra::lambda::store_from_env().await?;
    let svc = Service::new(
        store.clone(),
        store,
        agent().await?,
        CursorCodec::new(
            std::env::var("TASKLEDGER_CURSOR_KEY")
                .unwrap_or_default()
                .into_bytes(),
        ),
        ServiceSettings {
            blocking_timeout: Duration::from_secs(1),
            // New work (a sub-task, a follow-up) reaches the queue through the stream relay.
            dispatch: Dispatch::Feed,
            ..Default::default()
        },
    );
    let margin = std::env::var("TASKLEDGER_TURN_MARGIN_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(DEFAULT_TURN_MARGIN, Duration::from_secs);
    run(service_fn(|event| handle(&svc, margin, event))).await
}
