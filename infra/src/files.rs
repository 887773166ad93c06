//! Files the server keeps are its owner's alone: the data directory is made `0700` and every
//! file in it `0600` (the store, its write-ahead log and shared memory, the stamp, the keys),
//! and a directory or file found looser at start is tightened, each one reported so the caller
//! can warn. Every file the project creates is created here — new, or written beside its place
//! and renamed into it — and never through a symbolic link (a layout test checks that no other
//! product file opens one for writing). (Elsewhere than on Unix, permissions are left to the
//! platform.)

use std::io::Write;
use std::path::{Path, PathBuf};

/// Permissions of the data directory.
pub const DIR_MODE: u32 = 0o700;
/// Permissions of every file in it.
pub const FILE_MODE: u32 = 0o600;

/// Makes `dir` (and its parents) if missing, private to the owner; tightens it and every file
/// directly in it that others may read or write. Returns what was tightened, as
/// `(path, mode found)`.
pub fn private_dir(dir: &Path) -> std::io::Result<Vec<(PathBuf, u32)>> {
    if !dir.exists() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(DIR_MODE);
        }
        builder.create(dir)?;
    }
    let mut tightened = Vec::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mut tighten = |path: &Path, mode: u32| -> std::io::Result<()> {
            let found = std::fs::metadata(path)?.permissions().mode() & 0o777;
            if found & 0o077 != 0 {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
                tightened.push((path.to_path_buf(), found));
            }
            Ok(())
        };
        tighten(dir, DIR_MODE)?;
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                tighten(&entry.path(), FILE_MODE)?;
            }
        }
    }
    Ok(tightened)
}

/// Options opening a file private to the owner that never follows a symbolic link at its
/// last component (`O_NOFOLLOW`): every file this crate creates is opened with them.
fn private_options() -> std::fs::OpenOptions {
    #[allow(unused_mut)]
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(FILE_MODE).custom_flags(libc::O_NOFOLLOW);
    }
    options
}

/// Refuses a path that is a symbolic link or not a plain file.
fn plain_file(path: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is not a plain file (a link, a directory or a device)",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Makes `path` an empty private file if it does not exist (so a library that creates its
/// companions with the file's own permissions, as SQLite does its `-wal` and `-shm`, keeps
/// them private too); one that exists must be a plain file.
pub fn create_private(path: &Path) -> std::io::Result<()> {
    match private_options().write(true).create_new(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => plain_file(path),
        Err(e) => Err(e),
    }
}

/// Opens `path` to read and write in place, made private if it is new: a file several
/// processes share (the store's change stamp). Never through a link.
pub fn open_shared(path: &Path) -> std::io::Result<std::fs::File> {
    private_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// Creates `path` new, private, and writes `bytes` to it; an existing file (or link) there is
/// an error, never written through.
pub fn create_new_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = private_options().write(true).create_new(true).open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// A file on its way to `path`: written into a fresh private temporary file beside it
/// (created new, never through a link), and renamed over `path` by `commit` — so whatever was
/// at `path` before, a looser file or a link to another, is replaced, never written through,
/// and a reader sees the old content or the new, never a part. Dropped uncommitted, it leaves
/// nothing behind.
pub struct PrivateFile {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl PrivateFile {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let file = private_options().write(true).create_new(true).open(&tmp)?;
        Ok(Self {
            path: path.to_path_buf(),
            tmp,
            file: Some(std::io::BufWriter::new(file)),
        })
    }

    /// Syncs the file and puts it in place.
    pub fn commit(mut self) -> std::io::Result<()> {
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        let file = file.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&self.tmp, &self.path)
    }
}

impl Write for PrivateFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.file.as_mut() {
            Some(f) => f.write(buf),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for PrivateFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` to `path` whole, private to the owner (`PrivateFile`).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = PrivateFile::create(path)?;
    f.write_all(bytes)?;
    f.commit()
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    fn scratch() -> PathBuf {
        std::env::temp_dir().join(format!("tl-files-{}", uuid::Uuid::new_v4().simple()))
    }

    #[test]
    fn a_new_directory_and_its_files_are_private() {
        let dir = scratch().join("data");
        assert!(private_dir(&dir).unwrap().is_empty());
        assert_eq!(mode(&dir), DIR_MODE);
        let f = dir.join("a");
        create_private(&f).unwrap();
        assert_eq!(mode(&f), FILE_MODE);
        write_private(&dir.join("b"), b"secret").unwrap();
        assert_eq!(mode(&dir.join("b")), FILE_MODE);
        assert_eq!(std::fs::read(dir.join("b")).unwrap(), b"secret");
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_file_written_over_a_looser_one_or_a_link_replaces_it_and_never_writes_through() {
        let dir = scratch();
        std::fs::create_dir_all(&dir).unwrap();
        // A world-readable file where the export goes: replaced by a private one.
        let out = dir.join("export.ndjson");
        std::fs::write(&out, b"old").unwrap();
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&out, b"new").unwrap();
        assert_eq!(
            (mode(&out), std::fs::read(&out).unwrap()),
            (FILE_MODE, b"new".to_vec())
        );
        // A link to another file: the link is replaced, its target untouched.
        let target = dir.join("target");
        std::fs::write(&target, b"keep me").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_private(&link, b"tasks").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_file());
        assert_eq!(mode(&link), FILE_MODE);
        // Dropped uncommitted: nothing is left, the old content stays.
        let mut f = PrivateFile::create(&out).unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            3,
            "no temporary file left"
        );
        // Created new: never through a link, never over a file.
        let link2 = dir.join("link2");
        std::os::unix::fs::symlink(&target, &link2).unwrap();
        assert!(create_new_private(&link2, b"x").is_err());
        assert!(create_new_private(&out, b"x").is_err());
        assert!(
            create_private(&link2).is_err(),
            "an existing link is not a store file"
        );
        assert!(open_shared(&link2).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn looser_ones_found_at_start_are_tightened_and_reported() {
        let dir = scratch();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let f = dir.join("taskledger.sqlite");
        std::fs::write(&f, b"x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let kept = dir.join("secrets.keys");
        std::fs::write(&kept, b"x").unwrap();
        std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o600)).unwrap();
        let done = private_dir(&dir).unwrap();
        assert_eq!(done, vec![(dir.clone(), 0o755), (f.clone(), 0o644)]);
        assert_eq!(
            (mode(&dir), mode(&f), mode(&kept)),
            (DIR_MODE, FILE_MODE, FILE_MODE)
        );
        assert!(private_dir(&dir).unwrap().is_empty(), "nothing more to do");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
