//! `taskledger export` and `taskledger import` on the configured store: the app crate's
//! archive runs with a file (written private to its owner beside its place and renamed into it,
//! never through a link) or standard output, and a file read a bounded line at a time.

use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::path::Path;
use std::sync::Arc;

use taskledger_app::archive::{self, ArchiveReport, ArchiveRunError, ImportOptions, Selection};
use taskledger_app::service::Ledger;
use taskledger_domain::archive::MAX_LINE_BYTES;
use taskledger_domain::ports::CardSigner;
use taskledger_domain::push::AddressPolicy;
use taskledger_domain::retention::Retention;

use crate::{open_store, LocalError, Storage};

#[derive(Debug, thiserror::Error)]
pub enum ArchiveCliError {
    #[error(transparent)]
    Store(#[from] LocalError),
    #[error(transparent)]
    Run(#[from] ArchiveRunError),
    #[error("{path}: {source}")]
    File {
        path: String,
        source: std::io::Error,
    },
}

fn file_err(path: &Path) -> impl FnOnce(std::io::Error) -> ArchiveCliError + '_ {
    move |source| ArchiveCliError::File {
        path: path.display().to_string(),
        source,
    }
}

/// What signs, verifies and seals around an archive: the deployment's keys and webhook policy.
#[derive(Clone, Default)]
pub struct ArchiveKeys {
    /// The signing key (`--push-signing-key-file`): exports are signed with it, signed
    /// imports verified.
    pub signer: Option<Arc<dyn CardSigner>>,
    /// How push secrets are stored (`--secrets-key-file`).
    pub seal: Option<Arc<dyn taskledger_domain::ports::SecretSeal>>,
    /// Which webhook addresses a push config may name (`--push-allowlist`).
    pub policy: Option<AddressPolicy>,
}

/// Writes the selected tasks to `out` (a private file put in place once whole), or to
/// standard output; signed when `keys` has a signing key.
pub async fn export(
    storage: &Storage,
    retention: &Retention,
    selection: &Selection,
    keys: &ArchiveKeys,
    out: Option<&Path>,
) -> Result<ArchiveReport, ArchiveCliError> {
    let stores = open_store(storage, retention).await?;
    let signer = keys.signer.as_deref();
    match out {
        Some(path) => {
            let mut file =
                taskledger_infra::files::PrivateFile::create(path).map_err(file_err(path))?;
            let report = archive::export(
                stores.events.as_ref(),
                stores.housekeeping.as_ref(),
                selection,
                signer,
                &mut file,
            )
            .await?;
            file.commit().map_err(file_err(path))?;
            Ok(report)
        }
        None => {
            let mut sink = std::io::BufWriter::new(std::io::stdout().lock());
            Ok(archive::export(
                stores.events.as_ref(),
                stores.housekeeping.as_ref(),
                selection,
                signer,
                &mut sink,
            )
            .await?)
        }
    }
}

/// How `import` places an archive.
#[derive(Debug, Clone, Default)]
pub struct ImportFlags {
    /// `--tenant`: every task must be this tenant's.
    pub tenant: Option<String>,
    /// `--require-signed`: refuse an archive this deployment's key did not sign.
    pub require_signed: bool,
}

/// Replays the archive at `path` into the store, every event through the ledger's gate.
pub async fn import(
    storage: &Storage,
    retention: &Retention,
    keys: &ArchiveKeys,
    flags: &ImportFlags,
    path: &Path,
) -> Result<ArchiveReport, ArchiveCliError> {
    let stores = open_store(storage, retention).await?;
    let file = std::fs::File::open(path).map_err(file_err(path))?;
    let options = ImportOptions {
        tenant: flags.tenant.clone(),
        require_signed: flags.require_signed,
        signer: keys.signer.clone(),
        seal: keys.seal.clone(),
    };
    let mut file = if flags.require_signed {
        verified_copy(file, keys.signer.as_deref(), path)?
    } else {
        file
    };
    let ledger = Ledger::uncached(
        stores.events.clone(),
        keys.policy.clone().unwrap_or_else(AddressPolicy::strict),
    );
    let mut lines = BoundedLines::new(&mut file);
    let report = archive::import(&ledger, stores.events.as_ref(), lines.by_ref(), &options).await;
    lines.failure().map_err(file_err(path))?;
    Ok(report?)
}

/// `--require-signed`: the archive read once, verified while it is copied into an unnamed file
/// private to this process, and that copy returned to be imported — what is imported is what was
/// verified, whatever happens at `path` meanwhile (a pipe can be imported too).
fn verified_copy(
    file: std::fs::File,
    signer: Option<&dyn CardSigner>,
    path: &Path,
) -> Result<std::fs::File, ArchiveCliError> {
    let mut copy = tempfile::tempfile().map_err(file_err(path))?;
    let mut lines = BoundedLines::new(Tee {
        from: file,
        to: &mut copy,
    });
    let verified = archive::verify(lines.by_ref(), signer);
    lines.failure().map_err(file_err(path))?;
    verified?;
    copy.rewind().map_err(file_err(path))?;
    Ok(copy)
}

/// A reader that writes what it reads to `to`.
struct Tee<R, W> {
    from: R,
    to: W,
}

impl<R: Read, W: Write> Read for Tee<R, W> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.from.read(buf)?;
        self.to.write_all(&buf[..n])?;
        Ok(n)
    }
}

/// An archive's lines, numbered from 1, each read no further than one byte past
/// `MAX_LINE_BYTES` (the reader refuses it then, by its number): a line of any length costs no
/// more memory than that. A read error or a line that is not UTF-8 ends the lines; `failure`
/// says which.
pub struct BoundedLines<R: Read> {
    reader: BufReader<R>,
    number: usize,
    buf: Vec<u8>,
    failed: Option<std::io::Error>,
    done: bool,
}

impl<R: Read> BoundedLines<R> {
    pub fn new(reader: R) -> Self {
        Self {
            reader: BufReader::new(reader),
            number: 0,
            buf: Vec::new(),
            failed: None,
            done: false,
        }
    }

    /// Why the lines ended early, if they did.
    pub fn failure(&mut self) -> std::io::Result<()> {
        self.failed.take().map_or(Ok(()), Err)
    }
}

impl<R: Read> Iterator for BoundedLines<R> {
    type Item = (usize, String);

    fn next(&mut self) -> Option<(usize, String)> {
        if self.done {
            return None;
        }
        self.buf.clear();
        // The line, its newline, and one byte more: enough to tell it is too long.
        let limit = (MAX_LINE_BYTES + 2) as u64;
        let read = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf);
        self.number += 1;
        match read {
            Ok(0) => {
                self.done = true;
                None
            }
            Ok(_) => {
                let too_long = !self.buf.ends_with(b"\n") && self.buf.len() as u64 == limit;
                if too_long {
                    // The reader refuses it by its number; nothing after it is read.
                    self.done = true;
                    return Some((self.number, "x".repeat(MAX_LINE_BYTES + 1)));
                }
                while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
                    self.buf.pop();
                }
                match String::from_utf8(std::mem::take(&mut self.buf)) {
                    Ok(text) => Some((self.number, text)),
                    Err(_) => {
                        self.done = true;
                        self.failed = Some(std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!("line {} is not UTF-8", self.number),
                        ));
                        None
                    }
                }
            }
            Err(e) => {
                self.done = true;
                self.failed = Some(e);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_past_the_bound_is_read_no_further_than_one_byte_past_it() {
        // A line of 3 × the bound, then a good one: the first is handed on over-long (the
        // reader refuses it by its number) and nothing after it is read.
        let mut input = vec![b'x'; 3 * MAX_LINE_BYTES];
        input.extend_from_slice(b"\n{}\n");
        struct Counting<'a>(&'a [u8], usize);
        impl Read for Counting<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.read(buf)?;
                self.1 += n;
                Ok(n)
            }
        }
        let mut source = Counting(&input, 0);
        let lines: Vec<_> = BoundedLines::new(&mut source).collect();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].0, 1);
        assert_eq!(lines[0].1.len(), MAX_LINE_BYTES + 1);
        assert!(
            source.1 <= MAX_LINE_BYTES + 2 + 8192,
            "read {} bytes of a {}-byte line",
            source.1,
            input.len()
        );
    }

    #[test]
    fn lines_at_the_bound_are_read_whole_and_numbered() {
        let at_bound = "y".repeat(MAX_LINE_BYTES);
        let input = format!("a\r\n{at_bound}\n\nb");
        let lines: Vec<_> = BoundedLines::new(input.as_bytes()).collect();
        assert_eq!(
            lines,
            vec![
                (1, "a".to_string()),
                (2, at_bound),
                (3, String::new()),
                (4, "b".to_string())
            ]
        );
        let mut bad = BoundedLines::new(&b"ok\n\xff\xfe\n"[..]);
        assert_eq!(bad.by_ref().count(), 1);
        assert!(bad.failure().unwrap_err().to_string().contains("line 2"));
    }
}
