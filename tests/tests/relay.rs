//! The durable work path on the embedded store: committed work requests land in the feed, the
//! relay runs each turn once, duplicates and replays do nothing, and work committed while no
//! relay ran is done when one starts (a restart).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use taskledger_app::agent::ScenarioAgent;
use taskledger_app::runners::{handle_turn, TurnOutcome};
use taskledger_app::{Dispatch, Service, ServiceSettings};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::{Principal, TaskId};
use taskledger_domain::ports::{EventStore, WorkFeed};
use taskledger_domain::wire::{SendMessageRequest, SendMessageResponse, TaskState};
use taskledger_infra::SqliteStore;
use taskledger_local::{Config, Storage};
use taskledger_tests::{fast_timings, Server};

fn service(store: Arc<SqliteStore>) -> Arc<Service> {
    Service::new(
        store.clone(),
        store,
        ScenarioAgent::new(fast_timings()),
        CursorCodec::new(b"k".to_vec()),
        ServiceSettings {
            blocking_timeout: Duration::from_secs(5),
            dispatch: Dispatch::Feed,
            ..Default::default()
        },
    )
}

fn send(text: &str) -> SendMessageRequest {
    serde_json::from_value(json!({
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": true}
    }))
    .unwrap()
}

#[tokio::test]
async fn a_turn_runs_once_and_redelivery_or_replay_does_nothing() {
    let store = Arc::new(SqliteStore::in_memory());
    let svc = service(store.clone());
    let who = Principal::new("acme", "alice").unwrap();
    let SendMessageResponse::Task(task) =
        svc.send_message(&who, send("hello"), None).await.unwrap()
    else {
        panic!("a task")
    };
    assert_eq!(
        task.status.state,
        TaskState::Submitted,
        "no relay runs: nothing happened yet"
    );
    let id = TaskId::parse(task.id.clone()).unwrap();
    let feed = store.feed_after(0, 10).await.unwrap();
    assert_eq!(feed.len(), 1);
    let turn = feed[0].1.turn().unwrap();
    assert_eq!(handle_turn(&svc, &turn).await.unwrap(), TurnOutcome::Ran);
    let state = svc.ledger().current(&id).await.unwrap().unwrap();
    assert_eq!(state.head().unwrap().status.state, TaskState::Completed);
    let events = store.events(&id, 0).await.unwrap().len();
    // duplicate delivery, and the whole feed replayed: nothing repeats
    // the task is finished: a redelivery finds it final and does nothing
    assert_eq!(
        handle_turn(&svc, &turn).await.unwrap(),
        TurnOutcome::Nothing
    );
    for (_, e) in store.feed_after(0, 10).await.unwrap() {
        let t = e.turn().unwrap();
        assert_eq!(handle_turn(&svc, &t).await.unwrap(), TurnOutcome::Nothing);
    }
    assert_eq!(store.events(&id, 0).await.unwrap().len(), events);
}

#[tokio::test]
async fn an_older_turn_is_superseded_by_newer_work() {
    let store = Arc::new(SqliteStore::in_memory());
    let svc = service(store.clone());
    let who = Principal::new("acme", "alice").unwrap();
    let mut req = send("first");
    req.message.message_id = "tck-input-required-1".into();
    let SendMessageResponse::Task(task) = svc.send_message(&who, req, None).await.unwrap() else {
        panic!("a task")
    };
    let mut follow = send("second");
    follow.message.message_id = "tck-input-required-2".into();
    follow.message.task_id = Some(task.id.clone());
    svc.send_message(&who, follow, None).await.unwrap();
    let feed = store.feed_after(0, 10).await.unwrap();
    assert_eq!(feed.len(), 2);
    assert_eq!(
        handle_turn(&svc, &feed[0].1.turn().unwrap()).await.unwrap(),
        TurnOutcome::Superseded
    );
    assert_eq!(
        handle_turn(&svc, &feed[1].1.turn().unwrap()).await.unwrap(),
        TurnOutcome::Ran
    );
    let id = TaskId::parse(task.id).unwrap();
    let state = svc.ledger().current(&id).await.unwrap().unwrap();
    assert_eq!(state.head().unwrap().status.state, TaskState::InputRequired);
}

#[tokio::test]
async fn work_committed_before_a_restart_is_done_after_it() {
    let dir = std::env::temp_dir().join(format!("taskledger-relay-{}", uuid::Uuid::new_v4()));
    let id = {
        // a process that commits work and dies before any relay ran it
        let store = Arc::new(SqliteStore::open(&dir).unwrap());
        let svc = service(store);
        let who = taskledger_domain::ids::Principal::anonymous();
        match svc
            .send_message(&who, send("do it after the restart"), None)
            .await
            .unwrap()
        {
            SendMessageResponse::Task(t) => t.id,
            SendMessageResponse::Message(_) => panic!("a task"),
        }
    };
    let mut config = Config::in_memory().with_conformance_scenarios();
    config.storage = Storage::Dir(dir.clone());
    config.timings = fast_timings();
    let s = Server::start_with(config).await;
    let mut state = String::new();
    for _ in 0..100 {
        let t = s.ok("GetTask", json!({"id": id})).await;
        state = t["status"]["state"].as_str().unwrap().to_string();
        if state == "TASK_STATE_COMPLETED" {
            assert_eq!(
                t["artifacts"][0]["parts"][0]["text"],
                "Received: do it after the restart"
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(state, "TASK_STATE_COMPLETED");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two processes on one file (two servers, or a server and `taskledger work advance`): what the
/// other one committed is seen at once by a service that kept the task's state in memory
/// (ADR 025), and a command decided on the kept state is decided again on the stored one.
#[tokio::test]
async fn a_commit_by_another_process_on_the_same_file_is_seen_through_the_state_cache() {
    let dir = std::env::temp_dir().join(format!("taskledger-foreign-{}", uuid::Uuid::new_v4()));
    let here = service(Arc::new(SqliteStore::open(&dir).unwrap()));
    let there = service(Arc::new(SqliteStore::open(&dir).unwrap()));
    let who = Principal::anonymous();
    let SendMessageResponse::Task(task) =
        here.send_message(&who, send("hello"), None).await.unwrap()
    else {
        panic!("a task")
    };
    let id = TaskId::parse(task.id.clone()).unwrap();
    let kept = here.ledger().current(&id).await.unwrap().unwrap();
    assert_eq!(kept.head().unwrap().status.state, TaskState::Submitted);
    let cancel = || -> taskledger_domain::wire::CancelTaskRequest {
        serde_json::from_value(json!({"id": task.id})).unwrap()
    };
    there.cancel_task(&who, cancel()).await.unwrap();
    // Decided on the kept state, a command would pass; decided on the stored one it is refused.
    let here_too = here.cancel_task(&who, cancel()).await;
    let again = there.cancel_task(&who, cancel()).await;
    assert_eq!(
        again.map(|t| t.status.state).map_err(|e| e.to_string()),
        here_too.map(|t| t.status.state).map_err(|e| e.to_string()),
        "both processes answer the same"
    );
    let seen = here.ledger().current(&id).await.unwrap().unwrap();
    assert!(seen.version > kept.version, "the other process's commit");
    assert_eq!(seen.head().unwrap().status.state, TaskState::Canceled);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two servers on one file: a GetTask answer one of them kept (ADR 026) is not served once the
/// other committed a change to the task, nor once it committed anything at all; the same poll
/// asked again while nothing changes is answered alike.
#[tokio::test]
async fn a_kept_get_task_answer_gives_way_to_a_commit_by_another_server_on_the_same_file() {
    let dir = std::env::temp_dir().join(format!("taskledger-answers-{}", uuid::Uuid::new_v4()));
    let start = |dir: &std::path::Path| {
        let mut config = Config::in_memory().with_conformance_scenarios();
        config.storage = Storage::Dir(dir.to_path_buf());
        config.timings = fast_timings();
        Server::start_with(config)
    };
    let here = start(&dir).await;
    let there = start(&dir).await;
    let id = here
        .start_task(
            json!({"messageId": "tck-input-required-a", "role": "ROLE_USER",
            "parts": [{"text": "book a flight"}]}),
        )
        .await;
    let waiting = here.wait_state(&id, "TASK_STATE_INPUT_REQUIRED").await;
    let polled = here.ok("GetTask", json!({"id": id})).await;
    assert_eq!(polled, here.ok("GetTask", json!({"id": id})).await);
    assert_eq!(polled["status"], waiting["status"]);
    there.ok("CancelTask", json!({"id": id})).await;
    let seen = here.ok("GetTask", json!({"id": id})).await;
    assert_eq!(seen["status"]["state"], "TASK_STATE_CANCELED");
    // A commit to another task moves the store's stamp too: the answer is read again, and is
    // the same.
    there
        .start_task(
            json!({"messageId": "tck-input-required-b", "role": "ROLE_USER",
        "parts": [{"text": "another"}]}),
        )
        .await;
    assert_eq!(here.ok("GetTask", json!({"id": id})).await, seen);
    assert_eq!(
        here.ok("GetTask", json!({"id": id, "historyLength": 0}))
            .await
            .get("history"),
        None
    );
    let _ = std::fs::remove_dir_all(&dir);
}
