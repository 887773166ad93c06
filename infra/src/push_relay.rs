//! The stream relay's push half: an event item that carries an update (`push` attribute)
//! becomes one delivery per subscription registered before the event, on the push queue.
//! Subscriptions are read from the task's head at relay time: one deleted since is skipped, and
//! one registered since has a later floor, so it is skipped too. A replayed record makes the
//! same de-duplication ids, so SQS drops the repeats (within its five-minute window; the
//! receiver's de-duplication by sequence covers the rest).

use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{replay_state, restore, EventStore};
use taskledger_domain::push;

use crate::dynamo::DynamoStore;
use crate::sqs::{PushQueueError, SqsPushQueue};

/// Enqueues the deliveries of one pushed update; returns how many.
pub async fn relay_update(
    store: &DynamoStore,
    queue: &SqsPushQueue,
    task_id: &str,
    seq: u64,
    body: &str,
) -> Result<usize, PushQueueError> {
    let Ok(id) = TaskId::parse(task_id.to_string()) else {
        return Ok(0);
    };
    let store_err = |e: taskledger_domain::ports::StoreError| PushQueueError::Sqs(e.to_string());
    let Some(loaded) = store.load(&id).await.map_err(store_err)? else {
        return Ok(0);
    };
    let state = match restore(&loaded).map_err(store_err)? {
        Some(s) => s,
        None => replay_state(&store.events(&id, 0).await.map_err(store_err)?).map_err(store_err)?,
    };
    let Some(head) = state.head.as_ref() else {
        return Ok(0);
    };
    let deliveries = push::deliveries(task_id, &head.push, seq, body);
    queue.enqueue(&deliveries).await?;
    Ok(deliveries.len())
}
