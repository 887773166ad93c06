//! ListTasks on DynamoDB: the index and key condition the filters pick, a page read newest first
//! with its cursor, and `totalSize` from a counting Query on the same index (no Scan).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::Select;
use taskledger_domain::ids::Principal;
use taskledger_domain::ports::{Cursor, ListQuery, StoreError};
use taskledger_domain::task::TaskAggregate;

use super::schema::{self, BY_CONTEXT, BY_OWNER, BY_STATE};
use super::store::{get_s, s, sdk_err, snapshot_of, DynamoStore};

/// Pages a counting query may walk before giving up on an exact total.
const MAX_COUNT_PAGES: usize = 1000;

/// A page of snapshots read from a list index; the caller makes their views.
pub(super) struct IndexPage {
    pub(super) tasks: Vec<TaskAggregate>,
    pub(super) total_size: u64,
    pub(super) next: Option<Cursor>,
}

impl DynamoStore {
    /// One page of the owner's tasks that match `q` (snapshots, newest first), with the number
    /// of all matches and the cursor of the next page.
    pub(super) async fn list_page(
        &self,
        owner: &Principal,
        q: &ListQuery,
    ) -> Result<IndexPage, StoreError> {
        // Context and state each have an index; both together filter the context index.
        let (index, pk_attr, pk_value, filter_state) = match (&q.context_id, q.state) {
            (Some(c), st) => (BY_CONTEXT, "g2pk", schema::context_key(owner, c), st),
            (None, Some(st)) => (BY_STATE, "g3pk", schema::state_key(owner, st), None),
            (None, None) => (BY_OWNER, "g1pk", schema::owner_key(owner), None),
        };
        let lower = q
            .status_after
            .map(|t| schema::list_sort_floor(t.unix_nanos()));
        let key_cond = match &lower {
            Some(_) => format!("{pk_attr} = :p AND g1sk >= :lo"),
            None => format!("{pk_attr} = :p"),
        };
        let query = || {
            let mut b = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index)
                .key_condition_expression(&key_cond)
                .expression_attribute_values(":p", s(&pk_value));
            if let Some(lo) = &lower {
                b = b.expression_attribute_values(":lo", s(lo));
            }
            if let Some(st) = filter_state {
                b = b
                    .filter_expression("#st = :st")
                    .expression_attribute_names("#st", "g3pk")
                    .expression_attribute_values(":st", s(schema::state_key(owner, st)));
            }
            b
        };
        let page_size = q.page_size.get() as usize;
        let start = q.after.as_ref().map(|c| {
            let mut k = HashMap::from([
                ("pk".to_string(), s(schema::task_pk(&c.task_id))),
                ("sk".to_string(), s(schema::HEAD_SK)),
                (
                    "g1sk".to_string(),
                    s(schema::list_sort_key(c.status_nanos, &c.task_id)),
                ),
            ]);
            k.insert(pk_attr.to_string(), s(&pk_value));
            k
        });
        let mut b = query()
            .scan_index_forward(false)
            .limit(page_size as i32 + 1)
            .set_exclusive_start_key(start);
        if filter_state.is_some() {
            // Filters apply after Limit; read a wider window to fill the page.
            b = b.limit((page_size as i32 + 1) * 4);
        }
        let out = b.send().await.map_err(|e| sdk_err("Query", e))?;
        let items = out.items.unwrap_or_default();
        let more_in_index = out.last_evaluated_key.is_some_and(|k| !k.is_empty());
        let mut tasks = Vec::new();
        let mut next = None;
        for (i, item) in items.iter().enumerate() {
            if i == page_size {
                break;
            }
            let snapshot = snapshot_of(item)?;
            if i + 1 == page_size && (items.len() > page_size || more_in_index) {
                let sk = get_s(item, "g1sk")?;
                let (nanos, id) = schema::split_list_sort_key(sk)
                    .ok_or_else(|| StoreError::Corrupt(format!("bad list key {sk}")))?;
                next = Some(Cursor {
                    status_nanos: nanos
                        .parse()
                        .map_err(|_| StoreError::Corrupt(format!("bad list key {sk}")))?,
                    task_id: id.to_string(),
                });
            }
            tasks.push(snapshot);
        }
        if tasks.len() < page_size && more_in_index && filter_state.is_some() {
            // A filtered window ran out before the page filled: continue after its last item.
            if let Some(last) = items.last() {
                let sk = get_s(last, "g1sk")?;
                if let Some((nanos, id)) = schema::split_list_sort_key(sk) {
                    next = nanos.parse().ok().map(|status_nanos| Cursor {
                        status_nanos,
                        task_id: id.to_string(),
                    });
                }
            }
        }
        // totalSize: a counting query on the same index (no Scan), following its pages.
        let mut total = 0u64;
        let mut count_start = None;
        for _ in 0..MAX_COUNT_PAGES {
            let out = query()
                .select(Select::Count)
                .set_exclusive_start_key(count_start)
                .send()
                .await
                .map_err(|e| sdk_err("Query", e))?;
            total += out.count.max(0) as u64;
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => count_start = Some(k),
                _ => break,
            }
        }
        Ok(IndexPage {
            tasks,
            total_size: total,
            next,
        })
    }
}
