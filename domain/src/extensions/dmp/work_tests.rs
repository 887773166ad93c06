//! Given a work/v1 request value, when it is parsed, then it is a typed request or refused on
//! the exact field. The vectors are `vectors/a2a-binding/work-ext.json` of wsoule/dispatch at
//! 93efa6ac (the spec's ids) and at 0af286a2 (the older ids); their inputs are transcribed.

use serde_json::{json, Value};

use super::*;
use crate::error::DomainError;

const TITLE: &str = "Add rate limiting to the export API";

fn accepted(raw: Value) -> WorkRequest {
    WorkRequest::parse(&raw).unwrap_or_else(|e| panic!("expected ok, got {e}"))
}

fn handoff(raw: Value) -> Handoff {
    match accepted(raw) {
        WorkRequest::Handoff(h) => h,
        other => panic!("expected a handoff, got {other:?}"),
    }
}

/// The field a refusal names (DMP error code `invalid` on that field).
fn refused(raw: Value) -> String {
    match WorkRequest::parse(&raw) {
        Ok(r) => panic!("expected invalid, got {r:?}"),
        Err(e) => e.field,
    }
}

fn with_title(extra: Value) -> Value {
    let mut v = json!({ "skill": "handoff", "title": TITLE });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn strings(n: usize, f: impl Fn(usize) -> String) -> Vec<String> {
    (0..n).map(f).collect()
}

// ---- the spec's vectors (work-ext.json at 93efa6ac) ----

// vector: a2a.work-ext.accepts-a-handoff-with-every-field
#[test]
fn accepts_a_handoff_with_every_field() {
    let h = handoff(json!({
        "skill": "handoff",
        "title": "Add rate limiting to the export API",
        "acceptance": ["Exports over 100 per minute get 429"],
        "writes": ["src/export/**", "docs/api.md"],
        "priority": "high",
        "labels": ["api", "Rate Limits"]
    }));
    assert_eq!(h.title.as_str(), "Add rate limiting to the export API");
    assert_eq!(
        h.acceptance[0].as_str(),
        "Exports over 100 per minute get 429"
    );
    let writes: Vec<&str> = h.writes.iter().map(RepoPath::as_str).collect();
    assert_eq!(writes, ["src/export/**", "docs/api.md"]);
    assert_eq!(h.priority, Priority::High);
    assert_eq!(h.stored_labels(), ["a2a/api", "a2a/Rate Limits"]);
}

// vector: a2a.work-ext.accepts-a-status-request
#[test]
fn accepts_a_status_request() {
    assert_eq!(
        accepted(json!({ "skill": "status" })),
        WorkRequest::Status { task: None }
    );
    assert_eq!(
        accepted(json!({ "skill": "status", "task": "a2a-task-1" })),
        WorkRequest::Status {
            task: Some(TaskId::parse("a2a-task-1").unwrap())
        }
    );
}

// vector: a2a.work-ext.refuses-an-unknown-skill
#[test]
fn refuses_an_unknown_skill() {
    assert_eq!(refused(json!({ "skill": "deploy" })), "work.skill");
}

// vector: a2a.work-ext.refuses-a-handoff-without-a-title
#[test]
fn refuses_a_handoff_without_a_title() {
    assert_eq!(refused(json!({ "skill": "handoff" })), "work.title");
    assert_eq!(
        refused(json!({ "skill": "handoff", "title": "  " })),
        "work.title"
    );
}

// vector: a2a.work-ext.refuses-a-title-over-200-bytes
#[test]
fn refuses_a_title_over_200_bytes() {
    // Given 67 two-byte "é" separated by spaces: exactly 200 bytes, 133 characters.
    let at_limit = vec!["é"; 67].join(" ");
    assert_eq!(at_limit.len(), TITLE_MAX_BYTES);
    handoff(json!({ "skill": "handoff", "title": at_limit }));
    // When one "x" more makes 201 bytes, then the title is refused.
    let past = format!("{at_limit}x");
    assert_eq!(past.len(), TITLE_MAX_BYTES + 1);
    assert_eq!(
        refused(json!({ "skill": "handoff", "title": past })),
        "work.title"
    );
}

// vector: a2a.work-ext.refuses-a-multi-line-title
#[test]
fn refuses_a_multi_line_title() {
    assert_eq!(
        refused(json!({ "skill": "handoff", "title": "Fix it\nnow" })),
        "work.title"
    );
}

// vector: a2a.work-ext.refuses-more-than-20-acceptance-criteria
#[test]
fn refuses_more_than_20_acceptance_criteria() {
    let criteria = strings(21, |i| format!("criterion {i}"));
    assert_eq!(
        refused(with_title(json!({ "acceptance": criteria }))),
        "work.acceptance"
    );
}

// vector: a2a.work-ext.refuses-a-criterion-over-500-bytes
#[test]
fn refuses_a_criterion_over_500_bytes() {
    let long = "x".repeat(CRITERION_MAX_BYTES + 1);
    assert_eq!(
        refused(with_title(json!({ "acceptance": ["ok", long] }))),
        "work.acceptance[1]"
    );
}

// vector: a2a.work-ext.refuses-a-multi-line-criterion (named in §8.6; no public body)
#[test]
fn refuses_a_multi_line_criterion() {
    for broken in ["first\nsecond", "first\r\nsecond", "first\u{2028}second"] {
        assert_eq!(
            refused(with_title(json!({ "acceptance": ["ok", broken] }))),
            "work.acceptance[1]"
        );
    }
}

// vector: a2a.work-ext.refuses-more-than-50-writes
#[test]
fn refuses_more_than_50_writes() {
    let writes = strings(51, |i| format!("src/f{i}.ts"));
    assert_eq!(
        refused(with_title(json!({ "writes": writes }))),
        "work.writes"
    );
}

// vector: a2a.work-ext.refuses-a-write-outside-the-repository
#[test]
fn refuses_a_write_outside_the_repository() {
    assert_eq!(
        refused(with_title(
            json!({ "writes": ["src/ok.ts", "/etc/passwd"] })
        )),
        "work.writes[1]"
    );
    for write in ["C:/Windows", "src\\x.ts", "src/../../x"] {
        assert_eq!(
            refused(with_title(json!({ "writes": [write] }))),
            "work.writes[0]",
            "{write}"
        );
    }
}

// vector: a2a.work-ext.refuses-a-write-over-512-bytes (named in §8.6; no public body)
#[test]
fn refuses_a_write_over_512_bytes() {
    let at_limit = format!("src/{}", "a".repeat(WRITE_MAX_BYTES - 4));
    assert_eq!(at_limit.len(), WRITE_MAX_BYTES);
    handoff(with_title(json!({ "writes": [at_limit] })));
    let past = format!("{at_limit}b");
    assert_eq!(
        refused(with_title(json!({ "writes": ["ok.ts", past] }))),
        "work.writes[1]"
    );
}

// vector: a2a.work-ext.refuses-an-unknown-priority
#[test]
fn refuses_an_unknown_priority() {
    assert_eq!(
        refused(with_title(json!({ "priority": "p0" }))),
        "work.priority"
    );
}

// vector: a2a.work-ext.refuses-more-than-10-labels
#[test]
fn refuses_more_than_10_labels() {
    let labels = strings(11, |i| format!("l{i}"));
    assert_eq!(
        refused(with_title(json!({ "labels": labels }))),
        "work.labels"
    );
    assert_eq!(
        refused(with_title(json!({ "labels": ["x".repeat(51)] }))),
        "work.labels[0]"
    );
}

// vector: a2a.work-ext.refuses-a-request-that-is-not-an-object
#[test]
fn refuses_a_request_that_is_not_an_object() {
    assert_eq!(refused(json!(["handoff"])), "work");
}

// ---- the older revision's vectors (work-ext.json at 0af286a2) ----

const OLD_TITLE: &str = "Rate-limit uploads";

fn with_old_title(extra: Value) -> Value {
    let mut v = json!({ "skill": "handoff", "title": OLD_TITLE });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

// vector: a2a.work-ext.accepts-a-handoff
#[test]
fn accepts_a_handoff() {
    let h = handoff(json!({
        "skill": "handoff",
        "title": "Rate-limit uploads",
        "acceptance": ["429 after 10 uploads a minute"],
        "writes": ["src/upload/**"],
        "priority": "high",
        "labels": ["api"]
    }));
    assert_eq!(h.title.as_str(), OLD_TITLE);
    assert_eq!(h.writes[0].as_str(), "src/upload/**");
    assert_eq!(h.priority.capped(), Priority::Medium);
}

// vector: a2a.work-ext.accepts-a-status-request (older revision's body)
#[test]
fn accepts_a_status_request_older_revision() {
    assert_eq!(
        accepted(json!({ "skill": "status", "task": "m-01" })),
        WorkRequest::Status {
            task: Some(TaskId::parse("m-01").unwrap())
        }
    );
}

// vector: a2a.work-ext.counts-the-title-in-bytes
#[test]
fn counts_the_title_in_bytes() {
    // Given 51 four-byte characters: 51 characters but 204 bytes.
    let rockets = "🚀".repeat(51);
    assert_eq!(rockets.len(), 204);
    assert_eq!(
        refused(json!({ "skill": "handoff", "title": rockets })),
        "work.title"
    );
    // And 50 of them, exactly 200 bytes, are accepted.
    handoff(json!({ "skill": "handoff", "title": "🚀".repeat(50) }));
}

// vector: a2a.work-ext.refuses-a-two-line-acceptance-entry
#[test]
fn refuses_a_two_line_acceptance_entry() {
    assert_eq!(
        refused(with_old_title(json!({ "acceptance": ["a\nb"] }))),
        "work.acceptance[0]"
    );
}

// vector: a2a.work-ext.refuses-more-than-50-writes (older revision's body)
#[test]
fn refuses_more_than_50_writes_older_revision() {
    assert_eq!(
        refused(with_old_title(json!({ "writes": vec!["a.ts"; 51] }))),
        "work.writes"
    );
}

// vector: a2a.work-ext.refuses-an-absolute-write
#[test]
fn refuses_an_absolute_write() {
    assert_eq!(
        refused(with_old_title(json!({ "writes": ["/etc/passwd"] }))),
        "work.writes[0]"
    );
}

// vector: a2a.work-ext.refuses-a-write-that-climbs-out
#[test]
fn refuses_a_write_that_climbs_out() {
    assert_eq!(
        refused(with_old_title(
            json!({ "writes": ["src/ok.ts", "src/../../outside.ts"] })
        )),
        "work.writes[1]"
    );
}

// vector: a2a.work-ext.refuses-a-windows-path
#[test]
fn refuses_a_windows_path() {
    assert_eq!(
        refused(with_old_title(json!({ "writes": ["C:\\repo\\a.ts"] }))),
        "work.writes[0]"
    );
}

// vector: a2a.work-ext.refuses-an-unknown-priority (older revision's body)
#[test]
fn refuses_an_unknown_priority_older_revision() {
    assert_eq!(
        refused(with_old_title(json!({ "priority": "asap" }))),
        "work.priority"
    );
}

// vector: a2a.work-ext.refuses-a-label-over-50-bytes
#[test]
fn refuses_a_label_over_50_bytes() {
    assert_eq!(
        refused(with_old_title(json!({ "labels": ["l".repeat(51)] }))),
        "work.labels[0]"
    );
}

// ---- every limit at the boundary and one past ----

#[test]
fn acceptance_takes_20_entries_and_refuses_21() {
    let h = handoff(with_title(
        json!({ "acceptance": strings(ACCEPTANCE_MAX_ENTRIES, |i| format!("c{i}")) }),
    ));
    assert_eq!(h.acceptance.len(), 20);
    let past = strings(ACCEPTANCE_MAX_ENTRIES + 1, |i| format!("c{i}"));
    assert_eq!(
        refused(with_title(json!({ "acceptance": past }))),
        "work.acceptance"
    );
}

#[test]
fn a_criterion_takes_500_bytes_and_refuses_501() {
    // Given three-byte characters, so the limit is bytes and not characters.
    let at_limit = format!("{}xx", "€".repeat(166));
    assert_eq!(at_limit.len(), CRITERION_MAX_BYTES);
    handoff(with_title(json!({ "acceptance": [at_limit.clone()] })));
    assert_eq!(
        refused(with_title(
            json!({ "acceptance": [format!("{at_limit}x")] })
        )),
        "work.acceptance[0]"
    );
}

#[test]
fn writes_take_50_entries_and_refuse_51() {
    let h = handoff(with_title(
        json!({ "writes": strings(WRITES_MAX_ENTRIES, |i| format!("f{i}")) }),
    ));
    assert_eq!(h.writes.len(), 50);
    let past = strings(WRITES_MAX_ENTRIES + 1, |i| format!("f{i}"));
    assert_eq!(
        refused(with_title(json!({ "writes": past }))),
        "work.writes"
    );
}

#[test]
fn labels_take_10_entries_and_refuse_11() {
    let h = handoff(with_title(
        json!({ "labels": strings(LABELS_MAX_ENTRIES, |i| format!("l{i}")) }),
    ));
    assert_eq!(h.labels.len(), 10);
    let past = strings(LABELS_MAX_ENTRIES + 1, |i| format!("l{i}"));
    assert_eq!(
        refused(with_title(json!({ "labels": past }))),
        "work.labels"
    );
}

#[test]
fn a_label_takes_50_bytes_and_refuses_51() {
    let at_limit = "é".repeat(25);
    assert_eq!(at_limit.len(), LABEL_MAX_BYTES);
    let h = handoff(with_title(json!({ "labels": ["ok", at_limit.clone()] })));
    assert_eq!(h.labels[1].stored(), format!("a2a/{at_limit}"));
    assert_eq!(
        refused(with_title(
            json!({ "labels": ["ok", format!("{at_limit}x")] })
        )),
        "work.labels[1]"
    );
}

// ---- what the spec says about values, beyond the vectors ----

#[test]
fn a_glob_and_dotted_names_are_repo_relative() {
    for ok in [
        "src/**/*.rs",
        ".github/workflows/ci.yml",
        "a/.../b",
        "a..b/c",
        "./x",
    ] {
        assert!(RepoPath::parse(ok).is_ok(), "{ok}");
    }
    for bad in ["..", "../x", "a/..", "d:x", "//server/share", ""] {
        assert!(RepoPath::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn priority_is_capped_at_medium_and_defaults_to_none() {
    let caps: Vec<&str> = ["urgent", "high", "medium", "low", "none"]
        .iter()
        .map(|p| Priority::parse(p).unwrap().capped().as_str())
        .collect();
    assert_eq!(caps, ["medium", "medium", "medium", "low", "none"]);
    assert_eq!(handoff(with_title(json!({}))).priority, Priority::None);
}

#[test]
fn a_label_is_stored_under_a2a_even_when_it_claims_the_prefix() {
    assert_eq!(Label::parse("a2a/x").unwrap().stored(), "a2a/a2a/x");
}

#[test]
fn wrong_types_are_refused_on_their_field() {
    assert_eq!(refused(json!({})), "work.skill");
    assert_eq!(refused(json!({ "skill": 3 })), "work.skill");
    assert_eq!(
        refused(json!({ "skill": "handoff", "title": 7 })),
        "work.title"
    );
    assert_eq!(
        refused(with_title(json!({ "acceptance": "one" }))),
        "work.acceptance"
    );
    assert_eq!(
        refused(with_title(json!({ "writes": ["a", 2] }))),
        "work.writes[1]"
    );
    assert_eq!(
        refused(with_title(json!({ "priority": 1 }))),
        "work.priority"
    );
    assert_eq!(
        refused(json!({ "skill": "status", "task": 5 })),
        "work.task"
    );
    assert_eq!(
        refused(json!({ "skill": "status", "task": "" })),
        "work.task"
    );
    assert_eq!(refused(json!("handoff")), "work");
    assert_eq!(refused(Value::Null), "work");
}

#[test]
fn null_optional_members_count_as_absent_and_unknown_ones_are_ignored() {
    let h = handoff(with_title(
        json!({ "acceptance": null, "priority": null, "risk": "low" }),
    ));
    assert!(h.acceptance.is_empty());
    assert_eq!(h.priority, Priority::None);
}

#[test]
fn metadata_without_work_v1_is_an_ask() {
    let mut m = serde_json::Map::new();
    assert_eq!(WorkRequest::from_metadata(None), Ok(None));
    assert_eq!(WorkRequest::from_metadata(Some(&m)), Ok(None));
    m.insert(WORK_URI.into(), json!({ "skill": "status" }));
    assert_eq!(
        WorkRequest::from_metadata(Some(&m)),
        Ok(Some(WorkRequest::Status { task: None }))
    );
}

#[test]
fn a_work_error_is_invalid_params_on_its_field() {
    let e = WorkRequest::parse(&json!({ "skill": "deploy" })).unwrap_err();
    let d: DomainError = e.into();
    assert_eq!(d.kind(), crate::error::ErrorKind::InvalidParams);
    assert_eq!(
        d.metadata().get("field").map(String::as_str),
        Some("work.skill")
    );
    assert!(d.to_string().starts_with("work.skill: "));
}
