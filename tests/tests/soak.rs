//! Soak on the emulator path: the local server on DynamoDB with the serverless path in-process
//! (stream poller → relay → FIFO turn queue → turn poller → worker), 200 blocking sends spread
//! over at least two minutes, some of them retried with their Idempotency-Key (a transaction the
//! store cancels, which makes moto swap its table under the stream's open iterators). Every task
//! must reach COMPLETED. Ignored by `cargo test`; the test script runs it (`--ignored`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use taskledger_local::{Config, Storage};
use taskledger_tests::{aws_endpoint, fast_timings, Server};

/// Blocking sends in the soak.
const SENDS: usize = 200;
/// The sends are spread over at least this long.
const SPREAD: Duration = Duration::from_secs(120);
/// Every this many sends, one is retried with the same Idempotency-Key.
const RETRY_EVERY: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "two minutes on the emulator: run by scripts/test.sh"]
async fn two_hundred_blocking_sends_over_two_minutes_all_complete() {
    if !aws_endpoint() {
        return;
    }
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = Storage::Dynamo {
        index_shards: 1,
        prefix: format!("tl-soak-{}-", uuid::Uuid::new_v4().simple()),
        create_tables: true,
        counter: None,
        pollers: true,
    };
    c.timings = fast_timings();
    c.blocking_timeout = Duration::from_secs(60);
    let server = Arc::new(Server::start_with(c).await);

    // The first send at once, the last one SPREAD later.
    let gap = SPREAD / (SENDS as u32 - 1);
    let started = Instant::now();
    let mut sends = Vec::new();
    for i in 0..SENDS {
        tokio::time::sleep_until((started + gap * i as u32).into()).await;
        let s = server.clone();
        sends.push(tokio::spawn(async move {
            let params = json!({"message": {"messageId": format!("tck-complete-task-soak-{i}"),
                "role": "ROLE_USER", "parts": [{"text": format!("soak {i}")}]}});
            let key = format!("soak-key-{i}");
            let headers: Vec<(&str, &str)> = if i % RETRY_EVERY == 0 {
                vec![("Idempotency-Key", key.as_str())]
            } else {
                vec![]
            };
            let sent = Instant::now();
            let v = s.call_with("SendMessage", params.clone(), &headers).await;
            if i % RETRY_EVERY == 0 {
                // The retry's transaction is canceled by the store: same task back.
                let again = s.call_with("SendMessage", params, &headers).await;
                assert_eq!(
                    again["result"]["task"]["id"], v["result"]["task"]["id"],
                    "{again}"
                );
            }
            (i, v, sent.elapsed())
        }));
    }
    let mut slowest = Duration::ZERO;
    let mut ids = Vec::new();
    for s in sends {
        let (i, v, took) = s.await.expect("send task");
        slowest = slowest.max(took);
        let task = &v["result"]["task"];
        assert_eq!(
            task["status"]["state"], "TASK_STATE_COMPLETED",
            "send {i} did not complete within the blocking timeout: {v}"
        );
        ids.push(task["id"].as_str().expect("id").to_string());
    }
    let spread = started.elapsed();
    assert!(spread >= SPREAD, "spread over {spread:?}");
    for id in &ids {
        let t = server
            .ok("GetTask", json!({"id": id, "historyLength": 0}))
            .await;
        assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    }
    eprintln!(
        "soak: {SENDS} blocking sends over {spread:?}, all COMPLETED; slowest send {slowest:?}"
    );
}
