//! The embedded store's feed reader: tails the feed of committed events and hands each to the
//! relay, in commit order per task (tasks side by side). The consumer's cursor advances past
//! an entry only once its relay (a turn run in-process, deliveries queued in the outbox) and
//! every earlier one are done, so work committed before a crash is done after the restart.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use taskledger_domain::ports::WorkFeed;
use tracing::warn;

use super::relay::{InProcessTurns, Relay};
use crate::per_task::PerTask;
use crate::service::Service;

/// Feed entries read at once.
pub const RELAY_BATCH: u32 = 100;
/// The reader looks at the feed at least this often, even without a nudge.
const RELAY_IDLE: Duration = Duration::from_millis(250);
/// Attempts at relaying one entry before it is given up on (and said so).
const RELAY_ATTEMPTS: u32 = 3;
/// The cursor is written at most this often (the first move after a quiet spell at once): a
/// write per relayed entry cost two SQLite transactions per task. After a crash the entries
/// since the last write are relayed again, which does nothing twice (a turn that ran is found
/// done, an outbox delivery already queued is not queued again).
pub const CURSOR_SAVE_EVERY: Duration = Duration::from_millis(50);

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

/// Writes the cursor as it moves, at most once per `CURSOR_SAVE_EVERY`; ends with the relay.
async fn save_cursor(
    feed: Arc<dyn WorkFeed>,
    consumer: &'static str,
    mut safe: tokio::sync::watch::Receiver<u64>,
) {
    while safe.changed().await.is_ok() {
        let c = *safe.borrow_and_update();
        if let Err(e) = feed.save_feed_cursor(consumer, c).await {
            warn!(error = %e, "relay cannot save its cursor");
        }
        tokio::time::sleep(CURSOR_SAVE_EVERY).await;
    }
}

/// Relays the feed's work requests to turns run in this process (no push notifications).
pub async fn run_feed_relay(svc: Arc<Service>, feed: Arc<dyn WorkFeed>, consumer: &'static str) {
    let relay = Relay::new(InProcessTurns::new(svc.clone()));
    run_feed(svc, feed, relay, consumer).await
}

/// Relays every feed entry with `relay`, until the process ends.
pub async fn run_feed(
    svc: Arc<Service>,
    feed: Arc<dyn WorkFeed>,
    relay: Relay,
    consumer: &'static str,
) {
    let relay = Arc::new(relay);
    let per_task = PerTask::default();
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
    let (safe, saved) = tokio::sync::watch::channel(read);
    tokio::spawn(save_cursor(feed.clone(), consumer, saved));
    loop {
        let entries = match feed.feed_after(read, RELAY_BATCH).await {
            Ok(e) => e,
            Err(e) => {
                warn!(error = %e, "relay cannot read the feed");
                Vec::new()
            }
        };
        for (pos, event) in entries {
            read = pos;
            if let Ok(mut p) = progress.lock() {
                p.start(pos);
            }
            let (relay, progress, safe) = (relay.clone(), progress.clone(), safe.clone());
            per_task.submit(&event.task_id.to_string(), async move {
                for attempt in 1..=RELAY_ATTEMPTS {
                    match relay.relay(&event).await {
                        Ok(_) => break,
                        Err(e) if attempt < RELAY_ATTEMPTS => {
                            warn!(error = %e, attempt, "relay failed; trying again");
                            tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
                        }
                        Err(e) => warn!(error = %e, "relay failed; the entry is given up"),
                    }
                }
                if let Some(c) = progress.lock().ok().map(|mut p| p.finish(pos)) {
                    safe.send_if_modified(|s| {
                        let moved = c > *s;
                        *s = (*s).max(c);
                        moved
                    });
                }
            });
        }
        tokio::select! {
            _ = svc.work_committed() => {}
            _ = tokio::time::sleep(RELAY_IDLE) => {}
        }
    }
}
