//! The archive format: a task's events as NDJSON, one event a line after a header line that
//! names the format and its version, and — when the deployment has a signing key — a last line
//! signing what came before (`Signature`) — what `taskledger export` writes and `import` replays
//! into either store. Reading checks every line on its own as it comes (the importer holds
//! each event to the aggregate's gate before it is written); the first bad line stops the read
//! with its number.

use cqrs_es::DomainEvent;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use sha2::{Digest as _, Sha256};

use crate::ids::TaskId;
use crate::task::stored::{EventPayload, StoredEvent};
use crate::task::TaskEvent;
use crate::time::Timestamp;

/// The header's `format`.
pub const FORMAT: &str = "taskledger-events";
/// The version this build writes, and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;
/// The longest line read (an event is far smaller: DynamoDB items stop at 400 KB).
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ArchiveError {
    pub line: usize,
    pub reason: String,
}

fn bad(line: usize, reason: impl Into<String>) -> ArchiveError {
    ArchiveError {
        line,
        reason: reason.into(),
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    format: String,
    version: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Line {
    task_id: String,
    seq: u64,
    #[serde(rename = "type")]
    event_type: String,
    event_version: String,
    recorded_at: String,
    payload: Box<RawValue>,
}

/// The header line (no newline).
pub fn header() -> String {
    serde_json::to_string(&Header {
        format: FORMAT.into(),
        version: FORMAT_VERSION,
    })
    .unwrap_or_default()
}

/// One event's line (no newline).
pub fn line(task_id: &TaskId, e: &StoredEvent) -> String {
    let payload = RawValue::from_string(e.payload.as_str().to_string())
        .unwrap_or_else(|_| RawValue::NULL.to_owned());
    serde_json::to_string(&Line {
        task_id: task_id.to_string(),
        seq: e.seq,
        event_type: e.event_type.clone(),
        event_version: e.event_version.clone(),
        recorded_at: e.recorded_at.to_rfc3339_nanos(),
        payload,
    })
    .unwrap_or_default()
}

/// Where a task's archive object goes in a bucket (`tasks/<tenant>/<task id>.ndjson`), the
/// tenant and id with every byte outside `A-Z a-z 0-9 . _ -` percent-encoded — so no name
/// makes a path of its own (`/`, `..` as a segment) and one tenant's objects share a prefix.
pub fn object_key(tenant: &str, task_id: &TaskId) -> String {
    format!(
        "{OBJECT_PREFIX}{}/{}.ndjson",
        key_segment(tenant),
        key_segment(task_id.as_str())
    )
}

/// The prefix of every archive object.
pub const OBJECT_PREFIX: &str = "tasks/";

fn key_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric()
            || matches!(b, b'_' | b'-')
            || (b == b'.' && s != "." && s != "..")
        {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One event read from an archive, checked on its own: its line, task and number, and the
/// event with the time it was recorded. Whether it may follow what came before is the
/// aggregate's gate (`TaskAggregate::admit`), which the importer asks.
#[derive(Debug, Clone)]
pub struct ArchivedEvent {
    pub line: usize,
    pub task_id: TaskId,
    pub seq: u64,
    pub event: TaskEvent,
    pub recorded_at: Timestamp,
}

/// What a signed archive's last line vouches for: the format, the SHA-256 of every byte
/// before that line, and how many tasks and events they hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Statement {
    pub format: String,
    pub sha256: String,
    pub tasks: u64,
    pub events: u64,
}

/// The signature line: a JWS over the statement (its protected header, the statement as its
/// payload, and the signature), made with the deployment's signing key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Signature {
    pub protected: String,
    pub statement: Statement,
    pub signature: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Trailer {
    signature: Signature,
}

impl Statement {
    /// The bytes the JWS signs: the statement as compact JSON.
    pub fn payload(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// The signature line (no newline).
pub fn signature_line(signature: Signature) -> String {
    serde_json::to_string(&Trailer { signature }).unwrap_or_default()
}

/// A running SHA-256 of an archive's lines as written (each with its newline), and the
/// tasks and events among them: what a signature's statement says.
#[derive(Clone, Default)]
pub struct Digest {
    hash: Sha256,
    tasks: u64,
    events: u64,
    last_task: Option<String>,
}

impl Digest {
    pub fn header(&mut self, text: &str) {
        self.bytes(text);
    }

    /// An event line of `task_id`.
    pub fn event(&mut self, task_id: &str, text: &str) {
        if self.last_task.as_deref() != Some(task_id) {
            self.tasks += 1;
            self.last_task = Some(task_id.to_string());
        }
        self.events += 1;
        self.bytes(text);
    }

    fn bytes(&mut self, text: &str) {
        self.hash.update(text.as_bytes());
        self.hash.update(b"\n");
    }

    pub fn statement(&self) -> Statement {
        Statement {
            format: FORMAT.into(),
            sha256: hex(&self.hash.clone().finalize()),
            tasks: self.tasks,
            events: self.events,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads an archive's lines (`(number, text)`, numbered from 1) event by event, holding no
/// more than the line it reads: the header first, then each event line checked alone (a task's
/// events together and numbered from 1, each decoding as the type it names), then, if the
/// archive is signed, its signature line, last.
pub struct Reader<I: Iterator<Item = (usize, String)>> {
    lines: I,
    started: bool,
    /// A bad line was met: the read is over.
    stopped: bool,
    /// The task of the last event read, and its number.
    current: Option<(TaskId, u64)>,
    digest: Digest,
    signature: Option<Signature>,
}

impl<I: Iterator<Item = (usize, String)>> Reader<I> {
    pub fn new(lines: I) -> Self {
        Self {
            lines,
            started: false,
            stopped: false,
            current: None,
            digest: Digest::default(),
            signature: None,
        }
    }

    /// What the lines read so far hash to (before any signature line).
    pub fn statement(&self) -> Statement {
        self.digest.statement()
    }

    /// The archive's signature, once its last line is read (`None`: unsigned).
    pub fn signature(&self) -> Option<&Signature> {
        self.signature.as_ref()
    }

    fn read_header(&mut self) -> Result<(), ArchiveError> {
        let Some((n, text)) = self.lines.next() else {
            return Err(bad(1, "empty: no header line"));
        };
        let h: Header = serde_json::from_str(&text)
            .map_err(|e| bad(n, format!("not a {FORMAT} header: {e}")))?;
        if h.format != FORMAT {
            return Err(bad(n, format!("format {:?}, not {FORMAT:?}", h.format)));
        }
        if h.version > FORMAT_VERSION || h.version == 0 {
            return Err(bad(
                n,
                format!(
                    "format version {} is not one this build reads (1 to {FORMAT_VERSION})",
                    h.version
                ),
            ));
        }
        self.digest.header(&text);
        Ok(())
    }

    /// The next event, checked on its own; `None` at the end, and after a bad line.
    pub fn next_event(&mut self) -> Option<Result<ArchivedEvent, ArchiveError>> {
        if self.stopped {
            return None;
        }
        let next = self.read_event();
        self.stopped = !matches!(next, Some(Ok(_)));
        next
    }

    fn read_event(&mut self) -> Option<Result<ArchivedEvent, ArchiveError>> {
        if !self.started {
            self.started = true;
            if let Err(e) = self.read_header() {
                return Some(Err(e));
            }
        }
        loop {
            let (n, text) = self.lines.next()?;
            if text.len() > MAX_LINE_BYTES {
                return Some(Err(bad(n, format!("longer than {MAX_LINE_BYTES} bytes"))));
            }
            if text.trim().is_empty() {
                continue;
            }
            if self.signature.is_some() {
                return Some(Err(bad(
                    n,
                    "a line after the signature, which must be the last",
                )));
            }
            if text.starts_with(r#"{"signature""#) {
                match serde_json::from_str::<Trailer>(&text) {
                    Ok(t) => {
                        self.signature = Some(t.signature);
                        continue;
                    }
                    Err(e) => return Some(Err(bad(n, format!("not a signature line: {e}")))),
                }
            }
            return Some(self.event_line(n, &text));
        }
    }

    fn event_line(&mut self, n: usize, text: &str) -> Result<ArchivedEvent, ArchiveError> {
        let l: Line =
            serde_json::from_str(text).map_err(|e| bad(n, format!("not an event line: {e}")))?;
        let id = TaskId::parse(l.task_id.clone()).map_err(|e| bad(n, format!("taskId: {e}")))?;
        let before = match &self.current {
            Some((current, seq)) if *current == id => *seq,
            _ => 0,
        };
        if l.seq != before + 1 {
            return Err(bad(
                n,
                format!(
                    "event {} of task {id} follows event {before} (a task's events are numbered from 1, in order, together)",
                    l.seq
                ),
            ));
        }
        let recorded_at =
            Timestamp::parse(&l.recorded_at).map_err(|e| bad(n, format!("recordedAt: {e}")))?;
        let payload: EventPayload =
            serde_json::from_str(l.payload.get()).map_err(|e| bad(n, format!("payload: {e}")))?;
        let e = StoredEvent {
            seq: l.seq,
            event_type: l.event_type,
            event_version: l.event_version,
            payload,
            recorded_at,
            update: None,
        };
        let event = e
            .decode()
            .map_err(|reason| bad(n, format!("event {} does not read: {reason}", e.seq)))?;
        if event.event_type() != e.event_type {
            return Err(bad(
                n,
                format!(
                    "event {} says type {:?} but holds a {}",
                    e.seq,
                    e.event_type,
                    event.event_type()
                ),
            ));
        }
        match &event {
            TaskEvent::TaskCreated { task_id, .. } if *task_id != id => {
                return Err(bad(
                    n,
                    format!("the events of task {id} create task {task_id}"),
                ))
            }
            _ => {}
        }
        self.digest.event(id.as_str(), text);
        self.current = Some((id.clone(), l.seq));
        Ok(ArchivedEvent {
            line: n,
            task_id: id,
            seq: l.seq,
            event,
            recorded_at,
        })
    }
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
