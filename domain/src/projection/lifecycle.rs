//! A task's lifecycle as events for an event bus (EventBridge on AWS, a signed webhook locally;
//! ADR 038): each status change, artifact update, gate and handoff of a task, with its ids,
//! tenant, state and generation — and the text the task carries (status messages, artifact
//! parts, a handoff's work) only at the `Full` detail level.

use serde_json::{json, Map, Value};

use crate::task::stored::StoredEvent;
use crate::task::{TaskEvent, TaskHead};
use crate::wire::{StreamResponse, TaskState};

/// The `source` of every event published.
pub const SOURCE: &str = "taskledger";
/// The most events one publication carries (EventBridge's `PutEvents` limit).
pub const MAX_BATCH: usize = 10;

/// How much of a task an event tells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DetailLevel {
    /// Ids, tenant, state, generation: no text of the task.
    #[default]
    Summary,
    /// Also the status message, the artifact's parts, the gate and the handoff's work.
    Full,
}

impl DetailLevel {
    pub fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "" | "summary" => Ok(Self::Summary),
            "full" => Ok(Self::Full),
            other => Err(format!("event detail level {other:?}: summary or full")),
        }
    }
}

/// One event for the bus.
#[derive(Debug, Clone, PartialEq)]
pub struct LifecycleEvent {
    /// `Task Status Changed`, `Task Input Required`, `Task Approval Required`,
    /// `Task Artifact Updated`, `Task Gate Raised`, `Task Handoff Proposed`.
    pub detail_type: &'static str,
    pub task_id: String,
    /// The task event it tells of.
    pub seq: u64,
    pub detail: Value,
}

/// Whether an event of `event_type` tells the bus anything (`visible`: a client was shown an
/// update for it): the stores mark such events for the relay.
pub fn is_lifecycle(event_type: &str, visible: bool) -> bool {
    visible || matches!(event_type, "GateRaised" | "HandoffProposed")
}

/// The bus events of task event `e` of the task whose head is `head` (ids, tenant, context).
pub fn events_of(head: &TaskHead, e: &StoredEvent, level: DetailLevel) -> Vec<LifecycleEvent> {
    let generation = e.update.as_ref().map(|u| u.generation);
    let base = |extra: Value| -> Value {
        let mut d = Map::new();
        d.insert("taskId".into(), json!(head.id.as_str()));
        d.insert("contextId".into(), json!(head.context_id.as_str()));
        d.insert("tenant".into(), json!(head.owner.tenant.as_str()));
        d.insert("seq".into(), json!(e.seq));
        if let Some(g) = generation {
            d.insert("generation".into(), json!(g));
        }
        d.insert("eventType".into(), json!(e.event_type));
        d.insert("time".into(), json!(e.recorded_at.to_rfc3339_millis()));
        if let Value::Object(more) = extra {
            d.extend(more);
        }
        Value::Object(d)
    };
    let event = |detail_type, detail| LifecycleEvent {
        detail_type,
        task_id: head.id.to_string(),
        seq: e.seq,
        detail,
    };
    let full = level == DetailLevel::Full;
    let mut out = Vec::new();
    if let Some(status) = e.update.as_ref().and_then(|u| u.status.as_ref()) {
        let mut extra = json!({"state": status.state.as_str()});
        if full {
            if let Ok(StreamResponse::StatusUpdate(u)) = serde_json::from_str(&status.body) {
                if let Some(m) = u.status.message {
                    extra["statusMessage"] = serde_json::to_value(m).unwrap_or_default();
                }
            }
        }
        let detail = base(extra);
        out.push(event("Task Status Changed", detail.clone()));
        match status.state {
            TaskState::InputRequired => out.push(event("Task Input Required", detail)),
            TaskState::AuthRequired => out.push(event("Task Approval Required", detail)),
            _ => {}
        }
        return out;
    }
    match e.decode() {
        Ok(TaskEvent::ArtifactAdded {
            artifact,
            last_chunk,
            ..
        }) if generation.is_some() => {
            let mut extra = json!({"artifactId": artifact.artifact_id, "append": false,
                "lastChunk": last_chunk});
            if let Some(n) = &artifact.name {
                extra["name"] = json!(n);
            }
            if full {
                extra["parts"] = serde_json::to_value(&artifact.parts).unwrap_or_default();
            }
            out.push(event("Task Artifact Updated", base(extra)));
        }
        Ok(TaskEvent::ArtifactChunkAppended {
            artifact_id,
            parts,
            last_chunk,
            ..
        }) if generation.is_some() => {
            let mut extra = json!({"artifactId": artifact_id.as_str(), "append": true,
                "lastChunk": last_chunk});
            if full {
                extra["parts"] = serde_json::to_value(&parts).unwrap_or_default();
            }
            out.push(event("Task Artifact Updated", base(extra)));
        }
        Ok(TaskEvent::GateRaised { gate }) => {
            let mut extra = json!({"gateId": gate.id, "kind": gate.kind});
            if full {
                extra["gate"] = serde_json::to_value(&gate).unwrap_or_default();
            }
            out.push(event("Task Gate Raised", base(extra)));
        }
        Ok(TaskEvent::HandoffProposed { work, .. }) => {
            let mut extra = json!({"priority": work.priority});
            if full {
                extra["work"] = serde_json::to_value(&work).unwrap_or_default();
            }
            out.push(event("Task Handoff Proposed", base(extra)));
        }
        _ => {}
    }
    out
}
