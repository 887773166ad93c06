//! What the stream- and queue-driven Lambda functions run, assembled from their settings: the
//! relay (the turn queue, the push queue when the stack has one, the lifecycle bus when the
//! settings name one), the push worker (its queues, sender and retry policy) and the archiver
//! (the bucket, signed as pushes are). Each function's `main` only runs what it is given.

use super::{lambda_store, stream_relay, BoxError, PushParts};
use crate::runners::Relay;
use crate::settings::{LambdaSettings, Settings};
use taskledger_domain::push::RetryPolicy;
use taskledger_infra::sqs::{self, SqsPushQueue, SqsTurnQueue};
use taskledger_infra::webhook::WebhookSender;

/// The relay Lambda's relay: committed work to the turn queue, pushed updates to the push queue
/// (when the stack has one), each status change to the lifecycle bus (when one is named).
pub async fn lambda_relay(settings: &Settings, lambda: &LambdaSettings) -> Result<Relay, BoxError> {
    let url = LambdaSettings::required(
        &lambda.turns_queue_url,
        "TASKLEDGER_TURNS_QUEUE_URL",
        "the agent-turn queue",
    )?;
    let client = sqs::client_from_env().await;
    let store = lambda_store(settings).await?;
    let push = lambda
        .push_queue_url
        .as_deref()
        .filter(|q| !q.is_empty())
        .map(|q| {
            let dlq = lambda.push_dlq_url.clone().unwrap_or_default();
            SqsPushQueue::new(client.clone(), q.to_string(), dlq)
        });
    let turns = SqsTurnQueue::new(client, url.to_string());
    let relay = stream_relay(store.clone(), turns, push);
    #[cfg(feature = "eventbridge")]
    let relay = super::publishing_lifecycle(relay, store, settings).await?;
    Ok(relay)
}

/// What the push worker Lambda works with: its queue (and dead-letter queue), the webhook
/// sender and the retry policy.
pub struct PushWorker {
    pub queue: SqsPushQueue,
    pub sender: WebhookSender,
    pub retry: RetryPolicy,
}

/// The push worker Lambda's parts, from its settings.
pub async fn lambda_push_worker(
    settings: &Settings,
    lambda: &LambdaSettings,
) -> Result<PushWorker, BoxError> {
    let (url, dlq) = lambda.push_queues()?;
    let push = PushParts::lambda(settings)?;
    Ok(PushWorker {
        queue: SqsPushQueue::new(sqs::client_from_env().await, url, dlq),
        sender: push.sender()?,
        retry: push.retry,
    })
}

/// The archive Lambda's archiver: expiring tasks written whole to the bucket the settings
/// name, signed with the deployment's key.
#[cfg(feature = "s3")]
pub async fn lambda_archiver(settings: &Settings) -> Result<crate::runners::Archiver, BoxError> {
    use std::sync::Arc;
    use taskledger_infra::s3::{self, BucketName, S3Archive};
    let bucket = BucketName::parse(&settings.archive_bucket)
        .map_err(|e| format!("TASKLEDGER_ARCHIVE_BUCKET must name the archive bucket: {e}"))?;
    let store = lambda_store(settings).await?;
    let sink = Arc::new(S3Archive::new(s3::client_from_env().await, bucket));
    let signer = PushParts::lambda(settings)?.signer;
    Ok(crate::runners::Archiver::new(store, sink).signed_by(signer.map(|s| s as _)))
}
