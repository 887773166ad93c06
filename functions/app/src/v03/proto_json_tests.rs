//! 0.3 ProtoJSON against 0.3's JSON-RPC shapes, both ways.

use serde_json::json;

use super::*;

#[test]
fn a_rest_send_request_reads_as_json_rpc_params() {
    let body = json!({"message": {"message_id": "m", "role": "ROLE_USER", "task_id": "t",
        "content": [{"text": "hi"}, {"file": {"file_with_uri": "https://x", "mime_type": "image/png"}},
                    {"file": {"fileWithBytes": STANDARD.encode("aGk=")}}, {"data": {"data": {"k": 1}}}]},
        "configuration": {"blocking": true, "historyLength": 2, "pushNotification": {"url": "https://h", "token": "t"}}});
    let p = send_request_in(&body).unwrap();
    assert_eq!(
        p,
        json!({"message": {"kind": "message", "messageId": "m", "taskId": "t", "role": "user", "parts": [
                {"kind": "text", "text": "hi"},
                {"kind": "file", "file": {"uri": "https://x", "mimeType": "image/png"}},
                {"kind": "file", "file": {"bytes": "aGk="}},
                {"kind": "data", "data": {"k": 1}}]},
            "configuration": {"historyLength": 2, "pushNotificationConfig": {"url": "https://h", "token": "t"}, "blocking": true}})
    );
    // proto3: an absent `blocking` is false
    let p = send_request_in(
        &json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": []}}),
    )
    .unwrap();
    assert_eq!(p["configuration"]["blocking"], false);
    assert!(send_request_in(
        &json!({"message": {"messageId": "m", "role": "user!", "content": []}})
    )
    .is_err());
    assert!(send_request_in(
        &json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{}]}})
    )
    .is_err());
}

#[test]
fn responses_are_written_as_the_0_3_proto_writes_them() {
    let task = json!({"kind": "task", "id": "t", "contextId": "c",
        "status": {"state": "canceled", "message": {"kind": "message", "messageId": "a", "role": "agent", "parts": [{"kind": "text", "text": "bye"}]}},
        "artifacts": [{"artifactId": "a", "parts": [{"kind": "file", "file": {"bytes": "aGk=", "name": "x"}}]}]});
    assert_eq!(
        response_out(&task),
        json!({"task": {"id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_CANCELLED", "message": {"messageId": "a", "role": "ROLE_AGENT", "content": [{"text": "bye"}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"file": {"fileWithBytes": STANDARD.encode("aGk="), "name": "x"}}]}]}})
    );
    let upd = json!({"kind": "status-update", "taskId": "t", "contextId": "c", "status": {"state": "working"}, "final": false});
    assert_eq!(
        response_out(&upd),
        json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}})
    );
    let art = json!({"kind": "artifact-update", "taskId": "t", "contextId": "c", "append": true, "lastChunk": false,
        "artifact": {"artifactId": "a", "parts": [{"kind": "data", "data": {"k": 1}}]}});
    assert_eq!(
        response_out(&art),
        json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "append": true,
            "artifact": {"artifactId": "a", "parts": [{"data": {"data": {"k": 1}}}]}}})
    );
}

#[test]
fn push_configs_take_any_of_the_three_bodies_and_are_named_by_resource() {
    let cfg = json!({"id": "c", "url": "https://h", "authentication": {"schemes": ["Bearer"]}});
    for body in [
        json!({"parent": "tasks/t", "configId": "c", "config": {"name": "tasks/t/pushNotificationConfigs/c", "pushNotificationConfig": cfg}}),
        json!({"config": {"pushNotificationConfig": cfg}}),
        json!({"pushNotificationConfig": cfg}),
        cfg.clone(),
    ] {
        assert_eq!(set_config_in(&body).unwrap(), cfg, "{body}");
    }
    let id_outside =
        json!({"configId": "c9", "config": {"pushNotificationConfig": {"url": "https://h"}}});
    assert_eq!(set_config_in(&id_outside).unwrap()["id"], "c9");
    assert_eq!(
        push_config_out(
            &json!({"taskId": "t", "pushNotificationConfig": {"id": "c", "url": "https://h"}})
        ),
        json!({"name": "tasks/t/pushNotificationConfigs/c", "pushNotificationConfig": {"id": "c", "url": "https://h"}})
    );
}
