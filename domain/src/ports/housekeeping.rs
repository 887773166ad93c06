//! What the store offers the jobs that keep it over months: the deadline reaper's candidates
//! (tasks at work that have not moved).

use async_trait::async_trait;

use super::StoreError;
use crate::ids::TaskId;
use crate::time::Timestamp;

/// Tasks the deadline reaper reads at once.
pub const STALLED_BATCH: u32 = 100;

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
}
