//! A handed-off work item after approval: ready → working → review → landing → landed, or
//! dropped, each step an event (`WorkAdvanced`) the agent (an intrinsic tool) or an operator
//! commands. The task's A2A state is the §8.7 projection's (`handoff_status`; rows 2, 6, 9):
//! WORKING, COMPLETED "Landed." with the work artifacts, REJECTED when dropped. `WorkStateV1` rides on
//! `status.message.metadata` as on `Task.metadata`.

use crate::error::DomainError;
use crate::extensions::dmp::{ExtensionData, WorkStatus, WORK_URI};
use crate::wire::Message;

use super::events::TaskEvent;
use super::handoff_status;
use super::head::TaskHead;
pub use super::shapes::AdvanceWork;

pub use super::handoff_status::DROPPED_SENTENCE;

/// Whether the lifecycle goes from `from` to `to`.
fn allowed(from: &WorkStatus, to: &WorkStatus) -> bool {
    use WorkStatus::*;
    let active = |s: &WorkStatus| matches!(s, Working | Review | Landing | Host(_));
    match (from, to) {
        (Draft | Landed | Dropped, _) => false,
        (_, Draft | Ready) => false,
        (_, Dropped) => true,
        (Ready, s) => active(s),
        (Landing, Landed) => true,
        (_, Landed) => false,
        (f, t) => active(f) && active(t) && f != t,
    }
}

pub(super) fn advance(head: &TaskHead, c: AdvanceWork) -> Result<Vec<TaskEvent>, DomainError> {
    let handoff = head.handoff.as_ref().ok_or_else(|| {
        DomainError::UnsupportedOperation(format!("task {} is no handoff", head.id))
    })?;
    if !allowed(&handoff.status, &c.status) {
        return Err(DomainError::invalid(
            "status",
            format!(
                "the work item of task {} cannot go from {} to {}",
                head.id,
                handoff.status.as_str(),
                c.status.as_str()
            ),
        ));
    }
    let at = head.next_stamp(c.at);
    let mut events = vec![TaskEvent::WorkAdvanced {
        status: c.status.clone(),
        at,
    }];
    events.extend(c.artifacts.iter().map(|a| TaskEvent::ArtifactAdded {
        artifact: a.to_artifact(),
        last_chunk: true,
        at,
    }));
    let shown = handoff_status::shown_after(Some(head), &events)?;
    let mut said = Message::agent_text(
        format!(
            "{}:work:{}:{}",
            head.id,
            c.status.as_str(),
            head.history_len
        ),
        shown.text,
    );
    said.extensions = vec![WORK_URI.into()];
    let mut moved = handoff.clone();
    moved.status = c.status;
    said.metadata = Some(moved.work_state(head.id.as_str()).to_metadata());
    events.push(TaskEvent::StatusChanged {
        state: shown.state,
        message: Some(said),
        at,
    });
    Ok(events)
}

pub(super) fn apply_advanced(head: &mut TaskHead, status: &WorkStatus) {
    if let Some(h) = head.handoff.as_mut() {
        h.status = status.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use WorkStatus::*;

    #[test]
    fn the_lifecycle_goes_forward_and_back_between_active_stages_only() {
        assert!(allowed(&Ready, &Working));
        assert!(allowed(&Working, &Review));
        assert!(allowed(&Review, &Working));
        assert!(allowed(&Review, &Landing));
        assert!(allowed(&Landing, &Landed));
        assert!(allowed(&Ready, &Host("qa".into())));
        assert!(allowed(&Working, &Dropped));
        assert!(!allowed(&Working, &Landed), "landing comes first");
        assert!(!allowed(&Draft, &Working), "a draft moves only by its gate");
        assert!(!allowed(&Landed, &Working));
        assert!(!allowed(&Dropped, &Working));
        assert!(!allowed(&Working, &Working));
        assert!(!allowed(&Working, &Ready));
    }
}
