//! THE commit path, on one screen: load a basis (`basis.rs`: kept, held, stored or new, and how
//! far each is trusted), decide every command on the state the previous one left (each event
//! through the gate), append with optimistic concurrency (deciding again after a lost race),
//! and keep the state it left (`cache.rs`). What follows the append (announce, dispatch) is
//! `Service::execute`'s.

use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

use taskledger_domain::agent::turns::{turns_from, AgentTurn};
use taskledger_domain::error::{DomainError, ErrorKind};
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{CommitBuilder, IdempotencyRecord, MessageKey, StoreError};
use taskledger_domain::task::{TaskAggregate, TaskCommand, TaskEvent};
use taskledger_domain::time::Timestamp;
use taskledger_domain::trace::TraceContext;
use tracing::debug;

use taskledger_domain::task::admission::Admission;

use super::cache::CommitEvents;
use super::{Actor, Ledger};
use crate::error::AppError;

/// How often a command is re-decided after losing a race before the caller gets an error.
pub const MAX_COMMAND_ATTEMPTS: u32 = 12;
/// Longest pause between two attempts (full jitter below it).
const MAX_BACKOFF_MS: u64 = 200;

/// Which task a commit is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// An existing task the actor may see (else TaskNotFound).
    Existing,
    /// A task that must not exist yet: a lost race is reported, not re-decided.
    New,
}

/// What a commit writes beside its events: its idempotency items, and the trace of the work
/// that makes it (the work after the commit — relay, turn, delivery — joins it through the
/// commit's span, ADR 033). The trace is the change's data, handed in, never read from
/// ambient state here.
#[derive(Debug, Clone, Default)]
pub(crate) struct Keys {
    pub message: Option<MessageKey>,
    pub idempotency: Option<IdempotencyRecord>,
    pub trace: Option<TraceContext>,
}

/// The state a commit reached and the events it appended (none: nothing to do), with the work
/// that follows it: the agent turns it asks for and whether it pushes updates.
pub struct Committed {
    pub state: Arc<TaskAggregate>,
    pub events: Vec<TaskEvent>,
    pub(crate) turns: Vec<AgentTurn>,
    pub(crate) pushes: bool,
}

impl Committed {
    fn nothing(state: TaskAggregate) -> Self {
        Self {
            state: Arc::new(state),
            events: Vec::new(),
            turns: Vec::new(),
            pushes: false,
        }
    }
}

impl Ledger {
    /// Decides `build`'s commands on the task's current state and appends their events as one
    /// atomic commit: load → decide → append → keep, again after a lost race.
    pub(crate) async fn commit<F>(
        &self,
        actor: Actor<'_>,
        task_id: &TaskId,
        target: Target,
        keys: Keys,
        held: Option<Arc<TaskAggregate>>,
        build: F,
    ) -> Result<Committed, AppError>
    where
        F: Fn(&TaskAggregate) -> Vec<TaskCommand>,
    {
        let (mut attempt, mut fresh) = (0, false);
        loop {
            attempt += 1;
            let Some(basis) = self
                .basis(actor, task_id, target, held.as_ref(), fresh)
                .await?
            else {
                fresh = true;
                continue;
            };
            let commands = build(&basis.state);
            let stands = basis.stands(&commands);
            let version = basis.state.version;
            let now = Timestamp::now();
            let decided = decide(task_id, basis.state, commands, &self.admission(now), now)?;
            if decided.appends_nothing() && !stands && self.moved(task_id, version).await? {
                fresh = true;
                continue;
            }
            let builder = match decided {
                Decided::Refused(e) => return Err(e.into()),
                Decided::Nothing(state) => return Ok(Committed::nothing(state)),
                Decided::Commit(builder) => builder,
            };
            match self.append(task_id, builder, &keys, attempt, now).await {
                Err(StoreError::Conflict(_))
                    if target == Target::Existing && attempt < MAX_COMMAND_ATTEMPTS =>
                {
                    // What the caller held is out of date too: the next attempts read the store.
                    fresh = true;
                    debug!(task_id = %task_id, attempt, "lost a race, deciding again");
                    tokio::time::sleep(backoff(attempt)).await;
                }
                appended => return Ok(appended?),
            }
        }
    }

    /// Whether the store's head moved past `version` since the basis was taken.
    async fn moved(&self, task_id: &TaskId, version: u64) -> Result<bool, AppError> {
        Ok(self.store.version(task_id).await? != Some(version))
    }

    /// Appends a decided commit with its idempotency items, in the commit's span (the work
    /// after it joins the trace through it, ADR 033), and keeps the state it left.
    async fn append(
        &self,
        task_id: &TaskId,
        builder: CommitBuilder,
        keys: &Keys,
        attempt: u32,
        now: Timestamp,
    ) -> Result<Committed, StoreError> {
        let first_seq = builder.state().version + 1 - builder.events().len() as u64;
        let (mut commit, events) = builder.finish(now);
        commit.message_key = keys.message.clone();
        commit.idempotency = keys.idempotency.clone();
        let span =
            crate::exported_span!("commit", task_id = %task_id, events = events.len(), attempt);
        crate::telemetry::trace::set_parent(&span, keys.trace.as_ref());
        commit.trace =
            crate::telemetry::trace::recorded(&span, keys.trace.as_ref()).map(|t| t.to_stored());
        let pushes = !commit.pushes.is_empty();
        let mut turns = turns_from(task_id, &commit.events);
        turns
            .iter_mut()
            .for_each(|t| t.trace = commit.trace.clone());
        // Counted until it keeps its state: a turn it asks for may come from the feed first.
        let asking = self.asking(task_id, !turns.is_empty());
        match self.store.append(&commit).instrument(span).await {
            Ok(()) => {
                crate::telemetry::metrics().commit();
                let state = Arc::new(commit.snapshot);
                let made = CommitEvents {
                    first_seq,
                    events: events.clone(),
                };
                self.keep(task_id, &state, asking, made);
                Ok(Committed {
                    state,
                    events,
                    turns,
                    pushes,
                })
            }
            Err(e) => {
                if matches!(e, StoreError::Conflict(_)) {
                    crate::telemetry::metrics().conflict();
                    self.forget(task_id);
                }
                Err(e)
            }
        }
    }
}

/// What commands decided on a basis: a refusal, nothing to do (the state as it is), or a
/// commit being built — every event through the gate (`TaskAggregate::admit`).
enum Decided {
    Refused(DomainError),
    Nothing(TaskAggregate),
    Commit(CommitBuilder),
}

impl Decided {
    fn appends_nothing(&self) -> bool {
        !matches!(self, Self::Commit(_))
    }
}

/// Decides each command on the state the previous one left; a decided event the gate refuses
/// is a defect (a decision keeps the rules by construction), reported as an internal error.
fn decide(
    task_id: &TaskId,
    state: Arc<TaskAggregate>,
    commands: Vec<TaskCommand>,
    gate: &Admission,
    now: Timestamp,
) -> Result<Decided, AppError> {
    // The basis stays as it is for others holding it: the builder works on a copy.
    let mut b = CommitBuilder::new(task_id.clone(), Arc::unwrap_or_clone(state));
    for command in commands {
        let events = match b.state().decide(command) {
            Ok(events) => events,
            Err(e) => return Ok(Decided::Refused(with_task_id(e, task_id))),
        };
        for e in events {
            if let Err(why) = b.state().admit(&e, now, gate) {
                tracing::error!(task_id = %task_id, event = e.name(), %why, "a decided event does not pass the gate");
                return Err(AppError::protocol(
                    ErrorKind::Internal,
                    format!("the task's rules refuse the change: {why}"),
                ));
            }
            b.add(e);
        }
    }
    Ok(if b.events().is_empty() {
        Decided::Nothing(b.into_state())
    } else {
        Decided::Commit(b)
    })
}

/// Exponential backoff with full jitter, so racing writers spread out instead of colliding again.
fn backoff(attempt: u32) -> Duration {
    let cap = (2u64 << attempt.min(10)).min(MAX_BACKOFF_MS);
    let r = (crate::per_task::jitter() * (cap + 1) as f64) as u64;
    Duration::from_millis(r.max(1))
}

fn with_task_id(e: DomainError, task_id: &TaskId) -> DomainError {
    match e {
        DomainError::TaskNotFound { .. } => DomainError::TaskNotFound {
            task_id: task_id.to_string(),
        },
        other => other,
    }
}
