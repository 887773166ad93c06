//! DynamoDB bench: command latency on a short vs a long task, ListTasks latency for a small vs a
//! large owner, and the local server's start-up time to its first served request — against the
//! endpoint in `AWS_ENDPOINT_URL` (dynoxide, moto, LocalStack or AWS).
//!
//! AWS_ENDPOINT_URL=http://127.0.0.1:4569 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test \
//!   AWS_SECRET_ACCESS_KEY=test target/release/dynabench [--server target/release/taskledger]

use std::sync::Arc;
use std::time::{Duration, Instant};

use taskledger_app::agent::{ScenarioAgent, ScenarioTimings};
use taskledger_app::service::Change;
use taskledger_app::{Service, ServiceSettings};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::{ContextId, Principal, TaskId};
use taskledger_domain::ports::{commit_for, EventStore};
use taskledger_domain::task::{AppendUserMessage, CreateTask, TaskAggregate, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{ListTasksRequest, Message};
use taskledger_infra::contract::user_message;
use taskledger_infra::dynamo::{self, schema, DynamoStore};

const SAMPLES: usize = 200;

fn pct(mut v: Vec<Duration>, p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1e3
}

/// Writes a task with `events` events straight through the store (no agent).
async fn seed_task(store: &DynamoStore, owner: &Principal, id: &str, events: u64) -> TaskId {
    let task_id = TaskId::parse(id).expect("id");
    let mut state = TaskAggregate::default();
    let create = state
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: task_id.clone(),
            context_id: ContextId::parse("bench").expect("ctx"),
            owner: owner.clone(),
            message: user_message("m-0", "seed"),
            at: Timestamp::now(),
            extension: None,
            awaiting_assignee: None,
        }))
        .expect("create");
    let mut pending = create;
    while state.version < events {
        // up to 20 messages per commit, so seeding stays quick
        while pending.len() < 20 && state.version + (pending.len() as u64) < events {
            let mut scratch = state.clone();
            for e in &pending {
                scratch.apply_event(e);
            }
            pending.extend(
                scratch
                    .decide(TaskCommand::AppendUserMessage(AppendUserMessage {
                        message: user_message(&format!("m-{}", scratch.version), "seed message"),
                        at: Timestamp::now(),
                        caller: None,
                    }))
                    .expect("append"),
            );
        }
        let commit = commit_for(task_id.clone(), &state, &pending, Timestamp::now());
        let after = commit.snapshot.clone();
        store.append(&commit).await.expect("seed commit");
        state = after;
        pending = Vec::new();
    }
    task_id
}

async fn command_latency(svc: &Service, task: &TaskId) -> Vec<Duration> {
    let mut out = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let m = Message::agent_text(format!("bench-{i}"), "a note");
        let t = Instant::now();
        svc.execute(Change::by_agent(task), |_| {
            vec![TaskCommand::AppendAgentMessage {
                message: m.clone(),
                at: Timestamp::now(),
            }]
        })
        .await
        .expect("command");
        out.push(t.elapsed());
    }
    out
}

async fn list_latency(svc: &Service, owner: &Principal) -> (Vec<Duration>, i32) {
    let mut out = Vec::new();
    let mut total = 0;
    for _ in 0..20 {
        let t = Instant::now();
        let page = svc
            .list_tasks(
                owner,
                ListTasksRequest {
                    page_size: Some(50),
                    history_length: Some(0),
                    ..Default::default()
                },
            )
            .await
            .expect("list");
        out.push(t.elapsed());
        total = page.total_size;
    }
    (out, total)
}

#[tokio::main]
async fn main() {
    let server = std::env::args()
        .skip_while(|a| a != "--server")
        .nth(1)
        .unwrap_or_else(|| "target/release/taskledger".into());
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| "(AWS)".into());
    let client = dynamo::client_from_env().await;
    let prefix = format!("tl-bench-{}-", uuid::Uuid::new_v4().simple());
    schema::create_tables(&client, &prefix)
        .await
        .expect("tables");
    let store = Arc::new(DynamoStore::new(client, &prefix));
    let svc = Service::new(
        store.clone(),
        store.clone(),
        ScenarioAgent::new(ScenarioTimings::default()),
        CursorCodec::new(b"bench".to_vec()),
        ServiceSettings::default(),
    );
    println!("taskledger dynabench against {endpoint}, table {prefix}tasks");

    let owner = Principal::new("bench", "commands").expect("owner");
    let short = seed_task(&store, &owner, "short", 10).await;
    let long = seed_task(&store, &owner, "long", 2000).await;
    let a = command_latency(&svc, &short).await;
    let b = command_latency(&svc, &long).await;
    let (a50, b50) = (pct(a.clone(), 0.5), pct(b.clone(), 0.5));
    println!(
        "command (load head + TransactWriteItems), {SAMPLES} samples: 10 events p50 {a50:.2} ms p99 {:.2} ms | 2,000 events p50 {b50:.2} ms p99 {:.2} ms | ratio {:.2}",
        pct(a, 0.99),
        pct(b, 0.99),
        b50 / a50
    );

    let small = Principal::new("bench", "small").expect("owner");
    let large = Principal::new("bench", "large").expect("owner");
    let started = Instant::now();
    for i in 0..100 {
        seed_task(&store, &small, &format!("s-{i:05}"), 2).await;
    }
    let mut handles = Vec::new();
    for w in 0..8 {
        let (store, large) = (store.clone(), large.clone());
        handles.push(tokio::spawn(async move {
            for i in (w..10_000).step_by(8) {
                seed_task(&store, &large, &format!("l-{i:05}"), 2).await;
            }
        }));
    }
    for h in handles {
        h.await.expect("seed");
    }
    println!(
        "seeded 10,100 tasks in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let (s, st) = list_latency(&svc, &small).await;
    let (l, lt) = list_latency(&svc, &large).await;
    println!(
        "ListTasks (pageSize 50, totalSize counted): {st} tasks p50 {:.2} ms p99 {:.2} ms | {lt} tasks p50 {:.2} ms p99 {:.2} ms",
        pct(s.clone(), 0.5),
        pct(s, 0.99),
        pct(l.clone(), 0.5),
        pct(l, 0.99)
    );

    // start-up of the release server on DynamoDB, to the first served request
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port");
    let http = reqwest::Client::new();
    let data_dir = std::env::temp_dir()
        .join(format!("tl-start-{}", uuid::Uuid::new_v4().simple()))
        .display()
        .to_string();
    let t = Instant::now();
    let mut child = std::process::Command::new(&server)
        .args(["--store", "sqlite", "--data-dir", &data_dir])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("server starts");
    let mut first = None;
    for _ in 0..2000 {
        let r = http
            .post(format!("http://127.0.0.1:{port}/a2a"))
            .header("A2A-Version", "1.0")
            .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 1}}))
            .send()
            .await;
        if r.is_ok_and(|r| r.status().is_success()) {
            first = Some(t.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    match first {
        Some(d) => println!(
            "start-up to first served request (embedded SQLite store, fresh data dir): {:.0} ms",
            d.as_secs_f64() * 1e3
        ),
        None => println!("start-up: the server did not answer"),
    }
    for bin in ["target/release/api", "target/release/taskledger"] {
        if let Ok(m) = std::fs::metadata(bin) {
            println!(
                "{bin}: {:.1} MiB (stripped release)",
                m.len() as f64 / (1024.0 * 1024.0)
            );
        }
    }
}
