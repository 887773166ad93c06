//! Abuse limits on the local server: each principal's request rate and the tasks it may create
//! a minute; over either, 429 with `Retry-After` and the binding's error shape, others unaffected.

use reqwest::StatusCode;
use serde_json::{json, Value};
use taskledger_tests::{test_config, Server};

/// Status, body and challenge of ListTasks over JSON-RPC as `token`.
async fn list(s: &Server, token: &str) -> (StatusCode, Value, Option<String>) {
    let r = s
        .client
        .post(format!("{}/a2a", s.base))
        .header("A2A-Version", "1.0")
        .header("Authorization", format!("Bearer {token}"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .expect("sent");
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (r.status(), r.json().await.unwrap_or(Value::Null), retry)
}

fn two_principals() -> taskledger_local::Config {
    let mut config = test_config();
    config.tokens = std::collections::HashMap::from([
        (
            "a".to_string(),
            taskledger_domain::ids::Principal::new("acme", "alice").unwrap(),
        ),
        (
            "b".to_string(),
            taskledger_domain::ids::Principal::new("acme", "bob").unwrap(),
        ),
    ]);
    config
}

#[tokio::test]
async fn a_principal_over_its_rate_is_told_to_come_back_and_others_are_not() {
    let mut config = two_principals();
    // 5 a second, bursts of 10: the burst passes, the next one is refused.
    config.rate_limit = taskledger_app::limits::RateLimit::per_second(5);
    let s = Server::start_with(config).await;
    for i in 0..10 {
        let (status, body, _) = list(&s, "a").await;
        assert_eq!(status, StatusCode::OK, "request {i}: {body}");
    }
    let r = s
        .client
        .post(format!("{}/a2a", s.base))
        .header("A2A-Version", "1.0")
        .header("Authorization", "Bearer a")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()["retry-after"], "1");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32029);
    assert_eq!(v["error"]["data"][0]["reason"], "RATE_LIMITED");
    // HTTP+JSON: 429 in its error shape.
    let r = s
        .client
        .get(format!("{}/a2a/rest/tasks", s.base))
        .header("A2A-Version", "1.0")
        .header("Authorization", "Bearer a")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["status"], "RESOURCE_EXHAUSTED", "{v}");
    // Bob has his own bucket.
    let (status, _, _) = list(&s, "b").await;
    assert_eq!(status, StatusCode::OK);
    // A second later Alice may again.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (status, _, _) = list(&s, "a").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_principal_over_its_tasks_a_minute_is_refused_new_tasks_but_may_go_on_with_its_own() {
    let mut config = two_principals();
    config.task_limit = taskledger_app::limits::RateLimit::tasks_per_minute(2);
    let s = Server::start_with(config).await;
    let alice = s.as_user("a");
    let first = alice.send_task("tck-input-required-l1", "one").await;
    alice.send_task("tck-complete-task-l2", "two").await;
    // The third new task in the minute is refused, and creates nothing.
    let v = alice
        .send("tck-complete-task-l3", "three", json!({}), json!({}))
        .await;
    assert_eq!(v["error"]["data"][0]["reason"], "RATE_LIMITED", "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("2 new tasks a minute"));
    assert_eq!(alice.total_tasks().await, 2);
    // A message to a task she has is not a new task.
    let id = first["id"].as_str().unwrap();
    alice.wait_state(id, "TASK_STATE_INPUT_REQUIRED").await;
    let v = alice
        .send(
            "tck-complete-task-l4",
            "go on",
            json!({"taskId": id}),
            json!({}),
        )
        .await;
    assert!(v.get("error").is_none(), "{v}");
    // Bob has his own allowance.
    s.as_user("b")
        .send_task("tck-complete-task-b1", "bob's")
        .await;
}

#[tokio::test]
async fn a_principal_holds_at_most_its_streams_and_a_closed_one_frees_its_place() {
    let mut config = two_principals();
    config.max_streams = Some(2);
    let s = Server::start_with(config).await;
    let alice = s.as_user("a");
    let task = alice.send_task("tck-input-required-st", "wait").await;
    let id = task["id"].as_str().unwrap();
    alice.wait_state(id, "TASK_STATE_INPUT_REQUIRED").await;
    // Two streams open (each reads its first event, the task).
    let mut one = alice.subscribe(id).await;
    let mut two = alice.subscribe(id).await;
    assert!(one.next().await.is_some());
    assert!(two.next().await.is_some());
    // A third is refused, and a refused SendStreamingMessage takes no message in.
    let taskledger_tests::stream::Opened::Refused(e) =
        alice.stream("SubscribeToTask", json!({"id": id})).await
    else {
        panic!("a third stream opened")
    };
    assert_eq!(e["error"]["data"][0]["reason"], "RATE_LIMITED", "{e}");
    let before = alice.ok("GetTask", json!({"id": id})).await["history"]
        .as_array()
        .map(Vec::len);
    let msg = json!({"message": {"messageId": "m-refused", "role": "ROLE_USER", "taskId": id,
                                 "parts": [{"text": "not taken"}]}});
    assert!(matches!(
        alice.stream("SendStreamingMessage", msg).await,
        taskledger_tests::stream::Opened::Refused(_)
    ));
    let after = alice.ok("GetTask", json!({"id": id})).await["history"]
        .as_array()
        .map(Vec::len);
    assert_eq!(before, after, "nothing entered history");
    // Bob has his own places.
    let mut bobs = s
        .as_user("b")
        .send_task("tck-input-required-bob", "bob")
        .await;
    let bob_id = bobs["id"].take();
    s.as_user("b")
        .wait_state(bob_id.as_str().unwrap(), "TASK_STATE_INPUT_REQUIRED")
        .await;
    let mut bob_stream = s.as_user("b").subscribe(bob_id.as_str().unwrap()).await;
    assert!(bob_stream.next().await.is_some());
    // Closing one of Alice's frees its place (the server sees the client go).
    drop(one);
    let mut reopened = None;
    for _ in 0..100 {
        if let taskledger_tests::stream::Opened::Stream(st) =
            alice.stream("SubscribeToTask", json!({"id": id})).await
        {
            reopened = Some(st);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(reopened.is_some(), "a closed stream's place comes back");
}

/// Sends `head` and the first `sent` bytes of `body` at once, the rest after `pause` (never,
/// with `None`); the status line of the answer.
async fn slow_post(
    base: &str,
    body: &str,
    sent: usize,
    pause: Option<std::time::Duration>,
) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST /a2a HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\n\
         Authorization: Bearer a\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(&body.as_bytes()[..sent]).await.unwrap();
    if let Some(p) = pause {
        tokio::time::sleep(p).await;
        tcp.write_all(&body.as_bytes()[sent..]).await.unwrap();
    }
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        tcp.read_to_end(&mut answer),
    )
    .await;
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_body_that_stalls_is_answered_408_and_one_in_time_is_served() {
    let mut config = two_principals();
    config.body_read_timeout = std::time::Duration::from_millis(400);
    let s = Server::start_with(config).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}).to_string();
    // Within the bound: served.
    let status = slow_post(
        &s.base,
        &body,
        10,
        Some(std::time::Duration::from_millis(100)),
    )
    .await;
    assert!(status.contains(" 200"), "{status}");
    // Stalled past it: 408, and the connection is let go.
    let status = slow_post(&s.base, &body, 10, None).await;
    assert!(status.contains(" 408"), "{status}");
}

/// Sends the first `sent` bytes of a request's headers, the rest after `pause` (never, with
/// `None`); what came back, and how long the server took to answer or let go.
async fn slow_headers(
    base: &str,
    sent: usize,
    pause: Option<std::time::Duration>,
) -> (String, std::time::Duration) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\n\
         Connection: close\r\n\r\n"
    );
    let started = std::time::Instant::now();
    tcp.write_all(&head.as_bytes()[..sent]).await.unwrap();
    if let Some(p) = pause {
        tokio::time::sleep(p).await;
        tcp.write_all(&head.as_bytes()[sent..]).await.unwrap();
    }
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        tcp.read_to_end(&mut answer),
    )
    .await;
    (
        String::from_utf8_lossy(&answer)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
        started.elapsed(),
    )
}

#[tokio::test]
async fn headers_that_trickle_past_the_bound_lose_the_connection_and_ones_in_time_are_served() {
    let mut config = two_principals();
    config.header_read_timeout = std::time::Duration::from_millis(500);
    let s = Server::start_with(config).await;
    // Within the bound: served.
    let (status, _) = slow_headers(&s.base, 20, Some(std::time::Duration::from_millis(150))).await;
    assert!(status.contains(" 200"), "{status}");
    // Stalled past it: the server lets the connection go at the bound, long before the
    // client would give up.
    let (status, took) = slow_headers(&s.base, 20, None).await;
    assert!(!status.contains(" 200"), "{status}");
    assert!(
        took < std::time::Duration::from_secs(5),
        "held for {took:?}"
    );
}

/// The status line of a GET of the card with one extra header of `bytes` bytes.
async fn with_header_of(base: &str, bytes: usize) -> String {
    let r = reqwest::Client::new()
        .get(format!("{base}/.well-known/agent-card.json"))
        .header("X-Padding", "p".repeat(bytes))
        .send()
        .await;
    match r {
        Ok(r) => r.status().as_u16().to_string(),
        Err(e) => format!("error: {e}"),
    }
}

#[tokio::test]
async fn headers_up_to_the_bound_are_read_and_larger_ones_are_refused_431() {
    let s = Server::start_with(two_principals()).await;
    let bound = taskledger_local::MAX_HEADER_BYTES;
    // The request line and the other headers take a few hundred bytes of the bound.
    assert_eq!(with_header_of(&s.base, bound - 1024).await, "200");
    assert_eq!(with_header_of(&s.base, bound + 1).await, "431");
}
