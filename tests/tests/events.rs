//! taskledger's events extension (`urn:taskledger:ext:events:v1`, ADR 037), black-box on the
//! binding the harness speaks (`TASKLEDGER_TEST_BINDING`) and the store it runs on
//! (`TASKLEDGER_TEST_STORE`): a task's log read in pages with a continuation cursor, the same
//! access rules as GetTask (participants only; no secrets, no other principal's push configs),
//! a gone cursor once retention ends, the task as of a past generation, and a stream that
//! starts after an event.

use std::time::Duration;

use serde_json::{json, Value};
use taskledger_domain::ids::Principal;
use taskledger_domain::projection::log::{EVENTS_URI, MAX_EVENTS_PAGE};
use taskledger_domain::retention::Retention;
use taskledger_tests::{error_code, test_config, Binding, Server};

const TASK_NOT_FOUND: i64 = -32001;
const INVALID_PARAMS: i64 = -32602;
const EVENTS_GONE: i64 = -32011;
const V1_1: &[(&str, &str)] = &[("A2A-Version", "1.1")];
const MEDIA: &str = "application/vnd.tiny-harness.task+json";

/// alice owns; bob is on her tasks; mallory is not; globex's bob is another tenant's.
fn people() -> taskledger_local::Config {
    let mut config = test_config();
    config.push = taskledger_tests::loopback_push();
    // Push configs on DynamoDB need the push queue the pollers read.
    if let taskledger_local::Storage::Dynamo { pollers, .. } = &mut config.storage {
        *pollers = true;
    }
    config.tokens = [
        ("a", "acme", "alice"),
        ("b", "acme", "bob"),
        ("m", "acme", "mallory"),
        ("x", "globex", "bob"),
    ]
    .into_iter()
    .map(|(t, tenant, s)| (t.to_string(), Principal::new(tenant, s).unwrap()))
    .collect();
    config
}

/// alice's task shared with bob, waiting for input (generations: created 1, WORKING 2,
/// INPUT_REQUIRED 3).
async fn shared_task(alice: &Server) -> String {
    let id = format!("tck-input-required-{}", uuid::Uuid::new_v4().simple());
    let team = json!({"name": "Log", "goal": "Keep a log", "participants": [
        {"id": "alice", "kind": "human", "role": "admin"},
        {"id": "bob", "kind": "human", "role": "assignee"}]});
    let v = alice
        .call(
            "SendMessage",
            json!({"message": {"messageId": id, "role": "ROLE_USER",
                "parts": [{"text": "go"}, {"data": team, "mediaType": MEDIA}]}}),
        )
        .await;
    let t = &v["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{v}");
    t["id"].as_str().unwrap().to_string()
}

fn int(v: &Value) -> u64 {
    v.as_str()
        .unwrap_or_else(|| panic!("a ProtoJSON int64: {v}"))
        .parse()
        .unwrap()
}

/// Every page of the task's log for `s`, `limit` at a time, following the cursor.
async fn read_all(s: &Server, id: &str, limit: u32) -> (Vec<Value>, usize, String) {
    let (mut all, mut pages) = (Vec::new(), 0);
    let mut params = json!({"id": id, "limit": limit});
    loop {
        let page = s.ok("ListTaskEvents", params.clone()).await;
        pages += 1;
        let events = page["events"].as_array().cloned().unwrap_or_default();
        assert!(events.len() <= limit as usize, "{page}");
        all.extend(events);
        let token = page["nextPageToken"].as_str().unwrap().to_string();
        assert!(!token.is_empty(), "a cursor on every page: {page}");
        if page["hasMore"] != true {
            return (all, pages, token);
        }
        params = json!({"id": id, "limit": limit, "pageToken": token});
    }
}

#[tokio::test]
async fn a_log_reads_in_order_page_by_page_and_the_cursor_reads_on_later() {
    let s = Server::start_with(people()).await;
    let alice = s.as_user("a");
    let id = shared_task(&alice).await;
    let (events, pages, token) = read_all(&alice, &id, 2).await;
    let seqs: Vec<u64> = events.iter().map(|e| int(&e["seq"])).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "{events:?}"
    );
    assert!(pages >= 3, "{pages} pages of {}", seqs.len());
    assert_eq!(events[0]["type"], "TaskCreated");
    assert_eq!(events[0]["payload"]["TaskCreated"]["task_id"], id.as_str());
    assert_eq!(int(&events[0]["generation"]), 1);
    assert_eq!(int(&events.last().unwrap()["generation"]), 3);
    assert!(events
        .iter()
        .all(|e| e["recordedTime"].is_string() && e["eventVersion"].is_string()));
    // The cursor at the end reads what comes next, and nothing twice.
    let page = alice
        .ok("ListTaskEvents", json!({"id": id, "pageToken": token}))
        .await;
    assert_eq!(page["events"], json!([]), "{page}");
    let answered = alice
        .call(
            "SendMessage",
            json!({"message": {"messageId": format!("{id}-more"), "taskId": id,
                "role": "ROLE_USER", "parts": [{"text": "more"}]}}),
        )
        .await;
    assert!(answered.get("error").is_none(), "{answered}");
    let page = alice
        .ok("ListTaskEvents", json!({"id": id, "pageToken": token}))
        .await;
    let next: Vec<u64> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| int(&e["seq"]))
        .collect();
    assert_eq!(next.first(), Some(&(seqs.len() as u64 + 1)), "{page}");
    // `after` starts anywhere.
    let page = alice
        .ok(
            "ListTaskEvents",
            json!({"id": id, "after": "2", "limit": 1}),
        )
        .await;
    assert_eq!(int(&page["events"][0]["seq"]), 3);
    assert_eq!(page["hasMore"], true);
}

#[tokio::test]
async fn participants_read_the_log_without_secrets_or_each_others_push_configs() {
    let s = Server::start_with(people()).await;
    let (alice, bob) = (s.as_user("a"), s.as_user("b"));
    let id = shared_task(&alice).await;
    for (who, name) in [(&alice, "alice"), (&bob, "bob")] {
        let v = who
            .call(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "id": format!("hook-{name}"),
                    "url": format!("https://hooks.example.com/{name}"),
                    "token": format!("{name}-token-secret"),
                    "authentication": {"scheme": "Bearer", "credentials": format!("{name}-cred-secret")}}),
            )
            .await;
        assert!(v.get("error").is_none(), "{v}");
    }
    let configs = |events: &[Value]| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["type"] == "PushConfigSet")
            .map(|e| {
                e["payload"]["PushConfigSet"]["config"]["id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let (alice_sees, _, _) = read_all(&alice, &id, MAX_EVENTS_PAGE).await;
    let (bob_sees, _, _) = read_all(&bob, &id, MAX_EVENTS_PAGE).await;
    assert_eq!(configs(&alice_sees), ["hook-alice"]);
    assert_eq!(configs(&bob_sees), ["hook-bob"]);
    for e in alice_sees.iter().chain(&bob_sees) {
        assert!(!e.to_string().contains("secret"), "a secret: {e}");
    }
    // Everyone else is told the task does not exist; a cursor is its reader's, for its task.
    let mallory = s.as_user("m");
    assert_eq!(
        mallory.err("ListTaskEvents", json!({"id": id})).await,
        TASK_NOT_FOUND
    );
    let page = alice
        .ok("ListTaskEvents", json!({"id": id, "limit": 1}))
        .await;
    let token = page["nextPageToken"].as_str().unwrap();
    for stranger in [&bob, &mallory, &s.as_user("x")] {
        let v = stranger
            .call("ListTaskEvents", json!({"id": id, "pageToken": token}))
            .await;
        assert_eq!(error_code(&v), INVALID_PARAMS, "{v}");
    }
    let other = shared_task(&alice).await;
    let v = alice
        .call("ListTaskEvents", json!({"id": other, "pageToken": token}))
        .await;
    assert_eq!(error_code(&v), INVALID_PARAMS, "another task's cursor: {v}");
}

#[tokio::test]
async fn bad_pages_are_refused_clearly_and_the_bounds_hold() {
    let s = Server::start_with(people()).await;
    let alice = s.as_user("a");
    let id = shared_task(&alice).await;
    let max = i64::from(MAX_EVENTS_PAGE);
    assert!(alice
        .call("ListTaskEvents", json!({"id": id, "limit": max}))
        .await
        .get("error")
        .is_none());
    for bad in [
        json!({"id": id, "limit": max + 1}),
        json!({"id": id, "limit": -1}),
        json!({"id": id, "after": "99"}),
        json!({"id": id, "pageToken": "garbage"}),
        json!({"id": id, "after": "1", "pageToken": "x.y"}),
    ] {
        let v = alice.call("ListTaskEvents", bad.clone()).await;
        assert_eq!(error_code(&v), INVALID_PARAMS, "{bad}: {v}");
    }
    let v = alice
        .call("ListTaskEvents", json!({"id": "no-such-task"}))
        .await;
    assert_eq!(error_code(&v), TASK_NOT_FOUND, "{v}");
}

#[tokio::test]
async fn a_cursor_of_a_task_past_its_retention_is_gone() {
    let mut config = people();
    config.retention = Retention::parse("1s", "").unwrap();
    let s = Server::start_with(config).await;
    let alice = s.as_user("a");
    let id = shared_task(&alice).await;
    let page = alice.ok("ListTaskEvents", json!({"id": id})).await;
    let token = page["nextPageToken"].as_str().unwrap().to_string();
    let canceled = alice.call("CancelTask", json!({"id": id})).await;
    assert!(canceled.get("error").is_none(), "{canceled}");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let v = alice
        .call("ListTaskEvents", json!({"id": id, "pageToken": token}))
        .await;
    assert_eq!(error_code(&v), EVENTS_GONE, "{v}");
    let v = alice.call("ListTaskEvents", json!({"id": id})).await;
    assert_eq!(error_code(&v), TASK_NOT_FOUND, "without a cursor: {v}");
}

/// GetTask `asOfGeneration` over JSON-RPC (1.1, or 1.0 with the extension) and as the HTTP+JSON
/// query; gRPC's GetTaskRequest has no such field.
#[tokio::test]
async fn the_task_as_of_each_generation_is_folded_from_its_log() {
    let s = Server::start_with(people()).await.over(Binding::JsonRpc);
    let alice = s.as_user("a");
    let id = shared_task(&alice).await;
    let as_of = |n: &str, headers: &'static [(&str, &str)]| {
        let (alice, id, n) = (alice.as_user("a"), id.clone(), n.to_string());
        async move {
            alice
                .call_with("GetTask", json!({"id": id, "asOfGeneration": n}), headers)
                .await
        }
    };
    let states: Vec<Value> = [
        as_of("1", V1_1).await,
        as_of("2", V1_1).await,
        as_of("3", V1_1).await,
    ]
    .iter()
    .map(|v| v["result"]["status"]["state"].clone())
    .collect();
    assert_eq!(
        states,
        [
            "TASK_STATE_SUBMITTED",
            "TASK_STATE_WORKING",
            "TASK_STATE_INPUT_REQUIRED"
        ]
    );
    let first = as_of("1", V1_1).await;
    assert_eq!(first["result"]["generation"], "1", "{first}");
    assert!(
        first["result"].get("timeline").is_none(),
        "the timeline is the log now: {first}"
    );
    assert_eq!(first["result"]["history"][0]["parts"][0]["text"], "go");
    for bad in ["0", "4"] {
        let v = as_of(bad, V1_1).await;
        assert_eq!(error_code(&v), INVALID_PARAMS, "asOfGeneration {bad}: {v}");
    }
    // 1.0 without the extension: an unknown field, ignored; with it, honoured.
    let now = as_of("1", &[]).await;
    assert_eq!(
        now["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{now}"
    );
    let ext: &'static [(&str, &str)] = &[("A2A-Extensions", EVENTS_URI)];
    let then = as_of("1", ext).await;
    assert_eq!(
        then["result"]["status"]["state"], "TASK_STATE_SUBMITTED",
        "{then}"
    );
    // The HTTP+JSON query, for a 1.1 caller.
    let r = reqwest::Client::new()
        .get(format!("{}/a2a/rest/tasks/{id}?asOfGeneration=2", s.base))
        .header("A2A-Version", "1.1")
        .bearer_auth("a")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let t: Value = r.json().await.unwrap();
    assert_eq!(t["status"]["state"], "TASK_STATE_WORKING", "{t}");
    // Someone not on the task sees no past of it either.
    let v = s
        .as_user("m")
        .call_with("GetTask", json!({"id": id, "asOfGeneration": "1"}), V1_1)
        .await;
    assert_eq!(error_code(&v), TASK_NOT_FOUND, "{v}");
}

/// SubscribeToTask `after` (the extension's, as `Last-Event-ID` is): the updates after that
/// event, no Task first.
#[tokio::test]
async fn a_stream_starts_after_an_event_of_the_log() {
    let s = Server::start_with(people()).await.over(Binding::JsonRpc);
    let alice = s.as_user("a");
    let id = shared_task(&alice).await;
    let (events, _, _) = read_all(&alice, &id, MAX_EVENTS_PAGE).await;
    let working = events
        .iter()
        .find(|e| e["type"] == "StatusChanged" && int(&e["generation"]) == 2)
        .map(|e| int(&e["seq"]))
        .expect("the WORKING event");
    let canceled = alice.call("CancelTask", json!({"id": id})).await;
    assert!(canceled.get("error").is_none(), "{canceled}");
    let from = (working - 1).to_string();
    let stream = alice
        .stream_with("SubscribeToTask", json!({"id": id, "after": from}), V1_1)
        .await
        .stream();
    let got = stream.rest().await;
    let states: Vec<Option<&str>> = got.iter().map(|e| e.state()).collect();
    assert_eq!(
        states,
        [
            Some("TASK_STATE_WORKING"),
            Some("TASK_STATE_INPUT_REQUIRED"),
            Some("TASK_STATE_CANCELED")
        ],
        "{got:?}"
    );
    let both = alice
        .stream_with(
            "SubscribeToTask",
            json!({"id": id, "after": "1"}),
            &[("A2A-Version", "1.1"), ("Last-Event-ID", "1")],
        )
        .await
        .refused()
        .await;
    assert_eq!(error_code(&both), INVALID_PARAMS, "{both}");
}
