//! Files the server keeps are its owner's alone: the data directory is made `0700` and every
//! file in it `0600` (the store, its write-ahead log and shared memory, the stamp, the keys),
//! and a directory or file found looser at start is tightened, each one reported so the caller
//! can warn. (Elsewhere than on Unix, permissions are left to the platform.)

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

/// Options opening a file that is created private to the owner.
pub fn private_options() -> std::fs::OpenOptions {
    #[allow(unused_mut)]
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(FILE_MODE);
    }
    options
}

/// Makes `path` an empty private file if it does not exist (so a library that creates its
/// companions with the file's own permissions, as SQLite does its `-wal` and `-shm`, keeps
/// them private too).
pub fn create_private(path: &Path) -> std::io::Result<()> {
    match private_options().write(true).create_new(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes `bytes` to `path` whole, private to the owner: into a private temporary file beside
/// it, then renamed over it (a reader sees the old content or the new, never a part).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = private_options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
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
