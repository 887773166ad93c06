//! One subscriber's stream: what follows its position, from its tailer's batches, filled from
//! the store itself whenever a batch does not start where the subscriber is (it joined a
//! tailer that was ahead, or it just subscribed). It ends after the update that settles the
//! stream, at its deadline, when it falls more than the buffer limit behind, or — read from
//! the same events, no store read of its own — where its principal lost sight of the task.

use std::collections::VecDeque;
use std::sync::Arc;

use taskledger_domain::ids::{Principal, TaskId};
use taskledger_domain::ports::EventStore;
use taskledger_domain::projection::stream::{item, StreamItem};
use taskledger_domain::wire::TaskState;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::hub::{Batch, Hub};
use super::{StreamEvent, Until};

pub(super) struct Reader {
    store: Arc<dyn EventStore>,
    task_id: TaskId,
    context_id: String,
    /// The last event sequence the subscriber has (or will have, once `pending` is sent).
    after: u64,
    until: Until,
    rx: tokio::sync::broadcast::Receiver<Arc<Batch>>,
    pending: VecDeque<StreamItem>,
    first: Option<StreamEvent>,
    needs_backlog: bool,
    done: bool,
    deadline: Option<Instant>,
    /// Whose stream it is.
    who: Principal,
    /// Where `who` lost sight of the task: nothing from this event on is sent.
    cut: Option<u64>,
}

/// Where a stream starts.
pub(super) struct Start {
    pub task_id: TaskId,
    pub context_id: String,
    pub after: u64,
    /// The task's state at `after`: a stream that is settled already ends after `first`.
    pub state: TaskState,
    pub first: Option<StreamEvent>,
    /// The subscriber.
    pub who: Principal,
}

impl Reader {
    pub fn open(
        hub: &Hub,
        store: Arc<dyn EventStore>,
        start: Start,
        until: Until,
        deadline: Option<Instant>,
    ) -> Self {
        let watch = hub.watch(&start.task_id, &start.context_id, start.after);
        Self {
            store,
            done: until.ends_at(start.state),
            task_id: start.task_id,
            context_id: start.context_id,
            after: start.after,
            until,
            rx: watch.rx,
            pending: VecDeque::new(),
            first: start.first,
            needs_backlog: !watch.fresh,
            deadline,
            who: start.who,
            cut: None,
        }
    }

    /// Notes where the subscriber loses sight of the task, if these revocations say so, and
    /// drops what would follow.
    fn revoke(&mut self, revoked: &[(u64, Vec<Principal>)]) {
        let first = revoked
            .iter()
            .filter(|(_, who)| who.contains(&self.who))
            .map(|(seq, _)| *seq)
            .min();
        if let Some(seq) = first {
            debug!(task_id = %self.task_id, seq, principal = %self.who, "access revoked: the stream ends");
            self.cut = Some(self.cut.map_or(seq, |c| c.min(seq)));
        }
        if let Some(cut) = self.cut {
            self.pending.retain(|i| i.seq < cut);
        }
    }

    pub async fn next(&mut self) -> Option<StreamEvent> {
        if let Some(first) = self.first.take() {
            return Some(first);
        }
        loop {
            if self.done {
                return None;
            }
            if let Some(item) = self.pending.pop_front() {
                if self.cut.is_some_and(|c| item.seq >= c) {
                    self.done = true;
                    return None;
                }
                if item.state.is_some_and(|s| self.until.ends_at(s)) {
                    self.done = true;
                }
                return Some(StreamEvent {
                    id: Some(item.seq),
                    generation: Some(item.generation),
                    body: item.body.into(),
                });
            }
            if self.cut.is_some() {
                // Everything before the revocation has been sent.
                self.done = true;
                return None;
            }
            if self.needs_backlog {
                self.needs_backlog = false;
                if !self.refill().await {
                    return None;
                }
                continue;
            }
            let received = match self.deadline {
                None => self.rx.recv().await,
                Some(at) => match tokio::time::timeout_at(at, self.rx.recv()).await {
                    Ok(r) => r,
                    Err(_) => {
                        debug!(task_id = %self.task_id, after = self.after, "stream deadline: closing, resumable");
                        return None;
                    }
                },
            };
            match received {
                Ok(batch) if batch.after > self.after => {
                    if !self.refill().await {
                        return None;
                    }
                }
                Ok(batch) => self.take(&batch),
                Err(RecvError::Lagged(skipped)) => {
                    warn!(task_id = %self.task_id, after = self.after, skipped,
                        "a subscriber fell behind the stream buffer: disconnected, resumable");
                    return None;
                }
                Err(RecvError::Closed) => {
                    // The tailer is done (the task is terminal): the rest is in the store.
                    if !self.refill().await || self.pending.is_empty() {
                        return None;
                    }
                }
            }
        }
    }

    fn take(&mut self, batch: &Batch) {
        let after = self.after;
        self.pending
            .extend(batch.items.iter().filter(|i| i.seq > after).cloned());
        let revoked: Vec<_> = batch
            .revoked
            .iter()
            .filter(|(seq, _)| *seq > after)
            .cloned()
            .collect();
        self.revoke(&revoked);
        self.after = self.after.max(batch.upto);
    }

    /// Reads what follows `after` from the store; `false` when the store cannot be read.
    async fn refill(&mut self) -> bool {
        match self.store.events(&self.task_id, self.after).await {
            Ok(events) => {
                let (task_id, context_id) = (self.task_id.as_str(), self.context_id.as_str());
                self.pending
                    .extend(events.iter().filter_map(|e| item(task_id, context_id, e)));
                self.revoke(&super::hub::revocations(&events));
                if let Some(last) = events.last() {
                    self.after = last.seq;
                }
                true
            }
            Err(e) => {
                warn!(task_id = %self.task_id, error = %e, "a stream cannot read the task's events: closing, resumable");
                false
            }
        }
    }
}
