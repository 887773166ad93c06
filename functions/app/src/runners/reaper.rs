//! The deadline reaper: a task at work (SUBMITTED or WORKING) with no event for longer than the
//! deadline fails, saying so (`FailStalledTask`), through the one commit path — so streams,
//! pushes, the board and a waiting parent see it. The store names candidates by status time;
//! each task's own last event decides, under optimistic concurrency, so a turn that commits
//! first wins and the task is left alone. A timer runs it in the local server, a schedule on
//! AWS (`functions/reaper`); a pass is idempotent. The local reaper also deletes finished
//! tasks past their expiry (`retention`) from the embedded store.

use std::sync::Arc;
use std::time::Duration;

use taskledger_domain::ports::{AtWork, Housekeeping, PURGE_BATCH, STALLED_BATCH};
use taskledger_domain::task::{TaskCommand, MAX_STALL_DEADLINE_SECS};
use taskledger_domain::time::Timestamp;
use tracing::{info, warn};

use crate::error::AppError;
use crate::service::{Change, Service};

/// A task at work with no progress for this long fails, unless configured otherwise.
pub const DEFAULT_STALL_DEADLINE_SECS: u64 = 3600;
/// How often the local server's reaper looks (a sixth of the deadline, within these bounds).
const MIN_REAP_EVERY: Duration = Duration::from_secs(1);
const MAX_REAP_EVERY: Duration = Duration::from_secs(300);
/// The pause between two batches of deletions (the writer serves commits meanwhile).
const PURGE_PAUSE: Duration = Duration::from_millis(20);

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReapReport {
    /// Candidates read from the store.
    pub looked: u64,
    /// Tasks failed by this pass.
    pub failed: u64,
}

/// The deadline, checked: at most `MAX_STALL_DEADLINE_SECS`; 0 turns the reaper off.
pub fn stall_deadline(secs: u64) -> Result<Option<u64>, String> {
    match secs {
        0 => Ok(None),
        s if s > MAX_STALL_DEADLINE_SECS => Err(format!(
            "the stall deadline is {s} s, past its maximum of {MAX_STALL_DEADLINE_SECS} s \
             (0 turns the deadline reaper off)"
        )),
        s => Ok(Some(s)),
    }
}

/// One pass: every task stalled at `now` is failed (each candidate read once).
pub async fn reap_stalled(
    svc: &Service,
    store: &dyn Housekeeping,
    deadline_secs: u64,
    now: Timestamp,
) -> Result<ReapReport, AppError> {
    let deadline_secs = deadline_secs.min(MAX_STALL_DEADLINE_SECS);
    let before = now.minus_secs(deadline_secs);
    let mut report = ReapReport::default();
    let mut after: Option<AtWork> = None;
    loop {
        let batch = store.stalled(before, after.as_ref(), STALLED_BATCH).await?;
        report.looked += batch.len() as u64;
        for c in &batch {
            let failed = svc
                .execute(Change::by_agent(&c.task_id), |_| {
                    vec![TaskCommand::FailStalledTask {
                        deadline_secs,
                        at: now,
                    }]
                })
                .await;
            match failed {
                Ok(done) if !done.events.is_empty() => {
                    info!(task_id = %c.task_id, deadline_secs, "stalled task failed");
                    report.failed += 1;
                }
                Ok(_) => {}
                // One task's trouble (gone meanwhile, a store hiccup) does not stop the pass.
                Err(e) => warn!(task_id = %c.task_id, error = %e, "cannot fail a stalled task"),
            }
        }
        if batch.len() < STALLED_BATCH as usize {
            return Ok(report);
        }
        after = batch.last().cloned();
    }
}

/// Deletes every finished task past its expiry at `now` from a store that deletes them
/// itself (SQLite; DynamoDB's TTL needs nothing), a batch per write with a pause between
/// batches so commits go on meanwhile; returns how many.
pub async fn purge_expired(svc: &Service, store: &dyn Housekeeping, now: Timestamp) -> u64 {
    let mut purged = 0u64;
    loop {
        match store.purge_expired(svc.retention(), now, PURGE_BATCH).await {
            Ok(ids) => {
                purged += ids.len() as u64;
                if ids.len() < PURGE_BATCH as usize {
                    return purged;
                }
                tokio::time::sleep(PURGE_PAUSE).await;
            }
            Err(e) => {
                warn!(error = %e, "cannot delete expired tasks");
                return purged;
            }
        }
    }
}

/// How often the local server's reaper runs: a sixth of the stall deadline or of the shortest
/// retention period, within 1 s and 5 min.
fn every(stall_secs: Option<u64>, svc: &Service) -> Duration {
    let r = svc.retention();
    let shortest = std::iter::once(r.default_period())
        .chain(r.overrides().map(|(_, p)| p))
        .filter_map(|p| p.secs())
        .chain(stall_secs)
        .min()
        .unwrap_or(u64::MAX);
    Duration::from_secs(shortest / 6).clamp(MIN_REAP_EVERY, MAX_REAP_EVERY)
}

/// The local server's reaper, forever: tasks at work past the stall deadline fail (when one is
/// set), and finished tasks past their expiry are deleted.
pub async fn run_reaper(svc: Arc<Service>, store: Arc<dyn Housekeeping>, stall_secs: Option<u64>) {
    let every = every(stall_secs, &svc);
    loop {
        tokio::time::sleep(every).await;
        let now = Timestamp::now();
        if let Some(deadline) = stall_secs {
            match reap_stalled(&svc, store.as_ref(), deadline, now).await {
                Ok(r) if r.failed > 0 => {
                    info!(failed = r.failed, looked = r.looked, "stalled tasks failed")
                }
                Ok(_) => {}
                Err(e) => warn!(error = %e, "reaper pass failed"),
            }
        }
        let purged = purge_expired(&svc, store.as_ref(), now).await;
        if purged > 0 {
            info!(purged, "expired tasks deleted");
        }
    }
}
