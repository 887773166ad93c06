//! How long a finished task is kept: a period counted from its terminal status (the time of the
//! event that finished it), a deployment default with per-tenant overrides, 0 = forever. A task
//! past its expiry is gone from the caller's view at once — not found, not listed, not
//! counted — whenever the store gets round to deleting it.

use std::collections::BTreeMap;
use std::fmt;

use crate::task::TaskHead;
use crate::time::Timestamp;

/// The default period: 90 days.
pub const DEFAULT_RETENTION_SECS: u64 = 90 * 86_400;
/// The longest period a setting may name: ten years (0, forever, is always allowed).
pub const MAX_RETENTION_SECS: u64 = 3_650 * 86_400;
/// Tenants one setting may override.
pub const MAX_TENANT_OVERRIDES: usize = 1_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetentionError {
    #[error("{0:?} is not a period (a whole number of seconds, or one with s, m, h or d)")]
    NotAPeriod(String),
    #[error("{value:?} is past the longest retention of {MAX_RETENTION_SECS} s (ten years; 0 keeps tasks forever)")]
    TooLong { value: String },
    #[error("{0:?} is not tenant=period")]
    NotAnOverride(String),
    #[error("{0} tenant overrides, more than {MAX_TENANT_OVERRIDES}")]
    TooManyOverrides(usize),
}

/// A retention period; `None` inside: forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period(Option<u64>);

impl Period {
    pub const FOREVER: Period = Period(None);

    /// `90d`, `12h`, `30m`, `45s` or plain seconds; `0` is forever. Negative, fractional or
    /// past `MAX_RETENTION_SECS`: refused.
    pub fn parse(raw: &str) -> Result<Self, RetentionError> {
        let v = raw.trim();
        let (digits, unit) = match v.char_indices().last() {
            Some((i, c)) if c.is_ascii_alphabetic() => (&v[..i], c.to_ascii_lowercase()),
            _ => (v, 's'),
        };
        let scale = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3_600,
            'd' => 86_400,
            _ => return Err(RetentionError::NotAPeriod(raw.into())),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(RetentionError::NotAPeriod(raw.into()));
        }
        let too_long = || RetentionError::TooLong { value: raw.into() };
        let n: u64 = digits.parse().map_err(|_| too_long())?;
        let secs = n.checked_mul(scale).ok_or_else(too_long)?;
        match secs {
            0 => Ok(Self::FOREVER),
            s if s > MAX_RETENTION_SECS => Err(too_long()),
            s => Ok(Self(Some(s))),
        }
    }

    pub fn secs(self) -> Option<u64> {
        self.0
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("forever"),
            Some(s) => write!(f, "{s} s"),
        }
    }
}

/// The deployment's retention: a default period and tenants' own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    default: Period,
    tenants: BTreeMap<String, Period>,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            default: Period(Some(DEFAULT_RETENTION_SECS)),
            tenants: BTreeMap::new(),
        }
    }
}

impl Retention {
    /// Every task kept forever.
    pub fn forever() -> Self {
        Self {
            default: Period::FOREVER,
            tenants: BTreeMap::new(),
        }
    }

    /// A default period and overrides `tenant=period,…` (empty: none).
    pub fn parse(default: &str, overrides: &str) -> Result<Self, RetentionError> {
        let default = Period::parse(default)?;
        let mut tenants = BTreeMap::new();
        for o in overrides
            .split(',')
            .map(str::trim)
            .filter(|o| !o.is_empty())
        {
            let (tenant, period) = o
                .split_once('=')
                .filter(|(t, _)| !t.trim().is_empty())
                .ok_or_else(|| RetentionError::NotAnOverride(o.into()))?;
            tenants.insert(tenant.trim().to_string(), Period::parse(period)?);
        }
        if tenants.len() > MAX_TENANT_OVERRIDES {
            return Err(RetentionError::TooManyOverrides(tenants.len()));
        }
        Ok(Self { default, tenants })
    }

    /// The period of `tenant`'s finished tasks.
    pub fn period(&self, tenant: &str) -> Period {
        self.tenants.get(tenant).copied().unwrap_or(self.default)
    }

    /// Whether any tenant's tasks ever expire.
    pub fn is_forever(&self) -> bool {
        self.default == Period::FOREVER && self.tenants.values().all(|p| *p == Period::FOREVER)
    }

    /// The overridden tenants and their periods.
    pub fn overrides(&self) -> impl Iterator<Item = (&str, Period)> {
        self.tenants.iter().map(|(t, p)| (t.as_str(), *p))
    }

    pub fn default_period(&self) -> Period {
        self.default
    }

    /// When a finished task of `tenant` whose terminal status is at `finished` expires.
    pub fn expiry(&self, tenant: &str, finished: Timestamp) -> Option<Timestamp> {
        let secs = self.period(tenant).secs()?;
        Some(finished.plus_secs(i64::try_from(secs).unwrap_or(i64::MAX)))
    }

    /// When the task expires: `None` while it is not finished, or is kept forever.
    pub fn expires_at(&self, head: &TaskHead) -> Option<Timestamp> {
        if !head.status.state.is_terminal() {
            return None;
        }
        let finished = head.status.timestamp.unwrap_or(head.created_at);
        self.expiry(head.owner.tenant.as_str(), finished)
    }

    /// Whether the task is past its expiry at `now` (and so is gone for every caller).
    pub fn is_expired(&self, head: &TaskHead, now: Timestamp) -> bool {
        self.expires_at(head).is_some_and(|at| at <= now)
    }

    /// The status time before which `tenant`'s finished tasks have expired at `now`.
    pub fn finished_before(&self, tenant: &str, now: Timestamp) -> Option<Timestamp> {
        let secs = self.period(tenant).secs()?;
        Some(now.minus_secs(secs))
    }
}

#[cfg(test)]
#[path = "retention_tests.rs"]
mod tests;
