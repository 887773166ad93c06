//! The agent-turn queue: FIFO, one message group per task, de-duplicated by turn identity; the
//! domain's TurnQueue, and the receive/delete/retry calls of the local server's poller.

use async_trait::async_trait;
use aws_sdk_sqs::types::MessageSystemAttributeName;
use aws_sdk_sqs::Client;
use sha2::{Digest, Sha256};
use taskledger_domain::agent::turns::{AgentTurn, QueueError, TurnQueue};

use super::{create_fifo_with_dlq, send_fifo, FifoMessage};

/// Name suffixes of the queues (names are prefix + suffix).
pub const TURNS_QUEUE: &str = "agent-turns.fifo";
pub const TURNS_DLQ: &str = "agent-turns-dlq.fifo";
/// Receives before a turn goes to the dead-letter queue.
pub const MAX_RECEIVES: u32 = 5;
/// Above the longest turn step (a Lambda runs at most 900 s).
pub const VISIBILITY_TIMEOUT_SECS: u32 = 960;

#[derive(Clone)]
pub struct SqsTurnQueue {
    client: Client,
    queue_url: String,
}

impl SqsTurnQueue {
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }
}

/// A received turn message (`turn` is `None` when the body is not a turn).
#[derive(Debug, Clone)]
pub struct ReceivedTurn {
    pub turn: Option<AgentTurn>,
    pub receipt_handle: String,
    /// How often the message has been received, this time included.
    pub receives: u32,
}

impl SqsTurnQueue {
    /// Receives up to ten turns without waiting (the local server's pollers), each hidden from
    /// other receivers for `lease_secs` (`None`: the queue's visibility timeout).
    pub async fn receive(&self, lease_secs: Option<i32>) -> Result<Vec<ReceivedTurn>, QueueError> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .set_visibility_timeout(lease_secs)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await
            .map_err(turn_err)?;
        Ok(out
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(|m| ReceivedTurn {
                turn: m.body().and_then(|b| serde_json::from_str(b).ok()),
                receives: m
                    .attributes()
                    .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(1),
                receipt_handle: m.receipt_handle.unwrap_or_default(),
            })
            .collect())
    }

    /// Done with a turn message.
    pub async fn delete(&self, receipt_handle: &str) -> Result<(), QueueError> {
        self.client
            .delete_message()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt_handle)
            .send()
            .await
            .map(|_| ())
            .map_err(turn_err)
    }

    /// The message stays hidden for `secs` from now: a failed turn comes back after them
    /// (counted towards the DLQ's receive limit), a running one's lease is extended by them.
    pub async fn hide_for(&self, receipt_handle: &str, secs: i32) -> Result<(), QueueError> {
        self.client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(secs)
            .send()
            .await
            .map(|_| ())
            .map_err(turn_err)
    }
}

fn turn_err<E>(e: aws_sdk_sqs::error::SdkError<E>) -> QueueError
where
    E: std::error::Error + Send + Sync + 'static,
{
    QueueError::Unavailable(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())
}

fn dedup(turn: &AgentTurn) -> String {
    // Ids may hold characters SQS does not allow in a deduplication id; a digest always fits.
    Sha256::digest(turn.dedup_id().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[async_trait]
impl TurnQueue for SqsTurnQueue {
    async fn enqueue(&self, turns: &[AgentTurn]) -> Result<(), QueueError> {
        let msgs = turns
            .iter()
            .map(|t| {
                Ok(FifoMessage {
                    body: serde_json::to_string(t).map_err(|e| {
                        QueueError::Unavailable(format!("cannot serialise a turn: {e}"))
                    })?,
                    group: t.task_id.to_string(),
                    dedup: dedup(t),
                })
            })
            .collect::<Result<Vec<_>, QueueError>>()?;
        send_fifo(&self.client, &self.queue_url, msgs).await
    }
}

/// Creates the FIFO turn queue and its dead-letter queue (idempotent); returns their URLs.
pub async fn create_queues(client: &Client, prefix: &str) -> Result<(String, String), QueueError> {
    create_fifo_with_dlq(
        client,
        &format!("{prefix}{TURNS_QUEUE}"),
        &format!("{prefix}{TURNS_DLQ}"),
        VISIBILITY_TIMEOUT_SECS,
        MAX_RECEIVES,
    )
    .await
    .map_err(QueueError::Unavailable)
}
