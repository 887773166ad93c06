//! The local server on DynamoDB with the serverless path in-process: commits reach the agent
//! through the table's stream (stream poller → relay → FIFO turn queue → turn poller → the
//! worker's handler), and webhooks through the push queue and the push worker's processing —
//! the same handlers as the Lambdas, against the emulator. Needs `AWS_ENDPOINT_URL`.

use std::time::Duration;

use serde_json::json;
use taskledger_local::{Config, Storage};
use taskledger_tests::receiver::{state_of, Receiver, Script};
use taskledger_tests::{aws_endpoint, fast_timings, Server};

async fn serverless_server() -> Server {
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = Storage::Dynamo {
        index_shards: 1,
        prefix: format!("tl-poll-{}-", uuid::Uuid::new_v4().simple()),
        create_tables: true,
        counter: None,
        pollers: true,
    };
    c.timings = fast_timings();
    c.blocking_timeout = Duration::from_secs(20);
    Server::start_with(c).await
}

fn message(id: &str, text: &str, task_id: Option<&str>) -> serde_json::Value {
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(t) = task_id {
        m["taskId"] = json!(t);
    }
    m
}

#[tokio::test]
async fn work_and_webhooks_flow_through_the_stream_and_the_queues() {
    if !aws_endpoint() {
        return;
    }
    let s = serverless_server().await;
    assert_eq!(s.card().await["capabilities"]["pushNotifications"], true);
    let r = Receiver::start(Script::FailFirst(1)).await;

    // Blocking send: answered once the agent, reached through stream and queue, has asked.
    let v = s
        .call(
            "SendMessage",
            json!({"message": message("tck-input-required-poll", "start", None),
                   "configuration": {"taskPushNotificationConfig": {"url": r.url,
                       "authentication": {"scheme": "Bearer", "credentials": "c"}}}}),
        )
        .await;
    let task = &v["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{v}");
    let id = task["id"].as_str().unwrap().to_string();

    // A second turn on the same task.
    let v = s
        .call(
            "SendMessage",
            json!({"message": message("poll-2", "here", Some(&id))}),
        )
        .await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );

    // The webhook got the updates (the first attempt failed and was retried), credentials set.
    r.wait_for(Duration::from_secs(30), |u| {
        u.iter()
            .any(|d| state_of(d).as_deref() == Some("TASK_STATE_COMPLETED"))
    })
    .await;
    let states: Vec<String> = r.unique().iter().filter_map(state_of).collect();
    assert!(
        states.contains(&"TASK_STATE_INPUT_REQUIRED".to_string()),
        "{states:?}"
    );
    assert!(r.seen().iter().any(|d| d.status == 503));
    assert!(r
        .seen()
        .iter()
        .all(|d| d.header("authorization") == Some("Bearer c")));
}
