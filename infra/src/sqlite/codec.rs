//! What every part of the SQLite store shares: SQLite errors as store errors, JSON columns,
//! and the wall clock in milliseconds.

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
