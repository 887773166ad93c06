//! The plan on a task: attaching or replacing it, starting, completing and failing its steps
//! (by command, or by a plan sent in an envelope), and folding those events into the head.

use crate::error::DomainError;
use crate::extensions::harness::{Plan, Step, StepState};
use crate::ids::stored::Stored;
use crate::ids::StepId;
use crate::time::Timestamp;

use super::events::TaskEvent;
use super::head::TaskHead;
use super::status::refuse_if_terminal;

/// Changes the step `id` of the plan, if there is one.
pub(super) fn with_step(head: &mut TaskHead, id: &str, f: impl FnOnce(&mut Step)) {
    if let Some(step) = head
        .ext
        .as_mut()
        .and_then(|d| d.plan.as_mut())
        .and_then(|p| p.steps.iter_mut().find(|s| s.id == id))
    {
        f(step);
    }
}

/// A step's id as the plan stores it (checked when the plan came in: `Plan::normalize`).
pub(super) fn id_of(step: &Step) -> StepId {
    StepId::from_stored(step.id.clone())
}

/// The plan and the index of its step `step`, or why there is none.
pub(super) fn step_index<'a>(
    head: &'a TaskHead,
    step: &str,
) -> Result<(&'a Plan, usize), DomainError> {
    let plan = head
        .ext
        .as_ref()
        .and_then(|d| d.plan.as_ref())
        .ok_or_else(|| DomainError::invalid("plan", "the task has no plan"))?;
    let i = plan
        .index_of(step)
        .ok_or_else(|| DomainError::invalid("step", format!("the plan has no step {step:?}")))?;
    Ok((plan, i))
}

/// A step that is still pending or active.
fn open_step<'a>(head: &'a TaskHead, step: &str) -> Result<(&'a Plan, usize), DomainError> {
    let (plan, i) = step_index(head, step)?;
    let s = &plan.steps[i];
    if matches!(s.state, StepState::Done | StepState::Failed) {
        return Err(DomainError::invalid(
            "step",
            format!("step {} is already {:?}", s.id, s.state).to_lowercase(),
        ));
    }
    Ok((plan, i))
}

/// A plan event: a first plan, or a replacement keeping done outputs where ids match.
fn plan_event(head: &TaskHead, plan: Plan, at: Timestamp) -> TaskEvent {
    let plan = match head.ext.as_ref().and_then(|d| d.plan.as_ref()) {
        Some(old) => plan.replacing(old),
        None => plan,
    };
    TaskEvent::PlanCreated {
        plan,
        at: head.next_stamp(at),
    }
}

/// `CreatePlan`: attaches a plan (or replaces it, keeping done steps' outputs where ids match).
pub(super) fn create_plan(
    head: &TaskHead,
    plan: Plan,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    head.ext_or_refuse("plan")?;
    let plan = plan.normalize("plan")?;
    Ok(vec![plan_event(head, plan, at)])
}

/// `StartStep`: a pending step whose dependencies are done becomes active.
pub(super) fn start_step(
    head: &TaskHead,
    step: String,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    let (plan, i) = step_index(head, &step)?;
    let s = &plan.steps[i];
    if s.state != StepState::Pending {
        return Err(DomainError::invalid(
            "step",
            format!("step {} is {:?}, not pending", s.id, s.state).to_lowercase(),
        ));
    }
    let blockers = plan.blockers(i);
    if !blockers.is_empty() {
        return Err(DomainError::invalid(
            "step",
            format!("step {} waits for {}", s.id, blockers.join(", ")),
        ));
    }
    Ok(vec![TaskEvent::StepStarted {
        step_id: id_of(s),
        at: head.next_stamp(at),
    }])
}

/// `CompleteStep`: an open step whose dependencies are done completes with an output.
pub(super) fn complete_step(
    head: &TaskHead,
    step: String,
    output: String,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    let (plan, i) = open_step(head, &step)?;
    let s = &plan.steps[i];
    let blockers = plan.blockers(i);
    if !blockers.is_empty() {
        return Err(DomainError::invalid(
            "step",
            format!(
                "step {} cannot complete before {} {} done",
                s.id,
                blockers.join(", "),
                if blockers.len() == 1 { "is" } else { "are" }
            ),
        ));
    }
    Ok(vec![TaskEvent::StepCompleted {
        step_id: id_of(s),
        output,
        at: head.next_stamp(at),
    }])
}

/// `FailStep`: an open step fails, with the reason.
pub(super) fn fail_step(
    head: &TaskHead,
    step: String,
    reason: String,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    let (plan, i) = open_step(head, &step)?;
    let s = &plan.steps[i];
    Ok(vec![TaskEvent::StepFailed {
        step_id: id_of(s),
        reason,
        at: head.next_stamp(at),
    }])
}

/// A plan in an envelope: the same steps with new states are step transitions;
/// anything else replaces the plan.
pub(super) fn envelope_plan(
    head: &TaskHead,
    plan: Plan,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    let Some(old) = head.ext.as_ref().and_then(|d| d.plan.as_ref()) else {
        return Ok(vec![TaskEvent::PlanCreated { plan, at }]);
    };
    let same_shape = old.steps.len() == plan.steps.len()
        && old
            .steps
            .iter()
            .zip(&plan.steps)
            .all(|(a, b)| a.id == b.id && a.depends_on == b.depends_on);
    if !same_shape {
        return Ok(vec![plan_event(head, plan, at)]);
    }
    let mut scratch = old.clone();
    let mut events = Vec::new();
    for (i, (was, now)) in old.steps.iter().zip(&plan.steps).enumerate() {
        if was.state == now.state {
            continue;
        }
        let field = format!("plan.steps[{i}].state");
        match (was.state, now.state) {
            (StepState::Pending, StepState::Active) => {
                let blockers = scratch.blockers(i);
                if !blockers.is_empty() {
                    return Err(DomainError::invalid(
                        field,
                        format!("step {} waits for {}", was.id, blockers.join(", ")),
                    ));
                }
                events.push(TaskEvent::StepStarted {
                    step_id: id_of(was),
                    at,
                });
            }
            (StepState::Pending | StepState::Active, StepState::Done) => {
                let blockers = scratch.blockers(i);
                if !blockers.is_empty() {
                    return Err(DomainError::invalid(
                        field,
                        format!(
                            "step {} cannot complete before {} done",
                            was.id,
                            blockers.join(", ")
                        ),
                    ));
                }
                let Some(output) = now.output.clone() else {
                    return Err(DomainError::invalid(
                        format!("plan.steps[{i}].output"),
                        "a step completes with an output",
                    ));
                };
                events.push(TaskEvent::StepCompleted {
                    step_id: id_of(was),
                    output,
                    at,
                });
            }
            (StepState::Pending | StepState::Active, StepState::Failed) => {
                events.push(TaskEvent::StepFailed {
                    step_id: id_of(was),
                    reason: now.output.clone().unwrap_or_else(|| "failed".into()),
                    at,
                });
            }
            (from, to) => {
                return Err(DomainError::invalid(
                    field,
                    format!("a step does not go from {from:?} to {to:?}").to_lowercase(),
                ))
            }
        }
        scratch.steps[i].state = now.state;
    }
    Ok(events)
}

pub(super) fn apply_plan_created(head: &mut TaskHead, plan: &Plan, at: Timestamp) {
    if let Some(d) = head.ext.as_mut() {
        d.plan = Some(plan.clone());
    }
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_step_started(head: &mut TaskHead, step_id: &StepId, at: Timestamp) {
    with_step(head, step_id.as_str(), |s| s.state = StepState::Active);
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_step_completed(
    head: &mut TaskHead,
    step_id: &StepId,
    output: &str,
    at: Timestamp,
) {
    with_step(head, step_id.as_str(), |s| {
        s.state = StepState::Done;
        s.output = Some(output.to_string());
    });
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_step_failed(head: &mut TaskHead, step_id: &StepId, at: Timestamp) {
    with_step(head, step_id.as_str(), |s| s.state = StepState::Failed);
    head.last_timeline = head.last_timeline.max(at);
}
