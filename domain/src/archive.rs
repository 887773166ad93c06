//! The archive format: a task's events as NDJSON, one event a line after a header line that
//! names the format and its version — what `taskledger export` writes and `import` replays into
//! either store. Reading checks every line and every task whole (its events numbered from 1,
//! each one decoding, the task folding from them) before anything of it is written; the first
//! bad line stops the read with its number.

use cqrs_es::DomainEvent;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::ids::TaskId;
use crate::ports::replay_state;
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

/// A task read whole from an archive: its events, checked.
#[derive(Debug, Clone)]
pub struct ArchivedTask {
    pub task_id: TaskId,
    pub events: Vec<(TaskEvent, Timestamp)>,
    /// The line its first event is on.
    pub first_line: usize,
}

impl ArchivedTask {
    /// Its events as the commits that wrote them (events recorded at the same time were
    /// committed together), from event `after + 1` on: `(events, recorded_at)` in order.
    pub fn commits_after(&self, after: u64) -> Vec<(Vec<TaskEvent>, Timestamp)> {
        let mut out: Vec<(Vec<TaskEvent>, Timestamp)> = Vec::new();
        for (e, at) in self.events.iter().skip(after as usize) {
            match out.last_mut() {
                Some((events, t)) if t == at => events.push(e.clone()),
                _ => out.push((vec![e.clone()], *at)),
            }
        }
        out
    }
}

/// Reads an archive's lines (`(number, text)`, numbered from 1) task by task.
pub struct Reader<I: Iterator<Item = (usize, String)>> {
    lines: std::iter::Peekable<I>,
    started: bool,
    /// A bad line was met: the read is over.
    stopped: bool,
}

impl<I: Iterator<Item = (usize, String)>> Reader<I> {
    pub fn new(lines: I) -> Self {
        Self {
            lines: lines.peekable(),
            started: false,
            stopped: false,
        }
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
        Ok(())
    }

    /// The next task, read whole and checked; `None` at the end, and after a bad line.
    pub fn next_task(&mut self) -> Option<Result<ArchivedTask, ArchiveError>> {
        if self.stopped {
            return None;
        }
        let next = self.read_task();
        self.stopped = matches!(next, Some(Err(_)));
        next
    }

    fn read_task(&mut self) -> Option<Result<ArchivedTask, ArchiveError>> {
        if !self.started {
            self.started = true;
            if let Err(e) = self.read_header() {
                return Some(Err(e));
            }
        }
        let mut task: Option<(TaskId, usize)> = None;
        let mut stored: Vec<StoredEvent> = Vec::new();
        while let Some((n, text)) = self.lines.peek().cloned() {
            if text.trim().is_empty() {
                self.lines.next();
                continue;
            }
            if text.len() > MAX_LINE_BYTES {
                return Some(Err(bad(n, format!("longer than {MAX_LINE_BYTES} bytes"))));
            }
            let l: Line = match serde_json::from_str(&text) {
                Ok(l) => l,
                Err(e) => return Some(Err(bad(n, format!("not an event line: {e}")))),
            };
            let id = match TaskId::parse(l.task_id.clone()) {
                Ok(id) => id,
                Err(e) => return Some(Err(bad(n, format!("taskId: {e}")))),
            };
            match &task {
                Some((current, _)) if *current != id => break,
                Some(_) => {}
                None => task = Some((id.clone(), n)),
            }
            self.lines.next();
            if l.seq != stored.len() as u64 + 1 {
                return Some(Err(bad(
                    n,
                    format!(
                        "event {} of task {id} follows event {} (a task's events are numbered from 1, in order)",
                        l.seq,
                        stored.len()
                    ),
                )));
            }
            let recorded_at = match Timestamp::parse(&l.recorded_at) {
                Ok(t) => t,
                Err(e) => return Some(Err(bad(n, format!("recordedAt: {e}")))),
            };
            let payload: EventPayload = match serde_json::from_str(l.payload.get()) {
                Ok(p) => p,
                Err(e) => return Some(Err(bad(n, format!("payload: {e}")))),
            };
            let e = StoredEvent {
                seq: l.seq,
                event_type: l.event_type,
                event_version: l.event_version,
                payload,
                recorded_at,
                update: None,
            };
            match e.decode() {
                Err(reason) => {
                    return Some(Err(bad(
                        n,
                        format!("event {} does not read: {reason}", e.seq),
                    )))
                }
                Ok(d) if d.event_type() != e.event_type => {
                    return Some(Err(bad(
                        n,
                        format!(
                            "event {} says type {:?} but holds a {}",
                            e.seq,
                            e.event_type,
                            d.event_type()
                        ),
                    )))
                }
                Ok(_) => {}
            }
            stored.push(e);
        }
        let (task_id, first_line) = task?;
        // The task must fold from its events: a created task, every event in order.
        match replay_state(&stored) {
            Ok(s) if s.head.as_ref().is_some_and(|h| h.id == task_id) => {}
            Ok(_) => {
                return Some(Err(bad(
                    first_line,
                    format!("the events of task {task_id} do not create it"),
                )))
            }
            Err(e) => return Some(Err(bad(first_line, format!("task {task_id}: {e}")))),
        }
        let events = stored
            .iter()
            .filter_map(|e| e.decode().ok().map(|d| (d, e.recorded_at)))
            .collect();
        Some(Ok(ArchivedTask {
            task_id,
            events,
            first_line,
        }))
    }
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
