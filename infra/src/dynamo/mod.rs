//! The DynamoDB adapter: the table and its key format (`schema`), the store (`store`, with its
//! append, reads, list and rebuild parts), call counting, capacity metering, and SDK clients from the environment.

mod append;
pub mod batch;
pub mod capacity;
mod client;
pub mod counting;
mod expiry;
mod housekeeping;
mod list;
mod reads;
mod rebuild;
pub mod schema;
mod snapshot;
pub mod store;

pub use client::{
    client_for_endpoint, client_from_env, counting_client_from_env, metering_client_from_env,
    SDK_INITIAL_BACKOFF, SDK_MAX_ATTEMPTS, SDK_MAX_BACKOFF,
};
pub use store::{DynamoError, DynamoStore};
