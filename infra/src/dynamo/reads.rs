//! Reads of the DynamoDB store: load, events, and GetTask (one consistent GetItem, + one Query
//! for the history and chunks the view asks); append and ListTasks go to `append` and `list`.

use async_trait::async_trait;
use taskledger_domain::ids::{ContextId, IdempotencyKey, Principal, TaskId};
use taskledger_domain::ports::{
    Commit, EventStore, HistoryRead, IdempotencyRecord, ListPage, ListQuery, ListScope, Loaded,
    StoreError, TaskReadModel, TaskView, ViewOptions,
};
use taskledger_domain::projection::ArtifactChunk;
use taskledger_domain::task::stored::StoredEvent;
use taskledger_domain::task::TaskHead;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, TaskState};

use super::schema;
use super::store::{get_n, get_s, parse, s, sdk_err, snapshot_of, DynamoStore, Item};

impl DynamoStore {
    pub(super) async fn head(&self, task_id: &str) -> Result<Option<Item>, StoreError> {
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
    async fn view_of(&self, head: TaskHead, view: ViewOptions) -> Result<TaskView, StoreError> {
        let id = head.id.to_string();
        let history_read = view.history_read(&head);
        let want_artifacts = view.include_artifacts && !head.artifacts.is_empty();
        let (from, to, until, tail) = match (history_read, want_artifacts) {
            (HistoryRead::Ready(history), false) => {
                return Ok(TaskView {
                    head,
                    history,
                    chunks: view.include_artifacts.then(Vec::new),
                })
            }
            (HistoryRead::Ready(history), true) => {
                let chunks = self
                    .chunks_and_history(&id, schema::CHUNKS_START, schema::CHUNKS_END, 0)
                    .await?
                    .1;
                return Ok(TaskView {
                    head,
                    history,
                    chunks: Some(chunks),
                });
            }
            (HistoryRead::Rows { from, until, tail }, true) => (
                schema::history_sk(from),
                schema::CHUNKS_END.to_string(),
                until,
                tail,
            ),
            (HistoryRead::Rows { from, until, tail }, false) => (
                schema::history_sk(from),
                schema::HISTORY_END.to_string(),
                until,
                tail,
            ),
        };
        let (mut history, chunks) = self.chunks_and_history(&id, &from, &to, until).await?;
        history.extend(tail);
        Ok(TaskView {
            head,
            history: Some(history),
            chunks: view.include_artifacts.then_some(chunks),
        })
    }

    /// The history messages before position `until` and the artifact chunks between two sort
    /// keys (one Query, paged). Rows from `until` on (written before ADR 029) are the head's
    /// tail's too: the tail answers for them.
    async fn chunks_and_history(
        &self,
        id: &str,
        from: &str,
        to: &str,
        until: u64,
    ) -> Result<(Vec<Message>, Vec<ArtifactChunk>), StoreError> {
        let mut history = Vec::new();
        let mut chunks = Vec::new();
        for item in self.range(id, from, to).await? {
            let sk = get_s(&item, "sk")?;
            if schema::is_history_sk(sk) {
                let pos = schema::parse_history_sk(sk)
                    .ok_or_else(|| StoreError::Corrupt(format!("bad history key {sk}")))?;
                if pos < until {
                    history.push(parse::<Message>(get_s(&item, "msg")?)?);
                }
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
        Ok((history, chunks))
    }
}

/// The events of an event item (a batch, or one written before) after `after`.
fn decode_events(item: &Item, after: u64, out: &mut Vec<StoredEvent>) -> Result<(), StoreError> {
    let recorded_at = Timestamp::from_unix_nanos(get_n(item, "at")?);
    for r in super::batch::records_of_item(item)? {
        if r.seq > after {
            out.push(r.stored(recorded_at)?);
        }
    }
    Ok(())
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
            snapshot: parse(&super::snapshot::text(&item)?)?,
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
        // An item is keyed by its last event: the first one read may hold earlier ones too.
        let mut events = Vec::with_capacity(items.len());
        for item in &items {
            decode_events(item, after, &mut events)?;
        }
        Ok(events)
    }

    async fn append(&self, commit: &Commit) -> Result<(), StoreError> {
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
        match snapshot_of(&item)?.head {
            Some(head) if head.visible_to(owner) => Ok(Some(self.view_of(head, view).await?)),
            _ => Ok(None),
        }
    }

    async fn complete(&self, head: TaskHead, view: ViewOptions) -> Result<TaskView, StoreError> {
        self.view_of(head, view).await
    }

    async fn count_by_state(
        &self,
        who: &Principal,
        scope: ListScope,
        context_id: Option<&ContextId>,
        finished_before: Option<Timestamp>,
    ) -> Result<Vec<(TaskState, u64)>, StoreError> {
        self.state_counts(who, scope, context_id, finished_before)
            .await
    }

    async fn list(&self, owner: &Principal, q: &ListQuery) -> Result<ListPage, StoreError> {
        let page = self.list_page(owner, q).await?;
        let mut views = Vec::with_capacity(page.tasks.len());
        for (snapshot, chunks) in page.tasks {
            let head = snapshot
                .head
                .ok_or_else(|| StoreError::Corrupt("head without a task".into()))?;
            let history = match q.view.history_read(&head) {
                HistoryRead::Ready(h) => h,
                // Only a reader asking for exact histories reads rows per task.
                HistoryRead::Rows { from, until, tail } => {
                    let (mut rows, _) = self
                        .chunks_and_history(
                            head.id.as_str(),
                            &schema::history_sk(from),
                            schema::HISTORY_END,
                            until,
                        )
                        .await?;
                    rows.extend(tail);
                    Some(rows)
                }
            };
            views.push(TaskView {
                head,
                history,
                chunks: q.view.include_artifacts.then_some(chunks),
            });
        }
        Ok(ListPage {
            tasks: views,
            total_size: page.total_size,
            next: page.next,
        })
    }
}
