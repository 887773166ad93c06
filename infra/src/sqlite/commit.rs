//! What one commit writes, as rows: prepared on the committing task's thread (every JSON column
//! serialised there), then applied by the writer thread inside its transaction — first the
//! checks (message and idempotency keys, the version), then the writes (events, the feed of
//! work after the commit, the head and the read model). A commit refused by a check has written
//! nothing, so commits share a transaction without a savepoint each.

use rusqlite::{params, Connection, OptionalExtension};
use taskledger_domain::agent::turns::WORK_EVENT;
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{
    Commit, CommittedEvent, IdempotencyRecord, MessageKey, StoreError, SNAPSHOT_SCHEMA,
};
use taskledger_domain::projection::lifecycle::is_lifecycle;
use taskledger_domain::projection::ReadWrite;

use super::codec::{db_err, head_version, is_constraint, json};
use super::tail::feed_event;

/// A commit as the rows it writes.
pub(super) struct CommitRows {
    task_id: TaskId,
    expected_version: u64,
    /// A user message's key: a retry appends nothing.
    message_key: Option<MessageKey>,
    idempotency: Option<IdempotencyRecord>,
    events: Vec<EventRow>,
    /// Configs a `PushConfigDeleted` removed: their pending deliveries go with them.
    deleted_configs: Vec<String>,
    head: HeadRow,
    /// Whom the task is shared with, when that changed.
    members: Option<Vec<(String, String)>>,
    writes: Vec<RowWrite>,
    /// The commit's trace, kept on its feed entries.
    trace: Option<String>,
}

struct EventRow {
    seq: i64,
    event_type: String,
    event_version: String,
    payload: String,
    recorded_at: i64,
    generation: Option<i64>,
    status_state: Option<&'static str>,
    status_body: Option<String>,
    /// The feed entry the event makes (a work request, or a pushed update's body).
    feed: Option<Option<String>>,
}

struct HeadRow {
    tenant: String,
    owner: String,
    context_id: String,
    state: &'static str,
    status_nanos: i64,
    version: i64,
    snapshot: String,
}

enum RowWrite {
    History {
        pos: i64,
        message: String,
    },
    ArtifactReset {
        ord: i64,
    },
    ArtifactChunk {
        ord: i64,
        chunk: i64,
        artifact: String,
    },
}

impl CommitRows {
    /// The rows of `c`, every JSON column serialised.
    /// The rows of `c`; with `lifecycle`, the feed also takes the events a lifecycle bus is
    /// told of.
    pub(super) fn of(c: &Commit, lifecycle: bool) -> Result<Self, StoreError> {
        let head = c
            .head()
            .ok_or_else(|| StoreError::Other("a commit must leave a created task".into()))?;
        let events = c
            .events
            .iter()
            .map(|e| {
                let status = e.update.as_ref().and_then(|u| u.status.as_ref());
                let pushed = c.pushes.iter().find(|p| p.seq == e.seq).map(|p| &p.body);
                let told = lifecycle && is_lifecycle(&e.event_type, e.update.is_some());
                let feed = (e.event_type == WORK_EVENT || pushed.is_some() || told)
                    .then(|| pushed.cloned());
                Ok(EventRow {
                    seq: e.seq as i64,
                    event_type: e.event_type.clone(),
                    event_version: e.event_version.clone(),
                    payload: e.payload.as_str().to_string(),
                    recorded_at: e.recorded_at.unix_nanos(),
                    generation: e.update.as_ref().map(|u| u.generation as i64),
                    status_state: status.map(|s| s.state.as_str()),
                    status_body: status.map(|s| s.body.clone()),
                    feed,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        let deleted_configs = c
            .events
            .iter()
            .filter(|e| e.event_type == "PushConfigDeleted")
            .filter_map(|e| {
                // The subscription's key (the id alone in events from before keys).
                let payload = e.payload.to_value();
                payload
                    .pointer("/PushConfigDeleted/key")
                    .or_else(|| payload.pointer("/PushConfigDeleted/id"))?
                    .as_str()
                    .map(str::to_string)
            })
            .collect();
        let writes = c
            .writes
            .iter()
            .map(|w| {
                Ok(match w {
                    ReadWrite::History(h) => RowWrite::History {
                        pos: h.pos as i64,
                        message: json(&h.message)?,
                    },
                    ReadWrite::ArtifactReset { ord, .. } => {
                        RowWrite::ArtifactReset { ord: *ord as i64 }
                    }
                    ReadWrite::ArtifactChunk(ch) => RowWrite::ArtifactChunk {
                        ord: ch.ord as i64,
                        chunk: ch.chunk as i64,
                        artifact: json(&ch.artifact)?,
                    },
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(Self {
            trace: c.trace.clone(),
            task_id: c.task_id.clone(),
            expected_version: c.expected_version,
            message_key: c.message_key.clone(),
            idempotency: c.idempotency.clone(),
            events,
            deleted_configs,
            head: HeadRow {
                tenant: head.owner.tenant.to_string(),
                owner: head.owner.subject.to_string(),
                context_id: head.context_id.to_string(),
                state: head.status.state.as_str(),
                status_nanos: head
                    .status
                    .timestamp
                    .unwrap_or(head.created_at)
                    .unix_nanos(),
                version: c.snapshot.version as i64,
                snapshot: json(&c.snapshot)?,
            },
            members: c.sharing.changed.then(|| {
                c.sharing
                    .members
                    .iter()
                    .map(|m| (m.tenant.to_string(), m.subject.to_string()))
                    .collect()
            }),
            writes,
        })
    }
}

impl CommitRows {
    /// The feed entries the commit wrote, at `positions` (as `write` returned them).
    pub(super) fn feed_entries(&self, positions: &[u64]) -> Vec<(u64, CommittedEvent)> {
        self.events
            .iter()
            .filter_map(|e| e.feed.as_ref().map(|pushed| (e, pushed)))
            .zip(positions)
            .map(|((e, pushed), &pos)| {
                let event = feed_event(
                    self.task_id.clone(),
                    e.seq as u64,
                    e.event_type.clone(),
                    pushed.clone(),
                    self.trace.clone(),
                );
                (pos, event)
            })
            .collect()
    }
}

#[cfg(test)]
impl CommitRows {
    pub(super) fn events_len(&self) -> usize {
        self.events.len()
    }
}

/// A head written: inserted, or updated in place.
pub(super) const UPSERT_HEAD: &str = "INSERT INTO heads (task_id, tenant, owner, context_id, \
     state, status_nanos, version, snapshot_schema, snapshot) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) \
     ON CONFLICT (task_id) DO UPDATE SET tenant = excluded.tenant, owner = excluded.owner, \
     context_id = excluded.context_id, state = excluded.state, \
     status_nanos = excluded.status_nanos, version = excluded.version, \
     snapshot_schema = excluded.snapshot_schema, snapshot = excluded.snapshot";

/// Whether the commit may be written: its message and idempotency keys are new and the task
/// is still at the version the commit was decided on. Reads only.
pub(super) fn check(tx: &Connection, c: &CommitRows) -> Result<(), StoreError> {
    if let Some(k) = &c.message_key {
        let seen = tx
            .prepare_cached(
                "SELECT 1 FROM message_keys WHERE task_id = ?1 AND message_id = ?2 AND fingerprint = ?3",
            )
            .and_then(|mut s| {
                s.exists(params![k.task_id.as_str(), k.message_id.as_str(), k.fingerprint])
            })
            .map_err(db_err)?;
        if seen {
            return Err(StoreError::DuplicateMessage(k.message_id.clone()));
        }
    }
    if let Some(i) = &c.idempotency {
        let existing: Option<(String, String)> = tx
            .prepare_cached(
                "SELECT task_id, fingerprint FROM idempotency WHERE tenant = ?1 AND owner = ?2 AND key = ?3",
            )
            .and_then(|mut s| {
                s.query_row(
                    params![i.owner.tenant.as_str(), i.owner.subject.as_str(), i.key.as_str()],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
            })
            .map_err(db_err)?;
        if let Some((task_id, fingerprint)) = existing {
            let task_id = TaskId::parse(task_id).map_err(StoreError::Corrupt)?;
            return Err(StoreError::IdempotencyKeyUsed {
                task_id,
                fingerprint,
            });
        }
    }
    if head_version(tx, c.task_id.as_str())?.unwrap_or(0) != c.expected_version {
        return Err(StoreError::Conflict(c.task_id.clone()));
    }
    Ok(())
}

/// Writes a checked commit; the positions of the feed entries it wrote, in order. An error here
/// leaves the transaction with part of the commit: the writer rolls the whole transaction back.
pub(super) fn write(tx: &Connection, c: &CommitRows) -> Result<Vec<u64>, StoreError> {
    let task_id = c.task_id.as_str();
    let mut fed = Vec::new();
    if let Some(k) = &c.message_key {
        tx.prepare_cached(
            "INSERT INTO message_keys (task_id, message_id, fingerprint) VALUES (?1, ?2, ?3)",
        )
        .and_then(|mut s| {
            s.execute(params![
                k.task_id.as_str(),
                k.message_id.as_str(),
                k.fingerprint
            ])
        })
        .map_err(db_err)?;
    }
    if let Some(i) = &c.idempotency {
        tx.prepare_cached(
            "INSERT INTO idempotency (tenant, owner, key, fingerprint, task_id) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .and_then(|mut s| {
            s.execute(params![
                i.owner.tenant.as_str(),
                i.owner.subject.as_str(),
                i.key.as_str(),
                i.fingerprint,
                i.task_id.as_str()
            ])
        })
        .map_err(db_err)?;
    }
    {
        let mut ins = tx
            .prepare_cached(
                "INSERT INTO events (task_id, seq, event_type, event_version, payload, recorded_at, \
                 generation, status_state, status_update) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .map_err(db_err)?;
        for e in &c.events {
            ins.execute(params![
                task_id,
                e.seq,
                e.event_type,
                e.event_version,
                e.payload,
                e.recorded_at,
                e.generation,
                e.status_state,
                e.status_body,
            ])
            .map_err(|err| {
                if is_constraint(&err) {
                    StoreError::Conflict(c.task_id.clone())
                } else {
                    db_err(err)
                }
            })?;
            // The feed of work after the commit (agent turns, webhook deliveries), in the same
            // transaction as the event: the relay fans pushed updates out to subscriptions.
            if let Some(pushed) = &e.feed {
                let trace = c.trace.as_deref();
                tx.prepare_cached(
                    "INSERT INTO feed (task_id, seq, event_type, pushed, trace) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .and_then(|mut st| st.execute(params![task_id, e.seq, e.event_type, pushed, trace]))
                .map_err(db_err)?;
                fed.push(tx.last_insert_rowid() as u64);
            }
        }
    }
    for config_id in &c.deleted_configs {
        tx.prepare_cached(
            "DELETE FROM push_outbox WHERE task_id = ?1 AND config_id = ?2 AND dead = 0",
        )
        .and_then(|mut st| st.execute(params![task_id, config_id]))
        .map_err(db_err)?;
    }
    // An update in place: the row keeps its rowid, and an index whose columns did not change
    // is not touched.
    let h = &c.head;
    tx.prepare_cached(UPSERT_HEAD)
        .and_then(|mut s| {
            s.execute(params![
                task_id,
                h.tenant,
                h.owner,
                h.context_id,
                h.state,
                h.status_nanos,
                h.version,
                SNAPSHOT_SCHEMA,
                h.snapshot
            ])
        })
        .map_err(db_err)?;
    // Whom the task is shared with: one row per principal, rewritten when the set changes.
    if let Some(members) = &c.members {
        tx.prepare_cached("DELETE FROM members WHERE task_id = ?1")
            .and_then(|mut s| s.execute(params![task_id]))
            .map_err(db_err)?;
        for (tenant, subject) in members {
            tx.prepare_cached(
                "INSERT OR IGNORE INTO members (tenant, subject, task_id) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut s| s.execute(params![tenant, subject, task_id]))
            .map_err(db_err)?;
        }
    }
    for w in &c.writes {
        match w {
            RowWrite::History { pos, message } => tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO history (task_id, pos, message) VALUES (?1, ?2, ?3)",
                )
                .and_then(|mut s| s.execute(params![task_id, pos, message])),
            RowWrite::ArtifactReset { ord } => tx
                .prepare_cached("DELETE FROM artifact_chunks WHERE task_id = ?1 AND ord = ?2")
                .and_then(|mut s| s.execute(params![task_id, ord])),
            RowWrite::ArtifactChunk {
                ord,
                chunk,
                artifact,
            } => tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO artifact_chunks (task_id, ord, chunk, artifact) VALUES (?1, ?2, ?3, ?4)",
                )
                .and_then(|mut s| s.execute(params![task_id, ord, chunk, artifact])),
        }
        .map_err(db_err)?;
    }
    Ok(fed)
}
