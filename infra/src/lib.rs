//! Adapters behind the domain's ports: SQLite and DynamoDB stores passing one contract suite, SQS
//! queues, the DynamoDB Streams reader and relay, the S3 archive, webhooks, LLM providers, skills, Lambda helpers.

#[cfg(any(test, feature = "contract"))]
pub mod contract;
pub mod dynamo;
pub mod files;
pub mod jwks;
pub mod lambda;
pub mod lifecycle;
pub mod llm;
pub mod logging;
pub mod mcp;
pub mod otlp;
pub mod outbound;
pub mod relay;
#[cfg(feature = "s3")]
pub mod s3;
pub mod secrets;
pub mod skills;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod sqs;
#[cfg(feature = "streams")]
pub mod streams;
pub mod webhook;

#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
