//! Adapters behind the domain's ports: the embedded default store on SQLite and the DynamoDB store.

#[cfg(any(test, feature = "contract"))]
pub mod contract;
pub mod dynamo;
pub mod lambda;
pub mod llm;
pub mod push_relay;
pub mod relay;
pub mod skills;
pub mod sqlite;
pub mod sqs;
pub mod streams;
pub mod webhook;

pub use sqlite::SqliteStore;
