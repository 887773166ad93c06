//! The push queue (FIFO, one group per task and config, de-duplicated by delivery id) and its
//! dead-letter queue: the domain's PushQueue and PushLedger, receive, redrive.

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use taskledger_domain::agent::turns::QueueError;

use super::{create_fifo_with_dlq, send_fifo, FifoMessage};

/// Name suffixes of the push queues.
pub const PUSH_QUEUE: &str = "push.fifo";
pub const PUSH_DLQ: &str = "push-dlq.fifo";
/// Message attribute of a dead letter naming why it was given up on.
pub const REASON_ATTRIBUTE: &str = "reason";
/// Longest visibility timeout SQS accepts (12 hours).
const MAX_VISIBILITY_SECS: i32 = 43_200;
/// Visibility while a delivery is being attempted (above the 10 s request timeout).
pub const PUSH_VISIBILITY_TIMEOUT_SECS: u32 = 60;
/// Receives before SQS itself moves a delivery to the DLQ: a safety net far above what the
/// retry horizon allows; the worker dead-letters with a reason long before.
pub const PUSH_MAX_RECEIVES: u32 = 1000;

#[derive(Debug, thiserror::Error)]
pub enum PushQueueError {
    #[error("SQS: {0}")]
    Sqs(String),
    #[error("a push message is not a delivery: {0}")]
    BadMessage(String),
}

fn sqs_err<E>(e: aws_sdk_sqs::error::SdkError<E>) -> PushQueueError
where
    E: std::error::Error + Send + Sync + 'static,
{
    PushQueueError::Sqs(aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())
}

/// The push queue (FIFO; group = task + config so each subscriber gets updates in order;
/// de-duplicated by delivery id) and its dead-letter queue.
#[derive(Clone)]
pub struct SqsPushQueue {
    client: Client,
    pub queue_url: String,
    pub dlq_url: String,
}

/// A message of a Lambda SQS event as a received delivery (the attributes the Lambda event
/// carries are the ones `receive` asks for).
pub fn received_push(r: &aws_lambda_events::event::sqs::SqsMessage) -> ReceivedPush {
    let attr = |k: &str| r.attributes.get(k).cloned();
    ReceivedPush {
        body: r.body.clone().unwrap_or_default(),
        receipt_handle: r.receipt_handle.clone().unwrap_or_default(),
        receive_count: attr("ApproximateReceiveCount")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1),
        first_receive_ms: attr("ApproximateFirstReceiveTimestamp")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        group: attr("MessageGroupId").unwrap_or_default(),
    }
}

impl ReceivedPush {
    /// The message as an attempt of the one attempt loop, or why its body is no delivery.
    pub fn attempt(&self) -> Result<taskledger_domain::ports::DeliveryAttempt, String> {
        let delivery =
            serde_json::from_str(&self.body).map_err(|e| format!("unreadable delivery: {e}"))?;
        Ok(taskledger_domain::ports::DeliveryAttempt {
            delivery,
            handle: self.receipt_handle.clone(),
            attempts: self.receive_count.saturating_sub(1),
            first_attempt_ms: self.first_receive_ms,
        })
    }
}

/// A received push message, with what SQS says about its attempts.
#[derive(Debug, Clone)]
pub struct ReceivedPush {
    pub body: String,
    pub receipt_handle: String,
    /// `ApproximateReceiveCount`: attempts including this one.
    pub receive_count: u32,
    /// `ApproximateFirstReceiveTimestamp` (unix milliseconds).
    pub first_receive_ms: i64,
    /// `MessageGroupId`: one (task, config).
    pub group: String,
}

impl SqsPushQueue {
    pub fn new(client: Client, queue_url: impl Into<String>, dlq_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
            dlq_url: dlq_url.into(),
        }
    }

    pub async fn enqueue(
        &self,
        deliveries: &[taskledger_domain::push::PushDelivery],
    ) -> Result<(), PushQueueError> {
        let msgs = deliveries
            .iter()
            .map(|d| {
                Ok(FifoMessage {
                    body: serde_json::to_string(d)
                        .map_err(|e| PushQueueError::BadMessage(e.to_string()))?,
                    group: d.group(),
                    dedup: d.dedup_id(),
                })
            })
            .collect::<Result<Vec<_>, PushQueueError>>()?;
        send_fifo(&self.client, &self.queue_url, msgs)
            .await
            .map_err(|e| PushQueueError::Sqs(e.to_string()))
    }

    /// Changes how long a received message stays invisible (a retry's pause, a hold); returns
    /// the pause applied (whole seconds, at least one).
    async fn pause(
        &self,
        receipt_handle: &str,
        pause: std::time::Duration,
    ) -> Result<std::time::Duration, PushQueueError> {
        let secs =
            (pause.as_millis().div_ceil(1000) as i64).clamp(1, i64::from(MAX_VISIBILITY_SECS));
        self.client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(secs as i32)
            .send()
            .await
            .map_err(sqs_err)?;
        Ok(std::time::Duration::from_secs(secs as u64))
    }

    /// A message whose body is not a delivery: nothing to retry, so it goes to the DLQ for a
    /// human, with the reason.
    pub async fn dead_letter_unreadable(
        &self,
        msg: &ReceivedPush,
        reason: &str,
    ) -> Result<(), PushQueueError> {
        self.dead_letter_raw(&msg.body, "unreadable", reason).await
    }

    async fn dead_letter_raw(
        &self,
        body: &str,
        group: &str,
        reason: &str,
    ) -> Result<(), PushQueueError> {
        self.client
            .send_message()
            .queue_url(&self.dlq_url)
            .message_body(body)
            .message_group_id(group)
            .message_deduplication_id(uuid::Uuid::new_v4().simple().to_string())
            .message_attributes(
                REASON_ATTRIBUTE,
                aws_sdk_sqs::types::MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(reason)
                    .build()
                    .map_err(|e| PushQueueError::Sqs(e.to_string()))?,
            )
            .send()
            .await
            .map_err(sqs_err)?;
        Ok(())
    }

    /// Receives up to ten deliveries (no long polling: `wait` seconds at most).
    pub async fn receive(&self, wait: i32) -> Result<Vec<ReceivedPush>, PushQueueError> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(wait)
            .message_system_attribute_names(
                aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
            )
            .message_system_attribute_names(
                aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateFirstReceiveTimestamp,
            )
            .message_system_attribute_names(
                aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId,
            )
            .send()
            .await
            .map_err(sqs_err)?;
        Ok(out
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                let attr = |n: aws_sdk_sqs::types::MessageSystemAttributeName| {
                    m.attributes().and_then(|a| a.get(&n)).cloned()
                };
                ReceivedPush {
                    receive_count: attr(
                        aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
                    )
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1),
                    first_receive_ms: attr(
                        aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateFirstReceiveTimestamp,
                    )
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                    group: attr(aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId)
                        .unwrap_or_default(),
                    body: m.body.unwrap_or_default(),
                    receipt_handle: m.receipt_handle.unwrap_or_default(),
                }
            })
            .collect())
    }

    pub async fn delete(&self, receipt_handle: &str) -> Result<(), PushQueueError> {
        self.client
            .delete_message()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt_handle)
            .send()
            .await
            .map_err(sqs_err)?;
        Ok(())
    }

    /// Dead letters with their reasons (received and left in the DLQ).
    pub async fn dead_letters(&self) -> Result<Vec<(String, String)>, PushQueueError> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.dlq_url)
            .max_number_of_messages(10)
            .visibility_timeout(0)
            .message_attribute_names(REASON_ATTRIBUTE)
            .send()
            .await
            .map_err(sqs_err)?;
        Ok(out
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                let reason = m
                    .message_attributes()
                    .and_then(|a| a.get(REASON_ATTRIBUTE))
                    .and_then(|v| v.string_value())
                    .unwrap_or_default()
                    .to_string();
                (m.body.unwrap_or_default(), reason)
            })
            .collect())
    }

    /// Moves every dead letter back to the push queue (a fresh de-duplication id, so SQS does
    /// not drop it as a repeat); returns how many.
    pub async fn redrive(&self) -> Result<u64, PushQueueError> {
        let mut moved = 0;
        loop {
            let out = self
                .client
                .receive_message()
                .queue_url(&self.dlq_url)
                .max_number_of_messages(10)
                .send()
                .await
                .map_err(sqs_err)?;
            let msgs = out.messages.unwrap_or_default();
            if msgs.is_empty() {
                return Ok(moved);
            }
            for m in msgs {
                let body = m.body().unwrap_or_default();
                let group = serde_json::from_str::<taskledger_domain::push::PushDelivery>(body)
                    .map(|d| d.group())
                    .unwrap_or_else(|_| "unreadable".into());
                self.client
                    .send_message()
                    .queue_url(&self.queue_url)
                    .message_body(body)
                    .message_group_id(group)
                    .message_deduplication_id(uuid::Uuid::new_v4().simple().to_string())
                    .send()
                    .await
                    .map_err(sqs_err)?;
                self.client
                    .delete_message()
                    .queue_url(&self.dlq_url)
                    .receipt_handle(m.receipt_handle().unwrap_or_default())
                    .send()
                    .await
                    .map_err(sqs_err)?;
                moved += 1;
            }
        }
    }
}

/// Creates the FIFO push queue and its DLQ (idempotent); returns the queue.
pub async fn create_push_queues(
    client: &Client,
    prefix: &str,
) -> Result<SqsPushQueue, PushQueueError> {
    let (url, dlq_url) = create_fifo_with_dlq(
        client,
        &format!("{prefix}{PUSH_QUEUE}"),
        &format!("{prefix}{PUSH_DLQ}"),
        PUSH_VISIBILITY_TIMEOUT_SECS,
        PUSH_MAX_RECEIVES,
    )
    .await
    .map_err(PushQueueError::Sqs)?;
    Ok(SqsPushQueue::new(client.clone(), url, dlq_url))
}

fn ledger_err(e: PushQueueError) -> taskledger_domain::ports::StoreError {
    taskledger_domain::ports::StoreError::Unavailable(e.to_string())
}

#[async_trait]
impl taskledger_domain::ports::PushQueue for SqsPushQueue {
    async fn enqueue(
        &self,
        deliveries: &[taskledger_domain::push::PushDelivery],
    ) -> Result<(), QueueError> {
        SqsPushQueue::enqueue(self, deliveries)
            .await
            .map_err(|e| QueueError::Unavailable(e.to_string()))
    }
}

/// The queue as the ledger of attempts: SQS counts receives itself, a retry is a visibility
/// pause (the group waits behind it), a dead letter is a copy with the reason on the DLQ.
/// Deleting a finished message is the consumer's acknowledgement (the Lambda runtime's on
/// success, the local poller's explicitly), not the ledger's.
#[async_trait]
impl taskledger_domain::ports::PushLedger for SqsPushQueue {
    async fn delivered(
        &self,
        _attempt: &taskledger_domain::ports::DeliveryAttempt,
    ) -> Result<(), taskledger_domain::ports::StoreError> {
        Ok(())
    }

    async fn retry_in(
        &self,
        attempt: &taskledger_domain::ports::DeliveryAttempt,
        _attempts: u32,
        _first_attempt_ms: i64,
        pause: std::time::Duration,
        _reason: &str,
    ) -> Result<std::time::Duration, taskledger_domain::ports::StoreError> {
        self.pause(&attempt.handle, pause).await.map_err(ledger_err)
    }

    async fn hold(
        &self,
        attempt: &taskledger_domain::ports::DeliveryAttempt,
        pause: std::time::Duration,
    ) -> Result<std::time::Duration, taskledger_domain::ports::StoreError> {
        self.pause(&attempt.handle, pause).await.map_err(ledger_err)
    }

    async fn dead_letter(
        &self,
        attempt: &taskledger_domain::ports::DeliveryAttempt,
        _attempts: u32,
        reason: &str,
    ) -> Result<(), taskledger_domain::ports::StoreError> {
        let body = serde_json::to_string(&attempt.delivery)
            .map_err(|e| taskledger_domain::ports::StoreError::Other(e.to_string()))?;
        self.dead_letter_raw(&body, &attempt.delivery.group(), reason)
            .await
            .map_err(ledger_err)
    }
}
