//! The writer thread: commits queued by appends are applied in groups, many per SQLite
//! transaction, each in its own savepoint (group commit).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, TransactionBehavior};
use taskledger_domain::ports::{Commit, StoreError};

use super::codec::db_err;
use super::commit::apply_commit;

/// Most commits applied in one SQLite transaction (group commit).
pub const MAX_GROUP_COMMIT: usize = 64;
/// How often the checkpointer copies what the WAL gained into the database file.
pub const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

pub(super) struct WriteJob {
    pub(super) commit: Commit,
    pub(super) reply: tokio::sync::oneshot::Sender<Result<(), StoreError>>,
}

/// Applies queued commits, many per transaction, each in its own savepoint so that one
/// refused commit does not affect the others. Replies only after the transaction is durable.
/// `commits` (a private in-memory store's change stamp) counts the transactions committed.
pub(super) fn writer_loop(
    conn: Arc<Mutex<Connection>>,
    jobs: std::sync::mpsc::Receiver<WriteJob>,
    commits: Option<Arc<AtomicU64>>,
) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_GROUP_COMMIT {
            match jobs.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        let results = match conn.lock() {
            Ok(mut c) => apply_group(&mut c, &batch),
            Err(_) => batch
                .iter()
                .map(|_| Err(StoreError::Other("writer lock poisoned".into())))
                .collect(),
        };
        if let Some(n) = &commits {
            // Before any reply: a reader that learns of a commit sees the stamp moved.
            n.fetch_add(1, Ordering::AcqRel);
        }
        for (job, result) in batch.into_iter().zip(results) {
            // The requester may have gone away; its commit stands regardless.
            let _ = job.reply.send(result);
        }
    }
}

fn apply_group(conn: &mut Connection, batch: &[WriteJob]) -> Vec<Result<(), StoreError>> {
    let fail_all = |e: StoreError| batch.iter().map(|_| Err(e.clone())).collect::<Vec<_>>();
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => return fail_all(db_err(e)),
    };
    let mut results = Vec::with_capacity(batch.len());
    for job in batch {
        let r = match tx.savepoint() {
            Ok(sp) => match apply_commit(&sp, &job.commit) {
                // Dropping an unreleased savepoint rolls it back.
                Ok(()) => sp.commit().map_err(db_err),
                Err(e) => Err(e),
            },
            Err(e) => Err(db_err(e)),
        };
        results.push(r);
    }
    match tx.commit() {
        Ok(()) => results,
        Err(e) => fail_all(db_err(e)),
    }
}

/// Copies the WAL into the database every `CHECKPOINT_EVERY` (a passive checkpoint: it never
/// waits for the writer or readers, and the writer goes on appending meanwhile), until the
/// store is dropped.
pub(super) fn checkpoint_loop(conn: Connection, stop: std::sync::mpsc::Receiver<()>) {
    use std::sync::mpsc::RecvTimeoutError;
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(CHECKPOINT_EVERY) {
        // A checkpoint that cannot finish now (busy) is simply tried again next time.
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::debug!(error = %e, "checkpoint put off");
        }
    }
}
