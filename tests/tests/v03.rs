//! A2A 0.3 served beside 1.0 (issue 44, ADR 031), black-box over real sockets: the version
//! rule and its refusals, one task across versions (made over 0.3 and read, streamed, resumed,
//! listed and cancelled over 1.0 and 1.1, and the reverse), push configs delivering in the
//! shape of the version they were registered over, extensions, sharing and idempotency through
//! 0.3, the merged card and the 0.3 extended card, and the 0.3 gRPC service. The official 0.3
//! clients' own runs are `tests/python03` and `tests/js03` (scripts/test.sh). Runs on
//! `TASKLEDGER_TEST_STORE` (SQLite, or DynamoDB on the emulator).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use taskledger_domain::ids::Principal;
use taskledger_local::Storage;
use taskledger_tests::receiver::{Receiver, Script};
use taskledger_tests::{test_config, Server};

/// A JSON-RPC call as a 0.3 client makes it: no `A2A-Version` (unless `extra` says one).
async fn rpc03(s: &Server, method: &str, params: Value, extra: &[(&str, &str)]) -> Value {
    let mut headers = vec![("Content-Type", "application/json")];
    headers.extend_from_slice(extra);
    let body = json!({"jsonrpc": "2.0", "id": "r-1", "method": method, "params": params});
    let (status, v) = s
        .post_raw("/a2a", serde_json::to_vec(&body).unwrap(), &headers)
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v
}

fn message03(id: &str, text: &str, task: Option<&str>) -> Value {
    let mut m = json!({"kind": "message", "messageId": id, "role": "user",
        "parts": [{"kind": "text", "text": text}]});
    if let Some(t) = task {
        m["taskId"] = json!(t);
    }
    m
}

/// The events of an SSE response (`data:` lines as JSON), read until it closes or `within`.
async fn sse_events(mut resp: reqwest::Response, within: Duration) -> Vec<(Option<u64>, Value)> {
    let mut buf = String::new();
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => buf.push_str(&String::from_utf8_lossy(&chunk)),
            Ok(Ok(None)) | Ok(Err(_)) | Err(_) => break,
        }
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let id = block
                .lines()
                .find_map(|l| l.strip_prefix("id:"))
                .and_then(|i| i.trim().parse().ok());
            if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data:")) {
                out.push((id, serde_json::from_str(data.trim()).unwrap_or(Value::Null)));
            }
        }
    }
    out
}

async fn stream03(
    s: &Server,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> Vec<(Option<u64>, Value)> {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut req = s
        .client
        .post(format!("{}/a2a", s.base))
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&body).unwrap());
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    sse_events(req.send().await.unwrap(), Duration::from_secs(10)).await
}

// ---- the version rule, and what is refused ----

#[tokio::test]
async fn each_line_is_served_by_its_methods_and_mixing_them_is_refused() {
    let s = Server::start_with(test_config()).await;
    // 0.3 with no version, or 0.3 said aloud.
    for extra in [vec![], vec![("A2A-Version", "0.3")]] {
        let v = rpc03(
            &s,
            "message/send",
            json!({"message": message03("m-1", "hi", None)}),
            &extra,
        )
        .await;
        assert_eq!(v["result"]["kind"], "task", "{v}");
        assert_eq!(v["id"], "r-1", "the id is echoed with its type");
    }
    // A 0.3 method said to be 1.0, and a 1.0 method with no version: VersionNotSupported in
    // the caller's line, naming what is served.
    let v = rpc03(
        &s,
        "message/send",
        json!({"message": message03("m-2", "hi", None)}),
        &[("A2A-Version", "1.0")],
    )
    .await;
    assert_eq!(v["error"]["code"], -32009, "{v}");
    let v = rpc03(
        &s,
        "SendMessage",
        json!({"message": {"messageId": "m-3", "role": "ROLE_USER", "parts": [{"text": "x"}]}}),
        &[],
    )
    .await;
    assert_eq!(v["error"]["code"], -32009, "{v}");
    assert_eq!(
        v["error"]["data"][0]["metadata"]["supportedVersions"],
        "0.3, 1.0, 1.1"
    );
    // 1.0 shapes in a 0.3 method, unknown kinds: InvalidParams naming the field, nothing kept.
    let before = s.total_tasks().await;
    for (params, field) in [
        (
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}),
            "params.message.role",
        ),
        (
            json!({"message": {"messageId": "m", "role": "user", "parts": [{"url": "https://x"}]}}),
            "params.message.parts[0]",
        ),
        (
            json!({"message": {"messageId": "m", "role": "user", "parts": [{"kind": "image"}]}}),
            "params.message.parts[0].kind",
        ),
        (
            json!({"message": {"kind": "task", "messageId": "m", "role": "user", "parts": []}}),
            "params.message.kind",
        ),
    ] {
        let v = rpc03(&s, "message/send", params, &[]).await;
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(field),
            "{field}: {v}"
        );
    }
    // A file whose type the card does not accept: 0.3's ContentTypeNotSupportedError.
    let file = json!({"kind": "file", "file": {"name": "t.xyz", "bytes": "dGVzdA==",
        "mimeType": "application/x-totally-unsupported-format"}});
    let mut m = message03("m-file", "see", None);
    m["parts"].as_array_mut().unwrap().push(file);
    let v = rpc03(&s, "message/send", json!({"message": m}), &[]).await;
    assert_eq!(v["error"]["code"], -32005, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Incompatible content type"),
        "{v}"
    );
    assert_eq!(s.total_tasks().await, before, "nothing was committed");
    // 0.3 has no task listing.
    let v = rpc03(&s, "tasks/list", json!({}), &[]).await;
    assert_eq!(v["error"]["code"], -32601);
    // A 0.3 stream's refusal comes as an event of the stream.
    let events = stream03(&s, "tasks/resubscribe", json!({"id": "no-such-task"}), &[]).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].1["error"]["code"], -32001);
}

// ---- one task, any version ----

#[tokio::test]
async fn a_task_made_over_0_3_is_read_streamed_resumed_listed_and_cancelled_over_1_x() {
    let s = Server::start_with(test_config()).await;
    let v = rpc03(&s, "message/send",
        json!({"message": message03("tck-input-required-1", "book it", None), "configuration": {"blocking": true}}), &[]).await;
    let task = &v["result"];
    assert_eq!(task["status"]["state"], "input-required", "{v}");
    let id = task["id"].as_str().unwrap().to_string();
    // 1.0 and 1.1 read it.
    let one = s.ok("GetTask", json!({"id": id})).await;
    assert_eq!(one["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(one["history"][0]["parts"][0]["text"], "book it");
    let draft = s
        .call_with("GetTask", json!({"id": id}), &[("A2A-Version", "1.1")])
        .await;
    // int64 in ProtoJSON: a string
    let generation = &draft["result"]["generation"];
    assert!(
        generation
            .as_str()
            .and_then(|g| g.parse::<u64>().ok())
            .is_some_and(|g| g >= 1),
        "{draft}"
    );
    let listed = s.ok("ListTasks", json!({"pageSize": 10})).await;
    assert!(listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["id"] == id.as_str()));
    // 1.0 subscribes and, cut off, resumes from an event id (Last-Event-ID).
    let mut sub = s.subscribe(&id).await;
    let first = sub.expect().await;
    assert_eq!(first.kind(), "task");
    drop(sub);
    rpc03(
        &s,
        "message/send",
        json!({"message": message03("tck-input-required-2", "more", Some(&id)),
        "configuration": {"blocking": true}}),
        &[],
    )
    .await;
    let mut resumed = s.resume(&id, &first.seq().to_string()).await.stream();
    let next = resumed.expect().await;
    assert_eq!(
        next.kind(),
        "statusUpdate",
        "what followed the id, and nothing before it"
    );
    assert!(next.seq() > first.seq());
    drop(resumed);
    // 1.0 cancels it; 0.3 sees it canceled.
    let canceled = s.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let v = rpc03(&s, "tasks/get", json!({"id": id, "historyLength": 1}), &[]).await;
    assert_eq!(v["result"]["status"]["state"], "canceled", "{v}");
    assert_eq!(v["result"]["history"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_task_made_over_1_0_is_read_streamed_and_cancelled_over_0_3() {
    let s = Server::start_with(test_config()).await;
    let task = s.send_task("tck-input-required-3", "hello").await;
    let id = task["id"].as_str().unwrap().to_string();
    let v = rpc03(&s, "tasks/get", json!({"id": id}), &[]).await;
    assert_eq!(v["result"]["kind"], "task");
    assert_eq!(v["result"]["history"][0]["role"], "user");
    assert_eq!(
        v["result"]["history"][0]["parts"][0],
        json!({"kind": "text", "text": "hello"})
    );
    // 0.3 answers it by stream: the task first, updates with `kind`, `final` where it ends.
    let events = stream03(
        &s,
        "message/stream",
        json!({"message": message03("tck-input-required-4", "answer", Some(&id))}),
        &[],
    )
    .await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|(_, e)| e["result"]["kind"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(kinds.first(), Some(&"task"), "{events:?}");
    let last = &events.last().unwrap().1["result"];
    assert_eq!(
        (last["kind"].as_str(), last["final"].as_bool()),
        (Some("status-update"), Some(true)),
        "{last}"
    );
    assert!(events.iter().all(|(_, e)| e["id"] == 7));
    // 0.3 resubscribes to the live task (its Task first), and cancels it.
    let body =
        json!({"jsonrpc": "2.0", "id": 8, "method": "tasks/resubscribe", "params": {"id": id}});
    let resp = s
        .client
        .post(format!("{}/a2a", s.base))
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .send()
        .await
        .unwrap();
    let reader = tokio::spawn(sse_events(resp, Duration::from_secs(10)));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let v = rpc03(&s, "tasks/cancel", json!({"id": id}), &[]).await;
    assert_eq!(v["result"]["status"]["state"], "canceled", "{v}");
    let seen = reader.await.unwrap();
    assert_eq!(seen[0].1["result"]["kind"], "task");
    let end = &seen.last().unwrap().1["result"];
    assert_eq!(
        (end["status"]["state"].as_str(), end["final"].as_bool()),
        (Some("canceled"), Some(true)),
        "{seen:?}"
    );
    // 0.3 over HTTP+JSON reads it too, in its own ProtoJSON.
    let r = s
        .client
        .get(format!("{}/a2a/rest/v1/tasks/{id}", s.base))
        .send()
        .await
        .unwrap();
    let t: Value = r.json().await.unwrap();
    assert_eq!(t["status"]["state"], "TASK_STATE_CANCELLED", "{t}");
    assert_eq!(t["history"][0]["content"][0]["text"], "hello");
}

// ---- push in the version a config was registered over ----

#[tokio::test]
async fn each_webhook_receives_the_shape_of_its_version_in_order() {
    let mut config = test_config();
    // On DynamoDB, pushes go through the serverless path: the stream relay and the SQS queues.
    if let Storage::Dynamo { pollers, .. } = &mut config.storage {
        *pollers = true;
    }
    let s = Server::start_with(config).await;
    let task = s.send_task("tck-input-required-5", "hi").await;
    let id = task["id"].as_str().unwrap().to_string();
    let (hook03, hook10) = (
        Receiver::start(Script::Always(200)).await,
        Receiver::start(Script::Always(200)).await,
    );
    let v = rpc03(
        &s,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": id, "pushNotificationConfig": {"url": hook03.url, "token": "tok-03"}}),
        &[],
    )
    .await;
    assert_eq!(
        v["result"]["pushNotificationConfig"]["id"],
        id.as_str(),
        "0.3: a config without an id is named after its task: {v}"
    );
    s.ok(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "one", "url": hook10.url}),
    )
    .await;
    // 0.3 reads both, wrapped; get without a config id is the task's own.
    let list = rpc03(
        &s,
        "tasks/pushNotificationConfig/list",
        json!({"id": id}),
        &[],
    )
    .await;
    assert_eq!(list["result"].as_array().unwrap().len(), 2, "{list}");
    let got = rpc03(
        &s,
        "tasks/pushNotificationConfig/get",
        json!({"id": id}),
        &[],
    )
    .await;
    assert_eq!(
        got["result"]["pushNotificationConfig"]["url"],
        hook03.url.as_str()
    );
    rpc03(
        &s,
        "message/send",
        json!({"message": message03("tck-input-required-6", "more", Some(&id)),
        "configuration": {"blocking": true}}),
        &[],
    )
    .await;
    s.ok("CancelTask", json!({"id": id})).await;
    hook03
        .wait_for(Duration::from_secs(10), |r| {
            r.iter().any(|d| d.body.contains("\"canceled\""))
        })
        .await;
    hook10
        .wait_for(Duration::from_secs(10), |r| {
            r.iter().any(|d| d.body.contains("TASK_STATE_CANCELED"))
        })
        .await;
    let d03 = hook03.unique();
    assert!(
        d03.iter()
            .all(|d| d.json()["kind"] == "task" && d.json()["id"] == id.as_str()),
        "the 0.3 Task"
    );
    assert!(d03
        .iter()
        .all(|d| d.header("x-a2a-notification-token") == Some("tok-03")));
    assert!(d03
        .iter()
        .all(|d| d.header("content-type") == Some("application/json")));
    let states: Vec<String> = d03
        .iter()
        .map(|d| {
            d.json()["status"]["state"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(
        states.last().map(String::as_str),
        Some("canceled"),
        "in order: {states:?}"
    );
    let seqs: Vec<u64> = d03.iter().map(|d| d.seq()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(
        hook10
            .unique()
            .iter()
            .all(|d| d.json().get("statusUpdate").is_some()
                || d.json().get("artifactUpdate").is_some()),
        "1.0: a StreamResponse"
    );
    // Deleting over 0.3 answers null and ends its deliveries.
    let v = rpc03(
        &s,
        "tasks/pushNotificationConfig/delete",
        json!({"id": id, "pushNotificationConfigId": id}),
        &[],
    )
    .await;
    assert!(v.get("result").is_some() && v["result"].is_null(), "{v}");
}

// ---- the extensions, identity, sharing and idempotency through 0.3 ----

#[tokio::test]
async fn extensions_sharing_and_idempotency_work_the_same_through_0_3() {
    let mut config = test_config();
    config.tokens = [("a", "alice"), ("b", "bob"), ("m", "mallory")]
        .into_iter()
        .map(|(t, p)| (t.to_string(), Principal::new("acme", p).unwrap()))
        .collect();
    let s = Server::start_with(config).await;
    let (alice, bob, mallory) = (s.as_user("a"), s.as_user("b"), s.as_user("m"));
    // The task envelope in a 0.3 data part (its media type in metadata.mimeType), shared with bob.
    let team = json!({"name": "Release", "goal": "Ship",
        "participants": [{"id": "alice", "kind": "human", "role": "admin"}, {"id": "bob", "kind": "human", "role": "assignee"}]});
    let mut m = message03("tck-input-required-7", "ship it", None);
    m["parts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"kind": "data", "data": team,
        "metadata": {"mimeType": "application/vnd.tiny-harness.task+json"}}));
    let resp = alice
        .client
        .post(format!("{}/a2a", s.base))
        .header("Content-Type", "application/json")
        .header("Authorization", "Bearer a")
        .header(
            "X-A2A-Extensions",
            "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/task/v1",
        )
        .header("Idempotency-Key", "key-0.3-1")
        .body(
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": m.clone(), "configuration": {"blocking": true}}}))
            .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let echoed = resp
        .headers()
        .get("x-a2a-extensions")
        .map(|v| v.to_str().unwrap().to_string());
    let v: Value = resp.json().await.unwrap();
    let id = v["result"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_string();
    assert_eq!(
        echoed.as_deref(),
        Some("https://madarauchiha-314.github.io/tiny-harness/a2a/ext/task/v1"),
        "echoed under 0.3's name"
    );
    assert_eq!(
        v["result"]["metadata"]["io.github.madarauchiha-314.tiny-harness/task"]["name"], "Release",
        "{v}"
    );
    // The same key again: the same task, not a second one.
    let again = rpc03(
        &alice,
        "message/send",
        json!({"message": m, "configuration": {"blocking": true}}),
        &[
            ("Authorization", "Bearer a"),
            ("Idempotency-Key", "key-0.3-1"),
        ],
    )
    .await;
    assert_eq!(again["result"]["id"], id.as_str(), "{again}");
    // bob sees the shared task through 0.3; mallory is told it does not exist.
    let v = rpc03(
        &bob,
        "tasks/get",
        json!({"id": id}),
        &[("Authorization", "Bearer b")],
    )
    .await;
    assert_eq!(v["result"]["id"], id.as_str(), "{v}");
    let v = rpc03(
        &mallory,
        "tasks/get",
        json!({"id": id}),
        &[("Authorization", "Bearer m")],
    )
    .await;
    assert_eq!(v["error"]["code"], -32001);
    // The 0.3 extended card, for a caller who authenticates.
    let v = rpc03(
        &alice,
        "agent/getAuthenticatedExtendedCard",
        json!({}),
        &[("Authorization", "Bearer a")],
    )
    .await;
    assert!(
        v["result"]["protocolVersion"]
            .as_str()
            .unwrap()
            .starts_with("0.3"),
        "{v}"
    );
    assert!(
        v["result"].get("supportedInterfaces").is_none(),
        "the pure 0.3 card"
    );
    let r = alice
        .client
        .get(format!("{}/a2a/rest/v1/card", s.base))
        .header("Authorization", "Bearer a")
        .send()
        .await
        .unwrap();
    let card: Value = r.json().await.unwrap();
    assert_eq!(card["url"], format!("{}/a2a", s.base), "{card}");
}

#[tokio::test]
async fn the_card_carries_the_0_3_fields_beside_an_unchanged_1_0_card() {
    let s = Server::start_with(test_config()).await;
    let card = s.card().await;
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert_eq!(card["url"], format!("{}/a2a", s.base));
    assert_eq!(card["preferredTransport"], "JSONRPC");
    let v03: Vec<&Value> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["protocolVersion"] == "0.3")
        .collect();
    assert_eq!(
        v03.len(),
        card["additionalInterfaces"].as_array().unwrap().len()
    );
    assert_eq!(
        card["supportedInterfaces"][0]["protocolVersion"], "1.0",
        "1.0 clients pick 1.0 first"
    );
}

/// The 0.3 SDK cancels with `POST /v1/tasks/{id}:cancel` and a `{}` body, then reads the task on
/// the same keep-alive connection: the body is read even where the route needs none, so the
/// connection serves the next request (a response sent before its request's body is read ends
/// the connection, and the next request on it finds it closed).
#[tokio::test]
async fn a_keep_alive_connection_serves_the_next_request_after_a_body_a_route_does_not_need() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = Server::start_with(test_config()).await;
    let task = s.send_task("tck-input-required-k", "hello").await;
    let id = task["id"].as_str().unwrap().to_string();
    let host = s.base.trim_start_matches("http://").to_string();
    let mut tcp = tokio::net::TcpStream::connect(&host).await.unwrap();
    // The head first, the body a moment later (as a client writing them apart does).
    let cancel = format!(
        "POST /a2a/rest/v1/tasks/{id}:cancel HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
    );
    let get = format!("GET /a2a/rest/v1/tasks/{id} HTTP/1.1\r\nHost: {host}\r\n\r\n");
    // A request's head, then its `{}` body a moment later.
    async fn head_then_body(tcp: &mut tokio::net::TcpStream, head: &str) {
        tcp.write_all(head.as_bytes()).await.unwrap();
        tcp.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        tcp.write_all(b"{}").await.unwrap();
    }
    // One response at a time: each read until its body (Content-Length) is in.
    async fn response(tcp: &mut tokio::net::TcpStream) -> String {
        let mut got = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
                .await
                .expect("a response within 5 s")
                .unwrap();
            assert!(
                n > 0,
                "the connection closed: {}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).to_string();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let len = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap())
                    })
                    .unwrap_or(0);
                if body.len() >= len {
                    return text;
                }
            }
        }
    }
    head_then_body(&mut tcp, &cancel).await;
    let canceled = response(&mut tcp).await;
    assert!(canceled.starts_with("HTTP/1.1 200"), "{canceled}");
    assert!(
        !canceled.to_ascii_lowercase().contains("connection: close"),
        "{canceled}"
    );
    tcp.write_all(get.as_bytes()).await.unwrap();
    let read = response(&mut tcp).await;
    assert!(read.starts_with("HTTP/1.1 200"), "{read}");
    assert!(read.contains("TASK_STATE_CANCELLED"), "{read}");
    // The same on a 1.0 route that takes its request from the path and query: a DELETE whose
    // body comes apart from its head, then a GET on the connection.
    let delete = format!(
        "DELETE /a2a/rest/tasks/{id}/pushNotificationConfigs/none HTTP/1.1\r\nHost: {host}\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
    );
    head_then_body(&mut tcp, &delete).await;
    let deleted = response(&mut tcp).await;
    assert!(deleted.starts_with("HTTP/1.1 "), "{deleted}");
    let get10 =
        format!("GET /a2a/rest/tasks/{id} HTTP/1.1\r\nHost: {host}\r\nA2A-Version: 1.0\r\n\r\n");
    tcp.write_all(get10.as_bytes()).await.unwrap();
    let read = response(&mut tcp).await;
    assert!(read.starts_with("HTTP/1.1 200"), "{read}");
}
