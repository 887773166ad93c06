//! Every loop that drives the service from outside a request, and the one relay they share: the
//! embedded feed reader, the relay itself (a committed event → a turn, deliveries), the one push
//! attempt loop and the embedded outbox worker. The queue pollers of the local server and the
//! Lambda handlers in `functions/` call the same pieces. A task's jobs run one at a time, in
//! order (`PerTask`); retries are paced with the one `jitter`.

pub mod archive;
pub mod feed;
pub mod push;
pub mod reaper;
pub mod relay;

pub use crate::per_task::{jitter, PerTask};
pub use crate::service::turns::{
    give_up_turn, handle_turn, handle_turn_within, TurnOutcome, DEAD_LETTERED,
    IN_PROCESS_TURN_ATTEMPTS, TURN_FAILED,
};
pub use archive::{Archiver, ArchiverError};
pub use feed::{run_feed, run_feed_relay};
pub use reaper::{
    reap_stalled, run_reaper, stall_deadline, ReapReport, DEFAULT_STALL_DEADLINE_SECS,
};
pub use relay::{InProcessTurns, Relay, RelayError, Relayed};
