//! What a task keeps of the upstream A2A agent's task it mirrors (ADR 034): its ids, the
//! interface it was reached through, how many of its events were applied, the state and
//! artifacts those events left — so a redelivered or continued turn follows the same upstream
//! task without sending anything twice or applying an event twice. Named by the central types
//! (`commands`, `events`, `head`), so it names none of them.

use serde::{Deserialize, Serialize};

use crate::time::{nanos, Timestamp};
use crate::wire::TaskState;

use super::MAX_ARTIFACTS_PER_TASK;

/// The longest upstream task or context id kept (an upstream's ids are its own; ours are UUIDs).
pub const MAX_UPSTREAM_ID_CHARS: usize = 256;
/// The longest description of the interface a task was linked through.
pub const MAX_UPSTREAM_INTERFACE_CHARS: usize = 2048;

/// What the task knows of one upstream artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamArtifact {
    pub id: String,
    /// Parts applied so far (over all its chunks).
    pub parts: u64,
    /// Its last chunk was applied.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closed: bool,
}

/// The upstream task a task of ours mirrors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpstreamHead {
    /// The upstream's task id; empty while none is known (the upstream answered with a message).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    /// The interface the task was linked through (`<binding> <version> <url>`): a card that
    /// drops it mid-task ends the task (`UpstreamCard::still_offers`).
    pub interface: String,
    /// Upstream events applied: a batch decided after a different count is a duplicate.
    pub events: u64,
    /// The latest of our work requests whose input reached the upstream.
    #[serde(default)]
    pub forwarded: u64,
    /// The upstream task's state as last applied.
    pub state: TaskState,
    /// The id of the upstream status message last applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<UpstreamArtifact>,
    /// When an upstream event was last applied: the deadline reaper's clock for the task.
    #[serde(with = "nanos")]
    pub progress_at: Timestamp,
}

impl UpstreamHead {
    /// A mirror before any event, for a task linked through `interface`.
    pub fn new(interface: impl Into<String>, at: Timestamp) -> Self {
        Self {
            task_id: String::new(),
            context_id: String::new(),
            interface: interface.into(),
            events: 0,
            forwarded: 0,
            state: TaskState::Submitted,
            status_message: None,
            artifacts: Vec::new(),
            progress_at: at,
        }
    }

    /// Whether the upstream task is there to follow (known, and neither finished nor waiting).
    pub fn at_work(&self) -> bool {
        !self.task_id.is_empty() && !self.state.is_terminal() && !self.state.is_interrupted()
    }

    /// Whether an upstream task is known and not finished (a cancel of ours reaches it).
    pub fn open(&self) -> bool {
        !self.task_id.is_empty() && !self.state.is_terminal()
    }

    pub fn artifact(&self, id: &str) -> Option<&UpstreamArtifact> {
        self.artifacts.iter().find(|a| a.id == id)
    }

    /// Why the mirror is not one the task may keep, if it is not.
    pub fn check(&self) -> Result<(), String> {
        for (what, v, max) in [
            ("task id", &self.task_id, MAX_UPSTREAM_ID_CHARS),
            ("context id", &self.context_id, MAX_UPSTREAM_ID_CHARS),
            ("interface", &self.interface, MAX_UPSTREAM_INTERFACE_CHARS),
        ] {
            if v.chars().count() > max {
                return Err(format!(
                    "the upstream {what} is longer than {max} characters"
                ));
            }
        }
        if let Some(m) = &self.status_message {
            if m.chars().count() > MAX_UPSTREAM_ID_CHARS {
                return Err(format!(
                    "the upstream status message id is longer than {MAX_UPSTREAM_ID_CHARS} characters"
                ));
            }
        }
        if self.artifacts.len() > MAX_ARTIFACTS_PER_TASK {
            return Err(format!(
                "the upstream task has more than {MAX_ARTIFACTS_PER_TASK} artifacts"
            ));
        }
        if let Some(a) = self
            .artifacts
            .iter()
            .find(|a| a.id.chars().count() > MAX_UPSTREAM_ID_CHARS)
        {
            return Err(format!(
                "upstream artifact id {:.40}… is longer than {MAX_UPSTREAM_ID_CHARS} characters",
                a.id
            ));
        }
        Ok(())
    }
}
