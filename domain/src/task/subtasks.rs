//! Sub-tasks and participant tasks: spawning a child and composing its creation, recording its
//! state, waiting for the children, and a task its assignee finishes by replying.

use crate::error::DomainError;
use crate::extensions::harness::{self, Role, TaskExtensionData, TaskRef};
use crate::ids::{ParticipantId, StepId, TaskId};
use crate::task::intake;
use crate::time::Timestamp;
use crate::wire::{self, Message, Part, TaskState};

use super::commands::CreateTask;
use super::events::TaskEvent;
use super::head::TaskHead;
use super::plan::{id_of, step_index, with_step};
use super::status::refuse_if_terminal;

/// Longest summary of a child's state recorded on its parent.
pub const MAX_CHILD_SUMMARY_CHARS: usize = 500;

/// `SpawnSubTask`: links a new child `<id>.<n>` (the service then creates it, see
/// `child_creation`), optionally from a plan step (named by id or name). Refused when the
/// child's id would not be a valid task id (too long, many levels down).
pub(super) fn spawn(
    head: &TaskHead,
    step: Option<String>,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    head.ext_or_refuse("sub_tasks")?;
    let step_id = match step {
        Some(name) => Some(step_index(head, &name).map(|(p, i)| id_of(&p.steps[i]))?),
        None => None,
    };
    let child_id = TaskId::parse(format!("{}.{}", head.id, head.children + 1))
        .map_err(|e| DomainError::invalid("id", e))?;
    Ok(vec![TaskEvent::SubTaskSpawned {
        child_id,
        step_id,
        at: head.next_stamp(at),
    }])
}

/// The creation of the child `child_id` a parent spawned: same context and owner, the parent's
/// participants, model and reasoning effort, and a goal message referring to the parent. With
/// `for_participant`, a task for that participant: they become its assignee (any other
/// assignee a watcher) and it waits for their first message.
pub fn child_creation(
    parent: &TaskHead,
    child_id: TaskId,
    name: &str,
    goal: &str,
    for_participant: Option<&ParticipantId>,
    at: Timestamp,
) -> Result<CreateTask, DomainError> {
    let parent_ext = parent.ext.as_ref();
    let mut participants = parent_ext
        .map(|d| d.participants.clone())
        .unwrap_or_default();
    if let Some(target) = for_participant {
        for p in &mut participants {
            if p.role == Role::Assignee && p.id != target.as_str() {
                p.role = Role::Watcher;
            }
        }
        match participants.iter_mut().find(|p| p.id == target.as_str()) {
            Some(p) => p.role = Role::Assignee,
            None => {
                return Err(DomainError::invalid(
                    "participant_id",
                    format!(
                        "{:?} is not a participant of {}",
                        target.as_str(),
                        parent.id
                    ),
                ))
            }
        }
    }
    let data = TaskExtensionData {
        name: name.to_string(),
        goal: goal.to_string(),
        kind: None,
        description: String::new(),
        acceptance_criteria: vec![],
        participants,
        parent_tasks: vec![TaskRef::local(parent.id.as_str(), None)],
        sub_tasks: vec![],
        plan: None,
        lifecycle: None,
        model: parent_ext.and_then(|d| d.model.clone()),
        reasoning_effort: parent_ext.and_then(|d| d.reasoning_effort),
        approve_tools: parent_ext
            .map(|d| d.approve_tools.clone())
            .unwrap_or_default(),
    };
    let mut goal_message = Message {
        message_id: format!("{child_id}:goal"),
        context_id: None,
        task_id: None,
        role: wire::Role::User,
        parts: vec![Part::text(goal)],
        metadata: None,
        // A parent on which a client activated hitl/v1 passes it on: the child pauses alike.
        extensions: if parent.hitl {
            vec![crate::extensions::hitl::HITL_URI.into()]
        } else {
            vec![]
        },
        reference_task_ids: vec![parent.id.to_string()],
        elicitation_ids: vec![],
    };
    if let Some(p) = data.participants.iter().find(|p| p.role == Role::Admin) {
        goal_message
            .metadata
            .get_or_insert_with(Default::default)
            .insert(
                harness::PARTICIPANT_ID_KEY.into(),
                serde_json::Value::String(p.id.clone()),
            );
    }
    Ok(CreateTask {
        task_id: child_id,
        context_id: parent.context_id.clone(),
        owner: parent.owner.clone(),
        message: goal_message,
        at,
        extension: Some(Box::new(data)),
        awaiting_assignee: for_participant.cloned(),
    })
}

/// `RecordChildState`: a child's state changed; once every child is resolved the agent has
/// work again. A finished parent keeps its records as they were.
pub(super) fn record_child_state(
    head: &TaskHead,
    child_id: TaskId,
    child_state: TaskState,
    summary: String,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    let known = head
        .ext
        .as_ref()
        .is_some_and(|d| d.sub_tasks.iter().any(|r| r.task_id == child_id.as_str()));
    if !known {
        return Err(DomainError::invalid(
            "child_id",
            format!("{child_id} is not a sub-task of {}", head.id),
        ));
    }
    if head.status.state.is_terminal() {
        // A finished parent keeps its record as it was.
        return Ok(vec![]);
    }
    let at = head.next_stamp(at);
    let all_resolved =
        child_state.is_terminal() && head.unresolved_children().iter().all(|c| *c == child_id);
    let mut events = vec![TaskEvent::ChildStateRecorded {
        child_id,
        state: child_state,
        summary: summary.chars().take(MAX_CHILD_SUMMARY_CHARS).collect(),
        at,
    }];
    if all_resolved {
        events.push(TaskEvent::AgentWorkRequested {
            reason: "sub-tasks resolved".into(),
            at,
        });
    }
    Ok(events)
}

/// `AwaitSubTasks`: the agent's execution ends waiting for its unresolved sub-tasks.
pub(super) fn await_children(
    head: &TaskHead,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    let children = head.unresolved_children();
    // Resolved meanwhile (their work request is already committed), or waiting on
    // a participant's answer instead: no wait to announce.
    if children.is_empty() || head.pending_help.is_some() {
        return Ok(vec![]);
    }
    Ok(vec![TaskEvent::SubTasksAwaited {
        children,
        at: head.next_stamp(at),
    }])
}

/// A new task for a participant: it asks its goal (INPUT_REQUIRED) and waits for `assignee`.
pub(super) fn open_participant_task(
    task_id: &TaskId,
    context_id: Option<String>,
    goal: String,
    assignee: ParticipantId,
    at: Timestamp,
) -> [TaskEvent; 2] {
    let mut ask = Message::agent_text(format!("{task_id}:goal"), goal);
    ask.task_id = Some(task_id.to_string());
    ask.context_id = context_id;
    intake::stamp_timeline(&mut ask.metadata, at);
    // The wait first: the status that asks then carries its elicitation (draft A2A 1.1).
    [
        TaskEvent::ParticipantTaskOpened { assignee, at },
        TaskEvent::StatusChanged {
            state: TaskState::InputRequired,
            message: Some(ask),
            at,
        },
    ]
}

/// The assignee's reply (`reply`, as appended) completes a task for a participant, with the
/// reply's text; anyone else's message does not.
pub(super) fn finish_participant_task(
    head: &TaskHead,
    sender: Option<&ParticipantId>,
    reply: &Message,
    at: Timestamp,
) -> Option<TaskEvent> {
    let assignee = head.awaiting_assignee.as_ref()?;
    if sender != Some(assignee) {
        return None;
    }
    let mut done = Message::agent_text(format!("{}:done", head.id), reply.text());
    done.task_id = Some(head.id.to_string());
    done.context_id = Some(head.context_id.to_string());
    intake::stamp_timeline(&mut done.metadata, at);
    Some(TaskEvent::StatusChanged {
        state: TaskState::Completed,
        message: Some(done),
        at,
    })
}

pub(super) fn apply_spawned(
    head: &mut TaskHead,
    child_id: &TaskId,
    step_id: Option<&StepId>,
    at: Timestamp,
) {
    head.children += 1;
    let r = TaskRef::local(child_id.as_str(), Some(TaskState::Submitted.as_str()));
    if let Some(step) = step_id {
        with_step(head, step.as_str(), |s| s.linked_tasks.push(r.clone()));
    }
    if let Some(d) = head.ext.as_mut() {
        d.sub_tasks.push(r);
    }
    head.last_timeline = head.last_timeline.max(at);
}

/// The child's state on its sub-task record and on every step it is linked from.
pub(super) fn apply_child_state(
    head: &mut TaskHead,
    child_id: &TaskId,
    state: TaskState,
    at: Timestamp,
) {
    let child_id = child_id.as_str();
    if let Some(d) = head.ext.as_mut() {
        let name = state.as_str().to_string();
        for r in d.sub_tasks.iter_mut().filter(|r| r.task_id == child_id) {
            r.state = Some(name.clone());
        }
        if let Some(plan) = d.plan.as_mut() {
            for step in &mut plan.steps {
                for r in step
                    .linked_tasks
                    .iter_mut()
                    .filter(|r| r.task_id == child_id)
                {
                    r.state = Some(name.clone());
                }
            }
        }
    }
    head.last_timeline = head.last_timeline.max(at);
}

/// A status update, same state: the execution ended waiting for sub-tasks.
pub(super) fn apply_awaited(head: &mut TaskHead, version: u64, at: Timestamp) {
    head.status.timestamp = Some(at);
    head.status_version = version;
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_participant_task_opened(
    head: &mut TaskHead,
    assignee: &ParticipantId,
    at: Timestamp,
) {
    head.awaiting_assignee = Some(assignee.clone());
    head.last_timeline = head.last_timeline.max(at);
}

#[cfg(test)]
#[path = "subtasks_tests.rs"]
mod tests;
