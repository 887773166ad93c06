//! A VFS over SQLite's own (`unix`) that gathers a transaction's WAL frames into one write.
//!
//! SQLite appends each WAL frame with two `pwrite`s — its 24-byte header, then the page — and a
//! commit writes ~13 frames: the kernel's buffered-write path was ~20 % of the server's CPU at
//! one client (ADR 027). Here a WAL file keeps contiguous appends in a buffer and writes them in
//! one call when:
//! - the page of a **commit frame** (a frame header whose "database size after commit" field is
//!   not zero) has been appended — inside that page's own `xWrite`, so a failed write fails the
//!   commit exactly as before, and the frames are in the file before SQLite publishes them in
//!   the WAL index (readers only read published frames);
//! - a write is not contiguous with the buffer, or would pass `GATHER_BYTES`;
//! - any other call reaches the file (read, sync, truncate, size, file control, close).
//!
//! Every other file (the database, its `-shm`, journals) is SQLite's own, untouched. Nothing is
//! acknowledged that is not in the kernel: a commit's frames are written before its `COMMIT`
//! returns, as without the buffer.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use rusqlite::ffi;

/// The name connections open the store with.
pub(super) const VFS_NAME: &CStr = c"taskledger-gather";

/// The most a WAL file keeps before writing: SQLite's unix VFS writes at most 128 KiB - 1 bytes
/// a call (`seekAndWriteFd` masks the length), and a commit is ~13 frames (~54 KB).
pub(super) const GATHER_BYTES: usize = 120 * 1024;

/// A WAL frame's header (page number, database size after commit, salts, checksums).
const FRAME_HEADER_BYTES: usize = 24;

/// The VFS's name once registered; `None` when SQLite has no default VFS to wrap (the store then
/// opens with SQLite's own).
pub(super) fn registered() -> Option<&'static CStr> {
    static NAME: OnceLock<Option<&'static CStr>> = OnceLock::new();
    *NAME.get_or_init(|| {
        // SAFETY: `sqlite3_vfs_find` returns SQLite's registered default VFS, which lives as long
        // as the process; ours is leaked, as SQLite requires a registered VFS to outlive its use.
        unsafe {
            let base = ffi::sqlite3_vfs_find(std::ptr::null());
            if base.is_null() {
                return None;
            }
            let mut vfs = *base;
            vfs.zName = VFS_NAME.as_ptr();
            vfs.pNext = std::ptr::null_mut();
            vfs.szOsFile = (*base).szOsFile + std::mem::size_of::<Gathered>() as c_int;
            vfs.xOpen = Some(open);
            BASE.set(Base(base)).ok()?;
            let vfs = Box::leak(Box::new(vfs));
            (ffi::sqlite3_vfs_register(vfs, 0) == ffi::SQLITE_OK).then_some(VFS_NAME)
        }
    })
}

/// SQLite's VFS under ours.
struct Base(*mut ffi::sqlite3_vfs);
// SAFETY: a registered VFS is immutable and safe to use from any thread (SQLite's contract).
unsafe impl Send for Base {}
unsafe impl Sync for Base {}
static BASE: OnceLock<Base> = OnceLock::new();

/// A WAL file: SQLite's own file right after it in the same allocation.
#[repr(C)]
struct Gathered {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// Appends not yet written, starting at `at`.
    pending: Vec<u8>,
    at: i64,
    /// The last append was a commit frame's header: its page ends the batch.
    commit_next: bool,
}

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let Some(Base(base)) = BASE.get() else {
        return ffi::SQLITE_ERROR;
    };
    let base = *base;
    let Some(base_open) = (*base).xOpen else {
        return ffi::SQLITE_ERROR;
    };
    if flags & ffi::SQLITE_OPEN_WAL == 0 {
        return base_open(base, name, file, flags, out_flags);
    }
    let g = file.cast::<Gathered>();
    let real = g.add(1).cast::<ffi::sqlite3_file>();
    g.write(Gathered {
        base: ffi::sqlite3_file {
            pMethods: std::ptr::null(),
        },
        real,
        pending: Vec::new(),
        at: 0,
        commit_next: false,
    });
    let rc = base_open(base, name, real, flags, out_flags);
    if rc == ffi::SQLITE_OK && !(*real).pMethods.is_null() {
        (*g).base.pMethods = &METHODS;
    }
    rc
}

/// Writes what is pending; the buffer is empty afterwards whatever the outcome.
unsafe fn flush(g: &mut Gathered) -> c_int {
    if g.pending.is_empty() {
        return ffi::SQLITE_OK;
    }
    let rc = match (*(*g.real).pMethods).xWrite {
        Some(write) => write(
            g.real,
            g.pending.as_ptr().cast(),
            g.pending.len() as c_int,
            g.at,
        ),
        None => ffi::SQLITE_IOERR_WRITE,
    };
    g.pending.clear();
    g.commit_next = false;
    rc
}

unsafe fn gathered<'a>(f: *mut ffi::sqlite3_file) -> &'a mut Gathered {
    &mut *f.cast::<Gathered>()
}

unsafe extern "C" fn write(
    f: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let g = gathered(f);
    let Ok(n) = usize::try_from(amount) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    if n == 0 {
        return ffi::SQLITE_OK;
    }
    if buf.is_null() {
        return ffi::SQLITE_IOERR_WRITE;
    }
    let data = std::slice::from_raw_parts(buf.cast::<u8>(), n);
    // This write is a commit frame's page: the batch ends with it, whatever is flushed first.
    let ends_commit = std::mem::take(&mut g.commit_next);
    let contiguous = offset == g.at + g.pending.len() as i64;
    if !contiguous || g.pending.len() + n > GATHER_BYTES {
        let rc = flush(g);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        g.at = offset;
    }
    if n > GATHER_BYTES {
        return match (*(*g.real).pMethods).xWrite {
            Some(w) => w(g.real, buf, amount, offset),
            None => ffi::SQLITE_IOERR_WRITE,
        };
    }
    g.pending.extend_from_slice(data);
    if ends_commit {
        return flush(g);
    }
    g.commit_next = n == FRAME_HEADER_BYTES && data[4..8] != [0; 4];
    ffi::SQLITE_OK
}

unsafe extern "C" fn close(f: *mut ffi::sqlite3_file) -> c_int {
    let g = gathered(f);
    let flushed = flush(g);
    let real = g.real;
    let closed = match (*(*real).pMethods).xClose {
        Some(c) => c(real),
        None => ffi::SQLITE_OK,
    };
    std::ptr::drop_in_place(f.cast::<Gathered>());
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

/// A method that forwards to SQLite's file after writing what is pending.
macro_rules! forward {
    ($name:ident, $method:ident, ($($arg:ident: $ty:ty),*) -> $ret:ty, $absent:expr) => {
        unsafe extern "C" fn $name(f: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> $ret {
            let g = gathered(f);
            let rc = flush(g);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            match (*(*g.real).pMethods).$method {
                Some(m) => m(g.real $(, $arg)*),
                None => $absent,
            }
        }
    };
}

forward!(read, xRead, (buf: *mut c_void, amount: c_int, offset: i64) -> c_int, ffi::SQLITE_IOERR_READ);
forward!(truncate, xTruncate, (size: i64) -> c_int, ffi::SQLITE_IOERR_TRUNCATE);
forward!(sync, xSync, (flags: c_int) -> c_int, ffi::SQLITE_IOERR_FSYNC);
forward!(file_size, xFileSize, (size: *mut i64) -> c_int, ffi::SQLITE_IOERR_FSTAT);
forward!(lock, xLock, (level: c_int) -> c_int, ffi::SQLITE_OK);
forward!(unlock, xUnlock, (level: c_int) -> c_int, ffi::SQLITE_OK);
forward!(reserved, xCheckReservedLock, (out: *mut c_int) -> c_int, ffi::SQLITE_OK);
forward!(control, xFileControl, (op: c_int, arg: *mut c_void) -> c_int, ffi::SQLITE_NOTFOUND);
forward!(shm_map, xShmMap, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void) -> c_int, ffi::SQLITE_IOERR_SHMMAP);
forward!(shm_lock, xShmLock, (offset: c_int, n: c_int, flags: c_int) -> c_int, ffi::SQLITE_IOERR_SHMLOCK);
forward!(shm_unmap, xShmUnmap, (delete: c_int) -> c_int, ffi::SQLITE_OK);
forward!(fetch, xFetch, (offset: i64, amount: c_int, out: *mut *mut c_void) -> c_int, ffi::SQLITE_OK);
forward!(unfetch, xUnfetch, (offset: i64, p: *mut c_void) -> c_int, ffi::SQLITE_OK);

unsafe extern "C" fn sector_size(f: *mut ffi::sqlite3_file) -> c_int {
    let g = gathered(f);
    match (*(*g.real).pMethods).xSectorSize {
        Some(m) => m(g.real),
        None => 4096,
    }
}

unsafe extern "C" fn characteristics(f: *mut ffi::sqlite3_file) -> c_int {
    let g = gathered(f);
    match (*(*g.real).pMethods).xDeviceCharacteristics {
        Some(m) => m(g.real),
        None => 0,
    }
}

unsafe extern "C" fn shm_barrier(f: *mut ffi::sqlite3_file) {
    let g = gathered(f);
    // A WAL file has no shared memory of its own; written first all the same.
    let _ = flush(g);
    if let Some(m) = (*(*g.real).pMethods).xShmBarrier {
        m(g.real)
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(reserved),
    xFileControl: Some(control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::{Connection, OpenFlags};

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tl-gather-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("db.sqlite")
    }

    /// A writer through the gathering VFS, in WAL mode, checkpointing left to the test.
    fn writer(path: &std::path::Path) -> Connection {
        let vfs = registered().expect("the VFS registers");
        let conn = Connection::open_with_flags_and_vfs(path, OpenFlags::default(), vfs).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        conn.execute_batch("CREATE TABLE t (n INTEGER, b BLOB)")
            .unwrap();
        conn
    }

    fn wal_len(path: &std::path::Path) -> u64 {
        std::fs::metadata(path.with_extension("sqlite-wal")).map_or(0, |m| m.len())
    }

    /// Rows of `t` as a connection sees them.
    fn count_rows(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM t", [], |x| x.get(0))
            .unwrap()
    }

    /// What `PRAGMA integrity_check` says of the file.
    fn integrity(conn: &Connection) -> String {
        conn.query_row("PRAGMA integrity_check", [], |x| x.get(0))
            .unwrap()
    }

    #[test]
    fn a_commit_is_in_the_file_when_it_returns_and_another_connection_reads_it() {
        let path = scratch("commit");
        let w = writer(&path);
        // SQLite's own VFS on the other side: it sees only what reached the file.
        let r = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        for n in 1..=20 {
            w.execute("INSERT INTO t VALUES (?1, randomblob(600))", [n])
                .unwrap();
            let before = wal_len(&path);
            assert_eq!(
                (before - 32) % (4096 + 24),
                0,
                "whole frames, nothing held back"
            );
            let seen = count_rows(&r);
            assert_eq!(seen, n);
        }
        let ok = integrity(&r);
        assert_eq!(ok, "ok");
    }

    #[test]
    fn a_transaction_larger_than_the_gathering_bound_commits_whole() {
        let path = scratch("large");
        let w = writer(&path);
        let rows = 3 * GATHER_BYTES / 4000;
        w.execute_batch("BEGIN").unwrap();
        for n in 0..rows {
            w.execute("INSERT INTO t VALUES (?1, randomblob(4000))", [n as i64])
                .unwrap();
        }
        w.execute_batch("COMMIT").unwrap();
        let r = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let seen = count_rows(&r);
        assert_eq!(seen as usize, rows);
        // The WAL copied back and begun again: the gathered writes land at its start.
        w.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))
            .unwrap();
        w.execute("INSERT INTO t VALUES (-1, x'00')", []).unwrap();
        let seen = count_rows(&r);
        assert_eq!(seen as usize, rows + 1);
        let ok = integrity(&r);
        assert_eq!(ok, "ok");
    }

    /// Appends to a WAL file opened through the VFS directly: held up to the bound, written one
    /// byte past it; a commit frame's page and a read write what is held.
    #[test]
    fn appends_are_held_up_to_the_bound_and_written_one_past_it() {
        let path = scratch("bound");
        drop(writer(&path));
        let wal = path.with_extension("sqlite-wal");
        let name = std::ffi::CString::new(wal.to_str().unwrap()).unwrap();
        let vfs = unsafe { ffi::sqlite3_vfs_find(VFS_NAME.as_ptr()) };
        assert!(!vfs.is_null());
        let size = unsafe { (*vfs).szOsFile } as usize;
        let mut mem = vec![0u64; size.div_ceil(8)];
        let file = mem.as_mut_ptr().cast::<ffi::sqlite3_file>();
        let flags = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE | ffi::SQLITE_OPEN_WAL;
        let mut out = 0;
        let rc = unsafe { ((*vfs).xOpen.unwrap())(vfs, name.as_ptr(), file, flags, &mut out) };
        assert_eq!(rc, ffi::SQLITE_OK);
        let methods = unsafe { &*(*file).pMethods };
        let put = |bytes: &[u8], at: i64| unsafe {
            (methods.xWrite.unwrap())(file, bytes.as_ptr().cast(), bytes.len() as c_int, at)
        };
        let on_disk = || std::fs::metadata(&wal).unwrap().len();
        let start = on_disk();

        // At the bound: held.
        let chunk = vec![7u8; GATHER_BYTES];
        assert_eq!(put(&chunk, start as i64), ffi::SQLITE_OK);
        assert_eq!(on_disk(), start);
        // One byte past it: what was held is written first, the byte is held.
        assert_eq!(
            put(&[1], (start as usize + GATHER_BYTES) as i64),
            ffi::SQLITE_OK
        );
        assert_eq!(on_disk(), start + GATHER_BYTES as u64);

        // A commit frame's header (database size after commit set), then its page: written.
        let at = start as i64 + GATHER_BYTES as i64 + 1;
        let mut header = [0u8; FRAME_HEADER_BYTES];
        header[4..8].copy_from_slice(&1u32.to_be_bytes());
        assert_eq!(put(&header, at), ffi::SQLITE_OK);
        assert_eq!(on_disk(), start + GATHER_BYTES as u64);
        assert_eq!(
            put(&[9u8; 4096], at + FRAME_HEADER_BYTES as i64),
            ffi::SQLITE_OK
        );
        let end = at as u64 + FRAME_HEADER_BYTES as u64 + 4096;
        assert_eq!(on_disk(), end);

        // A frame that does not commit is held until a read comes.
        let mut other = [0u8; FRAME_HEADER_BYTES];
        other[0..4].copy_from_slice(&2u32.to_be_bytes());
        assert_eq!(put(&other, end as i64), ffi::SQLITE_OK);
        assert_eq!(on_disk(), end);
        let mut back = [0u8; FRAME_HEADER_BYTES];
        let rc = unsafe {
            (methods.xRead.unwrap())(
                file,
                back.as_mut_ptr().cast(),
                back.len() as c_int,
                end as i64,
            )
        };
        assert_eq!(rc, ffi::SQLITE_OK);
        assert_eq!(back, other);
        assert_eq!(unsafe { (methods.xClose.unwrap())(file) }, ffi::SQLITE_OK);
    }
}
