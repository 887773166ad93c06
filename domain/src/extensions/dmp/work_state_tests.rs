//! Given a work item's state, when WorkStateV1 is written, then it has the §8.6 shape under
//! the work/v1 URI, with a stage only in review or landing.

use serde_json::json;

use super::*;
use crate::extensions::dmp::ext_data::ExtensionData;

#[test]
fn a_working_item_has_no_stage() {
    let s = WorkStateV1::new("t-4a8cce", "Rate-limit uploads", WorkStatus::Working);
    assert_eq!(
        serde_json::Value::Object(s.to_metadata()),
        json!({ WORK_URI: { "task": "t-4a8cce", "title": "Rate-limit uploads", "status": "working" } })
    );
}

#[test]
fn review_and_landing_carry_their_stage() {
    let review = WorkStateV1::new("t-1", "T", WorkStatus::Review);
    assert_eq!(review.to_value()["stage"], json!("review"));
    let landing = WorkStateV1::new("t-1", "T", WorkStatus::Landing);
    assert_eq!(landing.to_value()["stage"], json!("landing"));
}

#[test]
fn every_lifecycle_status_and_a_hosts_own_round_trip() {
    for s in [
        "draft", "ready", "working", "review", "landing", "landed", "dropped", "qa",
    ] {
        let status = WorkStatus::parse(s);
        assert_eq!(status.as_str(), s);
        assert_eq!(serde_json::to_value(&status).unwrap(), json!(s));
        let back: WorkStatus = serde_json::from_value(json!(s)).unwrap();
        assert_eq!(back, status);
    }
    assert_eq!(WorkStatus::parse("qa"), WorkStatus::Host("qa".into()));
}

#[test]
fn work_state_reads_back_from_task_metadata() {
    let s = WorkStateV1::new("t-1", "T", WorkStatus::Landing);
    let mut m = serde_json::Map::new();
    m.insert("kept".into(), json!(true));
    s.write_into(&mut m);
    assert_eq!(m["kept"], json!(true));
    assert_eq!(WorkStateV1::from_metadata(&m), Some(s));
    assert_eq!(WorkStateV1::from_metadata(&serde_json::Map::new()), None);
}
