//! The serverless agent path against the emulator: committed work → stream items → the relay
//! enqueues turns on the FIFO queue (a replayed batch adds nothing) → the worker runs each turn
//! once (a duplicate delivery does nothing). Needs `AWS_ENDPOINT_URL` like the other AWS tests.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use taskledger_app::agent::ScenarioAgent;
use taskledger_app::runners::{handle_turn, TurnOutcome};
use taskledger_app::{Dispatch, Service, ServiceSettings};
use taskledger_domain::agent::turns::{turns_from_stream, AgentTurn, StreamedEvent, TurnQueue};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::{Principal, TaskId};
use taskledger_domain::ports::EventStore;
use taskledger_domain::wire::{SendMessageRequest, SendMessageResponse, TaskState};
use taskledger_infra::dynamo::{self, schema, DynamoStore};
use taskledger_infra::sqs::{self, SqsTurnQueue};
use taskledger_tests::fast_timings;

async fn receive_all(client: &aws_sdk_sqs::Client, url: &str) -> Vec<aws_sdk_sqs::types::Message> {
    let mut all = Vec::new();
    for _ in 0..3 {
        let out = client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        let got = out.messages.unwrap_or_default();
        if got.is_empty() && !all.is_empty() {
            break;
        }
        for m in &got {
            client
                .delete_message()
                .queue_url(url)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .unwrap();
        }
        all.extend(got);
    }
    all
}

#[tokio::test]
async fn committed_work_runs_once_through_the_queue() {
    if !taskledger_tests::aws_endpoint() {
        return;
    }
    let prefix = format!("tl-sqs-{}-", uuid::Uuid::new_v4().simple());
    let ddb = dynamo::client_from_env().await;
    schema::create_tables(&ddb, &prefix).await.unwrap();
    let store = Arc::new(DynamoStore::new(ddb, &prefix));
    let client = sqs::client_from_env().await;
    let (url, _dlq) = sqs::create_queues(&client, &prefix).await.unwrap();
    let queue = SqsTurnQueue::new(client.clone(), url.clone());
    let svc = Service::new(
        store.clone(),
        store.clone(),
        ScenarioAgent::new(fast_timings()),
        CursorCodec::new(b"k".to_vec()),
        ServiceSettings {
            blocking_timeout: Duration::from_secs(1),
            dispatch: Dispatch::Feed,
            ..Default::default()
        },
    );
    let who = Principal::new("acme", "alice").unwrap();
    let req: SendMessageRequest = serde_json::from_value(json!({
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "via the queue"}]},
        "configuration": {"returnImmediately": true}
    }))
    .unwrap();
    let SendMessageResponse::Task(task) = svc.send_message(&who, req, None).await.unwrap() else {
        panic!("a task")
    };
    let id = TaskId::parse(task.id.clone()).unwrap();
    // the stream shows every committed item; the relay sees the batch twice (a replay)
    let items: Vec<StreamedEvent> = store
        .events(&id, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|e| StreamedEvent {
            task_id: id.clone(),
            seq: e.seq,
            event_type: e.event_type,
        })
        .collect();
    assert_eq!(items.len(), 3);
    for _ in 0..2 {
        queue.enqueue(&turns_from_stream(&items)).await.unwrap();
    }
    let messages = receive_all(&client, &url).await;
    assert_eq!(messages.len(), 1, "one turn, de-duplicated");
    let turn: AgentTurn = serde_json::from_str(messages[0].body().unwrap()).unwrap();
    assert_eq!(
        turn,
        AgentTurn {
            task_id: id.clone(),
            work_seq: 3,
            trace: None,
        }
    );
    // the worker runs it; a second delivery of the same message does nothing
    assert_eq!(handle_turn(&svc, &turn).await.unwrap(), TurnOutcome::Ran);
    let done = store.events(&id, 0).await.unwrap().len();
    // the task is finished: a redelivery finds it final and does nothing
    assert_eq!(
        handle_turn(&svc, &turn).await.unwrap(),
        TurnOutcome::Nothing
    );
    assert_eq!(store.events(&id, 0).await.unwrap().len(), done);
    let state = svc.ledger().current(&id).await.unwrap().unwrap();
    assert_eq!(state.head().unwrap().status.state, TaskState::Completed);
}
