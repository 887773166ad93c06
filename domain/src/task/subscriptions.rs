//! Webhook subscriptions on a task: registering (or replacing, same id) and deleting push
//! notification configs, allowed in any state, and the subscriptions the head keeps.

use crate::error::DomainError;
use crate::ids::Principal;
use crate::push::{PushConfigSpec, MAX_PUSH_CONFIGS_PER_TASK};
use crate::time::Timestamp;

use super::events::TaskEvent;
use super::head::TaskHead;

/// `SetPushConfig`: registers a config of `by`'s (none: the owner's), or replaces that
/// principal's config with its id; at most `MAX_PUSH_CONFIGS_PER_TASK`. Each principal on a
/// task has its own configs (ADR 021).
pub(super) fn set(
    head: &TaskHead,
    mut config: PushConfigSpec,
    by: Option<Principal>,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    let by = by.unwrap_or_else(|| head.owner.clone());
    let existing = head.push.iter().find(|p| p.id == config.id);
    if existing.is_some_and(|p| !p.belongs_to(&by, &head.owner)) {
        return Err(DomainError::invalid(
            "id",
            format!(
                "push notification config id {:?} is taken on task {}; choose another (or leave \
                 it out to have one generated)",
                config.id, head.id
            ),
        ));
    }
    config.owner = (by != head.owner).then_some(by);
    let replaces = existing.is_some();
    if !replaces && head.push.len() >= MAX_PUSH_CONFIGS_PER_TASK {
        return Err(DomainError::invalid(
            "id",
            format!(
                "task {} already has {} push notification configs, the limit; delete one first",
                head.id,
                head.push.len()
            ),
        ));
    }
    Ok(vec![TaskEvent::PushConfigSet {
        config,
        at: head.next_stamp(at),
    }])
}

/// `DeletePushConfig`: removing a config that does not exist changes nothing.
pub(super) fn delete(
    head: &TaskHead,
    id: String,
    by: Option<&Principal>,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    let by = by.unwrap_or(&head.owner);
    if !head
        .push
        .iter()
        .any(|p| p.id == id && p.belongs_to(by, &head.owner))
    {
        return Ok(vec![]);
    }
    Ok(vec![TaskEvent::PushConfigDeleted {
        id,
        at: head.next_stamp(at),
    }])
}

/// The subscription receives the updates of events after this one (`version`).
pub(super) fn apply_set(head: &mut TaskHead, version: u64, config: &PushConfigSpec, at: Timestamp) {
    let sub = config.clone().subscribe(version);
    match head.push.iter_mut().find(|p| p.id == sub.id) {
        Some(p) => *p = sub,
        None => head.push.push(sub),
    }
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_deleted(head: &mut TaskHead, id: &str, at: Timestamp) {
    head.push.retain(|p| p.id != id);
    head.last_timeline = head.last_timeline.max(at);
}
