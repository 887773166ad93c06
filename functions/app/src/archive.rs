//! Export and import of tasks as the archive format (`taskledger_domain::archive`): a task, a
//! tenant's tasks or all of them written as their events, in task-id order so the same tasks
//! give the same bytes from either store, signed with the deployment's key when it has one; an
//! archive replayed into either store commit by commit through the ledger's gate (its events'
//! own times kept, every event held to the aggregate's rules, push secrets sealed as the API
//! seals them), idempotently — a task already there whole is left as it is, one there in part
//! goes on from where it stops, one that differs is refused. An import holds one line and one
//! commit in memory, never a whole task.

use std::io::Write;
use std::sync::Arc;

use taskledger_domain::archive::{self, ArchiveError, ArchivedEvent, Reader};
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{
    replay_state, CardSigner, EventStore, Housekeeping, SecretSeal, StoreError,
};
use taskledger_domain::task::admission::Admission;
use taskledger_domain::task::stored::StoredEvent;
use taskledger_domain::task::{TaskAggregate, TaskEvent};
use taskledger_domain::time::Timestamp;

use crate::service::{Ledger, RestoreError, MAX_RESTORED_COMMIT_EVENTS};

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
    #[error("the archive is refused unsigned: {0}")]
    Unsigned(String),
}

/// What an export or an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArchiveReport {
    pub tasks: u64,
    pub events: u64,
    /// Import: tasks already stored whole, left as they were.
    pub unchanged: u64,
}

/// Writes the selected tasks to `out`: the header, then each task's events in order, then —
/// with a `signer` — the line signing them.
pub async fn export(
    store: &dyn EventStore,
    walk: &dyn Housekeeping,
    selection: &Selection,
    signer: Option<&dyn CardSigner>,
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
    let mut w = Writer::new(out);
    w.header()?;
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
        w.task(&id, &events)?;
        report.tasks += 1;
        report.events += events.len() as u64;
    }
    w.finish(signer)?;
    Ok(report)
}

/// Writes archive lines, hashing them as it goes, and signs them at the end.
struct Writer<'a> {
    out: &'a mut dyn Write,
    digest: archive::Digest,
}

impl<'a> Writer<'a> {
    fn new(out: &'a mut dyn Write) -> Self {
        Self {
            out,
            digest: archive::Digest::default(),
        }
    }

    fn header(&mut self) -> std::io::Result<()> {
        let h = archive::header();
        self.digest.header(&h);
        writeln!(self.out, "{h}")
    }

    fn task(&mut self, id: &TaskId, events: &[StoredEvent]) -> std::io::Result<()> {
        for e in events {
            let l = archive::line(id, e);
            self.digest.event(id.as_str(), &l);
            writeln!(self.out, "{l}")?;
        }
        Ok(())
    }

    fn finish(self, signer: Option<&dyn CardSigner>) -> std::io::Result<()> {
        if let Some(signer) = signer {
            let statement = self.digest.statement();
            let (protected, signature) = signer.sign_detached(&statement.payload(), None);
            let line = archive::signature_line(archive::Signature {
                protected,
                statement,
                signature,
            });
            writeln!(self.out, "{line}")?;
        }
        self.out.flush()
    }
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

/// One task as an archive object: its key (`archive::object_key`) and its bytes — the same
/// bytes `export` writes for it alone (the header, then its events); `None` when the store
/// holds none of it (deleted since).
pub async fn task_object(
    store: &dyn EventStore,
    id: &TaskId,
    signer: Option<&dyn CardSigner>,
) -> Result<Option<(String, Vec<u8>)>, ArchiveRunError> {
    let events = store.events(id, 0).await?;
    let Some(first) = events.first() else {
        return Ok(None);
    };
    let key = archive::object_key(&owner_tenant(id, first, &events)?, id);
    let mut body = Vec::new();
    let mut w = Writer::new(&mut body);
    w.header()?;
    w.task(id, &events)?;
    w.finish(signer)?;
    Ok(Some((key, body)))
}

/// How an import treats what it reads.
#[derive(Clone)]
pub struct ImportOptions {
    /// Every task must be this tenant's (`import --tenant`): an archive placed in one tenant
    /// writes nothing of another's.
    pub tenant: Option<String>,
    /// Refuse an archive that is not signed by `signer`'s key (`import --require-signed`).
    pub require_signed: bool,
    /// The deployment's key: what a signed archive must verify with.
    pub signer: Option<Arc<dyn CardSigner>>,
    /// How push secrets are stored (sealed, as `SetPushConfig` stores them; ADR 022).
    pub seal: Option<Arc<dyn SecretSeal>>,
}

impl ImportOptions {
    /// Any tenant, signed or not, secrets stored as given.
    pub fn open() -> Self {
        Self {
            tenant: None,
            require_signed: false,
            signer: None,
            seal: None,
        }
    }
}

/// Checks that an archive is signed with `signer`'s key and that its lines are the ones it
/// signed, reading it through once (the statement it signed, or why not). An import that
/// requires a signature reads the archive with this first, then again to write it.
pub fn verify(
    lines: impl Iterator<Item = (usize, String)>,
    signer: Option<&dyn CardSigner>,
) -> Result<archive::Statement, ArchiveRunError> {
    let mut reader = Reader::new(lines);
    while let Some(e) = reader.next_event() {
        e?;
    }
    let unsigned = |why: &str| ArchiveRunError::Unsigned(why.to_string());
    let signature = reader
        .signature()
        .ok_or_else(|| unsigned("the archive carries no signature line"))?;
    let signer = signer.ok_or_else(|| {
        unsigned(
            "this server has no signing key to verify the archive with (--push-signing-key-file)",
        )
    })?;
    if signature.statement != reader.statement() {
        return Err(unsigned(
            "the archive's lines are not the ones its signature vouches for",
        ));
    }
    if !signer.verify_detached(
        &signature.protected,
        &signature.statement.payload(),
        &signature.signature,
    ) {
        return Err(unsigned(
            "the signature is not this server's key's (or the statement was changed)",
        ));
    }
    Ok(signature.statement.clone())
}

/// Replays an archive's lines (`(number, text)`) into the ledger's store, event by event, each
/// commit once all its events passed the gate; the first bad line stops it with its number
/// (commits before it stay: each passed the gate, so the task they leave is one the aggregate
/// could have made; importing the archive again goes on from there).
pub async fn import(
    ledger: &Ledger,
    store: &dyn EventStore,
    lines: impl Iterator<Item = (usize, String)>,
    options: &ImportOptions,
) -> Result<ArchiveReport, ArchiveRunError> {
    let gate = ledger.admission(Timestamp::now());
    let mut reader = Reader::new(lines);
    let mut report = ArchiveReport::default();
    let mut task: Option<Importing> = None;
    while let Some(next) = reader.next_event() {
        let e = next?;
        if task.as_ref().is_none_or(|t| t.id != e.task_id) {
            if let Some(done) = task.take() {
                done.finish(ledger, &gate, &mut report).await?;
            }
            task = Some(Importing::start(store, &e, options).await?);
        }
        if let Some(t) = task.as_mut() {
            t.event(ledger, &gate, e, options).await?;
        }
    }
    if let Some(done) = task.take() {
        done.finish(ledger, &gate, &mut report).await?;
    }
    Ok(report)
}

/// One task on its way in: where the store already is, and the commit being gathered.
struct Importing {
    id: TaskId,
    first_line: usize,
    /// The events the store holds of it (compared with the archive's, then gone past).
    stored: Vec<TaskEvent>,
    /// The state after what is stored or written so far.
    state: TaskAggregate,
    /// The commit being gathered: events recorded at one time, and the line of the first.
    pending: Vec<TaskEvent>,
    pending_at: Option<(Timestamp, usize)>,
    /// Events of it the archive held, and those written.
    seen: u64,
    written: u64,
}

impl Importing {
    async fn start(
        store: &dyn EventStore,
        first: &ArchivedEvent,
        options: &ImportOptions,
    ) -> Result<Self, ArchiveRunError> {
        if let (Some(tenant), TaskEvent::TaskCreated { owner, .. }) =
            (&options.tenant, &first.event)
        {
            if owner.tenant.as_str() != tenant {
                return Err(ArchiveRunError::Read(ArchiveError {
                    line: first.line,
                    reason: format!(
                        "task {} is tenant {}'s, not {tenant}'s (--tenant)",
                        first.task_id, owner.tenant
                    ),
                }));
            }
        }
        let stored_events = store.events(&first.task_id, 0).await?;
        let state = replay_state(&stored_events)?;
        let stored = stored_events
            .iter()
            .map(|e| e.decode().map_err(StoreError::Corrupt))
            .collect::<Result<Vec<_>, _>>()?;
        if let (Some(tenant), Some(head)) = (&options.tenant, state.head()) {
            if head.owner.tenant.as_str() != tenant {
                return Err(ArchiveRunError::Differs {
                    line: first.line,
                    task_id: first.task_id.to_string(),
                });
            }
        }
        Ok(Self {
            id: first.task_id.clone(),
            first_line: first.line,
            stored,
            state,
            pending: Vec::new(),
            pending_at: None,
            seen: 0,
            written: 0,
        })
    }

    async fn event(
        &mut self,
        ledger: &Ledger,
        gate: &Admission,
        e: ArchivedEvent,
        options: &ImportOptions,
    ) -> Result<(), ArchiveRunError> {
        let refused = |reason: String| {
            ArchiveRunError::Read(ArchiveError {
                line: e.line,
                reason,
            })
        };
        self.seen += 1;
        let event = sealed(e.event.clone(), options.seal.as_deref()).map_err(refused)?;
        if let Some(s) = self.stored.get((e.seq - 1) as usize) {
            // Already stored: it must be the same event (secrets compared as they open).
            if opened(s.clone(), options.seal.as_deref()) != opened(event, options.seal.as_deref())
            {
                return Err(ArchiveRunError::Differs {
                    line: self.first_line,
                    task_id: self.id.to_string(),
                });
            }
            return Ok(());
        }
        match self.pending_at {
            Some((at, _))
                if at == e.recorded_at && self.pending.len() < MAX_RESTORED_COMMIT_EVENTS => {}
            Some(_) => self.flush(ledger, gate).await?,
            None => {}
        }
        if self.pending_at.is_none() {
            self.pending_at = Some((e.recorded_at, e.line));
        }
        self.pending.push(event);
        Ok(())
    }

    /// Writes the commit gathered so far.
    async fn flush(&mut self, ledger: &Ledger, gate: &Admission) -> Result<(), ArchiveRunError> {
        let Some((at, line)) = self.pending_at.take() else {
            return Ok(());
        };
        let events = std::mem::take(&mut self.pending);
        let n = events.len() as u64;
        let before = std::mem::take(&mut self.state);
        self.state = ledger
            .restore(&self.id, before, events, at, gate)
            .await
            .map_err(|e| match e {
                RestoreError::Refused { index, reason } => ArchiveRunError::Read(ArchiveError {
                    line: line + index,
                    reason: format!("task {}: {reason}", self.id),
                }),
                RestoreError::Store(e) => e.into(),
            })?;
        self.written += n;
        Ok(())
    }

    async fn finish(
        mut self,
        ledger: &Ledger,
        gate: &Admission,
        report: &mut ArchiveReport,
    ) -> Result<(), ArchiveRunError> {
        self.flush(ledger, gate).await?;
        if (self.stored.len() as u64) > self.seen {
            return Err(ArchiveRunError::Differs {
                line: self.first_line,
                task_id: self.id.to_string(),
            });
        }
        if self.state.head.is_none() {
            return Err(ArchiveRunError::Read(ArchiveError {
                line: self.first_line,
                reason: format!("the events of task {} do not create it", self.id),
            }));
        }
        report.tasks += 1;
        report.events += self.written;
        if self.written == 0 {
            report.unchanged += 1;
        }
        Ok(())
    }
}

/// The event with its push secrets as the API stores them: a plain token or credentials
/// sealed, a sealed one checked to open with a key this server holds.
fn sealed(e: TaskEvent, seal: Option<&dyn SecretSeal>) -> Result<TaskEvent, String> {
    let TaskEvent::PushConfigSet { mut config, at } = e else {
        return Ok(e);
    };
    let Some(seal) = seal else {
        return Ok(TaskEvent::PushConfigSet { config, at });
    };
    for secret in [&mut config.token, &mut config.credentials] {
        if let Some(v) = secret.as_mut() {
            match seal.open(v) {
                None => {
                    return Err(format!(
                        "push config {} holds a secret sealed with a key this server does not hold",
                        config.id
                    ))
                }
                Some(plain) if plain == *v => *v = seal.seal(&plain),
                Some(_) => {}
            }
        }
    }
    Ok(TaskEvent::PushConfigSet { config, at })
}

/// The event with its push secrets opened (to compare two stored forms of one secret).
fn opened(e: TaskEvent, seal: Option<&dyn SecretSeal>) -> TaskEvent {
    match (e, seal) {
        (TaskEvent::PushConfigSet { mut config, at }, Some(seal)) => {
            for secret in [&mut config.token, &mut config.credentials] {
                if let Some(v) = secret.as_mut() {
                    if let Some(plain) = seal.open(v) {
                        *v = plain;
                    }
                }
            }
            TaskEvent::PushConfigSet { config, at }
        }
        (e, _) => e,
    }
}
