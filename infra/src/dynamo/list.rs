//! ListTasks on DynamoDB in two calls for most callers: one Query on the list index the filters
//! pick reads the keys of every match (index items are small: keys, the state key and the chunk
//! counts), which gives `totalSize` exactly and the page after the cursor; one BatchGetItem then
//! reads the page's heads and, when asked, their artifact chunks (ADR 019). A caller with more
//! matches than one Query page holds (1 MB of index items, ~5,000 tasks) pays one Query more per
//! such page; with sharded index keys, one Query per shard.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use taskledger_domain::ids::{ContextId, Principal};
use taskledger_domain::ports::{Cursor, ListQuery, ListScope, StoreError};
use taskledger_domain::projection::ArtifactChunk;
use taskledger_domain::task::TaskAggregate;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::TaskState;

use super::expiry::{self, KeyRange};
use super::schema::{self, BY_CONTEXT, BY_OWNER, BY_STATE};
use super::store::{get_s, parse, s, sdk_err, snapshot_of, DynamoStore, Item};

/// Query pages one list read may walk (per shard) before giving up on an exact total.
pub const MAX_COUNT_PAGES: usize = 1000;
/// Keys one BatchGetItem takes (DynamoDB's limit).
pub const MAX_BATCH_KEYS: usize = 100;
/// Rounds of retrying keys DynamoDB left unprocessed (throttling) before failing the read.
const MAX_BATCH_ROUNDS: usize = 8;

/// One match of a list index: where it sorts, its task partition and its chunk counts.
struct Match {
    sort_key: String,
    pk: String,
    chunks: Vec<u32>,
}

/// A page read from a list index: snapshots with their chunks, the number of all matches and
/// the cursor of the next page.
pub(super) struct IndexPage {
    pub(super) tasks: Vec<(TaskAggregate, Vec<ArtifactChunk>)>,
    pub(super) total_size: u64,
    pub(super) next: Option<Cursor>,
}

impl DynamoStore {
    /// The page of the owner's tasks that match `q` (newest first), every match counted.
    pub(super) async fn list_page(
        &self,
        owner: &Principal,
        q: &ListQuery,
    ) -> Result<IndexPage, StoreError> {
        let page_size = q.page_size.get() as usize;
        let after = q
            .after
            .as_ref()
            .map(|c| schema::list_sort_key(c.status_nanos, &c.task_id));
        // Every shard of the index, read at once; each keeps the first page_size + 1 matches
        // after the cursor and counts the rest.
        let shards = (0..self.index_shards)
            .map(|shard| self.shard_matches(owner, q, shard, after.as_deref(), page_size + 1));
        let mut total = 0u64;
        let mut matches = Vec::new();
        for r in futures_util::future::join_all(shards).await {
            let (count, kept) = r?;
            total += count;
            matches.extend(kept);
        }
        matches.sort_by(|a, b| b.sort_key.cmp(&a.sort_key));
        let more = matches.len() > page_size;
        matches.truncate(page_size);
        let next = match (more, matches.last()) {
            (true, Some(last)) => Some(cursor_of(&last.sort_key)?),
            _ => None,
        };
        let mut tasks = self
            .heads_and_chunks(&matches, q.view.include_artifacts)
            .await?;
        tasks.retain(|(state, _)| !expiry::is_expired_head(state, q.finished_before));
        Ok(IndexPage {
            tasks,
            total_size: total,
            next,
        })
    }

    /// The matches of one index shard: how many, and the first `keep` after the cursor.
    async fn shard_matches(
        &self,
        owner: &Principal,
        q: &ListQuery,
        shard: u32,
        after: Option<&str>,
        keep: usize,
    ) -> Result<(u64, Vec<Match>), StoreError> {
        // Context and state each have an index; both together filter the context index.
        let (index, pk_attr, pk_value, filter_state) = match (&q.context_id, q.state) {
            (Some(c), st) => (BY_CONTEXT, "g2pk", schema::context_key(owner, c), st),
            (None, Some(st)) => (BY_STATE, "g3pk", schema::state_key(owner, st), None),
            (None, None) => (BY_OWNER, "g1pk", schema::owner_key(owner), None),
        };
        let pk_value = schema::index_key(&pk_value, shard, self.index_shards);
        let range = match (index, q.state) {
            (BY_STATE, Some(st)) => expiry::state_range(st, q),
            _ => q.status_after.map_or(KeyRange::All, |t| {
                KeyRange::From(schema::list_sort_floor(t.unix_nanos()))
            }),
        };
        let (key_cond, bounds) = range.condition();
        // The owner and context indexes tell finished tasks past their expiry by the state key
        // they carry (the state index by its key range).
        let by_state_key = index != BY_STATE && q.finished_before.is_some();
        let mut count = 0u64;
        let mut kept = Vec::new();
        let mut start: Option<Item> = None;
        for _ in 0..MAX_COUNT_PAGES {
            let mut b = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index)
                .key_condition_expression(key_cond)
                .projection_expression(if by_state_key {
                    "pk, g1sk, #ch, g3pk"
                } else {
                    "pk, g1sk, #ch"
                })
                .expression_attribute_names("#ip", pk_attr)
                .expression_attribute_names("#ch", schema::CHUNK_COUNTS_ATTR)
                .expression_attribute_values(":p", s(&pk_value))
                .scan_index_forward(false)
                .set_exclusive_start_key(start.take());
            for (name, value) in &bounds {
                b = b.expression_attribute_values(*name, s(value));
            }
            // The caller's entries are its own tasks' heads and the member entries of tasks
            // shared with it (ADR 021); a scope keeps one kind.
            let mut filters = Vec::new();
            if let Some((filter, name, value)) = scope_filter(q.scope) {
                filters.push(filter);
                b = b.expression_attribute_values(name, s(value));
            }
            if let Some(st) = filter_state {
                filters.push("#st = :st");
                b = b
                    .expression_attribute_names("#st", "g3pk")
                    .expression_attribute_values(
                        ":st",
                        s(schema::index_key(
                            &schema::state_key(owner, st),
                            shard,
                            self.index_shards,
                        )),
                    );
            }
            if !filters.is_empty() {
                b = b.filter_expression(filters.join(" AND "));
            }
            let out = b.send().await.map_err(|e| sdk_err("Query", e))?;
            for item in out.items.unwrap_or_default() {
                let sort_key = get_s(&item, "g1sk")?;
                if by_state_key {
                    // An owner index from before it carried the state key: counted.
                    let state = item.get("g3pk").map(|_| state_of_key(&item)).transpose()?;
                    if state
                        .is_some_and(|st| expiry::is_expired_key(st, sort_key, q.finished_before))
                    {
                        continue;
                    }
                }
                count += 1;
                if kept.len() < keep && after.is_none_or(|a| sort_key < a) {
                    kept.push(Match {
                        sort_key: sort_key.to_string(),
                        pk: get_s(&item, "pk")?.to_string(),
                        chunks: match item.get(schema::CHUNK_COUNTS_ATTR) {
                            Some(AttributeValue::S(v)) => schema::parse_chunk_counts(v)
                                .ok_or_else(|| {
                                    StoreError::Corrupt(format!("bad chunk counts {v:?}"))
                                })?,
                            _ => Vec::new(),
                        },
                    });
                }
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok((count, kept)),
            }
        }
        Err(StoreError::Unavailable(format!(
            "more than {MAX_COUNT_PAGES} index pages match this list; narrow it with a filter"
        )))
    }

    /// How many of the caller's tasks are in each state: a counting Query of the state index
    /// per state (and shard), all at once; with a context, the context index's keys, tallied by
    /// their state key.
    pub(super) async fn state_counts(
        &self,
        who: &Principal,
        scope: ListScope,
        context: Option<&ContextId>,
        finished_before: Option<Timestamp>,
    ) -> Result<Vec<(TaskState, u64)>, StoreError> {
        let mut counts: HashMap<TaskState, u64> = HashMap::new();
        match context {
            None => {
                let mut reads = Vec::new();
                for st in TaskState::ALL {
                    for shard in 0..self.index_shards {
                        let key = schema::index_key(
                            &schema::state_key(who, st),
                            shard,
                            self.index_shards,
                        );
                        let range = match finished_before.filter(|_| st.is_terminal()) {
                            Some(cutoff) => KeyRange::From(expiry::fresh_floor(cutoff)),
                            None => KeyRange::All,
                        };
                        reads.push(async move {
                            self.count_keys(BY_STATE, "g3pk", key, scope, false, range)
                                .await
                                .map(|(n, _)| (st, n))
                        });
                    }
                }
                for r in futures_util::future::join_all(reads).await {
                    let (st, n) = r?;
                    *counts.entry(st).or_default() += n;
                }
            }
            Some(c) => {
                for shard in 0..self.index_shards {
                    let key =
                        schema::index_key(&schema::context_key(who, c), shard, self.index_shards);
                    let (_, states) = self
                        .count_keys(BY_CONTEXT, "g2pk", key, scope, true, KeyRange::All)
                        .await?;
                    for (st, sort_key) in states {
                        if !expiry::is_expired_key(st, &sort_key, finished_before) {
                            *counts.entry(st).or_default() += 1;
                        }
                    }
                }
            }
        }
        let mut out: Vec<(TaskState, u64)> = counts.into_iter().filter(|(_, n)| *n > 0).collect();
        out.sort_by_key(|(st, _)| st.number());
        Ok(out)
    }

    /// The items of one index partition in `scope`: how many, and (with `states`) the state
    /// of each, read from its `g3pk`.
    pub(super) async fn count_keys(
        &self,
        index: &str,
        pk_attr: &str,
        pk_value: String,
        scope: ListScope,
        states: bool,
        range: KeyRange,
    ) -> Result<(u64, Vec<(TaskState, String)>), StoreError> {
        let mut count = 0u64;
        let mut found = Vec::new();
        let mut start: Option<Item> = None;
        let (key_cond, bounds) = range.condition();
        for _ in 0..MAX_COUNT_PAGES {
            let mut b = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index)
                .key_condition_expression(key_cond)
                .expression_attribute_names("#ip", pk_attr)
                .expression_attribute_values(":p", s(&pk_value))
                .set_exclusive_start_key(start.take());
            for (name, value) in &bounds {
                b = b.expression_attribute_values(*name, s(value));
            }
            b = if states {
                b.projection_expression("pk, g3pk, g1sk")
            } else {
                b.select(aws_sdk_dynamodb::types::Select::Count)
            };
            if let Some((filter, name, value)) = scope_filter(scope) {
                b = b
                    .filter_expression(filter)
                    .expression_attribute_values(name, s(value));
            }
            let out = b.send().await.map_err(|e| sdk_err("Query", e))?;
            count += out.count.max(0) as u64;
            for item in out.items.unwrap_or_default() {
                found.push((state_of_key(&item)?, get_s(&item, "g1sk")?.to_string()));
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok((count, found)),
            }
        }
        Err(StoreError::Unavailable(format!(
            "more than {MAX_COUNT_PAGES} index pages match; narrow the count with a filter"
        )))
    }

    /// The heads of `matches` and (when asked) their chunks, in `matches`' order.
    async fn heads_and_chunks(
        &self,
        matches: &[Match],
        include_artifacts: bool,
    ) -> Result<Vec<(TaskAggregate, Vec<ArtifactChunk>)>, StoreError> {
        let mut keys: Vec<Item> = Vec::new();
        for m in matches {
            keys.push(key(&m.pk, schema::HEAD_SK));
            if include_artifacts {
                for (ord, n) in m.chunks.iter().enumerate() {
                    for chunk in 0..*n {
                        keys.push(key(&m.pk, &schema::chunk_sk(ord as u32, chunk)));
                    }
                }
            }
        }
        let mut found: HashMap<(String, String), Item> = HashMap::new();
        for batch in keys.chunks(MAX_BATCH_KEYS) {
            for item in self.batch_get(batch.to_vec()).await? {
                let k = (
                    get_s(&item, "pk")?.to_string(),
                    get_s(&item, "sk")?.to_string(),
                );
                found.insert(k, item);
            }
        }
        let mut out = Vec::with_capacity(matches.len());
        for m in matches {
            // A task whose head is gone since the index was read is left out.
            let Some(head) = found.get(&(m.pk.clone(), schema::HEAD_SK.to_string())) else {
                continue;
            };
            let mut chunks = Vec::new();
            if include_artifacts {
                for (ord, n) in m.chunks.iter().enumerate() {
                    for chunk in 0..*n {
                        let sk = schema::chunk_sk(ord as u32, chunk);
                        if let Some(item) = found.get(&(m.pk.clone(), sk)) {
                            chunks.push(ArtifactChunk {
                                ord: ord as u32,
                                chunk,
                                artifact: parse(get_s(item, "art")?)?,
                            });
                        }
                    }
                }
            }
            out.push((snapshot_of(head)?, chunks));
        }
        Ok(out)
    }

    /// One BatchGetItem, retrying what DynamoDB leaves unprocessed. Eventually consistent, like
    /// the index read before it (half the read units of a consistent read).
    async fn batch_get(&self, mut keys: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        for round in 0..MAX_BATCH_ROUNDS {
            if keys.is_empty() {
                return Ok(items);
            }
            if round > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20 << round)).await;
            }
            let request = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut keys)))
                .consistent_read(false)
                .build()
                .map_err(|e| StoreError::Other(format!("cannot build a batch read: {e}")))?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .send()
                .await
                .map_err(|e| sdk_err("BatchGetItem", e))?;
            if let Some(mut r) = out.responses {
                items.extend(r.remove(&self.table).unwrap_or_default());
            }
            if let Some(mut left) = out.unprocessed_keys {
                if let Some(k) = left.remove(&self.table) {
                    keys = k.keys;
                }
            }
        }
        Err(StoreError::Unavailable(
            "DynamoDB left part of a batch read unprocessed".into(),
        ))
    }
}

/// The filter on an index item's `sk` keeping one kind of a caller's entries — its own tasks'
/// heads, or the member entries of tasks shared with it — and its value; `All` keeps both.
fn scope_filter(scope: ListScope) -> Option<(&'static str, &'static str, &'static str)> {
    match scope {
        ListScope::All => None,
        ListScope::Owned => Some(("sk = :head", ":head", schema::HEAD_SK)),
        ListScope::Shared => Some((
            "begins_with(sk, :member)",
            ":member",
            schema::MEMBER_SK_PREFIX,
        )),
    }
}

/// The task state an index item's state key (`g3pk`) names.
fn state_of_key(item: &Item) -> Result<TaskState, StoreError> {
    let key = get_s(item, "g3pk")?;
    key.split(schema::SEP)
        .nth(2)
        .and_then(TaskState::from_name)
        .ok_or_else(|| StoreError::Corrupt(format!("bad state key {key:?}")))
}

fn key(pk: &str, sk: &str) -> Item {
    HashMap::from([("pk".to_string(), s(pk)), ("sk".to_string(), s(sk))])
}

fn cursor_of(sort_key: &str) -> Result<Cursor, StoreError> {
    let bad = || StoreError::Corrupt(format!("bad list key {sort_key}"));
    let (nanos, id) = schema::split_list_sort_key(sort_key).ok_or_else(bad)?;
    Ok(Cursor {
        status_nanos: nanos.parse().map_err(|_| bad())?,
        task_id: id.to_string(),
    })
}
