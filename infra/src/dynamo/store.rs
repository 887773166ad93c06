//! The DynamoDB store: the event store and the read model in one table (ADR 007).
//!
//! Items of task `t` (partition `T#t`): `HEAD` (snapshot + list-index keys), `E#seq` (events),
//! `B#pos` (history), `C#ord#chunk` (artifact chunks), `K#messageId␟digest` (message keys).
//! Idempotency keys live in their own partitions (`I#tenant␟owner␟key`).
//! An append is one `TransactWriteItems`; GetTask is one consistent `GetItem` (+ one `Query`);
//! a ListTasks page is one `Query` on an index (+ one counting `Query` on the first page). No Scan.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, Select, TransactWriteItem};
use aws_sdk_dynamodb::Client;
use taskledger_domain::events::StoredEvent;
use taskledger_domain::ids::{HistoryLength, IdempotencyKey, Principal, TaskId};
use taskledger_domain::ports::{
    Commit, Cursor, EventStore, IdempotencyRecord, ListPage, ListQuery, Loaded, StoreError,
    TaskReadModel, TaskView, ViewOptions, SNAPSHOT_SCHEMA,
};
use taskledger_domain::projection::{ArtifactChunk, ReadWrite};
use taskledger_domain::task::TaskAggregate;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::Message;

use super::schema::{self, BY_CONTEXT, BY_OWNER, BY_STATE};

pub use super::schema::SHARDS;

/// DynamoDB's item size limit, and the margin we keep below it for attribute names.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;
const ITEM_MARGIN_BYTES: usize = 1024;
/// DynamoDB's limits for one `TransactWriteItems`.
pub const MAX_TRANSACTION_ITEMS: usize = 100;
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// Attribute of an event item holding the `StreamResponse` JSON the event pushes.
pub const PUSH_ATTR: &str = "push";
/// Pages a counting query may walk before giving up on an exact total.
const MAX_COUNT_PAGES: usize = 1000;

type Item = HashMap<String, AttributeValue>;

#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
}

#[derive(Debug, thiserror::Error)]
pub enum DynamoError {
    #[error("DynamoDB table {table} does not exist (create it with --create-tables, or deploy template.yaml)")]
    MissingTable { table: String },
    #[error("cannot reach DynamoDB table {table}: {message}")]
    Unreachable { table: String, message: String },
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn get_s<'a>(item: &'a Item, k: &str) -> Result<&'a str, StoreError> {
    match item.get(k) {
        Some(AttributeValue::S(v)) => Ok(v),
        _ => Err(StoreError::Corrupt(format!(
            "item lacks string attribute {k}"
        ))),
    }
}

fn get_n(item: &Item, k: &str) -> Result<i64, StoreError> {
    match item.get(k) {
        Some(AttributeValue::N(v)) => v
            .parse()
            .map_err(|_| StoreError::Corrupt(format!("attribute {k} is not a number"))),
        _ => Err(StoreError::Corrupt(format!(
            "item lacks number attribute {k}"
        ))),
    }
}

fn json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Other(format!("cannot serialise: {e}")))
}

fn parse<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Maps an SDK error: throttling and timeouts are "unavailable" (retry later), a missing table
/// is named, anything else is a store failure.
fn sdk_err<E, R>(op: &str, e: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let code = e.code().unwrap_or_default().to_string();
    let message = format!("{op}: {}", aws_sdk_dynamodb::error::DisplayErrorContext(&e));
    match code.as_str() {
        "ThrottlingException"
        | "ProvisionedThroughputExceededException"
        | "RequestLimitExceeded"
        | "InternalServerError"
        | "ServiceUnavailable" => StoreError::Unavailable(message),
        _ => match e {
            SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => {
                StoreError::Unavailable(message)
            }
            _ => StoreError::Other(message),
        },
    }
}

/// Rough DynamoDB size of an item: names plus values.
fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(k, v)| {
            k.len()
                + match v {
                    AttributeValue::S(s) | AttributeValue::N(s) => s.len(),
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
    pub fn new(client: Client, table_prefix: &str) -> Self {
        Self {
            client,
            table: schema::table_name(table_prefix, &schema::TASKS),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Checks that the table exists, so a misnamed table fails at start-up, by name.
    pub async fn check(&self) -> Result<(), DynamoError> {
        match self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                let svc = e.into_service_error();
                if svc.is_resource_not_found_exception() {
                    Err(DynamoError::MissingTable {
                        table: self.table.clone(),
                    })
                } else {
                    Err(DynamoError::Unreachable {
                        table: self.table.clone(),
                        message: aws_sdk_dynamodb::error::DisplayErrorContext(&svc).to_string(),
                    })
                }
            }
        }
    }

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

    fn head_item(&self, c: &Commit) -> Result<Item, StoreError> {
        let head = c
            .head()
            .ok_or_else(|| StoreError::Other("a commit must leave a created task".into()))?;
        let id = c.task_id.as_str();
        let status_nanos = head
            .status
            .timestamp
            .unwrap_or(head.created_at)
            .unix_nanos();
        Ok(HashMap::from([
            ("pk".into(), s(schema::task_pk(id))),
            ("sk".into(), s(schema::HEAD_SK)),
            ("v".into(), n(c.snapshot.version)),
            ("schema".into(), n(SNAPSHOT_SCHEMA)),
            ("snap".into(), s(json(&c.snapshot)?)),
            ("state".into(), s(head.status.state.as_str())),
            ("g1pk".into(), s(schema::owner_key(&head.owner))),
            ("g1sk".into(), s(schema::list_sort_key(status_nanos, id))),
            (
                "g2pk".into(),
                s(schema::context_key(&head.owner, &head.context_id)),
            ),
            (
                "g3pk".into(),
                s(schema::state_key(&head.owner, head.status.state)),
            ),
            ("shard".into(), s(schema::shard_key(schema::shard_of(id)))),
        ]))
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
        for e in &c.events {
            let mut item = HashMap::from([
                ("pk".into(), s(&pk)),
                ("sk".into(), s(schema::event_sk(e.seq))),
                ("type".into(), s(&e.event_type)),
                ("ver".into(), s(&e.event_version)),
                ("payload".into(), s(json(&e.payload)?)),
                ("at".into(), n(e.recorded_at.unix_nanos())),
            ]);
            // The update this event pushes to webhook subscribers: the stream relay turns it
            // into deliveries (one per subscription registered before the event).
            if let Some(p) = c.pushes.iter().find(|p| p.seq == e.seq) {
                item.insert(PUSH_ATTR.into(), s(&p.body));
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
                    Slot::Event => "an event",
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

    async fn idempotency_record(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(schema::idempotency_pk(owner, key)))
            .key("sk", s(schema::IDEMPOTENCY_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_err("GetItem", e))?;
        out.item
            .map(|item| {
                Ok(IdempotencyRecord {
                    owner: owner.clone(),
                    key: key.clone(),
                    fingerprint: get_s(&item, "fp")?.to_string(),
                    task_id: TaskId::parse(get_s(&item, "task")?).map_err(StoreError::Corrupt)?,
                })
            })
            .transpose()
    }

    async fn head(&self, task_id: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(schema::task_pk(task_id)))
            .key("sk", s(schema::HEAD_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_err("GetItem", e))?;
        Ok(out.item)
    }

    /// Every item of a task's partition in `[from, to]`, following pages.
    async fn range(&self, task_id: &str, from: &str, to: &str) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :a AND :b")
                .expression_attribute_values(":pk", s(schema::task_pk(task_id)))
                .expression_attribute_values(":a", s(from))
                .expression_attribute_values(":b", s(to))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| sdk_err("Query", e))?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(items),
            }
        }
    }

    /// History (the last N, as asked) and artifact chunks of a task, in one query when both.
    async fn view_of(
        &self,
        snapshot: TaskAggregate,
        view: ViewOptions,
    ) -> Result<TaskView, StoreError> {
        let head = snapshot
            .head
            .ok_or_else(|| StoreError::Corrupt("head without a task".into()))?;
        let id = head.id.to_string();
        let want_history = view.history != HistoryLength::Last(0);
        let want_artifacts = view.include_artifacts && !head.artifacts.is_empty();
        let first_pos = match view.history {
            HistoryLength::Last(n) => head.history_len.saturating_sub(n as u64),
            HistoryLength::All => 0,
        };
        let (from, to) = match (want_history, want_artifacts) {
            (false, false) => {
                return Ok(TaskView {
                    head,
                    history: None,
                    chunks: view.include_artifacts.then(Vec::new),
                })
            }
            (true, true) => (
                schema::history_sk(first_pos),
                schema::CHUNKS_END.to_string(),
            ),
            (true, false) => (
                schema::history_sk(first_pos),
                schema::HISTORY_END.to_string(),
            ),
            (false, true) => (
                schema::CHUNKS_START.to_string(),
                schema::CHUNKS_END.to_string(),
            ),
        };
        let mut history = Vec::new();
        let mut chunks = Vec::new();
        for item in self.range(&id, &from, &to).await? {
            let sk = get_s(&item, "sk")?;
            if schema::is_history_sk(sk) {
                history.push(parse::<Message>(get_s(&item, "msg")?)?);
            } else if schema::is_chunk_sk(sk) {
                let (ord, chunk) = schema::parse_chunk_sk(sk)
                    .ok_or_else(|| StoreError::Corrupt(format!("bad chunk key {sk}")))?;
                chunks.push(ArtifactChunk {
                    ord,
                    chunk,
                    artifact: parse(get_s(&item, "art")?)?,
                });
            }
        }
        Ok(TaskView {
            head,
            history: want_history.then_some(history),
            chunks: view.include_artifacts.then_some(chunks),
        })
    }

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
        let commit = Commit {
            task_id: task_id.clone(),
            expected_version: 0,
            events: vec![],
            snapshot: state,
            writes,
            message_key: None,
            idempotency: None,
            pushes: vec![],
        };
        let mut items = vec![self.head_item(&commit)?];
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

fn decode_event(item: &Item) -> Result<StoredEvent, StoreError> {
    let sk = get_s(item, "sk")?;
    Ok(StoredEvent {
        seq: schema::parse_event_sk(sk)
            .ok_or_else(|| StoreError::Corrupt(format!("bad event key {sk}")))?,
        event_type: get_s(item, "type")?.to_string(),
        event_version: get_s(item, "ver")?.to_string(),
        payload: parse(get_s(item, "payload")?)?,
        recorded_at: Timestamp::from_unix_nanos(get_n(item, "at")?),
    })
}

#[async_trait]
impl EventStore for DynamoStore {
    /// The head is written in the same transaction as the events, so its tail is always empty.
    async fn load(&self, task_id: &TaskId) -> Result<Option<Loaded>, StoreError> {
        let Some(item) = self.head(task_id.as_str()).await? else {
            return Ok(None);
        };
        Ok(Some(Loaded {
            snapshot_schema: get_n(&item, "schema")? as u32,
            snapshot: parse(get_s(&item, "snap")?)?,
            tail: Vec::new(),
        }))
    }

    async fn events(&self, task_id: &TaskId, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let items = self
            .range(
                task_id.as_str(),
                &schema::event_sk(after + 1),
                schema::EVENTS_END,
            )
            .await?;
        items.iter().map(decode_event).collect()
    }

    async fn append(&self, commit: Commit) -> Result<(), StoreError> {
        let (items, slots) = self.transaction(&commit)?;
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

    async fn idempotency(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.idempotency_record(owner, key).await
    }
}

fn snapshot_of(item: &Item) -> Result<TaskAggregate, StoreError> {
    if get_n(item, "schema")? as u32 != SNAPSHOT_SCHEMA {
        return Err(StoreError::Corrupt(
            "snapshot of another schema: run `taskledger rebuild`".into(),
        ));
    }
    parse(get_s(item, "snap")?)
}

#[async_trait]
impl TaskReadModel for DynamoStore {
    async fn get(
        &self,
        owner: &Principal,
        task_id: &TaskId,
        view: ViewOptions,
    ) -> Result<Option<TaskView>, StoreError> {
        let Some(item) = self.head(task_id.as_str()).await? else {
            return Ok(None);
        };
        if get_s(&item, "g1pk")? != schema::owner_key(owner) {
            return Ok(None);
        }
        Ok(Some(self.view_of(snapshot_of(&item)?, view).await?))
    }

    async fn list(&self, owner: &Principal, q: &ListQuery) -> Result<ListPage, StoreError> {
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
        let mut views = Vec::with_capacity(tasks.len());
        for t in tasks {
            views.push(self.view_of(t, q.view).await?);
        }
        Ok(ListPage {
            tasks: views,
            total_size: total,
            next,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A store on a fresh table of its own, when an endpoint is configured (`AWS_ENDPOINT_URL`,
    /// or real AWS with `TASKLEDGER_DYNAMODB_TESTS=1`). With `TASKLEDGER_REQUIRE_DYNAMODB=1`
    /// a missing endpoint fails instead of skipping.
    pub async fn fresh_store() -> Option<DynamoStore> {
        let configured = std::env::var("AWS_ENDPOINT_URL").is_ok()
            || std::env::var("AWS_ENDPOINT_URL_DYNAMODB").is_ok()
            || std::env::var("TASKLEDGER_DYNAMODB_TESTS").is_ok();
        if !configured {
            assert!(
                std::env::var("TASKLEDGER_REQUIRE_DYNAMODB").is_err(),
                "DynamoDB tests required but no endpoint configured"
            );
            return None;
        }
        let client = super::super::client_from_env().await;
        let prefix = format!("tl-test-{}-", uuid::Uuid::new_v4().simple());
        schema::create_tables(&client, &prefix)
            .await
            .expect("create test table");
        Some(DynamoStore::new(client, &prefix))
    }

    crate::contract_tests!(fresh_store());

    #[tokio::test]
    async fn a_missing_table_is_named_at_start_up() {
        let Some(store) = fresh_store().await else {
            return;
        };
        store.check().await.expect("the created table exists");
        let missing = DynamoStore::new(store.client().clone(), "tl-no-such-prefix-");
        let err = missing.check().await.expect_err("missing table");
        assert!(err.to_string().contains("tl-no-such-prefix-tasks"), "{err}");
    }

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
                },
            ))
            .unwrap();
        let commit =
            taskledger_domain::ports::commit_for(id.clone(), &before, &events, Timestamp::now());
        let err = store.append(commit).await.expect_err("too large");
        assert!(matches!(err, StoreError::TooLarge(_)), "{err}");
        assert_eq!(
            store.events(&id, 0).await.unwrap().len(),
            3,
            "nothing written"
        );
    }

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
                    ViewOptions {
                        history: HistoryLength::All,
                        include_artifacts: true,
                    },
                )
                .await
                .unwrap()
                .unwrap();
            taskledger_domain::projection::assemble(&v.head, v.history, v.chunks)
        };
        let before = view(store.clone(), id.clone()).await;
        // damage the read model: drop the history item
        store
            .client
            .delete_item()
            .table_name(&store.table)
            .key("pk", s(schema::task_pk(id.as_str())))
            .key("sk", s(schema::history_sk(0)))
            .send()
            .await
            .unwrap();
        assert_ne!(view(store.clone(), id.clone()).await, before);
        assert_eq!(store.rebuild(&id).await.unwrap(), 3);
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
