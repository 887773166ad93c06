//! The SQLite store as the read model: GetTask (one head, its history and artifact chunks as
//! the view asks) and ListTasks (filtered, counted, paged by status time).

use async_trait::async_trait;
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OptionalExtension};
use taskledger_domain::ids::{ContextId, Principal, TaskId};
use taskledger_domain::ports::{
    Cursor, HistoryRead, ListPage, ListQuery, ListScope, StoreError, TaskReadModel, TaskView,
    ViewOptions,
};
use taskledger_domain::projection::ArtifactChunk;
use taskledger_domain::task::{TaskAggregate, TaskHead};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, TaskState};

use super::codec::{db_err, parse};
use super::schema::finished_states;
use super::SqliteStore;

fn read_view(
    conn: &Connection,
    task_id: &str,
    snapshot: &str,
    view: ViewOptions,
) -> Result<TaskView, StoreError> {
    let state: TaskAggregate = parse(snapshot)?;
    let head = state
        .head
        .ok_or_else(|| StoreError::Corrupt(format!("head of {task_id} has no task")))?;
    complete_view(conn, head, view)
}

/// The rows a head's view needs besides the head.
fn complete_view(
    conn: &Connection,
    head: TaskHead,
    view: ViewOptions,
) -> Result<TaskView, StoreError> {
    let task_id = head.id.as_str();
    let history = match view.history_read(&head) {
        HistoryRead::Ready(h) => h,
        HistoryRead::Rows { from, until, tail } => {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT message FROM history WHERE task_id = ?1 AND pos >= ?2 AND pos < ?3 \
                     ORDER BY pos",
                )
                .map_err(db_err)?;
            let rows = stmt
                .query_map(params![task_id, from as i64, until as i64], |r| {
                    r.get::<_, String>(0)
                })
                .map_err(db_err)?;
            let mut msgs = rows
                .map(|r| parse::<Message>(&r.map_err(db_err)?))
                .collect::<Result<Vec<_>, _>>()?;
            msgs.extend(tail);
            Some(msgs)
        }
    };
    let chunks = if view.include_artifacts && !head.artifacts.is_empty() {
        let mut stmt = conn
            .prepare_cached(
                "SELECT ord, chunk, artifact FROM artifact_chunks WHERE task_id = ?1 ORDER BY ord, chunk",
            )
            .map_err(db_err)?;
        let rows = stmt
            .query_map(params![task_id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(db_err)?;
        let chunks = rows
            .map(|r| {
                let (ord, chunk, a) = r.map_err(db_err)?;
                Ok(ArtifactChunk {
                    ord: ord as u32,
                    chunk: chunk as u32,
                    artifact: parse(&a)?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Some(chunks)
    } else if view.include_artifacts {
        Some(Vec::new())
    } else {
        None
    };
    Ok(TaskView {
        head,
        history,
        chunks,
    })
}

/// The rows of `heads` a caller's list covers (parameters ?1 tenant, ?2 subject).
fn scope_filter(scope: ListScope) -> &'static str {
    match scope {
        ListScope::Owned => "tenant = ?1 AND owner = ?2",
        ListScope::Shared => {
            "task_id IN (SELECT task_id FROM members WHERE tenant = ?1 AND subject = ?2)"
        }
        ListScope::All => {
            "tenant = ?1 AND (owner = ?2 OR task_id IN \
             (SELECT task_id FROM members WHERE tenant = ?1 AND subject = ?2))"
        }
    }
}

/// Rows of finished tasks whose status is at or before a time (past their expiry) left out.
/// The status time is asked first: it is in the list indexes, so a row after the cutoff (most
/// of them) is decided there and its table row — the snapshot — is never read for `state`
/// (SQLite seeks the table row only when a column outside the index is needed).
const NOT_EXPIRED: &str = concat!(" AND (status_nanos > ? OR NOT ", finished_states!(), ")");

/// Tasks shared with the caller that it does not own (the second half of an `All` list).
const SHARED_NOT_OWNED: &str =
    "task_id IN (SELECT task_id FROM members WHERE tenant = ?1 AND subject = ?2) \
     AND NOT (tenant = ?1 AND owner = ?2)";

/// How many rows of `heads` match `scope` (parameters ?1 tenant, ?2 subject) and the query's
/// filters, and the keys of the page's rows — up to one more than the page, newest first,
/// after the query's cursor. The sort carries the keys only, not the snapshots.
fn page_keys(
    conn: &rusqlite::Connection,
    scope: &str,
    owner: &Principal,
    q: &ListQuery,
) -> Result<(i64, Vec<(String, i64)>), StoreError> {
    let mut filter = String::from(scope);
    let mut args: Vec<SqlValue> = vec![
        SqlValue::Text(owner.tenant.to_string()),
        SqlValue::Text(owner.subject.to_string()),
    ];
    if let Some(c) = &q.context_id {
        filter.push_str(" AND context_id = ?");
        args.push(SqlValue::Text(c.to_string()));
    }
    if let Some(s) = q.state {
        filter.push_str(" AND state = ?");
        args.push(SqlValue::Text(s.as_str().to_string()));
    }
    if let Some(t) = q.status_after {
        filter.push_str(" AND status_nanos >= ?");
        args.push(SqlValue::Integer(t.unix_nanos()));
    }
    if let Some(t) = q.finished_before {
        filter.push_str(NOT_EXPIRED);
        args.push(SqlValue::Integer(t.unix_nanos()));
    }
    let total: i64 = conn
        .prepare_cached(&format!("SELECT COUNT(*) FROM heads WHERE {filter}"))
        .and_then(|mut s| s.query_row(rusqlite::params_from_iter(args.iter()), |r| r.get(0)))
        .map_err(db_err)?;
    if let Some(c) = &q.after {
        filter.push_str(" AND (status_nanos < ? OR (status_nanos = ? AND task_id < ?))");
        args.push(SqlValue::Integer(c.status_nanos));
        args.push(SqlValue::Integer(c.status_nanos));
        args.push(SqlValue::Text(c.task_id.clone()));
    }
    args.push(SqlValue::Integer(q.page_size.get() as i64 + 1));
    let sql = format!(
        "SELECT task_id, status_nanos FROM heads WHERE {filter} \
         ORDER BY status_nanos DESC, task_id DESC LIMIT ?"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(db_err)?;
    let keys = stmt
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })
        .map_err(db_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db_err)?;
    Ok((total, keys))
}

#[async_trait]
impl TaskReadModel for SqliteStore {
    async fn get(
        &self,
        owner: &Principal,
        task_id: &TaskId,
        view: ViewOptions,
    ) -> Result<Option<TaskView>, StoreError> {
        let (owner, id) = (owner.clone(), task_id.to_string());
        self.read_now(move |conn| {
            let snapshot: Option<String> = conn
                .prepare_cached(
                    "SELECT snapshot FROM heads WHERE task_id = ?1 AND tenant = ?2 AND (owner = ?3 \
                     OR EXISTS (SELECT 1 FROM members WHERE tenant = ?2 AND subject = ?3 AND task_id = ?1))",
                )
                .and_then(|mut s| {
                    s.query_row(
                        params![id, owner.tenant.as_str(), owner.subject.as_str()],
                        |r| r.get(0),
                    )
                    .optional()
                })
                .map_err(db_err)?;
            snapshot
                .map(|snap| read_view(conn, &id, &snap, view))
                .transpose()
        })
    }

    async fn complete(&self, head: TaskHead, view: ViewOptions) -> Result<TaskView, StoreError> {
        self.read_now(move |conn| complete_view(conn, head, view))
    }

    async fn change_stamp(&self) -> Result<Option<u64>, StoreError> {
        Ok(self.stamp())
    }

    async fn count_by_state(
        &self,
        who: &Principal,
        scope: ListScope,
        context_id: Option<&ContextId>,
        finished_before: Option<Timestamp>,
    ) -> Result<Vec<(TaskState, u64)>, StoreError> {
        let (who, context) = (who.clone(), context_id.cloned());
        self.read(move |conn| {
            let mut sql = format!(
                "SELECT state, COUNT(*) FROM heads WHERE {}",
                scope_filter(scope)
            );
            let mut args: Vec<SqlValue> = vec![
                SqlValue::Text(who.tenant.to_string()),
                SqlValue::Text(who.subject.to_string()),
            ];
            if let Some(c) = &context {
                sql.push_str(" AND context_id = ?");
                args.push(SqlValue::Text(c.to_string()));
            }
            if let Some(t) = finished_before {
                sql.push_str(NOT_EXPIRED);
                args.push(SqlValue::Integer(t.unix_nanos()));
            }
            sql.push_str(" GROUP BY state");
            let mut stmt = conn.prepare_cached(&sql).map_err(db_err)?;
            let rows = stmt
                .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
                })
                .map_err(db_err)?;
            let mut out = Vec::new();
            for row in rows {
                let (state, n) = row.map_err(db_err)?;
                let state = TaskState::from_name(&state)
                    .ok_or_else(|| StoreError::Corrupt(format!("unknown state {state:?}")))?;
                out.push((state, n as u64));
            }
            out.sort_by_key(|(st, _)| st.number());
            Ok(out)
        })
        .await
    }

    async fn list(&self, owner: &Principal, query: &ListQuery) -> Result<ListPage, StoreError> {
        let (owner, q) = (owner.clone(), query.clone());
        self.read(move |conn| {
            // The tasks the caller owns, those shared with it (ADR 021), or both: both as two
            // disjoint reads that each walk an index, merged, so a page costs the same whatever
            // the tenant's size (one filter with an OR is a scan of all its heads).
            let limit = q.page_size.get() as i64;
            let (total, keys) = match q.scope {
                ListScope::All => {
                    let (owned, mut keys) =
                        page_keys(conn, scope_filter(ListScope::Owned), &owner, &q)?;
                    let (shared, more) = page_keys(conn, SHARED_NOT_OWNED, &owner, &q)?;
                    keys.extend(more);
                    keys.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
                    keys.truncate(limit as usize + 1);
                    (owned + shared, keys)
                }
                scope => page_keys(conn, scope_filter(scope), &owner, &q)?,
            };
            let mut snapshot = conn
                .prepare_cached("SELECT snapshot FROM heads WHERE task_id = ?1")
                .map_err(db_err)?;
            let rows = keys
                .into_iter()
                .map(|(id, nanos)| {
                    let snap: String = snapshot.query_row([&id], |r| r.get(0)).map_err(db_err)?;
                    Ok((id, nanos, snap))
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            let more = rows.len() as i64 > limit;
            let mut tasks = Vec::with_capacity(rows.len());
            let mut next = None;
            for (i, (id, nanos, snap)) in rows.into_iter().enumerate() {
                if i as i64 == limit {
                    break;
                }
                if more && i as i64 == limit - 1 {
                    next = Some(Cursor {
                        status_nanos: nanos,
                        task_id: id.clone(),
                    });
                }
                tasks.push(read_view(conn, &id, &snap, q.view)?);
            }
            Ok(ListPage {
                tasks,
                total_size: total as u64,
                next,
            })
        })
        .await
    }
}
