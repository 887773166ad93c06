//! The one way a use case changes a task: the ledger commits (`Ledger::commit`), then, only
//! after the append, the change is announced (blocking sends and streams look), its work is
//! dispatched (the relay nudged, or the turns handed to the in-process dispatcher) and its
//! consequences reach related tasks (`follow_up`: parents, children).

use std::sync::Arc;
use taskledger_domain::agent::turns::AgentTurn;

use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::MessageKey;
use taskledger_domain::task::{TaskAggregate, TaskCommand};

use super::ledger::{Committed, Keys, Target};
use super::{Actor, Dispatch, Service, TaskChanged};
use crate::error::AppError;

/// Which change: who makes it, to which task, and the idempotency items written with it.
pub struct Change<'a> {
    actor: Actor<'a>,
    task_id: &'a TaskId,
    target: Target,
    keys: Keys,
    known: Option<Arc<TaskAggregate>>,
}

impl<'a> Change<'a> {
    /// A change of an existing task `actor` may see (else TaskNotFound), in the trace of the
    /// work that makes it (the request's or the turn's: read here, once, and carried to the
    /// commit as data).
    pub fn to(actor: Actor<'a>, task_id: &'a TaskId) -> Self {
        Self {
            actor,
            task_id,
            target: Target::Existing,
            keys: Keys {
                trace: crate::telemetry::trace::current(),
                ..Keys::default()
            },
            known: None,
        }
    }

    /// The agent's change of a task (it acts on any task it is given).
    pub fn by_agent(task_id: &'a TaskId) -> Self {
        Self::to(Actor::Agent, task_id)
    }

    /// The task must not exist yet: a lost race is reported, not decided again.
    pub(crate) fn creating(mut self, keys: Keys) -> Self {
        self.target = Target::New;
        self.keys = Keys {
            trace: self.keys.trace.take(),
            ..keys
        };
        self
    }

    /// A state of the task the caller holds (one it committed): decided on like a kept state,
    /// when it is the newest this process knows — the append's version check refuses it if it
    /// is out of date, and a decision the aggregate says holds on every later state stands.
    pub(crate) fn knowing(mut self, state: Option<Arc<TaskAggregate>>) -> Self {
        self.known = state;
        self
    }

    /// The message the change appends, once per task (a retry finds it: DuplicateMessage).
    pub(crate) fn message_key(mut self, key: MessageKey) -> Self {
        self.keys.message = Some(key);
        self
    }
}

impl Service {
    /// Decides `build`'s commands on the task's current state and appends their events as one
    /// atomic commit (deciding again after a lost race), then announces it, dispatches the work
    /// it asks for and carries its consequences to related tasks. Returns the state it reached
    /// and the events committed (none: nothing to do).
    pub async fn execute<F>(&self, change: Change<'_>, build: F) -> Result<Committed, AppError>
    where
        F: Fn(&TaskAggregate) -> Vec<TaskCommand>,
    {
        let Change {
            actor,
            task_id,
            target,
            keys,
            known,
        } = change;
        let mut c = self
            .ledger
            .commit(actor, task_id, target, keys, known, build)
            .await?;
        if c.events.is_empty() {
            return Ok(c);
        }
        self.announce(task_id, c.state.version);
        if !c.turns.is_empty() || c.pushes {
            self.dispatch(std::mem::take(&mut c.turns));
        }
        self.follow_up(&c.state, &c.events).await;
        Ok(c)
    }

    /// Blocking sends and streams of `task_id` look now.
    pub(super) fn announce(&self, task_id: &TaskId, version: u64) {
        self.hub.wake(task_id);
        // No receiver is fine: nobody is waiting.
        let _ = self.changes.send(TaskChanged {
            task_id: task_id.clone(),
            version,
        });
    }

    /// Work after the commit: the durable feed's relay is nudged (turns and pushed updates are
    /// in the feed already), or the turns go to the in-process dispatcher.
    fn dispatch(&self, turns: Vec<AgentTurn>) {
        match (&self.settings.dispatch, &self.turns) {
            (Dispatch::Feed, _) => self.work.notify_one(),
            (Dispatch::InProcess, Some(tx)) => {
                for t in turns {
                    // A closed dispatcher means the process is ending.
                    let _ = tx.send(t);
                }
            }
            (Dispatch::InProcess, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use taskledger_domain::ids::{Principal, TaskId};
    use taskledger_domain::task::TaskCommand;
    use taskledger_domain::time::Timestamp;
    use taskledger_domain::wire::{SendMessageResponse, TaskState};

    use super::{Change, Target};
    use crate::service::{Actor, Dispatch, Service, ServiceSettings};

    /// A service whose turns nothing runs and whose commits no kept state stands in for, with
    /// a task a client sent.
    async fn a_task() -> (Arc<Service>, TaskId) {
        let store = Arc::new(taskledger_infra::SqliteStore::in_memory());
        let settings = ServiceSettings {
            dispatch: Dispatch::Feed,
            state_cache: 0,
            ..ServiceSettings::default()
        };
        let svc = Service::new(
            store.clone(),
            store,
            crate::agent::ScenarioAgent::new(Default::default()),
            taskledger_domain::cursor::CursorCodec::new(b"k".to_vec()),
            settings,
        );
        let who = Principal::new("acme", "alice").unwrap();
        let send = json!({"message": {"messageId": "m-1", "role": "ROLE_USER",
            "parts": [{"text": "hi"}]}, "configuration": {"returnImmediately": true}});
        let SendMessageResponse::Task(task) = svc
            .send_message(&who, serde_json::from_value(send).unwrap(), None)
            .await
            .unwrap()
        else {
            panic!("a task")
        };
        (svc, TaskId::parse(task.id).unwrap())
    }

    /// A change decided on a state the caller holds that is out of date loses one race, then
    /// is decided on the stored state: it never retries on what it held.
    #[tokio::test]
    async fn a_stale_state_the_caller_holds_loses_one_race_then_the_store_decides() {
        let (svc, id) = a_task().await;
        let held = svc.ledger().current(&id).await.unwrap().unwrap();
        // Another change moves the task on.
        let moved = svc
            .execute(Change::by_agent(&id), |s| {
                vec![TaskCommand::FinishAgentTurn {
                    work_seq: s.head().unwrap().work_requested,
                    at: Timestamp::now(),
                }]
            })
            .await
            .unwrap();
        assert_eq!(moved.state.version, held.version + 1);
        let canceled = svc
            .execute(Change::by_agent(&id).knowing(Some(held)), |_| {
                vec![TaskCommand::CancelTask {
                    at: Timestamp::now(),
                    by: None,
                }]
            })
            .await
            .expect("decided again on the stored state");
        let head = canceled.state.head().unwrap();
        assert_eq!(head.status.state, TaskState::Canceled);
        assert!(canceled.state.version > moved.state.version);
    }

    /// The trace a commit records is the change's data: handed in with it, outside any
    /// request's scope, it is what the turn the commit asks for carries.
    #[tokio::test]
    async fn the_trace_a_commit_records_is_the_changes_own() {
        let (svc, id) = a_task().await;
        let trace = taskledger_domain::trace::TraceContext::parse(
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            None,
        );
        let work = svc.ledger().current(&id).await.unwrap().unwrap();
        let keys = super::Keys {
            trace: trace.clone(),
            ..Default::default()
        };
        let continued = svc
            .ledger()
            .commit(Actor::Agent, &id, Target::Existing, keys, None, |_| {
                vec![TaskCommand::ContinueAgentWork {
                    after: work.head().unwrap().work_requested,
                    steps_taken: 1,
                    at: Timestamp::now(),
                }]
            })
            .await
            .unwrap();
        assert_eq!(continued.turns.len(), 1, "{:?}", continued.events);
        assert_eq!(continued.turns[0].trace, trace.map(|t| t.to_stored()));
    }
}
