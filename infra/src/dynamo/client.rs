//! SDK configuration from the environment (`AWS_ENDPOINT_URL` points every client at LocalStack,
//! moto or another emulator), with the retry policy behind the store's "unavailable" errors.

use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;

use super::capacity::CapacityMeter;
use super::counting::CallCounter;

/// Attempts the SDK makes on throttling and transient errors before the store reports
/// "unavailable" (a 503-class error to the client); backoff is exponential with full jitter.
pub const SDK_MAX_ATTEMPTS: u32 = 5;
/// First and longest backoff between SDK attempts.
pub const SDK_INITIAL_BACKOFF: Duration = Duration::from_millis(50);
pub const SDK_MAX_BACKOFF: Duration = Duration::from_secs(2);

fn retry() -> RetryConfig {
    RetryConfig::standard()
        .with_max_attempts(SDK_MAX_ATTEMPTS)
        .with_initial_backoff(SDK_INITIAL_BACKOFF)
        .with_max_backoff(SDK_MAX_BACKOFF)
}

async fn build(
    endpoint: Option<&str>,
    counter: Option<CallCounter>,
    meter: Option<CapacityMeter>,
) -> aws_sdk_dynamodb::Client {
    let shared = aws_config::load_from_env().await;
    let mut config = aws_sdk_dynamodb::config::Builder::from(&shared).retry_config(retry());
    if let Some(e) = endpoint {
        config = config.endpoint_url(e);
    }
    if let Some(c) = counter {
        config = config.interceptor(c);
    }
    if let Some(m) = meter {
        config = config.interceptor(m);
    }
    aws_sdk_dynamodb::Client::from_conf(config.build())
}

/// A DynamoDB client configured from the environment (region, credentials, endpoint).
pub async fn client_from_env() -> aws_sdk_dynamodb::Client {
    build(None, None, None).await
}

/// Same, with an interceptor counting calls per operation (round-trip budgets, benches).
pub async fn counting_client_from_env(counter: CallCounter) -> aws_sdk_dynamodb::Client {
    build(None, Some(counter), None).await
}

/// Same, for an explicit endpoint (a proxy in front of the emulator, in tests).
pub async fn client_for_endpoint(endpoint: &str) -> aws_sdk_dynamodb::Client {
    build(Some(endpoint), None, None).await
}

/// Same, counting calls and metering capacity per labelled operation (the cost bench).
pub async fn metering_client_from_env(
    counter: CallCounter,
    meter: CapacityMeter,
) -> aws_sdk_dynamodb::Client {
    build(None, Some(counter), Some(meter)).await
}
