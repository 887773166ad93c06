//! The SQLite store as the event store: load (snapshot + tail), events after a sequence,
//! append (handed to the writer thread) and idempotency records.

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};
use taskledger_domain::ids::{IdempotencyKey, Principal, TaskId};
use taskledger_domain::ports::{Commit, EventStore, IdempotencyRecord, Loaded, StoreError};
use taskledger_domain::task::stored::{EventUpdate, RecordedStatus, StoredEvent};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::TaskState;

use super::codec::{db_err, head_version, parse};
use super::SqliteStore;

type EventRow = (
    i64,
    String,
    String,
    String,
    i64,
    Option<i64>,
    Option<String>,
    Option<String>,
);

fn row_event(r: &rusqlite::Row<'_>) -> rusqlite::Result<EventRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
    ))
}

fn to_event(row: EventRow) -> Result<StoredEvent, StoreError> {
    let (seq, event_type, event_version, payload, recorded_at, generation, state, body) = row;
    Ok(StoredEvent {
        seq: seq as u64,
        event_type,
        event_version,
        payload: parse(&payload)?,
        recorded_at: Timestamp::from_unix_nanos(recorded_at),
        update: decode_update(generation, state, body)?,
    })
}

/// The update columns back into an `EventUpdate` (all `NULL`: the event shows none).
fn decode_update(
    generation: Option<i64>,
    state: Option<String>,
    body: Option<String>,
) -> Result<Option<EventUpdate>, StoreError> {
    let Some(generation) = generation else {
        return Ok(None);
    };
    let status = match (state, body) {
        (Some(state), Some(body)) => Some(RecordedStatus {
            state: TaskState::from_name(&state)
                .ok_or_else(|| StoreError::Corrupt(format!("unknown task state {state:?}")))?,
            body,
        }),
        _ => None,
    };
    Ok(Some(EventUpdate {
        generation: generation as u64,
        status,
    }))
}

fn load_events(
    conn: &Connection,
    task_id: &str,
    after: u64,
) -> Result<Vec<StoredEvent>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, event_type, event_version, payload, recorded_at, generation, \
             status_state, status_update FROM events \
             WHERE task_id = ?1 AND seq > ?2 ORDER BY seq",
        )
        .map_err(db_err)?;
    let rows = stmt
        .query_map(params![task_id, after as i64], row_event)
        .map_err(db_err)?;
    rows.map(|r| to_event(r.map_err(db_err)?)).collect()
}

#[async_trait]
impl EventStore for SqliteStore {
    async fn load(&self, task_id: &TaskId) -> Result<Option<Loaded>, StoreError> {
        let id = task_id.to_string();
        self.read_now(move |conn| {
            let row: Option<(i64, String)> = conn
                .prepare_cached("SELECT snapshot_schema, snapshot FROM heads WHERE task_id = ?1")
                .and_then(|mut s| {
                    s.query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                })
                .map_err(db_err)?;
            let Some((schema, snapshot)) = row else {
                return Ok(None);
            };
            let snapshot: serde_json::Value = parse(&snapshot)?;
            let version = snapshot
                .get("version")
                .and_then(|v| v.as_u64())
                .unwrap_or(0);
            let tail = load_events(conn, &id, version)?;
            Ok(Some(Loaded {
                snapshot_schema: schema as u32,
                snapshot,
                tail,
            }))
        })
    }

    async fn events(&self, task_id: &TaskId, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let id = task_id.to_string();
        self.read_now(move |conn| load_events(conn, &id, after))
    }

    async fn append(&self, commit: &Commit) -> Result<(), StoreError> {
        self.commit(commit).await
    }

    fn keeps_states(&self) -> bool {
        true
    }

    async fn version(&self, task_id: &TaskId) -> Result<Option<u64>, StoreError> {
        let id = task_id.to_string();
        self.read_now(move |conn| head_version(conn, &id))
    }

    async fn idempotency(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let (owner, key) = (owner.clone(), key.clone());
        self.read_now(move |conn| {
            let row: Option<(String, String)> = conn
                .prepare_cached(
                    "SELECT task_id, fingerprint FROM idempotency WHERE tenant = ?1 AND owner = ?2 AND key = ?3",
                )
                .and_then(|mut s| {
                    s.query_row(
                        params![owner.tenant.as_str(), owner.subject.as_str(), key.as_str()],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()
                })
                .map_err(db_err)?;
            row.map(|(task_id, fingerprint)| {
                Ok(IdempotencyRecord {
                    owner,
                    key,
                    fingerprint,
                    task_id: TaskId::parse(task_id).map_err(StoreError::Corrupt)?,
                })
            })
            .transpose()
        })
    }
}
