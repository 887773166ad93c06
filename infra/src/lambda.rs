//! What every Lambda binary sets up the same way: JSON logs, and the DynamoDB store named by
//! `TASKLEDGER_TABLE_PREFIX`, checked so that a missing table fails the cold start by name.

use std::sync::Arc;
use taskledger_domain::retention::Retention;

use crate::dynamo::{self, DynamoStore};

/// JSON logs without timestamps (CloudWatch adds its own), filtered by `RUST_LOG`.
pub fn init_logging() {
    let _ = crate::logging::init(
        crate::logging::LogFormat::Json { timestamps: false },
        None,
        crate::otlp::DroppedSpans(std::sync::Arc::new(|_| {})),
    );
}

/// The task table's store, built once per sandbox.
pub async fn store_from_env() -> Result<Arc<DynamoStore>, Box<dyn std::error::Error + Send + Sync>>
{
    let prefix = std::env::var("TASKLEDGER_TABLE_PREFIX").unwrap_or_else(|_| "taskledger-".into());
    let store = Arc::new(
        DynamoStore::new(dynamo::client_from_env().await, &prefix)
            .with_retention(retention_from_env()?),
    );
    store.check().await?;
    Ok(store)
}

/// The retention of a Lambda's environment, as the local server's flags name it:
/// `TASKLEDGER_RETENTION` (default 90d; 0 keeps tasks forever) and
/// `TASKLEDGER_RETENTION_TENANTS` (`tenant=period,…`).
pub fn retention_from_env() -> Result<Retention, String> {
    let default = std::env::var("TASKLEDGER_RETENTION")
        .unwrap_or_else(|_| taskledger_domain::retention::DEFAULT_RETENTION_SECS.to_string());
    let tenants = std::env::var("TASKLEDGER_RETENTION_TENANTS").unwrap_or_default();
    Retention::parse(&default, &tenants)
        .map_err(|e| format!("TASKLEDGER_RETENTION / TASKLEDGER_RETENTION_TENANTS: {e}"))
}

/// Push notification settings shared by the API, relay and push worker Lambdas.
pub struct PushEnv {
    /// `TASKLEDGER_PUSH_ENABLED` (default true): config operations and deliveries.
    pub enabled: bool,
    /// `TASKLEDGER_PUSH_ALLOWLIST`: networks the sender may reach despite the SSRF guard.
    pub policy: taskledger_domain::push::AddressPolicy,
    /// `TASKLEDGER_PUSH_SIGNING_KEY`: a P-256 private key (PEM) that signs deliveries.
    pub signer: Option<Arc<crate::webhook::PushSigner>>,
    /// `TASKLEDGER_PUSH_RETRY_HORIZON_SECS`: how long a delivery is retried.
    pub retry: taskledger_domain::push::RetryPolicy,
    /// `TASKLEDGER_SECRETS_KEYS`: the keys sealing config secrets (`secrets::SecretBox` text;
    /// the template resolves it from Secrets Manager, ADR 022). Unset: stored as given.
    pub secrets: Option<Arc<crate::secrets::SecretBox>>,
}

#[derive(Debug, thiserror::Error)]
pub enum PushEnvError {
    #[error("TASKLEDGER_PUSH_ALLOWLIST: {0}")]
    Allowlist(String),
    #[error("TASKLEDGER_PUSH_SIGNING_KEY: {0}")]
    Key(#[from] crate::webhook::WebhookError),
    #[error("TASKLEDGER_PUSH_RETRY_HORIZON_SECS must be a number of seconds")]
    Horizon,
    #[error("TASKLEDGER_SECRETS_KEYS: {0}")]
    Secrets(#[from] crate::secrets::SecretsError),
}

pub fn push_from_env() -> Result<PushEnv, PushEnvError> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let enabled = var("TASKLEDGER_PUSH_ENABLED").is_none_or(|v| v != "false");
    let policy = match var("TASKLEDGER_PUSH_ALLOWLIST") {
        Some(list) => taskledger_domain::push::AddressPolicy::parse_allowlist(&list)
            .map_err(PushEnvError::Allowlist)?,
        None => taskledger_domain::push::AddressPolicy::strict(),
    };
    let signer = match var("TASKLEDGER_PUSH_SIGNING_KEY") {
        Some(pem) => Some(Arc::new(crate::webhook::PushSigner::from_pem(&pem)?)),
        None => None,
    };
    let mut retry = taskledger_domain::push::RetryPolicy::default();
    if let Some(h) = var("TASKLEDGER_PUSH_RETRY_HORIZON_SECS") {
        retry.horizon =
            std::time::Duration::from_secs(h.parse().map_err(|_| PushEnvError::Horizon)?);
    }
    let secrets = match var("TASKLEDGER_SECRETS_KEYS") {
        Some(text) => Some(Arc::new(crate::secrets::SecretBox::from_text(&text)?)),
        None => None,
    };
    Ok(PushEnv {
        enabled,
        policy,
        signer,
        retry,
        secrets,
    })
}
