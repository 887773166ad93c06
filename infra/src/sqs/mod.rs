//! The SQS queues: the agent-turn queue (FIFO, one message group per task, so a task's turns run
//! in order, one at a time; de-duplicated by turn identity, so a replayed stream batch enqueues
//! nothing new) and the push queue (FIFO, one group per task and config, de-duplicated by
//! delivery id) with its dead-letter queue, as the domain's TurnQueue, PushQueue and PushLedger.

use aws_sdk_sqs::types::QueueAttributeName;
use aws_sdk_sqs::Client;

mod push;
mod turns;

pub use push::*;
pub use turns::*;

/// SQS takes at most ten messages per batch.
const SQS_BATCH: usize = 10;

/// A message for a FIFO queue: body, message group, de-duplication id.
pub(crate) struct FifoMessage {
    pub body: String,
    pub group: String,
    pub dedup: String,
}

/// Sends messages to a FIFO queue, ten per call; an entry SQS refuses fails the whole send.
pub(crate) async fn send_fifo(
    client: &Client,
    queue_url: &str,
    msgs: Vec<FifoMessage>,
) -> Result<(), taskledger_domain::agent::turns::QueueError> {
    use taskledger_domain::agent::turns::QueueError;
    for chunk in msgs.chunks(SQS_BATCH) {
        let mut req = client.send_message_batch().queue_url(queue_url);
        for (i, m) in chunk.iter().enumerate() {
            let entry = aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                .id(i.to_string())
                .message_body(&m.body)
                .message_group_id(&m.group)
                .message_deduplication_id(&m.dedup)
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

/// The URL of an existing queue, if it exists.
pub async fn queue_url(client: &Client, name: &str) -> Option<String> {
    client
        .get_queue_url()
        .queue_name(name)
        .send()
        .await
        .ok()
        .and_then(|o| o.queue_url().map(str::to_string))
}

/// Creates a FIFO queue and its FIFO dead-letter queue (idempotent); returns both URLs.
pub(crate) async fn create_fifo_with_dlq(
    client: &Client,
    name: &str,
    dlq_name: &str,
    visibility_secs: u32,
    max_receives: u32,
) -> Result<(String, String), String> {
    let dlq = client
        .create_queue()
        .queue_name(dlq_name)
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())?;
    let dlq_url = dlq.queue_url().unwrap_or_default().to_string();
    let attrs = client
        .get_queue_attributes()
        .queue_url(&dlq_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())?;
    let dlq_arn = attrs
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .cloned()
        .unwrap_or_default();
    let q = client
        .create_queue()
        .queue_name(name)
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(
            QueueAttributeName::VisibilityTimeout,
            visibility_secs.to_string(),
        )
        .attributes(
            QueueAttributeName::RedrivePolicy,
            serde_json::json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receives})
                .to_string(),
        )
        .send()
        .await
        .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())?;
    Ok((q.queue_url().unwrap_or_default().to_string(), dlq_url))
}

/// An SQS client configured from the environment (`AWS_ENDPOINT_URL` for emulators).
pub async fn client_from_env() -> Client {
    Client::new(&aws_config::load_from_env().await)
}
