//! What every part of the SQLite store shares: SQLite errors as store errors, JSON columns,
//! the wall clock in milliseconds, and the version a task's head is at.

use taskledger_domain::ports::StoreError;
use taskledger_domain::time::Timestamp;

pub(super) fn db_err(e: rusqlite::Error) -> StoreError {
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

pub(super) fn is_constraint(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation)
}

pub(super) fn json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Other(format!("cannot serialise: {e}")))
}

pub(super) fn parse<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(e.to_string()))
}

pub(super) fn now_ms() -> i64 {
    Timestamp::now().unix_nanos() / 1_000_000
}

/// The version the task's head is at, if the task exists (the writer's version check and the
/// state cache's read both ask this).
pub(super) fn head_version(
    conn: &rusqlite::Connection,
    task_id: &str,
) -> Result<Option<u64>, StoreError> {
    use rusqlite::OptionalExtension;
    conn.prepare_cached("SELECT version FROM heads WHERE task_id = ?1")
        .and_then(|mut s| s.query_row([task_id], |r| r.get::<_, i64>(0)).optional())
        .map(|v| v.map(|v| v as u64))
        .map_err(db_err)
}
