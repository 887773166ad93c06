//! A commit as one `TransactWriteItems` (keys, head, events, read model), checked against
//! DynamoDB's limits before it is sent; a canceled transaction's reasons become store errors.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem};
use taskledger_domain::ids::Principal;
use taskledger_domain::ports::{Commit, StoreError, SNAPSHOT_SCHEMA};
use taskledger_domain::projection::ReadWrite;

use super::batch::{self, Record};
use super::schema;
use super::store::{
    json, n, s, sdk_err, DynamoStore, Item, ITEM_MARGIN_BYTES, MAX_ITEM_BYTES,
    MAX_TRANSACTION_BYTES, MAX_TRANSACTION_ITEMS,
};

/// Rough DynamoDB size of an item: names plus values.
fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(k, v)| {
            k.len()
                + match v {
                    AttributeValue::S(s) | AttributeValue::N(s) => s.len(),
                    AttributeValue::B(b) => b.as_ref().len(),
                    _ => 16,
                }
        })
        .sum()
}

/// What each transaction item is, to read cancellation reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    MessageKey,
    Idempotency,
    Head,
    Event,
    ReadModel,
}

impl DynamoStore {
    fn put(
        &self,
        item: Item,
        condition: Option<&str>,
        values: &[(&str, AttributeValue)],
    ) -> Result<TransactWriteItem, StoreError> {
        let mut b = Put::builder().table_name(&self.table).set_item(Some(item));
        if let Some(c) = condition {
            b = b.condition_expression(c);
        }
        for (k, v) in values {
            b = b.expression_attribute_values(*k, v.clone());
        }
        let put = b
            .build()
            .map_err(|e| StoreError::Other(format!("cannot build put: {e}")))?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// The list-index attributes of a task for `who` (its owner, or a principal it is shared
    /// with): the keys of the three list indexes and the artifact chunk counts.
    fn index_item(&self, c: &Commit, who: &Principal, sk: String) -> Result<Item, StoreError> {
        let head = c
            .head()
            .ok_or_else(|| StoreError::Other("a commit must leave a created task".into()))?;
        let id = c.task_id.as_str();
        let status_nanos = head
            .status
            .timestamp
            .unwrap_or(head.created_at)
            .unix_nanos();
        let shard = schema::index_shard_of(id, self.index_shards);
        let index_key = |base: String| s(schema::index_key(&base, shard, self.index_shards));
        let mut item = HashMap::from([
            ("pk".into(), s(schema::task_pk(id))),
            ("sk".into(), s(sk)),
            ("g1pk".into(), index_key(schema::owner_key(who))),
            ("g1sk".into(), s(schema::list_sort_key(status_nanos, id))),
            (
                "g2pk".into(),
                index_key(schema::context_key(who, &head.context_id)),
            ),
            (
                "g3pk".into(),
                index_key(schema::state_key(who, head.status.state)),
            ),
        ]);
        if let Some(counts) = schema::chunk_counts(head.artifacts.iter().map(|a| a.chunks)) {
            item.insert(schema::CHUNK_COUNTS_ATTR.into(), s(counts));
        }
        Ok(item)
    }

    pub(super) fn head_item(&self, c: &Commit) -> Result<Item, StoreError> {
        let head = c
            .head()
            .ok_or_else(|| StoreError::Other("a commit must leave a created task".into()))?;
        let id = c.task_id.as_str();
        let mut item = self.index_item(c, &head.owner, schema::HEAD_SK.into())?;
        item.extend([
            ("v".into(), n(c.snapshot.version)),
            ("schema".into(), n(SNAPSHOT_SCHEMA)),
            (
                super::snapshot::SNAPSHOT_ATTR.into(),
                super::snapshot::encode(&json(&c.snapshot)?)?,
            ),
            ("state".into(), s(head.status.state.as_str())),
            ("shard".into(), s(schema::shard_key(schema::shard_of(id)))),
        ]);
        if let Some(k) = schema::at_work_key(schema::shard_of(id), head.status.state) {
            item.insert("g4pk".into(), s(k));
        }
        Ok(item)
    }

    /// The task's list-index entry for a principal it is shared with: the head's index keys
    /// under that principal; a list reads the head through `pk` (ADR 021).
    pub(super) fn member_item(&self, c: &Commit, member: &Principal) -> Result<Item, StoreError> {
        self.index_item(c, member, schema::member_sk(member))
    }

    fn transaction(&self, c: &Commit) -> Result<(Vec<TransactWriteItem>, Vec<Slot>), StoreError> {
        let id = c.task_id.as_str();
        let pk = schema::task_pk(id);
        let mut items: Vec<(Item, Slot)> = Vec::new();
        let mut deletes: Vec<Item> = Vec::new();
        if let Some(k) = &c.message_key {
            items.push((
                HashMap::from([
                    ("pk".into(), s(&pk)),
                    (
                        "sk".into(),
                        s(schema::message_key_sk(&k.message_id, &k.fingerprint)),
                    ),
                ]),
                Slot::MessageKey,
            ));
        }
        if let Some(i) = &c.idempotency {
            items.push((
                HashMap::from([
                    ("pk".into(), s(schema::idempotency_pk(&i.owner, &i.key))),
                    ("sk".into(), s(schema::IDEMPOTENCY_SK)),
                    ("task".into(), s(i.task_id.as_str())),
                    ("fp".into(), s(&i.fingerprint)),
                ]),
                Slot::Idempotency,
            ));
        }
        items.push((self.head_item(c)?, Slot::Head));
        // Each principal the task is shared with has its own entry in the list indexes, kept
        // in step with the head's keys; an entry for one it no longer is goes.
        for m in &c.sharing.members {
            items.push((self.member_item(c, m)?, Slot::ReadModel));
        }
        for m in &c.sharing.removed {
            deletes.push(HashMap::from([
                ("pk".into(), s(&pk)),
                ("sk".into(), s(schema::member_sk(m))),
            ]));
        }
        // The commit's events, in as few items as their size allows (ADR 036): each keyed by
        // its last sequence number, with the commit's time and, where the relay acts on it
        // (a work request, a pushed update), the commit's trace (ADR 033).
        let records = c
            .events
            .iter()
            .map(|e| {
                let pushed = c.pushes.iter().find(|p| p.seq == e.seq);
                Record::of(e, pushed.map(|p| p.body.as_str()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let recorded_at = c.events.first().map(|e| e.recorded_at.unix_nanos());
        for group in batch::groups(records) {
            let last = group.last().map_or(0, |r| r.seq);
            let mut item = batch::attributes(&group)?;
            item.insert("pk".into(), s(&pk));
            item.insert("sk".into(), s(schema::event_sk(last)));
            if let Some(at) = recorded_at {
                item.insert("at".into(), n(at));
            }
            let acted_on =
                item.contains_key(batch::WORK_ATTR) || item.contains_key(batch::PUSHES_ATTR);
            if let Some(t) = c.trace.as_ref().filter(|_| acted_on) {
                item.insert(schema::TRACE_ATTR.into(), s(t));
            }
            items.push((item, Slot::Event));
        }
        for w in &c.writes {
            match w {
                ReadWrite::History(h) => items.push((
                    HashMap::from([
                        ("pk".into(), s(&pk)),
                        ("sk".into(), s(schema::history_sk(h.pos))),
                        ("msg".into(), s(json(&h.message)?)),
                    ]),
                    Slot::ReadModel,
                )),
                ReadWrite::ArtifactReset { ord, chunks } => {
                    for chunk in 0..*chunks {
                        deletes.push(HashMap::from([
                            ("pk".into(), s(&pk)),
                            ("sk".into(), s(schema::chunk_sk(*ord, chunk))),
                        ]));
                    }
                }
                ReadWrite::ArtifactChunk(ch) => {
                    deletes.retain(|d| d.get("sk") != Some(&s(schema::chunk_sk(ch.ord, ch.chunk))));
                    items.push((
                        HashMap::from([
                            ("pk".into(), s(&pk)),
                            ("sk".into(), s(schema::chunk_sk(ch.ord, ch.chunk))),
                            ("art".into(), s(json(&ch.artifact)?)),
                        ]),
                        Slot::ReadModel,
                    ))
                }
            }
        }
        // A finished task's items expire with it (TTL): every item this commit writes of the
        // task carries its expiry; the relay stamps the older ones (`stamp_expiry`).
        if let Some(at) = c.head().and_then(|h| self.retention.expires_at(h)) {
            for (item, slot) in items.iter_mut() {
                if !matches!(slot, Slot::Idempotency) {
                    item.insert(schema::EXPIRES_ATTR.into(), n(at.unix_secs()));
                }
            }
        }
        // Limits, checked before anything is written.
        let count = items.len() + deletes.len();
        if count > MAX_TRANSACTION_ITEMS {
            return Err(StoreError::TooLarge(format!(
                "this change would write {count} DynamoDB items in one transaction; the limit is {MAX_TRANSACTION_ITEMS}"
            )));
        }
        let mut total = 0;
        for (item, slot) in &items {
            let size = item_size(item);
            total += size;
            if size + ITEM_MARGIN_BYTES > MAX_ITEM_BYTES {
                let what = match slot {
                    Slot::Head => "the task's head (status message and metadata)",
                    Slot::Event => "the change's events",
                    _ => "a message or artifact",
                };
                return Err(StoreError::TooLarge(format!(
                    "{what} would take {} KiB, over DynamoDB's {} KiB item limit; send large files by URL",
                    size / 1024,
                    MAX_ITEM_BYTES / 1024
                )));
            }
        }
        if total > MAX_TRANSACTION_BYTES {
            return Err(StoreError::TooLarge(format!(
                "this change would write {} KiB in one transaction; the limit is {} KiB",
                total / 1024,
                MAX_TRANSACTION_BYTES / 1024
            )));
        }
        let mut tx = Vec::with_capacity(count);
        let mut slots = Vec::with_capacity(count);
        for (item, slot) in items {
            let w = match slot {
                Slot::MessageKey | Slot::Idempotency | Slot::Event => {
                    self.put(item, Some("attribute_not_exists(pk)"), &[])?
                }
                Slot::Head if c.expected_version == 0 => {
                    self.put(item, Some("attribute_not_exists(pk)"), &[])?
                }
                Slot::Head => self.put(
                    item,
                    Some("v = :expected"),
                    &[(":expected", n(c.expected_version))],
                )?,
                Slot::ReadModel => self.put(item, None, &[])?,
            };
            tx.push(w);
            slots.push(slot);
        }
        for key in deletes {
            let d = Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key))
                .build()
                .map_err(|e| StoreError::Other(format!("cannot build delete: {e}")))?;
            tx.push(TransactWriteItem::builder().delete(d).build());
            slots.push(Slot::ReadModel);
        }
        Ok((tx, slots))
    }

    /// Commits as one `TransactWriteItems`; a canceled transaction says why, as a store error.
    pub(super) async fn transact(&self, commit: &Commit) -> Result<(), StoreError> {
        let (items, slots) = self.transaction(commit)?;
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            // Lets the SDK's own retries of this exact request succeed instead of conflicting.
            .client_request_token(uuid::Uuid::new_v4().to_string())
            .send()
            .await;
        let err = match result {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        if let Some(aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(tc)) =
            err.as_service_error()
        {
            let reasons = tc.cancellation_reasons();
            let failed = |slot: Slot| {
                reasons.iter().zip(&slots).any(|(r, s)| {
                    *s == slot && r.code() == Some("ConditionalCheckFailed")
                })
            };
            if failed(Slot::MessageKey) {
                if let Some(k) = &commit.message_key {
                    return Err(StoreError::DuplicateMessage(k.message_id.clone()));
                }
            }
            if failed(Slot::Idempotency) {
                if let Some(i) = &commit.idempotency {
                    if let Some(rec) = self.idempotency_record(&i.owner, &i.key).await? {
                        return Err(StoreError::IdempotencyKeyUsed {
                            task_id: rec.task_id,
                            fingerprint: rec.fingerprint,
                        });
                    }
                }
            }
            let conflict = reasons.iter().any(|r| {
                matches!(r.code(), Some("ConditionalCheckFailed") | Some("TransactionConflict"))
            });
            if conflict {
                return Err(StoreError::Conflict(commit.task_id.clone()));
            }
            let throttled = reasons.iter().any(|r| {
                matches!(
                    r.code(),
                    Some("ThrottlingError") | Some("ProvisionedThroughputExceeded")
                )
            });
            if throttled {
                return Err(StoreError::Unavailable(
                    "DynamoDB throttled the transaction".into(),
                ));
            }
        }
        if err.code() == Some("TransactionConflictException") {
            return Err(StoreError::Conflict(commit.task_id.clone()));
        }
        Err(sdk_err("TransactWriteItems", err))
    }
}

#[cfg(test)]
mod tests {
    use taskledger_domain::ports::EventStore;
    use taskledger_domain::time::Timestamp;

    use super::super::store::tests::fresh_store;
    use super::*;

    #[tokio::test]
    async fn an_oversized_message_is_refused_before_any_write() {
        let Some(store) = fresh_store().await else {
            return;
        };
        let id = crate::contract::create_task(&store, "t-big", "c").await;
        let loaded = store.load(&id).await.unwrap().unwrap();
        let before = taskledger_domain::ports::restore(&loaded).unwrap().unwrap();
        let big = crate::contract::user_message("m-big", &"x".repeat(MAX_ITEM_BYTES));
        let events = before
            .decide(taskledger_domain::task::TaskCommand::AppendUserMessage(
                taskledger_domain::task::AppendUserMessage {
                    message: big,
                    at: Timestamp::now(),
                    caller: None,
                },
            ))
            .unwrap();
        let commit =
            taskledger_domain::ports::commit_for(id.clone(), &before, &events, Timestamp::now());
        let err = store.append(&commit).await.expect_err("too large");
        assert!(matches!(err, StoreError::TooLarge(_)), "{err}");
        assert_eq!(
            store.events(&id, 0).await.unwrap().len(),
            3,
            "nothing written"
        );
    }
}
