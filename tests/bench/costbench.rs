//! Cost bench: DynamoDB capacity per API operation and per task, metered at the wire (every
//! call asks for `ReturnConsumedCapacity`; units are also computed from the bytes by the
//! published rules, which is what an emulator cannot report), and the cost per million tasks
//! at on-demand prices (`docs/cost.md` explains the model and holds the last output).
//!
//! AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test \
//!   AWS_SECRET_ACCESS_KEY=test target/release/costbench [--tasks N]

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use taskledger_app::agent::ScenarioAgent;
use taskledger_app::service::turns::handle_turn;
use taskledger_app::{Dispatch, Service, ServiceSettings};
use taskledger_domain::agent::turns::turns_from;
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::Principal;
use taskledger_domain::ports::Housekeeping;
use taskledger_domain::retention::Retention;
use taskledger_domain::wire::{SendMessageResponse, Task};
use taskledger_infra::dynamo::capacity::{CapacityMeter, Units, UNSCOPED};
use taskledger_infra::dynamo::counting::CallCounter;
use taskledger_infra::dynamo::{self, schema, DynamoStore};

/// On-demand prices, us-east-1, as of 2026-12-01 (USD).
const PER_MILLION_RRU: f64 = 0.125;
const PER_MILLION_WRU: f64 = 0.625;
const PER_MILLION_SQS: f64 = 0.40;
const PER_MILLION_LAMBDA_REQUESTS: f64 = 0.20;
const PER_GB_SECOND_ARM: f64 = 0.000_013_333_4;
const PER_MILLION_HTTP_API: f64 = 1.00;
/// The API function's memory (template.yaml) and an assumed billed duration per request on
/// AWS: ~1 ms of our own CPU plus ~4 ms per DynamoDB round trip (two at most).
const API_MEMORY_GB: f64 = 0.25;
const API_MS_PER_REQUEST: f64 = 10.0;
/// The worker function (agent turns): memory, and billed time of a scripted turn; a model turn
/// waits on its model for seconds — priced separately in docs/cost.md.
const WORKER_MEMORY_GB: f64 = 0.5;
const WORKER_MS_PER_TURN: f64 = 20.0;
const WAITS: &str = "(bench waits)";
/// The worker's row: the agent's turns as the worker Lambda runs them from the turn queue.
const TURNS: &str = "the agent's turns (the worker, per task)";

fn req<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("request")
}

fn send(id: &str, task: Option<&str>) -> taskledger_domain::wire::SendMessageRequest {
    let mut message = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "Please summarise the attached quarterly numbers for the board."}]});
    if let Some(t) = task {
        message["taskId"] = json!(t);
    }
    req(json!({"message": message, "configuration": {"returnImmediately": true}}))
}

fn task_of(r: SendMessageResponse) -> Task {
    match r {
        SendMessageResponse::Task(t) => *t,
        SendMessageResponse::Message(m) => panic!("a task, not {m:?}"),
    }
}

/// Runs the task's newest turn as the worker Lambda does (a turn from the queue, delivered at
/// least once, in a process that did not commit the request), then waits for its answer.
async fn settle(svc: &Arc<Service>, meter: &CapacityMeter, who: &Principal, id: &str) {
    let task_id = taskledger_domain::ids::TaskId::parse(id.to_string()).expect("id");
    // What the stream relay reads from the stream (free) and puts on the turn queue.
    let events = meter
        .scope(WAITS, svc.events(&task_id, 0))
        .await
        .expect("events");
    let turn = turns_from(&task_id, &events)
        .pop()
        .expect("a turn was asked for");
    meter
        .scope(TURNS, handle_turn(svc, &turn))
        .await
        .expect("the turn runs");
    for _ in 0..500 {
        let t = meter
            .scope(
                WAITS,
                svc.get_task(who, req(json!({"id": id, "historyLength": 1}))),
            )
            .await
            .expect("task");
        if taskledger_tests::agent_answered(&t) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("task {id} did not settle");
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tasks: usize = args
        .iter()
        .position(|a| a == "--tasks")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let meter = CapacityMeter::default();
    let client = dynamo::metering_client_from_env(CallCounter::default(), meter.clone()).await;
    let prefix = format!("tl-cost-{}-", uuid::Uuid::new_v4().simple());
    schema::create_tables(&client, &prefix)
        .await
        .expect("tables");
    // Finished tasks expire after the default retention: their items carry `expires`.
    let store = Arc::new(DynamoStore::new(client, &prefix).with_retention(Retention::default()));
    // Turns go through the feed, and the bench runs each as the worker would (`settle`).
    let settings = ServiceSettings {
        push_enabled: true,
        dispatch: Dispatch::Feed,
        ..ServiceSettings::default()
    };
    let svc = Service::new(
        store.clone(),
        store.clone(),
        ScenarioAgent::new(taskledger_tests::fast_timings()),
        CursorCodec::new(b"cost".to_vec()),
        settings,
    );
    let who = Principal::new("acme", "alice").expect("principal");

    // The life of a task: created, asks for input, answered, completed; read and listed.
    let mut ids = Vec::new();
    for i in 0..tasks {
        let t = task_of(
            meter
                .scope(
                    "SendMessage (new task)",
                    svc.send_message(&who, send(&format!("tck-input-required-{i}"), None), None),
                )
                .await
                .expect("send"),
        );
        settle(&svc, &meter, &who, &t.id).await;
        meter
            .scope("GetTask", svc.get_task(&who, req(json!({"id": t.id}))))
            .await
            .expect("get");
        meter
            .scope(
                "SendMessage (to its task)",
                svc.send_message(
                    &who,
                    send(&format!("tck-complete-task-{i}"), Some(&t.id)),
                    None,
                ),
            )
            .await
            .expect("reply");
        settle(&svc, &meter, &who, &t.id).await;
        // What the relay does when it sees the finishing event: the task's older items get
        // their expiry (ADR 032).
        let id = taskledger_domain::ids::TaskId::parse(t.id.clone()).expect("id");
        meter
            .scope(
                "expiry stamps (the relay, per task)",
                store.stamp_expiry(&id),
            )
            .await
            .expect("stamp");
        meter
            .scope(
                "ListTasks (page of 50)",
                svc.list_tasks(&who, req(json!({}))),
            )
            .await
            .expect("list");
        ids.push(t.id);
    }
    let lifecycle = meter.units();
    let written = meter.written();
    let indexes = meter.index_units();
    meter.reset();

    // The other operations, once each per task.
    for (i, id) in ids.iter().enumerate() {
        let t = task_of(
            svc.send_message(&who, send(&format!("tck-input-required-x{i}"), None), None)
                .await
                .expect("send"),
        );
        settle(&svc, &meter, &who, &t.id).await;
        meter
            .scope(
                "CreateTaskPushNotificationConfig",
                svc.create_push_config(
                    &who,
                    req(json!({"taskId": t.id, "id": "hook", "url": "https://hooks.example.com/a2a"})),
                ),
            )
            .await
            .expect("push");
        meter
            .scope(
                "GetTaskPushNotificationConfig",
                svc.get_push_config(&who, req(json!({"taskId": t.id, "id": "hook"}))),
            )
            .await
            .expect("get push");
        meter
            .scope(
                "DeleteTaskPushNotificationConfig",
                svc.delete_push_config(&who, req(json!({"taskId": t.id, "id": "hook"}))),
            )
            .await
            .expect("delete push");
        meter
            .scope(
                "CancelTask",
                svc.cancel_task(&who, req(json!({"id": t.id}))),
            )
            .await
            .expect("cancel");
        meter
            .scope(
                "GetTask (historyLength 0)",
                svc.get_task(&who, req(json!({"id": id, "historyLength": 0}))),
            )
            .await
            .expect("get");
    }
    let others = meter.units();

    let row = |label: &str, u: &Units, per: f64| {
        println!(
            "| {label} | {:.2} | {:.2} | {:.2} | {:.2} |",
            u.calls as f64 / per,
            u.rcu / per,
            u.wcu / per,
            u.reported / per
        );
    };
    println!("tasks: {tasks}; units per call (per task for the agent's row)\n");
    println!("| operation | calls | RCU (rules) | WCU (rules) | reported by the endpoint |");
    println!("|---|---|---|---|---|");
    let per_op = |m: &BTreeMap<String, Units>, label: &str, n: f64| {
        if let Some(u) = m.get(label) {
            row(label, u, n);
        }
    };
    let n = tasks as f64;
    for l in [
        "SendMessage (new task)",
        "SendMessage (to its task)",
        "GetTask",
        "ListTasks (page of 50)",
        "expiry stamps (the relay, per task)",
    ] {
        per_op(&lifecycle, l, n);
    }
    per_op(&lifecycle, TURNS, n);
    per_op(&lifecycle, UNSCOPED, n);
    for l in [
        "GetTask (historyLength 0)",
        "CancelTask",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "DeleteTaskPushNotificationConfig",
    ] {
        per_op(&others, l, n);
    }
    println!("\n| item written (by sort key) | per task | mean bytes |");
    println!("|---|---|---|");
    for (kind, (count, mean)) in &written {
        println!("| {kind} | {:.1} | {mean:.0} |", *count as f64 / n);
    }
    println!("\n| index | write units per task |");
    println!("|---|---|");
    for (name, u) in &indexes {
        println!("| {name} | {:.2} |", u / n);
    }
    let task_units: Units = lifecycle.iter().filter(|(l, _)| l.as_str() != WAITS).fold(
        Units::default(),
        |mut a, (_, u)| {
            a.calls += u.calls;
            a.rcu += u.rcu;
            a.wcu += u.wcu;
            a
        },
    );
    let (rcu, wcu) = (task_units.rcu / n, task_units.wcu / n);
    // Per task: 5 API requests (2 sends, 1 get, 1 list, amortised) — the list counted as one.
    let api_requests = 4.0;
    // Two agent turns: each one SQS message sent (a batch entry), received and deleted by the
    // event source mapping in batches of up to 10; priced here at one request each, the worst case.
    let sqs = 2.0 * 3.0;
    let worker_turns = 2.0;
    let dynamo = rcu * PER_MILLION_RRU + wcu * PER_MILLION_WRU;
    let sqs_cost = sqs * PER_MILLION_SQS;
    let lambda = (api_requests + worker_turns) * PER_MILLION_LAMBDA_REQUESTS
        + api_requests * API_MEMORY_GB * API_MS_PER_REQUEST / 1000.0 * PER_GB_SECOND_ARM * 1e6
        + worker_turns * WORKER_MEMORY_GB * WORKER_MS_PER_TURN / 1000.0 * PER_GB_SECOND_ARM * 1e6;
    let gateway = api_requests * PER_MILLION_HTTP_API;
    println!(
        "\nper task (its life above): {:.1} calls, {rcu:.2} RCU, {wcu:.2} WCU",
        task_units.calls as f64 / n
    );
    println!("\n| per million tasks | USD |");
    println!("|---|---|");
    println!(
        "| DynamoDB requests ({:.2} M RRU, {:.2} M WRU) | {dynamo:.2} |",
        rcu, wcu
    );
    println!("| SQS ({sqs:.0} M requests) | {sqs_cost:.2} |");
    let gb_s = (api_requests * API_MEMORY_GB * API_MS_PER_REQUEST
        + worker_turns * WORKER_MEMORY_GB * WORKER_MS_PER_TURN)
        / 1000.0
        * 1e6;
    println!(
        "| Lambda ({:.0} M requests, {gb_s:.0} GB-s) | {lambda:.2} |",
        api_requests + worker_turns
    );
    println!("| API Gateway HTTP API ({api_requests:.0} M requests) | {gateway:.2} |");
    println!("| total | {:.2} |", dynamo + sqs_cost + lambda + gateway);
}
