//! The DynamoDB store's housekeeping: the deadline reaper's candidates, from the sparse
//! `at-work` index (only heads of SUBMITTED and WORKING tasks are in it), one Query per shard.

use async_trait::async_trait;
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{AtWork, Housekeeping, StoreError};
use taskledger_domain::retention::Retention;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::TaskState;

use super::schema::{self, AT_WORK, SHARDS};
use super::store::{get_s, n, s, sdk_err, snapshot_of, DynamoStore};
use futures_util::StreamExt;

/// Items stamped with their expiry at once.
const STAMP_CONCURRENCY: usize = 16;

/// Just after `key` in the index's order (a key condition has one bound per side: BETWEEN).
fn just_after(key: &str) -> String {
    format!("{key}\u{1}")
}

#[async_trait]
impl Housekeeping for DynamoStore {
    async fn stalled(
        &self,
        before: Timestamp,
        after: Option<&AtWork>,
        limit: u32,
    ) -> Result<Vec<AtWork>, StoreError> {
        // Sort keys below `before`'s floor are older; `after`'s key and those before it are done.
        let upper = schema::list_sort_floor(before.unix_nanos());
        let lower =
            after.map(|a| just_after(&schema::list_sort_key(a.status_nanos, a.task_id.as_str())));
        if lower.as_ref().is_some_and(|l| *l >= upper) {
            return Ok(vec![]);
        }
        let shards = (0..SHARDS).map(|shard| {
            let (lower, upper) = (lower.clone(), upper.clone());
            async move {
                let key = schema::at_work_key(shard, TaskState::Working).unwrap_or_default();
                let mut q = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .index_name(AT_WORK)
                    .expression_attribute_values(":p", s(key))
                    .expression_attribute_values(":hi", s(upper))
                    .limit(i32::try_from(limit).unwrap_or(i32::MAX));
                q = match lower {
                    Some(lo) => q
                        .key_condition_expression("g4pk = :p AND g1sk BETWEEN :lo AND :hi")
                        .expression_attribute_values(":lo", s(lo)),
                    None => q.key_condition_expression("g4pk = :p AND g1sk < :hi"),
                };
                let out = q.send().await.map_err(|e| sdk_err("Query", e))?;
                let mut found = Vec::new();
                for item in out.items.unwrap_or_default() {
                    let (sort, pk) = (get_s(&item, "g1sk")?, get_s(&item, "pk")?);
                    // The floor itself (`digits#`) is no task's key: BETWEEN's top is open here.
                    let Some((nanos, id)) = schema::split_list_sort_key(sort) else {
                        continue;
                    };
                    let id = schema::parse_task_pk(pk).unwrap_or(id);
                    found.push(AtWork {
                        status_nanos: nanos.parse().unwrap_or(0),
                        task_id: TaskId::parse(id).map_err(StoreError::Corrupt)?,
                    });
                }
                Ok::<_, StoreError>(found)
            }
        });
        let mut all = Vec::new();
        for r in futures_util::future::join_all(shards).await {
            all.extend(r?);
        }
        // Oldest first across the shards.
        all.sort_by(|a, b| {
            (a.status_nanos, a.task_id.as_str()).cmp(&(b.status_nanos, b.task_id.as_str()))
        });
        all.truncate(limit as usize);
        Ok(all)
    }

    /// Nothing: each item of a finished task carries its expiry (`expires`), and the table's
    /// TTL deletes it; reads treat an expired task as gone before that.
    async fn purge_expired(
        &self,
        _retention: &Retention,
        _now: Timestamp,
        _limit: u32,
    ) -> Result<Vec<TaskId>, StoreError> {
        Ok(vec![])
    }

    /// Every item of the finished task without its expiry gets it (one UpdateItem each, a
    /// few at a time; an item deleted meanwhile is not made again).
    async fn stamp_expiry(&self, task_id: &TaskId) -> Result<u64, StoreError> {
        let Some(item) = self.head(task_id.as_str()).await? else {
            return Ok(0);
        };
        let Some(at) = snapshot_of(&item)?
            .head
            .and_then(|h| self.retention.expires_at(&h))
        else {
            return Ok(0);
        };
        let pk = schema::task_pk(task_id.as_str());
        let mut keys = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :p")
                .filter_expression("attribute_not_exists(#x)")
                .projection_expression("sk")
                .expression_attribute_names("#x", schema::EXPIRES_ATTR)
                .expression_attribute_values(":p", s(&pk))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| sdk_err("Query", e))?;
            for item in out.items.unwrap_or_default() {
                keys.push(get_s(&item, "sk")?.to_string());
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        let expires = n(at.unix_secs());
        let updates = keys.into_iter().map(|sk| {
            self.client
                .update_item()
                .table_name(&self.table)
                .key("pk", s(&pk))
                .key("sk", s(sk))
                .update_expression("SET #x = :x")
                .condition_expression("attribute_exists(pk)")
                .expression_attribute_names("#x", schema::EXPIRES_ATTR)
                .expression_attribute_values(":x", expires.clone())
                .send()
        });
        let mut stamped = 0u64;
        let mut results = futures_util::stream::iter(updates).buffer_unordered(STAMP_CONCURRENCY);
        while let Some(r) = results.next().await {
            match r {
                Ok(_) => stamped += 1,
                // Deleted meanwhile (a chunk replaced): nothing to stamp.
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) => {}
                Err(e) => return Err(sdk_err("UpdateItem", e)),
            }
        }
        Ok(stamped)
    }

    /// Counting every task takes a Scan's worth of reads here: not offered (ADR 033).
    async fn tasks_by_state(&self) -> Result<Option<Vec<(TaskState, u64)>>, StoreError> {
        Ok(None)
    }

    /// Shard by shard through the `by-shard` index (no Scan); the cursor is `shard␟pk`.
    async fn task_page(
        &self,
        cursor: Option<String>,
        _limit: u32,
    ) -> Result<(Vec<TaskId>, Option<String>), StoreError> {
        let (mut shard, mut start) = match cursor.as_deref().and_then(|c| c.split_once(schema::SEP))
        {
            Some((s, pk)) => (
                s.parse::<u32>()
                    .map_err(|_| StoreError::Corrupt(format!("bad task cursor {cursor:?}")))?,
                (!pk.is_empty()).then(|| pk.to_string()),
            ),
            None => (0, None),
        };
        while shard < SHARDS {
            let (ids, next) = self.task_ids(shard, start.take()).await?;
            let cursor = match next {
                Some(pk) => Some(format!("{shard}{}{pk}", schema::SEP)),
                None if shard + 1 < SHARDS => Some(format!("{}{}", shard + 1, schema::SEP)),
                None => None,
            };
            if !ids.is_empty() || cursor.is_none() {
                return Ok((ids, cursor));
            }
            shard += 1;
        }
        Ok((vec![], None))
    }
}
