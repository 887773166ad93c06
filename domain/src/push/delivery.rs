//! Deliveries: one update to one subscriber, with the headers it is sent with, the queue
//! group and de-duplication ids, and the update itself (`PushUpdate`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::subscription::Subscription;

/// Header carrying the sequence of the task event a delivery reports (receivers de-duplicate
/// on task id + sequence; per task and config, sequences only grow).
pub const SEQUENCE_HEADER: &str = "X-Taskledger-Event-Sequence";
/// Header carrying the delivery's id (`<task>:<seq>:<config>`), the same on every attempt.
pub const DELIVERY_ID_HEADER: &str = "X-Taskledger-Delivery-Id";
/// Header carrying the optional config token.
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";
/// Header carrying the detached JWS (ES256) over the body, when signing is configured.
pub const SIGNATURE_HEADER: &str = "X-Taskledger-Signature";
/// Media type of a delivery's body.
pub const CONTENT_TYPE: &str = "application/a2a+json";
/// Media type of a delivery to a config registered over 0.3 (which knew no a2a+json).
pub const CONTENT_TYPE_V03: &str = "application/json";

/// One update to one subscriber: what the push queue carries and the worker sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushDelivery {
    pub task_id: String,
    /// Sequence of the event the update reports.
    pub seq: u64,
    pub config: Subscription,
    /// The `StreamResponse` JSON, exactly as sent.
    pub body: String,
    /// The trace of the commit that pushed it (`TraceContext::to_stored`): the webhook request
    /// carries it on as `traceparent` only to whose request brought it (`to_receiver`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// Whose webhook it is (the config's principal; the task's owner's when the config names
    /// none). Absent in deliveries queued before it was kept: treated as anyone else's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<crate::ids::Principal>,
}

impl PushDelivery {
    /// `<task>:<seq>:<config>`: the same on every attempt and redrive.
    pub fn delivery_id(&self) -> String {
        format!("{}:{}:{}", self.task_id, self.seq, self.config.id)
    }

    /// Deliveries in one group go out one at a time, in sequence order (FIFO message group:
    /// at most 128 characters, so a digest): one group per subscription (`Subscription::key`).
    pub fn group(&self) -> String {
        digest(&format!("{}\n{}", self.task_id, self.config.key()))
    }

    /// The delivery's media type: 1.0's, or plain JSON for a 0.3 config.
    pub fn content_type(&self) -> &'static str {
        match self.config.protocol {
            crate::wire::PushProtocol::V03 => CONTENT_TYPE_V03,
            crate::wire::PushProtocol::V1 => CONTENT_TYPE,
        }
    }

    /// Queue de-duplication id (a digest: at most 128 characters): the delivery of one update
    /// to one subscription.
    pub fn dedup_id(&self) -> String {
        digest(&format!(
            "{}:{}:{}",
            self.task_id,
            self.seq,
            self.config.key()
        ))
    }
}

fn digest(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The deliveries an update of event `seq` makes: one per subscription registered before it,
/// each addressed to its principal (the task's `owner` for the owner's own configs).
pub fn deliveries(
    task_id: &str,
    owner: &crate::ids::Principal,
    subscriptions: &[Subscription],
    seq: u64,
    body: &str,
) -> Vec<PushDelivery> {
    subscriptions
        .iter()
        .filter(|s| s.from_seq < seq)
        .map(|s| PushDelivery {
            task_id: task_id.to_string(),
            seq,
            config: s.clone(),
            body: body.to_string(),
            trace: None,
            to: Some(s.owner.clone().unwrap_or_else(|| owner.clone())),
        })
        .collect()
}

/// The update an event pushes, rendered as the `StreamResponse` JSON subscribers receive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUpdate {
    pub seq: u64,
    pub body: String,
}
