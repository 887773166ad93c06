//! Reads of the DynamoDB store: load, events, and GetTask (one consistent GetItem, + one Query
//! for the history and chunks the view asks); append and ListTasks go to `append` and `list`.

use async_trait::async_trait;
use taskledger_domain::events::{EventUpdate, RecordedStatus, StoredEvent};
use taskledger_domain::ids::{HistoryLength, IdempotencyKey, Principal, TaskId};
use taskledger_domain::ports::{
    Commit, EventStore, IdempotencyRecord, ListPage, ListQuery, Loaded, StoreError, TaskReadModel,
    TaskView, ViewOptions,
};
use taskledger_domain::projection::ArtifactChunk;
use taskledger_domain::task::TaskAggregate;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, TaskState};

use super::schema;
use super::store::{get_n, get_s, parse, s, sdk_err, snapshot_of, DynamoStore, Item};

impl DynamoStore {
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
        update: decode_update(item)?,
    })
}

/// The update attributes of an event item (none: the event shows no update).
fn decode_update(item: &Item) -> Result<Option<EventUpdate>, StoreError> {
    if !item.contains_key(schema::GENERATION_ATTR) {
        return Ok(None);
    }
    let status = match item.get(schema::STATUS_STATE_ATTR) {
        None => None,
        Some(_) => {
            let state = get_s(item, schema::STATUS_STATE_ATTR)?;
            Some(RecordedStatus {
                state: TaskState::from_name(state)
                    .ok_or_else(|| StoreError::Corrupt(format!("unknown task state {state:?}")))?,
                body: get_s(item, schema::STATUS_UPDATE_ATTR)?.to_string(),
            })
        }
    };
    Ok(Some(EventUpdate {
        generation: get_n(item, schema::GENERATION_ATTR)? as u64,
        status,
    }))
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
        self.transact(commit).await
    }

    async fn idempotency(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.idempotency_record(owner, key).await
    }
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
        let page = self.list_page(owner, q).await?;
        let mut views = Vec::with_capacity(page.tasks.len());
        for t in page.tasks {
            views.push(self.view_of(t, q.view).await?);
        }
        Ok(ListPage {
            tasks: views,
            total_size: page.total_size,
            next: page.next,
        })
    }
}
