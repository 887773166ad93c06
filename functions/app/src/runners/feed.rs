//! The embedded relay: tails the store's work feed and runs each turn on the turn handler, one
//! turn at a time per task. The consumer's cursor advances past an entry only once its turn (and
//! every earlier one) is done, so work committed before a crash runs after the restart.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use taskledger_domain::ports::WorkFeed;
use tracing::{debug, warn};

use crate::locks::TaskLocks;
use crate::service::turns::handle_turn;
use crate::service::Service;

/// Feed entries the relay reads at once.
pub const RELAY_BATCH: u32 = 100;
/// The relay polls at least this often, even without a nudge.
const RELAY_IDLE: Duration = Duration::from_millis(250);

/// Positions in flight, and the highest dispatched: the cursor may pass only finished ones.
#[derive(Default)]
struct Progress {
    in_flight: BTreeSet<u64>,
    dispatched: u64,
}

impl Progress {
    fn start(&mut self, pos: u64) {
        self.in_flight.insert(pos);
        self.dispatched = self.dispatched.max(pos);
    }

    /// The position is done; returns how far the cursor may go.
    fn finish(&mut self, pos: u64) -> u64 {
        self.in_flight.remove(&pos);
        self.in_flight
            .first()
            .map_or(self.dispatched, |first| first.saturating_sub(1))
    }
}

pub async fn run_feed_relay(svc: Arc<Service>, feed: Arc<dyn WorkFeed>, consumer: &'static str) {
    let locks = TaskLocks::default();
    let mut read = match feed.feed_cursor(consumer).await {
        Ok(c) => c,
        Err(e) => {
            warn!(error = %e, "relay cannot read its cursor");
            0
        }
    };
    let progress = Arc::new(Mutex::new(Progress {
        in_flight: BTreeSet::new(),
        dispatched: read,
    }));
    loop {
        let entries = match feed.feed_after(read, RELAY_BATCH).await {
            Ok(e) => e,
            Err(e) => {
                warn!(error = %e, "relay cannot read the feed");
                Vec::new()
            }
        };
        for (pos, turn) in entries {
            read = pos;
            if let Ok(mut p) = progress.lock() {
                p.start(pos);
            }
            let (svc, progress, feed, locks) =
                (svc.clone(), progress.clone(), feed.clone(), locks.clone());
            tokio::spawn(async move {
                let guard = locks.acquire(&turn.task_id).await;
                match handle_turn(&svc, &turn).await {
                    Ok(outcome) => debug!(task_id = %turn.task_id, ?outcome, "turn handled"),
                    Err(e) => warn!(task_id = %turn.task_id, error = %e, "turn failed"),
                }
                drop(guard);
                let safe = progress.lock().ok().map(|mut p| p.finish(pos));
                if let Some(c) = safe {
                    if let Err(e) = feed.save_feed_cursor(consumer, c).await {
                        warn!(error = %e, "relay cannot save its cursor");
                    }
                }
            });
        }
        tokio::select! {
            _ = svc.work_committed() => {}
            _ = tokio::time::sleep(RELAY_IDLE) => {}
        }
    }
}
