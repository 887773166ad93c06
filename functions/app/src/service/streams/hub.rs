//! One tailer per watched task in this process: it reads the task's events after the last
//! position it saw, whenever a commit here is announced or the poll interval passes (commits
//! of other processes announce nothing here), and hands each batch to every subscriber of the
//! task through a bounded broadcast channel. It ends when the task reaches a terminal state
//! or nobody is subscribed any more.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use taskledger_domain::ids::{Principal, TaskId};
use taskledger_domain::ports::EventStore;
use taskledger_domain::projection::stream::{item, revoked, StreamItem};
use taskledger_domain::task::stored::StoredEvent;
use tokio::sync::{broadcast, Notify};
use tracing::{debug, warn};

/// Batches a subscriber may fall behind by before it is disconnected (it resumes from the
/// last event it received with `Last-Event-ID`): the per-stream buffer limit.
pub const STREAM_BUFFER_BATCHES: usize = 64;

/// The updates of the events in `(after, upto]`, and who lost sight of the task among them
/// (the event's sequence, and the principals).
#[derive(Debug)]
pub struct Batch {
    pub after: u64,
    pub upto: u64,
    pub items: Vec<StreamItem>,
    pub revoked: Vec<(u64, Vec<Principal>)>,
}

/// The revocations among `events` (`projection::stream::revoked`).
pub(super) fn revocations(events: &[StoredEvent]) -> Vec<(u64, Vec<Principal>)> {
    events
        .iter()
        .filter_map(|e| revoked(e).map(|p| (e.seq, p)))
        .collect()
}

struct Tail {
    tx: broadcast::Sender<Arc<Batch>>,
    wake: Arc<Notify>,
}

struct Inner {
    store: Arc<dyn EventStore>,
    poll: Duration,
    tails: Mutex<HashMap<TaskId, Tail>>,
}

/// The tailers of this process.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

/// A subscription to a task's batches; `fresh` when its tailer was started for it, at its
/// position (so the first batch is its backlog).
pub struct Watch {
    pub rx: broadcast::Receiver<Arc<Batch>>,
    pub fresh: bool,
}

impl Hub {
    pub fn new(store: Arc<dyn EventStore>, poll: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                poll,
                tails: Mutex::default(),
            }),
        }
    }

    /// Subscribes to `task_id`'s batches, starting a tailer after `after` if none runs.
    /// (`context_id` is the task's: artifact updates carry it).
    pub fn watch(&self, task_id: &TaskId, context_id: &str, after: u64) -> Watch {
        let mut tails = self.inner.tails.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tail) = tails.get(task_id) {
            return Watch {
                rx: tail.tx.subscribe(),
                fresh: false,
            };
        }
        let (tx, rx) = broadcast::channel(STREAM_BUFFER_BATCHES);
        let wake = Arc::new(Notify::new());
        tails.insert(
            task_id.clone(),
            Tail {
                tx: tx.clone(),
                wake: wake.clone(),
            },
        );
        let target = Target {
            task_id: task_id.clone(),
            context_id: context_id.to_string(),
        };
        tokio::spawn(tail(self.inner.clone(), target, tx, wake, after));
        Watch { rx, fresh: true }
    }

    /// A commit of `task_id` was made (here, or seen by a relay): its tailer reads now.
    pub fn wake(&self, task_id: &TaskId) {
        let tails = self.inner.tails.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tail) = tails.get(task_id) {
            tail.wake.notify_one();
        }
    }

    /// How many tasks have a tailer in this process.
    pub fn tailing(&self) -> usize {
        self.inner
            .tails
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }
}

impl Inner {
    /// Removes the tailer of `task_id` if it is `tx`'s and nobody listens (or `always`).
    fn retire(&self, task_id: &TaskId, tx: &broadcast::Sender<Arc<Batch>>, always: bool) -> bool {
        let mut tails = self.tails.lock().unwrap_or_else(|p| p.into_inner());
        let ours = tails.get(task_id).is_some_and(|t| t.tx.same_channel(tx));
        if ours && (always || tx.receiver_count() == 0) {
            tails.remove(task_id);
            return true;
        }
        !ours
    }
}

/// The task a tailer reads.
struct Target {
    task_id: TaskId,
    context_id: String,
}

async fn tail(
    inner: Arc<Inner>,
    target: Target,
    tx: broadcast::Sender<Arc<Batch>>,
    wake: Arc<Notify>,
    mut after: u64,
) {
    let Target {
        task_id,
        context_id,
    } = target;
    debug!(task_id = %task_id, after, "tailing");
    loop {
        if inner.retire(&task_id, &tx, false) {
            debug!(task_id = %task_id, "no subscriber left");
            return;
        }
        match inner.store.events(&task_id, after).await {
            Ok(events) if !events.is_empty() => {
                let upto = events.last().map_or(after, |e| e.seq);
                let items: Vec<StreamItem> = events
                    .iter()
                    .filter_map(|e| item(task_id.as_str(), &context_id, e))
                    .collect();
                let terminal = items
                    .iter()
                    .any(|i| i.state.is_some_and(|s| s.is_terminal()));
                let revoked = revocations(&events);
                // No receiver left is fine: the next round retires the tailer.
                let _ = tx.send(Arc::new(Batch {
                    after,
                    upto,
                    items,
                    revoked,
                }));
                after = upto;
                if terminal {
                    inner.retire(&task_id, &tx, true);
                    return;
                }
                continue;
            }
            Ok(_) => {}
            Err(e) => {
                warn!(task_id = %task_id, error = %e, "a stream cannot read the task's events")
            }
        }
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(inner.poll) => {}
        }
    }
}
