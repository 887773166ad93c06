//! The embedded default store: SQLite in one file (WAL), behind the same ports as DynamoDB.
//! Owns the store handle and its connections: one writer serialises appends, readers serve reads.

mod checkpoint;
mod codec;
mod commit;
mod events;
mod feed;
mod gather;
mod group;
mod housekeeping;
mod memory;
mod outbox;
mod reads;
mod scans;
mod schema;
mod stamp;
mod tail;
mod writer;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};
use taskledger_domain::ports::{Commit, StoreError};

use checkpoint::{checkpoint_loop, wait_for_lock, Wakeup};
use commit::CommitRows;
use scans::Scans;
use schema::{migrate, SCHEMA};
use stamp::ChangeStamp;
use tail::FeedTail;
use writer::{writer_loop, AfterWrite, WriteJob};

pub use group::MAX_GROUP_COMMIT;
pub use stamp::STAMP_FILE;
pub use tail::{FEED_TAIL_BYTES, FEED_TAIL_ENTRIES};

/// Name of the database file under the data directory.
pub const DB_FILE: &str = "taskledger.sqlite";
/// Reader connections opened next to the writer (file mode).
pub const READERS: usize = 4;
/// How long a connection waits for a lock before reporting the store busy (in the steps of
/// `checkpoint::lock_wait`).
const BUSY_TIMEOUT_MS: u64 = 5_000;
/// Page cache of the writer (and of the in-memory store's one connection), in KiB.
const WRITER_CACHE_KIB: i64 = 8_000;
/// Page cache of each reader, in KiB: a reader's cache starts empty after every commit of the
/// writer (WAL), so it only ever holds what one read touches.
const READER_CACHE_KIB: i64 = 1_000;
/// SQLite's memory in the whole process (`PRAGMA soft_heap_limit`), in bytes: past it, its page
/// caches reuse their pages instead of allocating more. Without it SQLite's heap grew under
/// concurrent ListTasks (each page counts the caller's index entries) until the server held
/// ~90–100 MB against ~50 under sends; with it and the scan threads (`scans.rs`) 53–64 MB, sends
/// and the one-client tail unchanged (ADR 027).
pub const HEAP_LIMIT_BYTES: i64 = 4 * 1024 * 1024;
/// Prepared statements each connection keeps (rusqlite's default, 16, is fewer than the writer
/// uses: a commit, the feed's cursor and the push outbox).
const STATEMENT_CACHE: usize = 64;
/// WAL pages after which the writer checkpoints itself: only when the checkpointer thread,
/// which copies the WAL into the database beside the writer, has fallen this far behind.
const WRITER_CHECKPOINT_BACKSTOP_PAGES: i64 = 20_000;
/// SQLite's own auto-checkpoint threshold, for a writer left without the checkpointer thread.
const SQLITE_AUTOCHECKPOINT_PAGES: i64 = 1_000;

#[derive(Debug, thiserror::Error)]
pub enum SqliteError {
    #[error("cannot open the SQLite store at {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("cannot open the store's change stamp at {path}: {source}")]
    Stamp {
        path: String,
        source: std::io::Error,
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
    /// The threads that run scans (`scans.rs`); `None`: the runtime's blocking pool.
    scans: Option<Scans>,
    /// What follows every write on the writer connection (the writer thread has a copy);
    /// dropped with the store, the checkpointer thread ends (file mode only).
    after_write: AfterWrite,
    /// What tells that the store changed (`TaskReadModel::change_stamp`), shared with every
    /// process that opens the same file.
    stamp: Arc<ChangeStamp>,
    /// The feed also carries the events a lifecycle bus is told of (ADR 038).
    lifecycle_feed: std::sync::atomic::AtomicBool,
    /// The feed's newest entries, as the writer thread committed them (`tail.rs`).
    tail: Arc<FeedTail>,
}

/// Opens the store's file through the VFS that gathers WAL frames (`gather.rs`), or SQLite's own
/// when it could not be registered.
fn open_file(path: &Path, flags: OpenFlags) -> rusqlite::Result<Connection> {
    match gather::registered() {
        Some(vfs) => Connection::open_with_flags_and_vfs(path, flags, vfs),
        None => Connection::open_with_flags(path, flags),
    }
}

fn configure(conn: &Connection, wal: bool, cache_kib: i64) -> rusqlite::Result<()> {
    conn.busy_handler(Some(wait_for_lock))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    if wal {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // Durable across a crash of the process; an OS crash may lose the last commits (ADR 002).
        conn.pragma_update(None, "synchronous", "NORMAL")?;
    }
    conn.pragma_update(None, "cache_size", -cache_kib)?;
    // Statement journals and sorts stay in memory: no temporary file per savepoint that spills.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    Ok(())
}

impl SqliteStore {
    /// Opens (or creates) `taskledger.sqlite` under `data_dir`.
    /// The directory is made private to the owner (and tightened if found looser, with a
    /// warning), the database file created private before SQLite opens it, so its `-wal` and
    /// `-shm` files, which SQLite creates with the database's permissions, are too.
    pub fn open(data_dir: &Path) -> Result<Self, SqliteError> {
        let dir_err = |source| SqliteError::DataDir {
            path: data_dir.display().to_string(),
            source,
        };
        for (path, mode) in crate::files::private_dir(data_dir).map_err(dir_err)? {
            tracing::warn!(path = %path.display(), mode = format!("{mode:o}"),
                "others could read or write this; now private to the owner");
        }
        let path = data_dir.join(DB_FILE);
        crate::files::create_private(&path).map_err(dir_err)?;
        let open_err = |source| SqliteError::Open {
            path: path.display().to_string(),
            source,
        };
        let writer = open_file(&path, OpenFlags::default()).map_err(open_err)?;
        configure(&writer, true, WRITER_CACHE_KIB).map_err(open_err)?;
        writer
            .pragma_update(None, "soft_heap_limit", HEAP_LIMIT_BYTES)
            .map_err(open_err)?;
        writer.execute_batch(SCHEMA).map_err(open_err)?;
        migrate(&writer).map_err(open_err)?;
        let mut readers = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            let r = open_file(
                &path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(open_err)?;
            configure(&r, false, READER_CACHE_KIB).map_err(open_err)?;
            readers.push(Mutex::new(r));
        }
        // Checkpoints run on their own connection and thread, not inside the writer's commits
        // (where one stalled every commit queued behind it for its copy and fsync).
        writer
            .pragma_update(None, "wal_autocheckpoint", WRITER_CHECKPOINT_BACKSTOP_PAGES)
            .map_err(open_err)?;
        let checkpointer = open_file(&path, OpenFlags::default()).map_err(open_err)?;
        configure(&checkpointer, true, READER_CACHE_KIB).map_err(open_err)?;
        let (wakeup, woken, resting) = Wakeup::new();
        let spawned = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || checkpoint_loop(checkpointer, woken, resting));
        if let Err(e) = spawned {
            // Without the thread the writer checkpoints itself again, at SQLite's default.
            tracing::warn!(error = %e, "no checkpointer thread; the writer checkpoints");
            writer
                .pragma_update(None, "wal_autocheckpoint", SQLITE_AUTOCHECKPOINT_PAGES)
                .map_err(open_err)?;
        }
        let stamp = ChangeStamp::shared(data_dir).map_err(|source| SqliteError::Stamp {
            path: data_dir.join(stamp::STAMP_FILE).display().to_string(),
            source,
        })?;
        Ok(Self::from_parts(writer, readers, Some(wakeup), stamp))
    }

    fn from_parts(
        writer: Connection,
        readers: Vec<Mutex<Connection>>,
        checkpoints: Option<Wakeup>,
        stamp: ChangeStamp,
    ) -> Self {
        let stamp = Arc::new(stamp);
        // Under SQLite's write lock, before the commit is visible: the stamp's `begun` moves.
        writer.commit_hook(Some({
            let stamp = stamp.clone();
            move || {
                stamp.begin();
                false
            }
        }));
        let writer = Arc::new(Mutex::new(writer));
        let (jobs, queue) = std::sync::mpsc::channel();
        let conn = writer.clone();
        let after_write = AfterWrite {
            checkpoints,
            stamp: stamp.clone(),
        };
        let tail = Arc::new(FeedTail::default());
        // The thread ends when the last store handle (and with it the sender) is dropped.
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn({
                let (after_write, tail) = (after_write.clone(), tail.clone());
                move || writer_loop(conn, queue, after_write, tail)
            })
            .ok();
        Self {
            inner: Arc::new(Inner {
                writer,
                jobs,
                scans: Scans::start(readers.len()),
                readers,
                next_reader: AtomicUsize::new(0),
                after_write,
                stamp,
                lifecycle_feed: std::sync::atomic::AtomicBool::new(false),
                tail,
            }),
        }
    }

    /// From now on the feed also carries every event a lifecycle bus is told of (status
    /// changes, artifact updates, gates, handoffs), for the relay to publish (ADR 038).
    pub fn feed_lifecycle(&self) {
        self.inner
            .lifecycle_feed
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    async fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        // Serialised here, on the committing task's thread: the writer thread only writes.
        let lifecycle = self
            .inner
            .lifecycle_feed
            .load(std::sync::atomic::Ordering::Relaxed);
        let rows = CommitRows::of(commit, lifecycle)?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.inner
            .jobs
            .send(WriteJob { rows, reply })
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

    /// Scans (ListTasks pages, counts) run on the scan threads.
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let this = self.clone();
        let Some(scans) = &self.inner.scans else {
            return tokio::task::spawn_blocking(move || this.read_now(f))
                .await
                .map_err(|e| StoreError::Other(format!("store task failed: {e}")))?;
        };
        let (reply, answer) = tokio::sync::oneshot::channel();
        if !scans.run(move || {
            let _ = reply.send(this.read_now(f));
        }) {
            return Err(StoreError::Unavailable(
                "the SQLite scan threads have stopped".into(),
            ));
        }
        answer
            .await
            .map_err(|_| StoreError::Other("a store scan failed".into()))?
    }
}

impl SqliteStore {
    /// The store's change stamp (`TaskReadModel::change_stamp`): `None` while a commit of any
    /// process is under way.
    fn stamp(&self) -> Option<u64> {
        self.inner.stamp.read()
    }

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
            let written = f(&conn);
            inner.after_write.done();
            written
        })
        .await
        .map_err(|e| StoreError::Other(format!("store task failed: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use taskledger_domain::ports::EventStore;

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

    pub(super) fn dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("taskledger-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn an_opened_store_bounds_sqlites_heap() {
        let dir = dir("heap-limit");
        let store = SqliteStore::open(&dir).expect("open");
        let conn = store.inner.writer.lock().expect("writer");
        let limit: i64 = conn
            .pragma_query_value(None, "soft_heap_limit", |r| r.get(0))
            .expect("read the limit");
        assert_eq!(limit, HEAP_LIMIT_BYTES);
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn given_two_stores_on_one_file_when_one_commits_then_the_others_stamp_moves() {
        let dir = dir("stamp-shared");
        let (a, b) = (
            SqliteStore::open(&dir).unwrap(),
            SqliteStore::open(&dir).unwrap(),
        );
        let before = a.stamp().expect("no commit under way");
        crate::contract::create_task(&b, "shared-stamp", "ctx").await;
        let after = a.stamp().expect("no commit under way");
        assert_ne!(after, before, "the other store's commit moved it");
        assert_eq!(b.stamp(), Some(after));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn given_a_commit_visible_but_not_ended_when_the_stamp_is_read_then_there_is_none() {
        for store in [
            SqliteStore::in_memory(),
            SqliteStore::open(&dir("stamp-mid")).unwrap(),
        ] {
            let before = store.stamp().expect("no commit under way");
            let stamp = store.inner.stamp.clone();
            let during = store
                .write(move |conn| {
                    conn.execute_batch("CREATE TABLE probe(x); INSERT INTO probe VALUES (1);")
                        .map_err(codec::db_err)?;
                    Ok(stamp.read())
                })
                .await
                .unwrap();
            assert_eq!(during, None, "committed, not yet ended");
            let after = store.stamp().expect("ended");
            assert_ne!(after, before);
            let stamp = store.inner.stamp.clone();
            let reading = store
                .write(move |conn| {
                    conn.query_row("SELECT COUNT(*) FROM probe", [], |r| r.get::<_, i64>(0))
                        .map_err(codec::db_err)?;
                    Ok(stamp.read())
                })
                .await
                .unwrap();
            assert_eq!(reading, Some(after), "a read on the writer begins nothing");
            assert_eq!(store.stamp(), Some(after));
        }
        let _ = std::fs::remove_dir_all(dir("stamp-mid"));
    }

    #[tokio::test]
    async fn history_rows_hold_what_the_tail_let_go_of_and_an_older_files_rows_past_it_are_not_read(
    ) {
        use rusqlite::params;
        use taskledger_domain::ids::HistoryLength;
        use taskledger_domain::ports::{TaskReadModel, ViewOptions};
        use taskledger_domain::task::RECENT_MESSAGES;
        let store = SqliteStore::in_memory();
        let id = crate::contract::create_task(&store, "t-rows", "c").await;
        let rows = |store: &SqliteStore| -> i64 {
            let conn = store.inner.writer.lock().unwrap();
            conn.query_row("SELECT COUNT(*) FROM history", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(rows(&store), 0, "the tail holds the creation's message");
        for i in 0..RECENT_MESSAGES {
            let cmd = crate::contract::append_cmd(&format!("m-{i}"), &format!("m{i}"));
            crate::contract::run(&store, &id, cmd).await.unwrap();
        }
        assert_eq!(rows(&store), 1, "one message left the tail");
        // A file written before ADR 029 has a row for every message, the tail's too: rows
        // past the first the tail holds are not read (here they differ, to tell).
        {
            let conn = store.inner.writer.lock().unwrap();
            for pos in 1..=RECENT_MESSAGES as i64 {
                conn.execute(
                    "INSERT INTO history (task_id, pos, message) VALUES (?1, ?2, ?3)",
                    params![
                        id.as_str(),
                        pos,
                        r#"{"messageId":"old","role":"ROLE_USER","parts":[{"text":"old row"}]}"#
                    ],
                )
                .unwrap();
            }
        }
        let view = store
            .get(
                &crate::contract::alice(),
                &id,
                ViewOptions::exact(HistoryLength::All, false),
            )
            .await
            .unwrap()
            .unwrap();
        let texts: Vec<String> = view.history.unwrap().iter().map(|m| m.text()).collect();
        let mut want = vec![texts[0].clone()];
        want.extend((0..RECENT_MESSAGES).map(|i| format!("m{i}")));
        assert_eq!(texts, want);
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
