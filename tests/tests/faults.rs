//! The fault-injection harness of the serverless path, on the emulator (a benchmark that
//! prints its counts; its assertions are the guarantees, not times): the local server's own
//! binary on DynamoDB with the stream poller, the SQS turn and push queues and their pollers,
//! under load from several clients, while
//! - it is killed with SIGKILL at random moments and restarted on the same tables (between a
//!   commit and its relay, mid-turn, mid-delivery: wherever the moment falls), each restart
//!   reading the table's stream again from its start (every batch relayed a second time);
//! - copies of turn messages already run are put on the turn queue (a duplicate delivery);
//! - one DynamoDB request in `THROTTLE_EVERY` is throttled by a proxy in front of the emulator.
//!
//! Afterwards every acknowledged task is finished, no turn's effect is there twice (one
//! ending, one completion message), and every task's webhook got its updates at least once and
//! in order. Printed: acknowledged, completed, the faults, and the time from acknowledgement to
//! the task's end (p50/p99), for all tasks and for those in flight when the server died.
//! Ignored by `cargo test`; scripts/test.sh runs it.

use std::collections::{BTreeMap, HashMap};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use taskledger_domain::time::Timestamp;
use taskledger_infra::sqs;
use taskledger_tests::binary::{free_port, rpc, server_binary};
use taskledger_tests::proxy::ThrottlingProxy;
use taskledger_tests::receiver::{state_of, Receiver, Script};

/// Clients sending at once, each a task every `PACE` (the emulator serves one request at a
/// time: the serverless path on it finishes a few tasks a second).
const CLIENTS: usize = 6;
const PACE: Duration = Duration::from_millis(1200);
/// How long the load lasts.
const LOAD: Duration = Duration::from_secs(24);
/// SIGKILLs during the load.
const KILLS: usize = 3;
/// The server's turn lease: a killed server's turns run again within it.
const LEASE_SECS: u32 = 5;
/// One DynamoDB request in this many is throttled.
const THROTTLE_EVERY: u64 = 25;
/// How long the tasks may take to finish once the load ends (the lease, the pollers' pauses
/// and the emulator's one-request-at-a-time pace, with room).
const SETTLE: Duration = Duration::from_secs(120);

fn start(dir: &std::path::Path, port: u16, prefix: &str, dynamodb: &str) -> Child {
    Command::new(server_binary())
        .args([
            "--store",
            "dynamodb",
            "--create-tables",
            "--table-prefix",
            prefix,
        ])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--turn-lease-secs", &LEASE_SECS.to_string()])
        .args(["--stall-deadline-secs", "0"])
        .arg("--data-dir")
        .arg(dir)
        .env("AWS_ENDPOINT_URL_DYNAMODB", dynamodb)
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the taskledger binary starts (cargo test --workspace builds it)")
}

/// Waits for the server's card (making the tables and queues on the emulator takes seconds).
async fn wait_up(client: &reqwest::Client, port: u16) {
    let until = Instant::now() + Duration::from_secs(60);
    let card = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
    while client.get(&card).send().await.is_err() {
        assert!(
            Instant::now() < until,
            "the server did not come up on port {port}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// A random number below `n` (from a fresh v4 UUID's random bits).
fn random(n: u64) -> u64 {
    (uuid::Uuid::new_v4().as_u128() % u128::from(n.max(1))) as u64
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a minute or two on the emulator: run by scripts/test.sh"]
async fn the_serverless_path_loses_and_repeats_nothing_under_kills_duplicates_and_throttling() {
    let Ok(moto) = std::env::var("AWS_ENDPOINT_URL") else {
        assert!(std::env::var("TASKLEDGER_REQUIRE_DYNAMODB").is_err());
        return;
    };
    let proxy = ThrottlingProxy::start(&moto).await;
    proxy.throttle_every(THROTTLE_EVERY);
    let hook = Receiver::start(Script::Always(200)).await;
    let dir = std::env::temp_dir().join(format!("taskledger-faults-{}", uuid::Uuid::new_v4()));
    let prefix = format!("tl-faults-{}-", uuid::Uuid::new_v4().simple());
    let port = free_port();
    let client = reqwest::Client::new();
    let server = Arc::new(Mutex::new(start(&dir, port, &prefix, &proxy.url)));
    wait_up(&client, port).await;

    // Acknowledged tasks: id → when the acknowledgement came.
    let acked: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let began = Instant::now();
    let mut load = Vec::new();
    for c in 0..CLIENTS {
        let (client, acked, url) = (client.clone(), acked.clone(), hook.url.clone());
        load.push(tokio::spawn(async move {
            let mut i = 0;
            while began.elapsed() < LOAD {
                tokio::time::sleep(PACE).await;
                i += 1;
                let message = json!({"messageId": format!("tck-delayed-complete-f{c}-{i}"),
                    "role": "ROLE_USER", "parts": [{"text": "hello"}]});
                let params = json!({"message": message, "configuration": {
                    "returnImmediately": true,
                    "taskPushNotificationConfig": {"url": url, "token": format!("t-{c}-{i}")}}});
                match rpc(&client, port, "SendMessage", params).await {
                    Some(v) if v["result"]["task"]["id"].is_string() => {
                        let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
                        acked.lock().unwrap().push((id, Instant::now()));
                    }
                    // Refused (the store throttled past its retries) or the server is down:
                    // not acknowledged; a pause, then on.
                    _ => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        }));
    }

    // Copies of turn messages already run, while the load goes on.
    let sqs_client = sqs::client_from_env().await;
    let turns_url = sqs::queue_url(&sqs_client, &format!("{prefix}{}", sqs::TURNS_QUEUE))
        .await
        .expect("the turn queue exists");
    let duplicates = {
        let (acked, sqs_client, turns_url) = (acked.clone(), sqs_client.clone(), turns_url.clone());
        tokio::spawn(async move {
            let mut sent = 0u64;
            while began.elapsed() < LOAD {
                tokio::time::sleep(Duration::from_millis(700)).await;
                let pick = {
                    let a = acked.lock().unwrap();
                    (!a.is_empty()).then(|| a[random(a.len() as u64) as usize].0.clone())
                };
                let Some(task) = pick else { continue };
                // The first work request of a task is its third event.
                let body = json!({"task_id": task, "work_seq": 3}).to_string();
                let ok = sqs_client
                    .send_message()
                    .queue_url(&turns_url)
                    .message_body(body)
                    .message_group_id(&task)
                    .message_deduplication_id(uuid::Uuid::new_v4().simple().to_string())
                    .send()
                    .await
                    .is_ok();
                sent += u64::from(ok);
            }
            sent
        })
    };

    // SIGKILL at random moments, each followed by a restart on the same tables.
    let mut kills = Vec::new();
    for k in 0..KILLS {
        let slot = LOAD / (KILLS as u32 + 1);
        let at = slot * (k as u32 + 1) + Duration::from_millis(random(1500));
        tokio::time::sleep_until((began + at).into()).await;
        {
            let mut s = server.lock().unwrap();
            s.kill().expect("SIGKILL");
            let _ = s.wait();
        }
        kills.push(Instant::now());
        *server.lock().unwrap() = start(&dir, port, &prefix, &proxy.url);
        wait_up(&client, port).await;
    }
    for l in load {
        l.await.unwrap();
    }
    let injected = duplicates.await.unwrap();

    // Every acknowledged task finishes.
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > 50, "only {} tasks acknowledged", acked.len());
    let deadline = Instant::now() + SETTLE;
    let mut ended: HashMap<String, (String, Value)> = HashMap::new();
    while ended.len() < acked.len() {
        for (id, _) in &acked {
            if ended.contains_key(id) {
                continue;
            }
            let v = rpc(
                &client,
                port,
                "GetTask",
                json!({"id": id, "historyLength": 50}),
            )
            .await
            .unwrap_or_default();
            let state = v["result"]["status"]["state"]
                .as_str()
                .unwrap_or("")
                .to_string();
            if state == "TASK_STATE_COMPLETED" || state == "TASK_STATE_FAILED" {
                ended.insert(id.clone(), (state, v["result"].clone()));
            }
        }
        if ended.len() < acked.len() {
            assert!(
                Instant::now() < deadline,
                "{} of {} acknowledged tasks never finished",
                acked.len() - ended.len(),
                acked.len()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    // No turn's effect twice: one completion message in each completed task's history.
    let completed = ended
        .values()
        .filter(|(s, _)| s == "TASK_STATE_COMPLETED")
        .count();
    for (id, (state, task)) in &ended {
        let said = task["history"]
            .as_array()
            .map(|h| {
                h.iter()
                    .filter(|m| m["parts"][0]["text"] == "Delayed task completed")
                    .count()
            })
            .unwrap_or(0);
        if state == "TASK_STATE_COMPLETED" {
            assert_eq!(said, 1, "{id}: the completion is there {said} times");
        }
    }

    // Every completed task's webhook: its ending at least once, its updates in order.
    hook.wait_for(SETTLE, |got| {
        let ends: std::collections::HashSet<String> = got
            .iter()
            .filter(|r| state_of(r).as_deref() == Some("TASK_STATE_COMPLETED"))
            .map(|r| r.task_id())
            .collect();
        ended
            .iter()
            .filter(|(_, (s, _))| s == "TASK_STATE_COMPLETED")
            .all(|(id, _)| ends.contains(id))
    })
    .await;
    let mut by_task: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for r in hook.seen() {
        by_task.entry(r.task_id()).or_default().push(r.seq());
    }
    let mut repeated = 0;
    for (id, seqs) in &by_task {
        // At least once: a delivery may come again after a crash; never a newer update
        // before an older one it had not sent yet.
        let mut seen = std::collections::HashSet::new();
        let firsts: Vec<u64> = seqs.iter().copied().filter(|s| seen.insert(*s)).collect();
        assert!(
            firsts.windows(2).all(|w| w[0] < w[1]),
            "{id}: out of order: {seqs:?}"
        );
        repeated += seqs.len() - firsts.len();
    }

    // The figures.
    let ack_of: HashMap<&str, Instant> = acked.iter().map(|(id, at)| (id.as_str(), *at)).collect();
    let now_ts = Timestamp::now();
    let now = Instant::now();
    let mut all = Vec::new();
    let mut crossed = Vec::new();
    for (id, (_, task)) in &ended {
        let end = Timestamp::parse(task["status"]["timestamp"].as_str().unwrap_or_default())
            .unwrap_or(now_ts);
        let ago = Duration::from_nanos((now_ts.unix_nanos() - end.unix_nanos()).max(0) as u64);
        let end_at = now.checked_sub(ago).unwrap_or(now);
        let acked_at = ack_of[id.as_str()];
        let took = end_at.saturating_duration_since(acked_at);
        all.push(took);
        if kills.iter().any(|k| acked_at < *k && end_at > *k) {
            crossed.push(took);
        }
    }
    all.sort();
    crossed.sort();
    println!(
        "faults: {} acknowledged, {completed} completed, {} failed; {KILLS} SIGKILLs, {injected} duplicate turn messages, {} of {} DynamoDB requests throttled, {repeated} webhook deliveries repeated",
        acked.len(),
        ended.len() - completed,
        proxy.throttled(),
        proxy.requests()
    );
    println!(
        "faults: acknowledgement → end p50 {} ms, p99 {} ms; {} tasks in flight at a kill: p50 {} ms, p99 {} ms (lease {LEASE_SECS} s)",
        ms(percentile(&all, 0.5)),
        ms(percentile(&all, 0.99)),
        crossed.len(),
        ms(percentile(&crossed, 0.5)),
        ms(percentile(&crossed, 0.99)),
    );
    let _ = server.lock().unwrap().kill();
}
