//! The worker Lambda's own binary as Lambda runs it (issue 52: long work never holds a worker):
//! `cargo lambda watch --only-lambda-apis` emulates the runtime API and the built `worker` binary
//! polls it, configured as the template configures it, with an upstream A2A agent (the official
//! Python SDK's, `slow 3`: three seconds of progress) as the agent. Around it, on the emulator:
//! a service on the table with feed dispatch plays the API function, the table's stream relayed
//! onto the SQS turn queue plays the relay function, and the test plays the event source
//! mapping — it receives the turn queue's messages, invokes the function with them as an SQS
//! event, and deletes those the function does not report failed.
//!
//! Checks: the task completes with everything the upstream made; the work took several
//! invocations, each ending within its follow window (`TASKLEDGER_AGENT_FOLLOW_SECS`) plus a
//! margin, never holding the function for the upstream's whole task; no invocation reported a
//! failure. Ignored by `cargo test`: `scripts/test.sh` builds the `worker` binary and runs it
//! (`TASKLEDGER_CARGO_LAMBDA`, `TASKLEDGER_WORKER_BIN`, `TASKLEDGER_UPSTREAM_PY1`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use taskledger_app::agent::ScenarioAgent;
use taskledger_app::{compose, Dispatch, Service, ServiceSettings};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::{Principal, TaskId};
use taskledger_domain::wire::{SendMessageResponse, TaskState};
use taskledger_infra::dynamo::{self, DynamoStore};
use taskledger_infra::sqs::{self, SqsTurnQueue};
use taskledger_infra::streams::StreamPoller;
use taskledger_tests::aws_endpoint;
use taskledger_tests::binary::{free_port, tool, Proc};
use taskledger_tests::upstream::{partner, Sdk};

/// How long one invocation follows the upstream before the work continues in a new turn.
const FOLLOW_SECS: u64 = 1;
/// What an invocation may take beyond its follow window (the card, the commits, the emulator).
const INVOCATION_SLACK: Duration = Duration::from_secs(4);
const CURSOR_KEY: &str = "a-test-key-of-32-characters-....";

/// An SQS event of one turn message, as the event source mapping hands it to the function.
fn sqs_event(body: &str, receives: u32, queue: &str) -> Value {
    json!({"Records": [{
        "messageId": uuid::Uuid::new_v4().to_string(),
        "receiptHandle": "r",
        "body": body,
        "attributes": {"ApproximateReceiveCount": receives.to_string()},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
        "eventSourceARN": format!("arn:aws:sqs:us-east-1:000000000000:{queue}"),
        "awsRegion": "us-east-1"
    }]})
}

#[tokio::test]
#[ignore = "scripts/test.sh runs it: cargo-lambda, the worker binary and the Python upstream"]
async fn a_long_upstream_task_is_followed_across_worker_invocations() {
    if !aws_endpoint() {
        return;
    }
    let Some(upstream) = partner(Sdk::V1, &[]).await else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("root");
    let exe = std::env::current_exe().expect("test binary");
    let target = exe.parent().and_then(Path::parent).expect("target dir");
    let worker_bin = tool("TASKLEDGER_WORKER_BIN", target.join("worker"));
    assert!(
        worker_bin.exists(),
        "{}: cargo build -p taskledger-worker",
        worker_bin.display()
    );
    let cargo_lambda = tool("TASKLEDGER_CARGO_LAMBDA", "cargo-lambda".into());

    // The table and the queues, as the template makes them.
    let prefix = format!("tl-worker-{}-", uuid::Uuid::new_v4().simple());
    let ddb = dynamo::client_from_env().await;
    dynamo::schema::create_tables(&ddb, &prefix)
        .await
        .expect("tables");
    let sqs_client = sqs::client_from_env().await;
    let (turns_url, _dlq) = sqs::create_queues(&sqs_client, &prefix)
        .await
        .expect("queues");
    let turns = SqsTurnQueue::new(sqs_client.clone(), turns_url);
    let store = Arc::new(DynamoStore::new(ddb.clone(), &prefix));

    // The API function: commits, and leaves the work to the table's stream.
    let api = Service::new(
        store.clone(),
        store.clone(),
        ScenarioAgent::new(Default::default()),
        CursorCodec::new(CURSOR_KEY.as_bytes().to_vec()),
        ServiceSettings {
            dispatch: Dispatch::Feed,
            ..Default::default()
        },
    );
    // The relay function: the stream onto the turn queue.
    let table = dynamo::schema::table_name(&prefix, &dynamo::schema::TASKS);
    let poller = StreamPoller::for_table(&ddb, &table, taskledger_local::pollers::IDLE)
        .await
        .expect("stream");
    let relay = compose::stream_relay(store.clone(), turns.clone(), None);
    let relaying = tokio::spawn(poller.run(relay));

    // The worker function under the emulated runtime API.
    let logs = std::env::temp_dir().join(format!("{prefix}logs"));
    std::fs::create_dir_all(&logs).expect("log dir");
    let log = |name: &str| Stdio::from(std::fs::File::create(logs.join(name)).expect("log"));
    let port = free_port();
    let _watch = Proc(
        Command::new(&cargo_lambda)
            .args(["lambda", "watch", "--only-lambda-apis", "-A", "127.0.0.1"])
            .args(["-P", &port.to_string()])
            .current_dir(root)
            .stdout(log("watch.out"))
            .stderr(log("watch.err"))
            .spawn()
            .expect("cargo lambda watch"),
    );
    let up = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            up.elapsed() < Duration::from_secs(30),
            "cargo lambda watch is not up"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _worker = Proc(
        Command::new(&worker_bin)
            .env(
                "AWS_LAMBDA_RUNTIME_API",
                format!("http://127.0.0.1:{port}/.rt/worker"),
            )
            .env("AWS_LAMBDA_FUNCTION_NAME", "worker")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")
            .env("RUST_LOG", "info")
            .env("TASKLEDGER_TABLE_PREFIX", &prefix)
            .env("TASKLEDGER_CURSOR_KEY", CURSOR_KEY)
            .env("TASKLEDGER_AGENT_URL", &upstream.url)
            .env("TASKLEDGER_PUSH_ALLOWLIST", "127.0.0.0/8")
            .env("TASKLEDGER_AGENT_FOLLOW_SECS", FOLLOW_SECS.to_string())
            // cargo lambda watch gives an invocation Lambda's default 3 s.
            .env("TASKLEDGER_TURN_MARGIN_SECS", "1")
            .stdout(log("worker.out"))
            .stderr(log("worker.err"))
            .spawn()
            .expect("worker binary"),
    );
    let logs_tail = || {
        ["worker.out", "worker.err", "watch.err"]
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(logs.join(f)).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(12).collect();
                format!(
                    "--- {f}\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };

    // A user's message: three seconds of upstream work.
    let who = Principal::new("acme", "alice").expect("principal");
    let send = json!({"message": {"messageId": format!("m-{}", uuid::Uuid::new_v4().simple()),
        "role": "ROLE_USER", "parts": [{"text": "slow 3"}]},
        "configuration": {"returnImmediately": true}});
    let SendMessageResponse::Task(task) = api
        .send_message(&who, serde_json::from_value(send).expect("params"), None)
        .await
        .expect("sent")
    else {
        panic!("a task")
    };
    let id = TaskId::parse(task.id).expect("task id");

    // The event source mapping: each turn message invokes the function once.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client");
    let invoke = format!("http://127.0.0.1:{port}/2015-03-31/functions/worker/invocations");
    let queue = format!("{prefix}{}", sqs::TURNS_QUEUE);
    let (mut invocations, mut longest) = (0, Duration::ZERO);
    let started = Instant::now();
    let state = loop {
        let head = api
            .ledger()
            .current(&id)
            .await
            .expect("read")
            .expect("task");
        let state = head.head().expect("head").status.state;
        if state.is_terminal() || started.elapsed() > Duration::from_secs(90) {
            break state;
        }
        for m in turns.receive(Some(60)).await.expect("receive") {
            let body = serde_json::to_string(&m.turn.expect("a turn")).expect("body");
            let at = Instant::now();
            let reply: Value = http
                .post(&invoke)
                .json(&sqs_event(&body, m.receives, &queue))
                .send()
                .await
                .unwrap_or_else(|e| panic!("invoke: {e}\n{}", logs_tail()))
                .json()
                .await
                .unwrap_or_else(|e| panic!("reply: {e}\n{}", logs_tail()));
            longest = longest.max(at.elapsed());
            invocations += 1;
            let failures = reply["batchItemFailures"].as_array().map_or(0, Vec::len);
            assert_eq!(failures, 0, "{reply}\n{}", logs_tail());
            turns.delete(&m.receipt_handle).await.expect("delete");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    relaying.abort();
    assert_eq!(state, TaskState::Completed, "{}", logs_tail());
    let task = api
        .ledger()
        .current(&id)
        .await
        .expect("read")
        .expect("task");
    let head = task.head().expect("head");
    let said = serde_json::to_string(&head.status.message).expect("status");
    assert!(said.contains("done after 6 ticks"), "{said}");
    // Three seconds of upstream work, followed a second at a time: several invocations, none
    // holding the function for the upstream's whole task.
    assert!(
        invocations >= 3,
        "{invocations} invocations\n{}",
        logs_tail()
    );
    assert!(
        longest < Duration::from_secs(FOLLOW_SECS) + INVOCATION_SLACK,
        "the longest invocation took {longest:?}"
    );
    eprintln!("{invocations} invocations, the longest {longest:?}");
}
