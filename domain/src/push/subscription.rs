//! Webhook subscriptions: a config from the wire validated once (`PushConfigSpec`), and the
//! subscription the task keeps once the config is registered (`Subscription`).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::address::AddressPolicy;
use crate::error::DomainError;
use crate::wire::{AuthenticationInfo, PushProtocol, TaskPushNotificationConfig};

/// Webhook subscriptions one principal may hold on one task (each principal's configs are its
/// own: another's cannot take its ids or its room).
pub const MAX_PUSH_CONFIGS_PER_PRINCIPAL: usize = 50;
/// Longest webhook URL, in bytes.
pub const MAX_PUSH_URL_BYTES: usize = 2048;
/// Longest client-given config id, in bytes.
pub const MAX_PUSH_CONFIG_ID_BYTES: usize = 128;
/// Longest `token`, in bytes.
pub const MAX_PUSH_TOKEN_BYTES: usize = 1024;
/// Longest `authentication.scheme`, in bytes.
pub const MAX_PUSH_SCHEME_BYTES: usize = 64;
/// Longest `authentication.credentials`, in bytes.
pub const MAX_PUSH_CREDENTIALS_BYTES: usize = 4096;
/// ListTaskPushNotificationConfigs page size when none is asked for, and the largest one.
pub const DEFAULT_PUSH_CONFIG_PAGE: usize = 50;
pub const MAX_PUSH_CONFIG_PAGE: usize = 100;

/// A webhook subscription as the task keeps it: the config and the sequence of the event that
/// registered it. It receives updates of later events only (the causal floor).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    pub id: String,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
    /// Sequence of the `PushConfigSet` event; updates of events after it are delivered.
    pub from_seq: u64,
    /// The principal it belongs to, when not the task's owner (a participant's; ADR 021).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<crate::ids::Principal>,
    /// How its deliveries are written (the protocol it was registered over).
    #[serde(default, skip_serializing_if = "PushProtocol::is_v1")]
    pub protocol: PushProtocol,
}

impl Subscription {
    /// What tells it from every other subscription of its task: its id for the task owner's,
    /// its id and its principal for anyone else's (ids are each principal's own; an id holds no
    /// control character, so no id of one principal reads as another's key).
    pub fn key(&self) -> String {
        match &self.owner {
            None => self.id.clone(),
            Some(p) => format!("{}\n{p}", self.id),
        }
    }

    /// Whether the subscription is `who`'s: each principal sees and manages its own.
    pub fn belongs_to(
        &self,
        who: &crate::ids::Principal,
        task_owner: &crate::ids::Principal,
    ) -> bool {
        self.owner.as_ref().unwrap_or(task_owner) == who
    }
}

impl Subscription {
    /// The config as the API returns it: `authentication.credentials` never leaves the server
    /// (redacted on read, as a2aproject/A2A#1750 proposes; ADR 022). The token is the stored
    /// one — sealed where the server seals secrets, so the caller opens it before answering.
    pub fn to_wire(&self, task_id: &str) -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            tenant: None,
            id: Some(self.id.clone()),
            task_id: Some(task_id.to_string()),
            url: self.url.clone(),
            token: self.token.clone(),
            authentication: self.scheme.as_ref().map(|scheme| AuthenticationInfo {
                scheme: scheme.clone(),
                credentials: None,
            }),
            protocol: Default::default(),
        }
    }

    /// `Authorization` header value, when the config has authentication.
    pub fn authorization(&self) -> Option<String> {
        let scheme = self.scheme.as_deref()?;
        Some(match self.credentials.as_deref() {
            Some(c) if !c.is_empty() => format!("{scheme} {c}"),
            _ => scheme.to_string(),
        })
    }
}

/// A validated config, not yet registered (no sequence yet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushConfigSpec {
    pub id: String,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
    /// Whose it is, when not the task's owner's (set when it is registered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<crate::ids::Principal>,
    /// How its deliveries are written (the protocol it was registered over).
    #[serde(default, skip_serializing_if = "PushProtocol::is_v1")]
    pub protocol: PushProtocol,
}

impl PushConfigSpec {
    /// Validates a config from the wire. `generated_id` is used when the client gave none;
    /// `field` prefixes error paths (`params`, `configuration.taskPushNotificationConfig`).
    pub fn parse(
        wire: &TaskPushNotificationConfig,
        generated_id: &str,
        policy: &AddressPolicy,
        field: &str,
    ) -> Result<Self, DomainError> {
        let path = |f: &str| {
            if field.is_empty() {
                f.to_string()
            } else {
                format!("{field}.{f}")
            }
        };
        let id = match wire.id.as_deref().map(str::trim) {
            None | Some("") => generated_id.to_string(),
            Some(id) => {
                check_text(id, MAX_PUSH_CONFIG_ID_BYTES, &path("id"))?;
                id.to_string()
            }
        };
        check_url(&wire.url, policy).map_err(|reason| DomainError::invalid(path("url"), reason))?;
        let token = wire.token.clone().filter(|t| !t.is_empty());
        if let Some(t) = &token {
            check_text(t, MAX_PUSH_TOKEN_BYTES, &path("token"))?;
        }
        let (scheme, credentials) = match &wire.authentication {
            None => (None, None),
            Some(a) => {
                let scheme = a.scheme.trim();
                if scheme.is_empty() {
                    return Err(DomainError::invalid(
                        path("authentication.scheme"),
                        "is required when authentication is given (for example \"Bearer\")",
                    ));
                }
                check_text(
                    scheme,
                    MAX_PUSH_SCHEME_BYTES,
                    &path("authentication.scheme"),
                )?;
                if scheme.contains(char::is_whitespace) {
                    return Err(DomainError::invalid(
                        path("authentication.scheme"),
                        "must be one word (an HTTP authentication scheme)",
                    ));
                }
                let credentials = a.credentials.clone().filter(|c| !c.is_empty());
                if let Some(c) = &credentials {
                    check_text(
                        c,
                        MAX_PUSH_CREDENTIALS_BYTES,
                        &path("authentication.credentials"),
                    )?;
                }
                (Some(scheme.to_string()), credentials)
            }
        };
        Ok(Self {
            id,
            url: wire.url.clone(),
            token,
            scheme,
            credentials,
            owner: None,
            protocol: wire.protocol,
        })
    }

    pub fn subscribe(self, from_seq: u64) -> Subscription {
        Subscription {
            id: self.id,
            url: self.url,
            token: self.token,
            scheme: self.scheme,
            credentials: self.credentials,
            from_seq,
            owner: self.owner,
            protocol: self.protocol,
        }
    }
}

/// Text that goes into an HTTP header: bounded, no control characters.
fn check_text(value: &str, max: usize, field: &str) -> Result<(), DomainError> {
    if value.len() > max {
        return Err(DomainError::invalid(
            field,
            format!("is {} bytes; the limit is {max}", value.len()),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(DomainError::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

/// An http(s) URL with a host; a literal address must be one the policy permits.
fn check_url(raw: &str, policy: &AddressPolicy) -> Result<(), String> {
    if raw.is_empty() {
        return Err("is required".into());
    }
    if raw.len() > MAX_PUSH_URL_BYTES {
        return Err(format!(
            "is {} bytes; the limit is {MAX_PUSH_URL_BYTES}",
            raw.len()
        ));
    }
    let url = url::Url::parse(raw).map_err(|e| format!("is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "must be http or https, not {:?}",
            url.scheme().to_string()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry user info; use authentication instead".into());
    }
    match url.host() {
        None => Err("has no host".into()),
        Some(url::Host::Ipv4(ip)) => policy.permits(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => policy.permits(IpAddr::V6(ip)),
        Some(url::Host::Domain(_)) => Ok(()),
    }
}
