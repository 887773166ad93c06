//! Export and import of tasks as the archive format (`taskledger_domain::archive`): a task, a
//! tenant's tasks or all of them written as their events, in task-id order so the same tasks
//! give the same bytes from either store; an archive replayed into either store commit by
//! commit (its events' own times kept), idempotently — a task already there whole is left as
//! it is, one there in part goes on from where it stops, one that differs is refused.

use std::io::Write;

use taskledger_domain::archive::{self, ArchiveError, ArchivedTask, Reader};
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{commit_for, replay_state, EventStore, Housekeeping, StoreError};
use taskledger_domain::task::stored::StoredEvent;
use taskledger_domain::task::TaskEvent;

/// Task ids read per page while an export walks the store.
const EXPORT_PAGE: u32 = 500;

/// Which tasks an export writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    Task(TaskId),
    Tenant(String),
    All,
}

#[derive(Debug, thiserror::Error)]
pub enum ArchiveRunError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot write the archive: {0}")]
    Write(#[from] std::io::Error),
    #[error("{0}")]
    Read(#[from] ArchiveError),
    #[error("line {line}: task {task_id} is stored with other events than the archive's")]
    Differs { line: usize, task_id: String },
}

/// What an export or an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArchiveReport {
    pub tasks: u64,
    pub events: u64,
    /// Import: tasks already stored whole, left as they were.
    pub unchanged: u64,
}

/// Writes the selected tasks to `out`: the header, then each task's events in order.
pub async fn export(
    store: &dyn EventStore,
    walk: &dyn Housekeeping,
    selection: &Selection,
    out: &mut dyn Write,
) -> Result<ArchiveReport, ArchiveRunError> {
    let ids = match selection {
        Selection::Task(id) => vec![id.clone()],
        Selection::Tenant(_) | Selection::All => {
            let mut ids = Vec::new();
            let mut cursor = None;
            loop {
                let (page, next) = walk.task_page(cursor, EXPORT_PAGE).await?;
                ids.extend(page);
                match next {
                    Some(c) => cursor = Some(c),
                    None => break,
                }
            }
            ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
            ids
        }
    };
    writeln!(out, "{}", archive::header())?;
    let mut report = ArchiveReport::default();
    for id in ids {
        let events = store.events(&id, 0).await?;
        let Some(first) = events.first() else {
            continue;
        };
        if let Selection::Tenant(t) = selection {
            if owner_tenant(&id, first, &events)? != *t {
                continue;
            }
        }
        write_task(&id, &events, out)?;
        report.tasks += 1;
        report.events += events.len() as u64;
    }
    out.flush()?;
    Ok(report)
}

/// The tenant of the task's owner.
fn owner_tenant(
    id: &TaskId,
    first: &StoredEvent,
    events: &[StoredEvent],
) -> Result<String, StoreError> {
    Ok(match first.decode().map_err(StoreError::Corrupt)? {
        TaskEvent::TaskCreated { owner, .. } => owner.tenant.to_string(),
        _ => replay_state(events)?
            .head
            .map(|h| h.owner.tenant.to_string())
            .ok_or_else(|| StoreError::Corrupt(format!("task {id} has no head")))?,
    })
}

fn write_task(id: &TaskId, events: &[StoredEvent], out: &mut dyn Write) -> std::io::Result<()> {
    for e in events {
        writeln!(out, "{}", archive::line(id, e))?;
    }
    Ok(())
}

/// One task as an archive object: its key (`archive::object_key`) and its bytes — the same
/// bytes `export` writes for it alone (the header, then its events); `None` when the store
/// holds none of it (deleted since).
pub async fn task_object(
    store: &dyn EventStore,
    id: &TaskId,
) -> Result<Option<(String, Vec<u8>)>, ArchiveRunError> {
    let events = store.events(id, 0).await?;
    let Some(first) = events.first() else {
        return Ok(None);
    };
    let key = archive::object_key(&owner_tenant(id, first, &events)?, id);
    let mut body = Vec::new();
    writeln!(body, "{}", archive::header())?;
    write_task(id, &events, &mut body)?;
    Ok(Some((key, body)))
}

/// Replays an archive's lines (`(number, text)`) into `store`, task by task; the first bad
/// line stops it, nothing of that task written (tasks before it stay imported).
pub async fn import(
    store: &dyn EventStore,
    lines: impl Iterator<Item = (usize, String)>,
) -> Result<ArchiveReport, ArchiveRunError> {
    let mut reader = Reader::new(lines);
    let mut report = ArchiveReport::default();
    while let Some(task) = reader.next_task() {
        let task = task?;
        let written = import_task(store, &task).await?;
        report.tasks += 1;
        report.events += written;
        if written == 0 {
            report.unchanged += 1;
        }
    }
    Ok(report)
}

/// One task: what the store lacks of it, commit by commit; how many events it wrote.
async fn import_task(store: &dyn EventStore, task: &ArchivedTask) -> Result<u64, ArchiveRunError> {
    let stored = store.events(&task.task_id, 0).await?;
    let differs = || ArchiveRunError::Differs {
        line: task.first_line,
        task_id: task.task_id.to_string(),
    };
    if stored.len() > task.events.len() {
        return Err(differs());
    }
    for (s, (a, _)) in stored.iter().zip(&task.events) {
        if s.decode().map_err(StoreError::Corrupt)? != *a {
            return Err(differs());
        }
    }
    let mut state = replay_state(&stored)?;
    let mut written = 0;
    for (events, at) in task.commits_after(stored.len() as u64) {
        let commit = commit_for(task.task_id.clone(), &state, &events, at);
        store.append(&commit).await?;
        state = commit.snapshot;
        written += events.len() as u64;
    }
    Ok(written)
}
