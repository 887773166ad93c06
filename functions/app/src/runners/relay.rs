//! The one relay, whichever feed drives it (the embedded store's feed, or the DynamoDB table's
//! stream through the relay Lambda or the local stream poller): a committed work request becomes
//! an agent turn on the turn queue, a pushed update becomes one delivery per subscription
//! registered before its event, read from the task's head at relay time (the one moment of
//! fan-out on every store). A replayed event makes the same turns and deliveries, which the
//! queues de-duplicate.

use std::sync::Arc;

use async_trait::async_trait;
use taskledger_domain::agent::turns::{AgentTurn, QueueError, TurnQueue};
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{
    load_state, CommittedEvent, EventStore, Housekeeping, LifecycleSink, PushQueue,
};
use taskledger_domain::projection::lifecycle::{self, DetailLevel};
use taskledger_domain::push;
use taskledger_domain::wire::PushProtocol;
use tokio::sync::Notify;

use crate::service::turns::{run_turn_retrying, Delivery};
use crate::service::Service;
use crate::telemetry::trace;
use tracing::Instrument;

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("{task_id}#{seq}: {source}")]
    Queue {
        task_id: TaskId,
        seq: u64,
        source: QueueError,
    },
    #[error("{task_id}#{seq}: the store failed (subscriptions, or expiry): {source}")]
    Store {
        task_id: TaskId,
        seq: u64,
        source: taskledger_domain::ports::StoreError,
    },
    #[error("{task_id}#{seq}: {source}")]
    Archive {
        task_id: TaskId,
        seq: u64,
        source: crate::archive::ArchiveRunError,
    },
}

impl RelayError {
    fn store(event: &CommittedEvent, source: taskledger_domain::ports::StoreError) -> Self {
        Self::Store {
            task_id: event.task_id.clone(),
            seq: event.seq,
            source,
        }
    }

    fn queue(event: &CommittedEvent, source: QueueError) -> Self {
        Self::Queue {
            task_id: event.task_id.clone(),
            seq: event.seq,
            source,
        }
    }
}

/// Where pushed updates go, and whose subscriptions they fan out to.
struct PushSide {
    store: Arc<dyn EventStore>,
    queue: Arc<dyn PushQueue>,
    /// Woken once deliveries are queued (the embedded push worker waits on it).
    queued: Option<Arc<Notify>>,
}

pub struct Relay {
    turns: Arc<dyn TurnQueue>,
    push: Option<PushSide>,
    /// The service of this process, told of each commit the feed shows (commits of other
    /// processes wake this one's streams and blocking sends at once).
    seen: Option<Arc<Service>>,
    /// A store whose items expire on their own: a finished task's items get their expiry.
    expiring: Option<Arc<dyn Housekeeping>>,
    /// Expiring tasks are archived (locally; on AWS the archive Lambda reads the stream).
    archive: Option<super::Archiver>,
    /// A task's lifecycle is published to a bus (ADR 038).
    lifecycle: Option<LifecycleSide>,
}

/// Where lifecycle events go, and the store their tasks are read from.
struct LifecycleSide {
    store: Arc<dyn EventStore>,
    sink: Arc<dyn LifecycleSink>,
    level: DetailLevel,
}

/// What relaying one event queued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Relayed {
    pub turns: usize,
    pub deliveries: usize,
    /// Lifecycle events published.
    pub published: usize,
}

impl Relay {
    /// A relay of work requests only (push notifications off).
    pub fn new(turns: Arc<dyn TurnQueue>) -> Self {
        Self {
            turns,
            push: None,
            seen: None,
            expiring: None,
            archive: None,
            lifecycle: None,
        }
    }

    /// Each status change, artifact update, gate and handoff is published to `sink`, told at
    /// `level`, its task read from `store`.
    pub fn publishing_to(
        mut self,
        store: Arc<dyn EventStore>,
        sink: Arc<dyn LifecycleSink>,
        level: DetailLevel,
    ) -> Self {
        self.lifecycle = Some(LifecycleSide { store, sink, level });
        self
    }

    /// Each event of an expiring task writes the task to the archive (after its expiry
    /// stamps).
    pub fn archiving_to(mut self, archiver: super::Archiver) -> Self {
        self.archive = Some(archiver);
        self
    }

    /// When an event finishes its task, `store` stamps the task's items with their expiry.
    pub fn stamping_expiry(mut self, store: Arc<dyn Housekeeping>) -> Self {
        self.expiring = Some(store);
        self
    }

    /// Tells `svc` of every commit relayed (its streams read the task now).
    pub fn announcing_to(mut self, svc: Arc<Service>) -> Self {
        self.seen = Some(svc);
        self
    }

    /// Pushed updates fan out to the subscriptions `store` holds, onto `queue`.
    pub fn with_push(
        mut self,
        store: Arc<dyn EventStore>,
        queue: Arc<dyn PushQueue>,
        queued: Option<Arc<Notify>>,
    ) -> Self {
        self.push = Some(PushSide {
            store,
            queue,
            queued,
        });
        self
    }

    /// Relays one committed event; events that call for nothing do nothing. What it queues
    /// joins the event's trace, through the relay's span.
    pub async fn relay(&self, event: &CommittedEvent) -> Result<Relayed, RelayError> {
        if let Some(svc) = &self.seen {
            svc.commit_seen(&event.task_id, event.seq);
        }
        let parent = trace::stored(event.trace.as_deref());
        let span = crate::exported_span!(
            "relay",
            task_id = %event.task_id,
            seq = event.seq,
            event_type = %event.event_type
        );
        trace::set_parent(&span, parent.as_ref());
        // What the relay queues carries the relay's own trace, as data.
        let here = trace::recorded(&span, parent.as_ref()).map(|t| t.to_stored());
        trace::within(parent, self.relay_in_trace(event, here).instrument(span)).await
    }

    async fn relay_in_trace(
        &self,
        event: &CommittedEvent,
        here: Option<String>,
    ) -> Result<Relayed, RelayError> {
        let mut done = Relayed::default();
        if let Some(mut turn) = event.turn() {
            turn.trace = here.clone();
            self.turns
                .enqueue(&[turn])
                .await
                .map_err(|e| RelayError::queue(event, e))?;
            done.turns = 1;
        }
        if let (Some(body), Some(side)) = (&event.pushed, &self.push) {
            done.deliveries = side.fan_out(event, body, here).await?;
            tracing::debug!(task_id = %event.task_id, seq = event.seq, deliveries = done.deliveries, "pushed");
        }
        if let (true, Some(side)) = (event.lifecycle, &self.lifecycle) {
            done.published = side.publish(event).await?;
        }
        if let (true, Some(store)) = (event.finished, &self.expiring) {
            let stamped = store
                .stamp_expiry(&event.task_id)
                .await
                .map_err(|source| RelayError::store(event, source))?;
            tracing::debug!(task_id = %event.task_id, stamped, "expiry stamped");
        }
        if let (true, Some(archiver)) = (event.expiring, &self.archive) {
            archiver
                .archive(std::slice::from_ref(event))
                .await
                .map_err(|e| RelayError::Archive {
                    task_id: event.task_id.clone(),
                    seq: event.seq,
                    source: e.source,
                })?;
        }
        Ok(done)
    }
}

/// The task of `event` as the store holds it now (`None`: gone).
async fn task_of(
    store: &dyn EventStore,
    event: &CommittedEvent,
) -> Result<Option<taskledger_domain::task::TaskAggregate>, RelayError> {
    load_state(store, &event.task_id)
        .await
        .map_err(|source| RelayError::store(event, source))
}

impl LifecycleSide {
    /// Publishes what `event` tells the bus; returns how many events that was. The task is
    /// read as it is now (its ids and tenant do not change), the event from its log.
    async fn publish(&self, event: &CommittedEvent) -> Result<usize, RelayError> {
        let store_err = |source| RelayError::store(event, source);
        let id = &event.task_id;
        let Some(state) = task_of(self.store.as_ref(), event).await? else {
            return Ok(0);
        };
        let Some(head) = state.head.as_ref() else {
            return Ok(0);
        };
        let events = self
            .store
            .events(id, event.seq.saturating_sub(1))
            .await
            .map_err(store_err)?;
        let Some(stored) = events.iter().find(|e| e.seq == event.seq) else {
            return Ok(0);
        };
        let told = lifecycle::events_of(head, stored, self.level);
        if told.is_empty() {
            return Ok(0);
        }
        self.sink.publish(&told).await.map_err(store_err)?;
        tracing::debug!(task_id = %id, seq = event.seq, events = told.len(), "lifecycle published");
        Ok(told.len())
    }
}

impl PushSide {
    /// Queues the deliveries of one pushed update; returns how many.
    async fn fan_out(
        &self,
        event: &CommittedEvent,
        body: &str,
        trace: Option<String>,
    ) -> Result<usize, RelayError> {
        let id = &event.task_id;
        let Some(state) = task_of(self.store.as_ref(), event).await? else {
            return Ok(0);
        };
        let Some(head) = state.head.as_ref() else {
            return Ok(0);
        };
        // Only to those who still see the task (a removed participant's configs are deleted in
        // the commit that removed them; this holds for any delivery relayed after it).
        let audience: Vec<push::Subscription> = head
            .push
            .iter()
            .filter(|s| head.delivers_to(s))
            .cloned()
            .collect();
        let mut deliveries = push::deliveries(id.as_str(), &head.owner, &audience, event.seq, body);
        for d in &mut deliveries {
            d.trace = trace.clone();
        }
        // Each delivery written as its config's line reads it (`call::push_body`).
        if deliveries
            .iter()
            .any(|d| d.config.protocol != PushProtocol::V1)
        {
            let status = serde_json::to_value(&head.status).unwrap_or_default();
            for d in deliveries
                .iter_mut()
                .filter(|d| d.config.protocol != PushProtocol::V1)
            {
                if let Some(written) = crate::call::push_body(d.config.protocol, body, &status) {
                    d.body = written.into_owned();
                }
            }
        }
        if deliveries.is_empty() {
            return Ok(0);
        }
        self.queue
            .enqueue(&deliveries)
            .await
            .map_err(|e| RelayError::queue(event, e))?;
        if let Some(n) = &self.queued {
            n.notify_one();
        }
        Ok(deliveries.len())
    }
}

/// The embedded store's turn queue: a turn runs right here, on the turn handler. Its
/// durability is the feed's: the feed reader moves its cursor past an entry only once the
/// entry's relay, and so the turn, is done.
pub struct InProcessTurns {
    svc: Arc<Service>,
}

impl InProcessTurns {
    pub fn new(svc: Arc<Service>) -> Arc<Self> {
        Arc::new(Self { svc })
    }
}

#[async_trait]
impl TurnQueue for InProcessTurns {
    async fn enqueue(&self, turns: &[AgentTurn]) -> Result<(), QueueError> {
        for turn in turns {
            // Retried here, then given up (the task fails); a failure to record even that
            // is the feed's to retry.
            let outcome = run_turn_retrying(&self.svc, turn, Delivery::AtLeastOnce)
                .await
                .map_err(|e| QueueError::Unavailable(e.to_string()))?;
            tracing::debug!(task_id = %turn.task_id, ?outcome, "turn handled");
        }
        Ok(())
    }
}
