//! The 0.3 JSON-RPC shapes against the 1.0 ProtoJSON ones, both ways, and every refusal.

use serde_json::json;
use taskledger_domain::error::ErrorKind;

use super::*;

#[test]
fn a_0_3_message_reads_as_1_0_with_each_part_kind() {
    let m = json!({"kind": "message", "messageId": "m-1", "role": "user", "contextId": "c", "taskId": "t",
    "referenceTaskIds": ["r"], "metadata": {"k": 1}, "extensions": ["urn:x"],
    "parts": [
        {"kind": "text", "text": "hi", "metadata": {"a": 1}},
        {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "hi.txt"}},
        {"kind": "file", "file": {"uri": "https://f.example/x.pdf"}},
        {"kind": "data", "data": {"x": 1}, "metadata": {"mimeType": "application/vnd.tiny-harness.task+json"}},
        {"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": true}},
        {"text": "no kind"}
    ]});
    let v = message_in(&m, "params.message").unwrap();
    assert_eq!(
        v,
        json!({"messageId": "m-1", "role": "ROLE_USER", "contextId": "c", "taskId": "t",
        "referenceTaskIds": ["r"], "metadata": {"k": 1}, "extensions": ["urn:x"],
        "parts": [
            {"text": "hi", "metadata": {"a": 1}},
            {"raw": "aGk=", "mediaType": "text/plain", "filename": "hi.txt"},
            {"url": "https://f.example/x.pdf"},
            {"data": {"x": 1}, "mediaType": "application/vnd.tiny-harness.task+json"},
            {"data": [1, 2]},
            {"text": "no kind"}
        ]})
    );
}

#[test]
fn a_1_0_shape_or_an_unknown_kind_in_a_0_3_request_is_refused_by_field() {
    let refused = |m: serde_json::Value| {
        let e = message_in(&m, "params.message").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
        e.client_message()
    };
    let msg = |parts: serde_json::Value, role: &str| json!({"messageId": "m", "role": role, "parts": parts});
    assert!(refused(msg(json!([{"text": "x"}]), "ROLE_USER")).contains("params.message.role"));
    assert!(refused(msg(json!([{"raw": "aGk="}]), "user")).contains("1.0's file fields"));
    assert!(refused(msg(json!([{"kind": "image", "x": 1}]), "user"))
        .contains("\"image\" is not a part kind"));
    // 0.2's discriminator is read as 0.3's
    assert!(refused(msg(
        json!([{"type": "unsupported_type", "text": "x"}]),
        "user"
    ))
    .contains("is not a part kind"));
    assert!(message_in(&msg(json!([{"type": "text", "text": "x"}]), "user"), "m").is_ok());
    assert!(refused(msg(
        json!([{"kind": "file", "file": {"bytes": "a", "uri": "b"}}]),
        "user"
    ))
    .contains("exactly one"));
    assert!(
        refused(json!({"kind": "task", "messageId": "m", "role": "user", "parts": []}))
            .contains("params.message.kind")
    );
    assert!(refused(msg(json!("x"), "user")).contains("params.message.parts"));
    assert!(refused(json!({"messageId": "m", "parts": []})).contains("params.message.role"));
}

#[test]
fn send_params_map_blocking_history_and_the_push_config() {
    let p = json!({"message": {"kind": "message", "messageId": "m", "role": "user", "taskId": "t-1", "parts": [{"kind": "text", "text": "x"}]},
        "configuration": {"blocking": false, "historyLength": 0, "acceptedOutputModes": ["text/plain"],
            "pushNotificationConfig": {"url": "https://h.example/hook", "token": "tok",
                "authentication": {"schemes": ["Bearer"], "credentials": "c"}}}});
    let v = send_params_in(&p).unwrap();
    let c = &v["configuration"];
    assert_eq!(c["returnImmediately"], true);
    assert!(
        c.get("historyLength").is_none(),
        "0.3's 0 is no limit: unset"
    );
    assert_eq!(c["acceptedOutputModes"], json!(["text/plain"]));
    assert_eq!(
        c["taskPushNotificationConfig"],
        json!({"taskId": "t-1", "id": "t-1", "url": "https://h.example/hook", "token": "tok",
            "authentication": {"scheme": "Bearer", "credentials": "c"}})
    );
    let blocking = send_params_in(
        &json!({"message": {"messageId": "m", "role": "user", "parts": []},
        "configuration": {"blocking": true, "historyLength": 3}}),
    )
    .unwrap();
    assert_eq!(blocking["configuration"]["returnImmediately"], false);
    assert_eq!(blocking["configuration"]["historyLength"], 3);
    assert!(send_params_in(&json!({})).is_err());
}

#[test]
fn a_1_0_task_reads_as_a_0_3_task() {
    let t = json!({"id": "t", "contextId": "c",
        "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-01-01T00:00:00Z",
            "message": {"messageId": "a", "role": "ROLE_AGENT", "parts": [{"text": "which?"}]}},
        "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "https://x", "mediaType": "image/png", "filename": "x.png"}]}],
        "artifacts": [{"artifactId": "a1", "name": "n", "parts": [{"data": 7, "mediaType": "application/a2ui+json"}]}],
        "metadata": {"k": 1}});
    assert_eq!(
        task_out(&t),
        json!({"kind": "task", "id": "t", "contextId": "c", "metadata": {"k": 1},
            "status": {"state": "input-required", "timestamp": "2026-01-01T00:00:00Z",
                "message": {"kind": "message", "messageId": "a", "role": "agent", "parts": [{"kind": "text", "text": "which?"}]}},
            "history": [{"kind": "message", "messageId": "m", "role": "user",
                "parts": [{"kind": "file", "file": {"uri": "https://x", "mimeType": "image/png", "name": "x.png"}}]}],
            "artifacts": [{"artifactId": "a1", "name": "n", "parts": [{"kind": "data", "data": {"value": 7},
                "metadata": {"data_part_compat": true, "mimeType": "application/a2ui+json"}}]}]})
    );
    // and back: what 0.3 wrote of a part reads as the 1.0 part it was
    let back = part_in(&task_out(&t)["artifacts"][0]["parts"][0], "p").unwrap();
    assert_eq!(
        back,
        json!({"data": 7, "mediaType": "application/a2ui+json"})
    );
}

#[test]
fn every_state_has_its_0_3_name() {
    for (v1, v03) in [
        ("TASK_STATE_SUBMITTED", "submitted"),
        ("TASK_STATE_WORKING", "working"),
        ("TASK_STATE_INPUT_REQUIRED", "input-required"),
        ("TASK_STATE_AUTH_REQUIRED", "auth-required"),
        ("TASK_STATE_COMPLETED", "completed"),
        ("TASK_STATE_CANCELED", "canceled"),
        ("TASK_STATE_FAILED", "failed"),
        ("TASK_STATE_REJECTED", "rejected"),
        ("TASK_STATE_UNSPECIFIED", "unknown"),
    ] {
        assert_eq!(state_out(v1), v03);
    }
}

#[test]
fn stream_events_carry_kind_and_final_where_the_stream_ends() {
    let ends = |s: &str| matches!(s, "TASK_STATE_COMPLETED" | "TASK_STATE_INPUT_REQUIRED");
    let working = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}});
    assert_eq!(
        event_out(&working, ends),
        json!({"kind": "status-update", "taskId": "t", "contextId": "c", "status": {"state": "working"}, "final": false})
    );
    let asked = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}});
    assert_eq!(event_out(&asked, ends)["final"], true);
    let art = json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "append": true, "lastChunk": false,
        "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}});
    assert_eq!(
        event_out(&art, ends),
        json!({"kind": "artifact-update", "taskId": "t", "contextId": "c", "append": true, "lastChunk": false,
            "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "x"}]}})
    );
    assert_eq!(
        event_out(
            &json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}}),
            ends
        )["kind"],
        "task"
    );
    assert_eq!(
        send_result_out(&json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": []}}))
            ["kind"],
        "message"
    );
}

#[test]
fn push_configs_wrap_and_unwrap() {
    let flat = json!({"taskId": "t", "id": "c1", "url": "https://h", "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "s"}});
    let wrapped = push_config_out(&flat);
    assert_eq!(
        wrapped,
        json!({"taskId": "t", "pushNotificationConfig": {"id": "c1", "url": "https://h", "token": "tok",
            "authentication": {"schemes": ["Bearer"], "credentials": "s"}}})
    );
    assert_eq!(
        push_config_in(&wrapped["pushNotificationConfig"], "t", "p").unwrap(),
        flat
    );
    // without an id, the task's id names it
    assert_eq!(
        push_config_in(&json!({"url": "https://h"}), "t", "p").unwrap()["id"],
        "t"
    );
    assert!(push_config_in(
        &json!({"url": "https://h", "authentication": {"schemes": "Bearer"}}),
        "t",
        "p"
    )
    .is_err());
}
