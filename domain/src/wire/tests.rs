//! Round trips and shapes of the wire types.

use serde_json::{json, Value};

use super::*;

fn contains_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.iter().any(contains_null),
        Value::Object(o) => o.values().any(contains_null),
        _ => false,
    }
}

#[test]
fn parts_round_trip_each_content_kind() {
    for v in [
        json!({"text": "hi"}),
        json!({"raw": "aGVsbG8=", "filename": "a.txt", "mediaType": "text/plain"}),
        json!({"url": "https://example.com/a.pdf", "mediaType": "application/pdf"}),
        json!({"data": {"k": 1}, "metadata": {"x": "y"}}),
    ] {
        let p: Part = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
    }
}

#[test]
fn part_accepts_snake_case_media_type() {
    let p: Part = serde_json::from_value(json!({"text": "x", "media_type": "text/plain"})).unwrap();
    assert_eq!(p.media_type.as_deref(), Some("text/plain"));
}

#[test]
fn part_with_no_or_two_contents_is_refused() {
    assert!(serde_json::from_value::<Part>(json!({"metadata": {}})).is_err());
    assert!(serde_json::from_value::<Part>(json!({"text": "a", "url": "b"})).is_err());
    assert!(serde_json::from_value::<Part>(json!({"raw": "not base64!"})).is_err());
}

#[test]
fn enums_accept_names_and_numbers_and_print_names() {
    let s: TaskState = serde_json::from_value(json!("TASK_STATE_WORKING")).unwrap();
    assert_eq!(s, TaskState::Working);
    let s: TaskState = serde_json::from_value(json!(6)).unwrap();
    assert_eq!(s, TaskState::InputRequired);
    assert_eq!(
        serde_json::to_value(Role::Agent).unwrap(),
        json!("ROLE_AGENT")
    );
    assert!(serde_json::from_value::<TaskState>(json!("working")).is_err());
}

#[test]
fn message_accepts_snake_case_and_ignores_unknown_fields() {
    let m: Message = serde_json::from_value(json!({
        "message_id": "m1", "context_id": "c1", "task_id": "t1", "role": "ROLE_USER",
        "parts": [{"text": "hi"}], "reference_task_ids": ["t0"], "kind": "message", "extra": 1
    }))
    .unwrap();
    assert_eq!(m.message_id, "m1");
    assert_eq!(m.context_id.as_deref(), Some("c1"));
    assert_eq!(m.reference_task_ids, vec!["t0".to_string()]);
    let out = serde_json::to_value(&m).unwrap();
    assert_eq!(out["messageId"], "m1");
    assert_eq!(out["referenceTaskIds"], json!(["t0"]));
    assert!(out.get("kind").is_none());
}

#[test]
fn unset_fields_are_omitted_never_null() {
    let t = Task {
        id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus {
            state: TaskState::Submitted,
            message: None,
            timestamp: None,
            elicitations: vec![],
        },
        artifacts: None,
        history: None,
        metadata: None,
        generation: None,
        timeline: Default::default(),
        elicitations: vec![],
    };
    let v = serde_json::to_value(&t).unwrap();
    assert!(!contains_null(&v));
    assert_eq!(
        v,
        json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}})
    );
}

#[test]
fn list_response_always_has_required_members() {
    let r = ListTasksResponse {
        tasks: vec![],
        next_page_token: String::new(),
        page_size: 50,
        total_size: 0,
    };
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0})
    );
}

#[test]
fn send_message_response_is_a_oneof_wrapper() {
    let m = Message::agent_text("m", "hi");
    let v = serde_json::to_value(SendMessageResponse::Message(m)).unwrap();
    assert!(v.get("message").is_some());
    let s = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "t".into(),
        context_id: "c".into(),
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: None,
            elicitations: vec![],
        },
        metadata: None,
        generation: None,
    });
    assert!(serde_json::to_value(s)
        .unwrap()
        .get("statusUpdate")
        .is_some());
}

#[test]
fn list_request_accepts_snake_case() {
    let r: ListTasksRequest = serde_json::from_value(json!({
        "context_id": "c", "page_size": 2, "include_artifacts": false,
        "status": "TASK_STATE_COMPLETED", "status_timestamp_after": "2026-01-01T00:00:00Z"
    }))
    .unwrap();
    assert_eq!(r.page_size, Some(2));
    assert_eq!(r.status, Some(TaskState::Completed));
    assert!(r.status_timestamp_after.is_some());
}

#[test]
fn generations_are_protojson_int64() {
    let r: GetTaskRequest =
        serde_json::from_value(json!({"id": "t", "currentGeneration": "5"})).unwrap();
    assert_eq!(r.current_generation, Some(5));
    let r: GetTaskRequest =
        serde_json::from_value(json!({"id": "t", "current_generation": 6})).unwrap();
    assert_eq!(r.current_generation, Some(6));
    let r: GetTaskRequest =
        serde_json::from_value(json!({"id": "t", "currentGeneration": null})).unwrap();
    assert_eq!(r.current_generation, None);
    for bad in [json!("x"), json!(-1), json!(1.5), json!([])] {
        let r =
            serde_json::from_value::<GetTaskRequest>(json!({"id": "t", "currentGeneration": bad}));
        assert!(r.is_err(), "{bad}");
    }
    let c: SendMessageConfiguration =
        serde_json::from_value(json!({"ifGenerationMatch": "3"})).unwrap();
    assert_eq!(c.if_generation_match, Some(3));
    assert_eq!(
        serde_json::to_value(&c).unwrap(),
        json!({"ifGenerationMatch": "3"})
    );
}

#[test]
fn json_size_counts_the_compact_json_bytes() {
    let m = Message::agent_text("m-1", "héllo \"quoted\"\n");
    assert_eq!(super::json_size(&m), serde_json::to_vec(&m).unwrap().len());
    assert_eq!(super::json_size(&serde_json::json!({})), 2);
    let mut odd = std::collections::HashMap::new();
    odd.insert(vec![1u8], 1);
    assert_eq!(
        super::json_size(&odd),
        usize::MAX,
        "a map with non-string keys"
    );
}

#[test]
fn elicitations_are_protojson_as_the_draft_names_them() {
    // a2aproject/A2A#2149: Elicitation{elicitation_id, state, metadata}, Message.elicitation_ids.
    let e: Elicitation = serde_json::from_value(
        json!({"elicitation_id": "gate-4", "state": 2, "metadata": {"kind": "tool-approval"}}),
    )
    .unwrap();
    assert_eq!(e.state, ElicitationState::Blocked);
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"elicitationId": "gate-4", "state": "ELICITATION_STATE_BLOCKED",
            "metadata": {"kind": "tool-approval"}})
    );
    let m: Message = serde_json::from_value(json!({"messageId": "m", "role": "ROLE_USER",
        "parts": [{"text": "ok"}], "elicitation_ids": ["gate-4"]}))
    .unwrap();
    assert_eq!(m.elicitation_ids, ["gate-4"]);
    let v = serde_json::to_value(&m).unwrap();
    assert_eq!(v["elicitationIds"], json!(["gate-4"]));
    let none = serde_json::to_value(Message::agent_text("m", "hi")).unwrap();
    assert!(none.get("elicitationIds").is_none(), "omitted when empty");
    assert!(serde_json::from_value::<Elicitation>(
        json!({"elicitationId": "x", "state": "ELICITATION_STATE_PENDING"})
    )
    .is_err());
}
