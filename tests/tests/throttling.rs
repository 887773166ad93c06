//! DynamoDB throttling through a real HTTP server standing in front of the emulator: throttled
//! calls are retried with backoff; a store that keeps throttling yields "unavailable", and no
//! event is lost or half-written. Needs an endpoint (`AWS_ENDPOINT_URL`), like the other
//! DynamoDB tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use taskledger_domain::ports::{commit_for, restore, EventStore, StoreError};
use taskledger_domain::task::{AppendUserMessage, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_infra::contract::{create_task, user_message};
use taskledger_infra::dynamo::{self, schema, DynamoStore};

struct Proxy {
    upstream: String,
    /// Requests still to be answered with ThrottlingException.
    throttle: AtomicU64,
    throttled: AtomicU64,
    client: reqwest::Client,
}

async fn handle(State(p): State<Arc<Proxy>>, headers: HeaderMap, body: Bytes) -> Response {
    let left = p.throttle.load(Ordering::SeqCst);
    if left > 0 {
        p.throttle.store(left - 1, Ordering::SeqCst);
        p.throttled.fetch_add(1, Ordering::SeqCst);
        let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#;
        return (
            StatusCode::BAD_REQUEST,
            [("content-type", "application/x-amz-json-1.0")],
            body,
        )
            .into_response();
    }
    let mut req = p.client.post(&p.upstream).body(body);
    for (k, v) in &headers {
        if k != "host" && k != "content-length" {
            req = req.header(k, v);
        }
    }
    match req.send().await {
        Ok(r) => {
            let status =
                StatusCode::from_u16(r.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            let ct = r
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/x-amz-json-1.0")
                .to_string();
            let bytes = r.bytes().await.unwrap_or_default();
            (status, [("content-type", ct)], bytes).into_response()
        }
        Err(_) => StatusCode::BAD_GATEWAY.into_response(),
    }
}

async fn setup(throttle: u64) -> Option<(Arc<Proxy>, DynamoStore, DynamoStore)> {
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
    let proxy = Arc::new(Proxy {
        upstream,
        throttle: AtomicU64::new(0),
        throttled: AtomicU64::new(0),
        client: reqwest::Client::new(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .fallback(handle)
        .with_state(proxy.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let prefix = format!("tl-throttle-{}-", uuid::Uuid::new_v4().simple());
    let direct = dynamo::client_from_env().await;
    schema::create_tables(&direct, &prefix).await.unwrap();
    let direct = DynamoStore::new(direct, &prefix);
    let through = DynamoStore::new(
        dynamo::client_for_endpoint(&format!("http://{addr}")).await,
        &prefix,
    );
    proxy.throttle.store(throttle, Ordering::SeqCst);
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
    proxy.throttle.store(2, Ordering::SeqCst);
    append_one(&through, &direct, &id)
        .await
        .expect("retried through throttling");
    assert_eq!(proxy.throttled.load(Ordering::SeqCst), 2);
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
    proxy.throttle.store(u64::MAX, Ordering::SeqCst);
    let err = append_one(&through, &direct, &id)
        .await
        .expect_err("gives up");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err}");
    assert_eq!(
        proxy.throttled.load(Ordering::SeqCst),
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
