//! The Lambda functions' wiring, from their settings (`Settings::from_env`,
//! `LambdaSettings::from_env`): the service on the table, the reaper, the API function's router
//! and how it answers, the stream relay, and the push and turn batches. Each function's `main`
//! only picks what it runs.

use std::sync::Arc;
use std::time::Duration;

use super::{Assembly, BoxError, PushParts, Reaper, StorePorts};
use crate::agent::{Agent, ScenarioAgent, ScenarioTimings};
use crate::http::{AppState, StreamBounds};
use crate::identity::{Authenticator, GatewayAuthenticator, IamAuthenticator};
use crate::service::{Dispatch, Service, ServiceSettings};
use crate::settings::{ApiAuth, Deployment, LambdaSettings, Settings};

/// How long a long-polling GetTask (draft A2A 1.1 `currentGeneration`) waits on Lambda.
pub const LAMBDA_LONG_POLL_SECS: u64 = 25;
/// How long a stream stays open behind API Gateway, whose reply is buffered: below its 30 s
/// integration timeout, so the buffered events still return (ADR 016).
pub const LAMBDA_BUFFERED_STREAM_MAX_SECS: u64 = 24;
/// A Lambda's stream ends this long before the invocation's deadline at the latest.
pub const LAMBDA_STREAM_DEADLINE_MARGIN: Duration = Duration::from_secs(3);
/// A buffered reply must fit Lambda's 6 MB response, a JSON document in which the SSE text is
/// one escaped string; a streamed one Lambda's 200 MB.
pub const LAMBDA_BUFFERED_STREAM_MAX_BYTES: usize = 4 << 20;
pub const LAMBDA_STREAMED_MAX_BYTES: usize = 150 << 20;

/// A Lambda function's store: the table the settings name, checked.
pub async fn lambda_store(
    settings: &Settings,
) -> Result<Arc<taskledger_infra::dynamo::DynamoStore>, BoxError> {
    Ok(taskledger_infra::lambda::store(
        &settings.table_prefix,
        settings.retention()?,
        settings.index_shards,
    )
    .await?)
}

/// The key signing ListTasks page tokens: every function of a deployment signs with the same.
fn cursor_key(settings: &Settings) -> Result<Vec<u8>, BoxError> {
    let key = LambdaSettings::required(
        &settings.cursor_key,
        "TASKLEDGER_CURSOR_KEY",
        "the key signing ListTasks page tokens",
    )?;
    Ok(key.as_bytes().to_vec())
}

/// A Lambda's assembly on the DynamoDB store the settings name: the service (with
/// `service`'s dispatch and bounds, the settings' retention and blocking timeout) and the push
/// parts every function of the deployment shares.
pub async fn lambda_assembly(
    agent: Arc<dyn Agent>,
    service: ServiceSettings,
    settings: &Settings,
) -> Result<Assembly, BoxError> {
    let push = PushParts::lambda(settings)?;
    let service = ServiceSettings {
        dispatch: service.dispatch,
        stream_max: service.stream_max,
        long_poll_max: service.long_poll_max,
        ..push.service_settings(settings, Deployment::Lambda)?
    };
    let store = lambda_store(settings).await?;
    Ok(Assembly::build(
        StorePorts::of(store),
        agent,
        cursor_key(settings)?,
        push,
        service,
    ))
}

/// A Lambda's service (`lambda_assembly`'s).
pub async fn lambda_service(
    agent: Arc<dyn Agent>,
    service: ServiceSettings,
    settings: &Settings,
) -> Result<Arc<Service>, BoxError> {
    Ok(lambda_assembly(agent, service, settings).await?.service)
}

/// The worker's agent: the one the settings name (`custom` finds one built in by name).
pub async fn worker_agent(
    settings: &Settings,
    custom: impl Fn(&str) -> Option<Arc<dyn Agent>>,
) -> Result<Arc<dyn Agent>, BoxError> {
    super::agent(
        settings,
        Deployment::Lambda,
        custom,
        ScenarioTimings::default(),
    )
    .await
}

/// The API function's agent: the upstream one when the settings name one (our cancel reaches
/// the upstream task; the card advertises its skills), else the scenario agent with the
/// deployment's conformance rules (it answers direct replies). Turns run in the worker.
pub async fn api_agent(settings: &Settings) -> Result<Arc<dyn Agent>, BoxError> {
    Ok(match settings.upstream(Deployment::Lambda)? {
        Some(upstream) => upstream.build().await?,
        None => {
            ScenarioAgent::configured(ScenarioTimings::default(), settings.conformance_scenarios)
        }
    })
}

/// The reaper Lambda's: the deployment's assembly with the settings' stall deadline (`None`
/// when it is 0: off). It runs no turns: new work its commits cause reaches the queue through
/// the stream.
pub async fn lambda_reaper(settings: &Settings) -> Result<Option<Reaper>, BoxError> {
    let Some(deadline_secs) = settings.stall_deadline()? else {
        return Ok(None);
    };
    let agent = ScenarioAgent::new(Default::default());
    let feed = ServiceSettings {
        dispatch: Dispatch::Feed,
        ..Default::default()
    };
    Ok(Some(
        lambda_assembly(agent, feed, settings)
            .await?
            .reaper(deadline_secs),
    ))
}

/// How the API function answers (`TASKLEDGER_RESPONSE_STREAMING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseMode {
    /// `lambda_http::run`: behind API Gateway's HTTP API, which buffers the whole reply.
    Buffered,
    /// `lambda_http::run_with_streaming_response`: behind a Function URL with `InvokeMode:
    /// RESPONSE_STREAM`, each SSE event reaches the client as it is written.
    Streaming,
}

/// The API function: its router (the shared one, every stream bounded as the mode needs) and
/// how lambda_http must serve it.
pub struct LambdaApi {
    pub router: axum::Router,
    pub mode: ResponseMode,
}

/// The API function from its settings: the Lambda service with feed dispatch and the push
/// parts; streamed or buffered (`--response-streaming`), streams bounded (24 s when buffered,
/// the invocation's deadline less 3 s when streamed, unless `--stream-max-secs`), callers from
/// API Gateway's authorizer or IAM (`--auth`), the card's URL, hosts and error table.
pub async fn lambda_api(
    agent: Arc<dyn Agent>,
    settings: &Settings,
    lambda: &LambdaSettings,
) -> Result<LambdaApi, BoxError> {
    let mode = match lambda.response_streaming {
        true => ResponseMode::Streaming,
        false => ResponseMode::Buffered,
    };
    let stream_max = match (lambda.stream_max_secs, mode) {
        (None, ResponseMode::Streaming) => None,
        (Some(secs), _) => Some(Duration::from_secs(secs)),
        (None, ResponseMode::Buffered) => {
            Some(Duration::from_secs(LAMBDA_BUFFERED_STREAM_MAX_SECS))
        }
    };
    let service = ServiceSettings {
        dispatch: Dispatch::Feed,
        stream_max,
        // A long-polling GetTask (A2A 1.1) answers below the HTTP API's 29 s timeout.
        long_poll_max: Duration::from_secs(LAMBDA_LONG_POLL_SECS),
        ..Default::default()
    };
    let Assembly { service, push, .. } = lambda_assembly(agent, service, settings).await?;
    let auth: Arc<dyn Authenticator> = match lambda.auth {
        ApiAuth::Gateway => Arc::new(GatewayAuthenticator::new(settings.tenant_claim.clone())),
        ApiAuth::Iam => Arc::new(IamAuthenticator),
    };
    let mut http = push.http_settings(
        settings.public_url.clone().filter(|u| !u.is_empty()),
        "An event-sourced A2A task backend.",
        crate::http::guard::parse_allowed_hosts(&settings.allowed_hosts)?,
        settings.error_table,
        settings.stream_keep_alive(),
    );
    // API Gateway (or a Function URL) is the only way in: its Host and scheme are believed.
    // Neither carries gRPC; the body arrives whole, so the read bound never bites; each
    // function reports its metrics through its log (EMF, `compose::report`).
    http.proxies = crate::http::Proxies::Gateway;
    // A REST API stage or a custom domain's base path in front of the routes.
    http.path_prefix = lambda.path_prefix.clone().filter(|p| !p.is_empty());
    let bounds = StreamBounds {
        deadline_margin: LAMBDA_STREAM_DEADLINE_MARGIN,
        max_bytes: Some(match mode {
            ResponseMode::Buffered => LAMBDA_BUFFERED_STREAM_MAX_BYTES,
            ResponseMode::Streaming => LAMBDA_STREAMED_MAX_BYTES,
        }),
    };
    // Each invocation's metrics go to the log as EMF lines once it is answered.
    let router = crate::http::router(AppState::new(service, auth, http)).layer(
        axum::middleware::map_response(|r: axum::response::Response| async move {
            super::report().await;
            r
        }),
    );
    Ok(LambdaApi {
        router: crate::http::bound_streams(router, bounds),
        mode,
    })
}

/// The one relay behind the DynamoDB stream poller of the local server.
#[cfg(feature = "streams")]
#[async_trait::async_trait]
impl taskledger_infra::streams::RecordSink for crate::runners::Relay {
    async fn relay(&self, image: &serde_json::Value) -> Result<(), String> {
        for event in taskledger_infra::relay::committed(image) {
            crate::runners::Relay::relay(self, &event)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// The relay the stream drives on AWS (the relay Lambda) and locally on DynamoDB: turns onto
/// the FIFO turn queue, pushed updates fanned out onto the push queue when there is one.
pub fn stream_relay(
    store: Arc<taskledger_infra::dynamo::DynamoStore>,
    turns: taskledger_infra::sqs::SqsTurnQueue,
    push: Option<taskledger_infra::sqs::SqsPushQueue>,
) -> crate::runners::Relay {
    let relay = crate::runners::Relay::new(Arc::new(turns)).stamping_expiry(store.clone());
    match push {
        Some(queue) => relay.with_push(store, Arc::new(queue), None),
        None => relay,
    }
}

/// The relay publishing each task's lifecycle to the EventBridge bus `settings` name
/// (`TASKLEDGER_EVENT_BUS`; none: as it was), told at `TASKLEDGER_EVENT_DETAIL_LEVEL` (ADR 038).
#[cfg(feature = "eventbridge")]
pub async fn publishing_lifecycle(
    relay: crate::runners::Relay,
    store: Arc<taskledger_infra::dynamo::DynamoStore>,
    settings: &crate::settings::Settings,
) -> Result<crate::runners::Relay, crate::settings::SettingsError> {
    use taskledger_domain::projection::lifecycle::DetailLevel;
    use taskledger_infra::lifecycle::EventBridgeLifecycle;
    let level = DetailLevel::parse(&settings.event_detail_level)
        .map_err(|e| crate::settings::SettingsError::invalid("TASKLEDGER_EVENT_DETAIL_LEVEL", e))?;
    let bus = settings.event_bus.trim();
    if bus.is_empty() {
        return Ok(relay);
    }
    let client = EventBridgeLifecycle::client_from_env().await;
    let sink = Arc::new(EventBridgeLifecycle::new(client, bus));
    Ok(relay.publishing_to(store, sink, level))
}

/// A received batch of the SQS push queue through the one attempt loop: unreadable messages go
/// to the DLQ with the reason; returns, per message, whether it is finished (delivered or
/// dead-lettered: the consumer deletes it) or comes back after a pause.
pub async fn process_push_batch(
    queue: &taskledger_infra::sqs::SqsPushQueue,
    sender: &dyn taskledger_domain::ports::WebhookSend,
    retry: &taskledger_domain::push::RetryPolicy,
    msgs: &[taskledger_infra::sqs::ReceivedPush],
) -> Vec<bool> {
    use taskledger_domain::push::NextStep;
    let mut finished = vec![false; msgs.len()];
    let mut readable = Vec::new();
    let mut positions = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        match m.attempt() {
            Ok(a) => {
                readable.push(a);
                positions.push(i);
            }
            Err(reason) => match queue.dead_letter_unreadable(m, &reason).await {
                Ok(()) => finished[i] = true,
                Err(e) => tracing::warn!(error = %e, "cannot dead-letter an unreadable delivery"),
            },
        }
    }
    let outcomes = crate::runners::push::attempt_batch(queue, sender, retry, &readable).await;
    for (i, next) in positions.into_iter().zip(outcomes) {
        finished[i] = !matches!(next, NextStep::RetryIn(_));
    }
    finished
}

/// A turn message as the worker Lambda receives it.
#[derive(Debug, Clone, Default)]
pub struct TurnMessage {
    pub id: String,
    pub body: Option<String>,
    /// `ApproximateReceiveCount`: this receive included.
    pub receives: u32,
    /// From the dead-letter queue (its receives spent without an answer).
    pub dead_lettered: bool,
}

impl TurnMessage {
    /// A record of an SQS event: its id, body, receive count, and whether its queue is the
    /// turn queue's dead-letter queue (by the name at the end of the source ARN).
    pub fn from_record(
        id: Option<String>,
        body: Option<String>,
        attributes: &std::collections::HashMap<String, String>,
        source_arn: Option<&str>,
    ) -> Self {
        Self {
            id: id.unwrap_or_default(),
            body,
            receives: attributes
                .get("ApproximateReceiveCount")
                .and_then(|n| n.parse().ok())
                .unwrap_or(1),
            dead_lettered: source_arn
                .is_some_and(|arn| arn.ends_with(taskledger_infra::sqs::TURNS_DLQ)),
        }
    }
}

/// A received batch of the SQS turn queue (or its dead-letter queue) through the turn handler,
/// in order; returns the ids of the messages whose turn failed (retried, then dead-lettered).
/// A turn that fails on its last receive, and every dead-lettered one, is given up: its task
/// fails saying why. Unreadable bodies are dropped with a warning: there is nothing to retry.
pub async fn run_turn_batch(
    svc: &Arc<Service>,
    budget: crate::agent::TurnBudget,
    messages: Vec<TurnMessage>,
) -> Vec<String> {
    use crate::runners::{give_up_turn, DEAD_LETTERED};
    use taskledger_infra::sqs::MAX_RECEIVES;
    let mut failed = Vec::new();
    for m in messages {
        let turn: Option<taskledger_domain::agent::turns::AgentTurn> =
            m.body.as_deref().and_then(|b| serde_json::from_str(b).ok());
        let Some(turn) = turn else {
            tracing::warn!(message_id = %m.id, "unreadable turn message dropped");
            continue;
        };
        let settled = if m.dead_lettered {
            give_up_turn(svc, &turn, MAX_RECEIVES, DEAD_LETTERED).await
        } else {
            match crate::runners::handle_turn_within(svc, &turn, budget).await {
                Ok(_) => Ok(()),
                Err(e) if m.receives >= MAX_RECEIVES => {
                    give_up_turn(
                        svc,
                        &turn,
                        m.receives,
                        &crate::telemetry::incident(crate::runners::TURN_FAILED, &e),
                    )
                    .await
                }
                Err(e) => Err(e),
            }
        };
        if let Err(e) = settled {
            tracing::error!(task_id = %turn.task_id, error = %e, "turn failed");
            failed.push(m.id);
        }
    }
    failed
}
