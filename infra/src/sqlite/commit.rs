//! What one commit writes, inside the writer's transaction: message and idempotency keys, the
//! version check, events, the feed of work after the commit, the head and the read model.

use rusqlite::{params, Connection, OptionalExtension};
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{Commit, StoreError, SNAPSHOT_SCHEMA};
use taskledger_domain::projection::ReadWrite;
use taskledger_domain::turns::WORK_EVENT;

use super::codec::{db_err, head_version, is_constraint, json};

/// A deleted config's pending deliveries go with it, in the same transaction.
fn drop_deleted_configs_deliveries(tx: &Connection, c: &Commit) -> Result<(), StoreError> {
    for e in &c.events {
        if e.event_type == "PushConfigDeleted" {
            if let Some(id) = e
                .payload
                .pointer("/PushConfigDeleted/id")
                .and_then(|v| v.as_str())
            {
                tx.prepare_cached(
                    "DELETE FROM push_outbox WHERE task_id = ?1 AND config_id = ?2 AND dead = 0",
                )
                .and_then(|mut st| st.execute(params![c.task_id.as_str(), id]))
                .map_err(db_err)?;
            }
        }
    }
    Ok(())
}

pub(super) fn apply_commit(tx: &Connection, c: &Commit) -> Result<(), StoreError> {
    let head = c
        .head()
        .ok_or_else(|| StoreError::Other("a commit must leave a created task".into()))?;
    let task_id = c.task_id.as_str();
    if let Some(k) = &c.message_key {
        let n = tx
            .prepare_cached(
                "INSERT OR IGNORE INTO message_keys (task_id, message_id, fingerprint) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut s| s.execute(params![k.task_id.as_str(), k.message_id.as_str(), k.fingerprint]))
            .map_err(db_err)?;
        if n == 0 {
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
    if head_version(tx, task_id)?.unwrap_or(0) != c.expected_version {
        return Err(StoreError::Conflict(c.task_id.clone()));
    }
    {
        let mut ins = tx
            .prepare_cached(
                "INSERT INTO events (task_id, seq, event_type, event_version, payload, recorded_at, \
                 generation, status_state, status_update) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .map_err(db_err)?;
        for e in &c.events {
            let status = e.update.as_ref().and_then(|u| u.status.as_ref());
            ins.execute(params![
                task_id,
                e.seq as i64,
                e.event_type,
                e.event_version,
                json(&e.payload)?,
                e.recorded_at.unix_nanos(),
                e.update.as_ref().map(|u| u.generation as i64),
                status.map(|s| s.state.as_str()),
                status.map(|s| s.body.as_str()),
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
            let pushed = c.pushes.iter().find(|p| p.seq == e.seq).map(|p| &p.body);
            if e.event_type == WORK_EVENT || pushed.is_some() {
                tx.prepare_cached(
                    "INSERT INTO feed (task_id, seq, event_type, pushed) VALUES (?1, ?2, ?3, ?4)",
                )
                .and_then(|mut st| st.execute(params![task_id, e.seq as i64, e.event_type, pushed]))
                .map_err(db_err)?;
            }
        }
    }
    drop_deleted_configs_deliveries(tx, c)?;
    tx.prepare_cached(
        "INSERT OR REPLACE INTO heads (task_id, tenant, owner, context_id, state, status_nanos, version, \
         snapshot_schema, snapshot) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .and_then(|mut s| {
        s.execute(params![
            task_id,
            head.owner.tenant.as_str(),
            head.owner.subject.as_str(),
            head.context_id.as_str(),
            head.status.state.as_str(),
            head.status.timestamp.unwrap_or(head.created_at).unix_nanos(),
            c.snapshot.version as i64,
            SNAPSHOT_SCHEMA,
            json(&c.snapshot).unwrap_or_default()
        ])
    })
    .map_err(db_err)?;
    // Whom the task is shared with: one row per principal, rewritten when the set changes.
    if c.sharing.changed {
        tx.prepare_cached("DELETE FROM members WHERE task_id = ?1")
            .and_then(|mut s| s.execute(params![task_id]))
            .map_err(db_err)?;
        for m in &c.sharing.members {
            tx.prepare_cached(
                "INSERT OR IGNORE INTO members (tenant, subject, task_id) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut s| s.execute(params![m.tenant.as_str(), m.subject.as_str(), task_id]))
            .map_err(db_err)?;
        }
    }
    for w in &c.writes {
        match w {
            ReadWrite::History(h) => tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO history (task_id, pos, message) VALUES (?1, ?2, ?3)",
                )
                .and_then(|mut s| s.execute(params![task_id, h.pos as i64, json(&h.message).unwrap_or_default()])),
            ReadWrite::ArtifactReset { ord, .. } => tx
                .prepare_cached("DELETE FROM artifact_chunks WHERE task_id = ?1 AND ord = ?2")
                .and_then(|mut s| s.execute(params![task_id, *ord as i64])),
            ReadWrite::ArtifactChunk(ch) => tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO artifact_chunks (task_id, ord, chunk, artifact) VALUES (?1, ?2, ?3, ?4)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        task_id,
                        ch.ord as i64,
                        ch.chunk as i64,
                        json(&ch.artifact).unwrap_or_default()
                    ])
                }),
        }
        .map_err(db_err)?;
    }
    Ok(())
}
