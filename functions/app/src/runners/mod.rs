//! Every loop that drives the service: the turn handler (one queued turn → the agent), the
//! embedded feed relay, the in-process dispatcher, the push outbox worker — with the one
//! per-task lock map they share and the one jitter helper.

pub mod dispatch;
pub mod feed;
mod locks;
pub mod push_outbox;
pub mod turns;

pub use feed::run_feed_relay;
pub use locks::{TaskGuard, TaskLocks};
pub use turns::{handle_turn, handle_turn_within, TurnOutcome};

/// Uniform in [0, 1): the jitter of every backoff (commit retries, push retries).
pub fn jitter() -> f64 {
    (uuid::Uuid::new_v4().as_u128() % 1_000_000) as f64 / 1_000_000.0
}
