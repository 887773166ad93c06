//! Black-box tests of the tiny-harness task extension through the A2A API.

use serde_json::{json, Value};
use taskledger_tests::{error_code, Server};

const KEY: &str = "io.github.madarauchiha-314.tiny-harness/task";
const MEDIA: &str = "application/vnd.tiny-harness.task+json";

fn envelope() -> Value {
    json!({
        "name": "Release", "goal": "Ship 1.0",
        "acceptance_criteria": [{"text": "changelog written"}],
        "participants": [
            {"id": "ann", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "assignee"},
            {"id": "eve", "kind": "agent", "role": "watcher"}
        ]
    })
}

/// A message object with text, a sender, and optionally an envelope part.
fn message(id: &str, text: &str, sender: &str, env: Option<Value>, task: Option<&str>) -> Value {
    let mut parts = vec![json!({"text": text})];
    if let Some(e) = env {
        parts.push(json!({"data": e, "mediaType": MEDIA}));
    }
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": parts, "metadata": {"participant_id": sender}});
    if let Some(t) = task {
        m["taskId"] = json!(t);
    }
    m
}

async fn send(s: &Server, m: Value, immediately: bool) -> Value {
    s.call(
        "SendMessage",
        json!({"message": m, "configuration": {"returnImmediately": immediately}}),
    )
    .await
}

async fn create(s: &Server, id: &str) -> Value {
    let v = send(
        s,
        message(id, "start", "ann", Some(envelope()), None),
        false,
    )
    .await;
    assert!(v.get("result").is_some(), "{v}");
    v["result"]["task"].clone()
}

async fn get(s: &Server, id: &str) -> Value {
    s.ok("GetTask", json!({"id": id})).await
}

#[tokio::test]
async fn a_task_created_with_an_envelope_carries_it_in_metadata() {
    let s = Server::start().await;
    let card = s.card().await;
    assert_eq!(
        card["capabilities"]["extensions"][0]["uri"],
        "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/task/v1"
    );
    let task = create(&s, "tck-input-required-e1").await;
    let ext = &get(&s, task["id"].as_str().unwrap()).await["metadata"][KEY];
    assert_eq!(ext["name"], "Release");
    assert_eq!(ext["goal"], "Ship 1.0");
    assert_eq!(ext["lifecycle"], "conversation");
    assert_eq!(ext["participants"][1]["role"], "assignee");
    // the same object in message.metadata[key] is accepted too
    let m = json!({"messageId": "tck-input-required-e2", "role": "ROLE_USER", "parts": [{"text": "go"}],
                   "metadata": {KEY: envelope(), "participant_id": "ann"}});
    let v = send(&s, m, false).await;
    assert_eq!(v["result"]["task"]["metadata"][KEY]["name"], "Release");
}

#[tokio::test]
async fn server_controlled_fields_and_unknown_fields_are_refused_whole() {
    let s = Server::start().await;
    for (field, value, path) in [
        ("model", json!("gpt-5"), "model"),
        ("reasoning_effort", json!("high"), "reasoning_effort"),
        ("lifecycle", json!("delegated"), "lifecycle"),
        ("colour", json!("red"), "task"),
    ] {
        let mut env = envelope();
        env[field] = value;
        let v = send(&s, message("m", "x", "ann", Some(env), None), false).await;
        assert_eq!(error_code(&v), -32602, "{field}: {v}");
        assert_eq!(
            v["error"]["data"][0]["metadata"]["field"], path,
            "{field}: {v}"
        );
    }
    let mut env = envelope();
    env["participants"][1]["role"] = json!("boss");
    let v = send(&s, message("m", "x", "ann", Some(env), None), false).await;
    assert_eq!(
        v["error"]["data"][0]["metadata"]["field"],
        "participants[1].role"
    );
    assert_eq!(s.total_tasks().await, 0, "nothing was created");
}

#[tokio::test]
async fn a_non_participant_is_refused_with_a_status_message_and_nothing_else() {
    let s = Server::start().await;
    let task = create(&s, "tck-input-required-np").await;
    let id = task["id"].as_str().unwrap();
    let before = get(&s, id).await;
    let v = send(
        &s,
        message("m-x", "let me in", "mallory", None, Some(id)),
        false,
    )
    .await;
    let t = &v["result"]["task"];
    assert!(t["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .contains("mallory is not a participant"));
    assert_eq!(t["status"]["state"], before["status"]["state"]);
    let after = get(&s, id).await;
    assert_eq!(
        after["history"], before["history"],
        "the text never enters history"
    );
}

#[tokio::test]
async fn model_and_effort_commands() {
    let s = Server::start().await;
    let task = create(&s, "tck-input-required-me").await;
    let id = task["id"].as_str().unwrap();
    send(
        &s,
        message("m-1", "/model gpt-5", "bob", None, Some(id)),
        false,
    )
    .await;
    send(
        &s,
        message("m-2", "/effort low", "bob", None, Some(id)),
        false,
    )
    .await;
    let ext = &get(&s, id).await["metadata"][KEY];
    assert_eq!(ext["model"], "gpt-5");
    assert_eq!(ext["reasoning_effort"], "low");
    let v = send(
        &s,
        message("m-3", "/effort max", "bob", None, Some(id)),
        false,
    )
    .await;
    assert_eq!(error_code(&v), -32602);
    assert_eq!(
        v["error"]["data"][0]["metadata"]["field"],
        "reasoning_effort"
    );
    assert_eq!(
        get(&s, id).await["metadata"][KEY]["reasoning_effort"],
        "low",
        "unchanged"
    );
}

#[tokio::test]
async fn only_admins_change_participants() {
    let s = Server::start().await;
    let task = create(&s, "tck-input-required-ad").await;
    let id = task["id"].as_str().unwrap();
    let mut env = envelope();
    env["participants"][2]["role"] = json!("reporter");
    let v = send(
        &s,
        message("m-1", "promote", "bob", Some(env.clone()), Some(id)),
        false,
    )
    .await;
    assert_eq!(error_code(&v), -32602);
    assert_eq!(v["error"]["data"][0]["metadata"]["field"], "participants");
    let v = send(
        &s,
        message("m-2", "promote", "ann", Some(env), Some(id)),
        true,
    )
    .await;
    assert!(v.get("result").is_some(), "{v}");
    assert_eq!(
        get(&s, id).await["metadata"][KEY]["participants"][2]["role"],
        "reporter"
    );
}

#[tokio::test]
async fn a_plan_with_a_cycle_is_refused_naming_the_steps() {
    let s = Server::start().await;
    let mut env = envelope();
    env["plan"] = json!({"steps": [
        {"id": "build", "name": "Build", "depends_on": ["test"]},
        {"id": "test", "name": "Test", "depends_on": ["build"]}
    ]});
    let v = send(&s, message("m", "plan", "ann", Some(env), None), false).await;
    assert_eq!(error_code(&v), -32602);
    let meta = &v["error"]["data"][0]["metadata"];
    assert_eq!(meta["error"], "PlanCycleError");
    assert!(meta["steps"].as_str().unwrap().contains("build"));
    assert!(meta["field"].as_str().unwrap().starts_with("plan.steps["));
    // a DAG is accepted, its steps move through the envelope
    let mut env = envelope();
    env["plan"] = json!({"steps": [
        {"id": "", "name": "Build"},
        {"id": "", "name": "Ship", "depends_on": ["Build"]}
    ]});
    let v = send(
        &s,
        message(
            "tck-input-required-p",
            "plan",
            "ann",
            Some(env.clone()),
            None,
        ),
        false,
    )
    .await;
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let plan = &get(&s, &id).await["metadata"][KEY]["plan"];
    assert_eq!(plan["steps"][1]["depends_on"], json!(["build"]));
    let mut steps = plan["steps"].clone();
    steps[1]["state"] = json!("done");
    steps[1]["output"] = json!("shipped");
    env["plan"] = json!({"steps": steps.clone()});
    let v = send(
        &s,
        message("m-s", "ship", "bob", Some(env.clone()), Some(&id)),
        false,
    )
    .await;
    assert_eq!(error_code(&v), -32602, "ship waits for build: {v}");
    steps[0]["state"] = json!("done");
    steps[0]["output"] = json!("built");
    env["plan"] = json!({"steps": steps});
    let v = send(
        &s,
        message("m-b", "build and ship", "bob", Some(env), Some(&id)),
        true,
    )
    .await;
    assert!(v.get("result").is_some(), "{v}");
    let plan = &get(&s, &id).await["metadata"][KEY]["plan"];
    assert_eq!(plan["steps"][0]["state"], "done");
    assert_eq!(plan["steps"][1]["output"], "shipped");
}

#[tokio::test]
async fn a_parent_completes_only_after_its_participant_task() {
    let s = Server::start().await;
    let v = send(
        &s,
        message(
            "th-participant-task-bob",
            "Review the draft",
            "ann",
            Some(envelope()),
            None,
        ),
        true,
    )
    .await;
    let parent = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let child = format!("{parent}.1");
    let c = s.wait_state(&child, "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(
        c["status"]["message"]["parts"][0]["text"],
        "Review the draft"
    );
    let cext = &c["metadata"][KEY];
    assert_eq!(cext["lifecycle"], "delegated");
    assert_eq!(cext["parent_tasks"][0]["task_id"], parent);
    assert_eq!(cext["participants"][1]["id"], "bob");
    assert_eq!(cext["participants"][1]["role"], "assignee");
    assert_eq!(c["contextId"], v["result"]["task"]["contextId"]);
    let p = get(&s, &parent).await;
    assert_eq!(
        p["status"]["state"], "TASK_STATE_WORKING",
        "waits for its sub-task"
    );
    assert_eq!(p["metadata"][KEY]["sub_tasks"][0]["task_id"], child);
    // someone else's message does not finish it; the assignee's does
    send(
        &s,
        message("m-1", "I think so", "ann", None, Some(&child)),
        true,
    )
    .await;
    assert_eq!(
        get(&s, &child).await["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    send(
        &s,
        message("m-2", "approved", "bob", None, Some(&child)),
        true,
    )
    .await;
    let c = s.wait_state(&child, "TASK_STATE_COMPLETED").await;
    assert_eq!(c["status"]["message"]["parts"][0]["text"], "approved");
    let p = s.wait_state(&parent, "TASK_STATE_COMPLETED").await;
    assert_eq!(
        p["metadata"][KEY]["sub_tasks"][0]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn a_local_sub_task_runs_and_then_its_parent_finishes() {
    let s = Server::start().await;
    let v = send(
        &s,
        message(
            "th-subtask-1",
            "Collect the numbers",
            "ann",
            Some(envelope()),
            None,
        ),
        true,
    )
    .await;
    let parent = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let c = s
        .wait_state(&format!("{parent}.1"), "TASK_STATE_COMPLETED")
        .await;
    assert!(c["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Collect the numbers"));
    s.wait_state(&parent, "TASK_STATE_COMPLETED").await;
}

#[tokio::test]
async fn canceling_a_parent_cancels_its_unfinished_children() {
    let s = Server::start().await;
    let v = send(
        &s,
        message(
            "th-participant-task-bob",
            "Review",
            "ann",
            Some(envelope()),
            None,
        ),
        true,
    )
    .await;
    let parent = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let child = format!("{parent}.1");
    s.wait_state(&child, "TASK_STATE_INPUT_REQUIRED").await;
    let t = s.ok("CancelTask", json!({"id": parent})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_CANCELED");
    s.wait_state(&child, "TASK_STATE_CANCELED").await;
}

#[tokio::test]
async fn a_help_request_waits_for_the_asked_participant() {
    let s = Server::start().await;
    let v = send(
        &s,
        message("th-ask-bob", "Deploy it", "ann", Some(envelope()), None),
        false,
    )
    .await;
    let t = &v["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let q = &t["status"]["message"];
    assert!(q["parts"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Which option should I take?"));
    assert_eq!(q["parts"][1]["data"]["kind"], "help_request");
    let id = t["id"].as_str().unwrap().to_string();
    // someone else speaks (an admin, not the asked one): recorded, still waiting
    let v = send(&s, message("m-w", "take b", "ann", None, Some(&id)), true).await;
    assert_eq!(
        v["result"]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let h = get(&s, &id).await["history"].clone();
    assert!(h
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["parts"][0]["text"] == "take b"));
    // the right person answers: the task resumes and finishes
    let v = send(&s, message("m-r", "take a", "bob", None, Some(&id)), false).await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
}
