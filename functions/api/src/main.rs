//! The HTTP API Lambda: the shared A2A router behind API Gateway, served by lambda_http.
//! Principals come from the API Gateway authorizer (JWT claims or a Lambda authorizer's context).

use std::sync::Arc;
use std::time::Duration;

use lambda_http::request::RequestContext;
use lambda_http::{run, Error};
use taskledger_app::agent::{ScenarioAgent, ScenarioTimings};
use taskledger_app::identity::{AuthError, Authenticator};
use taskledger_app::{router, AppState, HttpSettings, Service, ServiceSettings};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::Principal;

/// Claim (or Lambda-authorizer context key) naming the tenant; the subject is `sub`.
const TENANT_CLAIM_DEFAULT: &str = "tenant";

/// Reads the principal from the API Gateway authorizer.
struct GatewayAuthenticator {
    tenant_claim: String,
}

impl GatewayAuthenticator {
    fn principal(&self, get: impl Fn(&str) -> Option<String>) -> Result<Principal, AuthError> {
        let subject = get("sub")
            .or_else(|| get("principalId"))
            .ok_or(AuthError::NoClaims)?;
        let tenant = get(&self.tenant_claim).unwrap_or_else(|| "default".to_string());
        Principal::new(&tenant, &subject).map_err(AuthError::BadClaims)
    }
}

impl Authenticator for GatewayAuthenticator {
    fn authenticate(
        &self,
        request: &lambda_http::http::request::Parts,
    ) -> Result<Principal, AuthError> {
        match request.extensions.get::<RequestContext>() {
            Some(RequestContext::ApiGatewayV2(ctx)) => {
                let auth = ctx.authorizer.as_ref().ok_or(AuthError::NoClaims)?;
                if let Some(jwt) = &auth.jwt {
                    return self.principal(|k| jwt.claims.get(k).cloned());
                }
                self.principal(|k| {
                    auth.fields
                        .get(k)
                        .and_then(|v| v.as_str())
                        .map(str::to_string)
                })
            }
            Some(RequestContext::ApiGatewayV1(ctx)) => self.principal(|k| {
                ctx.authorizer
                    .fields
                    .get(k)
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            }),
            _ => Err(AuthError::NoClaims),
        }
    }

    fn requires_bearer(&self) -> bool {
        true
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    taskledger_infra::lambda::init_logging();

    let store = taskledger_infra::lambda::store_from_env().await?;
    let cursor_key = std::env::var("TASKLEDGER_CURSOR_KEY")
        .map_err(|_| "TASKLEDGER_CURSOR_KEY must be set (signs ListTasks page tokens)")?;
    let blocking = std::env::var("TASKLEDGER_BLOCKING_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(25);
    let push = taskledger_infra::lambda::push_from_env()?;
    let service = Service::new(
        store.clone(),
        store,
        ScenarioAgent::new(ScenarioTimings::default()),
        CursorCodec::new(cursor_key.into_bytes()),
        ServiceSettings {
            blocking_timeout: Duration::from_secs(blocking),
            // Agent work reaches the worker through the table's stream, the relay and the queue.
            dispatch: taskledger_app::Dispatch::Feed,
            // Deliveries go through the stream relay, the push queue and the push worker.
            push_enabled: push.enabled,
            push_policy: push.policy,
        },
    );
    let auth = Arc::new(GatewayAuthenticator {
        tenant_claim: std::env::var("TASKLEDGER_TENANT_CLAIM")
            .unwrap_or_else(|_| TENANT_CLAIM_DEFAULT.to_string()),
    });
    let state = AppState::new(
        service,
        auth,
        HttpSettings {
            public_url: std::env::var("TASKLEDGER_PUBLIC_URL").ok(),
            name: "taskledger".into(),
            description: "An event-sourced A2A task backend.".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            jwks: push.signer.as_ref().map(|s| s.jwks()),
        },
    );
    run(router(state)).await
}
