//! Agent-turn bench with the scripted model: SendMessage → the first model call, and SendMessage
//! → COMPLETED, through the durable path — on the embedded store (feed → relay → worker) and,
//! with `AWS_ENDPOINT_URL`, on DynamoDB through the table's stream, the relay, the FIFO turn
//! queue and the turn poller (the Lambdas' handlers). Prints percentiles and the process's peak
//! RSS (API, relay and worker in one process: an upper bound for the worker alone).
//!
//! cargo run --release -p taskledger-tests --bin turnbench [-- --tasks 100]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use taskledger_app::agent::{LlmAgent, DEFAULT_MAX_TURNS};
use taskledger_app::{Dispatch, Service, ServiceSettings};
use taskledger_domain::agent::llm::{LanguageModel, LlmError, ModelRequest, ModelResponse};
use taskledger_domain::agent::scripted::ScriptedModel;
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::Principal;
use taskledger_domain::wire::{SendMessageRequest, SendMessageResponse};
use taskledger_infra::dynamo::{self, schema, DynamoStore};
use taskledger_infra::{sqs, SqliteStore};

/// The scripted model, noting when it is first called after `reset`.
#[derive(Default)]
struct Timed {
    first: Mutex<Option<Instant>>,
}

impl Timed {
    fn reset(&self) {
        *self.first.lock().unwrap() = None;
    }
    fn first(&self) -> Option<Instant> {
        *self.first.lock().unwrap()
    }
}

#[async_trait]
impl LanguageModel for Timed {
    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, LlmError> {
        {
            let mut f = self.first.lock().unwrap();
            if f.is_none() {
                *f = Some(Instant::now());
            }
        }
        ScriptedModel.complete(request).await
    }
}

fn service(
    store: Arc<dyn taskledger_domain::ports::EventStore>,
    reads: Arc<dyn taskledger_domain::ports::TaskReadModel>,
    model: Arc<Timed>,
) -> Arc<Service> {
    Service::new(
        store,
        reads,
        LlmAgent::new(model, DEFAULT_MAX_TURNS),
        CursorCodec::new(b"bench".to_vec()),
        ServiceSettings {
            blocking_timeout: Duration::from_secs(30),
            dispatch: Dispatch::Feed,
            ..Default::default()
        },
    )
}

async fn measure(name: &str, svc: &Arc<Service>, model: &Timed, tasks: usize) {
    let who = Principal::anonymous();
    let (mut first, mut done) = (Vec::new(), Vec::new());
    for i in 0..tasks {
        model.reset();
        let req: SendMessageRequest = serde_json::from_value(serde_json::json!({
            "message": {"messageId": format!("bench-{i}-{}", uuid::Uuid::new_v4()), "role": "ROLE_USER",
                        "parts": [{"text": "Say hello"}]}
        }))
        .unwrap();
        let t0 = Instant::now();
        let resp = svc.send_message(&who, req, None).await.unwrap();
        let elapsed = t0.elapsed();
        let SendMessageResponse::Task(t) = resp else {
            panic!("a task")
        };
        assert_eq!(t.status.state.as_str(), "TASK_STATE_COMPLETED", "{t:?}");
        first.push(
            model
                .first()
                .expect("the model was called")
                .duration_since(t0),
        );
        done.push(elapsed);
    }
    let pct = |v: &mut Vec<Duration>, q: f64| {
        v.sort();
        v[((v.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e3
    };
    println!(
        "{name}: {tasks} tasks — SendMessage → first model call p50 {:.2} ms p99 {:.2} ms; → COMPLETED p50 {:.2} ms p99 {:.2} ms",
        pct(&mut first, 0.5),
        pct(&mut first, 0.99),
        pct(&mut done, 0.5),
        pct(&mut done, 0.99)
    );
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

#[tokio::main]
async fn main() {
    let mut tasks = 100;
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

    // Embedded default: SQLite on disk, the feed relay and worker in-process.
    let dir = std::env::temp_dir().join(format!("turnbench-{}", uuid::Uuid::new_v4().simple()));
    let store = Arc::new(SqliteStore::open(&dir).unwrap());
    let model = Arc::new(Timed::default());
    let svc = service(store.clone(), store.clone(), model.clone());
    tokio::spawn(taskledger_app::runners::feed::run_feed_relay(
        svc.clone(),
        store.clone(),
        "agent",
    ));
    measure("embedded (SQLite)", &svc, &model, tasks).await;
    let _ = std::fs::remove_dir_all(&dir);

    // DynamoDB + Streams + SQS (an emulator via AWS_ENDPOINT_URL).
    if std::env::var("AWS_ENDPOINT_URL").is_ok() {
        let prefix = format!("tl-turnbench-{}-", uuid::Uuid::new_v4().simple());
        let ddb = dynamo::client_from_env().await;
        schema::create_tables(&ddb, &prefix).await.unwrap();
        let store = Arc::new(DynamoStore::new(ddb.clone(), &prefix));
        let client = sqs::client_from_env().await;
        let turns = sqs::SqsTurnQueue::new(
            client.clone(),
            sqs::create_queues(&client, &prefix).await.unwrap().0,
        );
        let model = Arc::new(Timed::default());
        let svc = service(store.clone(), store.clone(), model.clone());
        let poller = taskledger_infra::streams::StreamPoller::for_table(
            &ddb,
            &schema::table_name(&prefix, &schema::TASKS),
            taskledger_local::pollers::IDLE,
        )
        .await
        .unwrap();
        tokio::spawn(poller.run(taskledger_app::compose::stream_relay(
            store.clone(),
            turns.clone(),
            None,
        )));
        tokio::spawn(taskledger_local::pollers::run_turn_poller(
            svc.clone(),
            Arc::new(turns),
            taskledger_local::pollers::DEFAULT_TURN_LEASE_SECS,
        ));
        measure(
            "emulator (DynamoDB stream → SQS FIFO)",
            &svc,
            &model,
            tasks.min(50),
        )
        .await;
    } else {
        println!("emulator: skipped (set AWS_ENDPOINT_URL)");
    }
    println!(
        "peak RSS of this process (API + relay + worker): {:.1} MiB",
        peak_rss_mib()
    );
}
