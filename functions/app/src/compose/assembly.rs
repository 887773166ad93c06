//! One assembly (issue 54): the parts every deployment builds the same way from its settings —
//! the push parts (address policy, signing key, sealing keys, retry) and what the API's card and
//! service are made of — so that the local server and each Lambda function only choose which
//! runners to spawn around them.

use std::sync::Arc;
use std::time::Duration;

use taskledger_domain::ports::{CardSigner, SecretSeal};
use taskledger_domain::push::{AddressPolicy, RetryPolicy};
use taskledger_infra::secrets::{Seal, SecretBox};
use taskledger_infra::webhook::{PushSigner, WebhookError, WebhookSender};

use crate::http::{HttpSettings, BODY_READ_TIMEOUT};
use crate::service::ServiceSettings;
use crate::settings::{Deployment, Settings, SettingsError};

/// What pushes, signs and seals: the same for the API, the relay, the push worker, the
/// archive and the local server.
#[derive(Clone)]
pub struct PushParts {
    /// Config operations and deliveries.
    pub enabled: bool,
    /// Which addresses webhooks (and the upstream agent and MCP servers) may resolve to.
    pub policy: AddressPolicy,
    /// Signs deliveries, archives and the agent card; its public key is the JWKS served.
    pub signer: Option<Arc<PushSigner>>,
    /// Seals push-config secrets at rest (none: stored as given, ADR 022).
    pub secrets: Option<Arc<SecretBox>>,
    pub retry: RetryPolicy,
}

impl PushParts {
    /// From their settings' values; `secrets` the sealing keys the deployment holds.
    pub fn new(
        enabled: bool,
        policy: AddressPolicy,
        signing_key_pem: Option<&str>,
        secrets: Option<Arc<SecretBox>>,
        retry: RetryPolicy,
    ) -> Result<Self, WebhookError> {
        let signer = match signing_key_pem {
            Some(pem) => Some(Arc::new(PushSigner::from_pem(pem)?)),
            None => None,
        };
        Ok(Self {
            enabled,
            policy,
            signer,
            secrets,
            retry,
        })
    }

    /// A Lambda function's: every value from `Settings` (the sealing keys as text, from the
    /// template's secret).
    pub fn lambda(settings: &Settings) -> Result<Self, super::BoxError> {
        let secrets = match settings
            .secrets_keys
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        {
            Some(text) => Some(Arc::new(SecretBox::from_text(text)?)),
            None => None,
        };
        let pem = settings.signing_key_pem()?;
        Ok(Self::new(
            settings.push_enabled,
            settings.address_policy(Deployment::Lambda)?,
            pem.as_deref(),
            secrets,
            settings.retry(),
        )?)
    }

    /// The webhook sender: the policy, the signing key, the sealing keys.
    pub fn sender(&self) -> Result<WebhookSender, WebhookError> {
        Ok(
            WebhookSender::new(self.policy.clone(), self.signer.clone())?
                .with_secrets(self.secrets.clone()),
        )
    }

    /// The sealing keys as the service's port.
    pub fn seal(&self) -> Arc<dyn SecretSeal> {
        Arc::new(Seal(self.secrets.clone()))
    }

    /// The key signing the agent card and archives.
    pub fn card_signer(&self) -> Option<Arc<dyn CardSigner>> {
        self.signer.clone().map(|s| s as Arc<dyn CardSigner>)
    }

    /// The service's settings these parts and `settings` make (blocking timeout, stream poll,
    /// retention, push); the deployment adds dispatch, stream bounds and limits.
    pub fn service_settings(
        &self,
        settings: &Settings,
        d: Deployment,
    ) -> Result<ServiceSettings, SettingsError> {
        Ok(ServiceSettings {
            blocking_timeout: settings.blocking_timeout(d),
            push_enabled: self.enabled,
            push_policy: self.policy.clone(),
            secrets: Some(self.seal()),
            stream_poll: settings.stream_poll(),
            retention: settings.retention()?,
            ..Default::default()
        })
    }

    /// The API's settings (the card, the guards) as every deployment starts them; the
    /// deployment adds its board, proxies, gRPC address, path prefix and `/metrics`.
    pub fn http_settings(
        &self,
        public_url: Option<String>,
        description: &str,
        allowed_hosts: Vec<String>,
        error_table: taskledger_domain::error::ErrorTable,
        stream_keep_alive: Duration,
    ) -> HttpSettings {
        HttpSettings {
            public_url,
            name: "taskledger".into(),
            description: description.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            jwks: self.signer.as_ref().map(|s| s.jwks()),
            card_signer: self.card_signer(),
            board: None,
            allowed_hosts,
            proxies: crate::http::Proxies::None,
            grpc: None,
            error_table,
            path_prefix: None,
            stream_keep_alive,
            body_read_timeout: BODY_READ_TIMEOUT,
            metrics: None,
        }
    }
}
