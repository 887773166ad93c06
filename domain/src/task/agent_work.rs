//! The agent's work on a task: the requests for a turn (what the relay turns into agent turns),
//! finished turns, continuations across turns, model usage, and the skills in its context.

use crate::error::DomainError;
use crate::extensions::usage::Usage;
use crate::time::Timestamp;

use super::commands::TaskCommand;
use super::events::TaskEvent;
use super::head::{TaskAggregate, TaskHead};

/// `FinishAgentTurn`: the worker finished the turn for the work requested at `work_seq`
/// (an older or repeated report changes nothing). A finished task records nothing more from a
/// turn: a redelivered turn finds it terminal and does nothing, so no record is needed.
pub(super) fn finish_turn(
    head: &TaskHead,
    work_seq: u64,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    if work_seq <= head.turn_done || head.status.state.is_terminal() {
        return Ok(vec![]);
    }
    Ok(vec![TaskEvent::AgentTurnFinished {
        work_seq,
        at: head.next_stamp(at),
    }])
}

/// `ContinueAgentWork`: the same execution goes on in a new turn, after `steps_taken` model
/// steps, unless the work request `after` is no longer the latest.
pub(super) fn continue_work(
    head: &TaskHead,
    after: u64,
    steps_taken: u32,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    // Finished, waiting for an answer, or newer work that runs the loop anyway.
    if head.status.state.is_terminal()
        || head.pending_help.is_some()
        || head.work_requested != after
    {
        return Ok(vec![]);
    }
    let at = head.next_stamp(at);
    Ok(vec![
        TaskEvent::AgentWorkRequested {
            reason: "continuation".into(),
            at,
        },
        TaskEvent::ExecutionContinued { steps_taken, at },
    ])
}

/// `RecordUsage`: a model call's usage, in any state.
pub(super) fn record_usage(
    head: &TaskHead,
    model: Option<String>,
    usage: Usage,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    Ok(vec![TaskEvent::UsageRecorded {
        model,
        usage,
        at: head.next_stamp(at),
    }])
}

/// `LoadSkill`: a skill's instructions join the agent's context (once).
pub(super) fn load_skill(
    head: &TaskHead,
    name: String,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    if head.loaded_skills.contains(&name) {
        return Ok(vec![]);
    }
    Ok(vec![TaskEvent::SkillLoaded {
        name,
        at: head.next_stamp(at),
    }])
}

/// `UnloadSkill`: a loaded skill's instructions leave the agent's context.
pub(super) fn unload_skill(
    head: &TaskHead,
    name: String,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    if !head.loaded_skills.contains(&name) {
        return Err(DomainError::invalid(
            "name",
            format!("skill {name} is not loaded"),
        ));
    }
    Ok(vec![TaskEvent::SkillUnloaded {
        name,
        at: head.next_stamp(at),
    }])
}

/// New work starts a new execution.
pub(super) fn apply_work_requested(head: &mut TaskHead, version: u64, at: Timestamp) {
    head.work_requested = version;
    head.execution_steps = 0;
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_execution_continued(head: &mut TaskHead, steps_taken: u32, at: Timestamp) {
    head.execution_steps = steps_taken;
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_turn_finished(head: &mut TaskHead, work_seq: u64, at: Timestamp) {
    head.turn_done = head.turn_done.max(work_seq);
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_usage_recorded(
    head: &mut TaskHead,
    model: Option<&str>,
    usage: &Usage,
    at: Timestamp,
) {
    head.usage
        .get_or_insert_with(Default::default)
        .record(model, usage);
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_skill_loaded(head: &mut TaskHead, name: &str, at: Timestamp) {
    if !head.loaded_skills.iter().any(|n| n == name) {
        head.loaded_skills.push(name.to_string());
    }
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_skill_unloaded(head: &mut TaskHead, name: &str, at: Timestamp) {
    head.loaded_skills.retain(|n| n != name);
    head.last_timeline = head.last_timeline.max(at);
}

/// Whether a turn's commit of `commands` leaves its task waiting for the client: the turn
/// ends there, so its record (`FinishAgentTurn`) may join that commit instead of following in
/// a commit of its own. A status that asks for input is the one such command.
pub fn ends_turn_waiting(commands: &[TaskCommand]) -> bool {
    commands
        .iter()
        .any(|c| matches!(c, TaskCommand::ChangeStatus { state, .. } if state.is_interrupted()))
}

impl TaskAggregate {
    /// Whether `commands` decide nothing here and on every later state of the task: a finished
    /// task records nothing more from a turn (and nothing leaves a terminal state). A commit
    /// path holding a state it kept may trust such a decision without asking the store.
    pub fn records_nothing_more(&self, commands: &[TaskCommand]) -> bool {
        !commands.is_empty()
            && self.head().is_some_and(|h| h.status.state.is_terminal())
            && commands
                .iter()
                .all(|c| matches!(c, TaskCommand::FinishAgentTurn { .. }))
    }
}
