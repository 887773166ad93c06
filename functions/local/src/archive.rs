//! `taskledger export` and `taskledger import` on the configured store: the app crate's
//! archive runs with a file (created private to its owner) or standard output, and a file read
//! line by line.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use taskledger_app::archive::{self, ArchiveReport, ArchiveRunError, Selection};
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

/// Writes the selected tasks to `out` (a new private file), or to standard output.
pub async fn export(
    storage: &Storage,
    retention: &Retention,
    selection: &Selection,
    out: Option<&Path>,
) -> Result<ArchiveReport, ArchiveCliError> {
    let stores = open_store(storage, retention).await?;
    let mut sink: Box<dyn Write> = match out {
        Some(path) => Box::new(std::io::BufWriter::new(
            taskledger_infra::files::private_options()
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)
                .map_err(file_err(path))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    Ok(archive::export(
        stores.events.as_ref(),
        stores.housekeeping.as_ref(),
        selection,
        sink.as_mut(),
    )
    .await?)
}

/// Replays the archive at `path` into the store.
pub async fn import(
    storage: &Storage,
    retention: &Retention,
    path: &Path,
) -> Result<ArchiveReport, ArchiveCliError> {
    let stores = open_store(storage, retention).await?;
    let file = std::fs::File::open(path).map_err(file_err(path))?;
    // Read as it is replayed; a read error ends the lines and is reported after.
    let failed = std::cell::RefCell::new(None);
    let lines = BufReader::new(file)
        .lines()
        .enumerate()
        .map_while(|(i, line)| match line {
            Ok(l) => Some((i + 1, l)),
            Err(e) => {
                *failed.borrow_mut() = Some(e);
                None
            }
        });
    let report = archive::import(stores.events.as_ref(), lines).await;
    if let Some(e) = failed.into_inner() {
        return Err(file_err(path)(e));
    }
    Ok(report?)
}
