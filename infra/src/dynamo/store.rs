//! The DynamoDB store's handle (one table for every task, ADR 007), its errors and DynamoDB's
//! limits, and what its parts share: attribute helpers, SDK error mapping, partition reads.

use std::collections::HashMap;
use taskledger_domain::retention::Retention;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use taskledger_domain::ids::{IdempotencyKey, Principal, TaskId};
use taskledger_domain::ports::{IdempotencyRecord, StoreError, SNAPSHOT_SCHEMA};
use taskledger_domain::task::TaskAggregate;

use super::schema;

pub use super::schema::SHARDS;

/// DynamoDB's item size limit, and the margin we keep below it for attribute names.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;
pub(super) const ITEM_MARGIN_BYTES: usize = 1024;
/// DynamoDB's limits for one `TransactWriteItems`.
pub const MAX_TRANSACTION_ITEMS: usize = 100;
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// Attribute of an event item holding the `StreamResponse` JSON the event pushes.
pub const PUSH_ATTR: &str = "push";

pub(super) type Item = HashMap<String, AttributeValue>;

/// Most write shards the list indexes may have (a list page reads every shard).
pub const MAX_INDEX_SHARDS: u32 = 64;

#[derive(Clone)]
pub struct DynamoStore {
    pub(super) client: Client,
    pub(super) table: String,
    /// Write shards of the list indexes' partition keys (ADR 019).
    pub(super) index_shards: u32,
    /// How long finished tasks are kept: their items carry the expiry the table's TTL reads.
    pub(super) retention: Retention,
}

#[derive(Debug, thiserror::Error)]
pub enum DynamoError {
    #[error("DynamoDB table {table} does not exist (create it with --create-tables, or deploy template.yaml)")]
    MissingTable { table: String },
    #[error("cannot reach DynamoDB table {table}: {message}")]
    Unreachable { table: String, message: String },
}

pub(super) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(super) fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(super) fn get_s<'a>(item: &'a Item, k: &str) -> Result<&'a str, StoreError> {
    match item.get(k) {
        Some(AttributeValue::S(v)) => Ok(v),
        _ => Err(StoreError::Corrupt(format!(
            "item lacks string attribute {k}"
        ))),
    }
}

pub(super) fn get_n(item: &Item, k: &str) -> Result<i64, StoreError> {
    match item.get(k) {
        Some(AttributeValue::N(v)) => v
            .parse()
            .map_err(|_| StoreError::Corrupt(format!("attribute {k} is not a number"))),
        _ => Err(StoreError::Corrupt(format!(
            "item lacks number attribute {k}"
        ))),
    }
}

pub(super) fn json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Other(format!("cannot serialise: {e}")))
}

pub(super) fn parse<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Maps an SDK error: throttling and timeouts are "unavailable" (retry later), a missing table
/// is named, anything else is a store failure.
pub(super) fn sdk_err<E, R>(op: &str, e: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let code = e.code().unwrap_or_default().to_string();
    let message = format!("{op}: {}", aws_sdk_dynamodb::error::DisplayErrorContext(&e));
    match code.as_str() {
        "ThrottlingException"
        | "ProvisionedThroughputExceededException"
        | "RequestLimitExceeded"
        | "InternalServerError"
        | "ServiceUnavailable" => StoreError::Unavailable(message),
        _ => match e {
            SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => {
                StoreError::Unavailable(message)
            }
            _ => StoreError::Other(message),
        },
    }
}

pub(super) fn snapshot_of(item: &Item) -> Result<TaskAggregate, StoreError> {
    if get_n(item, "schema")? as u32 != SNAPSHOT_SCHEMA {
        return Err(StoreError::Corrupt(
            "snapshot of another schema: run `taskledger rebuild`".into(),
        ));
    }
    parse(&super::snapshot::text(item)?)
}

impl DynamoStore {
    /// The store on `<prefix>tasks`, its list indexes unsharded (`with_index_shards`: the
    /// deployment's `--index-shards`, fixed for a table's life — every function of a deployment
    /// must agree, and a change needs `rebuild`).
    pub fn new(client: Client, table_prefix: &str) -> Self {
        let index_shards = 1;
        Self {
            client,
            table: schema::table_name(table_prefix, &schema::TASKS),
            index_shards,
            retention: Retention::forever(),
        }
    }

    /// The same store stamping finished tasks' items with their expiry under `retention` (none
    /// unless set: an item without one is kept).
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// The same store with `shards` write shards on its list indexes (1 to `MAX_INDEX_SHARDS`).
    pub fn with_index_shards(mut self, shards: u32) -> Self {
        self.index_shards = shards.clamp(1, MAX_INDEX_SHARDS);
        self
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Checks that the table exists, so a misnamed table fails at start-up, by name.
    pub async fn check(&self) -> Result<(), DynamoError> {
        match self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                let svc = e.into_service_error();
                if svc.is_resource_not_found_exception() {
                    Err(DynamoError::MissingTable {
                        table: self.table.clone(),
                    })
                } else {
                    Err(DynamoError::Unreachable {
                        table: self.table.clone(),
                        message: aws_sdk_dynamodb::error::DisplayErrorContext(&svc).to_string(),
                    })
                }
            }
        }
    }

    /// Every item of a task's partition in `[from, to]`, following pages.
    pub(super) async fn range(
        &self,
        task_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :a AND :b")
                .expression_attribute_values(":pk", s(schema::task_pk(task_id)))
                .expression_attribute_values(":a", s(from))
                .expression_attribute_values(":b", s(to))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| sdk_err("Query", e))?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(items),
            }
        }
    }

    pub(super) async fn idempotency_record(
        &self,
        owner: &Principal,
        key: &IdempotencyKey,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(schema::idempotency_pk(owner, key)))
            .key("sk", s(schema::IDEMPOTENCY_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_err("GetItem", e))?;
        out.item
            .map(|item| {
                Ok(IdempotencyRecord {
                    owner: owner.clone(),
                    key: key.clone(),
                    fingerprint: get_s(&item, "fp")?.to_string(),
                    task_id: TaskId::parse(get_s(&item, "task")?).map_err(StoreError::Corrupt)?,
                })
            })
            .transpose()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A store on a fresh table of its own, when an endpoint is configured (`AWS_ENDPOINT_URL`,
    /// or real AWS with `TASKLEDGER_DYNAMODB_TESTS=1`). With `TASKLEDGER_REQUIRE_DYNAMODB=1`
    /// a missing endpoint fails instead of skipping.
    pub async fn fresh_store() -> Option<DynamoStore> {
        let configured = std::env::var("AWS_ENDPOINT_URL").is_ok()
            || std::env::var("AWS_ENDPOINT_URL_DYNAMODB").is_ok()
            || std::env::var("TASKLEDGER_DYNAMODB_TESTS").is_ok();
        if !configured {
            assert!(
                std::env::var("TASKLEDGER_REQUIRE_DYNAMODB").is_err(),
                "DynamoDB tests required but no endpoint configured"
            );
            return None;
        }
        let client = super::super::client::client_from_env().await;
        let prefix = format!("tl-test-{}-", uuid::Uuid::new_v4().simple());
        schema::create_tables(&client, &prefix)
            .await
            .expect("create test table");
        Some(DynamoStore::new(client, &prefix))
    }

    crate::contract_tests!(fresh_store());

    #[tokio::test]
    async fn a_missing_table_is_named_at_start_up() {
        let Some(store) = fresh_store().await else {
            return;
        };
        store.check().await.expect("the created table exists");
        let missing = DynamoStore::new(store.client().clone(), "tl-no-such-prefix-");
        let err = missing.check().await.expect_err("missing table");
        assert!(err.to_string().contains("tl-no-such-prefix-tasks"), "{err}");
    }
}
