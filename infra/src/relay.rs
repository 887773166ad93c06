//! The stream relay, shared by the relay Lambda (DynamoDB Streams trigger) and the local
//! server's stream poller: committed `AgentWorkRequested` events become agent turns on the FIFO
//! turn queue (group = task, de-duplication id = task + sequence), and event items carrying a
//! pushed update become webhook deliveries on the push queue (one per subscription registered
//! before the event). A replayed record enqueues nothing new.

use serde_json::Value;
use taskledger_domain::turns::{turns_from_stream, StreamedEvent, TurnQueue};

use crate::dynamo::schema;
use crate::dynamo::store::PUSH_ATTR;
use crate::dynamo::DynamoStore;
use crate::push_relay;
use crate::sqs::{SqsPushQueue, SqsTurnQueue};

/// The update an event item pushes (its `push` attribute), if any.
pub fn pushed(image: &Value) -> Option<String> {
    image
        .get(PUSH_ATTR)
        .and_then(|v| v.get("S"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// A committed event item (`pk = T#<task>`, `sk = E#<seq>`) from a stream record's new image
/// (attribute-value JSON: `{"pk": {"S": "T#…"}, …}`); other items give `None`.
pub fn streamed(image: &Value) -> Option<StreamedEvent> {
    let s = |k: &str| {
        image
            .get(k)
            .and_then(|v| v.get("S"))
            .and_then(|v| v.as_str())
    };
    let (task_id, seq) = schema::parse_event_key(s("pk")?, s("sk")?)?;
    Some(StreamedEvent {
        task_id: task_id.to_string(),
        seq,
        event_type: s("type")?.to_string(),
    })
}

pub struct Relay {
    pub turns: SqsTurnQueue,
    /// Absent when push notifications are off.
    pub push: Option<(DynamoStore, SqsPushQueue)>,
}

impl Relay {
    /// Relays one record's new image; items that are not events do nothing.
    pub async fn relay(&self, image: &Value) -> Result<(), String> {
        let Some(item) = streamed(image) else {
            return Ok(());
        };
        let turns = turns_from_stream(std::slice::from_ref(&item));
        if !turns.is_empty() {
            self.turns
                .enqueue(&turns)
                .await
                .map_err(|e| format!("{}#{}: {e}", item.task_id, item.seq))?;
        }
        if let (Some(body), Some((store, queue))) = (pushed(image), &self.push) {
            let n = push_relay::relay_update(store, queue, &item.task_id, item.seq, &body)
                .await
                .map_err(|e| format!("{}#{}: {e}", item.task_id, item.seq))?;
            tracing::debug!(task_id = %item.task_id, seq = item.seq, deliveries = n, "pushed");
        }
        Ok(())
    }
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
                task_id: "abc.1".into(),
                seq: 7,
                event_type: "AgentWorkRequested".into()
            })
        );
        assert_eq!(pushed(&image).as_deref(), Some("{}"));
        let head = serde_json::json!({"pk": {"S": "T#abc"}, "sk": {"S": "HEAD"}});
        assert_eq!(streamed(&head), None);
        assert_eq!(pushed(&head), None);
    }
}
