//! The SQLite store as the feed of work after each commit: work requests and pushed updates in
//! commit order, consumer cursors that never move back, and pruning of entries every consumer
//! has passed.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{CommittedEvent, StoreError, WorkFeed};

use super::codec::db_err;
use super::tail::feed_event;
use super::SqliteStore;

#[async_trait]
impl WorkFeed for SqliteStore {
    async fn feed_after(
        &self,
        cursor: u64,
        limit: u32,
    ) -> Result<Vec<(u64, CommittedEvent)>, StoreError> {
        if let Some(entries) = self.inner.tail.after(cursor, limit, self.stamp()) {
            return Ok(entries);
        }
        self.read_now(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT pos, task_id, seq, event_type, pushed, trace FROM feed WHERE pos > ?1 \
                     ORDER BY pos",
                )
                .map_err(db_err)?;
            // No `LIMIT ?`: SQLite compiles a bound LIMIT into the plan and prepares the
            // statement again at every call; the rows are stepped lazily instead.
            let rows = stmt
                .query_map(params![cursor as i64], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, Option<String>>(5)?,
                    ))
                })
                .map_err(db_err)?;
            let mut entries = Vec::new();
            for row in rows.take(limit as usize) {
                let (pos, task_id, seq, event_type, pushed, trace) = row.map_err(db_err)?;
                // Rows are written with a commit's task id; one that does not read as a task
                // id (a manual edit) is skipped rather than allowed to stop the feed.
                let Ok(task_id) = TaskId::parse(task_id) else {
                    tracing::warn!(pos, "feed entry with an unreadable task id skipped");
                    continue;
                };
                let event = feed_event(task_id, seq as u64, event_type, pushed, trace);
                entries.push((pos as u64, event));
            }
            Ok(entries)
        })
    }

    async fn feed_cursor(&self, consumer: &str) -> Result<u64, StoreError> {
        self.read_now(|conn| {
            conn.prepare_cached("SELECT pos FROM feed_cursors WHERE consumer = ?1")
                .and_then(|mut s| {
                    s.query_row(params![consumer], |r| r.get::<_, i64>(0))
                        .optional()
                })
                .map(|p| p.unwrap_or(0) as u64)
                .map_err(db_err)
        })
    }

    async fn save_feed_cursor(&self, consumer: &str, cursor: u64) -> Result<(), StoreError> {
        let consumer = consumer.to_string();
        let lowest = self
            .write(move |conn| {
                // One transaction: the cursor and the pruning it allows.
                let tx = conn.unchecked_transaction().map_err(db_err)?;
                tx.prepare_cached(
                    "INSERT INTO feed_cursors (consumer, pos) VALUES (?1, ?2) \
                 ON CONFLICT(consumer) DO UPDATE SET pos = MAX(pos, excluded.pos)",
                )
                .and_then(|mut s| s.execute(params![consumer, cursor as i64]))
                .map_err(db_err)?;
                // Entries every consumer has passed are done: the feed stays small. The one at the
                // lowest cursor stays (and every later one), so the largest position is never below
                // a cursor and the next entry (the largest position + 1, `schema.rs`) lands past
                // them all.
                let lowest: i64 = tx
                    .prepare_cached("SELECT MIN(pos) FROM feed_cursors")
                    .and_then(|mut s| s.query_row([], |r| r.get(0)))
                    .map_err(db_err)?;
                tx.prepare_cached("DELETE FROM feed WHERE pos < ?1")
                    .and_then(|mut s| s.execute(params![lowest]))
                    .map_err(db_err)?;
                tx.commit().map_err(db_err)?;
                Ok(lowest as u64)
            })
            .await?;
        self.inner.tail.forget_before(lowest);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::dir;
    use super::*;

    #[tokio::test]
    async fn work_requests_land_in_the_feed_with_their_commit_and_cursors_persist() {
        let store = SqliteStore::in_memory();
        let id = crate::contract::create_task(&store, "t-feed", "c").await;
        let entries = store.feed_after(0, 10).await.unwrap();
        assert_eq!(entries.len(), 1, "task creation requests work");
        assert_eq!(entries[0].1.task_id, id.as_str());
        assert_eq!(entries[0].1.seq, 3);
        assert_eq!(
            entries[0].1.turn().map(|t| t.work_seq),
            Some(3),
            "a work request"
        );
        assert_eq!(store.feed_cursor("relay").await.unwrap(), 0);
        store.save_feed_cursor("relay", entries[0].0).await.unwrap();
        store.save_feed_cursor("relay", 0).await.unwrap();
        assert_eq!(
            store.feed_cursor("relay").await.unwrap(),
            entries[0].0,
            "never moves back"
        );
        assert!(store.feed_after(entries[0].0, 10).await.unwrap().is_empty());
        assert_eq!(
            store.feed_after(0, 10).await.unwrap().len(),
            1,
            "entries before the cursor are pruned; the one at it stays"
        );
    }

    fn positions(entries: &[(u64, CommittedEvent)]) -> Vec<u64> {
        entries.iter().map(|(p, _)| *p).collect()
    }

    #[tokio::test]
    async fn given_commits_when_the_feed_is_read_from_the_tail_then_it_is_what_the_file_holds() {
        let dir = dir("feed-tail");
        let store = SqliteStore::open(&dir).unwrap();
        for i in 0..5 {
            crate::contract::create_task(&store, &format!("t-tail-{i}"), "c").await;
        }
        let from_tail = store
            .inner
            .tail
            .after(0, 100, store.stamp())
            .expect("the tail holds them");
        assert_eq!(from_tail.len(), 5);
        assert_eq!(store.feed_after(0, 100).await.unwrap(), from_tail);
        // A store opened on the same file has seen none of them: it reads the file.
        let other = SqliteStore::open(&dir).unwrap();
        assert!(other.inner.tail.after(0, 100, other.stamp()).is_none());
        assert_eq!(other.feed_after(0, 100).await.unwrap(), from_tail);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn given_entries_of_another_process_between_when_read_then_none_is_missed() {
        let dir = dir("feed-tail-two");
        let (a, b) = (
            SqliteStore::open(&dir).unwrap(),
            SqliteStore::open(&dir).unwrap(),
        );
        crate::contract::create_task(&a, "t-a-1", "c").await;
        crate::contract::create_task(&b, "t-b-1", "c").await;
        crate::contract::create_task(&a, "t-a-2", "c").await;
        let first = a.feed_after(0, 1).await.unwrap();
        assert_eq!(first[0].1.task_id, "t-a-1");
        let rest = a.feed_after(first[0].0, 10).await.unwrap();
        let ids: Vec<&str> = rest.iter().map(|(_, e)| e.task_id.as_str()).collect();
        assert_eq!(
            ids,
            ["t-b-1", "t-a-2"],
            "the other process's entry is read from the file"
        );
        assert_eq!(positions(&rest), [first[0].0 + 1, first[0].0 + 2]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn given_every_entry_passed_and_pruned_when_more_come_then_they_land_past_the_cursor() {
        let store = SqliteStore::in_memory();
        let mut cursor = 0;
        for round in 0..3 {
            crate::contract::create_task(&store, &format!("t-prune-{round}"), "c").await;
            crate::contract::create_task(&store, &format!("t-prune-{round}-b"), "c").await;
            let entries = store.feed_after(cursor, 10).await.unwrap();
            assert_eq!(
                entries.len(),
                2,
                "round {round}: both new entries are found"
            );
            assert!(entries.iter().all(|(pos, _)| *pos > cursor));
            cursor = entries[1].0;
            store.save_feed_cursor("relay", cursor).await.unwrap();
            let left = store.feed_after(0, 10).await.unwrap();
            assert_eq!(
                left.len(),
                1,
                "round {round}: only the entry at the cursor stays"
            );
            assert_eq!(left[0].0, cursor);
        }
    }
}
