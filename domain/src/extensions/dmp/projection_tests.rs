//! Given a task's facts, when projected, then the first matching §8.7 row decides the state.
//! The vectors are `vectors/a2a-binding/projection.json` of wsoule/dispatch at 0af286a2 (the
//! ids §8.7 lists), their facts transcribed as the adapter would receive them. The later ids
//! the registry and changelog list (§11.10, Unreleased) have no public body; their tests build
//! the facts the id and the row describe, and say so.

use serde_json::{json, Value};

use super::*;
use crate::extensions::dmp::ext_data::ExtensionData;
use crate::extensions::dmp::gate_state::GateStateV1;

/// When the vector's facts are projected.
fn projects(facts: Value) -> Projected {
    let facts: Facts = serde_json::from_value(facts).expect("facts deserialize");
    project(&facts)
}

/// Then the result is `{state}` (a name without `TASK_STATE_`), with no stage.
fn assert_state(p: Projected, state: &str) {
    assert_eq!(p.state.as_str(), format!("TASK_STATE_{state}"), "{p:?}");
    assert_eq!(p.stage, None, "{p:?}");
}

fn answer(from: &str, body: &str) -> Value {
    json!({
        "id": "m-ans", "thread": "m-root", "replyTo": "m-root", "from": from,
        "to": ["agent:wyat/a2a.acme"], "kind": "answer", "body": body, "blocking": false
    })
}

fn closing_answer(from: &str) -> Value {
    let mut a = answer(from, "Closed: the client was revoked.");
    a["data"] = json!({ "type": "x-closed", "reason": "client revoked" });
    a
}

fn question() -> Value {
    json!({
        "id": "m-q", "thread": "m-root", "replyTo": "m-root", "from": "human:wyat",
        "to": ["agent:wyat/a2a.acme"], "kind": "question", "body": "Which region first?",
        "blocking": true
    })
}

fn wake_gate() -> Value {
    json!({ "id": "m-gate", "type": "wake", "openedAt": "2026-09-23T11:00:00.000Z" })
}

fn work_item(status: &str, approved: bool) -> Value {
    json!({ "id": "t-4a8cce", "title": "Rate-limit uploads", "status": status, "approved": approved })
}

fn handoff(status: &str, approved: bool) -> Value {
    json!({ "skill": "handoff", "task": work_item(status, approved) })
}

// ---- row 1 ----

// vector: a2a.projection.row-1-a-canceled-task
#[test]
fn row_1_a_canceled_task() {
    let p = projects(json!({
        "canceledAt": "2026-09-23T11:00:00.000Z",
        "answer": answer("human:wyat", "Yes, final.")
    }));
    assert_state(p, "CANCELED");
    assert_eq!(p.sentence, Some("Canceled by the client."));
    assert_eq!(p.row, Row::Canceled);
}

// ---- row 2 ----

// vector: a2a.projection.row-2-an-ask-the-owner-declined
#[test]
fn row_2_an_ask_the_owner_declined() {
    let p = projects(json!({ "declinedAt": "2026-09-23T11:00:00.000Z" }));
    assert_state(p, "REJECTED");
}

// vector: a2a.projection.row-2-a-declined-handoff
#[test]
fn row_2_a_declined_handoff() {
    let mut decline = answer("$system", "Declined.");
    decline["choice"] = json!("decline");
    let p = projects(json!({
        "skill": "handoff",
        "task": work_item("dropped", false),
        "answer": decline
    }));
    assert_state(p, "REJECTED");
    assert_eq!(p.row, Row::Rejected);
}

// vector: a2a.projection.row-2-a-handoff-someone-else-dropped
#[test]
fn row_2_a_handoff_someone_else_dropped() {
    let p = projects(json!({
        "skill": "handoff",
        "task": work_item("dropped", true),
        "dropped": "other"
    }));
    assert_state(p, "REJECTED");
}

// vector: a2a.projection.row-2-a-handoff-dropped-by-the-owner (later id; no public body:
// the owner is not the client, so an approved work item the owner dropped is REJECTED)
#[test]
fn row_2_a_handoff_dropped_by_the_owner() {
    let p = projects(json!({
        "skill": "handoff",
        "task": work_item("dropped", true),
        "dropped": "other"
    }));
    assert_state(p, "REJECTED");
}

#[test]
fn row_2_a_work_item_the_client_dropped_is_not_rejected() {
    let p = projects(json!({
        "skill": "handoff",
        "task": work_item("dropped", true),
        "dropped": "client"
    }));
    assert_ne!(p.state, TaskState::Rejected);
}

// ---- row 3 ----

// vector: a2a.projection.row-3-a-system-close-fails-an-ask
#[test]
fn row_3_a_system_close_fails_an_ask() {
    let p = projects(json!({ "answer": closing_answer("$system") }));
    assert_state(p, "FAILED");
    assert_eq!(p.row, Row::Failed);
}

// vector: a2a.projection.row-3-a-close-from-anyone-else-is-an-answer
#[test]
fn row_3_a_close_from_anyone_else_is_an_answer() {
    let p = projects(json!({ "answer": closing_answer("human:wyat") }));
    assert_state(p, "COMPLETED");
    assert_eq!(p.row, Row::Answered);
}

// vector: a2a.projection.row-3-a-dropped-recipient-fails-an-ask
#[test]
fn row_3_a_dropped_recipient_fails_an_ask() {
    let p = projects(json!({ "recipientTaskDropped": true }));
    assert_state(p, "FAILED");
}

// ---- row 4 ----

// vector: a2a.projection.row-4-a-deleted-handoff-fails
#[test]
fn row_4_a_deleted_handoff_fails() {
    let p = projects(json!({ "skill": "handoff", "task": "deleted" }));
    assert_state(p, "FAILED");
    assert_eq!(p.sentence, Some("The task was deleted."));
}

// vector: a2a.projection.row-4-a-deleted-handoff (later id of the same row; no public body)
#[test]
fn row_4_a_deleted_handoff() {
    let p = projects(json!({ "skill": "handoff", "task": "deleted" }));
    assert_state(p, "FAILED");
    assert_eq!(p.row, Row::Deleted);
}

// ---- row 5 ----

// vector: a2a.projection.row-5-an-answered-ask-completes
#[test]
fn row_5_an_answered_ask_completes() {
    let p = projects(json!({ "answer": answer("human:wyat", "Yes, final.") }));
    assert_state(p, "COMPLETED");
    assert_eq!(p.row, Row::Answered);
}

// ---- row 6 ----

// vector: a2a.projection.row-6-a-landed-handoff-completes
#[test]
fn row_6_a_landed_handoff_completes() {
    let p = projects(handoff("landed", true));
    assert_state(p, "COMPLETED");
    assert_eq!(p.sentence, Some("Landed."));
}

// vector: a2a.projection.row-6-a-landed-handoff (later id of the same row; no public body)
#[test]
fn row_6_a_landed_handoff() {
    let p = projects(handoff("landed", true));
    assert_state(p, "COMPLETED");
    assert_eq!(p.row, Row::Landed);
}

// ---- row 7 ----

// vector: a2a.projection.row-7-an-open-question-needs-input
#[test]
fn row_7_an_open_question_needs_input() {
    let p = projects(json!({ "openQuestions": [question()] }));
    assert_state(p, "INPUT_REQUIRED");
    assert_eq!(p.row, Row::InputRequired { question: 0 });
}

// vector: a2a.projection.row-7-never-a-question-with-gate-data
#[test]
fn row_7_never_a_question_with_gate_data() {
    let p = projects(json!({ "openQuestions": [{
        "id": "m-q", "thread": "m-root", "replyTo": "m-root", "from": "$system",
        "to": ["agent:wyat/a2a.acme"], "kind": "question", "body": "wake task:t-4a8cce?",
        "blocking": true, "choices": ["approve", "deny"],
        "data": { "type": "wake", "target": "task:t-4a8cce", "message": "m-root" }
    }] }));
    assert_state(p, "WORKING");
}

#[test]
fn row_7_skips_a_question_replying_to_gate_data_and_a_non_blocking_one() {
    let mut reply = question();
    reply["repliesToGateData"] = json!(true);
    let mut loose = question();
    loose["blocking"] = json!(false);
    let mut marker = question();
    marker["data"] = json!({ "type": "x-note" });
    // Given the first two never need input, the third (with only an `x-` marker) does
    let p = projects(json!({ "openQuestions": [reply, loose, marker] }));
    assert_eq!(p.row, Row::InputRequired { question: 2 });
}

// ---- row 8 ----

// vector: a2a.projection.row-8-an-open-gate-needs-authorization
#[test]
fn row_8_an_open_gate_needs_authorization() {
    let p = projects(json!({ "openGates": [wake_gate()] }));
    assert_state(p, "AUTH_REQUIRED");
    assert_eq!(
        p.sentence,
        Some("Waiting for the project owner to approve waking the task.")
    );
}

// vector: a2a.projection.row-8-an-open-question-comes-first
#[test]
fn row_8_an_open_question_comes_first() {
    let p = projects(json!({ "openQuestions": [question()], "openGates": [wake_gate()] }));
    assert_state(p, "INPUT_REQUIRED");
}

// vector: a2a.projection.row-8-gate-v1-lists-id-type-and-time (§8.5; no public body)
#[test]
fn row_8_gate_v1_lists_id_type_and_time() {
    let facts: Facts = serde_json::from_value(json!({ "openGates": [wake_gate()] })).unwrap();
    assert_eq!(project(&facts).row, Row::AuthRequired);
    assert_eq!(
        GateStateV1::from_open_gates(&facts.open_gates).to_value(),
        json!({ "gates": [{
            "id": "m-gate", "type": "wake", "openedAt": "2026-09-23T11:00:00.000Z",
            "waitingOn": "owner"
        }] })
    );
}

// vector: a2a.projection.row-8-a-handoff-waits-on-its-proposal (later id; no public body:
// an unapproved draft whose task-proposal gate is open, with the data §8.6 names)
#[test]
fn row_8_a_handoff_waits_on_its_proposal() {
    let p = projects(json!({
        "skill": "handoff",
        "task": work_item("draft", false),
        "openGates": [{ "id": "m-gate", "type": "task-proposal", "openedAt": "2026-09-23T11:00:00.000Z" }]
    }));
    assert_state(p, "AUTH_REQUIRED");
    assert_eq!(
        p.sentence,
        Some("Waiting for the project owner to approve this handoff.")
    );
}

#[test]
fn row_8_speaks_for_the_oldest_gate() {
    let p = projects(json!({ "openGates": [
        { "id": "m-2", "type": "wake", "openedAt": "2026-09-23T12:00:00.000Z" },
        { "id": "m-1", "type": "scope", "openedAt": "2026-09-23T11:00:00.000Z" }
    ] }));
    assert_eq!(
        p.sentence,
        Some("Waiting for the project owner to approve a change of scope.")
    );
}

// ---- row 9 ----

// vector: a2a.projection.row-9-a-working-handoff
#[test]
fn row_9_a_working_handoff() {
    let p = projects(handoff("working", true));
    assert_state(p, "WORKING");
    assert_eq!(p.row, Row::Working);
}

// vector: a2a.projection.row-9-review-is-a-working-stage
#[test]
fn row_9_review_is_a_working_stage() {
    let p = projects(handoff("review", true));
    assert_eq!(p.state, TaskState::Working);
    assert_eq!(p.stage, Some(Stage::Review));
}

// vector: a2a.projection.row-9-a-handoff-in-review-has-a-stage (later id; no public body)
#[test]
fn row_9_a_handoff_in_review_has_a_stage() {
    let p = projects(handoff("review", true));
    assert_eq!(
        (p.state, p.stage),
        (TaskState::Working, Some(Stage::Review))
    );
}

// vector: a2a.projection.row-9-landing-is-a-working-stage
#[test]
fn row_9_landing_is_a_working_stage() {
    let p = projects(handoff("landing", true));
    assert_eq!(p.state, TaskState::Working);
    assert_eq!(p.stage, Some(Stage::Landing));
}

// vector: a2a.projection.row-9-a-custom-status-is-working
#[test]
fn row_9_a_custom_status_is_working() {
    let p = projects(handoff("qa", true));
    assert_state(p, "WORKING");
    assert_eq!(p.row, Row::Working);
}

// vector: a2a.projection.row-9-a-status-of-the-hosts-own (later id; no public body)
#[test]
fn row_9_a_status_of_the_hosts_own() {
    let p = projects(handoff("qa", true));
    assert_state(p, "WORKING");
    assert_eq!(p.row, Row::Working);
}

// ---- row 10 ----

// vector: a2a.projection.row-10-an-approved-handoff-waits
#[test]
fn row_10_an_approved_handoff_waits() {
    let p = projects(handoff("ready", true));
    assert_state(p, "SUBMITTED");
    assert_eq!(p.sentence, Some("Approved; waiting to be scheduled."));
}

// vector: a2a.projection.row-10-an-approved-draft-is-submitted (later id; no public body)
#[test]
fn row_10_an_approved_draft_is_submitted() {
    let p = projects(handoff("draft", true));
    assert_state(p, "SUBMITTED");
    assert_eq!(p.row, Row::Approved);
}

// vector: a2a.projection.row-10-needs-approval (later id; no public body: an unapproved
// draft with no open gate matches no handoff row and falls to row 12)
#[test]
fn row_10_needs_approval() {
    for status in ["draft", "ready"] {
        let p = projects(handoff(status, false));
        assert_state(p, "WORKING");
        assert_eq!(p.row, Row::Otherwise);
    }
}

// ---- row 11 ----

// vector: a2a.projection.row-11-an-ask-held-in-a-mailbox
#[test]
fn row_11_an_ask_held_in_a_mailbox() {
    let p = projects(json!({ "root": { "to": ["task:t-4a8cce"] }, "rootDeliveries": ["held"] }));
    assert_state(p, "SUBMITTED");
    assert_eq!(p.row, Row::Held);
}

// vector: a2a.projection.row-11-needs-every-root-delivery-held
#[test]
fn row_11_needs_every_root_delivery_held() {
    let p = projects(json!({
        "root": { "to": ["task:t-4a8cce", "human:wyat"] },
        "rootDeliveries": ["held", "notified"]
    }));
    assert_state(p, "WORKING");
}

// ---- row 12 ----

// vector: a2a.projection.row-12-otherwise-working
#[test]
fn row_12_otherwise_working() {
    let p = projects(json!({}));
    assert_state(p, "WORKING");
    assert_eq!(p.row, Row::Otherwise);
    assert_eq!(p.row.number(), 12);
}

// ---- the rules around the rows ----

#[test]
fn an_ask_answered_by_the_system_without_a_close_completes() {
    let p = projects(json!({ "answer": answer("$system", "Done.") }));
    assert_eq!(p.row, Row::Answered);
}

#[test]
fn a_handoffs_answer_never_completes_it() {
    // Given the system's approve answer on a working handoff, row 5 (asks only) is skipped
    let mut facts = handoff("working", true);
    facts["answer"] = answer("$system", "Approved.");
    assert_eq!(projects(facts).row, Row::Working);
}

#[test]
fn unknown_fact_members_and_malformed_facts() {
    assert!(serde_json::from_value::<Facts>(json!({ "skill": "deploy" })).is_err());
    assert!(serde_json::from_value::<Facts>(json!({ "task": "gone" })).is_err());
    let f: Facts = serde_json::from_value(json!({ "note": "ignored" })).unwrap();
    assert_eq!(f, Facts::default());
}
