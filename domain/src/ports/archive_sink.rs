//! Where finished tasks are archived before their expiry (an S3 bucket on AWS): one object per
//! task, the task whole in the archive format (`crate::archive`), written again when the task
//! records more — the newest write holds every event.

use async_trait::async_trait;

use super::StoreError;

#[async_trait]
pub trait ArchiveSink: Send + Sync {
    /// Writes `body` as the object `key` (`crate::archive::object_key`), replacing it.
    async fn put(&self, key: &str, body: Vec<u8>) -> Result<(), StoreError>;
}
