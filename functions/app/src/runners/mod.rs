//! Every loop that drives the service from outside a request: the embedded feed relay and the
//! push outbox worker here, the queue pollers of the local server and the Lambda handlers in
//! `functions/`. They hand each turn to the service's turn handler, one at a time per task
//! (`TaskLocks`), and pace retries with the one `jitter`.

pub mod feed;
pub mod push_outbox;

pub use crate::locks::{jitter, TaskGuard, TaskLocks};
pub use crate::service::turns::{handle_turn, handle_turn_within, TurnOutcome};
pub use feed::run_feed_relay;
