//! The DynamoDB adapter: table definition, the store, and SDK configuration from the environment
//! (`AWS_ENDPOINT_URL` points every client at LocalStack, moto or another emulator).

pub mod counting;
pub mod schema;
pub mod store;

pub use store::{DynamoError, DynamoStore};

use aws_sdk_dynamodb::config::retry::RetryConfig;

/// Attempts the SDK makes on throttling and transient errors before the store reports
/// "unavailable" (a 503-class error to the client); backoff is exponential with jitter.
pub const SDK_MAX_ATTEMPTS: u32 = 5;

/// A DynamoDB client configured from the environment (region, credentials, endpoint).
pub async fn client_from_env() -> aws_sdk_dynamodb::Client {
    let shared = aws_config::load_from_env().await;
    let config = aws_sdk_dynamodb::config::Builder::from(&shared)
        .retry_config(RetryConfig::standard().with_max_attempts(SDK_MAX_ATTEMPTS))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// Same, with an interceptor counting calls per operation (round-trip budgets, benches).
pub async fn counting_client_from_env(counter: counting::CallCounter) -> aws_sdk_dynamodb::Client {
    let shared = aws_config::load_from_env().await;
    let config = aws_sdk_dynamodb::config::Builder::from(&shared)
        .retry_config(RetryConfig::standard().with_max_attempts(SDK_MAX_ATTEMPTS))
        .interceptor(counter)
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}
