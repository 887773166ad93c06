//! Rebuilding the DynamoDB read model: every task id, shard by shard through the `by-shard`
//! index (no Scan), and a task's head and read-model items rewritten from its events.

use std::collections::HashMap;

use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{Commit, EventStore, StoreError};
use taskledger_domain::projection::ReadWrite;
use taskledger_domain::task::TaskAggregate;

use super::schema;
use super::store::{get_s, json, n, s, sdk_err, DynamoStore};

impl DynamoStore {
    /// Every task id, shard by shard, a page at a time (rebuilds; a Query per page, no Scan).
    pub async fn task_ids(
        &self,
        shard: u32,
        start: Option<String>,
    ) -> Result<(Vec<TaskId>, Option<String>), StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(schema::BY_SHARD)
            .key_condition_expression("shard = :s")
            .expression_attribute_values(":s", s(schema::shard_key(shard)))
            .set_exclusive_start_key(start.map(|pk| {
                HashMap::from([
                    ("shard".into(), s(schema::shard_key(shard))),
                    ("pk".into(), s(&pk)),
                    ("sk".into(), s(schema::HEAD_SK)),
                ])
            }))
            .send()
            .await
            .map_err(|e| sdk_err("Query", e))?;
        let ids = out
            .items
            .unwrap_or_default()
            .iter()
            .map(|i| {
                let pk = get_s(i, "pk")?;
                let id = schema::parse_task_pk(pk)
                    .ok_or_else(|| StoreError::Corrupt(format!("bad task key {pk}")))?;
                TaskId::parse(id).map_err(StoreError::Corrupt)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let next = match out.last_evaluated_key {
            Some(k) => k.get("pk").and_then(|v| v.as_s().ok()).cloned(),
            None => None,
        };
        Ok((ids, next))
    }

    /// Rewrites a task's head and read-model items from its events (idempotent).
    pub async fn rebuild(&self, task_id: &TaskId) -> Result<u64, StoreError> {
        let events = self.events(task_id, 0).await?;
        let decoded = events
            .iter()
            .map(|e| e.decode().map_err(StoreError::Corrupt))
            .collect::<Result<Vec<_>, _>>()?;
        let mut state = TaskAggregate::default();
        let writes = taskledger_domain::projection::project(&mut state, &decoded);
        let sharing = taskledger_domain::ports::Sharing::between(vec![], state.head.as_ref());
        let commit = Commit {
            task_id: task_id.clone(),
            expected_version: 0,
            events: vec![],
            snapshot: state,
            writes,
            message_key: None,
            idempotency: None,
            pushes: vec![],
            sharing,
            trace: None,
        };
        let mut items = vec![self.head_item(&commit)?];
        for m in &commit.sharing.members {
            items.push(self.member_item(&commit, m)?);
        }
        for w in &commit.writes {
            match w {
                ReadWrite::History(h) => items.push(HashMap::from([
                    ("pk".into(), s(schema::task_pk(task_id.as_str()))),
                    ("sk".into(), s(schema::history_sk(h.pos))),
                    ("msg".into(), s(json(&h.message)?)),
                ])),
                ReadWrite::ArtifactChunk(ch) => items.push(HashMap::from([
                    ("pk".into(), s(schema::task_pk(task_id.as_str()))),
                    ("sk".into(), s(schema::chunk_sk(ch.ord, ch.chunk))),
                    ("art".into(), s(json(&ch.artifact)?)),
                ])),
                ReadWrite::ArtifactReset { .. } => {}
            }
        }
        // A finished task's items keep their expiry (a Put replaces the whole item).
        if let Some(at) = commit.head().and_then(|h| self.retention.expires_at(h)) {
            for item in items.iter_mut() {
                item.insert(schema::EXPIRES_ATTR.into(), n(at.unix_secs()));
            }
        }
        // Stale chunks of replaced artifacts: delete chunk items the replay does not produce.
        let keep: std::collections::HashSet<String> = items
            .iter()
            .filter_map(|i| i.get("sk").and_then(|v| v.as_s().ok()).cloned())
            .collect();
        for old in self
            .range(task_id.as_str(), schema::CHUNKS_START, schema::CHUNKS_END)
            .await?
        {
            let sk = get_s(&old, "sk")?.to_string();
            if !keep.contains(&sk) {
                self.client
                    .delete_item()
                    .table_name(&self.table)
                    .key("pk", s(schema::task_pk(task_id.as_str())))
                    .key("sk", s(sk))
                    .send()
                    .await
                    .map_err(|e| sdk_err("DeleteItem", e))?;
            }
        }
        for item in items {
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item))
                .send()
                .await
                .map_err(|e| sdk_err("PutItem", e))?;
        }
        Ok(events.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use taskledger_domain::ids::HistoryLength;
    use taskledger_domain::ports::{TaskReadModel, ViewOptions};

    use super::super::schema::SHARDS;
    use super::super::store::tests::fresh_store;
    use super::*;

    #[tokio::test]
    async fn rebuild_rewrites_the_read_model_from_events_idempotently() {
        let Some(store) = fresh_store().await else {
            return;
        };
        let id = crate::contract::create_task(&store, "t-rebuild", "c").await;
        let view = |s: DynamoStore, id: TaskId| async move {
            let v = s
                .get(
                    &crate::contract::alice(),
                    &id,
                    ViewOptions::exact(HistoryLength::All, true),
                )
                .await
                .unwrap()
                .unwrap();
            taskledger_domain::projection::assemble(&v.head, v.history, v.chunks)
        };
        let before = view(store.clone(), id.clone()).await;
        let history_row = |s: DynamoStore, id: TaskId| async move {
            s.range(id.as_str(), &schema::history_sk(0), schema::HISTORY_END)
                .await
                .unwrap()
                .len()
        };
        // The head's tail holds the one message: no history item (ADR 029).
        assert_eq!(history_row(store.clone(), id.clone()).await, 0);
        // damage the read model: garble the head's tail (written as a head before ADR 036
        // was, its snapshot as text, which reads the same)
        let mut garbled = store.load(&id).await.unwrap().unwrap().snapshot;
        garbled["head"]["recent"] = serde_json::json!({"messages": [], "sizes": []});
        store
            .client
            .update_item()
            .table_name(&store.table)
            .key("pk", s(schema::task_pk(id.as_str())))
            .key("sk", s(schema::HEAD_SK))
            .update_expression("SET snap = :s REMOVE snapz")
            .expression_attribute_values(":s", s(garbled.to_string()))
            .send()
            .await
            .unwrap();
        assert_ne!(view(store.clone(), id.clone()).await, before);
        assert_eq!(store.rebuild(&id).await.unwrap(), 3);
        assert_eq!(history_row(store.clone(), id.clone()).await, 0);
        assert_eq!(view(store.clone(), id.clone()).await, before);
        assert_eq!(store.rebuild(&id).await.unwrap(), 3, "idempotent");
        assert_eq!(view(store.clone(), id.clone()).await, before);
        let mut all = Vec::new();
        for shard in 0..SHARDS {
            let mut start = None;
            loop {
                let (ids, next) = store.task_ids(shard, start).await.unwrap();
                all.extend(ids);
                match next {
                    Some(n) => start = Some(n),
                    None => break,
                }
            }
        }
        assert_eq!(all, vec![id]);
    }
}
