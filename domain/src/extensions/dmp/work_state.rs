//! work/v1 state written back to a client (DMP §8.6 `WorkStateV1`): its handoff's work item
//! status and, while WORKING, the stage, on `Task.metadata` and `status.message.metadata`.

use super::ext_data::ExtensionData;
use super::work::WORK_URI;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A work item's status (§8.6 `WorkStateV1.status`): the lifecycle draft → ready → working →
/// review → landing → landed, or dropped, or a status of the host's own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WorkStatus {
    Draft,
    Ready,
    Working,
    Review,
    Landing,
    Landed,
    Dropped,
    /// A status outside the lifecycle, kept as the host names it (row 9 counts it WORKING).
    Host(String),
}

impl WorkStatus {
    pub fn parse(s: &str) -> Self {
        match s {
            "draft" => Self::Draft,
            "ready" => Self::Ready,
            "working" => Self::Working,
            "review" => Self::Review,
            "landing" => Self::Landing,
            "landed" => Self::Landed,
            "dropped" => Self::Dropped,
            other => Self::Host(other.to_owned()),
        }
    }
    pub fn as_str(&self) -> &str {
        match self {
            Self::Draft => "draft",
            Self::Ready => "ready",
            Self::Working => "working",
            Self::Review => "review",
            Self::Landing => "landing",
            Self::Landed => "landed",
            Self::Dropped => "dropped",
            Self::Host(s) => s,
        }
    }
    /// The WORKING sub-state this status shows as (§8.6 `stage`, §8.7 row 9).
    pub fn stage(&self) -> Option<Stage> {
        match self {
            Self::Review => Some(Stage::Review),
            Self::Landing => Some(Stage::Landing),
            _ => None,
        }
    }
}

impl Serialize for WorkStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for WorkStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self::parse(&String::deserialize(d)?))
    }
}

/// The TASK_STATE_WORKING sub-state (§8.6 `stage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Review,
    Landing,
}

impl Stage {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Review => "review",
            Self::Landing => "landing",
        }
    }
}

/// `WorkStateV1` (§8.6): `task` is the DMP work item id, never a branch or commit (§8.8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkStateV1 {
    pub task: String,
    pub title: String,
    pub status: WorkStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
}

impl WorkStateV1 {
    /// The state of a work item, with the stage its status implies.
    pub fn new(task: impl Into<String>, title: impl Into<String>, status: WorkStatus) -> Self {
        let stage = status.stage();
        Self {
            task: task.into(),
            title: title.into(),
            status,
            stage,
        }
    }
}

/// On `Task.metadata` and `status.message.metadata` (§8.6); on a message the caller also names
/// `WORK_URI` in `extensions` (§8.3), and writes it only when the extension is active.
impl ExtensionData for WorkStateV1 {
    const URI: &'static str = WORK_URI;
}

#[cfg(test)]
#[path = "work_state_tests.rs"]
mod tests;
