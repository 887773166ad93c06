//! Black-box tests of streaming: `SendStreamingMessage` and `SubscribeToTask` over real sockets,
//! through the binding `TASKLEDGER_TEST_BINDING` names (JSON-RPC SSE by default, HTTP+JSON SSE
//! or gRPC server streaming): what a stream shows and in which order, where it ends, the errors
//! refused before a stream opens, and that a client going away never cancels its task.
//! Resuming, several subscribers, several server processes and keep-alives are in
//! `streaming_resume.rs`.

use reqwest::Method;
use serde_json::{json, Value};
use taskledger_domain::ids::Principal;
use taskledger_tests::stream::{
    self, artifact_texts, check_order, finish_chunked, is_terminal, shape, tag, until_state,
    waiting_task, with_ids, StreamEvent,
};
use taskledger_tests::{test_config, Binding, Server};

/// Every event of a streamed send of one text message, which must open.
async fn streamed(s: &Server, message_id: &str, extra: Value) -> Vec<StreamEvent> {
    s.send_stream(message_id, "stream me", extra)
        .await
        .stream()
        .rest()
        .await
}

fn task_id(e: &StreamEvent) -> String {
    assert_eq!(e.kind(), "task", "the first event is the Task: {}", e.data);
    e.body()["id"].as_str().expect("task id").to_string()
}

/// The status updates and artifact updates of a list, leading SUBMITTED updates left out
/// (whether the creation shows one is not the point here).
fn from_working(events: &[StreamEvent]) -> Vec<String> {
    shape(events)
        .into_iter()
        .skip_while(|k| k == "statusUpdate:TASK_STATE_SUBMITTED")
        .collect()
}

// ------------------------------------------------------------------ the card

#[tokio::test]
async fn the_card_declares_streaming() {
    let s = Server::start().await;
    assert_eq!(s.card().await["capabilities"]["streaming"], true);
}

// ------------------------------------------------------------------ SendStreamingMessage

#[tokio::test]
async fn a_streamed_send_shows_the_task_then_every_update_in_commit_order_then_closes() {
    let s = Server::start().await;
    let mid = format!("tck-stream-artifact-chunked-{}", tag());
    let events = streamed(&s, &mid, json!({})).await;
    let id = task_id(&events[0]);
    check_order(&id, &events);
    let snapshot = events[0].body();
    assert!(
        snapshot["history"]
            .as_array()
            .is_some_and(|h| h.iter().any(|m| m["messageId"] == mid.as_str())),
        "the Task carries the sent message: {snapshot}"
    );
    let last = events.last().unwrap();
    assert_eq!(
        last.state(),
        Some("TASK_STATE_COMPLETED"),
        "{:?}",
        shape(&events)
    );
    // The updates after the Task are the log's from there on: the same as a resume from the
    // very start gives, cut where the Task was taken.
    let all = s.resumed(&id, 0).await;
    check_order(&id, &all);
    assert!(
        all.iter().all(|e| e.kind() != "task"),
        "a resume shows no Task"
    );
    assert_eq!(
        from_working(&all),
        [
            "statusUpdate:TASK_STATE_WORKING",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate:TASK_STATE_COMPLETED"
        ]
    );
    let tail = &all[all.len() - (events.len() - 1)..];
    stream::assert_same(&events[1..], tail, "the updates after the Task");
    if let Some(snap) = events[0].id {
        stream::assert_same(
            &events[1..],
            &stream::after(&all, snap),
            "the Task's SSE id",
        );
    }
    // The chunks as stored: the first opens the artifact, the second appends and is the last.
    let chunks: Vec<&StreamEvent> = all
        .iter()
        .filter(|e| e.kind() == "artifactUpdate")
        .collect();
    let (one, two) = (chunks[0].body(), chunks[1].body());
    assert_eq!(artifact_texts(chunks[0]), ["chunk-1 "]);
    assert_eq!(artifact_texts(chunks[1]), ["chunk-2"]);
    assert_ne!(one["append"], true, "{one}");
    assert_ne!(one["lastChunk"], true, "{one}");
    assert_eq!(two["append"], true, "{two}");
    assert_eq!(two["lastChunk"], true, "{two}");
    assert_eq!(one["artifact"]["artifactId"], two["artifact"]["artifactId"]);
    // And the task the stream ended on is the task as stored.
    let t = s.ok("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"], last.body()["status"]);
    let stored: String = t["artifacts"][0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(stored, "chunk-1 chunk-2");
}

#[tokio::test]
async fn a_streamed_send_ends_at_an_interruption_and_the_task_waits() {
    let s = Server::start().await;
    for (prefix, state) in [
        ("tck-input-required", "TASK_STATE_INPUT_REQUIRED"),
        ("tck-auth-required", "TASK_STATE_AUTH_REQUIRED"),
    ] {
        let events = streamed(&s, &format!("{prefix}-{}", tag()), json!({})).await;
        let id = task_id(&events[0]);
        check_order(&id, &events);
        assert_eq!(
            events.last().unwrap().state(),
            Some(state),
            "{:?}",
            shape(&events)
        );
        assert!(
            shape(&events).contains(&"statusUpdate:TASK_STATE_WORKING".to_string()),
            "{:?}",
            shape(&events)
        );
        let t = s.ok("GetTask", json!({"id": id})).await;
        assert_eq!(t["status"]["state"], state);
    }
}

#[tokio::test]
async fn a_task_completed_at_once_streams_its_task_and_the_completion() {
    let s = Server::start().await;
    let events = streamed(&s, &format!("tck-stream-002-{}", tag()), json!({})).await;
    let id = task_id(&events[0]);
    check_order(&id, &events);
    assert_eq!(
        events.last().unwrap().state(),
        Some("TASK_STATE_COMPLETED"),
        "{:?}",
        shape(&events)
    );
}

#[tokio::test]
async fn a_direct_message_reply_is_one_message_event() {
    let s = Server::start().await;
    let before = s.total_tasks().await;
    let events = streamed(&s, &format!("tck-message-response-{}", tag()), json!({})).await;
    assert_eq!(shape(&events), ["message"], "{events:?}");
    let m = events[0].body();
    assert_eq!(m["role"], "ROLE_AGENT");
    assert_eq!(m["parts"][0]["text"], "Direct message response");
    assert_eq!(
        s.total_tasks().await,
        before,
        "a direct reply makes no task"
    );
}

#[tokio::test]
async fn a_streamed_send_to_a_waiting_task_streams_that_task_from_its_new_message() {
    let s = Server::start().await;
    let tag = tag();
    let id = waiting_task(&s, &tag).await;
    let mid = format!("tck-stream-artifact-chunked-{tag}");
    let events = streamed(&s, &mid, json!({"taskId": id})).await;
    assert_eq!(task_id(&events[0]), id);
    check_order(&id, &events);
    let kinds = shape(&events[1..]);
    assert!(
        !kinds.contains(&"statusUpdate:TASK_STATE_INPUT_REQUIRED".to_string()),
        "nothing of the earlier turn: {kinds:?}"
    );
    assert_eq!(kinds.last().unwrap(), "statusUpdate:TASK_STATE_COMPLETED");
    let texts: Vec<String> = events.iter().flat_map(artifact_texts).collect();
    assert_eq!(texts, ["chunk-1 ", "chunk-2"], "{kinds:?}");
}

// ------------------------------------------------------------------ SubscribeToTask

#[tokio::test]
async fn a_subscription_starts_with_the_task_and_stays_open_across_interruptions() {
    let s = Server::start().await;
    let tag = tag();
    let id = waiting_task(&s, &tag).await;
    let mut sub = s.subscribe(&id).await;
    let first = sub.expect().await;
    assert_eq!(task_id(&first), id);
    assert_eq!(first.state(), Some("TASK_STATE_INPUT_REQUIRED"));
    // The task waits: nothing comes, and the stream stays open.
    sub.stays_open_for(std::time::Duration::from_millis(300))
        .await;
    // Answered, it works and waits again: both are shown, and the stream stays open.
    stream::answer(&s, &id, &tag, 1).await;
    let round = until_state(&mut sub, "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(
        from_working(&round),
        [
            "statusUpdate:TASK_STATE_WORKING",
            "statusUpdate:TASK_STATE_INPUT_REQUIRED"
        ]
    );
    sub.stays_open_for(std::time::Duration::from_millis(200))
        .await;
    finish_chunked(&s, &id, &tag).await;
    let end = sub.rest().await;
    assert_eq!(
        from_working(&end),
        [
            "statusUpdate:TASK_STATE_WORKING",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate:TASK_STATE_COMPLETED"
        ]
    );
    let all: Vec<StreamEvent> = [vec![first], round, end].concat();
    check_order(&id, &all);
}

#[tokio::test]
async fn a_subscriber_sees_the_cancel_and_the_stream_ends() {
    let s = Server::start().await;
    let id = waiting_task(&s, &tag()).await;
    let mut sub = s.subscribe(&id).await;
    sub.expect().await;
    let t = s.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_CANCELED");
    let rest = sub.rest().await;
    assert_eq!(
        shape(&rest),
        ["statusUpdate:TASK_STATE_CANCELED"],
        "{rest:?}"
    );
}

#[tokio::test]
async fn a_subscription_to_a_working_task_ends_when_it_completes() {
    let s = Server::start().await;
    let message = json!({"messageId": format!("test-resubscribe-message-id-{}", tag()),
                         "role": "ROLE_USER", "parts": [{"text": "work a while"}]});
    let id = s.start_task(message).await;
    s.wait_state(&id, "TASK_STATE_WORKING").await;
    let events = s.subscribe(&id).await.rest().await;
    assert_eq!(task_id(&events[0]), id);
    check_order(&id, &events);
    let kinds = shape(&events);
    assert_eq!(
        kinds.last().unwrap(),
        "statusUpdate:TASK_STATE_COMPLETED",
        "{kinds:?}"
    );
    assert!(events[..events.len() - 1]
        .iter()
        .all(|e| !e.state().is_some_and(is_terminal)));
}

// ------------------------------------------------------------------ going away

#[tokio::test]
async fn a_client_that_disconnects_never_cancels_the_task() {
    let s = Server::start().await;
    // The streamed send, dropped after its first event.
    let mut sent = s
        .send_stream(
            &format!("tck-delayed-complete-{}", tag()),
            "slow",
            json!({}),
        )
        .await
        .stream();
    let id = task_id(&sent.expect().await);
    drop(sent);
    // A subscriber dropped while the task works.
    let message = json!({"messageId": format!("test-resubscribe-message-id-{}", tag()),
                         "role": "ROLE_USER", "parts": [{"text": "work a while"}]});
    let other = s.start_task(message).await;
    s.wait_state(&other, "TASK_STATE_WORKING").await;
    let mut sub = s.subscribe(&other).await;
    sub.expect().await;
    drop(sub);
    let t = s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "Delayed task completed"
    );
    s.wait_state(&other, "TASK_STATE_COMPLETED").await;
}

// ------------------------------------------------------------------ refused before the stream

#[tokio::test]
async fn errors_found_before_the_stream_are_plain_error_responses() {
    let s = Server::start().await;
    let unknown = format!("no-such-task-{}", tag());
    // Unknown tasks.
    let sub = s.stream("SubscribeToTask", json!({"id": unknown})).await;
    assert_eq!(sub.code().await, -32001, "subscribe to an unknown task");
    let v = s
        .send_stream(&format!("m-{}", tag()), "x", json!({"taskId": unknown}))
        .await;
    assert_eq!(v.code().await, -32001, "stream to an unknown task");
    // A message without parts.
    let empty =
        json!({"message": {"messageId": format!("m-{}", tag()), "role": "ROLE_USER", "parts": []}});
    assert_eq!(
        s.stream("SendStreamingMessage", empty).await.code().await,
        -32602
    );
    // A finished task: no subscription without a position.
    let done = s
        .send_task(&format!("tck-complete-task-{}", tag()), "x")
        .await;
    let done = done["id"].as_str().unwrap();
    let sub = s.stream("SubscribeToTask", json!({"id": done})).await;
    assert_eq!(sub.code().await, -32004, "subscribe to a terminal task");
    // A message to it is refused as SendMessage refuses it.
    let params = json!({"message": {"messageId": format!("m-{}", tag()), "role": "ROLE_USER",
                                    "parts": [{"text": "more"}], "taskId": done}});
    let unary = s.err("SendMessage", params.clone()).await;
    assert_eq!(
        s.stream("SendStreamingMessage", params).await.code().await,
        unary
    );
    // Nothing was made on the way.
    assert_eq!(s.total_tasks().await, 1);
}

#[tokio::test]
async fn a_malformed_last_event_id_is_invalid_params() {
    let s = Server::start().await;
    let waiting = waiting_task(&s, &tag()).await;
    let done = stream::long_task(&s, 2).await;
    let last = with_ids(&s).resumed(&done, 0).await.last().unwrap().seq();
    for id in [&waiting, &done] {
        for bad in [
            "abc".to_string(),
            "-1".to_string(),
            "1.5".to_string(),
            "18446744073709551616".to_string(),
            (last + 1000).to_string(),
        ] {
            let v = s.resume(id, &bad).await.refused().await;
            assert_eq!(
                taskledger_tests::error_code(&v),
                -32602,
                "Last-Event-ID {bad:?} on {id}: {v}"
            );
        }
    }
}

#[tokio::test]
async fn another_principals_task_cannot_be_streamed() {
    let mut config = test_config();
    config.tokens = [("alice-token", "alice"), ("bob-token", "bob")]
        .into_iter()
        .map(|(t, u)| (t.to_string(), Principal::new("acme", u).unwrap()))
        .collect();
    let server = Server::start_with(config).await;
    let (alice, bob) = (server.as_user("alice-token"), server.as_user("bob-token"));
    let id = waiting_task(&alice, &tag()).await;
    let sub = bob.stream("SubscribeToTask", json!({"id": id})).await;
    assert_eq!(sub.code().await, -32001);
    assert_eq!(bob.resume(&id, "0").await.code().await, -32001);
    let v = bob
        .send_stream(&format!("m-{}", tag()), "mine now", json!({"taskId": id}))
        .await;
    assert_eq!(v.code().await, -32001);
    // Alice's own subscription works, and Bob's attempts left her task as it was.
    let mut mine = alice.subscribe(&id).await;
    let first = mine.expect().await;
    assert_eq!(first.state(), Some("TASK_STATE_INPUT_REQUIRED"));
    let texts: Vec<&str> = first.body()["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect();
    assert!(!texts.contains(&"mine now"), "{texts:?}");
}

// ------------------------------------------------------------------ per binding

#[tokio::test]
async fn http_json_subscribes_by_get_and_by_post_with_or_without_a_body() {
    let s = Server::start().await.over(Binding::Rest);
    let id = waiting_task(&s, &tag()).await;
    let path = format!("/tasks/{id}:subscribe");
    for (method, body) in [
        (Method::GET, None),
        (Method::POST, None),
        (Method::POST, Some(b"{}".to_vec())),
    ] {
        let what = format!("{method} {path} {body:?}");
        let mut sub = s.stream_rest(method, &path, body, &[]).await.stream();
        assert_eq!(sub.content_type, "text/event-stream", "{what}");
        let first = sub.expect().await;
        assert_eq!(task_id(&first), id, "{what}");
        assert!(first.id.is_some(), "{what}: an SSE id");
    }
    // And refusals carry the table's HTTP status (checked by the harness's translation).
    let missing = s
        .stream_rest(Method::GET, "/tasks/no-such-task:subscribe", None, &[])
        .await;
    assert_eq!(missing.code().await, -32001);
}

#[tokio::test]
async fn json_rpc_streams_on_the_root_path_too() {
    let s = Server::start().await;
    let params = json!({"message": {"messageId": format!("tck-stream-002-{}", tag()),
                                    "role": "ROLE_USER", "parts": [{"text": "x"}]}});
    let mut got = Vec::new();
    for path in ["/", "/a2a", "/a2a/"] {
        let events = s
            .stream_jsonrpc(path, "SendStreamingMessage", params.clone(), &[])
            .await
            .stream()
            .rest()
            .await;
        got.push(shape(&events));
        assert!(events.iter().all(|e| e.id.is_some()), "{path}: SSE ids");
    }
    assert!(got.iter().all(|g| g == &got[0]), "{got:?}");
    assert_eq!(got[0].last().unwrap(), "statusUpdate:TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn every_sse_event_carries_its_sequence_as_its_id() {
    let s = Server::start().await;
    if s.binding.is_grpc() {
        return; // no SSE: gRPC messages carry no id
    }
    let events = streamed(
        &s,
        &format!("tck-stream-artifact-chunked-{}", tag()),
        json!({}),
    )
    .await;
    assert!(events.iter().all(|e| e.id.is_some()), "{events:?}");
    let id = task_id(&events[0]);
    // The Task's id is the position its snapshot was taken at: resuming there gives the rest.
    let rest = s.resumed(&id, events[0].seq()).await;
    stream::assert_same(&rest, &events[1..], "resumed at the Task's id");
}
