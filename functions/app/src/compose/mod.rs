//! Composition shared by the Lambda functions and the local server: which agent works on tasks
//! (the built-in scenario agent, a model behind an OpenAI-compatible endpoint, or Bedrock),
//! with the defaults defined once whether read by clap or from a Lambda's environment, and the
//! Lambda service set-up (`lambda_service`, and the API function's whole wiring, `lambda_api`).
//! The only module of the crate that names infra's adapters.

mod mcp;
mod telemetry;
mod upstream;
pub use mcp::{mcp_tools, McpServerSpec};
pub use telemetry::{init_lambda, init_telemetry, report};
pub use upstream::{api_agent, follow_window, UpstreamChoice, UpstreamToken};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use taskledger_domain::agent::skills::SkillCatalog;
use taskledger_domain::cursor::CursorCodec;
#[cfg(feature = "bedrock")]
use taskledger_infra::llm::Bedrock;
use taskledger_infra::llm::{OpenAiCompatible, OpenAiSettings};

use crate::agent::{Agent, LlmAgent, ScenarioAgent, ScenarioTimings};
use crate::http::{AppState, HttpSettings, StreamBounds, DEFAULT_KEEP_ALIVE};
use crate::identity::{
    Authenticator, GatewayAuthenticator, IamAuthenticator, DEFAULT_TENANT_CLAIM,
};
use crate::service::{Dispatch, Service, ServiceSettings};

pub use crate::agent::{DEFAULT_MAX_TURNS, DEFAULT_TURN_MARGIN};

/// Model used when a task names none (`/model` overrides per task).
pub const DEFAULT_LLM_MODEL: &str = "gpt-4o-mini";
/// Prefix of the DynamoDB table names (`<prefix>tasks`).
pub const DEFAULT_TABLE_PREFIX: &str = "taskledger-";
/// How long a blocking SendMessage waits locally, and behind API Gateway (below its 30 s).
pub const LOCAL_BLOCKING_TIMEOUT_SECS: u64 = 60;
pub const LAMBDA_BLOCKING_TIMEOUT_SECS: u64 = 25;
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

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The agent that works on tasks.
#[derive(Debug, Clone)]
pub enum AgentChoice {
    /// The built-in one: the scripted model, behind the conformance and fault rules when
    /// `conformance` (off by default: `--conformance-scenarios`, `TASKLEDGER_CONFORMANCE_SCENARIOS`).
    Scenario { conformance: bool },
    /// A model behind an OpenAI-compatible Chat Completions endpoint.
    OpenAi {
        settings: OpenAiSettings,
        max_turns: u32,
        /// Folder of skills (one sub-folder with a SKILL.md per skill).
        skills_dir: Option<PathBuf>,
        /// Tools every task asks a person to approve before they run (kagent hitl/v1).
        approve_tools: Vec<String>,
    },
    /// An A2A agent the team serves does every turn (ADR 034).
    Upstream(UpstreamChoice),
    /// An agent of the team's own, in Rust, built into the binary (the agent port:
    /// `agent::Agent`; `functions/example-agent`).
    Custom(CustomAgent),
    /// A Bedrock model through the Converse API (credentials and region from the environment).
    Bedrock {
        model: String,
        max_turns: u32,
        skills_dir: Option<PathBuf>,
        approve_tools: Vec<String>,
    },
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A whole number of seconds from the environment, or its default.
pub fn secs_from_env(name: &str, default: Duration) -> Result<Duration, String> {
    match var(name) {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse()
            .map(Duration::from_secs)
            .map_err(|_| format!("{name} must be a whole number of seconds (got {v:?})")),
    }
}

/// `TASKLEDGER_CONFORMANCE_SCENARIOS`: whether the scenario agent's conformance and fault
/// rules apply (`true`/`false`, default false).
pub fn conformance_from_env() -> Result<bool, String> {
    match var("TASKLEDGER_CONFORMANCE_SCENARIOS")
        .as_deref()
        .map(str::trim)
    {
        None | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(other) => Err(format!(
            "TASKLEDGER_CONFORMANCE_SCENARIOS must be true or false (got {other:?})"
        )),
    }
}

impl AgentChoice {
    /// From a Lambda's environment, with the same names and defaults as the local server's
    /// flags: `TASKLEDGER_BEDROCK_MODEL`, or `TASKLEDGER_LLM_BASE_URL` (+ `_API_KEY`, `_MODEL`),
    /// else the scenario agent; `TASKLEDGER_MAX_TURNS`, `TASKLEDGER_SKILLS_DIR`.
    pub fn from_env() -> Result<Self, String> {
        let max_turns = match var("TASKLEDGER_MAX_TURNS") {
            None => DEFAULT_MAX_TURNS,
            Some(t) => t
                .trim()
                .parse()
                .map_err(|_| format!("TASKLEDGER_MAX_TURNS must be a number (got {t:?})"))?,
        };
        let skills_dir = var("TASKLEDGER_SKILLS_DIR").map(PathBuf::from);
        let approve_tools = tool_list(var("TASKLEDGER_APPROVE_TOOLS").as_deref().unwrap_or(""));
        if let Some(url) = var("TASKLEDGER_AGENT_URL") {
            let policy = match var("TASKLEDGER_PUSH_ALLOWLIST") {
                Some(list) => taskledger_domain::push::AddressPolicy::parse_allowlist(&list)
                    .map_err(|e| format!("TASKLEDGER_PUSH_ALLOWLIST: {e}"))?,
                None => taskledger_domain::push::AddressPolicy::strict(),
            };
            return Ok(Self::Upstream(UpstreamChoice::from_env(&url, policy)?));
        }
        if let Some(model) = var("TASKLEDGER_BEDROCK_MODEL") {
            return Ok(Self::Bedrock {
                model,
                max_turns,
                skills_dir,
                approve_tools,
            });
        }
        Ok(match var("TASKLEDGER_LLM_BASE_URL") {
            Some(url) => {
                let model = var("TASKLEDGER_LLM_MODEL").unwrap_or_else(|| DEFAULT_LLM_MODEL.into());
                let mut settings = OpenAiSettings::new(url, model);
                settings.api_key = var("TASKLEDGER_LLM_API_KEY");
                Self::OpenAi {
                    settings,
                    max_turns,
                    skills_dir,
                    approve_tools,
                }
            }
            None => Self::Scenario {
                conformance: conformance_from_env()?,
            },
        })
    }

    /// The agent itself.
    pub async fn build(&self, timings: ScenarioTimings) -> Result<Arc<dyn Agent>, String> {
        self.build_with(timings, None).await
    }

    /// The agent, a model agent with `mcp`'s tools besides its own.
    pub async fn build_with(
        &self,
        timings: ScenarioTimings,
        mcp: Option<Arc<crate::agent::llm::McpTools>>,
    ) -> Result<Arc<dyn Agent>, String> {
        Ok(match self {
            Self::Scenario { conformance } => ScenarioAgent::configured(timings, *conformance),
            Self::Upstream(choice) => choice.build().await?,
            Self::Custom(agent) => agent.0.clone(),
            Self::OpenAi {
                settings,
                max_turns,
                skills_dir,
                approve_tools,
            } => {
                let model = OpenAiCompatible::new(settings.clone()).map_err(|e| e.to_string())?;
                LlmAgent::with_mcp(
                    Arc::new(model),
                    *max_turns,
                    skills(skills_dir.as_deref()),
                    approve_tools.clone(),
                    mcp,
                )
            }
            #[cfg(feature = "bedrock")]
            Self::Bedrock {
                model,
                max_turns,
                skills_dir,
                approve_tools,
            } => {
                let model = Bedrock::new(Bedrock::client(None).await, model.clone());
                LlmAgent::with_mcp(
                    Arc::new(model),
                    *max_turns,
                    skills(skills_dir.as_deref()),
                    approve_tools.clone(),
                    mcp,
                )
            }
            #[cfg(not(feature = "bedrock"))]
            Self::Bedrock { .. } => {
                return Err(
                    "this function is built without Bedrock (the `bedrock` feature): run the agent in the worker"
                        .into(),
                )
            }
        })
    }
}

/// The worker's agent from its environment: `AgentChoice::from_env`, with the MCP servers of
/// `TASKLEDGER_MCP_SERVERS` (`NAME=URL,…`, under `TASKLEDGER_PUSH_ALLOWLIST`) and the trusted
/// destructive tools of `TASKLEDGER_MCP_TRUST`.
pub async fn agent_from_env(timings: ScenarioTimings) -> Result<Arc<dyn Agent>, String> {
    let policy = match var("TASKLEDGER_PUSH_ALLOWLIST") {
        Some(list) => taskledger_domain::push::AddressPolicy::parse_allowlist(&list)
            .map_err(|e| format!("TASKLEDGER_PUSH_ALLOWLIST: {e}"))?,
        None => taskledger_domain::push::AddressPolicy::strict(),
    };
    let specs =
        McpServerSpec::parse_list(&var("TASKLEDGER_MCP_SERVERS").unwrap_or_default(), &policy)
            .map_err(|e| format!("TASKLEDGER_MCP_SERVERS: {e}"))?;
    let trusted = tool_list(var("TASKLEDGER_MCP_TRUST").as_deref().unwrap_or(""));
    let mcp = mcp_tools(&specs, trusted)?;
    AgentChoice::from_env()?.build_with(timings, mcp).await
}

/// A custom agent (`AgentChoice::Custom`), by the name it was picked with.
#[derive(Clone)]
pub struct CustomAgent(pub Arc<dyn Agent>, pub String);

impl std::fmt::Debug for CustomAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CustomAgent({})", self.1)
    }
}

/// Tool names from a comma-separated list (`--approve-tools`), blanks dropped.
pub fn tool_list(names: &str) -> Vec<String> {
    names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// The skill catalog of a folder; skills that cannot be read are skipped and reported.
fn skills(dir: Option<&Path>) -> SkillCatalog {
    let skills = dir
        .map(taskledger_infra::skills::load_catalog)
        .unwrap_or_default();
    for p in &skills.problems {
        tracing::warn!(problem = %p, "skill skipped");
    }
    skills
}

/// A Lambda's service on the DynamoDB store named by `TASKLEDGER_TABLE_PREFIX`, page tokens
/// signed with `TASKLEDGER_CURSOR_KEY`.
pub async fn lambda_service(
    agent: Arc<dyn Agent>,
    mut settings: ServiceSettings,
) -> Result<Arc<Service>, Box<dyn std::error::Error + Send + Sync>> {
    settings.retention = taskledger_infra::lambda::retention_from_env()?;
    let store = taskledger_infra::lambda::store_from_env().await?;
    let cursor_key = var("TASKLEDGER_CURSOR_KEY")
        .ok_or("TASKLEDGER_CURSOR_KEY must be set (signs ListTasks page tokens)")?;
    Ok(Service::new(
        store.clone(),
        store,
        agent,
        CursorCodec::new(cursor_key.into_bytes()),
        settings,
    ))
}

/// The deadline reaper of a deployment: its service and the store's candidates.
pub struct Reaper {
    svc: Arc<Service>,
    store: Arc<dyn taskledger_domain::ports::Housekeeping>,
    deadline_secs: u64,
}

impl Reaper {
    /// One pass at `now` (`runners::reaper`).
    pub async fn pass(
        &self,
        now: taskledger_domain::time::Timestamp,
    ) -> Result<crate::runners::ReapReport, crate::error::AppError> {
        crate::runners::reap_stalled(&self.svc, self.store.as_ref(), self.deadline_secs, now).await
    }
}

/// The reaper Lambda's: the DynamoDB store as for `lambda_service`, the deadline from
/// `TASKLEDGER_STALL_DEADLINE_SECS` (default `DEFAULT_STALL_DEADLINE_SECS`; 0 = off: `None`).
pub async fn lambda_reaper() -> Result<Option<Reaper>, Box<dyn std::error::Error + Send + Sync>> {
    use crate::runners::{stall_deadline, DEFAULT_STALL_DEADLINE_SECS};
    let secs = secs_from_env(
        "TASKLEDGER_STALL_DEADLINE_SECS",
        Duration::from_secs(DEFAULT_STALL_DEADLINE_SECS),
    )?;
    let Some(deadline_secs) = stall_deadline(secs.as_secs())
        .map_err(|e| format!("TASKLEDGER_STALL_DEADLINE_SECS: {e}"))?
    else {
        return Ok(None);
    };
    let store = taskledger_infra::lambda::store_from_env().await?;
    let cursor_key = var("TASKLEDGER_CURSOR_KEY")
        .ok_or("TASKLEDGER_CURSOR_KEY must be set (signs ListTasks page tokens)")?;
    // It runs no turns: new work its commits cause reaches the queue through the stream.
    let agent = ScenarioAgent::new(Default::default());
    let settings = ServiceSettings {
        dispatch: crate::service::Dispatch::Feed,
        retention: taskledger_infra::lambda::retention_from_env()?,
        ..Default::default()
    };
    let svc = Service::new(
        store.clone(),
        store.clone(),
        agent,
        CursorCodec::new(cursor_key.into_bytes()),
        settings,
    );
    Ok(Some(Reaper {
        svc,
        store,
        deadline_secs,
    }))
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

fn flag(name: &str) -> Result<bool, String> {
    match var(name).as_deref().map(str::trim) {
        None | Some("0" | "false") => Ok(false),
        Some("1" | "true") => Ok(true),
        Some(v) => Err(format!("{name} must be 1/true or 0/false (got {v:?})")),
    }
}

/// The API function from its environment: the Lambda service (`lambda_service`) with feed
/// dispatch, push from `TASKLEDGER_PUSH_*`; `TASKLEDGER_RESPONSE_STREAMING=1` for a Function URL
/// in RESPONSE_STREAM mode; `TASKLEDGER_STREAM_MAX_SECS` (default: 24 s when buffered, the
/// invocation's deadline less 3 s when streaming); `TASKLEDGER_AUTH` = `gateway` (API Gateway's
/// authorizer, `TASKLEDGER_TENANT_CLAIM`) or `iam` (a Function URL with AuthType AWS_IAM);
/// `TASKLEDGER_PUBLIC_URL`, `TASKLEDGER_ERROR_TABLE`, `TASKLEDGER_PATH_PREFIX`.
pub async fn lambda_api(agent: Arc<dyn Agent>) -> Result<LambdaApi, BoxError> {
    let push = taskledger_infra::lambda::push_from_env()?;
    let mode = match flag("TASKLEDGER_RESPONSE_STREAMING")? {
        true => ResponseMode::Streaming,
        false => ResponseMode::Buffered,
    };
    let stream_max = match (var("TASKLEDGER_STREAM_MAX_SECS"), mode) {
        (None, ResponseMode::Streaming) => None,
        (_, ResponseMode::Buffered) | (Some(_), _) => Some(secs_from_env(
            "TASKLEDGER_STREAM_MAX_SECS",
            Duration::from_secs(LAMBDA_BUFFERED_STREAM_MAX_SECS),
        )?),
    };
    let blocking = Duration::from_secs(LAMBDA_BLOCKING_TIMEOUT_SECS);
    let settings = ServiceSettings {
        blocking_timeout: secs_from_env("TASKLEDGER_BLOCKING_TIMEOUT_SECS", blocking)?,
        dispatch: Dispatch::Feed,
        push_enabled: push.enabled,
        push_policy: push.policy,
        secrets: Some(Arc::new(taskledger_infra::secrets::Seal(
            push.secrets.clone(),
        ))),
        stream_max,
        // A long-polling GetTask (A2A 1.1) answers below the HTTP API's 29 s timeout.
        long_poll_max: Duration::from_secs(LAMBDA_LONG_POLL_SECS),
        ..Default::default()
    };
    let service = lambda_service(agent, settings).await?;
    let auth: Arc<dyn Authenticator> = match var("TASKLEDGER_AUTH").as_deref() {
        None | Some("gateway") => Arc::new(GatewayAuthenticator::new(
            var("TASKLEDGER_TENANT_CLAIM").unwrap_or_else(|| DEFAULT_TENANT_CLAIM.into()),
        )),
        Some("iam") => Arc::new(IamAuthenticator),
        Some(other) => {
            return Err(format!("TASKLEDGER_AUTH must be gateway or iam (got {other:?})").into())
        }
    };
    let http = HttpSettings {
        public_url: var("TASKLEDGER_PUBLIC_URL"),
        name: "taskledger".into(),
        description: "An event-sourced A2A task backend.".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        jwks: push.signer.as_ref().map(|s| s.jwks()),
        card_signer: push
            .signer
            .clone()
            .map(|s| s as Arc<dyn taskledger_domain::ports::CardSigner>),
        board: None,
        // API Gateway (or a Function URL) is the only way in: its Host and scheme are believed.
        allowed_hosts: crate::http::guard::parse_allowed_hosts(
            &var("TASKLEDGER_ALLOWED_HOSTS").unwrap_or_default(),
        )?,
        proxies: crate::http::Proxies::Gateway,
        // Neither API Gateway nor a Function URL carries gRPC (README "gRPC").
        grpc: None,
        error_table: taskledger_domain::error::ErrorTable::parse(
            &var("TASKLEDGER_ERROR_TABLE").unwrap_or_default(),
        )?,
        // A REST API stage or a custom domain's base path in front of the routes.
        path_prefix: var("TASKLEDGER_PATH_PREFIX"),
        stream_keep_alive: DEFAULT_KEEP_ALIVE,
        // Lambda receives the whole body from the gateway: this bound never bites there.
        body_read_timeout: crate::http::BODY_READ_TIMEOUT,
        // Each function reports through its log (EMF, `compose::report`).
        metrics: None,
    };
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
            report().await;
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
        match taskledger_infra::relay::committed(image) {
            Some(event) => crate::runners::Relay::relay(self, &event)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            None => Ok(()),
        }
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
