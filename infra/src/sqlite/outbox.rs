//! The SQLite store as the push outbox: the queue the relay fans deliveries out to, due
//! deliveries (one in flight per group), the ledger of attempts, dead letters and their redrive.

use std::time::Duration;

use async_trait::async_trait;
use rusqlite::params;
use taskledger_domain::agent::turns::QueueError;
use taskledger_domain::ports::{
    DeadLetter, DeliveryAttempt, OutboxEntry, OutboxRecord, PushLedger, PushOutbox, PushQueue,
    StoreError, MAX_TASK_DELIVERIES,
};
use taskledger_domain::push::PushDelivery;

use super::codec::{db_err, json, now_ms, parse};
use super::SqliteStore;

#[async_trait]
impl PushQueue for SqliteStore {
    async fn enqueue(&self, deliveries: &[PushDelivery]) -> Result<(), QueueError> {
        if deliveries.is_empty() {
            return Ok(());
        }
        let rows = deliveries
            .iter()
            .map(|d| {
                Ok((
                    d.group(),
                    d.task_id.clone(),
                    // Each principal's config ids are its own: the subscription's key.
                    d.config.key(),
                    d.seq,
                    json(d)?,
                ))
            })
            .collect::<Result<Vec<_>, StoreError>>()
            .map_err(|e| QueueError::Unavailable(e.to_string()))?;
        self.write(move |conn| {
            let now = now_ms();
            let mut ins = conn
                .prepare_cached(
                    "INSERT INTO push_outbox (grp, task_id, config_id, seq, delivery, due_ms) \
                     SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE NOT EXISTS (SELECT 1 FROM push_outbox \
                     WHERE task_id = ?2 AND config_id = ?3 AND seq = ?4)",
                )
                .map_err(db_err)?;
            for (grp, task_id, config_id, seq, delivery) in &rows {
                ins.execute(params![grp, task_id, config_id, *seq as i64, delivery, now])
                    .map_err(db_err)?;
            }
            Ok(())
        })
        .await
        .map_err(|e| QueueError::Unavailable(e.to_string()))
    }
}

/// An outbox entry's id, as the ledger's handle.
fn entry_id(attempt: &DeliveryAttempt) -> Result<u64, StoreError> {
    attempt
        .handle
        .parse()
        .map_err(|_| StoreError::Corrupt(format!("not an outbox entry: {}", attempt.handle)))
}

#[async_trait]
impl PushLedger for SqliteStore {
    async fn delivered(&self, attempt: &DeliveryAttempt) -> Result<(), StoreError> {
        PushOutbox::delivered(self, entry_id(attempt)?).await
    }

    async fn retry_in(
        &self,
        attempt: &DeliveryAttempt,
        attempts: u32,
        first_attempt_ms: i64,
        pause: Duration,
        reason: &str,
    ) -> Result<Duration, StoreError> {
        let at = now_ms() + pause.as_millis() as i64;
        self.retry_at(entry_id(attempt)?, attempts, first_attempt_ms, at, reason)
            .await?;
        Ok(pause)
    }

    async fn hold(
        &self,
        attempt: &DeliveryAttempt,
        pause: Duration,
    ) -> Result<Duration, StoreError> {
        let (attempts, first) = (attempt.attempts, attempt.first_attempt_ms);
        let at = now_ms() + pause.as_millis() as i64;
        self.retry_at(
            entry_id(attempt)?,
            attempts,
            first,
            at,
            "held behind its group",
        )
        .await?;
        Ok(pause)
    }

    async fn dead_letter(
        &self,
        attempt: &DeliveryAttempt,
        attempts: u32,
        reason: &str,
    ) -> Result<(), StoreError> {
        PushOutbox::dead_letter(self, entry_id(attempt)?, attempts, reason).await
    }
}

#[async_trait]
impl PushOutbox for SqliteStore {
    async fn due(
        &self,
        now_ms: i64,
        limit: u32,
        busy: &[u64],
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let busy: std::collections::HashSet<u64> = busy.iter().copied().collect();
        self.read_now(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT o.id, o.delivery, o.attempts, o.first_ms FROM push_outbox o \
                     WHERE o.dead = 0 AND o.due_ms <= ?1 \
                     AND o.id = (SELECT MIN(id) FROM push_outbox WHERE grp = o.grp AND dead = 0) \
                     ORDER BY o.due_ms, o.id",
                )
                .map_err(db_err)?;
            // Stepped lazily, not `LIMIT ?` (a bound LIMIT prepares the statement again).
            let rows = stmt
                .query_map(params![now_ms], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                    ))
                })
                .map_err(db_err)?;
            let mut out = Vec::new();
            for row in rows {
                if out.len() >= limit as usize {
                    break;
                }
                let (id, delivery, attempts, first_ms) = row.map_err(db_err)?;
                if busy.contains(&(id as u64)) {
                    continue;
                }
                out.push(OutboxEntry {
                    id: id as u64,
                    delivery: parse(&delivery)?,
                    attempts: attempts as u32,
                    first_attempt_ms: first_ms,
                });
            }
            Ok(out)
        })
    }

    async fn next_due(&self) -> Result<Option<i64>, StoreError> {
        self.read_now(|conn| {
            conn.prepare_cached("SELECT MIN(due_ms) FROM push_outbox WHERE dead = 0")
                .and_then(|mut s| s.query_row([], |r| r.get::<_, Option<i64>>(0)))
                .map_err(db_err)
        })
    }

    async fn delivered(&self, id: u64) -> Result<(), StoreError> {
        self.write(move |conn| {
            conn.prepare_cached("DELETE FROM push_outbox WHERE id = ?1")
                .and_then(|mut s| s.execute(params![id as i64]))
                .map(|_| ())
                .map_err(db_err)
        })
        .await
    }

    async fn retry_at(
        &self,
        id: u64,
        attempts: u32,
        first_attempt_ms: i64,
        at_ms: i64,
        reason: &str,
    ) -> Result<(), StoreError> {
        let reason = reason.to_string();
        self.write(move |conn| {
            conn.prepare_cached(
                "UPDATE push_outbox SET attempts = ?2, first_ms = ?3, due_ms = ?4, reason = ?5 \
                 WHERE id = ?1",
            )
            .and_then(|mut s| {
                s.execute(params![
                    id as i64,
                    attempts,
                    first_attempt_ms,
                    at_ms,
                    reason
                ])
            })
            .map(|_| ())
            .map_err(db_err)
        })
        .await
    }

    async fn dead_letter(&self, id: u64, attempts: u32, reason: &str) -> Result<(), StoreError> {
        let reason = reason.to_string();
        self.write(move |conn| {
            conn.prepare_cached(
                "UPDATE push_outbox SET dead = 1, attempts = ?2, reason = ?3 WHERE id = ?1",
            )
            .and_then(|mut s| s.execute(params![id as i64, attempts, reason]))
            .map(|_| ())
            .map_err(db_err)
        })
        .await
    }

    async fn dead_letters(&self, limit: u32) -> Result<Vec<DeadLetter>, StoreError> {
        self.read_now(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT id, delivery, attempts, COALESCE(reason, '') FROM push_outbox \
                     WHERE dead = 1 ORDER BY id",
                )
                .map_err(db_err)?;
            // Stepped lazily, not `LIMIT ?` (a bound LIMIT prepares the statement again).
            let rows = stmt
                .query_map([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .map_err(db_err)?;
            rows.take(limit as usize)
                .map(|row| {
                    let (id, delivery, attempts, reason) = row.map_err(db_err)?;
                    Ok(DeadLetter {
                        id: id as u64,
                        delivery: parse(&delivery)?,
                        attempts: attempts as u32,
                        reason,
                    })
                })
                .collect()
        })
    }

    async fn redrive(&self) -> Result<u64, StoreError> {
        self.write(|conn| {
            conn.execute(
                "UPDATE push_outbox SET dead = 0, attempts = 0, first_ms = 0, due_ms = ?1, \
                 reason = NULL WHERE dead = 1",
                params![now_ms()],
            )
            .map(|n| n as u64)
            .map_err(db_err)
        })
        .await
    }

    async fn task_deliveries(&self, task_id: &str) -> Result<Vec<OutboxRecord>, StoreError> {
        let task_id = task_id.to_string();
        self.read_now(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT delivery, attempts, dead, COALESCE(reason, ''), due_ms FROM push_outbox \
                     WHERE task_id = ?1 ORDER BY id",
                )
                .map_err(db_err)?;
            let rows = stmt
                .query_map(params![task_id], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, i64>(4)?,
                    ))
                })
                .map_err(db_err)?;
            rows.take(MAX_TASK_DELIVERIES as usize)
                .map(|row| {
                    let (delivery, attempts, dead, reason, due_ms) = row.map_err(db_err)?;
                    Ok(OutboxRecord {
                        delivery: parse(&delivery)?,
                        attempts: attempts as u32,
                        dead: dead != 0,
                        reason,
                        due_ms,
                    })
                })
                .collect()
        })
    }
}
