//! Draft A2A 1.1 task generations (a2aproject/A2A#1810), black-box on the binding the harness
//! speaks: `generation` on tasks only for `A2A-Version: 1.1`, GetTask's `currentGeneration`
//! long-poll, and `ifGenerationMatch` making a send conditional.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use taskledger_tests::{error_code, Server};

const V1_1: &[(&str, &str)] = &[("A2A-Version", "1.1")];

fn generation(task: &Value) -> u64 {
    task["generation"]
        .as_str()
        .unwrap_or_else(|| panic!("a ProtoJSON int64 generation: {task}"))
        .parse()
        .unwrap()
}

async fn ok_1_1(s: &Server, method: &str, params: Value) -> Value {
    let v = s.call_with(method, params, V1_1).await;
    assert!(v.get("error").is_none(), "{method}: {v}");
    v["result"].clone()
}

/// An input-required task (created 1, WORKING 2, INPUT_REQUIRED 3).
async fn interrupted(s: &Server) -> String {
    let id = format!("tck-input-required-{}", uuid::Uuid::new_v4().simple());
    let sent = ok_1_1(
        s,
        "SendMessage",
        json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "go"}]}}),
    )
    .await;
    assert_eq!(sent["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(generation(&sent["task"]), 3);
    sent["task"]["id"].as_str().unwrap().to_string()
}

fn answer(task_id: &str, n: u32, config: Value) -> Value {
    json!({"message": {"messageId": format!("tck-input-required-{task_id}-{n}"), "taskId": task_id,
        "role": "ROLE_USER", "parts": [{"text": "more"}]}, "configuration": config})
}

#[tokio::test]
async fn only_a_1_1_request_sees_generations() {
    let s = Server::start().await;
    let id = interrupted(&s).await;
    let t = s.ok("GetTask", json!({"id": id})).await;
    assert!(t.get("generation").is_none(), "1.0 shape: {t}");
    let page = s.ok("ListTasks", json!({})).await;
    assert!(page["tasks"][0].get("generation").is_none(), "{page}");
    let t = ok_1_1(&s, "GetTask", json!({"id": id})).await;
    assert_eq!(generation(&t), 3);
    let page = ok_1_1(&s, "ListTasks", json!({})).await;
    assert_eq!(generation(&page["tasks"][0]), 3);
    // A 1.0 client's unknown fields are ignored: no long-poll, no condition.
    let started = Instant::now();
    let t = s
        .ok("GetTask", json!({"id": id, "currentGeneration": "99"}))
        .await;
    assert!(started.elapsed() < Duration::from_secs(5), "{t}");
    let v = s
        .call(
            "SendMessage",
            answer(&id, 1, json!({"ifGenerationMatch": "1"})),
        )
        .await;
    assert!(
        v.get("error").is_none(),
        "1.0 ignores ifGenerationMatch: {v}"
    );
}

#[tokio::test]
async fn a_send_at_the_current_generation_goes_ahead_and_a_stale_one_changes_nothing() {
    let s = Server::start().await;
    let id = interrupted(&s).await;
    let v = s
        .call_with(
            "SendMessage",
            answer(&id, 1, json!({"ifGenerationMatch": "2"})),
            V1_1,
        )
        .await;
    assert_eq!(error_code(&v), -32010, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("expected 2") && message.contains("is 3"),
        "{message}"
    );
    let t = ok_1_1(&s, "GetTask", json!({"id": id})).await;
    assert_eq!(generation(&t), 3, "the refused send changed nothing");
    assert_eq!(t["history"].as_array().map(Vec::len), Some(2));
    let sent = ok_1_1(
        &s,
        "SendMessage",
        answer(&id, 2, json!({"ifGenerationMatch": "3"})),
    )
    .await;
    // WORKING 4, INPUT_REQUIRED 5
    assert_eq!(generation(&sent["task"]), 5);
    // A message creating a task ignores the condition.
    let fresh = json!({"message": {"messageId": "tck-complete-task-g", "role": "ROLE_USER",
        "parts": [{"text": "x"}]}, "configuration": {"ifGenerationMatch": "42"}});
    ok_1_1(&s, "SendMessage", fresh).await;
}

#[tokio::test]
async fn get_task_with_a_current_generation_waits_for_the_next_one() {
    let s = Server::start().await;
    let id = interrupted(&s).await;
    // Already past: at once.
    let t = ok_1_1(&s, "GetTask", json!({"id": id, "currentGeneration": "2"})).await;
    assert_eq!(generation(&t), 3);
    let waiting = {
        let s = s.over(s.binding);
        let id = id.clone();
        tokio::spawn(async move {
            ok_1_1(&s, "GetTask", json!({"id": id, "currentGeneration": "3"})).await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "held until the task moves");
    ok_1_1(
        &s,
        "SendMessage",
        answer(&id, 1, json!({"returnImmediately": true})),
    )
    .await;
    let t = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("answered once the generation moved")
        .unwrap();
    assert!(generation(&t) > 3, "{t}");
    // Bad values are refused before any wait; an unknown task is not found.
    let bad = json!({"id": id, "currentGeneration": "x"});
    if s.expressible("GetTask", &bad).is_ok() {
        let v = s.call_with("GetTask", bad, V1_1).await;
        assert_eq!(error_code(&v), -32602);
    }
    let v = s
        .call_with(
            "GetTask",
            json!({"id": "nope", "currentGeneration": "1"}),
            V1_1,
        )
        .await;
    assert_eq!(error_code(&v), -32001);
}

#[tokio::test]
async fn the_card_lists_each_binding_for_1_0_then_for_1_1_then_for_0_3() {
    let s = Server::start().await;
    let card = s.card().await;
    let versions: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["protocolVersion"].as_str().unwrap())
        .collect();
    let third = versions.len() / 3;
    assert_eq!(versions.len(), third * 3, "{versions:?}");
    assert!(
        versions[..third].iter().all(|v| *v == "1.0"),
        "{versions:?}"
    );
    assert!(
        versions[third..2 * third].iter().all(|v| *v == "1.1"),
        "{versions:?}"
    );
    assert!(
        versions[2 * third..].iter().all(|v| *v == "0.3"),
        "{versions:?}"
    );
}

#[tokio::test]
async fn a_1_1_stream_numbers_its_updates_one_generation_apart() {
    let s = Server::start().await;
    let stream = |version: &'static str| {
        let s = &s;
        async move {
            let params = json!({"message": {"messageId": format!("tck-stream-artifact-chunked-{}",
                uuid::Uuid::new_v4().simple()), "role": "ROLE_USER", "parts": [{"text": "x"}]}});
            s.stream_with("SendStreamingMessage", params, &[("A2A-Version", version)])
                .await
                .stream()
                .rest()
                .await
        }
    };
    let events = stream("1.1").await;
    let generations: Vec<u64> = events.iter().map(|e| generation(e.body())).collect();
    // the task (1), WORKING, two chunks, COMPLETED
    assert_eq!(generations, [1, 2, 3, 4, 5], "{events:?}");
    let events = stream("1.0").await;
    assert_eq!(events.len(), 5);
    assert!(
        events
            .iter()
            .all(|e| !e.data.to_string().contains("generation")),
        "{events:?}"
    );
}

/// The draft 1.1 task timeline (a2aproject/A2A#2129): messages and statuses in order, each with
/// its generation, artifacts with the generations they span — for 1.1 requests only, `history`
/// filled beside it.
#[tokio::test]
async fn a_1_1_task_carries_its_timeline_and_a_1_0_one_does_not() {
    let s = Server::start().await;
    let sent = ok_1_1(
        &s,
        "SendMessage",
        json!({"message": {"messageId": format!("tck-stream-artifact-chunked-{}", uuid::Uuid::new_v4().simple()),
            "role": "ROLE_USER", "parts": [{"text": "go"}]}}),
    )
    .await;
    let id = sent["task"]["id"].as_str().unwrap().to_string();
    let t = ok_1_1(&s, "GetTask", json!({"id": id})).await;
    let timeline = t["timeline"].as_array().unwrap_or_else(|| panic!("{t}"));
    let gen_of = |e: &Value| e["generation"].as_str().unwrap().parse::<u64>().unwrap();
    let gens: Vec<u64> = timeline.iter().map(gen_of).collect();
    assert!(gens.windows(2).all(|w| w[0] <= w[1]), "in order: {gens:?}");
    // The task is created (its first status) with the client's message, at generation 1.
    assert_eq!(
        timeline[0]["status"]["state"], "TASK_STATE_SUBMITTED",
        "{t}"
    );
    assert_eq!(timeline[1]["message"]["parts"][0]["text"], "go", "{t}");
    assert_eq!((gen_of(&timeline[0]), gen_of(&timeline[1])), (1, 1));
    let last = timeline.last().unwrap();
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(
        gen_of(last),
        generation(&t),
        "the last status is the task's generation"
    );
    let artifact = &t["artifacts"][0];
    let span = |k: &str| artifact[k].as_str().unwrap().parse::<u64>().unwrap();
    assert!(
        span("startGeneration") < span("endGeneration"),
        "two chunks: {artifact}"
    );
    assert!(span("endGeneration") < gen_of(last));
    assert!(
        t["history"].as_array().is_some_and(|h| !h.is_empty()),
        "history stays filled"
    );
    // timelineLength, on GetTask, ListTasks and a send.
    let two = ok_1_1(&s, "GetTask", json!({"id": id, "timelineLength": 2})).await;
    assert_eq!(
        two["timeline"].as_array().unwrap()[..],
        timeline[timeline.len() - 2..]
    );
    let page = ok_1_1(&s, "ListTasks", json!({"timelineLength": 1})).await;
    assert_eq!(
        page["tasks"][0]["timeline"].as_array().map(Vec::len),
        Some(1),
        "{page}"
    );
    let listed = ok_1_1(&s, "ListTasks", json!({})).await;
    assert!(
        listed["tasks"][0].get("timeline").is_none(),
        "a list carries one only when asked"
    );
    let with = ok_1_1(
        &s,
        "SendMessage",
        json!({"message": {"messageId": "m-tl", "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "configuration": {"timelineLength": 3}}),
    )
    .await;
    assert!(
        with["task"]["timeline"]
            .as_array()
            .is_some_and(|e| !e.is_empty() && e.len() <= 3),
        "{with}"
    );
    // 1.0 sees none of it.
    let one = s
        .ok("GetTask", json!({"id": id, "timelineLength": 2}))
        .await;
    assert!(
        one.get("timeline").is_none() && one.get("generation").is_none(),
        "{one}"
    );
    assert!(one["artifacts"][0].get("startGeneration").is_none());
    let e = s
        .call_with("GetTask", json!({"id": id, "timelineLength": -1}), V1_1)
        .await;
    assert_eq!(error_code(&e), -32602, "{e}");
}
