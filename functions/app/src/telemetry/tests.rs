//! The two renderings of the metrics: Prometheus text that parses as the exposition format
//! says, and EMF lines that satisfy CloudWatch's specification (its JSON schema, and the
//! rules the schema cannot say: every dimension and metric named in `_aws` is a member, each
//! value a number or at most 100 of them).

use std::time::Duration;

use serde_json::{json, Value};
use taskledger_domain::wire::TaskState;

use super::calls::CallOutcome;
use super::emf::Reporter;
use super::histogram::BUCKETS;
use super::metrics::{Binding, Metrics, PushOutcome, TokenKind, TurnOutcome};
use super::prometheus;
use crate::request::Method;

#[test]
fn methods_are_indexed_by_their_place_in_all() {
    for (i, m) in Method::ALL.iter().enumerate() {
        assert_eq!(m.index(), i, "{}", m.name());
        assert_eq!(Method::named(m.name()).unwrap(), *m);
    }
}

fn record_some(m: &Metrics) {
    m.request(
        Method::GetTask,
        Binding::Grpc,
        None,
        Duration::from_millis(2),
    );
    m.request(
        Method::GetTask,
        Binding::Grpc,
        Some("TASK_NOT_FOUND"),
        Duration::from_micros(300),
    );
    m.commit();
    m.turn(TurnOutcome::Ran, Some(Duration::from_millis(40)));
    m.tokens(TokenKind::Input, 12);
    m.push(PushOutcome::Delivered, Duration::from_millis(3));
    m.upstream(CallOutcome::Ok, Duration::from_millis(5));
    m.mcp(CallOutcome::Timeout, Duration::from_millis(7));
}

/// Prometheus text: `# HELP` and `# TYPE` before each family's samples, samples as
/// `name{labels} value`, histogram buckets cumulative up to `+Inf` = `_count`.
#[test]
fn the_prometheus_text_is_well_formed() {
    let m = Metrics::new();
    record_some(&m);
    let text = prometheus::render(
        &m.snapshot(),
        Some(&[(TaskState::Completed, 3), (TaskState::Working, 1)]),
    );
    let mut typed = std::collections::HashMap::new();
    let mut inf = std::collections::HashMap::new();
    let mut last = std::collections::HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            typed.insert(name.to_string(), kind.to_string());
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("name and value");
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("a number: {line}"));
        let name = series.split('{').next().unwrap();
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "{line}"
        );
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| typed.get(*f).is_some_and(|k| k == "histogram"))
            })
            .unwrap_or(name);
        assert!(typed.contains_key(family), "no TYPE before {line}");
        if let Some(labels) = series.strip_prefix(name) {
            if !labels.is_empty() {
                assert!(labels.starts_with('{') && labels.ends_with('}'), "{line}");
                for pair in labels[1..labels.len() - 1].split(',') {
                    let (k, v) = pair.split_once('=').expect("label=value");
                    assert!(
                        !k.is_empty() && v.starts_with('"') && v.ends_with('"'),
                        "{line}"
                    );
                }
            }
        }
        if name.ends_with("_bucket") {
            let key = series
                .split("le=")
                .next()
                .unwrap()
                .trim_end_matches(',')
                .to_string();
            let before = last.insert(key.clone(), value).unwrap_or(0.0);
            assert!(value >= before, "buckets are cumulative: {line}");
            if series.contains("le=\"+Inf\"") {
                inf.insert(key.replace("_bucket", "_count"), value);
            }
        }
        if name.ends_with("_count") {
            let key = match series.find('{') {
                Some(i) => format!("{}{{{}", &series[..i], &series[i + 1..series.len() - 1]),
                None => format!("{series}{{"),
            };
            assert_eq!(
                inf.get(&key),
                Some(&value),
                "+Inf bucket is the count: {line}"
            );
        }
    }
    assert!(text.contains(
        "a2a_requests_total{method=\"GetTask\",binding=\"grpc\",outcome=\"TASK_NOT_FOUND\"}"
    ));
    assert!(text.contains("taskledger_tasks{state=\"TASK_STATE_COMPLETED\"} 3"));
    assert!(text.contains("taskledger_upstream_calls_total{outcome=\"ok\"} 1"));
    assert!(text.contains("taskledger_mcp_calls_total{outcome=\"timeout\"} 1"));
    assert!(text.contains("taskledger_mcp_call_duration_seconds_count 1"));
    assert_eq!(
        BUCKETS.len() + 1,
        text.matches("taskledger_agent_turn_duration_seconds_bucket")
            .count()
    );
}

/// The EMF specification's JSON schema (CloudWatch's "Specification: Embedded metric format").
fn emf_schema() -> Value {
    let units = [
        "Seconds",
        "Microseconds",
        "Milliseconds",
        "Bytes",
        "Kilobytes",
        "Megabytes",
        "Gigabytes",
        "Terabytes",
        "Bits",
        "Kilobits",
        "Megabits",
        "Gigabits",
        "Terabits",
        "Percent",
        "Count",
        "Bytes/Second",
        "Kilobytes/Second",
        "Megabytes/Second",
        "Gigabytes/Second",
        "Terabytes/Second",
        "Bits/Second",
        "Kilobits/Second",
        "Megabits/Second",
        "Gigabits/Second",
        "Terabits/Second",
        "Count/Second",
        "None",
    ];
    json!({
        "type": "object",
        "required": ["_aws"],
        "properties": {
            "_aws": {
                "type": "object",
                "required": ["Timestamp", "CloudWatchMetrics"],
                "properties": {
                    "Timestamp": {"type": "integer", "minimum": 0},
                    "CloudWatchMetrics": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["Namespace", "Dimensions", "Metrics"],
                            "properties": {
                                "Namespace": {"type": "string", "minLength": 1, "maxLength": 1024},
                                "Dimensions": {
                                    "type": "array",
                                    "items": {
                                        "type": "array",
                                        "maxItems": 30,
                                        "items": {"type": "string", "minLength": 1, "maxLength": 250}
                                    }
                                },
                                "Metrics": {
                                    "type": "array",
                                    "maxItems": 100,
                                    "items": {
                                        "type": "object",
                                        "required": ["Name"],
                                        "properties": {
                                            "Name": {"type": "string", "minLength": 1, "maxLength": 1024},
                                            "Unit": {"enum": units},
                                            "StorageResolution": {"enum": [1, 60]}
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    })
}

fn check_emf(line: &str) -> Value {
    let doc: Value = serde_json::from_str(line).expect("one JSON object a line");
    let schema = emf_schema();
    let validator = jsonschema::validator_for(&schema).expect("schema");
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{line}: {errors:?}");
    for directive in doc["_aws"]["CloudWatchMetrics"].as_array().unwrap() {
        for set in directive["Dimensions"].as_array().unwrap() {
            for d in set.as_array().unwrap() {
                assert!(
                    doc[d.as_str().unwrap()].is_string(),
                    "dimension {d} in {line}"
                );
            }
        }
        for m in directive["Metrics"].as_array().unwrap() {
            let v = &doc[m["Name"].as_str().unwrap()];
            let ok = v.is_number()
                || v.as_array().is_some_and(|a| {
                    !a.is_empty() && a.len() <= 100 && a.iter().all(Value::is_number)
                });
            assert!(ok, "metric {m} in {line}");
        }
    }
    doc
}

#[test]
fn emf_lines_follow_the_specification_and_report_what_changed() {
    let m = Metrics::new();
    m.keep_samples();
    let mut reporter = Reporter::new("taskledger-test");
    m.commit();
    // What happened before the first report is reported once.
    let first = reporter.report(m.snapshot(), 0);
    assert_eq!(first.len(), 1, "{first:?}");
    record_some(&m);
    let lines = reporter.report(m.snapshot(), 1_767_225_600_000);
    let docs: Vec<Value> = lines.iter().map(|l| check_emf(l)).collect();
    let find = |name: &str| {
        docs.iter()
            .find(|d| d.get(name).is_some())
            .unwrap_or_else(|| panic!("{name} in {lines:?}"))
    };
    let refused = docs
        .iter()
        .find(|d| d["Outcome"] == "TASK_NOT_FOUND")
        .expect("the refused GetTask");
    assert_eq!(refused["Requests"], 1);
    assert_eq!(refused["Method"], "GetTask");
    assert_eq!(refused["Binding"], "grpc");
    let latency = find("RequestLatency")["RequestLatency"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        latency.contains(&json!(2.0)) && latency.contains(&json!(0.3)),
        "{latency:?}"
    );
    assert_eq!(find("Commits")["Commits"], 1);
    assert_eq!(find("AgentTurns")["AgentTurns"], 1);
    assert_eq!(find("AgentTurns")["Outcome"], "ran");
    assert_eq!(find("ModelTokens")["ModelTokens"], 12);
    assert_eq!(find("PushDeliveries")["PushDeliveries"], 1);
    assert_eq!(
        find("AgentTurnDuration")["AgentTurnDuration"],
        json!([40.0])
    );
    // Calls to other parties (ADR 034), as /metrics counts them.
    assert_eq!(find("UpstreamCalls")["UpstreamCalls"], 1);
    assert_eq!(find("UpstreamCalls")["Outcome"], "ok");
    assert_eq!(find("McpCalls")["McpCalls"], 1);
    assert_eq!(find("McpCalls")["Outcome"], "timeout");
    assert_eq!(
        find("UpstreamCallLatency")["UpstreamCallLatency"],
        json!([5.0])
    );
    assert_eq!(find("McpCallLatency")["McpCallLatency"], json!([7.0]));
    // Nothing new: nothing reported.
    assert!(reporter.report(m.snapshot(), 1_767_225_601_000).is_empty());
}
