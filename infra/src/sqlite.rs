//! The embedded default store: SQLite in one file (WAL), behind the same ports as DynamoDB.
//! One writer connection serialises appends; a few reader connections serve GetTask/ListTasks.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use taskledger_domain::events::StoredEvent;
use taskledger_domain::ids::{HistoryLength, IdempotencyKey, Principal, TaskId};
use taskledger_domain::ports::{
    Commit, Cursor, DeadLetter, EventStore, IdempotencyRecord, ListPage, ListQuery, Loaded,
    OutboxEntry, PushOutbox, StoreError, TaskReadModel, TaskView, ViewOptions, WorkFeed,
    SNAPSHOT_SCHEMA,
};
use taskledger_domain::projection::{ArtifactChunk, ReadWrite};
use taskledger_domain::push;
use taskledger_domain::task::TaskAggregate;
use taskledger_domain::time::Timestamp;
use taskledger_domain::turns::{AgentTurn, WORK_EVENT};
use taskledger_domain::wire::Message;

/// Name of the database file under the data directory.
pub const DB_FILE: &str = "taskledger.sqlite";
/// Reader connections opened next to the writer (file mode).
pub const READERS: usize = 4;
/// How long a connection waits for a lock before reporting the store busy.
const BUSY_TIMEOUT_MS: u64 = 5_000;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS events (
    task_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT NOT NULL,
    event_version TEXT NOT NULL, payload TEXT NOT NULL, recorded_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS heads (
    task_id TEXT NOT NULL PRIMARY KEY, tenant TEXT NOT NULL, owner TEXT NOT NULL,
    context_id TEXT NOT NULL, state TEXT NOT NULL, status_nanos INTEGER NOT NULL,
    version INTEGER NOT NULL, snapshot_schema INTEGER NOT NULL, snapshot TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS heads_by_owner ON heads (tenant, owner, status_nanos DESC, task_id DESC);
CREATE INDEX IF NOT EXISTS heads_by_context ON heads (tenant, owner, context_id, status_nanos DESC, task_id DESC);
CREATE TABLE IF NOT EXISTS history (
    task_id TEXT NOT NULL, pos INTEGER NOT NULL, message TEXT NOT NULL,
    PRIMARY KEY (task_id, pos)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS artifact_chunks (
    task_id TEXT NOT NULL, ord INTEGER NOT NULL, chunk INTEGER NOT NULL, artifact TEXT NOT NULL,
    PRIMARY KEY (task_id, ord, chunk)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS message_keys (
    task_id TEXT NOT NULL, message_id TEXT NOT NULL, fingerprint TEXT NOT NULL,
    PRIMARY KEY (task_id, message_id, fingerprint)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS feed (
    pos INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS feed_cursors (
    consumer TEXT NOT NULL PRIMARY KEY, pos INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS push_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT, grp TEXT NOT NULL, task_id TEXT NOT NULL,
    config_id TEXT NOT NULL, seq INTEGER NOT NULL, delivery TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, first_ms INTEGER NOT NULL DEFAULT 0,
    due_ms INTEGER NOT NULL, dead INTEGER NOT NULL DEFAULT 0, reason TEXT);
CREATE INDEX IF NOT EXISTS push_outbox_by_group ON push_outbox (grp, dead, id);
CREATE INDEX IF NOT EXISTS push_outbox_by_due ON push_outbox (dead, due_ms);
CREATE TABLE IF NOT EXISTS idempotency (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, key TEXT NOT NULL,
    fingerprint TEXT NOT NULL, task_id TEXT NOT NULL,
    PRIMARY KEY (tenant, owner, key)) WITHOUT ROWID;
"#;

#[derive(Debug, thiserror::Error)]
pub enum SqliteError {
    #[error("cannot open the SQLite store at {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
}

/// The SQLite store. Cheap to clone.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// The write connection, used by the writer thread (and for reads in memory mode).
    writer: Arc<Mutex<Connection>>,
    /// Commits queued for the writer thread, which applies them in groups.
    jobs: std::sync::mpsc::Sender<WriteJob>,
    /// Empty in memory mode, where the writer serves reads too.
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
}

/// Most commits applied in one SQLite transaction (group commit).
pub const MAX_GROUP_COMMIT: usize = 64;

struct WriteJob {
    commit: Commit,
    reply: tokio::sync::oneshot::Sender<Result<(), StoreError>>,
}

/// Applies queued commits, many per transaction, each in its own savepoint so that one
/// refused commit does not affect the others. Replies only after the transaction is durable.
fn writer_loop(conn: Arc<Mutex<Connection>>, jobs: std::sync::mpsc::Receiver<WriteJob>) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_GROUP_COMMIT {
            match jobs.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        let results = match conn.lock() {
            Ok(mut c) => apply_group(&mut c, &batch),
            Err(_) => batch
                .iter()
                .map(|_| Err(StoreError::Other("writer lock poisoned".into())))
                .collect(),
        };
        for (job, result) in batch.into_iter().zip(results) {
            // The requester may have gone away; its commit stands regardless.
            let _ = job.reply.send(result);
        }
    }
}

fn apply_group(conn: &mut Connection, batch: &[WriteJob]) -> Vec<Result<(), StoreError>> {
    let fail_all = |e: StoreError| batch.iter().map(|_| Err(e.clone())).collect::<Vec<_>>();
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => return fail_all(db_err(e)),
    };
    let mut results = Vec::with_capacity(batch.len());
    for job in batch {
        let r = match tx.savepoint() {
            Ok(sp) => match apply_commit(&sp, &job.commit) {
                // Dropping an unreleased savepoint rolls it back.
                Ok(()) => sp.commit().map_err(db_err),
                Err(e) => Err(e),
            },
            Err(e) => Err(db_err(e)),
        };
        results.push(r);
    }
    match tx.commit() {
        Ok(()) => results,
        Err(e) => fail_all(db_err(e)),
    }
}

fn configure(conn: &Connection, wal: bool) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS))?;
    if wal {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // Durable across a crash of the process; an OS crash may lose the last commits (ADR 002).
        conn.pragma_update(None, "synchronous", "NORMAL")?;
    }
    conn.pragma_update(None, "cache_size", -8_000)?;
    Ok(())
}

impl SqliteStore {
    /// Opens (or creates) `taskledger.sqlite` under `data_dir`.
    pub fn open(data_dir: &Path) -> Result<Self, SqliteError> {
        std::fs::create_dir_all(data_dir).map_err(|source| SqliteError::DataDir {
            path: data_dir.display().to_string(),
            source,
        })?;
        let path = data_dir.join(DB_FILE);
        let open_err = |source| SqliteError::Open {
            path: path.display().to_string(),
            source,
        };
        let writer = Connection::open(&path).map_err(open_err)?;
        configure(&writer, true).map_err(open_err)?;
        writer.execute_batch(SCHEMA).map_err(open_err)?;
        let mut readers = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            let r = Connection::open_with_flags(
                &path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(open_err)?;
            configure(&r, false).map_err(open_err)?;
            readers.push(Mutex::new(r));
        }
        Ok(Self::from_parts(writer, readers))
    }

    /// A private in-memory store (tests): one connection serves reads and writes.
    pub fn in_memory() -> Self {
        // Opening an in-memory database cannot fail short of memory exhaustion.
        let conn = Connection::open_in_memory().expect("in-memory SQLite");
        configure(&conn, false).expect("configure in-memory SQLite");
        conn.execute_batch(SCHEMA).expect("create schema");
        Self::from_parts(conn, Vec::new())
    }

    fn from_parts(writer: Connection, readers: Vec<Mutex<Connection>>) -> Self {
        let writer = Arc::new(Mutex::new(writer));
        let (jobs, queue) = std::sync::mpsc::channel();
        let conn = writer.clone();
        // The thread ends when the last store handle (and with it the sender) is dropped.
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer_loop(conn, queue))
            .ok();
        Self {
            inner: Arc::new(Inner {
                writer,
                jobs,
                readers,
                next_reader: AtomicUsize::new(0),
            }),
        }
    }

    async fn commit(&self, commit: Commit) -> Result<(), StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.inner
            .jobs
            .send(WriteJob { commit, reply })
            .map_err(|_| StoreError::Unavailable("the SQLite writer has stopped".into()))?;
        answer
            .await
            .map_err(|_| StoreError::Unavailable("the SQLite writer has stopped".into()))?
    }

    /// Point reads run in place: they take tens of microseconds, less than a thread hand-off.
    fn read_now<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let inner = &self.inner;
        if inner.readers.is_empty() {
            let conn = inner
                .writer
                .lock()
                .map_err(|_| StoreError::Other("store lock poisoned".into()))?;
            return f(&conn);
        }
        let n = inner.readers.len();
        let start = inner.next_reader.fetch_add(1, Ordering::Relaxed);
        for k in 0..n {
            if let Ok(conn) = inner.readers[(start + k) % n].try_lock() {
                return f(&conn);
            }
        }
        let conn = inner.readers[start % n]
            .lock()
            .map_err(|_| StoreError::Other("reader lock poisoned".into()))?;
        f(&conn)
    }

    /// Scans (ListTasks pages) run on the blocking pool.
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.read_now(f))
            .await
            .map_err(|e| StoreError::Other(format!("store task failed: {e}")))?
    }
}

fn db_err(e: rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(
                f.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ) =>
        {
            StoreError::Unavailable(format!("SQLite is busy: {e}"))
        }
        other => StoreError::Other(other.to_string()),
    }
}

fn is_constraint(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation)
}

fn json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Other(format!("cannot serialise: {e}")))
}

fn parse<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// The deliveries a commit makes, in the same transaction; a deleted config's pending
/// deliveries go with it.
fn write_push_outbox(
    tx: &Connection,
    c: &Commit,
    head: &taskledger_domain::task::TaskHead,
) -> Result<(), StoreError> {
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
    if c.pushes.is_empty() {
        return Ok(());
    }
    let now = now_ms();
    let mut ins = tx
        .prepare_cached(
            "INSERT INTO push_outbox (grp, task_id, config_id, seq, delivery, due_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(db_err)?;
    for p in &c.pushes {
        for d in push::deliveries(c.task_id.as_str(), &head.push, p.seq, &p.body) {
            ins.execute(params![
                d.group(),
                d.task_id,
                d.config.id,
                d.seq as i64,
                json(&d)?,
                now
            ])
            .map_err(db_err)?;
        }
    }
    Ok(())
}

fn now_ms() -> i64 {
    Timestamp::now().unix_nanos() / 1_000_000
}

fn row_event(r: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, String, String, String, i64)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

fn to_event(row: (i64, String, String, String, i64)) -> Result<StoredEvent, StoreError> {
    Ok(StoredEvent {
        seq: row.0 as u64,
        event_type: row.1,
        event_version: row.2,
        payload: parse(&row.3)?,
        recorded_at: Timestamp::from_unix_nanos(row.4),
    })
}

fn load_events(
    conn: &Connection,
    task_id: &str,
    after: u64,
) -> Result<Vec<StoredEvent>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, event_type, event_version, payload, recorded_at FROM events \
             WHERE task_id = ?1 AND seq > ?2 ORDER BY seq",
        )
        .map_err(db_err)?;
    let rows = stmt
        .query_map(params![task_id, after as i64], row_event)
        .map_err(db_err)?;
    rows.map(|r| to_event(r.map_err(db_err)?)).collect()
}

fn apply_commit(tx: &Connection, c: &Commit) -> Result<(), StoreError> {
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
    let current: Option<i64> = tx
        .prepare_cached("SELECT version FROM heads WHERE task_id = ?1")
        .and_then(|mut s| s.query_row(params![task_id], |r| r.get(0)).optional())
        .map_err(db_err)?;
    if current.unwrap_or(0) as u64 != c.expected_version {
        return Err(StoreError::Conflict(c.task_id.clone()));
    }
    {
        let mut ins = tx
            .prepare_cached(
                "INSERT INTO events (task_id, seq, event_type, event_version, payload, recorded_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(db_err)?;
        for e in &c.events {
            ins.execute(params![
                task_id,
                e.seq as i64,
                e.event_type,
                e.event_version,
                json(&e.payload)?,
                e.recorded_at.unix_nanos()
            ])
            .map_err(|err| {
                if is_constraint(&err) {
                    StoreError::Conflict(c.task_id.clone())
                } else {
                    db_err(err)
                }
            })?;
            if e.event_type == WORK_EVENT {
                // The outbox of agent work, in the same transaction as the event.
                tx.prepare_cached("INSERT INTO feed (task_id, seq) VALUES (?1, ?2)")
                    .and_then(|mut st| st.execute(params![task_id, e.seq as i64]))
                    .map_err(db_err)?;
            }
        }
    }
    write_push_outbox(tx, c, head)?;
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
    let history = match view.history {
        HistoryLength::Last(0) => None,
        len => {
            let (sql, limit) = match len {
                HistoryLength::Last(n) => (
                    "SELECT message FROM history WHERE task_id = ?1 ORDER BY pos DESC LIMIT ?2",
                    n as i64,
                ),
                HistoryLength::All => (
                    "SELECT message FROM history WHERE task_id = ?1 ORDER BY pos DESC LIMIT ?2",
                    -1,
                ),
            };
            let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
            let rows = stmt
                .query_map(params![task_id, limit], |r| r.get::<_, String>(0))
                .map_err(db_err)?;
            let mut msgs = rows
                .map(|r| parse::<Message>(&r.map_err(db_err)?))
                .collect::<Result<Vec<_>, _>>()?;
            msgs.reverse();
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

    async fn append(&self, commit: Commit) -> Result<(), StoreError> {
        self.commit(commit).await
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
                    "SELECT snapshot FROM heads WHERE task_id = ?1 AND tenant = ?2 AND owner = ?3",
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

    async fn list(&self, owner: &Principal, query: &ListQuery) -> Result<ListPage, StoreError> {
        let (owner, q) = (owner.clone(), query.clone());
        self.read(move |conn| {
            let mut filter = String::from("tenant = ? AND owner = ?");
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
            let total: i64 = conn
                .prepare_cached(&format!("SELECT COUNT(*) FROM heads WHERE {filter}"))
                .and_then(|mut s| {
                    s.query_row(rusqlite::params_from_iter(args.iter()), |r| r.get(0))
                })
                .map_err(db_err)?;
            if let Some(c) = &q.after {
                filter.push_str(" AND (status_nanos < ? OR (status_nanos = ? AND task_id < ?))");
                args.push(SqlValue::Integer(c.status_nanos));
                args.push(SqlValue::Integer(c.status_nanos));
                args.push(SqlValue::Text(c.task_id.clone()));
            }
            let limit = q.page_size.get() as i64;
            args.push(SqlValue::Integer(limit + 1));
            let sql = format!(
                "SELECT task_id, status_nanos, snapshot FROM heads WHERE {filter} \
                 ORDER BY status_nanos DESC, task_id DESC LIMIT ?"
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(db_err)?;
            let rows = stmt
                .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                })
                .map_err(db_err)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(db_err)?;
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

#[async_trait]
impl WorkFeed for SqliteStore {
    async fn feed_after(
        &self,
        cursor: u64,
        limit: u32,
    ) -> Result<Vec<(u64, AgentTurn)>, StoreError> {
        self.read_now(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT pos, task_id, seq FROM feed WHERE pos > ?1 ORDER BY pos LIMIT ?2",
                )
                .map_err(db_err)?;
            let rows = stmt
                .query_map(params![cursor as i64, limit as i64], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                    ))
                })
                .map_err(db_err)?;
            rows.map(|r| {
                let (pos, task_id, seq) = r.map_err(db_err)?;
                Ok((
                    pos as u64,
                    AgentTurn {
                        task_id,
                        work_seq: seq as u64,
                    },
                ))
            })
            .collect()
        })
    }

    async fn feed_cursor(&self, consumer: &str) -> Result<u64, StoreError> {
        self.read_now(|conn| {
            conn.prepare_cached("SELECT pos FROM feed_cursors WHERE consumer = ?1")
                .and_then(|mut s| {
                    s.query_row(params![consumer], |r| r.get::<_, i64>(0))
                        .optional()
                })
                .map(|p| p.unwrap_or(0) as u64)
                .map_err(db_err)
        })
    }

    async fn save_feed_cursor(&self, consumer: &str, cursor: u64) -> Result<(), StoreError> {
        let consumer = consumer.to_string();
        self.write(move |conn| {
            conn.execute(
                "INSERT INTO feed_cursors (consumer, pos) VALUES (?1, ?2) \
                 ON CONFLICT(consumer) DO UPDATE SET pos = MAX(pos, excluded.pos)",
                params![consumer, cursor as i64],
            )
            .map_err(db_err)?;
            // Entries every consumer has passed are done: the feed stays small.
            conn.execute(
                "DELETE FROM feed WHERE pos <= (SELECT MIN(pos) FROM feed_cursors)",
                [],
            )
            .map(|_| ())
            .map_err(db_err)
        })
        .await
    }
}

impl SqliteStore {
    /// Runs `f` on the writer connection, off the async runtime.
    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let conn = inner
                .writer
                .lock()
                .map_err(|_| StoreError::Other("writer lock poisoned".into()))?;
            f(&conn)
        })
        .await
        .map_err(|e| StoreError::Other(format!("store task failed: {e}")))?
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
                     ORDER BY o.due_ms, o.id LIMIT ?2",
                )
                .map_err(db_err)?;
            let rows = stmt
                .query_map(params![now_ms, i64::from(limit) + busy.len() as i64], |r| {
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
                if out.len() >= limit as usize {
                    break;
                }
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
                     WHERE dead = 1 ORDER BY id LIMIT ?1",
                )
                .map_err(db_err)?;
            let rows = stmt
                .query_map(params![limit], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .map_err(db_err)?;
            rows.map(|row| {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn work_requests_land_in_the_feed_with_their_commit_and_cursors_persist() {
        let store = SqliteStore::in_memory();
        let id = crate::contract::create_task(&store, "t-feed", "c").await;
        let entries = store.feed_after(0, 10).await.unwrap();
        assert_eq!(entries.len(), 1, "task creation requests work");
        assert_eq!(entries[0].1.task_id, id.as_str());
        assert_eq!(entries[0].1.work_seq, 3);
        assert_eq!(store.feed_cursor("relay").await.unwrap(), 0);
        store.save_feed_cursor("relay", entries[0].0).await.unwrap();
        store.save_feed_cursor("relay", 0).await.unwrap();
        assert_eq!(
            store.feed_cursor("relay").await.unwrap(),
            entries[0].0,
            "never moves back"
        );
        assert!(store.feed_after(entries[0].0, 10).await.unwrap().is_empty());
        assert!(
            store.feed_after(0, 10).await.unwrap().is_empty(),
            "passed entries are pruned"
        );
    }

    crate::contract_tests!(async { Some(SqliteStore::in_memory()) });

    mod on_disk {
        use super::*;
        use std::sync::atomic::AtomicU32;
        static N: AtomicU32 = AtomicU32::new(0);
        fn fresh() -> SqliteStore {
            let dir = std::env::temp_dir().join(format!(
                "taskledger-contract-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            SqliteStore::open(&dir).expect("open store")
        }
        crate::contract_tests!(async { Some(fresh()) });
    }

    #[tokio::test]
    async fn data_survives_reopening_the_file() {
        let dir = std::env::temp_dir().join(format!("taskledger-reopen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let id = {
            let store = SqliteStore::open(&dir).unwrap();
            crate::contract::create_task(&store, "reopen", "ctx").await
        };
        let store = SqliteStore::open(&dir).unwrap();
        let loaded = store.load(&id).await.unwrap().expect("task survives");
        assert_eq!(loaded.snapshot["version"], 3);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
