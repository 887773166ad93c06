//! The HTTP API Lambda: the shared A2A router behind API Gateway, served by lambda_http.
//! Principals come from the claims the API Gateway authorizer verified; agent work goes to the
//! worker through the table's stream, the relay and the turn queue.

use std::sync::Arc;
use std::time::Duration;

use lambda_http::{run, Error};
use taskledger_app::agent::{ScenarioAgent, ScenarioTimings};
use taskledger_app::compose::{self, LAMBDA_BLOCKING_TIMEOUT_SECS};
use taskledger_app::http::DEFAULT_KEEP_ALIVE;
use taskledger_app::identity::{GatewayAuthenticator, DEFAULT_TENANT_CLAIM};
use taskledger_app::{router, AppState, Dispatch, HttpSettings, ServiceSettings};
use taskledger_domain::error::ErrorTable;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    taskledger_infra::lambda::init_logging();
    let push = taskledger_infra::lambda::push_from_env()?;
    let blocking = Duration::from_secs(LAMBDA_BLOCKING_TIMEOUT_SECS);
    let settings = ServiceSettings {
        blocking_timeout: compose::secs_from_env("TASKLEDGER_BLOCKING_TIMEOUT_SECS", blocking)?,
        dispatch: Dispatch::Feed,
        push_enabled: push.enabled,
        push_policy: push.policy,
        // Below the HTTP API's 29 s integration timeout.
        long_poll_max: Duration::from_secs(25),
        ..Default::default()
    };
    // The scenario agent answers direct replies; its turns run in the worker.
    let agent = ScenarioAgent::new(ScenarioTimings::default());
    let service = compose::lambda_service(agent, settings).await?;
    let tenant_claim = std::env::var("TASKLEDGER_TENANT_CLAIM")
        .unwrap_or_else(|_| DEFAULT_TENANT_CLAIM.to_string());
    let http = HttpSettings {
        public_url: env("TASKLEDGER_PUBLIC_URL"),
        name: "taskledger".into(),
        description: "An event-sourced A2A task backend.".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        jwks: push.signer.as_ref().map(|s| s.jwks()),
        // API Gateway carries no gRPC: the card lists JSON-RPC and HTTP+JSON (README "gRPC").
        grpc: None,
        error_table: ErrorTable::parse(&env("TASKLEDGER_ERROR_TABLE").unwrap_or_default())?,
        // A REST API stage or a custom domain's base path in front of the routes.
        path_prefix: env("TASKLEDGER_PATH_PREFIX"),
        stream_keep_alive: DEFAULT_KEEP_ALIVE,
    };
    let auth = Arc::new(GatewayAuthenticator::new(tenant_claim));
    run(router(AppState::new(service, auth, http))).await
}
