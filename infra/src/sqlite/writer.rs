//! The writer thread: commits queued by appends are applied in groups, many per SQLite
//! transaction (group commit). Each commit is checked before anything of it is written, so a
//! refused commit leaves nothing behind and needs no savepoint.

use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use taskledger_domain::ports::StoreError;

use super::checkpoint::Wakeup;
use super::codec::db_err;
use super::commit::{check, write, CommitRows};
use super::group::{gather, Busy, GROUP_LINGER};
use super::stamp::ChangeStamp;
use super::tail::FeedTail;

/// What follows every write on the writer connection, the writer thread's groups and the
/// store's other writes alike: the resting checkpointer is woken (file mode), and the change
/// stamp's commits under way end — before any reply, so a reader that learns of a commit
/// finds the stamp moved.
#[derive(Clone)]
pub(super) struct AfterWrite {
    pub(super) checkpoints: Option<Wakeup>,
    pub(super) stamp: Arc<ChangeStamp>,
}

impl AfterWrite {
    pub(super) fn done(&self) {
        if let Some(w) = &self.checkpoints {
            w.committed();
        }
        self.stamp.end();
    }
}

pub(super) struct WriteJob {
    pub(super) rows: CommitRows,
    pub(super) reply: tokio::sync::oneshot::Sender<Result<(), StoreError>>,
}

/// Applies queued commits, many per transaction; replies only after the transaction is
/// durable, after `after_write` (the checkpointer woken, the change stamp moved) and after the
/// feed entries it wrote are in `tail` (so a relay told of a commit finds its entries there).
pub(super) fn writer_loop(
    conn: Arc<Mutex<Connection>>,
    jobs: std::sync::mpsc::Receiver<WriteJob>,
    after_write: AfterWrite,
    tail: Arc<FeedTail>,
) {
    let (mut busy, mut last) = (Busy::default(), 0);
    while let Ok(first) = jobs.recv() {
        let batch = gather(&jobs, first, busy.next_group(last).then_some(GROUP_LINGER));
        last = batch.len();
        let results = match conn.lock() {
            Ok(c) => apply_group(&c, &batch),
            Err(_) => batch
                .iter()
                .map(|_| Err(StoreError::Other("writer lock poisoned".into())))
                .collect(),
        };
        after_write.done();
        let fed = batch
            .iter()
            .zip(&results)
            .filter_map(|(job, r)| r.as_ref().ok().map(|fed| job.rows.feed_entries(fed)))
            .flatten()
            .collect();
        tail.publish(fed, after_write.stamp.last_begun());
        for (job, result) in batch.into_iter().zip(results) {
            // The requester may have gone away; its commit stands regardless.
            let _ = job.reply.send(result.map(|_| ()));
        }
    }
}

/// One transaction for the batch: each commit checked, then written. A commit whose writes
/// fail (not a check: the disk, a damaged file) takes the transaction down with it; it gets the
/// error and the others are applied again in a new transaction.
/// An applied commit's result: the positions of the feed entries it wrote.
type Applied = Result<Vec<u64>, StoreError>;

fn apply_group(conn: &Connection, batch: &[WriteJob]) -> Vec<Applied> {
    let mut results: Vec<Option<Applied>> = batch.iter().map(|_| None).collect();
    loop {
        if let Err(e) = run(conn, "BEGIN IMMEDIATE") {
            return finish(results, &e);
        }
        let mut round = Vec::new();
        let mut broken = None;
        for (i, job) in batch
            .iter()
            .enumerate()
            .filter(|(i, _)| results[*i].is_none())
        {
            let r = match check(conn, &job.rows) {
                Ok(()) => match write(conn, &job.rows) {
                    Ok(fed) => Ok(fed),
                    Err(e) => {
                        broken = Some((i, e));
                        break;
                    }
                },
                Err(e) => Err(e),
            };
            round.push((i, r));
        }
        if let Some((i, e)) = broken {
            if let Err(rollback) = run(conn, "ROLLBACK") {
                tracing::warn!(error = %rollback, "a failed group could not be rolled back");
            }
            results[i] = Some(Err(e));
            continue;
        }
        if let Err(e) = run(conn, "COMMIT") {
            let _ = run(conn, "ROLLBACK");
            return finish(results, &e);
        }
        for (i, r) in round {
            results[i] = Some(r);
        }
        return finish(results, &StoreError::Other("not applied".into()));
    }
}

/// The results, `e` for every commit without one.
fn finish(results: Vec<Option<Applied>>, e: &StoreError) -> Vec<Applied> {
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(e.clone())))
        .collect()
}

/// A statement without rows (transaction control), prepared once per connection.
fn run(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .map(|_| ())
        .map_err(db_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskledger_domain::ids::{ContextId, TaskId};
    use taskledger_domain::ports::commit_for;
    use taskledger_domain::task::{CreateTask, TaskAggregate, TaskCommand};
    use taskledger_domain::time::Timestamp;

    fn creation(id: &str) -> CommitRows {
        let task_id = TaskId::parse(id).unwrap();
        let before = TaskAggregate::default();
        let events = before
            .decide(TaskCommand::CreateTask(CreateTask {
                task_id: task_id.clone(),
                context_id: ContextId::parse("c").unwrap(),
                owner: crate::contract::alice(),
                message: crate::contract::user_message("m-1", "hi"),
                at: Timestamp::now(),
                extension: None,
                awaiting_assignee: None,
            }))
            .unwrap();
        CommitRows::of(
            &commit_for(task_id, &before, &events, Timestamp::now()),
            false,
        )
        .unwrap()
    }

    fn job(rows: CommitRows) -> WriteJob {
        // Nobody waits for these replies: the results are read from `apply_group`.
        let (reply, _) = tokio::sync::oneshot::channel();
        WriteJob { rows, reply }
    }

    /// A group of one creation per id.
    fn creations<const N: usize>(ids: [&str; N]) -> [WriteJob; N] {
        ids.map(|id| job(creation(id)))
    }

    /// A private store with the schema.
    fn store() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(super::super::SCHEMA).unwrap();
        conn
    }

    fn heads(conn: &Connection) -> Vec<String> {
        conn.prepare("SELECT task_id FROM heads ORDER BY task_id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn given_a_group_when_one_commit_fails_to_write_then_the_others_are_applied_again_without_it() {
        let conn = store();
        conn.execute_batch(
            "CREATE TEMP TRIGGER fail_bad BEFORE INSERT ON events WHEN NEW.task_id = 't-bad' \
             BEGIN SELECT RAISE(ABORT, 'the disk is full'); END;",
        )
        .unwrap();
        let batch = creations(["t-a", "t-bad", "t-b"]);
        let results = apply_group(&conn, &batch);
        assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
        assert!(results[1].is_err());
        assert_eq!(heads(&conn), ["t-a", "t-b"], "nothing of the failed commit");
    }

    #[test]
    fn given_a_group_when_a_commit_is_refused_by_its_check_then_it_writes_nothing_and_the_rest_stand(
    ) {
        let conn = store();
        // The same task created twice in one group: the second was decided on no task.
        let batch = creations(["t-a", "t-a", "t-b"]);
        let results = apply_group(&conn, &batch);
        assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
        assert!(
            matches!(results[1], Err(StoreError::Conflict(_))),
            "{results:?}"
        );
        assert_eq!(heads(&conn), ["t-a", "t-b"]);
        let events: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM events WHERE task_id = 't-a'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            events as usize,
            batch[0].rows.events_len(),
            "one creation's events"
        );
    }
}
