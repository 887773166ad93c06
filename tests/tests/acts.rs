//! The ACTS test-agent contract (a2aproject/A2A#1882 §11, as the SDKs' test agents play it),
//! black-box on the harness's binding: messages with fresh (UUID) ids, as the ACTS runner sends
//! them, whose first text part names the behaviour; continuations that name none, read against
//! the task's first message; and the a2a-tck kit's `messageId` contract still first.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use taskledger_tests::{test_config, Server};

fn message(text: &str, task: Option<&str>) -> Value {
    let mut m = json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
        "parts": [{"text": text}]});
    if let Some(t) = task {
        m["taskId"] = json!(t);
    }
    m
}

async fn send(s: &Server, text: &str, task: Option<&str>, immediately: bool) -> Value {
    s.ok(
        "SendMessage",
        json!({"message": message(text, task), "configuration": {"returnImmediately": immediately}}),
    )
    .await
}

/// The task a blocking send of `text` ends with.
async fn settled(s: &Server, text: &str) -> Value {
    let v = send(s, text, None, false).await;
    v["task"].clone()
}

fn state(t: &Value) -> &str {
    t["status"]["state"].as_str().unwrap_or("?")
}

fn said(t: &Value) -> &str {
    t["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or("?")
}

#[tokio::test]
async fn each_outcome_behaviour_ends_where_it_says_with_a_status_message() {
    let s = Server::start().await;
    for (text, end) in [
        ("tck-complete-task hello world", "TASK_STATE_COMPLETED"),
        ("tck-task-failure", "TASK_STATE_FAILED"),
        ("tck-reject-task please", "TASK_STATE_REJECTED"),
        ("tck-input-required x", "TASK_STATE_INPUT_REQUIRED"),
        ("tck-auth-required x", "TASK_STATE_AUTH_REQUIRED"),
    ] {
        let t = settled(&s, text).await;
        assert_eq!(state(&t), end, "{text}: {t}");
        let name = text.split(' ').next().unwrap();
        assert_eq!(said(&t), format!("{name} ok"), "{t}");
        assert_eq!(t["status"]["message"]["role"], "ROLE_AGENT");
    }
}

#[tokio::test]
async fn a_message_response_is_a_message_and_no_task() {
    let s = Server::start().await;
    let before = s.total_tasks().await;
    let v = send(&s, "tck-message-response hello", None, false).await;
    assert!(v.get("task").is_none(), "{v}");
    assert_eq!(v["message"]["role"], "ROLE_AGENT", "{v}");
    assert_eq!(v["message"]["parts"][0]["text"], "tck message response");
    assert_eq!(s.total_tasks().await, before, "no task was made");
}

#[tokio::test]
async fn each_artifact_behaviour_completes_with_its_kind_of_part() {
    let s = Server::start().await;
    for (text, check) in [
        (
            "tck-artifact-text",
            json!({"text": "generated text content"}),
        ),
        (
            "tck-artifact-data",
            json!({"data": {"key": "value", "count": 1}}),
        ),
        ("tck-artifact-file", json!({"raw": "ZmlsZSBieXRlcw=="})),
        (
            "tck-artifact-file-url",
            json!({"url": "https://example.com/document.txt"}),
        ),
    ] {
        let t = settled(&s, &format!("{text} please")).await;
        assert_eq!(state(&t), "TASK_STATE_COMPLETED", "{t}");
        let artifact = &t["artifacts"][0];
        assert_eq!(artifact["name"], text, "{t}");
        let part = &artifact["parts"][0];
        let (key, want) = check.as_object().unwrap().iter().next().unwrap();
        assert_eq!(&part[key], want, "{text}: {part}");
        if text.starts_with("tck-artifact-file") {
            assert_eq!(part["filename"], "document.txt");
            assert_eq!(part["mediaType"], "text/plain");
        }
    }
}

#[tokio::test]
async fn a_long_running_task_is_seen_working_then_completes_with_an_artifact() {
    let s = Server::start().await;
    let v = send(&s, "tck-long-running start", None, true).await;
    let id = v["task"]["id"].as_str().unwrap().to_string();
    let early = s.ok("GetTask", json!({"id": id})).await;
    assert!(
        ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"].contains(&state(&early)),
        "not finished at once: {early}"
    );
    let done = s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    assert_eq!(
        done["artifacts"][0]["parts"][0]["text"],
        "long running result"
    );
    assert_eq!(said(&done), "long running work finished");
}

#[tokio::test]
async fn multi_turn_asks_for_input_until_done_and_continuations_name_nothing() {
    let s = Server::start().await;
    let t = settled(&s, "tck-multi-turn start").await;
    assert_eq!(state(&t), "TASK_STATE_INPUT_REQUIRED", "{t}");
    assert_eq!(said(&t), "more input please");
    let id = t["id"].as_str().unwrap().to_string();
    let t = send(&s, "here is more input", Some(&id), false).await["task"].clone();
    assert_eq!(state(&t), "TASK_STATE_INPUT_REQUIRED", "{t}");
    let t = send(&s, "done", Some(&id), false).await["task"].clone();
    assert_eq!(state(&t), "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(said(&t), "multi-turn complete");
    let got = s.ok("GetTask", json!({"id": id})).await;
    let users: Vec<&str> = got["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_USER")
        .map(|m| m["parts"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        users,
        ["tck-multi-turn start", "here is more input", "done"]
    );
}

#[tokio::test]
async fn a_cancel_task_stays_working_until_canceled() {
    let s = Server::start().await;
    let v = send(&s, "tck-cancel start work", None, true).await;
    let id = v["task"]["id"].as_str().unwrap().to_string();
    s.wait_state(&id, "TASK_STATE_WORKING").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let still = s.ok("GetTask", json!({"id": id})).await;
    assert_eq!(state(&still), "TASK_STATE_WORKING", "{still}");
    let canceled = s.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = s.ok("GetTask", json!({"id": id})).await;
    assert_eq!(state(&after), "TASK_STATE_CANCELED", "{after}");
}

#[tokio::test]
async fn a_cancel_task_nobody_cancels_fails_saying_so_after_its_hold() {
    let mut config = test_config();
    config.timings.acts.cancel_hold = Duration::from_millis(300);
    let s = Server::start_with(config).await;
    let v = send(&s, "tck-cancel start work", None, true).await;
    let id = v["task"]["id"].as_str().unwrap().to_string();
    let t = s.wait_state(&id, "TASK_STATE_FAILED").await;
    assert!(said(&t).contains("no cancel arrived"), "{t}");
}

#[tokio::test]
async fn stream_basic_is_working_then_one_artifact_then_completed() {
    let s = Server::start().await;
    let events = s
        .stream(
            "SendStreamingMessage",
            json!({"message": message("tck-stream-basic hello", None)}),
        )
        .await
        .stream()
        .rest()
        .await;
    let kinds: Vec<(&str, Option<&str>)> = events.iter().map(|e| (e.kind(), e.state())).collect();
    let tail = &kinds[kinds.len() - 3..];
    assert_eq!(
        tail,
        [
            ("statusUpdate", Some("TASK_STATE_WORKING")),
            ("artifactUpdate", None),
            ("statusUpdate", Some("TASK_STATE_COMPLETED")),
        ],
        "{events:?}"
    );
    let artifact = &events[events.len() - 2].body()["artifact"];
    assert_eq!(artifact["parts"][0]["text"], "streamed content");
}

#[tokio::test]
async fn stream_chunked_appends_three_chunks_to_one_artifact() {
    let s = Server::start().await;
    let events = s
        .stream(
            "SendStreamingMessage",
            json!({"message": message("tck-stream-chunked", None)}),
        )
        .await
        .stream()
        .rest()
        .await;
    let chunks: Vec<&Value> = events
        .iter()
        .filter(|e| e.kind() == "artifactUpdate")
        .map(|e| e.body())
        .collect();
    assert_eq!(chunks.len(), 3, "{events:?}");
    let ids: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["artifact"]["artifactId"])
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "one artifact: {ids:?}");
    let flags: Vec<(bool, bool)> = chunks
        .iter()
        .map(|c| (c["append"] == true, c["lastChunk"] == true))
        .collect();
    assert_eq!(flags, [(false, false), (true, false), (true, true)]);
    assert_eq!(events.last().unwrap().state(), Some("TASK_STATE_COMPLETED"));
}

#[tokio::test]
async fn a_non_streaming_behaviour_plays_over_a_stream_and_a_subscription() {
    let s = Server::start().await;
    let events = s
        .stream(
            "SendStreamingMessage",
            json!({"message": message("tck-complete-task hi", None)}),
        )
        .await
        .stream()
        .rest()
        .await;
    assert_eq!(events.last().unwrap().state(), Some("TASK_STATE_COMPLETED"));
    let v = send(&s, "tck-long-running start", None, true).await;
    let id = v["task"]["id"].as_str().unwrap();
    let started = Instant::now();
    let events = s.subscribe(id).await.rest().await;
    assert_eq!(
        events.last().unwrap().state(),
        Some("TASK_STATE_COMPLETED"),
        "{events:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_tck_name_the_contract_lacks_fails_the_task_naming_it() {
    let s = Server::start().await;
    for text in ["tck-nonesuch", "tck-client-parses"] {
        let t = settled(&s, text).await;
        assert_eq!(state(&t), "TASK_STATE_FAILED", "{t}");
        assert_eq!(said(&t), format!("unimplemented ACTS behaviour {text:?}"));
    }
}

#[tokio::test]
async fn the_message_id_contract_comes_first_and_plain_messages_go_to_the_model() {
    let s = Server::start().await;
    let mut m = message("tck-complete-task", None);
    m["messageId"] = json!(format!(
        "tck-input-required-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let v = s.ok("SendMessage", json!({"message": m})).await;
    assert_eq!(state(&v["task"]), "TASK_STATE_INPUT_REQUIRED", "{v}");
    let t = settled(&s, "hello there").await;
    assert_eq!(state(&t), "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(
        said(&t),
        "Received: hello there",
        "the scripted model's echo"
    );
    // A task opened by the messageId contract is not read for ACTS on its continuations.
    let id = v["task"]["id"].as_str().unwrap();
    let mut next = message("done", Some(id));
    next["messageId"] = json!(format!("plain-{}", uuid::Uuid::new_v4().simple()));
    let t = s.ok("SendMessage", json!({"message": next})).await["task"].clone();
    assert_ne!(said(&t), "multi-turn complete", "{t}");
}

/// `tck-client-parse` (ACTS §10 as the a2a-itk runner reaches a client): the data part's
/// canned answer is served to the upstream forwarder's A2A client, and the task's artifact is
/// what that client made of it.
async fn client_parse(s: &Server, operation: &str, payload: Value) -> Value {
    let v = s
        .ok(
            "SendMessage",
            json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                "parts": [{"text": "tck-client-parse"},
                          {"data": {"operation": operation, "wire_payload": payload}}]}}),
        )
        .await;
    let t = &v["task"];
    assert_eq!(state(t), "TASK_STATE_COMPLETED", "{t}");
    t["artifacts"][0]["parts"][0]["data"].clone()
}

#[tokio::test]
async fn the_client_parse_behaviour_reports_what_our_a2a_client_made_of_a_canned_answer() {
    let s = Server::start().await;
    // A send answered with a task: the discriminator kept, the task as parsed.
    let parsed = client_parse(
        &s,
        "send_message",
        json!({"jsonrpc": "2.0", "id": "fixed", "result": {"task": {"id": "up-1", "contextId": "uc-1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {"messageId": "q",
                "role": "ROLE_AGENT", "parts": [{"text": "which one?"}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "x"}]}]}}}),
    )
    .await;
    assert_eq!(parsed["task"]["id"], "up-1", "{parsed}");
    assert_eq!(
        parsed["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    assert_eq!(
        parsed["task"]["status"]["message"]["parts"][0]["text"],
        "which one?"
    );
    assert_eq!(
        parsed["task"]["artifacts"].as_array().map(Vec::len),
        Some(1)
    );
    // A send answered with a message.
    let parsed = client_parse(
        &s,
        "send_message",
        json!({"jsonrpc": "2.0", "id": 1, "result": {"message": {"messageId": "r",
            "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}}),
    )
    .await;
    assert_eq!(parsed["message"]["messageId"], "r", "{parsed}");
    // GetTask: the bare task, history and data parts kept.
    let parsed = client_parse(
        &s,
        "get_task",
        json!({"jsonrpc": "2.0", "id": 1, "result": {"id": "up-2", "contextId": "uc",
            "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "d", "parts": [{"data": {"k": [1, 2]}}]}],
            "history": [{"role": "ROLE_USER", "parts": [{"text": "go"}]},
                        {"role": "ROLE_AGENT", "parts": [{"text": "done"}]}]}}),
    )
    .await;
    assert_eq!(parsed["id"], "up-2", "{parsed}");
    assert_eq!(parsed["artifacts"][0]["parts"][0]["data"]["k"][1], 2);
    assert_eq!(parsed["history"].as_array().map(Vec::len), Some(2));
    // A JSON-RPC error: the one the answer carried, and what the client raised.
    let parsed = client_parse(
        &s,
        "get_task",
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}}),
    )
    .await;
    assert_eq!(parsed["error"]["code"], -32001, "{parsed}");
    assert!(
        parsed["raised"].as_str().is_some_and(|r| !r.is_empty()),
        "{parsed}"
    );
    // A card, as the client reads it; one without a JSON-RPC interface is no agent it can call.
    let parsed = client_parse(
        &s,
        "get_agent_card",
        json!({"name": "Up", "version": "1", "capabilities": {"streaming": true,
            "pushNotifications": false, "extendedAgentCard": true},
            "supportedInterfaces": [{"url": "https://up.example/a2a", "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0"}],
            "skills": [{"id": "s", "name": "S", "description": "d", "tags": []}]}),
    )
    .await;
    assert_eq!(parsed["name"], "Up", "{parsed}");
    assert_eq!(parsed["capabilities"]["streaming"], true);
    assert_eq!(parsed["capabilities"]["pushNotifications"], false);
    assert_eq!(parsed["capabilities"]["extendedAgentCard"], true);
    assert_eq!(parsed["skills"][0]["id"], "s");
    let parsed = client_parse(
        &s,
        "get_agent_card",
        json!({"name": "Rest only", "version": "1", "supportedInterfaces": [
            {"url": "https://up.example/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]}),
    )
    .await;
    assert!(
        parsed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("JSON-RPC")),
        "{parsed}"
    );
    // An answer that is no A2A answer is an error, not a parse.
    let parsed = client_parse(
        &s,
        "get_task",
        json!({"jsonrpc": "2.0", "id": 1, "result": 7}),
    )
    .await;
    assert!(parsed["error"]["message"].is_string(), "{parsed}");
    // Without its request the behaviour fails saying what it needs.
    let t = settled(&s, "tck-client-parse").await;
    assert_eq!(state(&t), "TASK_STATE_FAILED", "{t}");
    assert!(said(&t).contains("wire_payload"), "{t}");
}
