//! DynamoDB throttling through a real HTTP server standing in front of the emulator: throttled
//! calls are retried with backoff; a store that keeps throttling yields "unavailable", and no
//! event is lost or half-written. Needs an endpoint (`AWS_ENDPOINT_URL`), like the other
//! DynamoDB tests.

use std::sync::Arc;

use taskledger_domain::ports::{commit_for, restore, EventStore, StoreError};
use taskledger_domain::task::{AppendUserMessage, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_infra::contract::{create_task, user_message};
use taskledger_infra::dynamo::{self, schema, DynamoStore};
use taskledger_tests::proxy::ThrottlingProxy;

async fn setup(throttle: u64) -> Option<(Arc<ThrottlingProxy>, DynamoStore, DynamoStore)> {
    let upstream = std::env::var("AWS_ENDPOINT_URL")
        .ok()
        .or_else(|| std::env::var("AWS_ENDPOINT_URL_DYNAMODB").ok());
    let Some(upstream) = upstream else {
        assert!(
            std::env::var("TASKLEDGER_REQUIRE_DYNAMODB").is_err(),
            "DynamoDB tests required"
        );
        eprintln!("skipped: no DynamoDB endpoint");
        return None;
    };
    let proxy = ThrottlingProxy::start(&upstream).await;
    let prefix = format!("tl-throttle-{}-", uuid::Uuid::new_v4().simple());
    let direct = dynamo::client_from_env().await;
    schema::create_tables(&direct, &prefix).await.unwrap();
    let direct = DynamoStore::new(direct, &prefix);
    let through = DynamoStore::new(dynamo::client_for_endpoint(&proxy.url).await, &prefix);
    proxy.throttle_next(throttle);
    Some((proxy, direct, through))
}

async fn append_one(
    store: &DynamoStore,
    direct: &DynamoStore,
    id: &taskledger_domain::ids::TaskId,
) -> Result<(), StoreError> {
    let loaded = direct.load(id).await.unwrap().unwrap();
    let before = restore(&loaded).unwrap().unwrap();
    let events = before
        .decide(TaskCommand::AppendUserMessage(AppendUserMessage {
            message: user_message("m-t", "through the proxy"),
            at: Timestamp::now(),
            caller: None,
        }))
        .unwrap();
    store
        .append(&commit_for(id.clone(), &before, &events, Timestamp::now()))
        .await
}

#[tokio::test]
async fn throttled_calls_are_retried_and_succeed() {
    let Some((proxy, direct, through)) = setup(0).await else {
        return;
    };
    let id = create_task(&direct, "t-throttle", "c").await;
    proxy.throttle_next(2);
    append_one(&through, &direct, &id)
        .await
        .expect("retried through throttling");
    assert_eq!(proxy.throttled(), 2);
    let events = direct.events(&id, 0).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5],
        "created (3 events) and the message (2), each once"
    );
}

#[tokio::test]
async fn persistent_throttling_is_unavailable_and_writes_nothing() {
    let Some((proxy, direct, through)) = setup(0).await else {
        return;
    };
    let id = create_task(&direct, "t-throttle-2", "c").await;
    proxy.throttle_next(u64::MAX);
    let err = append_one(&through, &direct, &id)
        .await
        .expect_err("gives up");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err}");
    assert_eq!(
        proxy.throttled(),
        u64::from(dynamo::SDK_MAX_ATTEMPTS),
        "every attempt was made"
    );
    let err = through.load(&id).await.expect_err("reads too");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err}");
    assert_eq!(
        direct.events(&id, 0).await.unwrap().len(),
        3,
        "nothing half-written"
    );
}
