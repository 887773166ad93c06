//! Where a task's state comes from, and the only way it changes: the ledger owns the store's
//! write side and the state cache (ADR 025). Every read of a task's state is one of
//! `current` (the latest, as kept if the store's head is still at its version), `visible`
//! (the same, if the caller may see it), `stored` (read from the store: restored from the
//! snapshot or replayed, `ports::load_state`), `for_turn` (what a turn starts from) and
//! `as_of` (a past state, folded from the log: where a stream starts); every
//! change is `commit` (decide on the current state, append with optimistic concurrency,
//! keep what it left). What follows a commit — announcing it, dispatching its work, carrying
//! it to related tasks — is the service's (`Service::execute`).

mod basis;
mod cache;
mod commit;
mod restore;

use std::sync::Arc;

use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{load_state, replay_state, EventStore};
use taskledger_domain::push::AddressPolicy;
use taskledger_domain::retention::Retention;
use taskledger_domain::task::admission::Admission;
use taskledger_domain::task::stored::StoredEvent;
use taskledger_domain::task::{TaskAggregate, TaskHead};
use taskledger_domain::time::Timestamp;

use super::Actor;
use crate::error::AppError;

pub(crate) use cache::CommitEvents;
pub use cache::STATE_CACHE_TASKS;
pub use commit::{Committed, MAX_COMMAND_ATTEMPTS};
pub(crate) use commit::{Keys, Target};
pub use restore::{RestoreError, MAX_RESTORED_COMMIT_EVENTS};

/// The task states of one store: read, kept and changed here only.
pub struct Ledger {
    store: Arc<dyn EventStore>,
    states: Option<cache::StateCache>,
    retention: Retention,
    /// The webhook addresses a stored push config may name (the gate checks every one).
    addresses: AddressPolicy,
}

/// What a turn starts from: the task's state and, when this process's commit of the work
/// request left it, that commit's events (the turn's input is among them).
pub(crate) struct TurnStart {
    pub state: Arc<TaskAggregate>,
    pub commit: Option<Arc<CommitEvents>>,
}

impl Ledger {
    /// A ledger over `store`, keeping the latest state of up to `state_cache` tasks where the
    /// store makes that pay (`EventStore::keeps_states`; 0: none).
    pub(crate) fn new(
        store: Arc<dyn EventStore>,
        state_cache: usize,
        retention: Retention,
        addresses: AddressPolicy,
    ) -> Self {
        let states =
            (state_cache > 0 && store.keeps_states()).then(|| cache::StateCache::new(state_cache));
        Self {
            store,
            states,
            retention,
            addresses,
        }
    }

    /// A ledger that keeps no states, for one pass over the store (an import).
    pub fn uncached(store: Arc<dyn EventStore>, addresses: AddressPolicy) -> Self {
        Self::new(store, 0, Retention::forever(), addresses)
    }

    /// The gate every event passes before it is appended, with `now` as its clock.
    pub fn admission(&self, now: Timestamp) -> Admission {
        Admission::new(now, self.addresses.clone())
    }

    /// The current state of a task: as kept if the store's head is still at its version (one
    /// small read), else as stored.
    pub async fn current(&self, task_id: &TaskId) -> Result<Option<Arc<TaskAggregate>>, AppError> {
        if let Some(kept) = self.kept(task_id) {
            if self.store.version(task_id).await? == Some(kept.version) {
                return Ok(Some(kept));
            }
        }
        self.stored(task_id).await
    }

    /// The current state of a task `actor` sees (else TaskNotFound).
    pub(crate) async fn visible(
        &self,
        actor: Actor<'_>,
        task_id: &TaskId,
    ) -> Result<Arc<TaskAggregate>, AppError> {
        self.current(task_id)
            .await?
            .filter(|s| self.shows(s, actor))
            .ok_or_else(|| AppError::task_not_found(task_id.as_str()))
    }

    /// The task as the store holds it (snapshot and tail, or replayed), kept for the next read.
    pub(crate) async fn stored(
        &self,
        task_id: &TaskId,
    ) -> Result<Option<Arc<TaskAggregate>>, AppError> {
        let Some(state) = load_state(self.store.as_ref(), task_id).await? else {
            return Ok(None);
        };
        let state = Arc::new(state);
        if let Some(c) = &self.states {
            c.put(task_id, &state);
        }
        Ok(Some(state))
    }

    /// The task as of event `upto` (the latest when `None`), folded from its log, with the
    /// events it was folded from: where a stream starts. Not kept (a past state).
    pub(crate) async fn as_of(
        &self,
        task_id: &TaskId,
        upto: Option<u64>,
    ) -> Result<(TaskAggregate, Vec<StoredEvent>), AppError> {
        let mut events = self.store.events(task_id, 0).await?;
        if let Some(upto) = upto {
            events.retain(|e| e.seq <= upto);
        }
        Ok((replay_state(&events)?, events))
    }

    /// What a turn for the work request at `work_seq` starts from (`None`: no such task).
    /// Without reading the store when it can: the state this process's commit of that request
    /// left (or a later one it kept), with that commit's events — once the commits of this
    /// process asking for a turn of the task that are under way kept theirs (the feed hands a
    /// turn over as soon as the writer committed its request, which may be before the request
    /// resumed to keep it). A kept state older than the request is not used (the request was
    /// committed elsewhere). It is trusted as kept: the turn's commands are decided again on
    /// the stored state if another process changed the task meanwhile (the append's version
    /// check), as they are when a change arrives while the agent works.
    pub(crate) async fn for_turn(
        &self,
        task_id: &TaskId,
        work_seq: u64,
    ) -> Result<Option<TurnStart>, AppError> {
        if let Some(kept) = self.kept_for_turn(task_id, work_seq) {
            return Ok(Some(kept));
        }
        if let Some(asked) = self.states.as_ref().and_then(|c| c.after_asking(task_id)) {
            // A commit that ends without keeping its state ends the wait too.
            let _ = asked.await;
            if let Some(kept) = self.kept_for_turn(task_id, work_seq) {
                return Ok(Some(kept));
            }
        }
        Ok(self.current(task_id).await?.map(|state| TurnStart {
            state,
            commit: None,
        }))
    }

    fn kept_for_turn(&self, task_id: &TaskId, work_seq: u64) -> Option<TurnStart> {
        self.states
            .as_ref()?
            .get_with_commit(task_id)
            .filter(|(state, _)| state.version >= work_seq)
            .map(|(state, commit)| TurnStart { state, commit })
    }

    /// The state kept of a task, if there is a state cache and it holds one.
    fn kept(&self, task_id: &TaskId) -> Option<Arc<TaskAggregate>> {
        self.states.as_ref().and_then(|c| c.get(task_id))
    }

    /// Whether the task is past its expiry (`retention`): gone for every caller.
    pub fn expired(&self, head: &TaskHead) -> bool {
        self.retention.is_expired(head, Timestamp::now())
    }

    /// Whether `actor` sees the task: it exists, is not past its expiry, and the agent sees
    /// every task, a client those it owns or that are shared with it (ADR 021).
    pub(crate) fn shows(&self, state: &TaskAggregate, actor: Actor<'_>) -> bool {
        let Some(head) = state.head.as_ref() else {
            return false;
        };
        !self.expired(head)
            && match actor {
                Actor::Agent => true,
                Actor::Client(p) => head.visible_to(p),
            }
    }

    /// The deployment's retention.
    pub fn retention(&self) -> &Retention {
        &self.retention
    }
}
