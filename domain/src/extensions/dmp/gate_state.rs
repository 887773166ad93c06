//! gate/v1 (DMP §8.5): the read-only list of gates that hold a task in AUTH_REQUIRED, on
//! `status.message.metadata`, and the one fixed sentence per gate type that stands in for a
//! gate's body. Only a gate's id, type and time ever leave the host; never its data (§5.8).

use super::ext_data::ExtensionData;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The gate/v1 extension URI (§8.5, registry §11.10).
pub const GATE_URI: &str = "https://dispatch.foo/a2a/ext/gate/v1";

/// The sentence for a gate type the Dispatch profile gives none (ours; §8.5 sentences are not
/// normative).
pub const GENERIC_GATE_SENTENCE: &str = "Waiting for the project owner to decide.";

/// The `status.message` text for an open gate of `gate_type` (§8.5, the Dispatch profile's
/// sentences: task-proposal, tool-approval, scope, wake); other types get
/// `GENERIC_GATE_SENTENCE`.
pub fn gate_sentence(gate_type: &str) -> &'static str {
    match gate_type {
        "task-proposal" => "Waiting for the project owner to approve this handoff.",
        "tool-approval" => "Waiting for the project owner to approve a tool call.",
        "scope" => "Waiting for the project owner to approve a change of scope.",
        "wake" => "Waiting for the project owner to approve waking the task.",
        _ => GENERIC_GATE_SENTENCE,
    }
}

/// An open, in-scope gate as the projection sees it (§8.7 facts `openGates[]`): the gate
/// message's id, its type (§11.6) and when it opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenGate {
    pub id: String,
    #[serde(rename = "type")]
    pub gate_type: String,
    pub opened_at: Timestamp,
}

/// Who a gate waits on: always the owner, since a client never answers one (§8.5, §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitingOn {
    #[default]
    Owner,
}

/// One entry of `GateStateV1.gates` (§8.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateEntry {
    pub id: String,
    #[serde(rename = "type")]
    pub gate_type: String,
    pub opened_at: Timestamp,
    pub waiting_on: WaitingOn,
}

/// `GateStateV1 = { gates: [{ id, type, openedAt, waitingOn: "owner" }] }` (§8.5).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GateStateV1 {
    pub gates: Vec<GateEntry>,
}

impl GateStateV1 {
    /// The gate/v1 view of the open gates, in the order given (oldest first by convention).
    pub fn from_open_gates(gates: &[OpenGate]) -> Self {
        Self {
            gates: gates
                .iter()
                .map(|g| GateEntry {
                    id: g.id.clone(),
                    gate_type: g.gate_type.clone(),
                    opened_at: g.opened_at,
                    waiting_on: WaitingOn::Owner,
                })
                .collect(),
        }
    }
}

/// On `status.message.metadata` while AUTH_REQUIRED (§8.5); the caller also names `GATE_URI`
/// in the message's `extensions` (§8.3), and writes it only when the extension is active.
impl ExtensionData for GateStateV1 {
    const URI: &'static str = GATE_URI;
}

#[cfg(test)]
#[path = "gate_state_tests.rs"]
mod tests;
