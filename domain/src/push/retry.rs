//! The retry policy: what one delivery attempt gave, exponential backoff with jitter up to a
//! horizon, and how HTTP statuses and `Retry-After` are read.

use std::time::Duration;

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

/// The longest failure reason kept with a delivery, in bytes.
pub const MAX_FAILURE_REASON_BYTES: usize = 300;

impl AttemptResult {
    /// The result with its reason as it may be kept and shown (`failure_reason`).
    pub fn cleaned(self) -> Self {
        match self {
            Self::Transient {
                reason,
                retry_after,
            } => Self::Transient {
                reason: failure_reason(&reason),
                retry_after,
            },
            Self::Permanent { reason } => Self::Permanent {
                reason: failure_reason(&reason),
            },
            Self::Delivered => Self::Delivered,
        }
    }
}

/// A failure reason as it is kept with a delivery and shown (the board, logs, the dead-letter
/// queue): every URL in it replaced by `<url>` — a webhook URL is a bearer capability (its
/// query string often a secret), and a reason may be read by others than the config's owner —
/// and at most `MAX_FAILURE_REASON_BYTES`.
pub fn failure_reason(reason: &str) -> String {
    let words: Vec<String> = reason
        .split(char::is_whitespace)
        .map(|w| match w.find("://") {
            None => w.to_string(),
            Some(at) => {
                let start = w[..at]
                    .rfind(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
                    .map_or(0, |p| p + 1);
                // What closes the URL (a bracket, a quote, a full stop) stays.
                let end = w
                    .trim_end_matches([')', ']', '"', '\'', '>', ',', '.', ';', ':'])
                    .len()
                    .max(at + 3);
                format!("{}<url>{}", &w[..start], &w[end..])
            }
        })
        .collect();
    let mut out = words.join(" ");
    if out.len() > MAX_FAILURE_REASON_BYTES {
        let mut end = MAX_FAILURE_REASON_BYTES;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    out
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
