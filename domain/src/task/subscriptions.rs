//! Webhook subscriptions on a task: registering (or replacing, same id) and deleting push
//! notification configs, allowed in any state, and the subscriptions the head keeps.

use crate::error::DomainError;
use crate::ids::Principal;
use crate::push::{PushConfigSpec, MAX_PUSH_CONFIGS_PER_PRINCIPAL};
use crate::time::Timestamp;

use super::events::TaskEvent;
use super::head::TaskHead;

/// `SetPushConfig`: registers a config of `by`'s (none: the owner's), or replaces that
/// principal's config with its id; at most `MAX_PUSH_CONFIGS_PER_PRINCIPAL` each. Each
/// principal on a task has its own configs, ids and room (ADR 021): what one does with its
/// own never takes another's.
pub(super) fn set(
    head: &TaskHead,
    mut config: PushConfigSpec,
    by: Option<Principal>,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    let by = by.unwrap_or_else(|| head.owner.clone());
    room_for(head, &by, &config.id)?;
    config.owner = (by != head.owner).then_some(by);
    Ok(vec![TaskEvent::PushConfigSet {
        config,
        at: head.next_stamp(at),
    }])
}

/// Whether `by` may hold one more config with `id` on the task: a replacement (same id) always,
/// a new one while `by` holds fewer than `MAX_PUSH_CONFIGS_PER_PRINCIPAL`. Decided commands and
/// admitted (imported) events read this one rule.
pub(super) fn room_for(head: &TaskHead, by: &Principal, id: &str) -> Result<(), DomainError> {
    let mine = || head.push.iter().filter(|p| p.belongs_to(by, &head.owner));
    let replaces = mine().any(|p| p.id == id);
    let held = mine().count();
    if !replaces && held >= MAX_PUSH_CONFIGS_PER_PRINCIPAL {
        return Err(DomainError::invalid(
            "id",
            format!(
                "{by} already has {held} push notification configs on task {}, the limit; \
                 delete one first",
                head.id
            ),
        ));
    }
    Ok(())
}

/// `DeletePushConfig`: removing a config that does not exist changes nothing.
pub(super) fn delete(
    head: &TaskHead,
    id: String,
    by: Option<&Principal>,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    let by = by.unwrap_or(&head.owner);
    let Some(sub) = head
        .push
        .iter()
        .find(|p| p.id == id && p.belongs_to(by, &head.owner))
    else {
        return Ok(vec![]);
    };
    Ok(vec![TaskEvent::PushConfigDeleted {
        key: Some(sub.key()),
        id,
        at: head.next_stamp(at),
    }])
}

/// The subscription receives the updates of events after this one (`version`).
pub(super) fn apply_set(head: &mut TaskHead, version: u64, config: &PushConfigSpec, at: Timestamp) {
    let sub = config.clone().subscribe(version);
    match head.push.iter_mut().find(|p| p.key() == sub.key()) {
        Some(p) => *p = sub,
        None => head.push.push(sub),
    }
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_deleted(head: &mut TaskHead, id: &str, key: Option<&str>, at: Timestamp) {
    match key {
        Some(key) => head.push.retain(|p| p.key() != key),
        // Recorded when an id named one config of the task.
        None => head.push.retain(|p| p.id != id),
    }
    head.last_timeline = head.last_timeline.max(at);
}
