//! Push notifications: webhook subscriptions (validated once, here), the deliveries an update
//! makes, the address policy and the retry policy. Pure: sender and queues live in `infra`.

mod address;
mod delivery;
mod retry;
mod subscription;

pub use address::{parse_networks, AddressPolicy};
pub use delivery::{
    deliveries, PushDelivery, PushUpdate, CONTENT_TYPE, DELIVERY_ID_HEADER, SEQUENCE_HEADER,
    SIGNATURE_HEADER, TOKEN_HEADER,
};
pub use retry::{
    classify_status, failure_reason, parse_retry_after, AttemptResult, NextStep, RetryPolicy,
    DEFAULT_RETRY_HORIZON, MAX_FAILURE_REASON_BYTES, MAX_RETRY_PAUSE,
};
pub use subscription::{
    PushConfigSpec, Subscription, DEFAULT_PUSH_CONFIG_PAGE, MAX_PUSH_CONFIGS_PER_PRINCIPAL,
    MAX_PUSH_CONFIG_ID_BYTES, MAX_PUSH_CONFIG_PAGE, MAX_PUSH_CREDENTIALS_BYTES,
    MAX_PUSH_SCHEME_BYTES, MAX_PUSH_TOKEN_BYTES, MAX_PUSH_URL_BYTES,
};
