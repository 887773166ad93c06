//! What the store offers the jobs that keep it over months: the deadline reaper's candidates
//! (tasks at work that have not moved), and the deletion of finished tasks past their expiry.

use async_trait::async_trait;

use super::StoreError;
use crate::ids::TaskId;
use crate::retention::Retention;
use crate::time::Timestamp;
use crate::wire::TaskState;

/// Tasks the deadline reaper reads at once.
pub const STALLED_BATCH: u32 = 100;
/// Expired tasks deleted in one write (the writer is held for one batch at a time).
pub const PURGE_BATCH: u32 = 50;

/// A task at work and the time of its status: where a walk of candidates stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtWork {
    pub status_nanos: i64,
    pub task_id: TaskId,
}

#[async_trait]
pub trait Housekeeping: Send + Sync {
    /// Tasks at work (SUBMITTED or WORKING) whose status is older than `before`, ordered by
    /// status time then id, after `after` (exclusive), at most `limit`. Candidates only: the
    /// task's own last event decides (`FailStalledTask`).
    async fn stalled(
        &self,
        before: Timestamp,
        after: Option<&AtWork>,
        limit: u32,
    ) -> Result<Vec<AtWork>, StoreError>;

    /// Deletes up to `limit` finished tasks past their expiry at `now` under `retention` —
    /// every row of each, in one write — and returns their ids. A store whose own expiry
    /// deletes them (DynamoDB's TTL) deletes nothing here.
    async fn purge_expired(
        &self,
        retention: &Retention,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<TaskId>, StoreError>;

    /// Gives every item of the finished task its expiry (for a store whose items expire on
    /// their own: DynamoDB's TTL); returns how many items it stamped. The commit that finished
    /// the task stamped its own items; this reaches the older ones.
    async fn stamp_expiry(&self, task_id: &TaskId) -> Result<u64, StoreError>;

    /// Every stored task, a page at a time (an export's walk): up to `limit` ids after the
    /// opaque `cursor`, and the cursor of the next page (`None`: the last page).
    async fn task_page(
        &self,
        cursor: Option<String>,
        limit: u32,
    ) -> Result<(Vec<TaskId>, Option<String>), StoreError>;

    /// How many stored tasks are in each state, over every tenant (a metrics gauge); `None`
    /// from a store where that takes a scan of the table (DynamoDB).
    async fn tasks_by_state(&self) -> Result<Option<Vec<(TaskState, u64)>>, StoreError>;
}
