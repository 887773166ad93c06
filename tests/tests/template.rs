//! What the SAM stack promises a team that runs it, read from `template.yaml`: an alarm on the
//! depth of every dead-letter queue, on the errors and the throttles of every function, on the
//! stream consumers' iterator age; every alarm notifies the alarm topic when it fires and when
//! it clears, exists exactly when what it watches does, and the dashboard is there.

use serde_yaml::Value;

fn text() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
        .expect("template.yaml")
}

fn template() -> Value {
    serde_yaml::from_str(&text()).expect("valid YAML")
}

/// The logical id a `!Ref X` or `!GetAtt X.Attr` names.
fn target(v: &Value) -> Option<String> {
    match v {
        Value::Tagged(t) => t
            .value
            .as_str()
            .map(|s| s.split('.').next().unwrap().to_string()),
        _ => None,
    }
}

/// Alarms: (logical id, metric name, watched resource, condition).
fn alarms(doc: &Value) -> Vec<(String, String, String, Option<String>)> {
    let resources = doc["Resources"].as_mapping().unwrap();
    let mut out = Vec::new();
    for (id, r) in resources {
        if r["Type"].as_str() != Some("AWS::CloudWatch::Alarm") {
            continue;
        }
        let p = &r["Properties"];
        for actions in ["AlarmActions", "OKActions"] {
            assert_eq!(
                p[actions].as_sequence().map(Vec::len),
                Some(1),
                "{id:?}: {actions} names the alarm topic"
            );
        }
        let dims = p["Dimensions"].as_sequence().expect("dimensions");
        let watched = target(&dims[0]["Value"]).expect("a dimension naming a resource");
        out.push((
            id.as_str().unwrap().to_string(),
            p["MetricName"].as_str().unwrap().to_string(),
            watched,
            r["Condition"].as_str().map(str::to_string),
        ));
    }
    out
}

#[test]
fn every_dead_letter_queue_and_function_has_its_alarms() {
    let doc = template();
    let resources = doc["Resources"].as_mapping().unwrap();
    let alarms = alarms(&doc);
    let has = |metric: &str, id: &str| {
        alarms
            .iter()
            .find(|(_, m, w, _)| m == metric && w == id)
            .map(|(_, _, _, c)| c.clone())
    };
    let mut queues = 0;
    let mut functions = 0;
    for (id, r) in resources {
        let id = id.as_str().unwrap();
        let condition = r["Condition"].as_str().map(str::to_string);
        match r["Type"].as_str().unwrap() {
            "AWS::SQS::Queue" => {
                // A queue no other queue redrives into is a working queue; a DLQ is one named
                // as some queue's dead-letter target or a stream's failure destination.
                let text = text();
                let is_dead_letter = text
                    .contains(&format!("deadLetterTargetArn: !GetAtt {id}.Arn"))
                    || text.contains(&format!("Destination: !GetAtt {id}.Arn"));
                if is_dead_letter {
                    queues += 1;
                    assert_eq!(
                        has("ApproximateNumberOfMessagesVisible", id),
                        Some(condition),
                        "{id}: a depth alarm, under the queue's own condition"
                    );
                }
            }
            "AWS::Serverless::Function" => {
                functions += 1;
                for metric in ["Errors", "Throttles"] {
                    assert_eq!(
                        has(metric, id),
                        Some(condition.clone()),
                        "{id}: a {metric} alarm, under the function's own condition"
                    );
                }
            }
            _ => {}
        }
    }
    assert!(
        queues >= 4,
        "turn, push, relay and archive dead letters: {queues}"
    );
    assert!(functions >= 7, "{functions}");
    for stream_consumer in ["RelayFunction", "ArchiveFunction"] {
        assert!(
            has("IteratorAge", stream_consumer).is_some(),
            "{stream_consumer}"
        );
    }
    assert_eq!(
        doc["Resources"]["Dashboard"]["Type"].as_str(),
        Some("AWS::CloudWatch::Dashboard")
    );
    assert!(doc["Parameters"]["AlarmTopicArn"].is_mapping());
}

/// ADR 038: with `EventBusName` the relay publishes each task's lifecycle — its variables name
/// the bus (the one the stack creates, or the one given) and the detail level, it may put events
/// on exactly that bus, and its stream filter lets the items marked `lc` through; without it,
/// none of that is there.
#[test]
fn the_lifecycle_bus_is_wired_to_the_relay_only_when_asked_for() {
    let doc = template();
    let conditions = &doc["Conditions"];
    assert!(conditions.get("PublishLifecycle").is_some());
    assert!(conditions.get("CreateEventBus").is_some());
    let bus = &doc["Resources"]["LifecycleBus"];
    assert_eq!(bus["Type"], "AWS::Events::EventBus");
    assert_eq!(bus["Condition"], "CreateEventBus");
    let relay = &doc["Resources"]["RelayFunction"]["Properties"];
    let vars = &relay["Environment"]["Variables"];
    assert!(vars.get("TASKLEDGER_EVENT_BUS").is_some());
    assert_eq!(
        target(&vars["TASKLEDGER_EVENT_DETAIL_LEVEL"]).as_deref(),
        Some("EventDetailLevel")
    );
    let text = text();
    let relay_text =
        &text[text.find("  RelayFunction:").unwrap()..text.find("  LifecycleBus:").unwrap()];
    assert!(
        relay_text.contains("Action: events:PutEvents"),
        "the relay may put events"
    );
    assert!(relay_text.contains("!GetAtt LifecycleBus.Arn"));
    assert!(
        relay_text.contains(r#"{"lc": {"S": ["1"]}}"#),
        "the filter lets lifecycle items through"
    );
    let conditional = relay_text
        .split("- !If")
        .skip(1)
        .filter(|part| part.trim_start().starts_with("- PublishLifecycle"))
        .count();
    assert_eq!(
        conditional, 2,
        "the policy and the filter, only when publishing"
    );
    let out = &doc["Outputs"]["EventBusName"];
    assert_eq!(out["Condition"], "PublishLifecycle");
}
