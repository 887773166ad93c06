//! The SQLite store's housekeeping: the deadline reaper's candidates, read through a partial
//! index of the tasks at work (`heads_at_work`: small, and written only for those tasks).

use async_trait::async_trait;
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{AtWork, Housekeeping, StoreError};
use taskledger_domain::time::Timestamp;

use super::codec::db_err;
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
}
