//! The archive of expiring tasks (on AWS an S3 bucket, written by the archive Lambda from the
//! table's stream; locally by the DynamoDB stream poller when a bucket is named): every event
//! of a finished task that will expire — the finishing one and any after it — writes the task
//! whole to its object again, so the bucket holds each task as it stood at its last event, in
//! the format `taskledger import` reads, before the store's expiry deletes it.

use std::sync::Arc;

use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{ArchiveSink, CardSigner, CommittedEvent, EventStore};

use crate::archive::{task_object, ArchiveRunError};

pub struct Archiver {
    store: Arc<dyn EventStore>,
    sink: Arc<dyn ArchiveSink>,
    /// Signs each object, when the deployment has a signing key (`import --require-signed`).
    signer: Option<Arc<dyn CardSigner>>,
}

#[derive(Debug, thiserror::Error)]
#[error("archiving task {task_id}: {source}")]
pub struct ArchiverError {
    pub task_id: TaskId,
    pub source: ArchiveRunError,
}

impl Archiver {
    pub fn new(store: Arc<dyn EventStore>, sink: Arc<dyn ArchiveSink>) -> Self {
        Self {
            store,
            sink,
            signer: None,
        }
    }

    /// Each object signed with `signer` (none: unsigned).
    pub fn signed_by(mut self, signer: Option<Arc<dyn CardSigner>>) -> Self {
        self.signer = signer;
        self
    }

    /// Writes each expiring task of `events` once (a batch often holds several events of one
    /// task), in the order first seen; returns how many objects it wrote. The first failure
    /// stops it: the events are delivered again, and writing a task again is harmless.
    pub async fn archive(&self, events: &[CommittedEvent]) -> Result<usize, ArchiverError> {
        let mut tasks: Vec<&TaskId> = Vec::new();
        for e in events.iter().filter(|e| e.expiring) {
            if !tasks.contains(&&e.task_id) {
                tasks.push(&e.task_id);
            }
        }
        let mut written = 0;
        for id in tasks {
            let failed = |source| ArchiverError {
                task_id: id.clone(),
                source,
            };
            let Some((key, body)) = task_object(self.store.as_ref(), id, self.signer.as_deref())
                .await
                .map_err(failed)?
            else {
                tracing::debug!(task_id = %id, "nothing to archive: the task is gone");
                continue;
            };
            let bytes = body.len();
            self.sink
                .put(&key, body)
                .await
                .map_err(|e| failed(ArchiveRunError::Store(e)))?;
            tracing::info!(task_id = %id, key, bytes, "task archived");
            written += 1;
        }
        Ok(written)
    }
}
