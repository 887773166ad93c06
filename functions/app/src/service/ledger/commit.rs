//! THE commit path: load the head (or replay), decide every command on the state the previous
//! one left, fold, append with optimistic concurrency (deciding again after a lost race), and
//! keep the state it left. What follows the append (announce, dispatch) is `Service::execute`'s.

use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

use taskledger_domain::agent::turns::{turns_from, AgentTurn};
use taskledger_domain::error::{DomainError, ErrorKind};
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{CommitBuilder, IdempotencyRecord, MessageKey, StoreError};
use taskledger_domain::task::{TaskAggregate, TaskCommand, TaskEvent};
use taskledger_domain::time::Timestamp;
use tracing::debug;

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

/// Idempotency items written with the commit.
#[derive(Debug, Clone, Default)]
pub(crate) struct Keys {
    pub message: Option<MessageKey>,
    pub idempotency: Option<IdempotencyRecord>,
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
    /// atomic commit.
    pub(crate) async fn commit<F>(
        &self,
        actor: Actor<'_>,
        task_id: &TaskId,
        target: Target,
        keys: Keys,
        known: Option<Arc<TaskAggregate>>,
        build: F,
    ) -> Result<Committed, AppError>
    where
        F: Fn(&TaskAggregate) -> Vec<TaskCommand>,
    {
        let mut attempt = 0;
        // Decide on the state as read from the store, not as kept (it may be out of date).
        let mut fresh = false;
        loop {
            attempt += 1;
            let (before, kept) = match target {
                Target::Existing => {
                    // As kept (or as the caller holds it, if newer), if kept: the append's
                    // version check refuses it if it is out of date. Else as stored.
                    let newest = match (self.kept(task_id), known.clone()) {
                        (Some(k), Some(n)) if n.version > k.version => Some(n),
                        (k, n) => k.or(n),
                    };
                    let (state, kept) = match newest.filter(|_| !fresh) {
                        Some(kept) => (Some(kept), true),
                        None => (self.stored(task_id).await?, false),
                    };
                    match state.filter(|s| self.shows(s, actor)) {
                        Some(s) => (s, kept),
                        None if kept => {
                            fresh = true;
                            continue;
                        }
                        None => return Err(AppError::task_not_found(task_id.as_str())),
                    }
                }
                Target::New => (Arc::new(TaskAggregate::default()), false),
            };
            let version = before.version;
            let commands = build(&before);
            // What the aggregate says stays decided on any later state needs no second look.
            let settled = kept && before.records_nothing_more(&commands);
            // The kept state stays as it is for others holding it: the builder works on a copy.
            let mut b = CommitBuilder::new(task_id.clone(), Arc::unwrap_or_clone(before));
            let mut refused = None;
            let now = Timestamp::now();
            let gate = self.admission(now);
            'decide: for command in commands {
                match b.state().decide(command) {
                    Ok(decided) => {
                        for e in decided {
                            // The one gate every stored event passes (ADR 032): a decision
                            // keeps it by construction, so a refusal here is a defect.
                            if let Err(why) = b.state().admit(&e, now, &gate) {
                                tracing::error!(task_id = %task_id, event = e.name(), %why, "a decided event does not pass the gate");
                                return Err(AppError::protocol(
                                    ErrorKind::Internal,
                                    format!("the task's rules refuse the change: {why}"),
                                ));
                            }
                            b.add(e);
                        }
                    }
                    Err(e) => {
                        refused = Some(with_task_id(e, task_id));
                        break 'decide;
                    }
                }
            }
            // A refusal, or nothing to do, on a kept state stands only if the store agrees.
            if (refused.is_some() || b.events().is_empty())
                && kept
                && !settled
                && self.store.version(task_id).await? != Some(version)
            {
                fresh = true;
                continue;
            }
            if let Some(e) = refused {
                return Err(e.into());
            }
            if b.events().is_empty() {
                return Ok(Committed::nothing(b.into_state()));
            }
            let (mut commit, events) = b.finish(now);
            commit.message_key = keys.message.clone();
            commit.idempotency = keys.idempotency.clone();
            // The work after it joins the trace through this commit's span (ADR 033).
            let span = if crate::telemetry::trace::is_exporting() {
                tracing::info_span!(
                    "commit",
                    task_id = %task_id,
                    events = commit.events.len(),
                    attempt
                )
            } else {
                tracing::Span::none()
            };
            commit.trace = span
                .in_scope(crate::telemetry::trace::current)
                .map(|t| t.to_stored());
            let pushes = !commit.pushes.is_empty();
            let mut turns = turns_from(task_id, &commit.events);
            for t in &mut turns {
                t.trace = commit.trace.clone();
            }
            // Counted until it keeps its state: a turn it asks for may come from the feed first.
            let asking = match &self.states {
                Some(c) if !turns.is_empty() => Some(c.asking(task_id)),
                _ => None,
            };
            match self.store.append(&commit).instrument(span).await {
                Ok(()) => {
                    crate::telemetry::metrics().commit();
                    let state = Arc::new(commit.snapshot);
                    match (asking, &self.states) {
                        // A turn this commit asks for starts from what it left (its events too).
                        (Some(asking), _) => asking.kept(
                            &state,
                            Arc::new(CommitEvents {
                                first_seq: version + 1,
                                events: events.clone(),
                            }),
                        ),
                        (None, Some(c)) => c.put(task_id, &state),
                        (None, None) => {}
                    }
                    return Ok(Committed {
                        state,
                        events,
                        turns,
                        pushes,
                    });
                }
                Err(StoreError::Conflict(_))
                    if target == Target::Existing && attempt < MAX_COMMAND_ATTEMPTS =>
                {
                    crate::telemetry::metrics().conflict();
                    if let Some(c) = &self.states {
                        c.forget(task_id);
                    }
                    // What the caller held is out of date too: the next attempts read the store.
                    fresh = true;
                    debug!(task_id = %task_id, attempt, "lost a race, deciding again");
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
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
