//! Ports: what the application needs from storage. Adapters live in `infra`
//! (SQLite for the embedded default, DynamoDB for AWS) and pass one contract suite.

use async_trait::async_trait;
use serde_json::Value;

use crate::ids::{IdempotencyKey, MessageId, Principal, TaskId};
use crate::projection::ReadWrite;
use crate::task::stored::StoredEvent;
use crate::task::{TaskAggregate, TaskHead};
use crate::time::Timestamp;

mod archive_sink;
mod housekeeping;
mod key_sets;
mod lifecycle_sink;
mod outbound;
mod read_model;
mod secrets;
mod signing;
pub use archive_sink::*;
pub use housekeeping::*;
pub use key_sets::*;
pub use lifecycle_sink::*;
pub use outbound::*;
pub use read_model::*;
pub use secrets::*;
pub use signing::*;

/// Version of the snapshot (head) shape; a stored snapshot of another version is rebuilt from events.
pub const SNAPSHOT_SCHEMA: u32 = 1;

/// A task creation retried with the same `Idempotency-Key` finds the task it created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    pub owner: Principal,
    pub key: IdempotencyKey,
    /// Digest of the request body: the same key with another body is refused.
    pub fingerprint: String,
    pub task_id: TaskId,
}

/// A message appended to a task; the same key again is a retry and appends nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageKey {
    pub task_id: TaskId,
    pub message_id: MessageId,
    pub fingerprint: String,
}

/// Everything one command writes, atomically: new events (sequence `expected_version + 1 ..`),
/// the new head (snapshot + read-model fields), read-model items, and the idempotency items.
#[derive(Debug, Clone)]
pub struct Commit {
    pub task_id: TaskId,
    pub expected_version: u64,
    pub events: Vec<StoredEvent>,
    /// State after the events; `snapshot.version == expected_version + events.len()`.
    pub snapshot: TaskAggregate,
    pub writes: Vec<ReadWrite>,
    pub message_key: Option<MessageKey>,
    pub idempotency: Option<IdempotencyRecord>,
    /// Updates the events push to webhook subscribers (empty when nobody subscribed).
    pub pushes: Vec<crate::push::PushUpdate>,
    /// Whom the task is shared with: the list index keeps an entry per principal.
    pub sharing: Sharing,
    /// The trace the commit belongs to (`TraceContext::to_stored`), kept with the events that
    /// call for work after it (work requests, pushed updates) so that work joins the trace.
    pub trace: Option<String>,
}

/// The principals a task is shared with after a commit (its participants' principals, the
/// owner left out), and those it no longer is: each has an entry in the list index, so
/// ListTasks finds shared tasks without a scan (ADR 021).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sharing {
    pub members: Vec<Principal>,
    pub removed: Vec<Principal>,
    /// Whether the commit changed the set (a store keeping no per-entry list data writes then).
    pub changed: bool,
}

impl Sharing {
    /// The change from sharing with `was` to whom `after` is shared with.
    pub fn between(was: Vec<Principal>, after: Option<&TaskHead>) -> Self {
        let members = after.map(TaskHead::shared_with).unwrap_or_default();
        let removed: Vec<Principal> = was
            .iter()
            .filter(|p| !members.contains(p))
            .cloned()
            .collect();
        Self {
            changed: was != members,
            members,
            removed,
        }
    }
}

impl Commit {
    pub fn head(&self) -> Option<&TaskHead> {
        self.snapshot.head.as_ref()
    }
}

/// A stored head: the snapshot as written, and the events after it (normally none).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub snapshot_schema: u32,
    pub snapshot: Value,
    pub tail: Vec<StoredEvent>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// Another writer appended first: reload and decide again.
    #[error("task {0} was changed concurrently")]
    Conflict(TaskId),
    /// The message key exists: this append is a retry of one already stored.
    #[error("message {0} was already appended with the same content")]
    DuplicateMessage(MessageId),
    /// The idempotency key exists, for the task and body given.
    #[error("idempotency key already used")]
    IdempotencyKeyUsed {
        task_id: TaskId,
        fingerprint: String,
    },
    /// The store is throttling or unreachable; the caller may retry later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The commit would break a store limit (item size, items per transaction); nothing was written.
    #[error("{0}")]
    TooLarge(String),
    /// Data that cannot be read back (a bug or a manual edit).
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
    #[error("store failure: {0}")]
    Other(String),
}

/// The event store: load a head with its tail, append with optimistic concurrency.
#[async_trait]
pub trait EventStore: Send + Sync {
    async fn load(&self, task_id: &TaskId) -> Result<Option<Loaded>, StoreError>;
    /// Every event of a task with `seq > after`, in order (replays and rebuilds).
    async fn events(&self, task_id: &TaskId, after: u64) -> Result<Vec<StoredEvent>, StoreError>;
    async fn append(&self, commit: &Commit) -> Result<(), StoreError>;
    /// The idempotency record stored under a key, if any.
    async fn idempotency(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
    ) -> Result<Option<IdempotencyRecord>, StoreError>;
    /// Whether a state cache in front of this store pays (ADR 025): where reading a task's
    /// version (`version`) costs much less than loading it. Not DynamoDB: one item either way.
    fn keeps_states(&self) -> bool {
        false
    }
    /// The version a task's head is at (the count of its events), if the task exists.
    async fn version(&self, task_id: &TaskId) -> Result<Option<u64>, StoreError> {
        Ok(self.load(task_id).await?.and_then(|l| {
            let at = l.snapshot.get("version").and_then(|v| v.as_u64())?;
            Some(l.tail.last().map_or(at, |e| e.seq))
        }))
    }
}

/// A committed event as a feed hands it to the relay (the embedded store's feed, or a record of
/// the DynamoDB table's stream): enough to decide the work that follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedEvent {
    pub task_id: TaskId,
    pub seq: u64,
    pub event_type: String,
    /// The update the event pushes to webhook subscribers (a `StreamResponse`), if it pushes one.
    pub pushed: Option<String>,
    /// The event finished its task (a terminal status): a store with per-item expiry stamps the
    /// task's older items then (`Housekeeping::stamp_expiry`).
    pub finished: bool,
    /// The event's item carries an expiry: its task is finished and kept for a retention
    /// period (this event is the finishing one or came after it). An archive of expiring
    /// tasks (`ArchiveSink`) writes the task again.
    pub expiring: bool,
    /// The trace of the commit that appended it (`Commit::trace`).
    pub trace: Option<String>,
    /// It tells a lifecycle event bus something (`projection::lifecycle::is_lifecycle`): a
    /// relay publishing the task's lifecycle reads it.
    pub lifecycle: bool,
}

impl CommittedEvent {
    /// The agent turn this event requests, if it is a work request.
    pub fn turn(&self) -> Option<crate::agent::turns::AgentTurn> {
        (self.event_type == crate::agent::turns::WORK_EVENT).then(|| {
            crate::agent::turns::AgentTurn {
                task_id: self.task_id.clone(),
                work_seq: self.seq,
                trace: self.trace.clone(),
            }
        })
    }
}

/// The embedded store's durable feed of committed events that call for work after the commit
/// (DynamoDB uses its stream instead): work requests and pushed updates, in commit order, with
/// a cursor per consumer.
#[async_trait]
pub trait WorkFeed: Send + Sync {
    /// Entries after `cursor`, at most `limit`, as (position, event).
    async fn feed_after(
        &self,
        cursor: u64,
        limit: u32,
    ) -> Result<Vec<(u64, CommittedEvent)>, StoreError>;
    async fn feed_cursor(&self, consumer: &str) -> Result<u64, StoreError>;
    async fn save_feed_cursor(&self, consumer: &str, cursor: u64) -> Result<(), StoreError>;
}

/// A delivery waiting in the embedded store's push outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    pub id: u64,
    pub delivery: crate::push::PushDelivery,
    /// Attempts made so far.
    pub attempts: u32,
    /// When the first attempt was made (unix milliseconds; 0: none yet).
    pub first_attempt_ms: i64,
}

impl OutboxEntry {
    /// The entry as an attempt of the one attempt loop (its handle is the entry's id).
    pub fn attempt(&self) -> DeliveryAttempt {
        DeliveryAttempt {
            delivery: self.delivery.clone(),
            handle: self.id.to_string(),
            attempts: self.attempts,
            first_attempt_ms: self.first_attempt_ms,
        }
    }
}

/// A delivery that was given up on, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub id: u64,
    pub delivery: crate::push::PushDelivery,
    pub attempts: u32,
    pub reason: String,
}

/// A delivery the outbox still holds: waiting (for its first attempt or a retry at `due_ms`)
/// or dead-lettered, with its attempts so far and the last failure.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxRecord {
    pub delivery: crate::push::PushDelivery,
    pub attempts: u32,
    pub dead: bool,
    pub reason: String,
    pub due_ms: i64,
}

/// Deliveries of one task a read of the outbox returns at most (the board's list).
pub const MAX_TASK_DELIVERIES: u32 = 100;

/// The embedded store's push outbox (AWS uses the stream relay and an SQS FIFO queue): the
/// deliveries a commit makes are written with it. Per (task, config), only the oldest pending
/// delivery is due, so they go out in event order.
#[async_trait]
pub trait PushOutbox: Send + Sync {
    /// Group heads due at `now_ms`, oldest first, skipping the ids in `busy`.
    async fn due(
        &self,
        now_ms: i64,
        limit: u32,
        busy: &[u64],
    ) -> Result<Vec<OutboxEntry>, StoreError>;
    /// When the next pending delivery falls due (unix milliseconds), if any is pending.
    async fn next_due(&self) -> Result<Option<i64>, StoreError>;
    async fn delivered(&self, id: u64) -> Result<(), StoreError>;
    async fn retry_at(
        &self,
        id: u64,
        attempts: u32,
        first_attempt_ms: i64,
        at_ms: i64,
        reason: &str,
    ) -> Result<(), StoreError>;
    async fn dead_letter(&self, id: u64, attempts: u32, reason: &str) -> Result<(), StoreError>;
    async fn dead_letters(&self, limit: u32) -> Result<Vec<DeadLetter>, StoreError>;
    /// Puts every dead letter back in the outbox, due now; returns how many.
    async fn redrive(&self) -> Result<u64, StoreError>;
    /// What the outbox holds of one task (pending and dead-lettered), oldest first, at most
    /// `MAX_TASK_DELIVERIES`.
    async fn task_deliveries(&self, task_id: &str) -> Result<Vec<OutboxRecord>, StoreError>;
}

/// Where webhook deliveries are queued: the embedded store's outbox, or the SQS FIFO push queue
/// (one group per task and config, de-duplicated by delivery id).
#[async_trait]
pub trait PushQueue: Send + Sync {
    async fn enqueue(
        &self,
        deliveries: &[crate::push::PushDelivery],
    ) -> Result<(), crate::agent::turns::QueueError>;
}

/// One delivery to attempt, with what its queue knows of the attempts before this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryAttempt {
    pub delivery: crate::push::PushDelivery,
    /// The queue's own reference to it (an outbox entry id, an SQS receipt handle).
    pub handle: String,
    /// Attempts made before this one.
    pub attempts: u32,
    /// When the first attempt was made (unix milliseconds; 0: this is the first).
    pub first_attempt_ms: i64,
}

/// Where the outcome of each delivery attempt is recorded, so the one attempt loop runs on the
/// embedded outbox and on the SQS push queue alike.
#[async_trait]
pub trait PushLedger: Send + Sync {
    /// Sent: nothing more to do for it.
    async fn delivered(&self, attempt: &DeliveryAttempt) -> Result<(), StoreError>;
    /// Not sent: try again after `pause`; `attempts` counts this one. Returns the pause the
    /// queue will really wait (SQS counts whole seconds).
    async fn retry_in(
        &self,
        attempt: &DeliveryAttempt,
        attempts: u32,
        first_attempt_ms: i64,
        pause: std::time::Duration,
        reason: &str,
    ) -> Result<std::time::Duration, StoreError>;
    /// Held back without an attempt (a delivery of its group ahead of it is waiting); returns
    /// the pause really applied.
    async fn hold(
        &self,
        attempt: &DeliveryAttempt,
        pause: std::time::Duration,
    ) -> Result<std::time::Duration, StoreError>;
    /// Given up on: kept as a dead letter with the reason.
    async fn dead_letter(
        &self,
        attempt: &DeliveryAttempt,
        attempts: u32,
        reason: &str,
    ) -> Result<(), StoreError>;
}

/// Sends one delivery to its webhook (the SSRF-guarded HTTP sender in `infra`).
#[async_trait]
pub trait WebhookSend: Send + Sync {
    async fn send(&self, delivery: &crate::push::PushDelivery) -> crate::push::AttemptResult;
}

/// A task's current state as the store holds it: its snapshot and tail (`restore`), or every
/// event folded again when the snapshot is of another schema (`replay_state`). `None`: no such
/// task. The one way a state is read back, for the command side and the relay alike.
pub async fn load_state(
    store: &dyn EventStore,
    task_id: &TaskId,
) -> Result<Option<TaskAggregate>, StoreError> {
    let Some(loaded) = store.load(task_id).await? else {
        return Ok(None);
    };
    match restore(&loaded)? {
        Some(state) => Ok(Some(state)),
        None => replay_state(&store.events(task_id, 0).await?).map(Some),
    }
}

/// Rebuilds a state from a snapshot and its tail; `None` when the snapshot must be replayed.
pub fn restore(loaded: &Loaded) -> Result<Option<TaskAggregate>, StoreError> {
    if loaded.snapshot_schema != SNAPSHOT_SCHEMA {
        return Ok(None);
    }
    let mut state: TaskAggregate = match serde_json::from_value(loaded.snapshot.clone()) {
        Ok(s) => s,
        Err(_) => return Ok(None),
    };
    for e in &loaded.tail {
        if e.seq != state.version + 1 {
            return Err(StoreError::Corrupt(format!(
                "event {} follows version {}",
                e.seq, state.version
            )));
        }
        state.apply_event(&e.decode().map_err(StoreError::Corrupt)?);
    }
    Ok(Some(state))
}

/// Folds a task's whole event sequence (rebuilds, snapshot schema changes).
pub fn replay_state(events: &[StoredEvent]) -> Result<TaskAggregate, StoreError> {
    let mut state = TaskAggregate::default();
    for e in events {
        if e.seq != state.version + 1 {
            return Err(StoreError::Corrupt(format!(
                "event {} follows version {}",
                e.seq, state.version
            )));
        }
        state.apply_event(&e.decode().map_err(StoreError::Corrupt)?);
    }
    Ok(state)
}

/// One commit, built while its events are decided: each event is projected (its read-model
/// writes, the update it pushes) and folded into the state once, as it is added.
#[derive(Debug, Clone)]
pub struct CommitBuilder {
    task_id: TaskId,
    before_version: u64,
    state: TaskAggregate,
    events: Vec<crate::task::TaskEvent>,
    /// What each event shows a stream, in step with `events`.
    updates: Vec<Option<crate::task::stored::EventUpdate>>,
    writes: Vec<ReadWrite>,
    pushes: Vec<crate::push::PushUpdate>,
    /// Whom the task was shared with before.
    shared_before: Vec<Principal>,
}

impl CommitBuilder {
    pub fn new(task_id: TaskId, before: TaskAggregate) -> Self {
        let shared_before = before
            .head
            .as_ref()
            .map(TaskHead::shared_with)
            .unwrap_or_default();
        Self {
            task_id,
            before_version: before.version,
            state: before,
            events: Vec::new(),
            updates: Vec::new(),
            writes: Vec::new(),
            pushes: Vec::new(),
            shared_before,
        }
    }

    /// The state with every event added so far.
    pub fn state(&self) -> &TaskAggregate {
        &self.state
    }

    pub fn events(&self) -> &[crate::task::TaskEvent] {
        &self.events
    }

    /// The state, when nothing is to be committed after all.
    pub fn into_state(self) -> TaskAggregate {
        self.state
    }

    pub fn add(&mut self, event: crate::task::TaskEvent) {
        let subscribed = self.state.head.as_ref().is_some_and(|h| !h.push.is_empty());
        if let Some(head) = self.state.head.as_ref() {
            crate::projection::writes_for(head, &event, &mut self.writes);
        }
        self.state.apply_event(&event);
        if subscribed {
            self.pushes
                .extend(crate::projection::push::update_of(&self.state, &event));
        }
        self.updates
            .push(crate::projection::stream::recorded(&self.state, &event));
        self.events.push(event);
    }

    /// The commit, and the events it holds.
    pub fn finish(self, recorded_at: Timestamp) -> (Commit, Vec<crate::task::TaskEvent>) {
        let stored = self
            .events
            .iter()
            .zip(self.updates)
            .enumerate()
            .map(|(i, (e, update))| {
                let mut s = StoredEvent::new(self.before_version + 1 + i as u64, e, recorded_at);
                s.update = update;
                s
            })
            .collect();
        let sharing = Sharing::between(self.shared_before, self.state.head.as_ref());
        let commit = Commit {
            task_id: self.task_id,
            expected_version: self.before_version,
            events: stored,
            snapshot: self.state,
            writes: self.writes,
            message_key: None,
            idempotency: None,
            pushes: self.pushes,
            sharing,
            trace: None,
        };
        (commit, self.events)
    }
}

/// The commit for `events` decided on `before`: stored events, new snapshot, read-model writes.
pub fn commit_for(
    task_id: TaskId,
    before: &TaskAggregate,
    events: &[crate::task::TaskEvent],
    recorded_at: Timestamp,
) -> Commit {
    let mut b = CommitBuilder::new(task_id, before.clone());
    for e in events {
        b.add(e.clone());
    }
    b.finish(recorded_at).0
}
