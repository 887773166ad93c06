//! The upstream A2A agent as the worker, composed (ADR 034): its URL, the deployment's
//! credential for it (a token from a file or the environment, on AWS from Secrets Manager —
//! never logged: it prints as `<redacted>` and lives only in the adapter's sensitive header),
//! the SSRF policy every outgoing URL follows (webhooks' allowlist), and how long a turn follows
//! it before continuing in a new one.

use std::sync::Arc;
use std::time::Duration;

use taskledger_domain::push::AddressPolicy;
use taskledger_infra::outbound::{Credential, OutboundHttp};

use crate::agent::Agent;
use crate::upstream::{FollowSettings, UpstreamAgent};

/// A credential as given (a bearer token or an API key): printed as `<redacted>`.
#[derive(Clone)]
pub struct UpstreamToken(String);

impl std::fmt::Debug for UpstreamToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl UpstreamToken {
    /// The credential itself, for the adapter that sends it.
    pub(super) fn secret(&self) -> &str {
        &self.0
    }

    /// A token read from `source` (a file's contents, a variable, a secret): trimmed; empty is
    /// none.
    pub fn new(source: &str) -> Option<Self> {
        let t = source.trim();
        (!t.is_empty()).then(|| Self(t.to_string()))
    }
}

/// An upstream agent to put behind taskledger.
#[derive(Debug, Clone)]
pub struct UpstreamChoice {
    /// Where its card is (`<url>/.well-known/agent-card.json`).
    pub url: String,
    pub token: Option<UpstreamToken>,
    /// The header the token goes in (default `Authorization: Bearer`).
    pub auth_header: Option<String>,
    /// The SSRF rules for the upstream's URLs (the card's interfaces too).
    pub policy: AddressPolicy,
    pub follow: FollowSettings,
}

impl UpstreamChoice {
    /// The URL checked: http or https, with a host.
    pub fn new(url: &str, policy: AddressPolicy) -> Result<Self, String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("the agent URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err("the agent URL must be http(s)://host[:port][/path]".into());
        }
        Ok(Self {
            url: url.to_string(),
            token: None,
            auth_header: None,
            policy,
            follow: FollowSettings::default(),
        })
    }

    /// The agent, its card read once (a card that cannot be read yet is read at the first turn).
    pub async fn build(&self) -> Result<Arc<dyn Agent>, String> {
        let credential = self
            .token
            .as_ref()
            .map(|t| Credential::new(self.auth_header.as_deref(), t.secret()))
            .transpose()
            .map_err(|e| e.to_string())?;
        let http = OutboundHttp::new(self.policy.clone(), credential).map_err(|e| e.to_string())?;
        let agent = UpstreamAgent::new(Arc::new(http), &self.url, self.follow);
        agent.discover().await;
        Ok(agent)
    }
}

/// The A2A client ACTS's client tests ask to parse (`tck-client-parse`): the upstream
/// forwarder's, over an HTTP adapter that reaches loopback only for the fixtures it serves
/// itself (it is given no other URL).
pub fn client_parser() -> Result<Arc<dyn crate::agent::acts::ClientProbe>, String> {
    let http =
        OutboundHttp::new(AddressPolicy::allow_loopback(), None).map_err(|e| e.to_string())?;
    Ok(Arc::new(crate::upstream::ClientParser::new(Arc::new(http))))
}

/// The follow window from seconds (at least one).
pub fn follow_window(secs: u64) -> Duration {
    Duration::from_secs(secs.max(1))
}
