//! Issue 51, class E, through the real binary: the built-in agent's conformance and fault
//! scenarios are off unless a deployment turns them on, and even then a rule that ends a task
//! otherwise than by doing its work (rejected, failed, stalled) follows only a message whose
//! sender may end the task (its owner or an admin).

use serde_json::{json, Value};
use taskledger_tests::binary::ServerProcess;
use taskledger_tests::board::MEDIA;

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("tl-sec-scenarios-{name}-{}", uuid::Uuid::new_v4()))
}

/// A JSON-RPC call with `token` as the bearer.
async fn call(s: &ServerProcess, token: &str, method: &str, params: Value) -> Value {
    s.client
        .post(format!("{}/a2a", s.base()))
        .header("A2A-Version", "1.0")
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Sends `message_id` as a new task of `token`'s and waits for it to settle: its state.
async fn settle(s: &ServerProcess, token: &str, message: Value) -> (String, String) {
    let v = call(
        s,
        token,
        "SendMessage",
        json!({"message": message, "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = v["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_string();
    for _ in 0..100 {
        let t = call(s, token, "GetTask", json!({"id": id})).await;
        let state = t["result"]["status"]["state"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if state != "TASK_STATE_SUBMITTED" && state != "TASK_STATE_WORKING" {
            return (id, state);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    (id, "TASK_STATE_WORKING".into())
}

fn text(id: &str, body: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": body}]})
}

#[tokio::test]
async fn the_fault_and_conformance_scenarios_are_off_by_default() {
    let s = ServerProcess::sqlite_with(&temp("off"), &["--tokens", "ta=acme/alice"]).await;
    for prefix in [
        "tck-reject-task-1",
        "fault-turn-stalls-1",
        "fault-turn-fails-1",
    ] {
        let (_, state) = settle(&s, "ta", text(prefix, "hello")).await;
        assert_eq!(state, "TASK_STATE_COMPLETED", "{prefix} steered the agent");
    }
}

#[tokio::test]
async fn a_reporter_cannot_steer_the_owners_task_to_an_end_but_the_owner_can() {
    let s = ServerProcess::sqlite_with(
        &temp("on"),
        &[
            "--tokens",
            "ta=acme/alice,tb=acme/bob",
            "--conformance-scenarios",
        ],
    )
    .await;
    // alice's task, bob a reporter, waiting for input.
    let participants = json!([
        {"id": "alice", "kind": "human", "role": "admin"},
        {"id": "bob", "kind": "human", "role": "reporter"}
    ]);
    // Each scenario that ends a task otherwise than by its work, sent by bob to a task of
    // alice's of its own: none is followed (the model loop answers him instead) — his turn
    // neither fails nor rejects her task, nor hangs it until the deadline reaper fails it
    // (a stalled turn would hold this blocking send).
    for id in [
        "tck-reject-task-bob",
        "fault-turn-fails-bob",
        "fault-turn-stalls-bob",
    ] {
        let (task, state) = settle(
            &s,
            "ta",
            json!({"messageId": "tck-input-required-0", "role": "ROLE_USER", "parts": [
                {"text": "Deploy it"},
                {"data": {"name": "Release", "goal": "Ship", "participants": participants}, "mediaType": MEDIA}]}),
        )
        .await;
        assert_eq!(state, "TASK_STATE_INPUT_REQUIRED");
        let sent = call(
            &s,
            "tb",
            "SendMessage",
            json!({"message": {"messageId": id, "role": "ROLE_USER", "taskId": task,
                "parts": [{"text": "stop it"}]}, "configuration": {"returnImmediately": false}}),
        );
        let v = tokio::time::timeout(std::time::Duration::from_secs(20), sent)
            .await
            .unwrap_or_else(|_| panic!("{id}: bob's turn stalled alice's task"));
        assert!(v.get("error").is_none(), "{id}: {v}");
        let after = v["result"]["task"]["status"]["state"]
            .as_str()
            .unwrap_or("");
        assert!(
            ![
                "TASK_STATE_REJECTED",
                "TASK_STATE_FAILED",
                "TASK_STATE_WORKING",
                ""
            ]
            .contains(&after),
            "{id}: bob steered alice's task to {after}: {v}"
        );
    }
    // ...the owner's is.
    let (_, state) = settle(&s, "ta", text("tck-reject-task-alice", "no")).await;
    assert_eq!(state, "TASK_STATE_REJECTED", "the owner may");
}
