//! Where a task's lifecycle events go (ADR 038): an EventBridge bus on AWS, a signed webhook
//! locally. Delivery is at least once: the relay publishes again what a failed publication
//! left, so a consumer tells events apart by task id and sequence number.

use async_trait::async_trait;

use super::StoreError;
use crate::projection::lifecycle::LifecycleEvent;

#[async_trait]
pub trait LifecycleSink: Send + Sync {
    /// Publishes `events` (of one task, in order); `Err` when any was not taken.
    async fn publish(&self, events: &[LifecycleEvent]) -> Result<(), StoreError>;
}
