//! Round-trip budgets on DynamoDB: the calls each API operation makes itself, counted by an SDK
//! interceptor (the agent's work, done in its own task, is not part of the operation).
//! Runs when an endpoint is configured (`AWS_ENDPOINT_URL`); `TASKLEDGER_REQUIRE_DYNAMODB=1`
//! turns a missing endpoint into a failure (the test script sets it).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;
use taskledger_app::agent::ScenarioAgent;
use taskledger_app::{Service, ServiceSettings};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::Principal;
use taskledger_domain::wire::{
    GetTaskRequest, ListTasksRequest, SendMessageRequest, SendMessageResponse,
};
use taskledger_infra::dynamo::counting::calls_made_by;
use taskledger_infra::dynamo::{self, schema, DynamoStore};
use taskledger_tests::fast_timings;

async fn service() -> Option<Arc<Service>> {
    if std::env::var("AWS_ENDPOINT_URL").is_err()
        && std::env::var("AWS_ENDPOINT_URL_DYNAMODB").is_err()
    {
        assert!(
            std::env::var("TASKLEDGER_REQUIRE_DYNAMODB").is_err(),
            "DynamoDB tests required but no endpoint configured"
        );
        eprintln!("skipped: no DynamoDB endpoint");
        return None;
    }
    let counter = dynamo::counting::CallCounter::default();
    let client = dynamo::counting_client_from_env(counter).await;
    let prefix = format!("tl-budget-{}-", uuid::Uuid::new_v4().simple());
    schema::create_tables(&client, &prefix)
        .await
        .expect("tables");
    let store = Arc::new(DynamoStore::new(client, &prefix));
    Some(Service::new(
        store.clone(),
        store,
        ScenarioAgent::new(fast_timings()),
        CursorCodec::new(b"k".to_vec()),
        ServiceSettings::default(),
    ))
}

fn send(id: &str, task: Option<&str>) -> SendMessageRequest {
    let mut message = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hi"}]});
    if let Some(t) = task {
        message["taskId"] = json!(t);
    }
    serde_json::from_value(json!({
        "message": message,
        "configuration": {"returnImmediately": true, "historyLength": 0}
    }))
    .expect("request")
}

fn total(calls: &BTreeMap<String, u64>) -> u64 {
    calls.values().sum()
}

#[tokio::test]
async fn each_operation_stays_within_its_round_trip_budget() {
    let Some(svc) = service().await else { return };
    let who = Principal::new("acme", "alice").unwrap();

    let (r, calls) =
        calls_made_by(svc.send_message(&who, send("tck-input-required-1", None), None)).await;
    let SendMessageResponse::Task(task) = r.expect("created") else {
        panic!("a task")
    };
    assert!(total(&calls) <= 2, "new task: {calls:?}");
    assert_eq!(calls.get("TransactWriteItems"), Some(&1), "{calls:?}");

    // wait for the agent to ask for input, so the follow-up is a plain append
    for _ in 0..100 {
        let t = svc
            .get_task(
                &who,
                GetTaskRequest {
                    tenant: None,
                    id: task.id.clone(),
                    history_length: Some(0),
                    current_generation: None,
                },
            )
            .await
            .unwrap();
        if t.status.state.is_interrupted() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    let (r, calls) =
        calls_made_by(svc.send_message(&who, send("tck-input-required-2", Some(&task.id)), None))
            .await;
    r.expect("appended");
    assert!(total(&calls) <= 2, "message to an existing task: {calls:?}");

    let (r, calls) = calls_made_by(svc.get_task(
        &who,
        GetTaskRequest {
            tenant: None,
            id: task.id.clone(),
            history_length: None,
            current_generation: None,
        },
    ))
    .await;
    assert!(r.expect("task").history.is_some());
    assert!(total(&calls) <= 2, "GetTask: {calls:?}");

    for i in 0..5 {
        svc.send_message(&who, send(&format!("tck-complete-task-{i}"), None), None)
            .await
            .unwrap();
    }
    let req = ListTasksRequest {
        page_size: Some(2),
        history_length: Some(0),
        ..Default::default()
    };
    let (r, calls) = calls_made_by(svc.list_tasks(&who, req)).await;
    let page = r.expect("page");
    assert_eq!(page.tasks.len(), 2);
    assert!(total(&calls) <= 2, "ListTasks page: {calls:?}");
    assert!(!calls.contains_key("Scan"));
}
