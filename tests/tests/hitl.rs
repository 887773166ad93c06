//! kagent's human-in-the-loop extension (hitl/v1) end to end: the model loop on a mock
//! OpenAI-compatible LLM (a real HTTP server) calls tools that need approval; the task pauses
//! INPUT_REQUIRED with a `tool_approval_request`; the client approves one call and rejects
//! another; the approved one runs once, the rejected one never, and the model reads the
//! rejection. Also: a question asked the hitl way and answered by `ask_user_response`, tools
//! that need approval on a task without hitl/v1, and the refusals that change nothing. Runs
//! over every binding (`TASKLEDGER_TEST_BINDING`) and store (`TASKLEDGER_TEST_STORE`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};
use taskledger_infra::llm::OpenAiSettings;
use taskledger_local::AgentChoice;
use taskledger_tests::chat::{answer, serve, tool};
use taskledger_tests::{error_code, test_config, Server};

const HITL: &str = "https://kagent.dev/extensions/hitl/v1";
const KEY: &str = "io.github.madarauchiha-314.tiny-harness/task";
const PART_TYPE: &str = "kagent.dev/a2a/part-type";

#[derive(Clone, Copy)]
enum Script {
    /// One step with two calls (a plan and a sub-task), then the answer.
    TwoCalls,
    /// A question to the participant bob, then the answer naming his reply.
    Question,
    /// The parent spawns a sub-task, which calls a tool needing approval, then both answer.
    Nested,
}

struct Mock {
    script: Script,
    calls: AtomicUsize,
    /// The content of every tool result the model was shown, in order.
    results: std::sync::Mutex<Vec<String>>,
}

async fn chat(State(m): State<Arc<Mock>>, Json(req): Json<Value>) -> Json<Value> {
    m.calls.fetch_add(1, Ordering::SeqCst);
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    *m.results.lock().unwrap() = messages
        .iter()
        .filter(|x| x["role"] == "tool")
        .map(|x| x["content"].as_str().unwrap_or_default().to_string())
        .collect();
    let made: usize = messages
        .iter()
        .map(|x| x["tool_calls"].as_array().map_or(0, Vec::len))
        .sum();
    let system: String = messages
        .iter()
        .filter(|x| x["role"] == "system")
        .map(|x| x["content"].as_str().unwrap_or_default().to_string())
        .collect();
    let child = system.contains("\"name\":\"Deploy\"");
    Json(match (m.script, made) {
        (Script::Nested, 0) if child => answer(
            None,
            vec![tool(
                "k0",
                "create_plan",
                json!({"steps": [{"name": "Roll out", "description": "prod"}]}),
            )],
        ),
        (Script::Nested, _) if child => answer(Some("deployed"), vec![]),
        (Script::Nested, 0) => answer(
            None,
            vec![tool(
                "p0",
                "spawn_subtask",
                json!({"name": "Deploy", "goal": "deploy to prod"}),
            )],
        ),
        (Script::Nested, _) => answer(Some("released after the deploy"), vec![]),
        (Script::TwoCalls, 0) => answer(
            None,
            vec![
                tool(
                    "c0",
                    "create_plan",
                    json!({"steps": [{"name": "Build", "description": "compile"}]}),
                ),
                tool(
                    "c1",
                    "spawn_subtask",
                    json!({"name": "Deploy", "goal": "deploy to prod"}),
                ),
            ],
        ),
        (Script::Question, 0) => answer(
            None,
            vec![tool(
                "q0",
                "ask_participant",
                json!({"participant_id": "bob", "question": "Which region?", "options": ["eu", "us"]}),
            )],
        ),
        (Script::Question, _) => {
            let reply = messages
                .iter()
                .rev()
                .find(|x| x["role"] == "user")
                .and_then(|x| x["content"].as_str())
                .unwrap_or_default()
                .to_string();
            answer(Some(&format!("going with {reply}")), vec![])
        }
        _ => answer(Some("done as approved"), vec![]),
    })
}

async fn start(script: Script, approve_tools: &[&str]) -> (Server, Arc<Mock>) {
    let mock = Arc::new(Mock {
        script,
        calls: AtomicUsize::new(0),
        results: Default::default(),
    });
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .with_state(mock.clone());
    let addr = serve(app).await;
    let mut config = test_config();
    let mut settings = OpenAiSettings::new(format!("http://{addr}/v1"), "mock-1");
    settings.initial_backoff = Duration::from_millis(5);
    config.agent = AgentChoice::OpenAi {
        settings,
        max_turns: 20,
        skills_dir: None,
        approve_tools: approve_tools.iter().map(|t| t.to_string()).collect(),
    };
    (Server::start_with(config).await, mock)
}

fn opening(id: &str, task_approvals: Value) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "metadata": {"participant_id": "ann"}, "parts": [
        {"text": "Ship it"},
        {"mediaType": "application/vnd.tiny-harness.task+json", "data": {"name": "Release", "goal": "Ship 1.0",
          "approve_tools": task_approvals,
          "participants": [{"id": "ann", "kind": "human", "role": "admin"},
                           {"id": "bob", "kind": "human", "role": "assignee"},
                           {"id": "wes", "kind": "human", "role": "watcher"}]}}
    ]})
}

const WITH_HITL: &[(&str, &str)] = &[("A2A-Extensions", HITL)];

/// Sends `message` with hitl/v1 activated; the JSON-RPC-shaped response.
async fn send_hitl(s: &Server, message: Value) -> Value {
    s.call_with(
        "SendMessage",
        json!({"message": message, "configuration": {"returnImmediately": true}}),
        WITH_HITL,
    )
    .await
}

fn resume(id: &str, task_id: &str, by: &str, payload: Value) -> Value {
    json!({"messageId": id, "taskId": task_id, "role": "ROLE_USER", "extensions": [HITL],
           "metadata": {"participant_id": by, HITL: payload}, "parts": [{"text": ""}]})
}

async fn wait_paused(s: &Server, id: &str) -> Value {
    let t = s.wait_state(id, "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(t["status"]["message"]["extensions"], json!([HITL]));
    t
}

#[tokio::test]
async fn an_approved_call_runs_once_and_a_rejected_one_never_runs() {
    // create_plan needs approval on every task (the deployment), spawn_subtask on this one.
    let (s, mock) = start(Script::TwoCalls, &["create_plan"]).await;
    let sent = send_hitl(&s, opening("m-1", json!(["spawn_subtask"]))).await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let t = wait_paused(&s, &id).await;
    let said = &t["status"]["message"];
    assert_eq!(
        said["parts"][0]["text"],
        "Approval is required for tool(s): create_plan, spawn_subtask"
    );
    let request = &said["metadata"][HITL];
    assert_eq!(request["type"], "tool_approval_request");
    let tools = request["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["call_id"], "c0");
    assert_eq!(tools[0]["name"], "create_plan");
    assert_eq!(tools[1]["args"]["goal"], "deploy to prod");
    let (plan_id, spawn_id) = (
        tools[0]["id"].as_str().unwrap(),
        tools[1]["id"].as_str().unwrap(),
    );
    assert!(t["metadata"][KEY].get("plan").is_none(), "nothing ran yet");

    // Refusals change nothing: a call left undecided, an unknown id, a watcher deciding.
    let before = s.ok("GetTask", json!({"id": id})).await;
    for (msg, by, approvals) in [
        ("r-1", "ann", json!([{"id": plan_id, "approved": true}])),
        (
            "r-2",
            "ann",
            json!([{"id": plan_id, "approved": true}, {"id": spawn_id, "approved": true},
                   {"id": "gate-999.0", "approved": true}]),
        ),
        (
            "r-3",
            "wes",
            json!([{"id": plan_id, "approved": true}, {"id": spawn_id, "approved": true}]),
        ),
    ] {
        let r = send_hitl(
            &s,
            resume(
                msg,
                &id,
                by,
                json!({"type": "tool_approval_response", "approvals": approvals}),
            ),
        )
        .await;
        assert_eq!(error_code(&r), -32602, "{msg}: {r}");
    }
    assert_eq!(s.ok("GetTask", json!({"id": id})).await, before);

    // Approve the plan, reject the sub-task.
    let r = send_hitl(
        &s,
        resume(
            "r-4",
            &id,
            "ann",
            json!({"type": "tool_approval_response", "approvals": [
                {"id": plan_id, "approved": true},
                {"id": spawn_id, "approved": false, "rejection_reason": "not on a Friday"}]}),
        ),
    )
    .await;
    assert!(r.get("error").is_none(), "{r}");
    let t = s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "done as approved");
    let ext = &t["metadata"][KEY];
    assert_eq!(
        ext["plan"]["steps"][0]["name"], "Build",
        "the approved call ran"
    );
    assert!(
        ext["sub_tasks"].as_array().is_none_or(Vec::is_empty),
        "the rejected call never ran: {ext}"
    );
    let results = mock.results.lock().unwrap().clone();
    assert_eq!(results.len(), 2, "one result per call: {results:?}");
    assert!(
        results[1].contains("the user rejected this call: not on a Friday"),
        "{results:?}"
    );
    // Each call has exactly one result in history.
    let history = t["history"].as_array().unwrap();
    let responses: Vec<&Value> = history
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().iter())
        .filter(|p| p["metadata"][PART_TYPE] == "function_response")
        .collect();
    assert_eq!(responses.len(), 2);
    assert_eq!(mock.calls.load(Ordering::SeqCst), 2, "two model steps");

    // A decision after the gate closed resumes nothing.
    let r = send_hitl(
        &s,
        resume(
            "r-5",
            &id,
            "ann",
            json!({"type": "tool_approval_response", "approvals": [{"id": plan_id, "approved": true}]}),
        ),
    )
    .await;
    assert!(r.get("error").is_some(), "{r}");
}

#[tokio::test]
async fn without_hitl_a_call_that_needs_approval_is_not_run_and_the_model_is_told() {
    let (s, mock) = start(Script::TwoCalls, &["create_plan", "spawn_subtask"]).await;
    let id = s.start_task(opening("m-1", json!([]))).await;
    let t = s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    let ext = &t["metadata"][KEY];
    assert!(ext.get("plan").is_none(), "{ext}");
    let results = mock.results.lock().unwrap().clone();
    assert_eq!(results.len(), 2);
    assert!(
        results.iter().all(|r| r.contains("did not activate")),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_question_on_a_hitl_task_is_an_ask_user_request_answered_with_ask_user_response() {
    let (s, _mock) = start(Script::Question, &[]).await;
    let sent = send_hitl(&s, opening("m-1", json!([]))).await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let t = wait_paused(&s, &id).await;
    let request = &t["status"]["message"]["metadata"][HITL];
    assert_eq!(request["type"], "ask_user_request");
    assert_eq!(request["questions"][0]["question"], "Which region?");
    assert_eq!(request["questions"][0]["choices"], json!(["eu", "us"]));
    assert_eq!(request["questions"][0]["multiple"], false);
    let qid = request["id"].as_str().unwrap();
    // The wrong id, or two answers to one question, are refused.
    for (msg, payload) in [
        (
            "a-1",
            json!({"type": "ask_user_response", "id": "nope", "answers": [{"answer": ["eu"]}]}),
        ),
        (
            "a-2",
            json!({"type": "ask_user_response", "id": qid, "answers": [{"answer": ["eu"]}, {"answer": ["us"]}]}),
        ),
    ] {
        let r = send_hitl(&s, resume(msg, &id, "bob", payload)).await;
        assert_eq!(error_code(&r), -32602, "{msg}: {r}");
    }
    let r = send_hitl(
        &s,
        resume(
            "a-3",
            &id,
            "bob",
            json!({"type": "ask_user_response", "id": qid, "answers": [{"answer": ["eu"]}]}),
        ),
    )
    .await;
    assert!(r.get("error").is_none(), "{r}");
    let t = s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "going with eu");
}

#[tokio::test]
async fn the_card_declares_hitl_as_optional() {
    let (s, _mock) = start(Script::Question, &[]).await;
    let card = s.card().await;
    let ext = card["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["uri"] == HITL)
        .cloned()
        .expect("hitl/v1 declared");
    assert_eq!(ext["description"], "Human approval and user input");
    assert!(ext.get("required").is_none_or(|r| r == false));
}

#[tokio::test]
async fn a_sub_tasks_pause_surfaces_on_its_parent_and_the_parents_decision_resumes_it() {
    let (s, _mock) = start(Script::Nested, &["create_plan"]).await;
    let sent = send_hitl(&s, opening("m-1", json!([]))).await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let child_id = format!("{id}.1");
    let child = wait_paused(&s, &child_id).await;
    assert_eq!(
        child["status"]["message"]["metadata"][HITL]["tools"][0]["name"],
        "create_plan"
    );
    let parent = wait_paused(&s, &id).await;
    let request = &parent["status"]["message"]["metadata"][HITL];
    assert_eq!(request["type"], "tool_approval_request");
    assert_eq!(request["tools"], json!([]));
    let nested = &request["nested"];
    assert_eq!(nested["subagent_name"], "Deploy");
    assert_eq!(nested["task_id"], child_id);
    assert_eq!(nested["tools"][0]["call_id"], "k0");
    let call = nested["tools"][0]["id"].as_str().unwrap();
    let r = send_hitl(
        &s,
        resume(
            "n-1",
            &id,
            "ann",
            json!({"type": "tool_approval_response", "approvals": [{"id": call, "approved": true}]}),
        ),
    )
    .await;
    assert!(r.get("error").is_none(), "{r}");
    let child = s.wait_state(&child_id, "TASK_STATE_COMPLETED").await;
    assert_eq!(
        child["metadata"][KEY]["plan"]["steps"][0]["name"], "Roll out",
        "the approved call ran in the child"
    );
    let parent = s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    assert_eq!(
        parent["artifacts"][0]["parts"][0]["text"],
        "released after the deploy"
    );
}
