use serde_json::json;

use super::*;
use crate::wire::{Metadata, Part};

fn at(s: i64) -> Timestamp {
    Timestamp::from_unix_nanos(s * 1_000_000_000)
}

fn part(kind: &str, data: Value) -> Part {
    let mut meta = Metadata::new();
    meta.insert(PART_TYPE_KEY.into(), json!(kind));
    Part {
        content: PartContent::Data(data),
        metadata: Some(meta),
        filename: None,
        media_type: Some("application/json".into()),
    }
}

fn appended(seq: u64, parts: Vec<Part>) -> (u64, TaskEvent, Timestamp) {
    let mut message = Message::agent_text(format!("m-{seq}"), "");
    message.parts = parts;
    (
        seq,
        TaskEvent::MessageAppended {
            message,
            at: at(seq as i64),
            acted_by: None,
        },
        at(seq as i64),
    )
}

fn call(id: &str, name: &str) -> Part {
    part("function_call", json!({"id": id, "name": name, "args": {}}))
}

fn response(id: &str, name: &str, response: Value) -> Part {
    part(
        "function_response",
        json!({"id": id, "name": name, "response": response}),
    )
}

#[test]
fn each_call_is_matched_with_its_result_and_named_by_its_server() {
    // Given: an MCP call that worked, one that failed, an intrinsic tool, one still waiting.
    let events = vec![
        appended(
            1,
            vec![
                call("c1", "everything__echo"),
                call("c2", "everything__add"),
            ],
        ),
        appended(
            2,
            vec![response("c1", "everything__echo", json!({"result": "hi"}))],
        ),
        appended(
            3,
            vec![response(
                "c2",
                "everything__add",
                json!({"error": "timed out after 30 s"}),
            )],
        ),
        appended(4, vec![call("c3", "plan")]),
        appended(5, vec![call("c4", "everything__delete")]),
        appended(6, vec![response("c3", "plan", json!({"result": "ok"}))]),
    ];
    // When / then:
    let calls = tool_calls(&events);
    let seen: Vec<_> = calls
        .iter()
        .map(|c| (c.seq, c.name.as_str(), c.server.as_deref(), c.end.clone()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (1, "everything__echo", Some("everything"), CallEnd::Ok),
            (
                1,
                "everything__add",
                Some("everything"),
                CallEnd::Error("timed out after 30 s".into())
            ),
            (4, "plan", None, CallEnd::Ok),
            (
                5,
                "everything__delete",
                Some("everything"),
                CallEnd::Pending
            ),
        ]
    );
}

#[test]
fn a_long_error_is_cut_and_parts_of_other_kinds_are_not_calls() {
    let long = "x".repeat(MAX_SHOWN_ERROR_CHARS + 1);
    let exact = "y".repeat(MAX_SHOWN_ERROR_CHARS);
    let events = vec![
        appended(1, vec![call("a", "s__t"), call("b", "s__u")]),
        appended(
            2,
            vec![
                response("a", "s__t", json!({"error": long})),
                response("b", "s__u", json!({"error": exact.clone()})),
                part("data", json!({"id": "a"})),
            ],
        ),
    ];
    let calls = tool_calls(&events);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0].end,
        CallEnd::Error(format!("{}…", "x".repeat(MAX_SHOWN_ERROR_CHARS)))
    );
    assert_eq!(calls[1].end, CallEnd::Error(exact));
}
