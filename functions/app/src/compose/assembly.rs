//! One assembly (issue 54): what every deployment builds the same way — the push parts
//! (address policy, signing key, sealing keys, retry; the sender and the seal made of them),
//! the service on the store's ports, the deadline reaper, the API's card settings —
//! `Assembly::build`, so that the local server and each Lambda function only choose which
//! runners to spawn around it.

use std::sync::Arc;
use std::time::Duration;

use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ports::{CardSigner, EventStore, Housekeeping, SecretSeal, TaskReadModel};
use taskledger_domain::push::{AddressPolicy, RetryPolicy};
use taskledger_infra::secrets::{Seal, SecretBox};
use taskledger_infra::webhook::{PushSigner, WebhookError, WebhookSender};

use crate::agent::Agent;
use crate::http::{HttpSettings, BODY_READ_TIMEOUT};
use crate::service::{Service, ServiceSettings};
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
            streaming_enabled: settings.streaming_enabled,
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

/// A store's ports: what the service reads and appends, and what the reaper looks through.
#[derive(Clone)]
pub struct StorePorts {
    pub events: Arc<dyn EventStore>,
    pub reads: Arc<dyn TaskReadModel>,
    pub housekeeping: Arc<dyn Housekeeping>,
}

impl StorePorts {
    /// All three from one store.
    pub fn of<S: EventStore + TaskReadModel + Housekeeping + 'static>(store: Arc<S>) -> Self {
        Self {
            events: store.clone(),
            reads: store.clone(),
            housekeeping: store,
        }
    }
}

/// A deployment, assembled: the service and the parts its runners take.
pub struct Assembly {
    pub service: Arc<Service>,
    pub push: PushParts,
    pub store: StorePorts,
}

impl Assembly {
    /// The service on `store` with `agent`, page tokens signed with `cursor_key`, the push
    /// parts' policy and seal in its settings (`service`: the deployment's dispatch, limits
    /// and stream bounds).
    pub fn build(
        store: StorePorts,
        agent: Arc<dyn Agent>,
        cursor_key: Vec<u8>,
        push: PushParts,
        service: ServiceSettings,
    ) -> Self {
        let service = Service::new(
            store.events.clone(),
            store.reads.clone(),
            agent,
            CursorCodec::new(cursor_key),
            ServiceSettings {
                push_enabled: push.enabled,
                push_policy: push.policy.clone(),
                secrets: Some(push.seal()),
                ..service
            },
        );
        Self {
            service,
            push,
            store,
        }
    }

    /// The deadline reaper: tasks at work with no event for `deadline_secs` fail, saying so.
    pub fn reaper(&self, deadline_secs: u64) -> Reaper {
        Reaper {
            svc: self.service.clone(),
            store: self.store.housekeeping.clone(),
            deadline_secs,
        }
    }
}

/// The deadline reaper of a deployment: its service and the store's candidates.
pub struct Reaper {
    svc: Arc<Service>,
    store: Arc<dyn Housekeeping>,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Given push parts that turn push off, when a deployment is assembled with settings that
    /// ask for it, then the service follows the parts: one switch, set in one place.
    #[tokio::test]
    async fn the_service_takes_its_push_switch_policy_and_seal_from_the_push_parts() {
        let store = Arc::new(taskledger_infra::SqliteStore::in_memory());
        let push = PushParts::new(
            false,
            AddressPolicy::strict(),
            None,
            None,
            RetryPolicy::default(),
        )
        .unwrap();
        let asked = ServiceSettings {
            push_enabled: true,
            push_policy: AddressPolicy::allow_loopback(),
            ..Default::default()
        };
        let a = Assembly::build(
            StorePorts::of(store),
            crate::agent::ScenarioAgent::new(Default::default()),
            b"k".to_vec(),
            push,
            asked,
        );
        assert!(!a.service.push_enabled());
        assert!(!a.push.enabled);
    }
}
