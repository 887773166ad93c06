//! What every Lambda binary sets up the same way: the DynamoDB store named by its settings,
//! checked so that a missing table fails the cold start by name.

use std::sync::Arc;
use taskledger_domain::retention::Retention;

use crate::dynamo::{self, DynamoStore};

/// The task table's store (`<prefix>tasks`, its list indexes in `index_shards` write shards,
/// finished tasks stamped with their expiry under `retention`), built once per sandbox.
pub async fn store(
    prefix: &str,
    retention: Retention,
    index_shards: u32,
) -> Result<Arc<DynamoStore>, dynamo::DynamoError> {
    let store = Arc::new(
        DynamoStore::new(dynamo::client_from_env().await, prefix)
            .with_retention(retention)
            .with_index_shards(index_shards),
    );
    store.check().await?;
    Ok(store)
}
