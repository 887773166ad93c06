//! work/v1 requests (DMP §8.6): the `handoff` and `status` skills a client selects on
//! `Message.metadata[WORK_URI]`, parsed into values that cannot break the spec's limits.
//!
//! Every limit is counted in UTF-8 bytes (§8.6: "Lengths are UTF-8 bytes") and refused as
//! `invalid` on the exact field or slot under `work.` (`work.title`, `work.writes[1]`).

use std::fmt;

use serde_json::{Map, Value};

use crate::error::DomainError;
use crate::ids::TaskId;

/// The work/v1 extension URI (§8.6, registry §11.10).
pub const WORK_URI: &str = "https://dispatch.foo/a2a/ext/work/v1";

/// Longest handoff title, in UTF-8 bytes (§8.6 `title`).
pub const TITLE_MAX_BYTES: usize = 200;
/// Most acceptance criteria a handoff may carry (§8.6 `acceptance`).
pub const ACCEPTANCE_MAX_ENTRIES: usize = 20;
/// Longest acceptance criterion, in UTF-8 bytes (§8.6 `acceptance`).
pub const CRITERION_MAX_BYTES: usize = 500;
/// Most writes (paths or globs) a handoff may name (§8.6 `writes`).
pub const WRITES_MAX_ENTRIES: usize = 50;
/// Longest write, in UTF-8 bytes (§8.6 `writes`).
pub const WRITE_MAX_BYTES: usize = 512;
/// Most labels a handoff may carry (§8.6 `labels`).
pub const LABELS_MAX_ENTRIES: usize = 10;
/// Longest label as the client sends it, in UTF-8 bytes (§8.6 `labels`).
pub const LABEL_MAX_BYTES: usize = 50;
/// The prefix a client's labels are stored under (§8.6 "stored under an a2a/ prefix").
pub const LABEL_PREFIX: &str = "a2a/";

/// The root of every work/v1 error path.
const ROOT: &str = "work";

/// A work/v1 request that breaks the spec: `field` is the exact path (`work`, `work.skill`,
/// `work.title`, `work.acceptance[1]`, …), `reason` a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkError {
    pub field: String,
    pub reason: String,
}

impl WorkError {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for WorkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for WorkError {}

/// DMP `invalid` is A2A InvalidParams, with the path in `ErrorInfo.metadata.field` (§8.2).
impl From<WorkError> for DomainError {
    fn from(e: WorkError) -> Self {
        DomainError::InvalidParams {
            field: e.field,
            reason: e.reason,
        }
    }
}

/// True when `s` holds a line break: CR, LF, NEL, VT, FF, LINE or PARAGRAPH SEPARATOR (the
/// Unicode mandatory breaks), so "one line" cannot be dodged with an exotic separator.
fn has_line_break(s: &str) -> bool {
    s.chars().any(|c| {
        matches!(
            c,
            '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    })
}

fn check_one_line(s: &str, max: usize, what: &str) -> Result<(), String> {
    if has_line_break(s) {
        return Err(format!("{what} must be one line"));
    }
    if s.len() > max {
        return Err(format!(
            "{what} is {} bytes, more than {max} (UTF-8)",
            s.len()
        ));
    }
    Ok(())
}

/// A handoff's title: one line, not blank, at most `TITLE_MAX_BYTES` (§8.6 `title`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkTitle(String);

impl WorkTitle {
    pub fn parse(s: impl Into<String>) -> Result<Self, String> {
        let s = s.into();
        if s.trim().is_empty() {
            return Err("a handoff needs a title that is not blank".into());
        }
        check_one_line(&s, TITLE_MAX_BYTES, "the title")?;
        Ok(Self(s))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One acceptance criterion: one line of at most `CRITERION_MAX_BYTES` (§8.6 `acceptance`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Criterion(String);

impl Criterion {
    pub fn parse(s: impl Into<String>) -> Result<Self, String> {
        let s = s.into();
        check_one_line(&s, CRITERION_MAX_BYTES, "an acceptance criterion")?;
        Ok(Self(s))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A repo-relative path or glob a handoff means to write, at most `WRITE_MAX_BYTES`
/// (§8.6 `writes`): never absolute, no drive letter, no backslash, no `..` segment. An empty
/// write names nothing and is refused too (the spec is silent on it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoPath(String);

impl RepoPath {
    pub fn parse(s: impl Into<String>) -> Result<Self, String> {
        let s = s.into();
        if s.is_empty() {
            return Err("a write must name a path".into());
        }
        if s.len() > WRITE_MAX_BYTES {
            return Err(format!(
                "a write is {} bytes, more than {WRITE_MAX_BYTES} (UTF-8)",
                s.len()
            ));
        }
        if s.contains('\\') {
            return Err("a write must not contain a backslash".into());
        }
        if s.starts_with('/') {
            return Err("a write must be relative to the repository, not absolute".into());
        }
        let b = s.as_bytes();
        if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
            return Err("a write must not start with a drive letter".into());
        }
        if s.split('/').any(|seg| seg == "..") {
            return Err("a write must not climb out of the repository with ..".into());
        }
        Ok(Self(s))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A handoff's priority (§8.6 `priority`), most urgent first, so `Ord` ranks urgency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Priority {
    Urgent,
    High,
    Medium,
    Low,
    /// No priority. The spec names no default; a handoff that sends none has none.
    #[default]
    None,
}

impl Priority {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "urgent" => Ok(Self::Urgent),
            "high" => Ok(Self::High),
            "medium" => Ok(Self::Medium),
            "low" => Ok(Self::Low),
            "none" => Ok(Self::None),
            other => Err(format!(
                "priority {other:?} is not one of urgent, high, medium, low, none"
            )),
        }
    }
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Urgent => "urgent",
            Self::High => "high",
            Self::Medium => "medium",
            Self::Low => "low",
            Self::None => "none",
        }
    }
    /// The priority the host keeps: a client's is capped at `medium` (§8.6 "capped at
    /// 'medium'"), so `urgent` and `high` become `medium` and the rest stay.
    pub fn capped(self) -> Self {
        self.max(Self::Medium)
    }
}

/// A label as the client sent it, at most `LABEL_MAX_BYTES` (§8.6 `labels`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label(String);

impl Label {
    pub fn parse(s: impl Into<String>) -> Result<Self, String> {
        let s = s.into();
        if s.len() > LABEL_MAX_BYTES {
            return Err(format!(
                "a label is {} bytes, more than {LABEL_MAX_BYTES} (UTF-8)",
                s.len()
            ));
        }
        Ok(Self(s))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The label as the host stores it: always under `a2a/` (§8.6), so a client can never
    /// set one of the host's own labels.
    pub fn stored(&self) -> String {
        format!("{LABEL_PREFIX}{}", self.0)
    }
}

/// A valid `handoff` request (§8.6): work proposed by a client, drafted until approved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handoff {
    pub title: WorkTitle,
    pub acceptance: Vec<Criterion>,
    pub writes: Vec<RepoPath>,
    /// As the client asked; the host keeps `priority.capped()`.
    pub priority: Priority,
    pub labels: Vec<Label>,
}

impl Handoff {
    /// The labels as stored, each under `a2a/`.
    pub fn stored_labels(&self) -> Vec<String> {
        self.labels.iter().map(Label::stored).collect()
    }
}

/// A valid work/v1 request (§8.6 `WorkRequestV1`). Its absence means the `ask` skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkRequest {
    Handoff(Handoff),
    /// The caller's handoffs: one task, or all of them when `task` is absent.
    Status {
        task: Option<TaskId>,
    },
}

impl WorkRequest {
    /// Reads `Message.metadata`: `Ok(None)` when it holds no work/v1 request (the `ask`
    /// skill), else the parsed request. Call only when the extension is active (§8.3).
    pub fn from_metadata(metadata: Option<&Map<String, Value>>) -> Result<Option<Self>, WorkError> {
        match metadata.and_then(|m| m.get(WORK_URI)) {
            None => Ok(None),
            Some(v) => Self::parse(v).map(Some),
        }
    }

    /// Parses one work/v1 request value. A value that is not an object is refused on `work`,
    /// a skill other than `handoff` or `status` on `work.skill` (§8.6); members the spec does
    /// not name are ignored, and an optional member that is `null` counts as absent.
    pub fn parse(raw: &Value) -> Result<Self, WorkError> {
        let obj = raw
            .as_object()
            .ok_or_else(|| WorkError::new(ROOT, "a work/v1 request must be an object"))?;
        let skill = format!("{ROOT}.skill");
        match obj.get("skill") {
            Some(Value::String(s)) if s == "handoff" => parse_handoff(obj).map(Self::Handoff),
            Some(Value::String(s)) if s == "status" => parse_status(obj),
            Some(Value::String(s)) => Err(WorkError::new(
                skill,
                format!("skill {s:?} is not handoff or status"),
            )),
            Some(Value::Null) | None => Err(WorkError::new(
                skill,
                "a work/v1 request must name its skill",
            )),
            Some(_) => Err(WorkError::new(skill, "skill must be a string")),
        }
    }
}

/// An optional member: absent and `null` alike are `None`.
fn member<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.get(name).filter(|v| !v.is_null())
}

fn string<'a>(v: &'a Value, field: &str) -> Result<&'a str, WorkError> {
    v.as_str()
        .ok_or_else(|| WorkError::new(field, "must be a string"))
}

/// Reads an optional list of strings, refusing more than `max` entries on the list itself
/// and a bad entry on its slot (`work.acceptance[1]`).
fn list<T>(
    obj: &Map<String, Value>,
    name: &str,
    max: usize,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, WorkError> {
    let field = format!("{ROOT}.{name}");
    let Some(v) = member(obj, name) else {
        return Ok(Vec::new());
    };
    let items = v
        .as_array()
        .ok_or_else(|| WorkError::new(&field, "must be an array of strings"))?;
    if items.len() > max {
        return Err(WorkError::new(
            &field,
            format!("{} entries, more than {max}", items.len()),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let slot = format!("{field}[{i}]");
            parse(string(item, &slot)?).map_err(|reason| WorkError::new(slot, reason))
        })
        .collect()
}

fn parse_handoff(obj: &Map<String, Value>) -> Result<Handoff, WorkError> {
    let title_field = format!("{ROOT}.title");
    let title = match member(obj, "title") {
        None => return Err(WorkError::new(title_field, "a handoff needs a title")),
        Some(v) => WorkTitle::parse(string(v, &title_field)?)
            .map_err(|reason| WorkError::new(&title_field, reason))?,
    };
    let acceptance = list(obj, "acceptance", ACCEPTANCE_MAX_ENTRIES, |s| {
        Criterion::parse(s)
    })?;
    let writes = list(obj, "writes", WRITES_MAX_ENTRIES, |s| RepoPath::parse(s))?;
    let priority_field = format!("{ROOT}.priority");
    let priority = match member(obj, "priority") {
        None => Priority::default(),
        Some(v) => Priority::parse(string(v, &priority_field)?)
            .map_err(|reason| WorkError::new(&priority_field, reason))?,
    };
    let labels = list(obj, "labels", LABELS_MAX_ENTRIES, |s| Label::parse(s))?;
    Ok(Handoff {
        title,
        acceptance,
        writes,
        priority,
        labels,
    })
}

fn parse_status(obj: &Map<String, Value>) -> Result<WorkRequest, WorkError> {
    let field = format!("{ROOT}.task");
    let task = match member(obj, "task") {
        None => None,
        Some(v) => Some(
            TaskId::parse(string(v, &field)?).map_err(|reason| WorkError::new(&field, reason))?,
        ),
    };
    Ok(WorkRequest::Status { task })
}

#[cfg(test)]
#[path = "work_tests.rs"]
mod tests;
