//! The other way events enter the store: an archive's, restored commit by commit (`archive::
//! import`). No decision made them, so each passes the gate a decided event passes
//! (`TaskAggregate::admit`) on the state the events before it left, before anything of its
//! commit is appended; a commit is bounded, so a restore holds no more than one in memory.
//! A restore replays history: its updates are not pushed again (subscribers were told when it
//! happened), and the state cache forgets the task (the next read takes the store's).

use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{CommitBuilder, StoreError};
use taskledger_domain::task::admission::Admission;
use taskledger_domain::task::{TaskAggregate, TaskEvent};
use taskledger_domain::time::Timestamp;

use super::Ledger;

/// The most events one restored commit may hold (a DynamoDB commit is one transaction of at
/// most 100 items, so no commit any store wrote holds more).
pub const MAX_RESTORED_COMMIT_EVENTS: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The commit's `index`-th event does not pass the gate.
    #[error("{reason}")]
    Refused { index: usize, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Ledger {
    /// Appends `events`, recorded at `recorded_at`, after `before` (the task as the store holds
    /// it): the state they leave. Nothing is appended unless every event passes the gate.
    pub async fn restore(
        &self,
        task_id: &TaskId,
        before: TaskAggregate,
        events: Vec<TaskEvent>,
        recorded_at: Timestamp,
        gate: &Admission,
    ) -> Result<TaskAggregate, RestoreError> {
        if events.len() > MAX_RESTORED_COMMIT_EVENTS {
            return Err(RestoreError::Refused {
                index: MAX_RESTORED_COMMIT_EVENTS,
                reason: format!(
                    "a commit of {} events, more than the {MAX_RESTORED_COMMIT_EVENTS} one may hold",
                    events.len()
                ),
            });
        }
        let mut b = CommitBuilder::new(task_id.clone(), before);
        for (index, e) in events.into_iter().enumerate() {
            b.state()
                .admit(&e, recorded_at, gate)
                .map_err(|reason| RestoreError::Refused { index, reason })?;
            b.add(e);
        }
        let (mut commit, _) = b.finish(recorded_at);
        commit.pushes.clear();
        let appended = self.store.append(&commit).await;
        self.forget(task_id);
        appended?;
        Ok(commit.snapshot)
    }
}
