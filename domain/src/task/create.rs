//! Creating a task: its first message (and the envelope it may carry, or the extension data
//! the server sets for a sub-task), a participant task's opening, and the head it starts.

use crate::error::DomainError;
use crate::extensions::harness;
use crate::ids::{ContextId, Principal, TaskId};
use crate::task::intake::{self, TASK_CREATED_AT_KEY};
use crate::time::Timestamp;
use crate::wire::{Metadata, TaskState, TaskStatus};

use super::commands::CreateTask;
use super::events::TaskEvent;
use super::head::TaskHead;
use super::subtasks;

/// `CreateTask`: a client starts a task with its first message (refused if it exists).
pub(super) fn create_task(
    existing: Option<&TaskHead>,
    c: CreateTask,
) -> Result<Vec<TaskEvent>, DomainError> {
    if let Some(h) = existing {
        return Err(DomainError::TaskAlreadyExists {
            task_id: h.id.to_string(),
        });
    }
    intake::validate_user_message(&c.message, "message")?;
    let sender = harness::sender_of(&c.message, "message")?;
    let extension = match c.extension {
        Some(d) => Some(*d),
        None => harness::envelope_of(&c.message)
            .map(harness::validate_envelope)
            .transpose()?,
    };
    let mut message = c.message;
    intake::strip_server_keys(&mut message.metadata);
    intake::stamp_timeline(&mut message.metadata, c.at);
    message.task_id = Some(c.task_id.to_string());
    message.context_id = Some(c.context_id.to_string());
    let mut events = vec![TaskEvent::TaskCreated {
        task_id: c.task_id.clone(),
        context_id: c.context_id,
        owner: c.owner,
        at: c.at,
    }];
    if let Some(mut data) = extension {
        data.lifecycle = Some(data.lifecycle());
        let plan = data.plan.take();
        events.push(TaskEvent::ExtensionUpdated {
            data,
            by: sender,
            at: c.at,
        });
        if let Some(p) = plan {
            events.push(TaskEvent::PlanCreated { plan: p, at: c.at });
        }
    }
    events.push(TaskEvent::MessageAppended {
        message: message.clone(),
        at: c.at,
        acted_by: None,
    });
    if c.awaiting_assignee.is_none() {
        events.push(TaskEvent::AgentWorkRequested {
            reason: "task created".into(),
            at: c.at,
        });
    }
    if let Some(assignee) = c.awaiting_assignee {
        let goal = events
            .iter()
            .find_map(|e| match e {
                TaskEvent::ExtensionUpdated { data, .. } => Some(data.goal.clone()),
                _ => None,
            })
            .unwrap_or_else(|| message.text());
        events.extend(subtasks::open_participant_task(
            &c.task_id,
            message.context_id.clone(),
            goal,
            assignee,
            c.at,
        ));
    }
    Ok(events)
}

/// The head `TaskCreated` starts (`version`: the event's sequence).
pub(super) fn new_head(
    task_id: &TaskId,
    context_id: &ContextId,
    owner: &Principal,
    at: Timestamp,
    version: u64,
) -> TaskHead {
    let mut metadata = Metadata::new();
    metadata.insert(
        TASK_CREATED_AT_KEY.into(),
        serde_json::Value::String(at.to_rfc3339_nanos()),
    );
    TaskHead {
        id: task_id.clone(),
        context_id: context_id.clone(),
        owner: owner.clone(),
        created_at: at,
        status: TaskStatus {
            state: TaskState::Submitted,
            message: None,
            timestamp: Some(at),
            elicitations: Vec::new(),
        },
        status_version: version,
        status_metadata: None,
        metadata,
        artifacts: Vec::new(),
        history_len: 0,
        history_bytes: 0,
        recent: Default::default(),
        last_timeline: at,
        ext: None,
        pending_help: None,
        children: 0,
        awaiting_assignee: None,
        usage: None,
        work_requested: 0,
        turn_done: 0,
        execution_steps: 0,
        loaded_skills: Vec::new(),
        push: Vec::new(),
        ui: Default::default(),
        generation: 1,
        gates: Vec::new(),
        handoff: None,
        hitl: false,
        asked: Vec::new(),
        unshown: Vec::new(),
        upstream: None,
    }
}
