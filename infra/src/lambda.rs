//! What every Lambda binary sets up the same way: JSON logs, and the DynamoDB store named by
//! `TASKLEDGER_TABLE_PREFIX`, checked so that a missing table fails the cold start by name.

use std::sync::Arc;

use crate::dynamo::{self, DynamoError, DynamoStore};

/// JSON logs without timestamps (CloudWatch adds its own), filtered by `RUST_LOG`.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .without_time()
        .init();
}

/// The task table's store, built once per sandbox.
pub async fn store_from_env() -> Result<Arc<DynamoStore>, DynamoError> {
    let prefix = std::env::var("TASKLEDGER_TABLE_PREFIX").unwrap_or_else(|_| "taskledger-".into());
    let store = Arc::new(DynamoStore::new(dynamo::client_from_env().await, &prefix));
    store.check().await?;
    Ok(store)
}
