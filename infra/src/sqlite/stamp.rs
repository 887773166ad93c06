//! The store's change stamp (`TaskReadModel::change_stamp`, ADR 026): two counters that every
//! writer of the database moves around each of its commits, read with two memory loads.
//!
//! - `begun` moves in SQLite's commit hook, which runs under the database's write lock before
//!   the commit becomes visible to any reader;
//! - `ended` is raised to that value once the commit is done, before anyone hears of it.
//!
//! A reader that finds the two equal knows that every commit begun so far is visible and that
//! none is under way: what it reads after taking the stamp is current for as long as the stamp
//! reads the same. Writers are serialised by SQLite's write lock, so a commit that has begun
//! follows every commit that began before it; a writer that dies between the two steps leaves
//! `begun` ahead of `ended` (no stamp, answers read afresh) until the next commit ends.
//!
//! On a file the counters live in a small file beside the database (`STAMP_FILE`), mapped
//! shared by every process that opens the store, so a commit of the `work` or `redrive`
//! subcommand or of a second server moves the stamp the first server reads. A private
//! in-memory database keeps them on the heap.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::{MmapOptions, MmapRaw};

/// Name of the stamp file under the data directory: two native-endian 64-bit counters.
pub const STAMP_FILE: &str = "taskledger.stamp";
/// Bytes of the stamp file: the two counters. A shorter file is extended with zeros; a longer
/// one is left as it is.
const STAMP_BYTES: u64 = 16;

/// The change stamp's counters and, for this store's writer connection, the last value it began.
pub(super) struct ChangeStamp {
    cells: Cells,
    /// What this store's writer connection last set `begun` to (its commit hook), for `end`.
    last_begun: AtomicU64,
}

enum Cells {
    Private(Box<[AtomicU64; 2]>),
    /// Mapped for as long as the stamp lives, read and written through `counters`.
    Shared(MmapRaw),
}

impl ChangeStamp {
    /// Counters of a database no other process opens.
    pub(super) fn private() -> Self {
        Self::with(Cells::Private(Box::new([
            AtomicU64::new(0),
            AtomicU64::new(0),
        ])))
    }

    /// The counters every process that opens the store under `data_dir` shares.
    pub(super) fn shared(data_dir: &Path) -> std::io::Result<Self> {
        let file = crate::files::open_shared(&data_dir.join(STAMP_FILE))?;
        if file.metadata()?.len() < STAMP_BYTES {
            // Zeros: nothing begun, nothing ended. Two processes creating it at once both write
            // zeros over zeros.
            file.set_len(STAMP_BYTES)?;
        }
        let map = MmapOptions::new()
            .len(STAMP_BYTES as usize)
            .map_raw(&file)?;
        Ok(Self::with(Cells::Shared(map)))
    }

    fn with(cells: Cells) -> Self {
        Self {
            cells,
            last_begun: AtomicU64::new(0),
        }
    }

    fn counters(&self) -> &[AtomicU64; 2] {
        match &self.cells {
            Cells::Private(c) => c,
            // SAFETY: the mapping is page-aligned and STAMP_BYTES (two u64s) long, lives as long
            // as `self`, is shared writable memory (not a copy), and every process touches it
            // only through these atomics. The file is never shortened by this program.
            Cells::Shared(map) => unsafe { &*map.as_mut_ptr().cast::<[AtomicU64; 2]>() },
        }
    }

    /// The stamp: `Some` while no commit is under way, the same value until the next begins.
    pub(super) fn read(&self) -> Option<u64> {
        let [begun, ended] = self.counters();
        let e = ended.load(Ordering::SeqCst);
        let b = begun.load(Ordering::SeqCst);
        (b == e).then_some(e)
    }

    /// A commit of this store's writer connection is about to become visible (its commit hook,
    /// under SQLite's write lock).
    pub(super) fn begin(&self) {
        let n = self.counters()[0].fetch_add(1, Ordering::SeqCst) + 1;
        self.last_begun.store(n, Ordering::SeqCst);
    }

    /// What this store's writer connection last set `begun` to.
    pub(super) fn last_begun(&self) -> u64 {
        self.last_begun.load(Ordering::SeqCst)
    }

    /// The writer connection's commits are done (after each write on it; nothing when it
    /// committed nothing since the last call).
    pub(super) fn end(&self) {
        let n = self.last_begun.load(Ordering::SeqCst);
        self.counters()[1].fetch_max(n, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> std::path::PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let d = std::env::temp_dir().join(format!(
            "taskledger-stamp-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn given_no_commit_when_read_then_the_stamp_stays() {
        let s = ChangeStamp::private();
        assert_eq!(s.read(), Some(0));
        s.end();
        assert_eq!(s.read(), Some(0));
    }

    #[test]
    fn given_a_commit_under_way_when_read_then_there_is_no_stamp_until_it_ends() {
        let s = ChangeStamp::private();
        s.begin();
        assert_eq!(s.read(), None);
        s.end();
        assert_eq!(s.read(), Some(1));
    }

    #[test]
    fn given_two_handles_on_one_file_when_one_commits_then_the_other_sees_the_stamp_move() {
        let d = dir();
        let (a, b) = (
            ChangeStamp::shared(&d).unwrap(),
            ChangeStamp::shared(&d).unwrap(),
        );
        let before = a.read().unwrap();
        b.begin();
        assert_eq!(a.read(), None, "a commit of the other handle is under way");
        b.end();
        let after = a.read().unwrap();
        assert_ne!(after, before);
        assert_eq!(b.read(), Some(after));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn given_a_writer_that_died_mid_commit_when_the_next_commit_ends_then_the_stamp_is_back() {
        let d = dir();
        let dead = ChangeStamp::shared(&d).unwrap();
        dead.begin(); // never ends
        let next = ChangeStamp::shared(&d).unwrap();
        assert_eq!(next.read(), None);
        next.begin();
        next.end();
        assert_eq!(next.read(), Some(2));
        // The dead writer's late end, were it to come, does not move `ended` back.
        dead.end();
        assert_eq!(next.read(), Some(2));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn given_an_existing_stamp_file_when_opened_again_then_its_counters_carry_on() {
        let d = dir();
        let first = ChangeStamp::shared(&d).unwrap();
        first.begin();
        first.end();
        drop(first);
        assert_eq!(ChangeStamp::shared(&d).unwrap().read(), Some(1));
        // A file cut short (by hand) is extended with zeros, never read past its end.
        std::fs::write(d.join(STAMP_FILE), [0u8; 3]).unwrap();
        assert_eq!(ChangeStamp::shared(&d).unwrap().read(), Some(0));
        std::fs::remove_dir_all(d).unwrap();
    }
}
