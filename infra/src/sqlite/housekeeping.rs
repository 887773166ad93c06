//! The SQLite store's housekeeping: the deadline reaper's candidates, read through a partial
//! index of the tasks at work (`heads_at_work`: small, and written only for those tasks), and
//! the retention reaper's deletions, found through a partial index of finished tasks
//! (`heads_finished`), a batch per write so the writer is never held for long.

use async_trait::async_trait;
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{AtWork, Housekeeping, StoreError};
use taskledger_domain::retention::Retention;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::TaskState;

use super::codec::db_err;
use super::schema::finished_states;
use super::SqliteStore;

#[async_trait]
impl Housekeeping for SqliteStore {
    async fn stalled(
        &self,
        before: Timestamp,
        after: Option<&AtWork>,
        limit: u32,
    ) -> Result<Vec<AtWork>, StoreError> {
        let before = before.unix_nanos();
        let (after_nanos, after_id) = match after {
            Some(a) => (a.status_nanos, a.task_id.to_string()),
            None => (i64::MIN, String::new()),
        };
        self.read(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT status_nanos, task_id FROM heads INDEXED BY heads_at_work \
                     WHERE state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING') \
                     AND status_nanos < ?1 AND (status_nanos, task_id) > (?2, ?3) \
                     ORDER BY status_nanos, task_id LIMIT ?4",
                )
                .map_err(db_err)?;
            let rows = stmt
                .query_map(
                    rusqlite::params![before, after_nanos, after_id, limit],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
                )
                .map_err(db_err)?;
            let mut out = Vec::new();
            for row in rows {
                let (status_nanos, id) = row.map_err(db_err)?;
                out.push(AtWork {
                    status_nanos,
                    task_id: TaskId::parse(id).map_err(StoreError::Corrupt)?,
                });
            }
            Ok(out)
        })
        .await
    }

    async fn purge_expired(
        &self,
        retention: &Retention,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<TaskId>, StoreError> {
        if retention.is_forever() {
            return Ok(vec![]);
        }
        let retention = retention.clone();
        self.write(move |conn| {
            let ids = expired_ids(conn, &retention, now, limit)?;
            if ids.is_empty() {
                return Ok(ids);
            }
            let tx = conn.unchecked_transaction().map_err(db_err)?;
            for id in &ids {
                for table in TASK_TABLES {
                    tx.prepare_cached(&format!("DELETE FROM {table} WHERE task_id = ?1"))
                        .and_then(|mut s| s.execute([id.as_str()]))
                        .map_err(db_err)?;
                }
            }
            tx.commit().map_err(db_err)?;
            Ok(ids)
        })
        .await
    }

    /// Nothing: the reaper deletes an expired task's rows (`purge_expired`).
    async fn stamp_expiry(&self, _task_id: &TaskId) -> Result<u64, StoreError> {
        Ok(0)
    }

    async fn tasks_by_state(&self) -> Result<Option<Vec<(TaskState, u64)>>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached("SELECT state, count(*) FROM heads GROUP BY state ORDER BY state")
                .map_err(db_err)?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .map_err(db_err)?;
            let mut out = Vec::new();
            for row in rows {
                let (state, n) = row.map_err(db_err)?;
                let state = TaskState::from_name(&state)
                    .ok_or_else(|| StoreError::Corrupt(format!("a head in state {state:?}")))?;
                out.push((state, n.max(0) as u64));
            }
            Ok(Some(out))
        })
        .await
    }

    async fn task_page(
        &self,
        cursor: Option<String>,
        limit: u32,
    ) -> Result<(Vec<TaskId>, Option<String>), StoreError> {
        self.read(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT task_id FROM heads WHERE task_id > ?1 ORDER BY task_id LIMIT ?2",
                )
                .map_err(db_err)?;
            let rows = stmt
                .query_map(rusqlite::params![cursor.unwrap_or_default(), limit], |r| {
                    r.get::<_, String>(0)
                })
                .map_err(db_err)?;
            let mut ids = Vec::new();
            for id in rows {
                ids.push(TaskId::parse(id.map_err(db_err)?).map_err(StoreError::Corrupt)?);
            }
            let next = (ids.len() == limit as usize)
                .then(|| ids.last().map(|i| i.to_string()))
                .flatten();
            Ok((ids, next))
        })
        .await
    }
}

/// Every table that holds rows of a task (the feed prunes its own entries).
const TASK_TABLES: [&str; 8] = [
    "events",
    "heads",
    "members",
    "history",
    "artifact_chunks",
    "message_keys",
    "push_outbox",
    "idempotency",
];

/// Up to `limit` finished tasks past their expiry at `now`: each overriding tenant's by its
/// own period, every other tenant's by the default.
fn expired_ids(
    conn: &Connection,
    retention: &Retention,
    now: Timestamp,
    limit: u32,
) -> Result<Vec<TaskId>, StoreError> {
    const FINISHED: &str = concat!(
        "SELECT task_id FROM heads INDEXED BY heads_finished WHERE ",
        finished_states!(),
        " AND status_nanos <= ?"
    );
    let mut queries: Vec<(String, Vec<SqlValue>)> = Vec::new();
    let overridden: Vec<&str> = retention.overrides().map(|(t, _)| t).collect();
    for (tenant, _) in retention.overrides() {
        if let Some(cutoff) = retention.finished_before(tenant, now) {
            queries.push((
                format!("{FINISHED} AND tenant = ?"),
                vec![cutoff.unix_nanos().into(), tenant.to_string().into()],
            ));
        }
    }
    if let Some(secs) = retention.default_period().secs() {
        let cutoff = now.minus_secs(secs);
        let marks = vec!["?"; overridden.len()].join(", ");
        let mut args: Vec<SqlValue> = vec![cutoff.unix_nanos().into()];
        args.extend(overridden.iter().map(|t| SqlValue::from(t.to_string())));
        queries.push((format!("{FINISHED} AND tenant NOT IN ({marks})"), args));
    }
    let mut out = Vec::new();
    for (sql, mut args) in queries {
        let left = limit as usize - out.len();
        if left == 0 {
            break;
        }
        args.push((left as i64).into());
        let mut stmt = conn.prepare(&format!("{sql} LIMIT ?")).map_err(db_err)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                r.get::<_, String>(0)
            })
            .map_err(db_err)?;
        for id in rows {
            out.push(TaskId::parse(id.map_err(db_err)?).map_err(StoreError::Corrupt)?);
        }
    }
    Ok(out)
}
