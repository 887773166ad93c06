//! Given open gates, when gate/v1 is written, then only each gate's id, type and time leave,
//! waiting on the owner, under the gate/v1 URI; and each type has its fixed sentence.

use serde_json::json;

use super::*;
use crate::extensions::dmp::ext_data::ExtensionData;

fn gate(id: &str, gate_type: &str, at: &str) -> OpenGate {
    OpenGate {
        id: id.into(),
        gate_type: gate_type.into(),
        opened_at: Timestamp::parse(at).unwrap(),
    }
}

#[test]
fn gate_v1_lists_id_type_time_and_the_owner() {
    // Given one open task-proposal gate
    let state = GateStateV1::from_open_gates(&[gate(
        "m-gate",
        "task-proposal",
        "2026-09-23T11:00:00.000Z",
    )]);
    // When it is written into status.message.metadata
    let m = state.to_metadata();
    // Then it sits under the gate/v1 URI, in the §8.5 shape and nothing more
    assert_eq!(
        serde_json::Value::Object(m.clone()),
        json!({ GATE_URI: { "gates": [{
            "id": "m-gate",
            "type": "task-proposal",
            "openedAt": "2026-09-23T11:00:00.000Z",
            "waitingOn": "owner"
        }] } })
    );
    assert_eq!(GateStateV1::from_metadata(&m), Some(state));
}

#[test]
fn write_into_keeps_the_other_metadata() {
    let mut m = serde_json::Map::new();
    m.insert("other".into(), json!(1));
    GateStateV1::default().write_into(&mut m);
    assert_eq!(m["other"], json!(1));
    assert_eq!(m[GATE_URI], json!({ "gates": [] }));
}

#[test]
fn an_open_gate_reads_the_vector_shape() {
    let g: OpenGate = serde_json::from_value(
        json!({ "id": "m-gate", "type": "wake", "openedAt": "2026-09-23T11:00:00.000Z" }),
    )
    .unwrap();
    assert_eq!(g, gate("m-gate", "wake", "2026-09-23T11:00:00Z"));
}

#[test]
fn each_gate_type_has_its_fixed_sentence() {
    assert_eq!(
        gate_sentence("task-proposal"),
        "Waiting for the project owner to approve this handoff."
    );
    assert_eq!(
        gate_sentence("tool-approval"),
        "Waiting for the project owner to approve a tool call."
    );
    assert_eq!(
        gate_sentence("scope"),
        "Waiting for the project owner to approve a change of scope."
    );
    assert_eq!(
        gate_sentence("wake"),
        "Waiting for the project owner to approve waking the task."
    );
    assert_eq!(gate_sentence("memory"), GENERIC_GATE_SENTENCE);
}

#[test]
fn gate_v1_uri_is_canonical() {
    assert_eq!(GATE_URI, "https://dispatch.foo/a2a/ext/gate/v1");
}
