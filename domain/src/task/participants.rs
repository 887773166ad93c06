//! Participants and their roles: only an admin changes them (`require_admin`), the last admin
//! is never demoted or removed, and `SetParticipantRole`.

use crate::error::DomainError;
use crate::extensions::harness::{Participant, Role, TaskExtensionData};
use crate::ids::ParticipantId;
use crate::time::Timestamp;

use super::events::TaskEvent;
use super::head::TaskHead;
use super::status::refuse_if_terminal;

/// Refuses a change of participants or roles by anyone but an admin (a task without
/// participants has no roles to protect).
pub(super) fn require_admin(
    data: &TaskExtensionData,
    by: Option<&ParticipantId>,
    field: &str,
) -> Result<(), DomainError> {
    if data.participants.is_empty() {
        return Ok(());
    }
    let role = by
        .and_then(|b| data.participant(b.as_str()))
        .map(|p| p.role);
    if role == Some(Role::Admin) {
        return Ok(());
    }
    Err(DomainError::NotPermitted {
        field: field.into(),
        reason: format!(
            "only an admin may change participants and roles ({} is {})",
            by.map_or("an unnamed sender", ParticipantId::as_str),
            role.map(|r| format!("{r:?}").to_lowercase())
                .unwrap_or_else(|| "not a participant".into())
        ),
    })
}

/// An envelope replacing the participants: only an admin, and never removing the last admin.
pub(super) fn may_replace(
    current: &TaskExtensionData,
    incoming: &[Participant],
    sender: Option<&ParticipantId>,
) -> Result<(), DomainError> {
    require_admin(current, sender, "participants")?;
    if current.admins() > 0 && !incoming.iter().any(|p| p.role == Role::Admin) {
        return Err(DomainError::NotPermitted {
            field: "participants".into(),
            reason: "the last admin of the task cannot be removed".into(),
        });
    }
    Ok(())
}

/// `SetParticipantRole`: only an admin, and never demoting the last admin.
pub(super) fn set_role(
    head: &TaskHead,
    participant_id: ParticipantId,
    role: Role,
    by: Option<ParticipantId>,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    let data = head.ext_or_refuse("participants")?;
    require_admin(data, by.as_ref(), "role")?;
    let Some(current) = data.participant(participant_id.as_str()) else {
        return Err(DomainError::invalid(
            "participant_id",
            format!(
                "{:?} is not a participant of this task",
                participant_id.as_str()
            ),
        ));
    };
    if current.role == Role::Admin && role != Role::Admin && data.admins() == 1 {
        return Err(DomainError::NotPermitted {
            field: "role".into(),
            reason: format!("{participant_id} is the last admin of the task"),
        });
    }
    if current.role == role {
        return Ok(vec![]);
    }
    Ok(vec![TaskEvent::ParticipantRoleChanged {
        participant_id,
        role,
        by,
        at: head.next_stamp(at),
    }])
}

pub(super) fn apply_role_changed(
    head: &mut TaskHead,
    participant_id: &ParticipantId,
    role: Role,
    at: Timestamp,
) {
    if let Some(p) = head.ext.as_mut().and_then(|d| {
        d.participants
            .iter_mut()
            .find(|p| p.id == participant_id.as_str())
    }) {
        p.role = role;
    }
    head.last_timeline = head.last_timeline.max(at);
}
