//! Push bench on the embedded store (SQLite on disk), with a real webhook receiver on 127.0.0.1:
//!   1. throughput: 100 configs (10 tasks × 10) × 10 status events = 1,000 deliveries committed
//!      to the outbox, then the push worker starts; deliveries/s until the receiver has them all;
//!   2. latency: commit (CancelTask over HTTP) → webhook receipt, p50/p90/p99 over N tasks.
//!
//! cargo run --release -p taskledger-tests --bin pushbench [-- --tasks 200]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use taskledger_app::agent::ScenarioAgent;
use taskledger_app::{Service, ServiceSettings};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::{ContextId, Principal, TaskId};
use taskledger_domain::ports::{commit_for, EventStore};
use taskledger_domain::push::{AddressPolicy, PushConfigSpec, RetryPolicy};
use taskledger_domain::task::{CreateTask, TaskAggregate, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, TaskPushNotificationConfig, TaskState};
use taskledger_infra::webhook::WebhookSender;
use taskledger_infra::SqliteStore;
use taskledger_local::{Config, PushSettings, Storage};
use taskledger_tests::receiver::{state_of, Receiver, Script};
use taskledger_tests::{fast_timings, Server};

const TASKS: usize = 10;
const CONFIGS_PER_TASK: usize = 10;
const EVENTS: usize = 10;

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("{name}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn throughput() {
    let r = Receiver::start(Script::Always(200)).await;
    let dir = temp_dir("pushbench");
    let store = Arc::new(SqliteStore::open(&dir).unwrap());
    for t in 0..TASKS {
        let id = TaskId::parse(format!("bench-{t}")).unwrap();
        let before = TaskAggregate::default();
        let mut scratch = before.clone();
        let mut events = Vec::new();
        let mut cmds = vec![TaskCommand::CreateTask(CreateTask {
            task_id: id.clone(),
            context_id: ContextId::parse("bench").unwrap(),
            owner: Principal::anonymous(),
            message: Message::user_text(format!("m-{t}"), "go"),
            at: Timestamp::now(),
            extension: None,
            awaiting_assignee: None,
        })];
        for c in 0..CONFIGS_PER_TASK {
            let wire = TaskPushNotificationConfig {
                tenant: None,
                id: Some(format!("cfg-{c}")),
                task_id: None,
                url: r.url.clone(),
                token: None,
                authentication: None,
                protocol: Default::default(),
            };
            cmds.push(TaskCommand::SetPushConfig {
                config: PushConfigSpec::parse(&wire, "", &AddressPolicy::allow_loopback(), "")
                    .unwrap(),
                at: Timestamp::now(),
                by: None,
            });
        }
        for e in 0..EVENTS {
            cmds.push(TaskCommand::ChangeStatus {
                state: if e % 2 == 0 {
                    TaskState::Working
                } else {
                    TaskState::InputRequired
                },
                message: None,
                at: Timestamp::now(),
            });
        }
        for cmd in cmds {
            for e in scratch.decide(cmd).unwrap() {
                scratch.apply_event(&e);
                events.push(e);
            }
        }
        store
            .append(&commit_for(id, &before, &events, Timestamp::now()))
            .await
            .unwrap();
    }
    let total = TASKS * CONFIGS_PER_TASK * EVENTS;
    let svc = Service::new(
        store.clone(),
        store.clone(),
        ScenarioAgent::new(fast_timings()),
        CursorCodec::new(b"bench".to_vec()),
        ServiceSettings {
            push_enabled: true,
            ..Default::default()
        },
    );
    let sender = WebhookSender::new(AddressPolicy::allow_loopback(), None).unwrap();
    let started = Instant::now();
    // The commits are in the feed: the relay fans them out to the outbox, the worker sends.
    tokio::spawn(taskledger_app::runners::push::run_outbox_worker(
        svc.pushes_queued(),
        store.clone(),
        Arc::new(sender),
        RetryPolicy::default(),
    ));
    let relay = taskledger_app::runners::Relay::new(taskledger_app::runners::InProcessTurns::new(
        svc.clone(),
    ))
    .with_push(store.clone(), store.clone(), Some(svc.pushes_queued()));
    tokio::spawn(taskledger_app::runners::run_feed(
        svc.clone(),
        store.clone(),
        relay,
        "agent",
    ));
    r.wait_for(Duration::from_secs(120), |u| u.len() >= total)
        .await;
    let secs = started.elapsed().as_secs_f64();
    let seen = r.seen().len();
    println!(
        "throughput: {total} deliveries ({TASKS} tasks × {CONFIGS_PER_TASK} configs × {EVENTS} events) in {secs:.2}s = {:.0} deliveries/s ({seen} requests, {} duplicates)",
        total as f64 / secs,
        seen - total
    );
    let _ = std::fs::remove_dir_all(&dir);
}

async fn latency(tasks: usize) {
    let r = Receiver::start(Script::Always(200)).await;
    let dir = temp_dir("pushbench-lat");
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = Storage::Dir(dir.clone());
    c.timings = fast_timings();
    c.push = PushSettings::default();
    let s = Server::start_with(c).await;
    let mut samples = Vec::with_capacity(tasks);
    for i in 0..tasks {
        let v = s
            .call(
                "SendMessage",
                json!({"message": {"messageId": format!("tck-input-required-{i}"), "role": "ROLE_USER",
                                   "parts": [{"text": "go"}]},
                       "configuration": {"taskPushNotificationConfig": {"url": r.url}}}),
            )
            .await;
        let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
        let seen_input = |u: &[taskledger_tests::receiver::Received]| {
            u.iter().any(|d| {
                d.task_id() == id && state_of(d).as_deref() == Some("TASK_STATE_INPUT_REQUIRED")
            })
        };
        r.wait_for(Duration::from_secs(10), seen_input).await;
        let t0 = Instant::now();
        let v = s.call("CancelTask", json!({"id": id})).await;
        assert!(v.get("error").is_none(), "{v}");
        r.wait_for(Duration::from_secs(10), |u| {
            u.iter()
                .any(|d| d.task_id() == id && state_of(d).as_deref() == Some("TASK_STATE_CANCELED"))
        })
        .await;
        let at = r
            .unique()
            .into_iter()
            .find(|d| d.task_id() == id && state_of(d).as_deref() == Some("TASK_STATE_CANCELED"))
            .map(|d| d.at)
            .unwrap();
        samples.push(at.duration_since(t0));
    }
    samples.sort();
    let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "latency: CancelTask sent → webhook received, {tasks} tasks: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        p(0.5).as_secs_f64() * 1e3,
        p(0.9).as_secs_f64() * 1e3,
        p(0.99).as_secs_f64() * 1e3,
        samples.last().unwrap().as_secs_f64() * 1e3
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::main]
async fn main() {
    let mut tasks = 200;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--tasks" => tasks = it.next().and_then(|v| v.parse().ok()).unwrap_or(tasks),
            other => {
                eprintln!("unknown flag {other}");
                std::process::exit(2);
            }
        }
    }
    throughput().await;
    latency(tasks).await;
}
