//! Access is a property of every delivery, not only of the first: a change of participants that
//! leaves principals without sight of a task deletes their push configs and records who lost
//! it (`AccessRevoked`) in the same commit, so their open streams end there (`projection::
//! stream::revoked`) and no later update is delivered to them (`TaskHead::delivers_to`).

use crate::ids::Principal;

use super::events::TaskEvent;
use super::head::{TaskAggregate, TaskHead};

impl TaskHead {
    /// Whether the principal `sub` belongs to still sees the task: only such subscriptions
    /// are delivered to.
    pub fn delivers_to(&self, sub: &crate::push::Subscription) -> bool {
        self.visible_to(sub.owner.as_ref().unwrap_or(&self.owner))
    }
}

/// Access is a property of every delivery: when `events` (decided on `state`) change the
/// participants so that principals who saw the task no longer do, their push configs are
/// deleted and an `AccessRevoked` names them (their streams end there), in the same commit.
pub(super) fn revoke_lost_access(
    state: &TaskAggregate,
    mut events: Vec<TaskEvent>,
) -> Vec<TaskEvent> {
    let Some(at) = events.iter().find_map(|e| match e {
        TaskEvent::ExtensionUpdated { at, .. } => Some(*at),
        _ => None,
    }) else {
        return events;
    };
    let Some(before) = state.head.as_ref() else {
        return events;
    };
    let mut after = state.clone();
    events.iter().for_each(|e| after.apply_event(e));
    let Some(now) = after.head.as_ref() else {
        return events;
    };
    let lost: Vec<Principal> = before
        .shared_with()
        .into_iter()
        .filter(|p| !now.visible_to(p))
        .collect();
    if lost.is_empty() {
        return events;
    }
    let configs: Vec<(String, String)> = now
        .push
        .iter()
        .filter(|s| s.owner.as_ref().is_some_and(|o| lost.contains(o)))
        .map(|s| (s.id.clone(), s.key()))
        .collect();
    events.extend(
        configs
            .into_iter()
            .map(|(id, key)| TaskEvent::PushConfigDeleted {
                id,
                key: Some(key),
                at,
            }),
    );
    events.push(TaskEvent::AccessRevoked {
        principals: lost,
        at,
    });
    events
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::push::PushConfigSpec;
    use crate::task::{AppendUserMessage, CreateTask, TaskCommand};
    use crate::time::Timestamp;
    use crate::wire::Message;

    fn who(s: &str) -> Principal {
        Principal::new("acme", s).unwrap()
    }

    fn team(members: &[(&str, &str)]) -> serde_json::Value {
        json!({"name": "n", "goal": "g", "participants": members.iter()
            .map(|(id, role)| json!({"id": id, "kind": "human", "role": role}))
            .collect::<Vec<_>>()})
    }

    fn envelope(from: &str, data: serde_json::Value, n: i64) -> TaskCommand {
        let message: Message = serde_json::from_value(json!({
            "messageId": format!("m-{n}"), "role": "ROLE_USER",
            "metadata": {"participant_id": from},
            "parts": [{"data": data, "mediaType": "application/vnd.tiny-harness.task+json"}]
        }))
        .unwrap();
        TaskCommand::AppendUserMessage(AppendUserMessage {
            message,
            at: Timestamp::from_unix_nanos(n * 1_000),
            caller: Some(who(from)),
        })
    }

    fn run(state: &mut TaskAggregate, command: TaskCommand) -> Vec<TaskEvent> {
        let events = state.decide(command).unwrap();
        events.iter().for_each(|e| state.apply_event(e));
        events
    }

    /// Given alice's task shared with bob and carol, bob with a webhook of his own.
    fn given() -> TaskAggregate {
        let mut state = TaskAggregate::default();
        run(
            &mut state,
            TaskCommand::CreateTask(CreateTask {
                task_id: crate::ids::TaskId::parse("t-1").unwrap(),
                context_id: crate::ids::ContextId::parse("c-1").unwrap(),
                owner: who("alice"),
                message: Message::user_text("m-0", "hello"),
                at: Timestamp::from_unix_nanos(1_000),
                extension: None,
                awaiting_assignee: None,
            }),
        );
        run(
            &mut state,
            envelope(
                "alice",
                team(&[
                    ("alice", "admin"),
                    ("bob", "assignee"),
                    ("carol", "watcher"),
                ]),
                2,
            ),
        );
        let hook = |id: &str| -> PushConfigSpec {
            serde_json::from_value(json!({"id": id, "url": "https://hooks.example.com/x"})).unwrap()
        };
        for (id, by) in [("bobs", Some(who("bob"))), ("alices", None)] {
            run(
                &mut state,
                TaskCommand::SetPushConfig {
                    config: hook(id),
                    at: Timestamp::from_unix_nanos(3_000),
                    by,
                },
            );
        }
        state
    }

    #[test]
    fn when_bob_is_removed_then_his_webhook_goes_and_his_loss_of_access_is_recorded() {
        let mut state = given();
        let events = run(
            &mut state,
            envelope(
                "alice",
                team(&[("alice", "admin"), ("carol", "watcher")]),
                4,
            ),
        );
        let tail: Vec<&str> = events.iter().rev().take(2).map(|e| e.name()).collect();
        assert_eq!(tail, ["AccessRevoked", "PushConfigDeleted"], "{events:?}");
        assert!(
            matches!(events.last(), Some(TaskEvent::AccessRevoked { principals, .. }) if principals == &[who("bob")])
        );
        assert!(
            matches!(&events[events.len() - 2], TaskEvent::PushConfigDeleted { id, .. } if id == "bobs")
        );
        let head = state.head.as_ref().unwrap();
        assert!(!head.visible_to(&who("bob")));
        let ids: Vec<&str> = head.push.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["alices"], "the owner's webhook stays");
    }

    #[test]
    fn when_a_role_changes_or_someone_is_added_then_nobody_loses_access() {
        let mut state = given();
        let events = run(
            &mut state,
            envelope(
                "alice",
                team(&[
                    ("alice", "admin"),
                    ("bob", "watcher"),
                    ("carol", "watcher"),
                    ("dan", "reporter"),
                ]),
                4,
            ),
        );
        assert!(
            !events.iter().any(|e| matches!(
                e,
                TaskEvent::AccessRevoked { .. } | TaskEvent::PushConfigDeleted { .. }
            )),
            "{events:?}"
        );
    }

    #[test]
    fn a_subscription_is_delivered_to_only_while_its_owner_sees_the_task() {
        let state = given();
        let head = state.head.as_ref().unwrap();
        let bobs = head.push.iter().find(|p| p.id == "bobs").unwrap().clone();
        assert!(head.delivers_to(&bobs));
        let mut stranger = bobs.clone();
        stranger.owner = Some(who("mallory"));
        assert!(!head.delivers_to(&stranger));
        let alices = head.push.iter().find(|p| p.id == "alices").unwrap();
        assert!(head.delivers_to(alices));
    }
}
