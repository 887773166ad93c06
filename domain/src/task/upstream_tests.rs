//! Given/when/then: an upstream agent's events as our commits — in order, once, within bounds.

use serde_json::json;

use crate::ids::{ContextId, Principal, TaskId};
use crate::push::AddressPolicy;
use crate::task::admission::Admission;
use crate::task::*;
use crate::time::Timestamp;
use crate::wire::{Message, StreamResponse, TaskState};

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:{:02}:{:02}Z", s / 60, s % 60)).unwrap()
}

fn given_created() -> TaskAggregate {
    let mut s = TaskAggregate::default();
    let events = s
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            message: Message::user_text("m-1", "hello"),
            at: at(0),
            extension: None,
            awaiting_assignee: None,
        }))
        .unwrap();
    for e in &events {
        s.apply_event(e);
    }
    s
}

/// Decides and folds `commands` as the ledger does, each event through the gate.
fn commit(s: &mut TaskAggregate, commands: Vec<TaskCommand>) -> Result<usize, String> {
    let gate = Admission::new(at(59), AddressPolicy::strict());
    let mut next = s.clone();
    let mut n = 0;
    for c in commands {
        for e in next.decide(c).map_err(|e| e.to_string())? {
            next.admit(&e, at(30), &gate)?;
            next.apply_event(&e);
            n += 1;
        }
    }
    *s = next;
    Ok(n)
}

fn events(v: serde_json::Value) -> Vec<StreamResponse> {
    serde_json::from_value(v).unwrap()
}

fn batch(after: u64, v: serde_json::Value) -> UpstreamBatch {
    UpstreamBatch {
        after,
        forwarded: None,
        interface: "JSONRPC 1.0 http://127.0.0.1:9/".into(),
        events: events(v),
    }
}

fn status(task: &str, state: &str, text: Option<&str>) -> serde_json::Value {
    let mut s = json!({"state": state});
    if let Some(t) = text {
        s["message"] = json!({"messageId": format!("s-{state}"), "role": "ROLE_AGENT", "parts": [{"text": t}]});
    }
    json!({"statusUpdate": {"taskId": task, "contextId": "uc", "status": s}})
}

fn chunk(task: &str, text: &str, append: bool, last: bool) -> serde_json::Value {
    json!({"artifactUpdate": {"taskId": task, "contextId": "uc", "append": append, "lastChunk": last,
        "artifact": {"artifactId": "out", "parts": [{"text": text}]}}})
}

fn apply(s: &mut TaskAggregate, b: &UpstreamBatch) -> Result<usize, String> {
    let head = s.head().unwrap().clone();
    let commands = plan_upstream(&head, b, at(20)).map_err(|e| e.0)?;
    commit(s, commands)
}

#[test]
fn a_stream_of_status_and_chunks_becomes_our_task_once() {
    let mut s = given_created();
    let b = batch(
        0,
        json!([
            status("u-1", "TASK_STATE_WORKING", None),
            chunk("u-1", "chunk-1 ", true, false),
            chunk("u-1", "chunk-2", true, true),
            status("u-1", "TASK_STATE_COMPLETED", Some("done")),
        ]),
    );
    assert!(apply(&mut s, &b).unwrap() > 0);
    let head = s.head().unwrap();
    assert_eq!(head.status.state, TaskState::Completed);
    assert_eq!(head.status.message.as_ref().unwrap().text(), "done");
    assert_eq!(head.artifacts.len(), 1);
    assert_eq!(head.artifacts[0].chunks, 2);
    assert!(head.artifacts[0].closed);
    let up = head.upstream.as_ref().unwrap();
    assert_eq!((up.task_id.as_str(), up.events), ("u-1", 4));
    // the same batch again (a redelivered turn) decides nothing
    let version = s.version;
    let head = s.head().unwrap().clone();
    assert!(plan_upstream(&head, &b, at(21)).unwrap().is_empty());
    assert_eq!(s.version, version);
}

#[test]
fn a_batch_after_another_count_is_a_duplicate() {
    let mut s = given_created();
    apply(
        &mut s,
        &batch(0, json!([status("u-1", "TASK_STATE_WORKING", None)])),
    )
    .unwrap();
    let head = s.head().unwrap().clone();
    assert_eq!(head.upstream.as_ref().unwrap().events, 1);
    let stale = batch(0, json!([chunk("u-1", "x", false, false)]));
    assert!(plan_upstream(&head, &stale, at(21)).unwrap().is_empty());
    let fresh = batch(1, json!([chunk("u-1", "x", false, false)]));
    assert!(!plan_upstream(&head, &fresh, at(21)).unwrap().is_empty());
}

#[test]
fn a_snapshot_read_twice_changes_nothing_and_a_longer_one_appends_the_rest() {
    let mut s = given_created();
    let snap = |parts: serde_json::Value, state: &str| {
        json!([{"task": {"id": "u-1", "contextId": "uc", "status": {"state": state},
            "artifacts": [{"artifactId": "out", "parts": parts}]}}])
    };
    apply(
        &mut s,
        &batch(0, snap(json!([{"text": "a"}]), "TASK_STATE_WORKING")),
    )
    .unwrap();
    let head = s.head().unwrap().clone();
    let again = batch(1, snap(json!([{"text": "a"}]), "TASK_STATE_WORKING"));
    assert!(plan_upstream(&head, &again, at(21)).unwrap().is_empty());
    let longer = batch(
        1,
        snap(
            json!([{"text": "a"}, {"text": "b"}]),
            "TASK_STATE_COMPLETED",
        ),
    );
    apply(&mut s, &longer).unwrap();
    let head = s.head().unwrap();
    assert_eq!(head.status.state, TaskState::Completed);
    assert_eq!(
        head.artifacts[0].chunks, 2,
        "the second part came as a chunk"
    );
    assert_eq!(
        head.upstream
            .as_ref()
            .unwrap()
            .artifact("out")
            .unwrap()
            .parts,
        2
    );
}

#[test]
fn input_required_waits_with_the_upstreams_question() {
    let mut s = given_created();
    apply(
        &mut s,
        &batch(
            0,
            json!([status(
                "u-1",
                "TASK_STATE_INPUT_REQUIRED",
                Some("which one?")
            )]),
        ),
    )
    .unwrap();
    let head = s.head().unwrap();
    assert_eq!(head.status.state, TaskState::InputRequired);
    assert_eq!(head.status.message.as_ref().unwrap().text(), "which one?");
    let up = head.upstream.as_ref().unwrap();
    assert!(!up.at_work() && up.open());
}

#[test]
fn a_direct_message_completes_the_task_and_a_cancel_upstream_cancels_ours() {
    let mut s = given_created();
    let reply =
        json!([{"message": {"messageId": "r-1", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}]);
    apply(&mut s, &batch(0, reply)).unwrap();
    assert_eq!(s.head().unwrap().status.state, TaskState::Completed);
    let mut s = given_created();
    apply(
        &mut s,
        &batch(
            0,
            json!([
                status("u-1", "TASK_STATE_WORKING", None),
                status("u-1", "TASK_STATE_CANCELED", None)
            ]),
        ),
    )
    .unwrap();
    assert_eq!(s.head().unwrap().status.state, TaskState::Canceled);
}

#[test]
fn protocol_breaches_are_refused_with_a_reason_and_nothing_is_stored() {
    let mut s = given_created();
    apply(
        &mut s,
        &batch(0, json!([status("u-1", "TASK_STATE_WORKING", None)])),
    )
    .unwrap();
    let version = s.version;
    let refused = |s: &mut TaskAggregate, b: UpstreamBatch| apply(s, &b).unwrap_err();
    assert!(refused(
        &mut s,
        batch(1, json!([status("u-2", "TASK_STATE_WORKING", None)]))
    )
    .contains("not of the task this one follows"));
    assert!(refused(
        &mut s,
        batch(
            1,
            json!([
                chunk("u-1", "a", true, true),
                chunk("u-1", "b", true, false)
            ])
        )
    )
    .contains("after its last chunk"));
    assert!(refused(
        &mut s,
        batch(
            1,
            json!([
                status("u-1", "TASK_STATE_COMPLETED", None),
                status("u-1", "TASK_STATE_WORKING", None)
            ])
        )
    )
    .contains("after its task ended"));
    assert!(refused(&mut s, batch(1, json!([{"statusUpdate": {"taskId": "", "contextId": "", "status": {"state": "TASK_STATE_WORKING"}}}])))
        .contains("without a task id"));
    assert_eq!(s.version, version, "nothing of a refused batch is stored");
}

#[test]
fn a_batch_is_bounded_at_its_limit_and_refused_one_past_it() {
    let s = given_created();
    let head = s.head().unwrap().clone();
    let many = |n: usize| {
        batch(
            0,
            serde_json::Value::Array(
                (0..n)
                    .map(|i| chunk("u-1", &format!("{i}"), i > 0, false))
                    .collect(),
            ),
        )
    };
    assert!(plan_upstream(&head, &many(MAX_UPSTREAM_BATCH), at(20)).is_ok());
    let past = plan_upstream(&head, &many(MAX_UPSTREAM_BATCH + 1), at(20)).unwrap_err();
    assert!(past.0.contains("events at once"), "{past}");
}

#[test]
fn an_upstream_id_is_bounded_at_its_limit_and_refused_one_past_it() {
    let mut s = given_created();
    let id = "u".repeat(MAX_UPSTREAM_ID_CHARS);
    apply(
        &mut s,
        &batch(0, json!([status(&id, "TASK_STATE_WORKING", None)])),
    )
    .unwrap();
    let mut s = given_created();
    let long = "u".repeat(MAX_UPSTREAM_ID_CHARS + 1);
    let err = apply(
        &mut s,
        &batch(0, json!([status(&long, "TASK_STATE_WORKING", None)])),
    )
    .unwrap_err();
    assert!(err.contains("longer than"), "{err}");
}

#[test]
fn an_oversized_message_is_refused_before_anything_is_stored() {
    let mut s = given_created();
    let big = "x".repeat(crate::task::admission::MAX_STORED_MESSAGE_BYTES);
    let err = apply(
        &mut s,
        &batch(
            0,
            json!([status("u-1", "TASK_STATE_INPUT_REQUIRED", Some(&big))]),
        ),
    )
    .unwrap_err();
    assert!(err.contains("bytes, past"), "{err}");
    assert!(s.head().unwrap().upstream.is_none());
}

#[test]
fn a_follow_up_turn_is_no_progress_for_the_deadline_reaper() {
    let mut s = given_created();
    apply(
        &mut s,
        &batch(0, json!([status("u-1", "TASK_STATE_WORKING", None)])),
    )
    .unwrap();
    let work = s.head().unwrap().work_requested;
    // a turn that only followed the upstream continues at 0:50
    commit(
        &mut s,
        vec![TaskCommand::ContinueAgentWork {
            after: work,
            steps_taken: 1,
            at: at(50),
        }],
    )
    .unwrap();
    let reap = TaskCommand::FailStalledTask {
        deadline_secs: 20,
        at: at(55),
    };
    let events = s.decide(reap).unwrap();
    assert!(
        matches!(
            &events[..],
            [TaskEvent::StatusChanged {
                state: TaskState::Failed,
                ..
            }]
        ),
        "the upstream's last event was at 0:20: {events:?}"
    );
}
