//! The SQLite store's tables and indexes: the DDL every connection that writes runs at open
//! (`CREATE … IF NOT EXISTS`, so opening an existing file changes nothing).

pub(super) const SCHEMA: &str = r#"
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
