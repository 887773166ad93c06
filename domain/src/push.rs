//! Push notifications: webhook subscriptions on a task (validated once, here), the updates a
//! commit pushes, the deliveries they make, the address policy that keeps the sender away from
//! internal networks, and the retry policy. Pure: the sender and the queues live in `infra`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::DomainError;
use crate::task::{TaskAggregate, TaskEvent};
use crate::wire::{
    Artifact, AuthenticationInfo, StreamResponse, TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
};

/// Webhook subscriptions one task may hold.
pub const MAX_PUSH_CONFIGS_PER_TASK: usize = 50;
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

/// Header carrying the sequence of the task event a delivery reports (receivers de-duplicate
/// on task id + sequence; per task and config, sequences only grow).
pub const SEQUENCE_HEADER: &str = "X-Taskledger-Event-Sequence";
/// Header carrying the delivery's id (`<task>:<seq>:<config>`), the same on every attempt.
pub const DELIVERY_ID_HEADER: &str = "X-Taskledger-Delivery-Id";
/// Header carrying the optional config token.
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";
/// Header carrying the detached JWS (ES256) over the body, when signing is configured.
pub const SIGNATURE_HEADER: &str = "X-Taskledger-Signature";
/// Media type of a delivery's body.
pub const CONTENT_TYPE: &str = "application/a2a+json";

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
}

impl Subscription {
    /// The config as the API returns it.
    pub fn to_wire(&self, task_id: &str) -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            tenant: None,
            id: Some(self.id.clone()),
            task_id: Some(task_id.to_string()),
            url: self.url.clone(),
            token: self.token.clone(),
            authentication: self.scheme.as_ref().map(|scheme| AuthenticationInfo {
                scheme: scheme.clone(),
                credentials: self.credentials.clone(),
            }),
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

// ------------------------------------------------------------------ address policy

/// Which addresses the webhook sender may connect to. Loopback, private, link-local,
/// unique-local, CGNAT, cloud metadata and other special-purpose addresses are refused unless a
/// network on the allowlist contains them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    allow: Vec<ipnet::IpNet>,
}

impl AddressPolicy {
    /// Nothing special-purpose allowed (production).
    pub fn strict() -> Self {
        Self::default()
    }

    /// Loopback allowed (the local server's development mode).
    pub fn allow_loopback() -> Self {
        Self::parse_allowlist("127.0.0.0/8,::1/128").unwrap_or_default()
    }

    /// A comma-separated list of networks (`10.1.0.0/16,::1/128`; a bare address is one host).
    pub fn parse_allowlist(list: &str) -> Result<Self, String> {
        let mut allow = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let net = item
                .parse::<ipnet::IpNet>()
                .or_else(|_| item.parse::<IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| format!("{item:?} is not an address or network (CIDR)"))?;
            allow.push(net);
        }
        Ok(Self { allow })
    }

    pub fn allowlist(&self) -> &[ipnet::IpNet] {
        &self.allow
    }

    /// `Ok` when the sender may connect to `ip`; otherwise why not.
    pub fn permits(&self, ip: IpAddr) -> Result<(), String> {
        let ip = canonical(ip);
        let Some(class) = special_purpose(ip) else {
            return Ok(());
        };
        if self.allow.iter().any(|n| n.contains(&ip)) {
            return Ok(());
        }
        Err(format!(
            "address {ip} is {class} and is not on the push allowlist"
        ))
    }
}

/// An IPv4-mapped or NAT64 IPv6 address is judged as the IPv4 address it carries.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let s = v6.segments();
            // 64:ff9b::/96 (NAT64 well-known prefix).
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let [a, b] = s[6].to_be_bytes();
                let [c, d] = s[7].to_be_bytes();
                return IpAddr::V4(Ipv4Addr::new(a, b, c, d));
            }
            IpAddr::V6(v6)
        }
        v4 => v4,
    }
}

/// The kind of special-purpose address `ip` is, or `None` for a public one.
fn special_purpose(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4 == Ipv4Addr::new(169, 254, 169, 254) {
                Some("the cloud metadata service")
            } else if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_private() {
                Some("private")
            } else if v4.is_link_local() {
                Some("link-local")
            } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
                Some("carrier-grade NAT (shared)")
            } else if o[0] == 0 || v4.is_broadcast() {
                Some("unspecified or broadcast")
            } else if v4.is_multicast() || o[0] >= 240 {
                Some("multicast or reserved")
            } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
                Some("IETF protocol assignment")
            } else if o[0] == 198 && (o[1] & 0xfe) == 18 {
                Some("benchmarking")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            if v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
                Some("the cloud metadata service")
            } else if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if (s[0] & 0xffc0) == 0xfe80 {
                Some("link-local")
            } else if (s[0] & 0xfe00) == 0xfc00 {
                Some("unique-local")
            } else if (s[0] & 0xff00) == 0xff00 {
                Some("multicast")
            } else if s[0] == 0x2001 && s[1] == 0x0db8 {
                Some("documentation")
            } else {
                None
            }
        }
    }
}

// ------------------------------------------------------------------ deliveries

/// One update to one subscriber: what the push queue carries and the worker sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushDelivery {
    pub task_id: String,
    /// Sequence of the event the update reports.
    pub seq: u64,
    pub config: Subscription,
    /// The `StreamResponse` JSON, exactly as sent.
    pub body: String,
}

impl PushDelivery {
    /// `<task>:<seq>:<config>`: the same on every attempt and redrive.
    pub fn delivery_id(&self) -> String {
        format!("{}:{}:{}", self.task_id, self.seq, self.config.id)
    }

    /// Deliveries in one group go out one at a time, in sequence order (FIFO message group:
    /// at most 128 characters, so a digest).
    pub fn group(&self) -> String {
        digest(&format!("{}\n{}", self.task_id, self.config.id))
    }

    /// Queue de-duplication id (a digest: at most 128 characters).
    pub fn dedup_id(&self) -> String {
        digest(&self.delivery_id())
    }
}

fn digest(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The deliveries an update of event `seq` makes: one per subscription registered before it.
pub fn deliveries(
    task_id: &str,
    subscriptions: &[Subscription],
    seq: u64,
    body: &str,
) -> Vec<PushDelivery> {
    subscriptions
        .iter()
        .filter(|s| s.from_seq < seq)
        .map(|s| PushDelivery {
            task_id: task_id.to_string(),
            seq,
            config: s.clone(),
            body: body.to_string(),
        })
        .collect()
}

/// The update an event pushes, rendered as the `StreamResponse` JSON subscribers receive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUpdate {
    pub seq: u64,
    pub body: String,
}

/// The updates `events` (decided on `before`, numbered from `before.version + 1`) push: a
/// status update for each event that changes the task's status, an artifact update for each
/// artifact event, for events some subscription registered before them receives.
pub fn updates(before: &TaskAggregate, events: &[TaskEvent]) -> Vec<PushUpdate> {
    let subscribed = |s: &TaskAggregate| s.head.as_ref().is_some_and(|h| !h.push.is_empty());
    let registers = events
        .iter()
        .any(|e| matches!(e, TaskEvent::PushConfigSet { .. }));
    if !subscribed(before) && !registers {
        return Vec::new();
    }
    let mut state = before.clone();
    let mut out = Vec::new();
    for event in events {
        let earlier = state.head.as_ref().is_some_and(|h| !h.push.is_empty());
        state.apply_event(event);
        let Some(head) = state.head.as_ref() else {
            continue;
        };
        if !earlier {
            continue;
        }
        let update = match event {
            TaskEvent::ArtifactAdded {
                artifact,
                last_chunk,
                ..
            } => Some(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: head.id.to_string(),
                context_id: head.context_id.to_string(),
                artifact: artifact.clone(),
                append: false,
                last_chunk: *last_chunk,
                metadata: None,
            })),
            TaskEvent::ArtifactChunkAppended {
                artifact_id,
                parts,
                metadata,
                last_chunk,
                ..
            } => Some(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: head.id.to_string(),
                context_id: head.context_id.to_string(),
                artifact: Artifact {
                    artifact_id: artifact_id.to_string(),
                    name: None,
                    description: None,
                    parts: parts.clone(),
                    metadata: metadata.clone(),
                    extensions: vec![],
                },
                append: true,
                last_chunk: *last_chunk,
                metadata: None,
            })),
            // Carries the usage extension when the update ends an execution.
            _ if head.status_version == state.version => {
                Some(StreamResponse::StatusUpdate(head.status_update()))
            }
            _ => None,
        };
        if let Some(u) = update {
            if let Ok(body) = serde_json::to_string(&u) {
                out.push(PushUpdate {
                    seq: state.version,
                    body,
                });
            }
        }
    }
    out
}

// ------------------------------------------------------------------ retries

/// What one attempt to deliver gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptResult {
    Delivered,
    /// Worth another attempt (network error, timeout, 5xx, 408, 429); `retry_after` from the
    /// receiver's `Retry-After`.
    Transient {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Another attempt would fail the same way (other 4xx, refused address, a redirect).
    Permanent {
        reason: String,
    },
}

/// What to do with a delivery after an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextStep {
    Done,
    RetryIn(Duration),
    /// Give up: into the dead-letter queue, with the reason.
    DeadLetter(String),
}

/// Exponential backoff with jitter, up to a horizon measured from the first attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Pause after the first failure (doubles after each further one).
    pub base: Duration,
    /// Longest pause between two attempts.
    pub cap: Duration,
    /// No attempt starts later than this after the first one.
    pub horizon: Duration,
}

/// Default retry horizon: a receiver may be down this long without losing an update.
pub const DEFAULT_RETRY_HORIZON: Duration = Duration::from_secs(24 * 3600);
/// Longest pause between two attempts (the SQS visibility timeout can be at most 12 hours).
pub const MAX_RETRY_PAUSE: Duration = Duration::from_secs(15 * 60);

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            base: Duration::from_secs(1),
            cap: MAX_RETRY_PAUSE,
            horizon: DEFAULT_RETRY_HORIZON,
        }
    }
}

impl RetryPolicy {
    /// `attempts` counts the attempt just made (1 for the first); `elapsed` is the time since
    /// the first attempt; `jitter` is uniform in [0, 1).
    pub fn next(
        &self,
        result: &AttemptResult,
        attempts: u32,
        elapsed: Duration,
        jitter: f64,
    ) -> NextStep {
        match result {
            AttemptResult::Delivered => NextStep::Done,
            AttemptResult::Permanent { reason } => {
                NextStep::DeadLetter(format!("permanent failure on attempt {attempts}: {reason}"))
            }
            AttemptResult::Transient {
                reason,
                retry_after,
            } => {
                let exp = self
                    .base
                    .saturating_mul(1u32 << attempts.saturating_sub(1).min(20))
                    .min(self.cap);
                // Equal jitter: at least half the backoff, so pauses still grow.
                let jitter = jitter.clamp(0.0, 1.0);
                let pause = exp / 2 + exp.mul_f64(jitter / 2.0);
                let pause = match retry_after {
                    Some(ra) => (*ra).max(pause).min(self.cap.max(*ra)),
                    None => pause,
                };
                if elapsed.saturating_add(pause) > self.horizon {
                    NextStep::DeadLetter(format!(
                        "gave up after {attempts} attempts over {}s (retry horizon {}s): {reason}",
                        elapsed.as_secs(),
                        self.horizon.as_secs()
                    ))
                } else {
                    NextStep::RetryIn(pause)
                }
            }
        }
    }
}

/// Classifies an HTTP response status (redirects are not followed: permanent).
pub fn classify_status(status: u16, retry_after: Option<Duration>) -> AttemptResult {
    match status {
        200..=299 => AttemptResult::Delivered,
        408 | 429 | 500..=599 => AttemptResult::Transient {
            reason: format!("the receiver answered HTTP {status}"),
            retry_after,
        },
        300..=399 => AttemptResult::Permanent {
            reason: format!("the receiver answered HTTP {status} (redirects are not followed)"),
        },
        _ => AttemptResult::Permanent {
            reason: format!("the receiver answered HTTP {status}"),
        },
    }
}

/// Parses `Retry-After` (delay-seconds or an HTTP date, relative to `now_unix`).
pub fn parse_retry_after(value: &str, now_unix: i64) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = ::time::OffsetDateTime::parse(v, &::time::format_description::well_known::Rfc2822)
        .ok()?
        .unix_timestamp();
    Some(Duration::from_secs(
        at.saturating_sub(now_unix).max(0) as u64
    ))
}

#[cfg(test)]
#[path = "push_tests.rs"]
mod tests;
