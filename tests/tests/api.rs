//! Black-box tests of the A2A JSON-RPC API: every operation and every error, over HTTP.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use taskledger_domain::ids::Principal;
use taskledger_local::{Config, Storage};
use taskledger_tests::{binding, error_code, has_null, test_config, Binding, Server};

// ------------------------------------------------------------------ agent card

#[tokio::test]
async fn the_agent_card_is_served_with_cache_headers() {
    let s = Server::start().await;
    let url = format!("{}/.well-known/agent-card.json", s.base);
    let resp = s.client.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let h = resp.headers().clone();
    assert!(h["cache-control"].to_str().unwrap().contains("max-age"));
    assert!(h.contains_key("last-modified"));
    let etag = h["etag"].to_str().unwrap().to_string();
    let card: Value = resp.json().await.unwrap();
    assert!(!has_null(&card));
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("{}/a2a", s.base)
    );
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    assert_eq!(card["capabilities"]["streaming"], true);
    // 0.3's fields merged in for 0.3 clients (ADR 031), beside the 1.0 card's own.
    assert_eq!(card["url"], format!("{}/a2a", s.base));
    assert_eq!(card["protocolVersion"], "0.3.0");
    let again = s
        .client
        .get(&url)
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
}

/// 0.3-era callers fetch `/.well-known/agent.json`: the same card, with the same ETag, caching
/// and `Vary`. A client that says `A2A-Version: 1.x` gets the 1.0 card as it is (the kit's
/// closed schema), none or `0.x` the merged one, any other version VersionNotSupported.
#[tokio::test]
async fn the_legacy_path_serves_the_same_card_and_the_version_picks_its_shape() {
    let s = Server::start().await;
    let fetch = |path: &'static str, version: Option<&'static str>| {
        let mut r = s.client.get(format!("{}{path}", s.base));
        if let Some(v) = version {
            r = r.header("A2A-Version", v);
        }
        async move {
            let resp = r.send().await.unwrap();
            let status = resp.status();
            let h = resp.headers().clone();
            (status, h, resp.json::<Value>().await.unwrap())
        }
    };
    let (status, h, card) = fetch("/.well-known/agent-card.json", None).await;
    let (legacy_status, legacy_h, legacy) = fetch("/.well-known/agent.json", None).await;
    assert_eq!((status, legacy_status), (StatusCode::OK, StatusCode::OK));
    assert_eq!(card, legacy);
    for name in [
        "etag",
        "cache-control",
        "last-modified",
        "vary",
        "content-type",
    ] {
        assert_eq!(h.get(name), legacy_h.get(name), "{name}");
    }
    assert!(h["vary"].to_str().unwrap().contains("A2A-Version"), "{h:?}");
    assert_eq!(
        legacy["protocolVersion"], "0.3.0",
        "0.3 callers read the merged card"
    );
    let again = s
        .client
        .get(format!("{}/.well-known/agent.json", s.base))
        .header("If-None-Match", h["etag"].to_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);

    for path in ["/.well-known/agent-card.json", "/.well-known/agent.json"] {
        let (status, pure_h, pure) = fetch(path, Some("1.0")).await;
        assert_eq!(status, StatusCode::OK);
        for legacy_member in [
            "url",
            "protocolVersion",
            "preferredTransport",
            "additionalInterfaces",
        ] {
            assert!(
                pure.get(legacy_member).is_none(),
                "{path}: {legacy_member} in {pure}"
            );
        }
        assert_eq!(pure["supportedInterfaces"], card["supportedInterfaces"]);
        assert_ne!(pure_h["etag"], h["etag"], "each shape has its own ETag");
        let (_, _, merged) = fetch(path, Some("0.3")).await;
        assert_eq!(merged, card);
        let (status, _, refused) = fetch(path, Some("2.0")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
        assert_eq!(
            refused["error"]["details"][0]["reason"],
            "VERSION_NOT_SUPPORTED"
        );
        assert_eq!(
            refused["error"]["details"][0]["metadata"]["supportedVersions"],
            "0.3, 1.0, 1.1"
        );
    }
}

// ------------------------------------------------------------------ SendMessage

#[tokio::test]
async fn a_plain_message_completes_with_an_artifact_saying_what_was_received() {
    let s = Server::start().await;
    let v = s.send("m-1", "hello there", json!({}), json!({})).await;
    assert!(!has_null(&v));
    let task = &v["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(task["status"]["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "Received: hello there"
    );
    assert!(task["contextId"].as_str().is_some_and(|c| !c.is_empty()));
    assert!(task["metadata"]["kagent.dev/a2a/task-created-at"].is_string());
    let history = task["history"].as_array().unwrap();
    assert_eq!(history[0]["parts"][0]["text"], "hello there");
    assert_eq!(history[0]["taskId"], task["id"]);
    for m in history {
        assert!(m["metadata"]["kagent.dev/a2a/timeline-position"].is_string());
    }
}

#[tokio::test]
async fn the_conformance_scenarios_behave_as_the_kit_expects() {
    let s = Server::start().await;
    let state = |v: &Value| {
        v["result"]["task"]["status"]["state"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let v = s
        .send("tck-complete-task-01", "x", json!({}), json!({}))
        .await;
    assert_eq!(state(&v), "TASK_STATE_COMPLETED");
    assert_eq!(
        v["result"]["task"]["status"]["message"]["parts"][0]["text"],
        "Hello from TCK"
    );
    let v = s
        .send("tck-input-required-01", "x", json!({}), json!({}))
        .await;
    assert_eq!(state(&v), "TASK_STATE_INPUT_REQUIRED");
    let v = s
        .send("tck-auth-required-01", "x", json!({}), json!({}))
        .await;
    assert_eq!(state(&v), "TASK_STATE_AUTH_REQUIRED");
    let v = s
        .send("tck-reject-task-01", "x", json!({}), json!({}))
        .await;
    assert_eq!(state(&v), "TASK_STATE_REJECTED");
    let v = s
        .send("tck-message-response-01", "x", json!({}), json!({}))
        .await;
    assert_eq!(
        v["result"]["message"]["parts"][0]["text"],
        "Direct message response"
    );
    assert_eq!(v["result"]["message"]["role"], "ROLE_AGENT");
    let v = s
        .send("tck-artifact-text-01", "x", json!({}), json!({}))
        .await;
    assert!(v["result"]["task"]["artifacts"][0]["parts"][0]["text"].is_string());
    let v = s
        .send("tck-artifact-file-01", "x", json!({}), json!({}))
        .await;
    let p = &v["result"]["task"]["artifacts"][0]["parts"][0];
    assert_eq!(p["filename"], "output.txt");
    assert_eq!(p["mediaType"], "text/plain");
    assert_eq!(p["raw"], "ZmlsZSBjb250ZW50", "standard base64 of the file");
    let v = s
        .send("tck-artifact-file-url-01", "x", json!({}), json!({}))
        .await;
    assert_eq!(
        v["result"]["task"]["artifacts"][0]["parts"][0]["url"],
        "https://example.com/output.txt"
    );
    let v = s
        .send("tck-artifact-data-01", "x", json!({}), json!({}))
        .await;
    assert_eq!(
        v["result"]["task"]["artifacts"][0]["parts"][0]["data"],
        json!({"key": "value", "count": 42})
    );
    let v = s
        .send("tck-stream-artifact-chunked-01", "x", json!({}), json!({}))
        .await;
    let parts = &v["result"]["task"]["artifacts"][0]["parts"];
    assert_eq!(parts, &json!([{"text": "chunk-1 "}, {"text": "chunk-2"}]));
    let v = s
        .send("tck-sse-streaming-001", "x", json!({}), json!({}))
        .await;
    assert_eq!(
        state(&v),
        "TASK_STATE_COMPLETED",
        "unknown prefixes complete"
    );
}

#[tokio::test]
async fn blocking_waits_for_the_end_and_return_immediately_does_not() {
    let s = Server::start().await;
    let v = s
        .send("tck-delayed-complete-1", "x", json!({}), json!({}))
        .await;
    assert_eq!(
        v["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let v = s
        .send(
            "tck-delayed-complete-2",
            "x",
            json!({}),
            json!({"returnImmediately": true}),
        )
        .await;
    let task = &v["result"]["task"];
    let early = task["status"]["state"].as_str().unwrap();
    assert!(
        early == "TASK_STATE_SUBMITTED" || early == "TASK_STATE_WORKING",
        "returned before the agent finished: {early}"
    );
    let id = task["id"].as_str().unwrap().to_string();
    let mut state = String::new();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let t = s.ok("GetTask", json!({"id": id})).await;
        state = t["status"]["state"].as_str().unwrap().to_string();
        if state == "TASK_STATE_COMPLETED" {
            break;
        }
    }
    assert_eq!(state, "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn a_multi_turn_conversation_keeps_every_message_in_order() {
    let s = Server::start().await;
    let task = s.send_task("tck-input-required-x", "first").await;
    let id = task["id"].as_str().unwrap();
    let ctx = task["contextId"].as_str().unwrap();
    // the kit reuses the messageId with new content: each is a new message
    for text in ["second", "third"] {
        let v = s
            .send(
                "tck-input-required-x",
                text,
                json!({"taskId": id}),
                json!({}),
            )
            .await;
        assert_eq!(
            v["result"]["task"]["status"]["state"],
            "TASK_STATE_INPUT_REQUIRED"
        );
        assert_eq!(
            v["result"]["task"]["contextId"], ctx,
            "contextId inferred from the task"
        );
    }
    let t = s.ok("GetTask", json!({"id": id})).await;
    let user_texts: Vec<&str> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_USER")
        .map(|m| m["parts"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(user_texts, ["first", "second", "third"]);
    // a follow-up finishes it
    let v = s
        .send(
            "tck-complete-task-y",
            "done",
            json!({"taskId": id, "contextId": ctx}),
            json!({}),
        )
        .await;
    assert_eq!(
        v["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn a_retried_message_is_answered_without_being_appended_again() {
    let s = Server::start().await;
    let task = s.send_task("tck-input-required-r", "first").await;
    let id = task["id"].as_str().unwrap();
    let before = s.ok("GetTask", json!({"id": id})).await["history"]
        .as_array()
        .unwrap()
        .len();
    for _ in 0..2 {
        let v = s
            .send(
                "tck-input-required-r2",
                "again",
                json!({"taskId": id}),
                json!({}),
            )
            .await;
        assert_eq!(
            v["result"]["task"]["status"]["state"],
            "TASK_STATE_INPUT_REQUIRED"
        );
    }
    let after = s.ok("GetTask", json!({"id": id})).await["history"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        after,
        before + 2,
        "one user message and one agent question, once"
    );
}

#[tokio::test]
async fn an_idempotency_key_makes_task_creation_safe_to_retry() {
    let s = Server::start().await;
    let params =
        json!({"message": {"messageId": "m-i", "role": "ROLE_USER", "parts": [{"text": "once"}]}});
    let a = s
        .call_with("SendMessage", params.clone(), &[("Idempotency-Key", "k-1")])
        .await;
    let b = s
        .call_with("SendMessage", params, &[("Idempotency-Key", "k-1")])
        .await;
    assert_eq!(a["result"]["task"]["id"], b["result"]["task"]["id"]);
    assert_eq!(s.total_tasks().await, 1);
    let other = json!({"message": {"messageId": "m-i", "role": "ROLE_USER", "parts": [{"text": "different"}]}});
    let c = s
        .call_with("SendMessage", other, &[("Idempotency-Key", "k-1")])
        .await;
    assert_eq!(error_code(&c), -32602);
    assert_eq!(s.total_tasks().await, 1);
    // without a key the same message makes a new task (the kit reuses message ids)
    s.send_task("m-i", "once").await;
    assert_eq!(s.total_tasks().await, 2);
}

#[tokio::test]
async fn messages_to_unknown_terminal_or_mismatched_tasks_are_refused() {
    let s = Server::start().await;
    let v = s
        .send("m", "x", json!({"taskId": "no-such-task"}), json!({}))
        .await;
    assert_eq!(error_code(&v), -32001);
    let done = s.send_task("tck-complete-task-t", "x").await;
    let id = done["id"].as_str().unwrap();
    let v = s.send("m2", "x", json!({"taskId": id}), json!({})).await;
    assert_eq!(error_code(&v), -32004);
    let open = s.send_task("tck-input-required-t", "x").await;
    let v = s
        .send(
            "m3",
            "x",
            json!({"taskId": open["id"], "contextId": "another-context"}),
            json!({}),
        )
        .await;
    assert_eq!(error_code(&v), -32602);
}

/// A part whose media type the card does not accept (its `defaultInputModes`) is
/// ContentTypeNotSupported, on a new task and on a follow-up, and nothing is taken in.
#[tokio::test]
async fn a_part_outside_the_input_modes_is_refused_and_changes_nothing() {
    let s = Server::start().await;
    let card = s.card().await;
    let modes = card["defaultInputModes"].as_array().unwrap();
    assert!(modes.contains(&json!("text/plain")), "{card}");
    let odd = json!({"raw": "dGNr", "mediaType": "application/x-unsupported-type-12345"});
    let message = |id: &str, extra: Value| {
        let mut m = json!({"messageId": id, "role": "ROLE_USER",
            "parts": [{"text": "look"}, odd.clone()]});
        m.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        m
    };
    let v = s
        .call(
            "SendMessage",
            json!({"message": message("m-odd", json!({}))}),
        )
        .await;
    assert_eq!(error_code(&v), -32005, "{v}");
    let info = &v["error"]["data"][0];
    assert_eq!(info["reason"], "CONTENT_TYPE_NOT_SUPPORTED", "{v}");
    assert_eq!(info["metadata"]["field"], "message.parts[1]", "{v}");
    assert_eq!(s.total_tasks().await, 0, "no task was made");

    let open = s.send_task("tck-input-required-odd", "x").await;
    let id = open["id"].as_str().unwrap();
    let before = s.ok("GetTask", json!({"id": id})).await;
    for (kind, part) in [
        (
            "text",
            json!({"text": "t", "mediaType": "application/x-unsupported-type-12345"}),
        ),
        (
            "url",
            json!({"url": "https://files.example.com/f", "mediaType": "video/x-odd"}),
        ),
        (
            "data",
            json!({"data": {"a": 1}, "mediaType": "application/x-odd+json"}),
        ),
    ] {
        let mut m = message(&format!("m-odd-{kind}"), json!({"taskId": id}));
        m["parts"] = json!([part]);
        let v = s.call("SendMessage", json!({"message": m})).await;
        assert_eq!(error_code(&v), -32005, "{kind}: {v}");
    }
    assert_eq!(
        s.ok("GetTask", json!({"id": id})).await,
        before,
        "the task is as it was"
    );
}

#[tokio::test]
async fn a_client_context_id_is_kept() {
    let s = Server::start().await;
    let v = s
        .send("m", "x", json!({"contextId": "my-ctx"}), json!({}))
        .await;
    assert_eq!(v["result"]["task"]["contextId"], "my-ctx");
}

// ------------------------------------------------------------------ GetTask

#[tokio::test]
async fn get_task_honours_history_length() {
    let s = Server::start().await;
    let task = s.send_task("tck-input-required-h", "one").await;
    let id = task["id"].as_str().unwrap();
    s.send(
        "tck-input-required-h2",
        "two",
        json!({"taskId": id}),
        json!({}),
    )
    .await;
    let all = s.ok("GetTask", json!({"id": id})).await;
    assert_eq!(all["history"].as_array().unwrap().len(), 4);
    let none = s.ok("GetTask", json!({"id": id, "historyLength": 0})).await;
    assert!(none.get("history").is_none(), "0 omits the member");
    let last = s
        .ok("GetTask", json!({"id": id, "history_length": 1}))
        .await;
    assert_eq!(last["history"].as_array().unwrap().len(), 1);
    assert_eq!(
        s.err("GetTask", json!({"id": id, "historyLength": -1}))
            .await,
        -32602
    );
    assert_eq!(s.err("GetTask", json!({"id": "nope"})).await, -32001);
    let v = s
        .send("m", "x", json!({}), json!({"historyLength": 0}))
        .await;
    assert!(v["result"]["task"].get("history").is_none());
}

// ------------------------------------------------------------------ ListTasks

#[tokio::test]
async fn list_tasks_pages_newest_first_with_filters() {
    let s = Server::start().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let ctx = if i % 2 == 0 { "even" } else { "odd" };
        let v = s
            .send(
                &format!("tck-complete-task-{i}"),
                "x",
                json!({"contextId": ctx}),
                json!({}),
            )
            .await;
        ids.push(v["result"]["task"]["id"].as_str().unwrap().to_string());
    }
    s.send(
        "tck-input-required-l",
        "x",
        json!({"contextId": "odd"}),
        json!({}),
    )
    .await;
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = s
            .ok("ListTasks", json!({"pageSize": 2, "pageToken": token}))
            .await;
        assert!(!has_null(&page));
        assert_eq!(page["totalSize"], 6);
        assert_eq!(page["pageSize"], 2);
        for t in page["tasks"].as_array().unwrap() {
            assert!(
                t.get("artifacts").is_none(),
                "artifacts only when asked for"
            );
            seen.push((
                t["status"]["timestamp"].as_str().unwrap().to_string(),
                t["id"].as_str().unwrap().to_string(),
            ));
        }
        token = page["nextPageToken"].as_str().unwrap().to_string();
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(seen.len(), 6);
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, sorted, "newest status first, ties by id");
    let odd = s.ok("ListTasks", json!({"contextId": "odd"})).await;
    assert_eq!(odd["totalSize"], 3);
    let working = s
        .ok("ListTasks", json!({"status": "TASK_STATE_INPUT_REQUIRED"}))
        .await;
    assert_eq!(working["totalSize"], 1);
    let with_art = s
        .ok(
            "ListTasks",
            json!({"include_artifacts": true, "context_id": "even", "page_size": 100}),
        )
        .await;
    assert!(
        with_art["tasks"][0]["artifacts"].is_array()
            || with_art["tasks"][0]["status"]["state"] == "TASK_STATE_COMPLETED"
    );
    let future = s
        .ok(
            "ListTasks",
            json!({"statusTimestampAfter": "2999-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(
        future,
        json!({"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0})
    );
    let fresh = s
        .ok(
            "ListTasks",
            json!({"contextId": uuid::Uuid::new_v4().to_string()}),
        )
        .await;
    assert_eq!(fresh["tasks"], json!([]));
    assert_eq!(fresh["nextPageToken"], "");
    let no_history = s.ok("ListTasks", json!({"historyLength": 0})).await;
    assert!(no_history["tasks"][0].get("history").is_none());
}

#[tokio::test]
async fn list_tasks_refuses_bad_paging() {
    let s = Server::start().await;
    s.send_task("m", "x").await;
    s.send_task("m", "y").await;
    assert_eq!(s.err("ListTasks", json!({"pageSize": 0})).await, -32602);
    assert_eq!(s.err("ListTasks", json!({"pageSize": 101})).await, -32602);
    assert!(s.ok("ListTasks", json!({"pageSize": 100})).await["tasks"].is_array());
    assert!(s.ok("ListTasks", json!({"pageSize": 1})).await["tasks"].is_array());
    assert_eq!(
        s.err("ListTasks", json!({"historyLength": -5})).await,
        -32602
    );
    assert_eq!(
        s.err("ListTasks", json!({"pageToken": "forged"})).await,
        -32602
    );
    // gRPC: no client can send an enum name the proto lacks (JSON bindings only).
    if s.expressible("ListTasks", &json!({"status": "TASK_STATE_BOGUS"}))
        .is_ok()
    {
        assert_eq!(
            s.err("ListTasks", json!({"status": "TASK_STATE_BOGUS"}))
                .await,
            -32602
        );
    }
    let page = s.ok("ListTasks", json!({"pageSize": 1})).await;
    let token = page["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty());
    let tampered = format!("{}A", token);
    assert_eq!(
        s.err("ListTasks", json!({"pageSize": 1, "pageToken": tampered}))
            .await,
        -32602
    );
    // a token is bound to the filters it was issued for
    assert_eq!(
        s.err(
            "ListTasks",
            json!({"pageSize": 1, "pageToken": token, "contextId": "other"})
        )
        .await,
        -32602
    );
}

// ------------------------------------------------------------------ CancelTask

#[tokio::test]
async fn cancel_rules() {
    let s = Server::start().await;
    let open = s.send_task("tck-input-required-c", "x").await;
    let id = open["id"].as_str().unwrap();
    let t = s.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_CANCELED");
    let again = s.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(
        again["status"]["state"], "TASK_STATE_CANCELED",
        "a repeated cancel returns it"
    );
    let done = s.send_task("tck-complete-task-c", "x").await;
    assert_eq!(s.err("CancelTask", json!({"id": done["id"]})).await, -32002);
    assert_eq!(s.err("CancelTask", json!({"id": "missing"})).await, -32001);
    let v = s.send("m", "x", json!({"taskId": id}), json!({})).await;
    assert_eq!(error_code(&v), -32004, "a canceled task takes no messages");
}

#[tokio::test]
async fn canceling_a_working_task_stops_the_agent() {
    let s = Server::start().await;
    let v = s
        .send(
            "tck-delayed-complete-c",
            "x",
            json!({}),
            json!({"returnImmediately": true}),
        )
        .await;
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let t = s.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_CANCELED");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t = s.ok("GetTask", json!({"id": id})).await;
    assert_eq!(
        t["status"]["state"], "TASK_STATE_CANCELED",
        "terminal stays terminal"
    );
}

// ------------------------------------------------------------------ protocol errors

#[tokio::test]
async fn undeclared_capabilities_get_their_prescribed_errors() {
    let s = Server::start().await;
    // Streaming is declared: its requests are read like any other (tests/tests/streaming.rs).
    assert_eq!(s.err("SendStreamingMessage", json!({})).await, -32602);
    assert_eq!(s.err("SubscribeToTask", json!({"id": "x"})).await, -32001);
    assert_eq!(s.err("GetExtendedAgentCard", json!({})).await, -32004);
    // Push notifications are served where a push worker runs (tests/tests/push.rs); a server
    // without one says so in its card and answers the config operations with -32003.
    if s.card().await["capabilities"]["pushNotifications"] == false {
        for m in [
            "CreateTaskPushNotificationConfig",
            "GetTaskPushNotificationConfig",
            "ListTaskPushNotificationConfigs",
            "DeleteTaskPushNotificationConfig",
        ] {
            assert_eq!(
                s.err(m, json!({"taskId": "x", "id": "y"})).await,
                -32003,
                "{m}"
            );
        }
        let v = s
            .send(
                "m",
                "x",
                json!({}),
                json!({"taskPushNotificationConfig": {"url": "https://example.com/h"}}),
            )
            .await;
        assert_eq!(error_code(&v), -32003);
    }
    // gRPC: an RPC the service lacks is answered by tonic's router (UNIMPLEMENTED, no message,
    // no ErrorInfo), not by the A2A layer.
    if !binding().is_grpc() {
        assert_eq!(s.err("NoSuchMethod", json!({})).await, -32601);
    }
    // A 0.3 name called as 1.0 is served only to 0.3 callers (ADR 031).
    if binding() == Binding::JsonRpc {
        assert_eq!(
            s.err("message/send", json!({})).await,
            -32009,
            "a 0.3 method with A2A-Version 1.0"
        );
    }
}

#[tokio::test]
async fn versions_other_than_1_x_are_refused() {
    let s = Server::start().await;
    let body = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}),
    )
    .unwrap();
    let ct = ("Content-Type", "application/json");
    let (_, v) = s.post_raw("/a2a", body.clone(), &[ct]).await;
    assert_eq!(error_code(&v), -32009, "missing means 0.3");
    let (_, v) = s
        .post_raw("/a2a", body.clone(), &[ct, ("A2A-Version", "99.0")])
        .await;
    assert_eq!(error_code(&v), -32009);
    let (_, v) = s
        .post_raw("/a2a", body.clone(), &[ct, ("A2A-Version", "0.3")])
        .await;
    assert_eq!(error_code(&v), -32009);
    let (_, v) = s
        .post_raw("/a2a", body.clone(), &[ct, ("A2A-Version", "1.1")])
        .await;
    assert!(v.get("result").is_some(), "any 1.x is served");
    let (_, v) = s.post_raw("/a2a?A2A-Version=1.0", body, &[ct]).await;
    assert!(v.get("result").is_some(), "the query parameter counts too");
}

#[tokio::test]
async fn the_endpoint_answers_with_and_without_a_trailing_slash() {
    let s = Server::start().await;
    let body =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": "x", "method": "ListTasks"})).unwrap();
    for path in ["/a2a", "/a2a/", "/"] {
        let (status, v) = s
            .post_raw(
                path,
                body.clone(),
                &[("Content-Type", "application/json"), ("A2A-Version", "1.0")],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(v["id"], "x");
        assert!(v["result"]["tasks"].is_array(), "{path}: {v}");
    }
}

#[tokio::test]
async fn bad_input_gets_its_specific_error_and_changes_nothing() {
    let s = Server::start().await;
    let json_ct = [("Content-Type", "application/json"), ("A2A-Version", "1.0")];
    let raw = |b: &str| b.as_bytes().to_vec();
    let cases: Vec<(Vec<u8>, i64, &str)> = vec![
        (raw("{not json"), -32700, "malformed JSON"),
        (
            raw(r#"{"jsonrpc":"1.0","id":1,"method":"ListTasks"}"#),
            -32600,
            "wrong jsonrpc",
        ),
        (raw(r#"{"jsonrpc":"2.0","id":1}"#), -32600, "missing method"),
        (
            raw(r#"{"jsonrpc":"2.0","id":1,"method":7}"#),
            -32600,
            "method not a string",
        ),
        (
            raw(r#"[{"jsonrpc":"2.0","id":1,"method":"ListTasks"}]"#),
            -32600,
            "batch",
        ),
        (
            raw(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ListTasks"}"#),
            -32600,
            "object id",
        ),
        (
            raw(r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":[1,2]}"#),
            -32602,
            "params array",
        ),
        (
            raw(r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}"#),
            -32602,
            "no message",
        ),
        (
            raw(r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":"hi"}}"#),
            -32602,
            "message of the wrong type",
        ),
        (
            raw(
                r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            ),
            -32602,
            "no parts",
        ),
        (
            raw(
                r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{}]}}}"#,
            ),
            -32602,
            "empty part",
        ),
        (
            raw(
                r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"","role":"ROLE_USER","parts":[{"text":"x"}]}}}"#,
            ),
            -32602,
            "empty messageId",
        ),
        (
            raw(
                r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","parts":[{"text":"x"}]}}}"#,
            ),
            -32602,
            "no role",
        ),
        (
            raw(
                r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"%%%"}]}}}"#,
            ),
            -32602,
            "bad base64",
        ),
        (
            raw(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}"#),
            -32602,
            "id of the wrong type",
        ),
        (
            raw(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}"#),
            -32602,
            "missing id",
        ),
    ];
    for (body, code, what) in cases {
        let (status, v) = s.post_raw("/a2a", body, &json_ct).await;
        assert_eq!(status, StatusCode::OK, "{what}");
        assert_eq!(error_code(&v), code, "{what}: {v}");
    }
    // the field path is named
    let (_, v) = s
        .post_raw(
            "/a2a",
            raw(r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#),
            &json_ct,
        )
        .await;
    assert_eq!(v["error"]["data"][0]["metadata"]["field"], "message.parts");
    // wrong content type
    let (_, v) = s
        .post_raw(
            "/a2a",
            raw(r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks"}"#),
            &[("Content-Type", "text/plain"), ("A2A-Version", "1.0")],
        )
        .await;
    assert_eq!(error_code(&v), -32005);
    // over 1 MiB: refused before parsing
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"{}"}}]}}}}}}"#,
        "a".repeat(taskledger_app::http::MAX_BODY_BYTES)
    );
    let (status, v) = s.post_raw("/a2a", big.into_bytes(), &json_ct).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(&v), -32600);
    // just under the limit is parsed
    let pad = taskledger_app::http::MAX_BODY_BYTES - 200;
    let fits = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{{"id":"x","pad":"{}"}}}}"#,
        "a".repeat(pad)
    );
    let (status, v) = s.post_raw("/a2a", fits.into_bytes(), &json_ct).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(error_code(&v), -32001);
    // unknown fields are ignored
    let v = s
        .call("SendMessage", json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}], "kind": "message"}, "extra": true}))
        .await;
    assert!(v.get("result").is_some(), "{v}");
    assert_eq!(
        s.total_tasks().await,
        1,
        "only the last, valid request made a task"
    );
}

#[tokio::test]
async fn odd_params_never_crash_the_server() {
    let s = Server::start().await;
    let odd = [
        json!(null),
        json!({"message": null}),
        json!({"message": {"parts": [{"text": null}]}}),
        json!({"message": {"messageId": "m", "role": 99, "parts": [{"text": "x"}]}}),
        json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}}),
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": null}]}}),
        json!({"message": {"messageId": "\u{0}", "role": "ROLE_USER", "parts": [{"text": "x"}]}}),
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}], "taskId": "x".repeat(10_000)}}),
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}], "contextId": ""}}),
        json!({"id": "x".repeat(10_000), "historyLength": 2147483647}),
        json!({"pageSize": 9_999_999_999_i64}),
        json!({"statusTimestampAfter": "not a time"}),
        json!({"id": [], "pageToken": {}}),
    ];
    for method in ["SendMessage", "GetTask", "ListTasks", "CancelTask"] {
        for p in &odd {
            // Values only JSON-RPC can carry: a structured or missing id in an HTTP+JSON path,
            // a wrongly typed or out-of-range field in a gRPC message.
            if s.expressible(method, p).is_err() {
                continue;
            }
            let v = s.call(method, p.clone()).await;
            assert!(
                v.get("result").is_some() || v.get("error").is_some(),
                "{method} {p}: {v}"
            );
            if v.get("error").is_some() {
                error_code(&v);
            }
        }
    }
    // still serving
    assert!(s.total_tasks().await >= 0);
}

#[tokio::test]
async fn a_task_id_past_the_limit_is_invalid_and_one_at_it_is_not_found() {
    let s = Server::start().await;
    let at = "t".repeat(taskledger_domain::ids::MAX_ID_BYTES);
    let past = "t".repeat(taskledger_domain::ids::MAX_ID_BYTES + 1);
    for method in ["GetTask", "CancelTask"] {
        let v = s.call(method, json!({"id": at})).await;
        assert_eq!(error_code(&v), -32001, "{method} at the limit: {v}");
        let v = s.call(method, json!({"id": past})).await;
        assert_eq!(error_code(&v), -32602, "{method} past the limit: {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("at most 256 bytes"), "{message}");
        assert!(!message.contains(&past), "the id is not echoed: {message}");
    }
    let send = json!({"message": {"messageId": "m-long", "role": "ROLE_USER",
        "parts": [{"text": "x"}], "taskId": past}});
    let v = s.call("SendMessage", send).await;
    assert_eq!(error_code(&v), -32602, "SendMessage past the limit: {v}");
    assert_eq!(s.total_tasks().await, 0);
}

// ------------------------------------------------------------------ identity

fn with_tokens() -> Config {
    let mut c = test_config();
    c.tokens = HashMap::from([
        (
            "alice-token".to_string(),
            Principal::new("acme", "alice").unwrap(),
        ),
        (
            "bob-token".to_string(),
            Principal::new("acme", "bob").unwrap(),
        ),
    ]);
    c
}

#[tokio::test]
async fn another_principals_task_is_not_found() {
    let server = Server::start_with(with_tokens()).await;
    let alice = server.as_user("alice-token");
    let bob = server.as_user("bob-token");
    let task = alice.send_task("tck-input-required-a", "mine").await;
    let id = task["id"].as_str().unwrap();
    assert_eq!(bob.err("GetTask", json!({"id": id})).await, -32001);
    assert_eq!(bob.err("CancelTask", json!({"id": id})).await, -32001);
    let v = bob.send("m", "x", json!({"taskId": id}), json!({})).await;
    assert_eq!(error_code(&v), -32001);
    assert_eq!(bob.total_tasks().await, 0);
    assert_eq!(alice.total_tasks().await, 1);
    // the card says a bearer token is needed
    let card = server.card().await;
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
}

#[tokio::test]
async fn without_a_valid_token_the_request_is_unauthenticated() {
    let server = Server::start_with(with_tokens()).await;
    let body =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks"})).unwrap();
    let h = [("Content-Type", "application/json"), ("A2A-Version", "1.0")];
    let (status, v) = server.post_raw("/a2a", body.clone(), &h).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(v["error"]["data"][0]["reason"], "UNAUTHENTICATED");
    let (status, _) = server.as_user("wrong").post_raw("/a2a", body, &h).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

// ------------------------------------------------------------------ durability

#[tokio::test]
async fn tasks_survive_a_restart_on_the_same_data_directory() {
    let dir = std::env::temp_dir().join(format!("taskledger-restart-{}", uuid::Uuid::new_v4()));
    let storage = match test_config().storage {
        Storage::Memory => Storage::Dir(dir.clone()),
        other => other,
    };
    let config = || {
        let mut c = test_config();
        c.storage = storage.clone();
        if matches!(c.storage, Storage::Dynamo { .. }) {
            // page tokens are signed: servers sharing a table share the key
            c.cursor_key = Some(b"restart-test-key".to_vec());
        }
        c
    };
    let first = Server::start_with(config()).await;
    let task = first.send_task("tck-input-required-d", "remember me").await;
    let id = task["id"].as_str().unwrap().to_string();
    first.send_task("m-2", "another").await;
    let page = first.ok("ListTasks", json!({"pageSize": 1})).await;
    let token = page["nextPageToken"].as_str().unwrap().to_string();
    drop(first);
    let second = Server::start_with(config()).await;
    let t = second.ok("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(t["history"][0]["parts"][0]["text"], "remember me");
    // page tokens stay valid across restarts (the signing key is kept in the data directory)
    assert!(!token.is_empty());
    let next = second
        .ok("ListTasks", json!({"pageSize": 1, "pageToken": token}))
        .await;
    assert_eq!(next["tasks"].as_array().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

// ------------------------------------------------------------------ concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_clients_posting_to_one_task_lose_nothing_and_repeat_nothing() {
    let s = std::sync::Arc::new(Server::start().await);
    let task = s.send_task("tck-input-required-conc", "start").await;
    let id = task["id"].as_str().unwrap().to_string();
    let mut handles = Vec::new();
    for c in 0..32 {
        let (s, id) = (s.clone(), id.clone());
        handles.push(tokio::spawn(async move {
            let v = s
                .send(
                    &format!("tck-input-required-c{c}"),
                    &format!("message {c}"),
                    json!({"taskId": id}),
                    json!({"returnImmediately": true, "historyLength": 0}),
                )
                .await;
            (c, v)
        }));
    }
    let mut accepted = Vec::new();
    for h in handles {
        let (c, v) = h.await.unwrap();
        if v.get("result").is_some() {
            accepted.push(format!("message {c}"));
        } else {
            // a refusal is clean: a well-formed error, "busy, retry" for a lost race
            assert_eq!(error_code(&v), -32603, "{v}");
            assert_eq!(v["error"]["data"][0]["reason"], "UNAVAILABLE");
        }
    }
    assert!(
        accepted.len() >= 16,
        "most writers get through: {}",
        accepted.len()
    );
    // let the agent's answers settle, then check history
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t = s.ok("GetTask", json!({"id": id})).await;
    let texts: Vec<String> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_USER")
        .map(|m| m["parts"][0]["text"].as_str().unwrap().to_string())
        .collect();
    for a in &accepted {
        assert_eq!(
            texts.iter().filter(|t| *t == a).count(),
            1,
            "{a} exactly once"
        );
    }
    assert_eq!(
        texts.len(),
        accepted.len() + 1,
        "nothing else entered history"
    );
    // the timeline is strictly increasing: no two commits interleaved
    let stamps: Vec<String> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["metadata"]["kagent.dev/a2a/timeline-position"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(stamps.windows(2).all(|w| w[0] < w[1]), "{stamps:?}");
}
