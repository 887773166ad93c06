//! Abuse limits as token buckets per principal: its request rate (`rate` requests a second, up
//! to `burst` at once) and the tasks it may create a minute. Over one, a request is refused with
//! `RateLimited` (HTTP 429 with `Retry-After`, JSON-RPC reason `RATE_LIMITED`, gRPC
//! RESOURCE_EXHAUSTED) before any work. Per process: behind API Gateway its throttling is the
//! tenant-wide limit.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use taskledger_domain::error::ErrorKind;
use taskledger_domain::ids::Principal;

use crate::error::AppError;

/// Burst a principal may send at once, as a multiple of its per-second rate.
pub const BURST_SECONDS: u32 = 2;
/// Principals tracked at most; past it, buckets that have refilled are forgotten (a full bucket
/// is the same as none).
pub const MAX_TRACKED_PRINCIPALS: usize = 100_000;

/// A rate per principal: tokens refill at `per_second`, at most `burst` held.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: u32,
    /// What the rate counts, for the refusal ("200 requests a second").
    pub shown: u32,
    pub unit: &'static str,
}

impl RateLimit {
    /// `per_second` requests a second, bursts of `BURST_SECONDS` times that; 0 is no limit.
    pub fn per_second(per_second: u32) -> Option<Self> {
        (per_second > 0).then(|| Self {
            per_second: per_second as f64,
            burst: per_second.saturating_mul(BURST_SECONDS),
            shown: per_second,
            unit: "requests a second",
        })
    }

    /// `per_minute` new tasks a minute, all of them at once at most; 0 is no limit.
    pub fn tasks_per_minute(per_minute: u32) -> Option<Self> {
        (per_minute > 0).then(|| Self {
            per_second: per_minute as f64 / 60.0,
            burst: per_minute,
            shown: per_minute,
            unit: "new tasks a minute",
        })
    }
}

pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<Principal, (f64, Instant)>>,
}

impl RateLimiter {
    pub fn new(limit: RateLimit) -> Self {
        Self {
            limit,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from `who`'s bucket, or refuses it.
    pub fn admit(&self, who: &Principal) -> Result<(), AppError> {
        self.admit_at(who, Instant::now())
    }

    fn admit_at(&self, who: &Principal, now: Instant) -> Result<(), AppError> {
        let (rate, burst) = (self.limit.per_second, self.limit.burst as f64);
        let mut buckets = self
            .buckets
            .lock()
            .map_err(|_| AppError::protocol(ErrorKind::Internal, "rate limiter lock poisoned"))?;
        if buckets.len() >= MAX_TRACKED_PRINCIPALS && !buckets.contains_key(who) {
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.saturating_duration_since(*at).as_secs_f64() * rate < burst
            });
        }
        let (tokens, at) = buckets.entry(who.clone()).or_insert((burst, now));
        *tokens = (*tokens + now.saturating_duration_since(*at).as_secs_f64() * rate).min(burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            return Ok(());
        }
        Err(AppError::protocol(
            ErrorKind::RateLimited,
            format!(
                "over {} {} for {who}; retry later",
                self.limit.shown, self.limit.unit
            ),
        ))
    }
}

/// The streams each principal holds open, at most `max` (SendStreamingMessage and
/// SubscribeToTask); a stream counts until it ends or its client goes away.
pub struct StreamLimit {
    max: usize,
    open: Mutex<HashMap<Principal, usize>>,
}

/// One open stream of a principal; dropping it (the stream ended) frees its place.
pub struct StreamSlot {
    limit: std::sync::Arc<StreamLimit>,
    who: Principal,
}

impl StreamLimit {
    pub fn new(max: usize) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self {
            max,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A place for one more stream of `who`, or the refusal.
    pub fn acquire(self: &std::sync::Arc<Self>, who: &Principal) -> Result<StreamSlot, AppError> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| AppError::protocol(ErrorKind::Internal, "stream limit lock poisoned"))?;
        let n = open.entry(who.clone()).or_insert(0);
        if *n >= self.max {
            return Err(AppError::protocol(
                ErrorKind::RateLimited,
                format!(
                    "{who} has {} streams open, the most a principal may; close one first",
                    self.max
                ),
            ));
        }
        *n += 1;
        Ok(StreamSlot {
            limit: self.clone(),
            who: who.clone(),
        })
    }

    /// Streams `who` holds open now.
    pub fn open_for(&self, who: &Principal) -> usize {
        self.open
            .lock()
            .map(|o| o.get(who).copied().unwrap_or(0))
            .unwrap_or(0)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.limit.open.lock() {
            if let Some(n) = open.get_mut(&self.who) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    open.remove(&self.who);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn given_a_full_bucket_the_burst_passes_and_one_more_is_refused() {
        let limiter = RateLimiter::new(RateLimit::per_second(5).unwrap());
        let (alice, bob) = (
            Principal::new("acme", "alice").unwrap(),
            Principal::new("acme", "bob").unwrap(),
        );
        let t0 = Instant::now();
        for i in 0..10 {
            assert!(
                limiter.admit_at(&alice, t0).is_ok(),
                "request {i} of the burst"
            );
        }
        let e = limiter.admit_at(&alice, t0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::RateLimited);
        // Another principal has its own bucket.
        assert!(limiter.admit_at(&bob, t0).is_ok());
        // A fifth of a second later one token is back, and only one.
        let later = t0 + Duration::from_millis(200);
        assert!(limiter.admit_at(&alice, later).is_ok());
        assert!(limiter.admit_at(&alice, later).is_err());
    }

    #[test]
    fn tasks_a_minute_pass_up_to_the_limit_and_refill_over_the_minute() {
        let limiter = RateLimiter::new(RateLimit::tasks_per_minute(3).unwrap());
        let alice = Principal::new("acme", "alice").unwrap();
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.admit_at(&alice, t0).is_ok());
        }
        let e = limiter.admit_at(&alice, t0).unwrap_err();
        assert!(e.to_string().contains("3 new tasks a minute"), "{e}");
        // One task's worth refills in 20 s.
        assert!(limiter
            .admit_at(&alice, t0 + Duration::from_secs(19))
            .is_err());
        assert!(limiter
            .admit_at(&alice, t0 + Duration::from_secs(40))
            .is_ok());
    }

    #[test]
    fn streams_up_to_the_limit_open_one_more_is_refused_and_a_closed_one_frees_its_place() {
        let limit = StreamLimit::new(2);
        let alice = Principal::new("acme", "alice").unwrap();
        let a = limit.acquire(&alice).unwrap();
        let _b = limit.acquire(&alice).unwrap();
        let e = limit.acquire(&alice).err().expect("refused");
        assert_eq!(e.kind(), ErrorKind::RateLimited);
        drop(a);
        assert_eq!(limit.open_for(&alice), 1);
        assert!(limit.acquire(&alice).is_ok());
    }

    #[test]
    fn zero_is_no_limit() {
        assert_eq!(RateLimit::per_second(0), None);
        assert_eq!(RateLimit::per_second(3).unwrap().burst, 6);
    }
}
