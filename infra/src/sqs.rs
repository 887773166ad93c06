//! The agent-turn queue on SQS: FIFO, one message group per task (turns of a task run in order,
//! one at a time), de-duplicated by turn identity (a replayed stream batch enqueues nothing new).

use async_trait::async_trait;
use aws_sdk_sqs::types::{QueueAttributeName, SendMessageBatchRequestEntry};
use aws_sdk_sqs::Client;
use sha2::{Digest, Sha256};
use taskledger_domain::turns::{AgentTurn, QueueError, TurnQueue};

/// Name suffixes of the queues (names are prefix + suffix).
pub const TURNS_QUEUE: &str = "agent-turns.fifo";
pub const TURNS_DLQ: &str = "agent-turns-dlq.fifo";
/// Receives before a turn goes to the dead-letter queue.
pub const MAX_RECEIVES: u32 = 5;
/// Above the longest turn step (a Lambda runs at most 900 s).
pub const VISIBILITY_TIMEOUT_SECS: u32 = 960;
/// SQS takes at most ten messages per batch.
const SQS_BATCH: usize = 10;

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
        for chunk in turns.chunks(SQS_BATCH) {
            let mut req = self.client.send_message_batch().queue_url(&self.queue_url);
            for (i, t) in chunk.iter().enumerate() {
                let body = serde_json::to_string(t).map_err(|e| {
                    QueueError::Unavailable(format!("cannot serialise a turn: {e}"))
                })?;
                let entry = SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(body)
                    .message_group_id(&t.task_id)
                    .message_deduplication_id(dedup(t))
                    .build()
                    .map_err(|e| QueueError::Unavailable(e.to_string()))?;
                req = req.entries(entry);
            }
            let out = req.send().await.map_err(|e| {
                QueueError::Unavailable(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())
            })?;
            if !out.failed().is_empty() {
                return Err(QueueError::Refused {
                    failed: out.failed().len(),
                    reason: out
                        .failed()
                        .iter()
                        .map(|f| f.message().unwrap_or(f.code()).to_string())
                        .collect::<Vec<_>>()
                        .join("; "),
                });
            }
        }
        Ok(())
    }
}

/// Creates the FIFO turn queue and its dead-letter queue (idempotent); returns the queue URL.
pub async fn create_queues(client: &Client, prefix: &str) -> Result<String, QueueError> {
    let err = |e: String| QueueError::Unavailable(e);
    let dlq = client
        .create_queue()
        .queue_name(format!("{prefix}{TURNS_DLQ}"))
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .map_err(|e| err(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string()))?;
    let dlq_url = dlq.queue_url().unwrap_or_default().to_string();
    let attrs = client
        .get_queue_attributes()
        .queue_url(&dlq_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| err(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string()))?;
    let dlq_arn = attrs
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .cloned()
        .unwrap_or_default();
    let q = client
        .create_queue()
        .queue_name(format!("{prefix}{TURNS_QUEUE}"))
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(
            QueueAttributeName::VisibilityTimeout,
            VISIBILITY_TIMEOUT_SECS.to_string(),
        )
        .attributes(
            QueueAttributeName::RedrivePolicy,
            serde_json::json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": MAX_RECEIVES})
                .to_string(),
        )
        .send()
        .await
        .map_err(|e| err(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string()))?;
    Ok(q.queue_url().unwrap_or_default().to_string())
}

/// An SQS client configured from the environment (`AWS_ENDPOINT_URL` for emulators).
pub async fn client_from_env() -> Client {
    Client::new(&aws_config::load_from_env().await)
}
