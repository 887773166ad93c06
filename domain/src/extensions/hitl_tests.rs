use super::*;
use crate::wire::Metadata;

fn resume(payload: Value) -> Message {
    let mut m = Message::user_text("r1", "");
    m.extensions = vec![HITL_URI.into()];
    let mut meta = Metadata::new();
    meta.insert(HITL_URI.into(), payload);
    m.metadata = Some(meta);
    m
}

fn refused_on(payload: Value) -> String {
    match response_of(&resume(payload)) {
        Some(Err(DomainError::InvalidParams { field, .. })) => field,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_message_without_the_payload_carries_no_response() {
    assert!(response_of(&Message::user_text("m", "hi")).is_none());
}

#[test]
fn a_tool_approval_response_reads_every_decision() {
    let r = response_of(&resume(json!({
        "type": "tool_approval_response",
        "approvals": [
            {"id": "gate-9.0", "approved": true},
            {"id": "gate-9.1", "approved": false, "rejection_reason": "not on prod"}
        ]
    })))
    .unwrap()
    .unwrap();
    assert_eq!(
        r,
        Response::ToolApproval(vec![
            Approval {
                id: "gate-9.0".into(),
                approved: true,
                rejection_reason: None
            },
            Approval {
                id: "gate-9.1".into(),
                approved: false,
                rejection_reason: Some("not on prod".into())
            },
        ])
    );
}

#[test]
fn a_response_must_declare_the_extension_on_the_message() {
    let mut m = resume(json!({"type": "tool_approval_response", "approvals": []}));
    m.extensions.clear();
    assert!(matches!(
        response_of(&m),
        Some(Err(DomainError::InvalidParams { field, .. })) if field == "message.extensions"
    ));
}

#[test]
fn bad_responses_are_refused_on_their_field() {
    let p = |rest: &str| format!("message.metadata[{HITL_URI}]{rest}");
    assert_eq!(refused_on(json!({"type": "approve_all"})), p(".type"));
    assert_eq!(
        refused_on(json!({"type": "tool_approval_response"})),
        p(".approvals")
    );
    assert_eq!(
        refused_on(json!({"type": "tool_approval_response", "approvals": []})),
        p(".approvals")
    );
    assert_eq!(
        refused_on(json!({"type": "tool_approval_response", "approvals": [{"id": "a"}]})),
        p(".approvals[0].approved")
    );
    assert_eq!(
        refused_on(json!({"type": "tool_approval_response", "approvals": [
            {"id": "a", "approved": true, "rejection_reason": "why"}
        ]})),
        p(".approvals[0].rejection_reason"),
        "an approval carries no rejection reason"
    );
    assert_eq!(
        refused_on(json!({"type": "tool_approval_response", "approvals": [
            {"id": "a", "approved": true}, {"id": "a", "approved": false}
        ]})),
        p(".approvals[1].id"),
        "a call is decided once"
    );
    assert_eq!(
        refused_on(json!({"type": "ask_user_response", "id": "q", "answers": [{"answer": [1]}]})),
        p(".answers[0].answer[0]")
    );
}

#[test]
fn approvals_are_limited_at_the_boundary() {
    let many = |n: usize| {
        let items: Vec<Value> = (0..n)
            .map(|i| json!({"id": format!("g.{i}"), "approved": true}))
            .collect();
        json!({"type": "tool_approval_response", "approvals": items})
    };
    assert!(matches!(
        response_of(&resume(many(MAX_APPROVALS))),
        Some(Ok(Response::ToolApproval(a))) if a.len() == MAX_APPROVALS
    ));
    assert!(matches!(
        response_of(&resume(many(MAX_APPROVALS + 1))),
        Some(Err(_))
    ));
    let reason = |n: usize| {
        json!({"type": "tool_approval_response", "approvals": [
            {"id": "g.0", "approved": false, "rejection_reason": "r".repeat(n)}
        ]})
    };
    assert!(matches!(
        response_of(&resume(reason(MAX_REJECTION_REASON_BYTES))),
        Some(Ok(_))
    ));
    assert!(matches!(
        response_of(&resume(reason(MAX_REJECTION_REASON_BYTES + 1))),
        Some(Err(_))
    ));
}

#[test]
fn an_ask_user_response_reads_its_answers_in_order() {
    let r = response_of(&resume(json!({
        "type": "ask_user_response", "id": "t:help:3",
        "answers": [{"answer": ["blue"]}]
    })))
    .unwrap()
    .unwrap();
    assert_eq!(
        r,
        Response::AskUser {
            id: "t:help:3".into(),
            answers: vec![vec!["blue".into()]]
        }
    );
}

#[test]
fn the_pause_names_the_tools_and_the_nested_ones() {
    let tool = |name: &str| PendingTool {
        id: format!("g.{name}"),
        call_id: "c".into(),
        name: name.into(),
        args: json!({}),
    };
    let v = tool_approval_request(&[tool("deploy")], None);
    assert_eq!(v["type"], "tool_approval_request");
    assert_eq!(v["hint"], "Approval is required for tool(s): deploy");
    assert_eq!(v["tools"][0]["id"], "g.deploy");
    assert!(v.get("nested").is_none());
    let nested = Nested {
        subagent_name: "child".into(),
        task_id: "t2".into(),
        context_id: "c".into(),
        tools: vec![tool("rm")],
    };
    let v = tool_approval_request(&[], Some(&nested));
    assert_eq!(v["hint"], "Approval is required for tool(s): rm");
    assert_eq!(v["nested"]["tools"][0]["name"], "rm");
    assert_eq!(
        approval_text(&[]),
        "Human input is required before the agent can continue."
    );
}
