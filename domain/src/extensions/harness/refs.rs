//! References to other entities: a task (parent or sub-task, with its last known state) and
//! the agent or other entity it belongs to.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityRef {
    pub kind: String,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRef {
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<EntityRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_state: Option<String>,
}

impl TaskRef {
    pub fn local(task_id: &str, state: Option<&str>) -> Self {
        Self {
            task_id: task_id.to_string(),
            agent: None,
            state: state.map(str::to_string),
            sub_state: None,
        }
    }
}
