//! The SQLite store's tables and indexes: the DDL every connection that writes runs at open
//! (`CREATE … IF NOT EXISTS`, so opening an existing file changes nothing), and the migrations
//! that bring a file written by an older version up to date.

use rusqlite::{Connection, OptionalExtension};
use taskledger_domain::task::TaskAggregate;

/// The condition "the task has finished", as every statement about finished tasks writes it: a
/// partial index serves only a query whose condition matches its own. Comparisons joined by
/// `OR`, not `state IN (…)`: SQLite evaluates an `IN` list of more than two constants through a
/// temporary b-tree it builds at every execution, and every write of a head checked the old and
/// the new row against `heads_finished` that way — three temporary b-trees a head write, ~3 % of
/// a SendMessage's server CPU (perf, issue 55).
macro_rules! finished_states {
    () => {
        "(state = 'TASK_STATE_COMPLETED' OR state = 'TASK_STATE_FAILED' \
         OR state = 'TASK_STATE_CANCELED' OR state = 'TASK_STATE_REJECTED')"
    };
}
pub(super) use finished_states;

/// `feed` numbers its entries by rowid without `AUTOINCREMENT` (ADR 027): the next entry is
/// the largest position + 1, and pruning keeps the entry at the lowest cursor (`feed.rs`), so
/// no position is handed out twice; `AUTOINCREMENT` cost every commit a write to
/// `sqlite_sequence` (0.47 WAL pages a commit). A file from before keeps its `AUTOINCREMENT`
/// table: both number the same way under that pruning.
///
/// `events` and `heads` are rowid tables (ADR 027): their rows (an event with its rendered
/// update, a head with its snapshot) are larger than a `WITHOUT ROWID` leaf keeps in place, and
/// spilled into overflow pages and rebalanced neighbours on every write. As rowid tables an
/// event is appended to the last page, shared by the commits of a transaction, and a head is
/// updated in place; their keys are unique indexes.
pub(super) const SCHEMA: &str = concat!(
    r#"
CREATE TABLE IF NOT EXISTS events (
    task_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT NOT NULL,
    event_version TEXT NOT NULL, payload TEXT NOT NULL, recorded_at INTEGER NOT NULL,
    generation INTEGER, status_state TEXT, status_update TEXT,
    PRIMARY KEY (task_id, seq));
CREATE TABLE IF NOT EXISTS heads (
    task_id TEXT NOT NULL PRIMARY KEY, tenant TEXT NOT NULL, owner TEXT NOT NULL,
    context_id TEXT NOT NULL, state TEXT NOT NULL, status_nanos INTEGER NOT NULL,
    version INTEGER NOT NULL, snapshot_schema INTEGER NOT NULL, snapshot TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS heads_by_owner ON heads (tenant, owner, status_nanos DESC, task_id DESC);
CREATE INDEX IF NOT EXISTS heads_by_context ON heads (tenant, owner, context_id, status_nanos DESC, task_id DESC);
CREATE INDEX IF NOT EXISTS heads_at_work ON heads (status_nanos, task_id)
    WHERE state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING');
CREATE INDEX IF NOT EXISTS heads_finished ON heads (status_nanos) WHERE "#,
    finished_states!(),
    r#";
CREATE TABLE IF NOT EXISTS members (
    tenant TEXT NOT NULL, subject TEXT NOT NULL, task_id TEXT NOT NULL,
    PRIMARY KEY (tenant, subject, task_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS members_by_task ON members (task_id);
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
    pos INTEGER PRIMARY KEY, task_id TEXT NOT NULL, seq INTEGER NOT NULL,
    event_type TEXT NOT NULL DEFAULT 'AgentWorkRequested', pushed TEXT, trace TEXT);
CREATE TABLE IF NOT EXISTS feed_cursors (
    consumer TEXT NOT NULL PRIMARY KEY, pos INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS push_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT, grp TEXT NOT NULL, task_id TEXT NOT NULL,
    config_id TEXT NOT NULL, seq INTEGER NOT NULL, delivery TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, first_ms INTEGER NOT NULL DEFAULT 0,
    due_ms INTEGER NOT NULL, dead INTEGER NOT NULL DEFAULT 0, reason TEXT);
CREATE INDEX IF NOT EXISTS push_outbox_by_group ON push_outbox (grp, dead, id);
CREATE INDEX IF NOT EXISTS push_outbox_by_due ON push_outbox (dead, due_ms);
CREATE INDEX IF NOT EXISTS push_outbox_by_delivery ON push_outbox (task_id, config_id, seq);
CREATE TABLE IF NOT EXISTS idempotency (
    tenant TEXT NOT NULL, owner TEXT NOT NULL, key TEXT NOT NULL,
    fingerprint TEXT NOT NULL, task_id TEXT NOT NULL,
    PRIMARY KEY (tenant, owner, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idempotency_by_task ON idempotency (task_id);
"#
);

/// Brings an older file up to date; each step checks what it changes first, so it runs once.
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    // Before the feed carried pushed updates, every entry was a work request.
    if !has_column(conn, "feed", "event_type")? {
        conn.execute_batch(
            "ALTER TABLE feed ADD COLUMN event_type TEXT NOT NULL DEFAULT 'AgentWorkRequested';
             ALTER TABLE feed ADD COLUMN pushed TEXT;",
        )?;
    }
    // Before work after a commit joined its trace (ADR 033), feed entries carried none.
    if !has_column(conn, "feed", "trace")? {
        conn.execute_batch("ALTER TABLE feed ADD COLUMN trace TEXT;")?;
    }
    // Before streams read the log, events carried no update.
    if !has_column(conn, "events", "generation")? {
        conn.execute_batch(
            "ALTER TABLE events ADD COLUMN generation INTEGER;
             ALTER TABLE events ADD COLUMN status_state TEXT;
             ALTER TABLE events ADD COLUMN status_update TEXT;",
        )?;
    }
    // Before ADR 027, events and heads were `WITHOUT ROWID` tables: rebuilt once as rowid
    // tables (their indexes with them).
    let rebuilt = rebuild_as_rowid_table(conn, "events")? | rebuild_as_rowid_table(conn, "heads")?;
    if rebuilt {
        conn.execute_batch(SCHEMA)?;
    }
    // Before issue 55, `heads_finished` named the finished states in an `IN (…)` list (see
    // `finished_states!`): made again with the condition every statement now uses.
    let finished: Option<String> = conn
        .prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'heads_finished'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    if finished.is_some_and(|sql| sql.contains(" IN (")) {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; DROP INDEX heads_finished; {SCHEMA} COMMIT;"
        ))?;
    }
    // Before tasks were shared with their participants' principals (ADR 021), nobody but the
    // owner saw a task: a file from then gets the members of its tasks once.
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version < SHARING_VERSION && has_table(conn, "heads")? {
        let heads: Vec<String> = conn
            .prepare("SELECT snapshot FROM heads")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for snap in heads {
            let Some(head) = serde_json::from_str::<TaskAggregate>(&snap)
                .ok()
                .and_then(|s| s.head)
            else {
                continue;
            };
            for m in head.shared_with() {
                conn.execute(
                    "INSERT OR IGNORE INTO members (tenant, subject, task_id) VALUES (?1, ?2, ?3)",
                    [m.tenant.as_str(), m.subject.as_str(), head.id.as_str()],
                )?;
            }
        }
        conn.execute_batch(&format!("PRAGMA user_version = {SHARING_VERSION}"))?;
    }
    Ok(())
}

/// The file's `user_version` once its tasks' members are indexed.
const SHARING_VERSION: i64 = 1;

/// Rebuilds `table` (a `WITHOUT ROWID` table of an older file) as SCHEMA defines it now, its
/// rows copied, in one transaction; whether it did.
fn rebuild_as_rowid_table(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    let sql: Option<String> = conn
        .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1")?
        .query_row([table], |r| r.get(0))
        .optional()?;
    if !sql.is_some_and(|s| s.to_ascii_uppercase().contains("WITHOUT ROWID")) {
        return Ok(false);
    }
    let definition = SCHEMA
        .split(';')
        .map(str::trim)
        .find(|d| d.starts_with(&format!("CREATE TABLE IF NOT EXISTS {table} (")))
        .ok_or_else(|| rusqlite::Error::InvalidParameterName(table.to_string()))?
        .replace(
            &format!("CREATE TABLE IF NOT EXISTS {table} ("),
            &format!("CREATE TABLE {table}_rebuilt ("),
        );
    conn.execute_batch(&format!(
        "BEGIN IMMEDIATE;
         {definition};
         INSERT INTO {table}_rebuilt SELECT * FROM {table};
         DROP TABLE {table};
         ALTER TABLE {table}_rebuilt RENAME TO {table};
         COMMIT;"
    ))?;
    Ok(true)
}

fn has_table(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    let mut stmt =
        conn.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")?;
    stmt.exists([table])
}

fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")?;
    stmt.exists([table, column])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_feed_written_before_pushed_updates_is_migrated_once() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE feed (pos INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL, seq INTEGER NOT NULL);
             INSERT INTO feed (task_id, seq) VALUES ('t', 3);
             CREATE TABLE events (task_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT NOT NULL,
                 event_version TEXT NOT NULL, payload TEXT NOT NULL, recorded_at INTEGER NOT NULL,
                 PRIMARY KEY (task_id, seq)) WITHOUT ROWID;",
        )
        .unwrap();
        migrate(&conn).unwrap();
        migrate(&conn).unwrap();
        let (kind, pushed, trace): (String, Option<String>, Option<String>) = conn
            .query_row("SELECT event_type, pushed, trace FROM feed", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!(kind, "AgentWorkRequested");
        assert_eq!((pushed, trace), (None, None));
    }

    #[test]
    fn events_written_before_streams_are_migrated_once_and_show_no_update() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE feed (pos INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL, seq INTEGER NOT NULL,
                 event_type TEXT NOT NULL DEFAULT 'AgentWorkRequested', pushed TEXT);
             CREATE TABLE events (task_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT NOT NULL,
                 event_version TEXT NOT NULL, payload TEXT NOT NULL, recorded_at INTEGER NOT NULL,
                 PRIMARY KEY (task_id, seq)) WITHOUT ROWID;
             INSERT INTO events VALUES ('t', 1, 'TaskCreated', '1.0', '{}', 0);",
        )
        .unwrap();
        migrate(&conn).unwrap();
        migrate(&conn).unwrap();
        let generation: Option<i64> = conn
            .query_row("SELECT generation FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(generation, None);
    }

    #[test]
    fn events_and_heads_of_a_file_from_before_adr_027_become_rowid_tables_once() {
        let conn = Connection::open_in_memory().unwrap();
        let old_schema = SCHEMA
            .replace(
                "PRIMARY KEY (task_id, seq));",
                "PRIMARY KEY (task_id, seq)) WITHOUT ROWID;",
            )
            .replace(
                "snapshot TEXT NOT NULL);",
                "snapshot TEXT NOT NULL) WITHOUT ROWID;",
            );
        conn.execute_batch(&old_schema).unwrap();
        conn.execute_batch(
            "INSERT INTO events VALUES ('t', 1, 'TaskCreated', '1.0', '{}', 5, 1, 'TASK_STATE_SUBMITTED', '{}');
             INSERT INTO heads VALUES ('t', 'acme', 'alice', 'c', 'TASK_STATE_SUBMITTED', 5, 1, 1, '{}');
             PRAGMA user_version = 1;",
        )
        .unwrap();
        let without_rowid = |table: &str| -> bool {
            conn.query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get::<_, String>(0),
            )
            .unwrap()
            .contains("WITHOUT ROWID")
        };
        assert!(without_rowid("events") && without_rowid("heads"));
        conn.execute_batch(SCHEMA).unwrap();
        migrate(&conn).unwrap();
        migrate(&conn).unwrap();
        assert!(!without_rowid("events") && !without_rowid("heads"));
        let event: (String, i64, Option<String>) = conn
            .query_row("SELECT task_id, seq, status_state FROM events", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!(event, ("t".into(), 1, Some("TASK_STATE_SUBMITTED".into())));
        let head: (String, i64) = conn
            .query_row(
                "SELECT owner, version FROM heads WHERE task_id = 't'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(head, ("alice".into(), 1));
        let indexes: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'heads' AND sql IS NOT NULL ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            indexes,
            [
                "heads_at_work",
                "heads_by_context",
                "heads_by_owner",
                "heads_finished"
            ]
        );
        let duplicate = conn.execute(
            "INSERT INTO events (task_id, seq, event_type, event_version, payload, recorded_at) \
             VALUES ('t', 1, 'X', '1.0', '{}', 6)",
            [],
        );
        assert!(duplicate.is_err(), "(task_id, seq) stays unique");
    }

    /// The opcodes SQLite compiles `sql` to.
    fn opcodes(conn: &Connection, sql: &str, params: usize) -> Vec<String> {
        let nulls = std::iter::repeat_n(rusqlite::types::Null, params);
        conn.prepare(&format!("EXPLAIN {sql}"))
            .unwrap()
            .query_map(rusqlite::params_from_iter(nulls), |r| r.get(1))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn writing_a_head_builds_no_temporary_b_tree() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        let ops = opcodes(&conn, super::super::commit::UPSERT_HEAD, 9);
        assert!(
            ops.iter().any(|o| o == "IdxInsert"),
            "the statement: {ops:?}"
        );
        assert!(
            !ops.iter().any(|o| o == "OpenEphemeral"),
            "a partial index's condition is checked by comparisons: {ops:?}"
        );
    }

    #[test]
    fn a_finished_index_from_before_issue_55_is_made_again_once_and_serves_the_reaper() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&SCHEMA.replace(
            finished_states!(),
            "state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', \
                 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')",
        ))
        .unwrap();
        conn.execute(
            "INSERT INTO heads VALUES ('t', 'acme', 'alice', 'c', 'TASK_STATE_FAILED', 5, 1, 1, '{}')",
            [],
        )
        .unwrap();
        let index_sql = |conn: &Connection| -> String {
            conn.query_row(
                "SELECT sql FROM sqlite_master WHERE name = 'heads_finished'",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert!(index_sql(&conn).contains(" IN ("));
        migrate(&conn).unwrap();
        let made = index_sql(&conn);
        assert!(made.contains(finished_states!()), "{made}");
        migrate(&conn).unwrap();
        assert_eq!(index_sql(&conn), made, "once");
        let finished: Vec<String> = conn
            .prepare(concat!(
                "SELECT task_id FROM heads INDEXED BY heads_finished WHERE ",
                finished_states!(),
                " AND status_nanos <= 9"
            ))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(finished, ["t"], "the rows are in the index made again");
    }

    #[test]
    fn a_file_from_before_sharing_gets_its_tasks_members_once() {
        use taskledger_domain::ids::{ContextId, Principal, TaskId};
        use taskledger_domain::task::{CreateTask, TaskCommand};
        use taskledger_domain::time::Timestamp;
        use taskledger_domain::wire::Message;
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        let mut state = TaskAggregate::default();
        let data = serde_json::from_value(serde_json::json!({
            "name": "n", "goal": "g",
            "participants": [
                {"id": "alice", "kind": "human", "role": "admin"},
                {"id": "bob", "kind": "human", "role": "watcher"}
            ]
        }))
        .unwrap();
        let events = state
            .decide(TaskCommand::CreateTask(CreateTask {
                task_id: TaskId::parse("t-old").unwrap(),
                context_id: ContextId::parse("c").unwrap(),
                owner: Principal::new("acme", "alice").unwrap(),
                message: Message::user_text("m", "hi"),
                at: Timestamp::from_unix_nanos(1),
                extension: Some(Box::new(data)),
                awaiting_assignee: None,
            }))
            .unwrap();
        for e in &events {
            state.apply_event(e);
        }
        conn.execute(
            "INSERT INTO heads VALUES ('t-old', 'acme', 'alice', 'c', 'TASK_STATE_WORKING', 1, 1, 1, ?1)",
            [serde_json::to_string(&state).unwrap()],
        )
        .unwrap();
        migrate(&conn).unwrap();
        migrate(&conn).unwrap();
        let members: Vec<(String, String, String)> = conn
            .prepare("SELECT tenant, subject, task_id FROM members")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(members, [("acme".into(), "bob".into(), "t-old".into())]);
    }
}
