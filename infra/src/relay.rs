//! The DynamoDB stream as a feed: a record's new image (attribute-value JSON, as the Lambda
//! event and the local stream poller carry it) read as the committed event the relay takes —
//! the relay Lambda and the local server's poller hand it to the one relay in the app crate.

use serde_json::Value;
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::CommittedEvent;
use taskledger_domain::turns::StreamedEvent;
use taskledger_domain::wire::TaskState;

use crate::dynamo::schema;
use crate::dynamo::store::PUSH_ATTR;

/// The update an event item pushes (its `push` attribute), if any.
pub fn pushed(image: &Value) -> Option<String> {
    image
        .get(PUSH_ATTR)
        .and_then(|v| v.get("S"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// A committed event item (`pk = T#<task>`, `sk = E#<seq>`) from a stream record's new image
/// (attribute-value JSON: `{"pk": {"S": "T#…"}, …}`); other items, and a key that does not name
/// a task id, give `None`.
pub fn streamed(image: &Value) -> Option<StreamedEvent> {
    let s = |k: &str| {
        image
            .get(k)
            .and_then(|v| v.get("S"))
            .and_then(|v| v.as_str())
    };
    let (task_id, seq) = schema::parse_event_key(s("pk")?, s("sk")?)?;
    Some(StreamedEvent {
        task_id: TaskId::parse(task_id).ok()?,
        seq,
        event_type: s("type")?.to_string(),
    })
}

/// A stream record's new image as the committed event the relay takes (`None`: not an event).
pub fn committed(image: &Value) -> Option<CommittedEvent> {
    let e = streamed(image)?;
    Some(CommittedEvent {
        task_id: e.task_id,
        seq: e.seq,
        event_type: e.event_type,
        pushed: pushed(image),
        finished: finished(image),
    })
}

/// Whether an event item's status update reports a terminal state (its `sst` attribute).
fn finished(image: &Value) -> bool {
    image
        .get(schema::STATUS_STATE_ATTR)
        .and_then(|v| v.get("S"))
        .and_then(|v| v.as_str())
        .and_then(TaskState::from_name)
        .is_some_and(TaskState::is_terminal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_items_become_streamed_events_and_other_items_are_skipped() {
        let image = serde_json::json!({"pk": {"S": "T#abc.1"}, "sk": {"S": "E#00000000000000000007"}, "type": {"S": "AgentWorkRequested"}, "push": {"S": "{}"}});
        assert_eq!(
            streamed(&image),
            Some(StreamedEvent {
                task_id: TaskId::parse("abc.1").unwrap(),
                seq: 7,
                event_type: "AgentWorkRequested".into()
            })
        );
        assert_eq!(pushed(&image).as_deref(), Some("{}"));
        let head = serde_json::json!({"pk": {"S": "T#abc"}, "sk": {"S": "HEAD"}});
        assert_eq!(streamed(&head), None);
        assert_eq!(pushed(&head), None);
    }

    #[test]
    fn a_terminal_status_event_finishes_its_task_and_a_removal_is_no_event() {
        let event = |state: &str| {
            serde_json::json!({"pk": {"S": "T#t"}, "sk": {"S": "E#00000000000000000009"},
                "type": {"S": "StatusChanged"}, "sst": {"S": state}})
        };
        assert!(committed(&event("TASK_STATE_COMPLETED")).unwrap().finished);
        assert!(!committed(&event("TASK_STATE_WORKING")).unwrap().finished);
        // A TTL deletion's record (REMOVE) has no new image: nothing to relay.
        assert_eq!(committed(&serde_json::json!({})), None);
    }
}
