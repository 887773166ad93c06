//! The in-memory store (`--in-memory`, tests): the same store on a database that lives in the
//! process's memory. A file of SQLite's `memdb` VFS, read through a page cache like a file on
//! disk: a `:memory:` database's page cache is the database itself, and SQLite scans the whole
//! cache at the end of every transaction (`pcache1TruncateUnsafe`), so its commits grew slower
//! as it grew — 1,600 sends a second after ~10,000 tasks against ~7,400 on disk, the writer
//! spending ~40 % of its time in that scan.

use rusqlite::{Connection, OpenFlags};

use super::schema::SCHEMA;
use super::stamp::ChangeStamp;
use super::{configure, SqliteStore, WRITER_CACHE_KIB};

/// The in-memory store's database: a file of SQLite's `memdb` VFS, private to its connection.
const MEMDB_URI: &str = "file:taskledger?vfs=memdb";
/// The most the in-memory store's database may hold, in bytes: `memdb` caps a file at 1 GiB
/// unless told otherwise ("database or disk is full" after ~100,000 tasks); the `:memory:`
/// database it replaced was bounded by the machine's memory alone, and so is this one.
const MEMDB_MAX_BYTES: i64 = i64::MAX;

/// Sets the `memdb` file's size limit (`SQLITE_FCNTL_SIZE_LIMIT`; a negative `bytes` only
/// reads it) and returns the limit in force.
fn memdb_size_limit(conn: &Connection, bytes: i64) -> rusqlite::Result<i64> {
    let mut limit = bytes;
    // SAFETY: the handle is this open connection's, used on this thread only for the call;
    // SQLITE_FCNTL_SIZE_LIMIT reads and writes the one `sqlite3_int64` it is given.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            rusqlite::ffi::SQLITE_FCNTL_SIZE_LIMIT,
            (&mut limit as *mut i64).cast(),
        )
    };
    match rc {
        rusqlite::ffi::SQLITE_OK => Ok(limit),
        code => Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(code),
            None,
        )),
    }
}

impl SqliteStore {
    /// A private in-memory store: one connection serves reads and writes; its page cache is
    /// the writer's (`WRITER_CACHE_KIB`), as on disk.
    pub fn in_memory() -> Self {
        // Opening an in-memory database cannot fail short of memory exhaustion.
        let conn = Connection::open_with_flags(
            MEMDB_URI,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .expect("in-memory SQLite");
        memdb_size_limit(&conn, MEMDB_MAX_BYTES).expect("in-memory SQLite's size limit");
        configure(&conn, false, WRITER_CACHE_KIB).expect("configure in-memory SQLite");
        conn.execute_batch(SCHEMA).expect("create schema");
        Self::from_parts(conn, Vec::new(), None, ChangeStamp::private())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::codec;

    /// Bytes of heap the connection's page cache holds (`SQLITE_DBSTATUS_CACHE_USED`).
    fn cache_used(conn: &Connection) -> i64 {
        let (mut used, mut highest) = (0, 0);
        // SAFETY: the handle is this open connection's; the call writes the two ints given.
        let rc = unsafe {
            rusqlite::ffi::sqlite3_db_status(
                conn.handle(),
                rusqlite::ffi::SQLITE_DBSTATUS_CACHE_USED,
                &mut used,
                &mut highest,
                0,
            )
        };
        assert_eq!(rc, rusqlite::ffi::SQLITE_OK);
        i64::from(used)
    }

    #[tokio::test]
    async fn given_an_in_memory_store_larger_than_its_page_cache_then_the_cache_stays_bounded() {
        // Five times the cache's worth of rows: a `:memory:` database keeps every page in its
        // cache (and SQLite scanned all of them at the end of each transaction).
        let store = SqliteStore::in_memory();
        let rows = WRITER_CACHE_KIB * 5 / 4;
        store
            .write(move |conn| {
                conn.execute_batch(&format!(
                    "CREATE TABLE bulk (n INTEGER PRIMARY KEY, b BLOB);
                     WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < {rows})
                     INSERT INTO bulk SELECT n, randomblob(4000) FROM k;"
                ))
                .map_err(codec::db_err)
            })
            .await
            .unwrap();
        let conn = store.inner.writer.lock().expect("writer");
        let count: i64 = conn
            .query_row("SELECT count(*) FROM bulk", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, rows, "every row is kept");
        let used = cache_used(&conn);
        assert!(
            used <= WRITER_CACHE_KIB * 1024 * 3 / 2,
            "the page cache holds {used} bytes for a cache of {WRITER_CACHE_KIB} KiB"
        );
    }

    #[test]
    fn an_in_memory_store_is_not_held_to_memdbs_default_size() {
        let store = SqliteStore::in_memory();
        let conn = store.inner.writer.lock().expect("writer");
        assert_eq!(memdb_size_limit(&conn, -1).unwrap(), MEMDB_MAX_BYTES);
    }
}
