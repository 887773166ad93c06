//! Messages: a user's message (refused from non-participants; `/model` and `/effort`; A2UI
//! actions; envelopes that update the task extension data) and the agent's, and their folding.

use serde_json::Value;

use crate::error::DomainError;
use crate::extensions::harness::{self, Effort, TaskExtensionData};
use crate::extensions::hitl::{self, HITL_URI};
use crate::ids::{ParticipantId, Principal};
use crate::task::intake;
use crate::time::Timestamp;
use crate::wire::{Message, Part, Role};

use super::commands::AppendUserMessage;
use super::events::TaskEvent;
use super::head::TaskHead;
use super::status::refuse_if_terminal;
use super::{help, participants, plan, sharing, subtasks};

/// `AppendUserMessage`: a client's message to an existing, unfinished task of its context.
/// Messages a task's history may hold before a client's message is refused (the task's work
/// goes on in a new task of the same context).
pub const MAX_HISTORY_MESSAGES: u64 = 10_000;
/// Bytes of history (messages as JSON, summed) a task may hold before a client's or the
/// agent's message is refused: what any read of the task can be asked to carry is bounded by
/// it. (A status message still enters: a task must always be able to finish.)
pub const MAX_HISTORY_BYTES: u64 = 16 * 1024 * 1024;

/// Refuses `message` (as it would be stored) when it would take the history past
/// `MAX_HISTORY_BYTES`.
fn within_budget(head: &TaskHead, message: &Message) -> Result<(), DomainError> {
    let size = crate::wire::json_size(message) as u64;
    if head.history_bytes.saturating_add(size) > MAX_HISTORY_BYTES {
        return Err(DomainError::invalid(
            "message",
            format!(
                "task {} holds {} bytes of history; this message ({size} bytes) would take it \
                 past {MAX_HISTORY_BYTES}, the most a task may; continue in a new task of context {}",
                head.id, head.history_bytes, head.context_id
            ),
        ));
    }
    Ok(())
}

pub(super) fn append_user_message(
    head: &TaskHead,
    c: AppendUserMessage,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    if head.history_len >= MAX_HISTORY_MESSAGES {
        return Err(DomainError::invalid(
            "message",
            format!(
                "task {} holds {} messages, the most a task may ({MAX_HISTORY_MESSAGES});                  continue in a new task of context {}",
                head.id, head.history_len, head.context_id
            ),
        ));
    }
    if let Some(gate) = head.open_tool_approval() {
        return Err(DomainError::UnsupportedOperation(format!(
            "task {} waits for tool calls to be approved (gate {}); the task's owner or an \
             admin answers with a hitl/v1 tool_approval_response",
            head.id, gate.id
        )));
    }
    if let Some(gate) = head.open_gates().next() {
        return Err(DomainError::UnsupportedOperation(format!(
            "task {} waits for a decision on gate {} ({}); a deciding principal answers it              with an envelope/v1 answer (replyTo {}, choice {})",
            head.id,
            gate.id,
            gate.kind.name(),
            gate.id,
            gate.kind.choices().join(" or ")
        )));
    }
    intake::validate_user_message(&c.message, "message")?;
    if let Some(ctx) = c.message.context_id.as_deref() {
        if ctx != head.context_id.as_str() {
            return Err(DomainError::invalid(
                "message.contextId",
                format!(
                    "does not match the context {} of task {}",
                    head.context_id, head.id
                ),
            ));
        }
    }
    user_message(head, c.message, c.caller.as_ref(), c.at)
}

/// `AppendAgentMessage`: the agent says something (kept in history).
pub(super) fn append_agent_message(
    head: &TaskHead,
    message: Message,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    intake::validate_agent_message(&message, "message")?;
    let at = head.next_stamp(at);
    let message = head.own_message(message, at);
    within_budget(head, &message)?;
    Ok(vec![TaskEvent::MessageAppended {
        message,
        at,
        acted_by: None,
    }])
}

/// A user message: who speaks (the caller, ADR 021), membership and roles, `/model` and
/// `/effort`, envelopes, help answers and participant tasks, then the message itself.
fn user_message(
    head: &TaskHead,
    mut message: Message,
    caller: Option<&Principal>,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    let named = harness::sender_of(&message, "message")?;
    let at = head.next_stamp(at);
    let refused = |participant_id: Option<ParticipantId>, reason: String| {
        Ok(vec![TaskEvent::MessageRefused {
            participant_id,
            reason,
            at,
        }])
    };
    let speaker = match sharing::speaker(head, caller.unwrap_or(&head.owner), named.clone()) {
        Ok(s) => s,
        Err(reason) => return refused(named, format!("message not accepted: {reason}")),
    };
    let sender = speaker.sender;
    if named.is_none() {
        // The history says who spoke, also when the caller did not write it.
        if let Some(s) = &sender {
            message
                .metadata
                .get_or_insert_with(Default::default)
                .insert(harness::PARTICIPANT_ID_KEY.into(), s.as_str().into());
        }
    }
    if let Some(data) = &head.ext {
        if !data.participants.is_empty() {
            let member = sender
                .as_ref()
                .and_then(|s| data.participant(s.as_str()))
                .is_some();
            if !member {
                let reason = match &sender {
                    Some(s) => {
                        format!("message not accepted: {s} is not a participant of this task")
                    }
                    None => "message not accepted: name the sender in metadata.participant_id"
                        .to_string(),
                };
                return refused(sender, reason);
            }
            if let Some(reason) = sharing::may_not_send(head, sender.as_ref()) {
                return refused(sender, reason);
            }
            if let Some(help) = &head.pending_help {
                let answers = hitl::response_of(&message).is_some();
                if answers && sender.as_ref() != Some(&help.participant_id) {
                    return refused(
                        sender,
                        format!(
                            "message not accepted: question {} is {}'s to answer",
                            help.id, help.participant_id
                        ),
                    );
                }
            }
        }
        match harness::slash_command(&message) {
            Some(harness::SlashCommand::Model(name)) => {
                if name.is_empty()
                    || name.len() > harness::MAX_MODEL_NAME_BYTES
                    || name.contains(char::is_whitespace)
                {
                    return Err(DomainError::invalid(
                        "model",
                        format!(
                            "/model needs one model name of 1 to {} bytes, e.g. /model gpt-5",
                            harness::MAX_MODEL_NAME_BYTES
                        ),
                    ));
                }
                return Ok(vec![TaskEvent::ModelChanged {
                    model: name,
                    by: sender,
                    at,
                }]);
            }
            Some(harness::SlashCommand::Effort(level)) => {
                let effort = match level.as_str() {
                    "low" => Effort::Low,
                    "medium" => Effort::Medium,
                    "high" => Effort::High,
                    other => {
                        return Err(DomainError::invalid(
                            "reasoning_effort",
                            format!("/effort takes low, medium or high (got {other:?})"),
                        ))
                    }
                };
                return Ok(vec![TaskEvent::ReasoningEffortChanged {
                    effort,
                    by: sender,
                    at,
                }]);
            }
            None => {}
        }
    }
    // A user's action on a surface: only on one this task created; the agent reads it as text.
    let message = match crate::extensions::a2ui::action_of(&message) {
        None => message,
        Some(action) => match action.and_then(|a| head.ui.check(&a).map(|()| a)) {
            Ok(a) => {
                let mut m = message;
                m.parts.insert(0, Part::text(a.text()));
                m
            }
            Err(reason) => {
                return Ok(vec![TaskEvent::MessageRefused {
                    participant_id: sender,
                    reason,
                    at,
                }])
            }
        },
    };
    let message = match hitl::response_of(&message) {
        None => message,
        Some(response) => ask_user_answer(head, message, response?)?,
    };
    let mut events = Vec::new();
    if let Some(raw) = harness::envelope_of(&message) {
        events.extend(envelope(head, raw, sender.as_ref(), at)?);
    }
    // An envelope-only message updates the task; it is not work for the agent.
    let mut wake = !harness::is_envelope_only(&message);
    let message = head.own_message(message, at);
    within_budget(head, &message)?;
    let follow_up = if head.pending_help.is_some() {
        // Only the asked participant's reply resumes the task.
        let answered = help::answer(head, sender.as_ref(), at);
        wake = answered.is_some();
        answered
    } else if head.awaiting_assignee.is_some() {
        // A task for a participant is finished by that participant, not by the agent.
        wake = false;
        subtasks::finish_participant_task(head, sender.as_ref(), &message, at)
    } else {
        None
    };
    events.push(TaskEvent::MessageAppended {
        message,
        at,
        acted_by: speaker.acted_by,
    });
    events.extend(follow_up);
    if wake {
        events.push(TaskEvent::AgentWorkRequested {
            reason: "new input".into(),
            at,
        });
    }
    Ok(events)
}

/// A hitl/v1 `ask_user_response`: it answers the open help request it names, with one
/// answer per question; the agent reads the answer as the message's first text.
fn ask_user_answer(
    head: &TaskHead,
    mut message: Message,
    response: hitl::Response,
) -> Result<Message, DomainError> {
    let field = |rest: &str| format!("message.metadata[{HITL_URI}]{rest}");
    let hitl::Response::AskUser { id, answers } = response else {
        return Err(DomainError::invalid(
            field(".type"),
            format!("task {} waits for no tool approval", head.id),
        ));
    };
    let help = head
        .pending_help
        .as_ref()
        .filter(|h| h.id == id)
        .ok_or_else(|| {
            DomainError::invalid(
                field(".id"),
                format!("{id:?} is no open question of task {}", head.id),
            )
        })?;
    if answers.len() != 1 {
        return Err(DomainError::invalid(
            field(".answers"),
            format!(
                "question {} takes one answer (got {})",
                help.id,
                answers.len()
            ),
        ));
    }
    let answer = answers[0].join(", ");
    message.parts.insert(0, Part::text(answer));
    Ok(message)
}

/// An envelope on an existing task: validated, permission-checked per field, merged.
fn envelope(
    head: &TaskHead,
    raw: &Value,
    sender: Option<&ParticipantId>,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    let incoming = harness::validate_envelope(raw)?;
    let given = |k: &str| raw.get(k).is_some();
    let Some(current) = &head.ext else {
        let mut data = incoming;
        data.lifecycle = Some(data.lifecycle());
        let plan = data.plan.take();
        let mut events = vec![TaskEvent::ExtensionUpdated {
            data,
            by: sender.cloned(),
            at,
        }];
        if let Some(p) = plan {
            events.push(TaskEvent::PlanCreated { plan: p, at });
        }
        return Ok(events);
    };
    let mut data = current.clone();
    data.name = incoming.name;
    data.goal = incoming.goal;
    if given("type") {
        data.kind = incoming.kind;
    }
    if given("description") {
        data.description = incoming.description;
    }
    if given("acceptance_criteria") {
        data.acceptance_criteria = incoming.acceptance_criteria;
    }
    if given("approve_tools") && incoming.approve_tools != current.approve_tools {
        participants::require_admin(current, sender, "approve_tools")?;
        data.approve_tools = incoming.approve_tools;
    }
    if given("participants") && incoming.participants != current.participants {
        participants::may_replace(current, &incoming.participants, sender)?;
        data.participants = incoming.participants;
    }
    for (field, mine, theirs) in [
        (
            "parent_tasks",
            &current.parent_tasks,
            &incoming.parent_tasks,
        ),
        ("sub_tasks", &current.sub_tasks, &incoming.sub_tasks),
    ] {
        if given(field) && mine != theirs {
            return Err(DomainError::NotPermitted {
                field: field.into(),
                reason: "is kept by the server as sub-tasks are spawned".into(),
            });
        }
    }
    let mut events = Vec::new();
    if data != *current {
        events.push(TaskEvent::ExtensionUpdated {
            data,
            by: sender.cloned(),
            at,
        });
    }
    if let Some(p) = incoming.plan {
        events.extend(plan::envelope_plan(head, p, at)?);
    }
    Ok(events)
}

pub(super) fn apply_message_appended(head: &mut TaskHead, message: &Message, at: Timestamp) {
    head.record_history(message);
    if message.role == Role::User && message.extensions.iter().any(|e| e == HITL_URI) {
        head.hitl = true;
    }
    head.last_timeline = head.last_timeline.max(at);
}

/// A refusal is the task's status message (the refused text never enters history).
pub(super) fn apply_message_refused(
    head: &mut TaskHead,
    version: u64,
    reason: &str,
    at: Timestamp,
) {
    let mut m = Message::agent_text(format!("{}:refused:{version}", head.id), reason);
    m.task_id = Some(head.id.to_string());
    m.context_id = Some(head.context_id.to_string());
    head.status.message = Some(m);
    head.status.timestamp = Some(at);
    head.status_version = version;
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_extension_updated(
    head: &mut TaskHead,
    data: &TaskExtensionData,
    at: Timestamp,
) {
    head.ext = Some(data.clone());
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_model_changed(head: &mut TaskHead, model: &str, at: Timestamp) {
    if let Some(d) = head.ext.as_mut() {
        d.model = Some(model.to_string());
    }
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_effort_changed(head: &mut TaskHead, effort: Effort, at: Timestamp) {
    if let Some(d) = head.ext.as_mut() {
        d.reasoning_effort = Some(effort);
    }
    head.last_timeline = head.last_timeline.max(at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ContextId, Principal, TaskId};
    use crate::task::{CreateTask, TaskAggregate, TaskCommand};
    use crate::time::Timestamp;

    fn task_with_history(len: u64) -> TaskAggregate {
        let mut state = TaskAggregate::default();
        let events = state
            .decide(TaskCommand::CreateTask(CreateTask {
                task_id: TaskId::parse("t-long").unwrap(),
                context_id: ContextId::parse("c").unwrap(),
                owner: Principal::new("acme", "alice").unwrap(),
                message: Message::user_text("m-0", "first"),
                at: Timestamp::from_unix_nanos(1),
                extension: None,
                awaiting_assignee: None,
            }))
            .unwrap();
        for e in &events {
            state.apply_event(e);
        }
        if let Some(h) = state.head.as_mut() {
            h.history_len = len;
        }
        state
    }

    fn append(state: &TaskAggregate) -> Result<Vec<TaskEvent>, DomainError> {
        state.decide(TaskCommand::AppendUserMessage(AppendUserMessage {
            message: Message::user_text("m-next", "more"),
            at: Timestamp::from_unix_nanos(2),
            caller: None,
        }))
    }

    /// The size `append` stores its message with on `state`.
    fn stored_size(state: &TaskAggregate) -> u64 {
        let events = append(state).unwrap();
        events
            .iter()
            .find_map(|e| match e {
                TaskEvent::MessageAppended { message, .. } => {
                    Some(crate::wire::json_size(message) as u64)
                }
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn given_history_bytes_that_leave_exactly_room_when_a_message_comes_then_it_is_kept() {
        let mut state = task_with_history(1);
        let size = stored_size(&state);
        state.head.as_mut().unwrap().history_bytes = MAX_HISTORY_BYTES - size;
        assert!(append(&state).is_ok());
    }

    #[test]
    fn given_history_bytes_one_short_of_room_when_a_message_comes_then_it_is_refused() {
        let mut state = task_with_history(1);
        let size = stored_size(&state);
        state.head.as_mut().unwrap().history_bytes = MAX_HISTORY_BYTES - size + 1;
        let e = append(&state).unwrap_err();
        assert!(e.to_string().contains("bytes of history"), "{e}");
        // The agent is held to the same budget.
        let e = state
            .decide(TaskCommand::AppendAgentMessage {
                message: Message::agent_text("a-1", "x".repeat(size as usize)),
                at: Timestamp::from_unix_nanos(3),
            })
            .unwrap_err();
        assert!(e.to_string().contains("bytes of history"), "{e}");
    }

    #[test]
    fn history_bytes_count_each_message_as_stored() {
        let state = task_with_history(1);
        let mut after = state.clone();
        let events = append(&state).unwrap();
        events.iter().for_each(|e| after.apply_event(e));
        let grew =
            after.head.as_ref().unwrap().history_bytes - state.head.as_ref().unwrap().history_bytes;
        assert_eq!(grew, stored_size(&state));
    }

    #[test]
    fn given_a_history_one_below_the_bound_when_a_message_comes_then_it_is_kept() {
        assert!(append(&task_with_history(MAX_HISTORY_MESSAGES - 1)).is_ok());
    }

    #[test]
    fn given_a_full_history_when_a_message_comes_then_it_is_refused_on_message() {
        let e = append(&task_with_history(MAX_HISTORY_MESSAGES)).unwrap_err();
        assert!(
            matches!(&e, DomainError::InvalidParams { field, .. } if field == "message"),
            "{e}"
        );
        assert!(e.to_string().contains("new task of context c"), "{e}");
    }
}
