//! The checkpointer: copies what the WAL gained into the database file, beside the writer, and
//! restarts the WAL from its first page once it has grown past `RESTART_AFTER_PAGES` (ADR 027).
//!
//! A passive checkpoint never waits for the writer, but it can only leave the whole WAL copied
//! while nobody commits; under steady commits the WAL then never restarts, grows to the
//! writer's backstop and is copied inside a commit (a 20-70 ms stall every half second at one
//! client). A restarting checkpoint holds the write lock for the little the passive rounds
//! before it left (`checkpoint_once`: they run until one finds little new, and what each
//! copied is synced outside the lock, `DatabaseFile`) and lets the next commit write at the
//! WAL's start again, over blocks the file already has.
//!
//! With the whole WAL copied it rests until a commit wakes it (`Wakeup`, `checkpoint_loop`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;

/// How often the checkpointer copies what the WAL gained into the database file. Under steady
/// commits every checkpoint finds the WAL past `RESTART_AFTER_PAGES` and restarts it, so this
/// sets how much a cycle copies and syncs at once: 15 ms against 30 ms gave a lower one-client
/// tail on the disk with more, smaller restarts (ADR 027); a longer cycle (4,000 pages) a higher.
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(15);
/// WAL pages (4 KiB each) after which a checkpoint also restarts the WAL from its first page.
pub const RESTART_AFTER_PAGES: i64 = 1_000;

/// What one checkpoint did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checkpoint {
    /// Copied what it could without waiting for anyone; `all_copied` when that was the whole
    /// WAL (nothing committed since: the checkpointer may rest).
    Passive { wal_pages: i64, all_copied: bool },
    /// Copied everything and restarted the WAL: the next commit writes at its start.
    Restarted { wal_pages: i64 },
}

/// Most WAL pages a passive round may have found new for the restart to follow it: the
/// restart copies and syncs what that round left behind under the write lock, commits waiting.
pub const RESTART_LEFTOVER_PAGES: i64 = 64;
/// Passive rounds at most after the first before a restart, however much each found new.
pub const CATCH_UP_ROUNDS: usize = 4;

/// What follows a passive round of a checkpoint whose WAL is past the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Another passive round: the last one found much new, under half what the one before it
    /// found (the rounds are shortening), and rounds are left.
    Copy,
    /// The restart: what the last round left behind is short, or the rounds stopped
    /// shortening (commits come as fast as a round copies them), or the rounds are spent.
    Restart,
}

/// After catch-up round `round` (1-based), which found `found_pages` new WAL pages where the
/// round before it found `before_pages`.
fn after_round(round: usize, before_pages: i64, found_pages: i64) -> Next {
    let shortening = found_pages.saturating_mul(2) < before_pages;
    if found_pages <= RESTART_LEFTOVER_PAGES || !shortening || round >= CATCH_UP_ROUNDS {
        Next::Restart
    } else {
        Next::Copy
    }
}

/// One checkpoint: passive; once the WAL is `RESTART_AFTER_PAGES` long, more passive rounds
/// until one finds little new, then a restart. `sync_database` makes what a round copied into
/// the database file durable (`DatabaseFile::sync`).
///
/// A restart holds the write lock while it copies what the passive round before it left
/// behind (the commits made while that round ran) and syncs the WAL and the database file.
/// A passive round under commits does not sync the database file (SQLite syncs it only once
/// the whole WAL is copied), so without a sync of our own the restart's sync, under the lock,
/// flushed every page the rounds before it had copied (1–2 ms a restart at one client). Each
/// round is therefore followed by that sync, outside the lock; each round copies only what
/// was committed during the one before (its copy and sync), so the rounds shorten, and what
/// the restart copies and syncs under the lock with them.
pub(super) fn checkpoint_once(
    conn: &Connection,
    mut sync_database: impl FnMut(),
) -> rusqlite::Result<Checkpoint> {
    let (mut wal_pages, all_copied) = passive(conn)?;
    if !needs_restart(wal_pages) {
        return Ok(Checkpoint::Passive {
            wal_pages,
            all_copied,
        });
    }
    sync_database();
    let mut found = wal_pages;
    for round in 1..=CATCH_UP_ROUNDS {
        let (now, all_copied) = passive(conn)?;
        sync_database();
        let before = found;
        found = now - wal_pages;
        wal_pages = now;
        if !needs_restart(wal_pages) {
            // The writer began the WAL again itself: it found all of it copied.
            return Ok(Checkpoint::Passive {
                wal_pages,
                all_copied,
            });
        }
        if after_round(round, before, found) == Next::Restart {
            break;
        }
    }
    // Busy (the first column) when a lock could not be had within the lock wait: the WAL is
    // then restarted at a later checkpoint.
    let busy = conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |r| r.get::<_, i64>(0))?;
    Ok(if busy == 0 {
        Checkpoint::Restarted { wal_pages }
    } else {
        Checkpoint::Passive {
            wal_pages,
            all_copied: false,
        }
    })
}

/// A passive checkpoint: copies what it can without waiting for anyone; the WAL's length in
/// pages, and whether all of it is copied now. Prepared once: the checkpointer runs it every
/// `CHECKPOINT_EVERY` under load.
fn passive(conn: &Connection) -> rusqlite::Result<(i64, bool)> {
    conn.prepare_cached("PRAGMA wal_checkpoint(PASSIVE)")?
        .query_row([], |r| {
            let (busy, wal, copied): (i64, i64, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
            Ok((wal, busy == 0 && copied == wal))
        })
}

/// Whether a WAL of `wal_pages` pages is restarted.
fn needs_restart(wal_pages: i64) -> bool {
    wal_pages >= RESTART_AFTER_PAGES
}

/// How often a resting checkpointer looks at the WAL without being woken: commits of this
/// store wake it (`Wakeup`); this is for those of another process on the same file.
pub const REST_LOOK_EVERY: Duration = Duration::from_secs(5);

/// Checkpoints every `CHECKPOINT_EVERY` while there is something to copy; once a checkpoint
/// finds the whole WAL copied it rests — looks again every `REST_LOOK_EVERY` — until a commit
/// wakes it, then takes up its cadence again. Ends when the store is dropped (every `Wakeup`
/// with it). An idle server's checkpointer no longer wakes 33 times a second; a commit made
/// between its last look and its rest is copied at the next look, or with the next commit's.
pub(super) fn checkpoint_loop(conn: Connection, woken: Receiver<()>, resting: Arc<AtomicBool>) {
    let database = DatabaseFile::of(&conn);
    let mut wait = CHECKPOINT_EVERY;
    loop {
        match woken.recv_timeout(wait) {
            // Woken by a commit: the cadence again, from now.
            Ok(()) => {
                wait = CHECKPOINT_EVERY;
                continue;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        wait = match checkpoint_once(&conn, || database.sync()) {
            Ok(Checkpoint::Passive {
                all_copied: true, ..
            }) => {
                // A commit from now on wakes it; one made since its look waits for the next.
                resting.store(true, Ordering::Release);
                REST_LOOK_EVERY
            }
            Ok(_) => CHECKPOINT_EVERY,
            // A checkpoint that cannot finish now is simply tried again next time.
            Err(e) => {
                tracing::debug!(error = %e, "checkpoint put off");
                CHECKPOINT_EVERY
            }
        };
    }
}

/// The database file a checkpointer copies into, opened a second time to sync it outside
/// SQLite's write lock. A sync through any descriptor of the file makes its written pages
/// durable; SQLite's own syncs are unchanged (an error the disk reports is seen by its
/// descriptor too), so this one only takes work off the restart's.
pub(super) struct DatabaseFile(Option<std::fs::File>);

impl DatabaseFile {
    /// The file of `conn`'s main database; none for an in-memory one, or one that cannot be
    /// opened again (the restart then syncs everything itself, as SQLite alone does).
    pub(super) fn of(conn: &Connection) -> Self {
        let file = conn.path().filter(|p| !p.is_empty()).and_then(|path| {
            std::fs::File::open(path)
                .inspect_err(|e| {
                    tracing::warn!(error = %e, path, "the checkpointer syncs inside the restart")
                })
                .ok()
        });
        Self(file)
    }

    /// Makes what is written to the file durable (`fdatasync`).
    pub(super) fn sync(&self) {
        if let Some(f) = &self.0 {
            if let Err(e) = f.sync_data() {
                // SQLite's restart syncs again, and reports it.
                tracing::warn!(error = %e, "database file sync failed");
            }
        }
    }
}

/// Wakes a resting checkpointer when something is committed. Cheap to clone; the checkpointer
/// ends once every clone is dropped.
#[derive(Clone)]
pub(super) struct Wakeup {
    resting: Arc<AtomicBool>,
    wake: Sender<()>,
}

impl Wakeup {
    /// A checkpointer's wake-up, with what `checkpoint_loop` takes.
    pub(super) fn new() -> (Self, Receiver<()>, Arc<AtomicBool>) {
        let (wake, woken) = std::sync::mpsc::channel();
        let resting = Arc::new(AtomicBool::new(false));
        let wakeup = Self {
            resting: resting.clone(),
            wake,
        };
        (wakeup, woken, resting)
    }

    /// After a commit: wakes the checkpointer if it rests (once a rest: a load, no more, on
    /// the commits that follow).
    pub(super) fn committed(&self) {
        if self.resting.load(Ordering::Acquire) && self.resting.swap(false, Ordering::AcqRel) {
            let _ = self.wake.send(());
        }
    }
}

/// Attempts at a held lock that wait `FINE_LOCK_STEP` each (at least 100 ms in all).
pub const FINE_LOCK_ATTEMPTS: i32 = 2_000;
/// The wait between the first attempts: the locks of this store's own connections are held
/// for a commit or a checkpoint's last copy, tens of microseconds to a few milliseconds.
pub const FINE_LOCK_STEP: Duration = Duration::from_micros(50);
/// The wait between later attempts (another process holds the lock, or a long checkpoint).
pub const COARSE_LOCK_STEP: Duration = Duration::from_millis(5);
/// Attempts after the fine ones before a connection reports the store busy: with them, a
/// connection waits `BUSY_TIMEOUT_MS` in all.
pub const COARSE_LOCK_ATTEMPTS: i32 = ((super::BUSY_TIMEOUT_MS
    - FINE_LOCK_ATTEMPTS as u64 * FINE_LOCK_STEP.as_micros() as u64 / 1_000)
    / COARSE_LOCK_STEP.as_millis() as u64) as i32;

/// How long to wait before attempt `attempt + 1` at a lock another connection holds; `None`
/// once the wait is over. SQLite's own busy timeout sleeps 1, 2, 5, 10 … ms between attempts,
/// which turned every restarting checkpoint into a stall of several milliseconds.
pub(super) fn lock_wait(attempt: i32) -> Option<Duration> {
    if attempt < FINE_LOCK_ATTEMPTS {
        Some(FINE_LOCK_STEP)
    } else if attempt < FINE_LOCK_ATTEMPTS + COARSE_LOCK_ATTEMPTS {
        Some(COARSE_LOCK_STEP)
    } else {
        None
    }
}

/// SQLite's busy handler for every connection of the store (see `lock_wait`).
pub(super) fn wait_for_lock(attempt: i32) -> bool {
    match lock_wait(attempt) {
        Some(step) => {
            std::thread::sleep(step);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &std::path::Path) -> Connection {
        let conn = Connection::open(path).unwrap();
        conn.busy_handler(Some(wait_for_lock)).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn
    }

    /// Pages in the WAL file (its 32-byte header, then 24-byte frame headers and pages).
    fn wal_frames(path: &std::path::Path) -> i64 {
        let len = std::fs::metadata(path.with_extension("sqlite-wal")).map_or(0, |m| m.len());
        (len.saturating_sub(32) / (4096 + 24)) as i64
    }

    /// Commits one 4 KiB row at a time until the WAL holds at least `pages` pages.
    fn fill_wal(conn: &Connection, path: &std::path::Path, pages: i64) -> i64 {
        let mut rows = 0;
        while wal_frames(path) < pages {
            conn.execute("INSERT INTO t VALUES (randomblob(4000))", [])
                .unwrap();
            rows += 1;
        }
        rows
    }

    /// The WAL header's checkpoint sequence: it moves when the WAL restarts.
    fn wal_generation(path: &std::path::Path) -> u32 {
        let wal = std::fs::read(path.with_extension("sqlite-wal")).unwrap();
        u32::from_be_bytes(wal[12..16].try_into().unwrap())
    }

    fn scratch(name: &str) -> (std::path::PathBuf, Connection, Connection) {
        let dir = std::env::temp_dir().join(format!("tl-ckpt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("db.sqlite");
        let (writer, checkpointer) = (open(&path), open(&path));
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        writer.execute_batch("CREATE TABLE t (b BLOB)").unwrap();
        (path, writer, checkpointer)
    }

    #[test]
    fn a_rest_is_ended_by_the_first_commit_after_it_and_only_that_one() {
        let (wakeup, woken, resting) = Wakeup::new();
        wakeup.committed();
        assert!(woken.try_recv().is_err(), "not resting: no wake-up");
        resting.store(true, Ordering::Release);
        wakeup.committed();
        wakeup.committed();
        assert!(woken.try_recv().is_ok(), "the first commit wakes it");
        assert!(woken.try_recv().is_err(), "the second does not again");
        assert!(!resting.load(Ordering::Acquire));
    }

    /// Commits a row, checkpoints: whether the checkpoint copied the whole WAL.
    fn all_copied_after_a_row(writer: &Connection, checkpointer: &Connection) -> bool {
        writer
            .execute("INSERT INTO t VALUES (randomblob(4000))", [])
            .unwrap();
        let done = checkpoint_once(checkpointer, || {}).unwrap();
        matches!(done, Checkpoint::Passive { all_copied, .. } if all_copied)
    }

    #[test]
    fn a_checkpoint_says_whether_it_copied_the_whole_wal() {
        let (path, writer, checkpointer) = scratch("all-copied");
        assert!(all_copied_after_a_row(&writer, &checkpointer));
        // A reader on the WAL as it is now: what is committed after it cannot be copied yet.
        let reader = open(&path);
        reader.execute_batch("BEGIN").unwrap();
        let _: i64 = reader
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert!(!all_copied_after_a_row(&writer, &checkpointer));
        reader.execute_batch("COMMIT").unwrap();
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_resting_checkpointer_woken_by_a_commit_copies_it_at_its_cadence() {
        let (path, writer, checkpointer) = scratch("rest");
        let (wakeup, woken, resting) = Wakeup::new();
        let flag = resting.clone();
        let thread = std::thread::spawn(move || checkpoint_loop(checkpointer, woken, flag));
        let wait_for = |what: &dyn Fn() -> bool, within: Duration| {
            let start = std::time::Instant::now();
            while !what() {
                assert!(start.elapsed() < within, "not within {within:?}");
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        wait_for(&|| resting.load(Ordering::Acquire), REST_LOOK_EVERY);
        let file_len = || std::fs::metadata(&path).unwrap().len();
        let before = file_len();
        // 100 KiB: the database file grows once the checkpointer copies it.
        writer
            .execute("INSERT INTO t VALUES (randomblob(100000))", [])
            .unwrap();
        assert_eq!(file_len(), before, "in the WAL only");
        wakeup.committed();
        // Long before its next look (REST_LOOK_EVERY), with room for a busy machine.
        wait_for(&|| file_len() > before, REST_LOOK_EVERY / 2);
        wait_for(&|| resting.load(Ordering::Acquire), REST_LOOK_EVERY / 2);
        drop(wakeup);
        thread.join().unwrap();
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_wal_is_restarted_from_the_bound_on() {
        assert!(!needs_restart(RESTART_AFTER_PAGES - 1));
        assert!(needs_restart(RESTART_AFTER_PAGES));
    }

    #[test]
    fn a_round_that_found_little_new_is_followed_by_the_restart() {
        let before = 10 * RESTART_LEFTOVER_PAGES;
        assert_eq!(
            after_round(1, before, RESTART_LEFTOVER_PAGES),
            Next::Restart
        );
        assert_eq!(
            after_round(1, before, RESTART_LEFTOVER_PAGES + 1),
            Next::Copy
        );
        assert_eq!(after_round(1, before, 0), Next::Restart);
    }

    #[test]
    fn a_round_that_did_not_halve_what_the_one_before_found_is_followed_by_the_restart() {
        let found = 4 * RESTART_LEFTOVER_PAGES;
        assert_eq!(after_round(1, 2 * found + 2, found), Next::Copy);
        assert_eq!(after_round(1, 2 * found + 1, found), Next::Copy);
        assert_eq!(after_round(1, 2 * found, found), Next::Restart);
        assert_eq!(after_round(1, found, found), Next::Restart);
    }

    #[test]
    fn the_restart_follows_the_last_round_however_much_it_found() {
        let (before, found) = (i64::MAX, i64::MAX / 4);
        assert_eq!(after_round(CATCH_UP_ROUNDS - 1, before, found), Next::Copy);
        assert_eq!(after_round(CATCH_UP_ROUNDS, before, found), Next::Restart);
    }

    #[test]
    fn given_a_wal_short_of_the_bound_when_checkpointed_then_it_is_copied_not_restarted() {
        let (path, writer, checkpointer) = scratch("short");
        fill_wal(&writer, &path, RESTART_AFTER_PAGES / 2);
        let done = checkpoint_once(&checkpointer, || {}).unwrap();
        assert!(
            matches!(done, Checkpoint::Passive { wal_pages, .. } if wal_pages < RESTART_AFTER_PAGES),
            "{done:?}"
        );
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn given_a_wal_past_the_bound_and_a_reader_when_checkpointed_then_the_next_commit_writes_at_its_start(
    ) {
        let (path, writer, checkpointer) = scratch("bound");
        let rows = fill_wal(&writer, &path, RESTART_AFTER_PAGES);
        let before = wal_generation(&path);
        // A reader in the middle of a read holds the WAL: the restart waits for it to end.
        let (began, read) = std::sync::mpsc::channel();
        let reader_path = path.clone();
        let ends = std::thread::spawn(move || {
            let mut reader = open(&reader_path);
            let reading = reader.transaction().unwrap();
            let count: i64 = reading
                .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
                .unwrap();
            began.send(count).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            reading.commit().unwrap();
        });
        assert_eq!(read.recv().unwrap(), rows);
        let done = checkpoint_once(&checkpointer, || {}).unwrap();
        ends.join().unwrap();
        assert!(
            matches!(done, Checkpoint::Restarted { wal_pages } if wal_pages >= RESTART_AFTER_PAGES),
            "{done:?}"
        );
        writer
            .execute("INSERT INTO t VALUES (randomblob(4000))", [])
            .unwrap();
        assert_eq!(wal_generation(&path), before + 1, "the WAL began again");
        let kept: i64 = writer
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, rows + 1, "every commit kept");
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn given_a_wal_past_the_bound_when_checkpointed_then_each_round_is_synced_while_commits_can_go_on(
    ) {
        let (path, writer, checkpointer) = scratch("synced");
        let rows = fill_wal(&writer, &path, RESTART_AFTER_PAGES);
        // No busy handler: a write lock held by anyone fails at once.
        let probe = Connection::open(&path).unwrap();
        let mut syncs = 0;
        let database = DatabaseFile::of(&checkpointer);
        let done = checkpoint_once(&checkpointer, || {
            probe
                .execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (zeroblob(10)); COMMIT")
                .expect("the write lock is free while the database file is synced");
            database.sync();
            syncs += 1;
        })
        .unwrap();
        // Restarted by the checkpoint, or by the probe's commit once a round left nothing
        // behind (a writer that finds the whole WAL copied begins it again).
        assert!(
            matches!(done, Checkpoint::Restarted { .. })
                || matches!(done, Checkpoint::Passive { wal_pages, .. } if wal_pages < RESTART_AFTER_PAGES),
            "{done:?}"
        );
        // The first round's copy, and the catch-up round's.
        assert!(syncs >= 2, "{syncs} syncs");
        let kept: i64 = writer
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, rows + syncs, "every commit kept");
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn the_database_file_of_a_store_on_disk_is_opened_to_sync_and_an_in_memory_one_has_none() {
        let (path, _writer, checkpointer) = scratch("file");
        assert!(DatabaseFile::of(&checkpointer).0.is_some());
        assert!(DatabaseFile::of(&Connection::open_in_memory().unwrap())
            .0
            .is_none());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn given_commits_while_it_runs_when_checkpointed_past_the_bound_then_it_catches_up_and_restarts(
    ) {
        let (path, writer, checkpointer) = scratch("busy");
        let rows = fill_wal(&writer, &path, RESTART_AFTER_PAGES);
        let before = wal_generation(&path);
        // A second writer commits a row every 100 us all through the checkpoint.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (busy_path, stopping) = (path.clone(), stop.clone());
        let busy = std::thread::spawn(move || {
            let other = open(&busy_path);
            let mut added = 0;
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                other
                    .execute("INSERT INTO t VALUES (randomblob(4000))", [])
                    .unwrap();
                added += 1;
                std::thread::sleep(Duration::from_micros(100));
            }
            added
        });
        std::thread::sleep(Duration::from_millis(5));
        let done = checkpoint_once(&checkpointer, || {}).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let added = busy.join().unwrap();
        // Restarted by the checkpoint, or by the busy writer once a round left nothing behind.
        assert!(
            matches!(done, Checkpoint::Restarted { .. })
                || matches!(done, Checkpoint::Passive { wal_pages, .. } if wal_pages < RESTART_AFTER_PAGES),
            "{done:?}"
        );
        writer
            .execute("INSERT INTO t VALUES (randomblob(4000))", [])
            .unwrap();
        assert!(wal_generation(&path) > before, "the WAL began again");
        let kept: i64 = writer
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, rows + added + 1, "every commit kept");
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn lock_waits_are_fine_first_then_coarse_then_over_after_about_the_busy_timeout() {
        assert_eq!(lock_wait(0), Some(FINE_LOCK_STEP));
        assert_eq!(lock_wait(FINE_LOCK_ATTEMPTS - 1), Some(FINE_LOCK_STEP));
        assert_eq!(lock_wait(FINE_LOCK_ATTEMPTS), Some(COARSE_LOCK_STEP));
        let last = FINE_LOCK_ATTEMPTS + COARSE_LOCK_ATTEMPTS - 1;
        assert_eq!(lock_wait(last), Some(COARSE_LOCK_STEP));
        assert_eq!(lock_wait(last + 1), None);
        let total: Duration = (0..=last).filter_map(lock_wait).sum();
        let timeout = Duration::from_millis(super::super::BUSY_TIMEOUT_MS);
        assert_eq!(total, timeout);
    }
}
