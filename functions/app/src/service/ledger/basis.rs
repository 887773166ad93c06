//! What a command is decided on, and how far it can be trusted (ADR 025): a state this process
//! kept, one the caller holds, one just read from the store, or none (a new task). A decision
//! on a kept or held state may be out of date: a commit made on it is checked by the append's
//! version check, but a refusal or an empty decision appends nothing, so it stands only once
//! the store agrees the state is still the latest — unless the aggregate says the decision
//! holds on any later state (`TaskAggregate::records_nothing_more`).

use std::sync::Arc;

use taskledger_domain::ids::TaskId;
use taskledger_domain::task::{TaskAggregate, TaskCommand};

use super::commit::Target;
use super::{Actor, Ledger};
use crate::error::AppError;

/// Where a basis came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trust {
    /// Kept by this process after its own commit or read.
    Kept,
    /// Handed in by the caller (a turn's newest state), newer than what is kept.
    Held,
    /// Read from the store for this attempt.
    Stored,
    /// A task that must not exist yet: the empty state.
    New,
}

/// The state a command is decided on, and its trust.
#[derive(Debug, Clone)]
pub(crate) struct Basis {
    pub state: Arc<TaskAggregate>,
    pub trust: Trust,
}

impl Basis {
    /// Whether a refusal or an empty decision of `commands` on this basis stands without asking
    /// the store: decided on what the store holds, or on a state from which nothing later
    /// changes that outcome.
    pub fn stands(&self, commands: &[TaskCommand]) -> bool {
        match self.trust {
            Trust::Stored | Trust::New => true,
            Trust::Kept | Trust::Held => self.state.records_nothing_more(commands),
        }
    }
}

impl Ledger {
    /// The basis of an attempt: the newest state kept or held (unless `fresh`: the store's),
    /// which `actor` must see. `None`: a kept or held state `actor` may not see, which the
    /// store may contradict — ask again with `fresh`.
    pub(super) async fn basis(
        &self,
        actor: Actor<'_>,
        task_id: &TaskId,
        target: Target,
        held: Option<&Arc<TaskAggregate>>,
        fresh: bool,
    ) -> Result<Option<Basis>, AppError> {
        if target == Target::New {
            return Ok(Some(Basis {
                state: Arc::new(TaskAggregate::default()),
                trust: Trust::New,
            }));
        }
        let newest = match (self.kept(task_id), held) {
            (Some(k), Some(h)) if h.version > k.version => Some((h.clone(), Trust::Held)),
            (Some(k), _) => Some((k, Trust::Kept)),
            (None, Some(h)) => Some((h.clone(), Trust::Held)),
            (None, None) => None,
        };
        let (state, trust) = match newest.filter(|_| !fresh) {
            Some((state, trust)) => (Some(state), trust),
            None => (self.stored(task_id).await?, Trust::Stored),
        };
        match state.filter(|s| self.shows(s, actor)) {
            Some(state) => Ok(Some(Basis { state, trust })),
            None if trust == Trust::Stored => Err(AppError::task_not_found(task_id.as_str())),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskledger_domain::ids::{ContextId, Principal};
    use taskledger_domain::task::CreateTask;
    use taskledger_domain::time::Timestamp;
    use taskledger_domain::wire::{Message, TaskState};

    fn task() -> Arc<TaskAggregate> {
        let mut s = TaskAggregate::default();
        let created = s
            .decide(TaskCommand::CreateTask(CreateTask {
                task_id: TaskId::parse("t-1").unwrap(),
                context_id: ContextId::parse("c-1").unwrap(),
                owner: Principal::anonymous(),
                message: Message::user_text("m-1", "hi"),
                at: Timestamp::now(),
                extension: None,
                awaiting_assignee: None,
            }))
            .unwrap();
        created.iter().for_each(|e| s.apply_event(e));
        Arc::new(s)
    }

    fn working() -> Vec<TaskCommand> {
        vec![TaskCommand::ChangeStatus {
            state: TaskState::Working,
            message: None,
            at: Timestamp::now(),
        }]
    }

    #[test]
    fn given_a_kept_or_held_basis_when_refused_then_the_store_is_asked() {
        for trust in [Trust::Kept, Trust::Held] {
            let basis = Basis {
                state: task(),
                trust,
            };
            assert!(!basis.stands(&working()), "{trust:?}");
        }
    }

    #[test]
    fn given_a_stored_or_new_basis_a_refusal_stands() {
        for trust in [Trust::Stored, Trust::New] {
            let basis = Basis {
                state: task(),
                trust,
            };
            assert!(basis.stands(&working()), "{trust:?}");
        }
    }

    #[test]
    fn given_a_kept_basis_a_decision_that_holds_on_any_later_state_stands() {
        // A turn's record on a finished task: nothing later changes that it records nothing.
        let mut done = (*task()).clone();
        let finish = done
            .decide(TaskCommand::ChangeStatus {
                state: TaskState::Completed,
                message: None,
                at: Timestamp::now(),
            })
            .unwrap();
        finish.iter().for_each(|e| done.apply_event(e));
        let basis = Basis {
            state: Arc::new(done),
            trust: Trust::Kept,
        };
        let record = vec![TaskCommand::FinishAgentTurn {
            work_seq: 1,
            at: Timestamp::now(),
        }];
        assert!(basis.stands(&record));
    }
}
