//! A deployment that declares fewer capabilities (ACTS's reduced pass; `--streaming-enabled
//! false`, `--push-enabled false`, no credentials): the card says what is served, and each
//! gated operation it does not declare answers with its own error (A2A §3.3.4) on every binding
//! and protocol line, taking nothing in.

use reqwest::StatusCode;
use serde_json::{json, Value};
use taskledger_domain::card::Served;
use taskledger_local::GrpcSettings;
use taskledger_tests::{test_config, Binding, Server};

/// JSON-RPC's UnsupportedOperationError and PushNotificationNotSupportedError.
const UNSUPPORTED_OPERATION: i64 = -32004;
const PUSH_NOT_SUPPORTED: i64 = -32003;

async fn server(served: Served) -> Server {
    let mut config = test_config();
    config.served = served;
    config.grpc = Some(GrpcSettings::loopback());
    Server::start_with(config).await
}

fn message(text: &str) -> Value {
    json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
        "parts": [{"text": text}]}})
}

const REDUCED: Served = Served {
    streaming: false,
    push_notifications: false,
};

#[tokio::test]
async fn the_card_declares_exactly_what_is_served() {
    for (served, streaming, push) in [
        (Served::all(), true, true),
        (REDUCED, false, false),
        (
            Served {
                streaming: false,
                push_notifications: true,
            },
            false,
            true,
        ),
    ] {
        let s = server(served).await;
        let caps = s.card().await["capabilities"].clone();
        assert_eq!(caps["streaming"], streaming, "{served:?}: {caps}");
        assert_eq!(caps["pushNotifications"], push, "{served:?}: {caps}");
        // No credentials configured: no extended card either.
        assert_eq!(caps["extendedAgentCard"], false, "{caps}");
        // The 0.3 card (a request without a version) says the same.
        let v03 = s.get_json("/.well-known/agent.json").await;
        assert_eq!(v03["capabilities"]["streaming"], streaming, "{v03}");
        assert_eq!(v03["capabilities"]["pushNotifications"], push, "{v03}");
    }
}

#[tokio::test]
async fn each_undeclared_operation_answers_its_error_on_every_binding_and_takes_nothing_in() {
    let s = server(REDUCED).await;
    // A task to subscribe to, left waiting.
    let waiting = s.send_task("tck-input-required-cap", "hello").await;
    let id = waiting["id"].as_str().unwrap().to_string();
    assert_eq!(waiting["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    for b in Binding::ALL {
        let c = s.over(b);
        let before = c.total_tasks().await;
        let refused = c
            .stream("SendStreamingMessage", message("tck-complete-task hi"))
            .await
            .code()
            .await;
        assert_eq!(refused, UNSUPPORTED_OPERATION, "{}", b.name());
        assert_eq!(
            c.total_tasks().await,
            before,
            "{}: nothing taken in",
            b.name()
        );
        let refused = c
            .stream("SubscribeToTask", json!({"id": id}))
            .await
            .code()
            .await;
        assert_eq!(refused, UNSUPPORTED_OPERATION, "{}", b.name());
        let push = json!({"taskId": id, "id": "p1", "url": "http://127.0.0.1:9/hook"});
        assert_eq!(
            c.err("CreateTaskPushNotificationConfig", push).await,
            PUSH_NOT_SUPPORTED,
            "{}",
            b.name()
        );
        assert_eq!(
            c.err("GetExtendedAgentCard", json!({})).await,
            UNSUPPORTED_OPERATION,
            "{}",
            b.name()
        );
        // What is not gated is served as before.
        let t = c.ok("GetTask", json!({"id": id})).await;
        assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{t}");
    }
    // The 0.3 line's stream methods alike.
    for (method, params) in [
        (
            "message/stream",
            json!({"message": {"kind": "message", "messageId": "m03", "role": "user",
                "parts": [{"kind": "text", "text": "tck-complete-task hi"}]}}),
        ),
        ("tasks/resubscribe", json!({"id": id})),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let resp = s
            .client
            .post(format!("{}/a2a", s.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{method}");
        // 0.3's streams say a refusal as their one event, as the 0.3 SDKs do.
        let text = resp.text().await.unwrap();
        let json = text.trim().strip_prefix("data:").unwrap_or(&text).trim();
        let v: Value = serde_json::from_str(json).unwrap_or_else(|_| panic!("{method}: {text}"));
        assert_eq!(v["error"]["code"], UNSUPPORTED_OPERATION, "{method}: {v}");
    }
    assert_eq!(s.total_tasks().await, 1, "only the waiting task");
}

#[tokio::test]
async fn a_server_that_streams_but_does_not_push_still_streams() {
    let s = server(Served {
        streaming: true,
        push_notifications: false,
    })
    .await;
    let mut events = s
        .stream("SendStreamingMessage", message("tck-complete-task hi"))
        .await
        .stream();
    let first = events.expect().await;
    assert!(first.state().is_some(), "{:?}", first.body());
}
