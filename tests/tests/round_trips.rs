//! Round-trip budgets on DynamoDB: the calls each API operation makes itself, counted by an SDK
//! interceptor (the agent's work, done in its own task, is not part of the operation). Every
//! operation answers in at most two calls whatever the history or page size (ADR 019); the
//! few that may take a third say so here, with the reason.
//! Runs when an endpoint is configured (`AWS_ENDPOINT_URL`); `TASKLEDGER_REQUIRE_DYNAMODB=1`
//! turns a missing endpoint into a failure (the test script sets it).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use taskledger_app::agent::ScenarioAgent;
use taskledger_app::service::turns::{handle_turn, TurnOutcome};
use taskledger_app::{Dispatch, Service, ServiceSettings};
use taskledger_domain::agent::turns::turns_from;
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::{Principal, TaskId};
use taskledger_domain::task::RECENT_MESSAGES;
use taskledger_domain::wire::{SendMessageResponse, Task};
use taskledger_infra::dynamo::counting::calls_made_by;
use taskledger_infra::dynamo::{self, schema, DynamoStore};
use taskledger_tests::fast_timings;

async fn service(index_shards: u32) -> Option<Arc<Service>> {
    service_with(index_shards, Dispatch::InProcess).await
}

async fn service_with(index_shards: u32, dispatch: Dispatch) -> Option<Arc<Service>> {
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
    let store = Arc::new(DynamoStore::new(client, &prefix).with_index_shards(index_shards));
    let settings = ServiceSettings {
        push_enabled: true,
        dispatch,
        ..ServiceSettings::default()
    };
    Some(Service::new(
        store.clone(),
        store,
        ScenarioAgent::new(fast_timings()),
        CursorCodec::new(b"k".to_vec()),
        settings,
    ))
}

fn req<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("request")
}

fn send(
    id: &str,
    task: Option<&str>,
    configuration: Value,
) -> taskledger_domain::wire::SendMessageRequest {
    let mut message = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hi"}]});
    if let Some(t) = task {
        message["taskId"] = json!(t);
    }
    req(json!({"message": message, "configuration": configuration}))
}

fn total(calls: &BTreeMap<String, u64>) -> u64 {
    calls.values().sum()
}

fn task_of(r: SendMessageResponse) -> Task {
    match r {
        SendMessageResponse::Task(t) => *t,
        SendMessageResponse::Message(m) => panic!("a task, not {m:?}"),
    }
}

fn who() -> Principal {
    Principal::new("acme", "alice").unwrap()
}

/// Waits (uncounted) until the agent answered the newest message: the task interrupted or
/// terminal with the agent's message last in history.
async fn settle(svc: &Service, task: &str) -> Task {
    for _ in 0..200 {
        let t = svc
            .get_task(&who(), req(json!({"id": task, "historyLength": 1})))
            .await
            .unwrap();
        if taskledger_tests::agent_answered(&t) {
            return t;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("task {task} did not settle")
}

const AT_ONCE: fn() -> Value = || json!({"returnImmediately": true});

#[tokio::test]
async fn every_operation_stays_within_two_calls() {
    let Some(svc) = service(1).await else { return };

    // SendMessage creating a task: one transaction, the answer from its events.
    for config in [
        json!({"returnImmediately": true, "historyLength": 0}),
        AT_ONCE(),
        json!({}),
    ] {
        let (r, calls) = calls_made_by(svc.send_message(
            &who(),
            send("tck-input-required-new", None, config.clone()),
            None,
        ))
        .await;
        let task = task_of(r.expect("created"));
        assert!(total(&calls) <= 2, "new task {config}: {calls:?}");
        assert_eq!(calls.get("TransactWriteItems"), Some(&1), "{calls:?}");
        settle(&svc, &task.id).await;
    }

    // A task whose history outgrows what its head keeps (two messages a round).
    let first = task_of(
        svc.send_message(&who(), send("tck-input-required-0", None, AT_ONCE()), None)
            .await
            .unwrap(),
    );
    let id = first.id.clone();
    settle(&svc, &id).await;
    let rounds = RECENT_MESSAGES / 2 + 2;
    for i in 1..=rounds {
        let (r, calls) = calls_made_by(svc.send_message(
            &who(),
            send(&format!("tck-input-required-{i}"), Some(&id), AT_ONCE()),
            None,
        ))
        .await;
        let t = task_of(r.expect("appended"));
        assert!(
            total(&calls) <= 2,
            "message {i} to an existing task: {calls:?}"
        );
        assert!(t
            .history
            .is_some_and(|h| !h.is_empty() && h.len() <= RECENT_MESSAGES));
        settle(&svc, &id).await;
    }
    let history_len = 2 * (rounds + 1);
    assert!(history_len > RECENT_MESSAGES);

    // GetTask: the head alone for a short history, head + one Query for the whole of a long one.
    for (asked, expect_len) in [
        (json!({"id": id}), history_len),
        (json!({"id": id, "historyLength": 0}), 0),
        (json!({"id": id, "historyLength": 3}), 3),
        (
            json!({"id": id, "historyLength": RECENT_MESSAGES + 4}),
            RECENT_MESSAGES + 4,
        ),
    ] {
        let (r, calls) = calls_made_by(svc.get_task(&who(), req(asked.clone()))).await;
        let t = r.expect("task");
        assert_eq!(
            t.history.map(|h| h.len()).unwrap_or(0),
            expect_len,
            "{asked}"
        );
        assert!(total(&calls) <= 2, "GetTask {asked}: {calls:?}");
        if expect_len <= RECENT_MESSAGES {
            assert_eq!(
                total(&calls),
                1,
                "GetTask {asked} reads the head only: {calls:?}"
            );
        }
    }

    // A task with an artifact.
    let art = task_of(
        svc.send_message(&who(), send("tck-artifact-data-1", None, AT_ONCE()), None)
            .await
            .unwrap(),
    );
    settle(&svc, &art.id).await;
    let (r, calls) = calls_made_by(svc.get_task(&who(), req(json!({"id": art.id})))).await;
    assert!(r.unwrap().artifacts.is_some_and(|a| !a.is_empty()));
    assert!(total(&calls) <= 2, "GetTask with artifacts: {calls:?}");

    // ListTasks: one index Query and one BatchGetItem, whatever the page or history asked.
    for i in 0..5 {
        svc.send_message(
            &who(),
            send(&format!("tck-complete-task-{i}"), None, AT_ONCE()),
            None,
        )
        .await
        .unwrap();
    }
    let everything = 5 + 3 + 1 + 1;
    for asked in [
        json!({}),
        json!({"pageSize": 2}),
        json!({"pageSize": 100, "historyLength": 50}),
        json!({"includeArtifacts": true}),
        json!({"status": "TASK_STATE_INPUT_REQUIRED"}),
        json!({"contextId": first.context_id, "status": "TASK_STATE_INPUT_REQUIRED"}),
    ] {
        let (r, calls) = calls_made_by(svc.list_tasks(&who(), req(asked.clone()))).await;
        let page = r.expect("page");
        assert!(total(&calls) <= 2, "ListTasks {asked}: {calls:?}");
        assert!(!calls.contains_key("Scan"));
        if asked.as_object().unwrap().is_empty() {
            assert_eq!(page.total_size as usize, everything);
            let long = page.tasks.iter().find(|t| t.id == id).expect("listed");
            assert_eq!(
                long.history.as_ref().map(Vec::len),
                Some(RECENT_MESSAGES),
                "the tail"
            );
        }
        if asked.get("includeArtifacts").is_some() {
            let listed = page.tasks.iter().find(|t| t.id == art.id).expect("listed");
            assert!(listed.artifacts.as_ref().is_some_and(|a| !a.is_empty()));
        }
    }
    // The second page: the same two calls.
    let p1 = svc
        .list_tasks(&who(), req(json!({"pageSize": 3})))
        .await
        .unwrap();
    let (r, calls) = calls_made_by(svc.list_tasks(
        &who(),
        req(json!({"pageSize": 3, "pageToken": p1.next_page_token})),
    ))
    .await;
    let p2 = r.unwrap();
    assert_eq!(p2.tasks.len(), 3);
    assert!(p2
        .tasks
        .iter()
        .all(|t| p1.tasks.iter().all(|u| u.id != t.id)));
    assert!(total(&calls) <= 2, "ListTasks page 2: {calls:?}");

    // Push configs: a load and a transaction to change, a load to read.
    let (r, calls) = calls_made_by(svc.create_push_config(
        &who(),
        req(json!({"taskId": id, "id": "hook", "url": "https://hooks.example.com/a2a"})),
    ))
    .await;
    r.expect("push config");
    assert!(
        total(&calls) <= 2,
        "CreateTaskPushNotificationConfig: {calls:?}"
    );
    let (r, calls) =
        calls_made_by(svc.get_push_config(&who(), req(json!({"taskId": id, "id": "hook"})))).await;
    r.expect("got");
    assert!(
        total(&calls) <= 2,
        "GetTaskPushNotificationConfig: {calls:?}"
    );
    let (r, calls) = calls_made_by(svc.list_push_configs(&who(), req(json!({"taskId": id})))).await;
    assert_eq!(r.expect("listed").configs.len(), 1);
    assert!(
        total(&calls) <= 2,
        "ListTaskPushNotificationConfigs: {calls:?}"
    );
    let (r, calls) =
        calls_made_by(svc.delete_push_config(&who(), req(json!({"taskId": id, "id": "hook"}))))
            .await;
    r.expect("deleted");
    assert!(
        total(&calls) <= 2,
        "DeleteTaskPushNotificationConfig: {calls:?}"
    );

    // CancelTask: a load and a transaction, answered from the committed state.
    let (r, calls) = calls_made_by(svc.cancel_task(&who(), req(json!({"id": id})))).await;
    let t = r.expect("canceled");
    assert_eq!(t.status.state.as_str(), "TASK_STATE_CANCELED");
    assert!(total(&calls) <= 2, "CancelTask: {calls:?}");
}

#[tokio::test]
async fn sharded_list_indexes_cost_one_query_per_shard() {
    const SHARDS: u32 = 4;
    let Some(svc) = service(SHARDS).await else {
        return;
    };
    let mut ids = Vec::new();
    for i in 0..12 {
        let t = task_of(
            svc.send_message(
                &who(),
                send(&format!("tck-complete-task-{i}"), None, AT_ONCE()),
                None,
            )
            .await
            .unwrap(),
        );
        ids.push(t.id);
    }
    for id in &ids {
        settle(&svc, id).await;
    }
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let (r, calls) =
            calls_made_by(svc.list_tasks(&who(), req(json!({"pageSize": 5, "pageToken": token}))))
                .await;
        let page = r.expect("page");
        assert_eq!(page.total_size, 12);
        assert_eq!(calls.get("Query"), Some(&(SHARDS as u64)), "{calls:?}");
        assert_eq!(calls.get("BatchGetItem"), Some(&1), "{calls:?}");
        seen.extend(
            page.tasks
                .iter()
                .map(|t| (t.status.timestamp, t.id.clone())),
        );
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    // Every task once, newest first across the shards.
    assert_eq!(seen.len(), 12);
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, sorted);
}

/// A turn reads its task's state once: what it starts from. The agent's commits are decided on
/// the state the turn holds (the append's version check guards it), and the turn's record on
/// the state its last commit left — for a turn that finished the task, nothing.
#[tokio::test]
async fn a_turn_reads_its_task_once() {
    // Nothing runs the turn but this test (feed dispatch without a relay).
    let Some(svc) = service_with(1, Dispatch::Feed).await else {
        return;
    };
    for (message, ends) in [("turn-completes", true), ("tck-input-required-1", false)] {
        let task = task_of(
            svc.send_message(&who(), send(message, None, AT_ONCE()), None)
                .await
                .expect("created"),
        );
        let id = TaskId::parse(task.id.clone()).unwrap();
        let turn = turns_from(&id, &svc.events(&id, 0).await.unwrap())
            .pop()
            .expect("a turn was asked for");
        let (outcome, calls) = calls_made_by(handle_turn(&svc, &turn)).await;
        assert_eq!(outcome.expect("ran"), TurnOutcome::Ran, "{message}");
        // One read of the task's state (its head); the log is read once more for the turn's
        // input message, as this process did not commit the request.
        assert_eq!(calls.get("GetItem"), Some(&1), "{message}: {calls:?}");
        assert_eq!(calls.get("Query"), Some(&1), "{message}: {calls:?}");
        // One commit: a turn that leaves its task waiting records itself in that commit.
        assert_eq!(
            calls.get("TransactWriteItems"),
            Some(&1),
            "{message}: {calls:?}"
        );
        let answered = svc
            .get_task(&who(), req(json!({"id": task.id})))
            .await
            .unwrap();
        assert_eq!(answered.status.state.is_terminal(), ends, "{message}");
        // A task left waiting has its turn recorded: a redelivery must not run the agent again.
        let again = handle_turn(&svc, &turn).await.expect("redelivered");
        assert_ne!(
            again,
            TurnOutcome::Ran,
            "{message}: a redelivery does nothing"
        );
    }
}
