//! A long upstream task followed across a kill -9 of taskledger (issue 52, ADR 034): the server
//! binary on SQLite (and on DynamoDB with its queues) follows an a2a-sdk agent's task (1.x, and
//! 0.3) in turns of a second; it is killed with
//! SIGKILL mid-task and started again on the same data directory; the task completes with every
//! tick of the upstream's artifact exactly once (the mirror of the upstream task, committed with
//! each batch, tells the restarted follower where it stands; nothing is sent upstream twice).

use std::time::Duration;

use serde_json::{json, Value};
use taskledger_tests::binary::ServerProcess;
use taskledger_tests::upstream::{partner, Sdk};

#[tokio::test]
async fn a_long_1_x_upstream_task_survives_a_kill_9_of_the_server() {
    survives_a_kill_9(Sdk::V1, Store::Sqlite).await;
}

#[tokio::test]
async fn a_long_0_3_upstream_task_survives_a_kill_9_of_the_server() {
    survives_a_kill_9(Sdk::V03, Store::Sqlite).await;
}

#[tokio::test]
async fn a_long_upstream_task_survives_a_kill_9_of_the_server_on_dynamodb() {
    if !taskledger_tests::aws_endpoint() {
        return;
    }
    let prefix = format!("tl-upcrash-{}-", uuid::Uuid::new_v4().simple());
    survives_a_kill_9(Sdk::V1, Store::Dynamo(prefix)).await;
}

enum Store {
    Sqlite,
    /// On the emulator, tables under this prefix; the stream poller and the queues (AWS path).
    Dynamo(String),
}

async fn survives_a_kill_9(sdk: Sdk, store: Store) {
    let Some(partner) = partner(sdk, &[]).await else {
        return;
    };
    let url = partner.url.clone();
    let dir = std::env::temp_dir().join(format!("tl-upcrash-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut flags = vec!["--agent-url", url.as_str(), "--agent-follow-secs", "1"];
    // A turn the kill interrupts is taken again once its lease runs out.
    flags.extend_from_slice(&["--turn-lease-secs", "3"]);
    let start = || async {
        match &store {
            Store::Sqlite => ServerProcess::sqlite_with(&dir, &flags).await,
            Store::Dynamo(prefix) => ServerProcess::dynamodb_with(&dir, prefix, &flags).await,
        }
    };
    let server = start().await;
    let sent = server
        .call(
            "SendMessage",
            json!({"message": {"messageId": "m-crash", "role": "ROLE_USER",
                "parts": [{"text": "slow 4"}]}, "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let ticks = |t: &Value| {
        t["result"]["artifacts"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|a| a["parts"].as_array().cloned().unwrap_or_default())
            .map(|p| p["text"].as_str().unwrap_or_default().to_string())
            .collect::<String>()
    };
    // mid-task: some ticks in, then SIGKILL
    for _ in 0..800 {
        let t = server.call("GetTask", json!({"id": id})).await;
        if ticks(&t).contains("tick-2 ") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    drop(server);
    let server = start().await;
    let mut last = Value::Null;
    for _ in 0..1200 {
        last = server.call("GetTask", json!({"id": id})).await;
        if last["result"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        last["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
    let want: String = (1..=8).map(|i| format!("tick-{i} ")).collect();
    assert_eq!(ticks(&last), want, "every tick once");
    let _ = std::fs::remove_dir_all(&dir);
}
