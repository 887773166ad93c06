//! No task waits forever: a turn that keeps failing is given up and its task FAILS saying why
//! (in-process on the embedded store; on the serverless path on its last SQS receive, and from
//! the dead-letter queue), and a task at work with no progress past the deadline is failed by
//! the reaper — which never wins against a turn that commits first.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use taskledger_app::agent::{ScenarioAgent, TurnBudget};
use taskledger_app::compose::{self, TurnMessage};
use taskledger_app::runners::handle_turn;
use taskledger_app::{Dispatch, Service, ServiceSettings};
use taskledger_domain::agent::turns::AgentTurn;
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::{Principal, TaskId};
use taskledger_domain::wire::{SendMessageRequest, SendMessageResponse, TaskState};
use taskledger_infra::sqlite::SqliteStore;
use taskledger_infra::sqs;
use taskledger_local::{Config, Storage};
use taskledger_tests::{aws_endpoint, fast_timings, test_config, Server};

fn message(id: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "go"}]})
}

/// Polls GetTask until the task is in `state` or `within` passes.
async fn wait_for(s: &Server, id: &str, state: &str, within: Duration) -> Value {
    let until = Instant::now() + within;
    loop {
        let v = s.call("GetTask", json!({"id": id})).await;
        if v["result"]["status"]["state"] == state {
            return v["result"].clone();
        }
        assert!(Instant::now() < until, "{id} never reached {state}: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn status_text(task: &Value) -> String {
    task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The states of the task's status updates, as a stream from its start replays them, read
/// until the stream ends or `within` passes (a task still at work keeps its stream open).
async fn states_streamed(s: &Server, id: &str, within: Duration) -> Vec<String> {
    let mut stream = s.resume(id, "0").await.stream();
    let mut states = Vec::new();
    let until = tokio::time::Instant::now() + within;
    while let Ok(Some(e)) = tokio::time::timeout_at(until, stream.next()).await {
        if e.kind() == "statusUpdate" {
            states.extend(e.state().map(str::to_string));
        }
    }
    states
}

const ENDINGS: [&str; 2] = ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED"];

#[tokio::test]
async fn a_turn_that_keeps_failing_is_given_up_and_its_task_fails_saying_why() {
    let s = Server::start_with(test_config()).await;
    let id = s.start_task(message("fault-turn-fails-1")).await;
    let task = wait_for(&s, &id, "TASK_STATE_FAILED", Duration::from_secs(20)).await;
    let text = status_text(&task);
    let attempts = taskledger_app::runners::IN_PROCESS_TURN_ATTEMPTS;
    assert!(
        text.contains(&format!("given up after {attempts} attempts"))
            && text.contains("the agent's turn kept failing (correlation id ")
            && !text.contains("scripted fault"),
        "what failed and a correlation id, the error itself only in the log: {text}"
    );
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    // Streams and history see it like any status message.
    assert_eq!(
        states_streamed(&s, &id, Duration::from_secs(5))
            .await
            .last()
            .map(String::as_str),
        Some("TASK_STATE_FAILED")
    );
}

#[tokio::test]
async fn a_task_with_no_progress_past_its_deadline_fails() {
    let mut config = test_config();
    config.stall_deadline_secs = Some(1);
    let s = Server::start_with(config).await;
    // Its turn says WORKING, then hangs without another word.
    let id = s.start_task(message("fault-turn-stalls-1")).await;
    wait_for(&s, &id, "TASK_STATE_WORKING", Duration::from_secs(10)).await;
    let task = wait_for(&s, &id, "TASK_STATE_FAILED", Duration::from_secs(10)).await;
    assert!(
        status_text(&task).starts_with("No progress for more than 1 s"),
        "{task}"
    );
    // A task waiting for its client is not stalled, however long it waits.
    let waiting = s.send_task("tck-input-required-1", "hi").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let id = waiting["id"].as_str().unwrap();
    wait_for(&s, id, "TASK_STATE_INPUT_REQUIRED", Duration::from_secs(1)).await;
}

#[tokio::test]
async fn the_reaper_racing_a_turn_leaves_one_ending_and_nothing_after_it() {
    let mut config = test_config();
    config.stall_deadline_secs = Some(1);
    // WORKING, then COMPLETED a little past the deadline: the reaper's pass and the turn's
    // commit race; whichever commits first ends the task, the other changes nothing.
    config.timings.delayed_complete = Duration::from_millis(1100);
    let s = Server::start_with(config).await;
    let mut ids = Vec::new();
    for n in 0..4 {
        ids.push(
            s.start_task(message(&format!("tck-delayed-complete-race-{n}")))
                .await,
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for id in &ids {
        let until = Instant::now() + Duration::from_secs(10);
        let states = loop {
            let states = states_streamed(&s, id, Duration::from_secs(3)).await;
            if states
                .last()
                .is_some_and(|st| ENDINGS.contains(&st.as_str()))
            {
                break states;
            }
            assert!(Instant::now() < until, "{id}: {states:?}");
        };
        let endings = states
            .iter()
            .filter(|st| ENDINGS.contains(&st.as_str()))
            .count();
        assert_eq!(endings, 1, "{id}: {states:?}");
    }
}

fn fresh_prefix() -> String {
    format!("tl-live-{}-", uuid::Uuid::new_v4().simple())
}

/// The local server on DynamoDB with the serverless path in-process and a short turn lease.
async fn serverless(lease_secs: u32, stall: Duration) -> Server {
    serverless_on(&fresh_prefix(), lease_secs, stall).await
}

/// The same on the tables and queues of `prefix` (a second server shares them).
async fn serverless_on(prefix: &str, lease_secs: u32, stall: Duration) -> Server {
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = Storage::Dynamo {
        index_shards: 1,
        prefix: prefix.to_string(),
        create_tables: true,
        counter: None,
        pollers: true,
    };
    c.timings = fast_timings();
    c.timings.stall = stall;
    c.turn_lease_secs = lease_secs;
    Server::start_with(c).await
}

#[tokio::test]
async fn on_the_queue_a_turn_failing_on_its_last_receive_fails_its_task() {
    if !aws_endpoint() {
        return;
    }
    let s = serverless(3, Duration::from_secs(3600)).await;
    let id = s.start_task(message("fault-turn-fails-q")).await;
    let task = wait_for(&s, &id, "TASK_STATE_FAILED", Duration::from_secs(40)).await;
    let receives = taskledger_infra::sqs::MAX_RECEIVES;
    let text = status_text(&task);
    assert!(
        text.contains(&format!("given up after {receives} attempts")),
        "{text}"
    );
}

#[tokio::test]
async fn a_turn_longer_than_its_lease_runs_once() {
    if !aws_endpoint() {
        return;
    }
    // Two servers on one table and queue, each with a 3 s lease renewed every second; the
    // turn hangs for 6 s, then ends (the task WORKING). Unrenewed, the other server would
    // receive the turn after 3 s and run it beside the first.
    let prefix = fresh_prefix();
    let s = serverless_on(&prefix, 3, Duration::from_secs(6)).await;
    let _other = serverless_on(&prefix, 3, Duration::from_secs(6)).await;
    let id = s.start_task(message("fault-turn-stalls-q")).await;
    wait_for(&s, &id, "TASK_STATE_WORKING", Duration::from_secs(10)).await;
    // (read for 8 s: a second run would have started 3 s after the first receive)
    let working = states_streamed(&s, &id, Duration::from_secs(8))
        .await
        .iter()
        .filter(|st| *st == "TASK_STATE_WORKING")
        .count();
    assert_eq!(working, 1, "the turn ran more than once");
}

/// A service on an in-memory store whose turns run only when the test hands them over (as
/// the worker Lambda's are), and a task whose first turn is `message_id`'s.
async fn worker_side(message_id: &str) -> (Arc<Service>, AgentTurn) {
    let store = Arc::new(SqliteStore::in_memory());
    let svc = Service::new(
        store.clone(),
        store,
        ScenarioAgent::new(fast_timings()),
        CursorCodec::new(b"k".to_vec()),
        ServiceSettings {
            dispatch: Dispatch::Feed,
            ..Default::default()
        },
    );
    let who = Principal::new("acme", "alice").unwrap();
    let req: SendMessageRequest = serde_json::from_value(json!({
        "message": message(message_id),
        "configuration": {"returnImmediately": true}
    }))
    .unwrap();
    let SendMessageResponse::Task(task) = svc.send_message(&who, req, None).await.unwrap() else {
        panic!("a task")
    };
    let task_id = TaskId::parse(task.id).unwrap();
    let work_seq = svc
        .ledger()
        .current(&task_id)
        .await
        .unwrap()
        .unwrap()
        .head()
        .unwrap()
        .work_requested;
    (
        svc,
        AgentTurn {
            task_id,
            work_seq,
            trace: None,
        },
    )
}

fn record(turn: &AgentTurn, receives: u32, dlq: bool) -> TurnMessage {
    let queue = if dlq {
        sqs::TURNS_DLQ
    } else {
        sqs::TURNS_QUEUE
    };
    let attributes = [("ApproximateReceiveCount".to_string(), receives.to_string())].into();
    TurnMessage::from_record(
        Some(format!("msg-{receives}")),
        Some(serde_json::to_string(turn).unwrap()),
        &attributes,
        Some(&format!(
            "arn:aws:sqs:us-east-1:000000000000:taskledger-dev-{queue}"
        )),
    )
}

async fn state_and_text(svc: &Service, turn: &AgentTurn) -> (TaskState, String) {
    let state = svc.ledger().current(&turn.task_id).await.unwrap().unwrap();
    let status = &state.head().unwrap().status;
    let text = status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default();
    (status.state, text)
}

#[tokio::test]
async fn the_worker_lambda_retries_a_failing_turn_then_gives_it_up_on_its_last_receive() {
    let (svc, turn) = worker_side("fault-turn-fails-w").await;
    let budget = TurnBudget::unlimited();
    for receives in 1..sqs::MAX_RECEIVES {
        let failed =
            compose::run_turn_batch(&svc, budget, vec![record(&turn, receives, false)]).await;
        assert_eq!(
            failed,
            [format!("msg-{receives}")],
            "retried: reported failed"
        );
        assert_eq!(state_and_text(&svc, &turn).await.0, TaskState::Submitted);
    }
    let last = sqs::MAX_RECEIVES;
    let failed = compose::run_turn_batch(&svc, budget, vec![record(&turn, last, false)]).await;
    assert!(failed.is_empty(), "given up: done with the message");
    let (state, text) = state_and_text(&svc, &turn).await;
    assert_eq!(state, TaskState::Failed);
    assert!(
        text.contains(&format!("given up after {last} attempts")),
        "{text}"
    );
}

#[tokio::test]
async fn a_dead_lettered_turn_fails_its_task_and_a_finished_one_stays_as_it_is() {
    let (svc, turn) = worker_side("fault-turn-stalls-w").await;
    let failed =
        compose::run_turn_batch(&svc, TurnBudget::unlimited(), vec![record(&turn, 6, true)]).await;
    assert!(failed.is_empty());
    let (state, text) = state_and_text(&svc, &turn).await;
    assert_eq!(state, TaskState::Failed);
    assert!(
        text.ends_with(taskledger_app::runners::DEAD_LETTERED),
        "{text}"
    );
    // A task that finished before its turn's message was dead-lettered is left as it is.
    let (svc, turn) = worker_side("tck-artifact-text-w").await;
    handle_turn(&svc, &turn).await.unwrap();
    assert_eq!(state_and_text(&svc, &turn).await.0, TaskState::Completed);
    compose::run_turn_batch(&svc, TurnBudget::unlimited(), vec![record(&turn, 6, true)]).await;
    assert_eq!(state_and_text(&svc, &turn).await.0, TaskState::Completed);
}
