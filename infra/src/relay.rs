//! The DynamoDB stream as a feed: a record's new image (attribute-value JSON, as the Lambda
//! event and the local stream poller carry it) read as the committed event the relay takes —
//! the relay Lambda and the local server's poller hand it to the one relay in the app crate.

use serde_json::Value;
use taskledger_domain::agent::turns::StreamedEvent;
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::CommittedEvent;
use taskledger_domain::projection::lifecycle::is_lifecycle;

use crate::dynamo::batch::{self, Record};
use crate::dynamo::schema;

/// The events of an event item (`pk = T#<task>`, `sk = E#<last seq>`: the events of one commit,
/// or one event of an item written before) from a stream record's new image (attribute-value
/// JSON: `{"pk": {"S": "T#…"}, …}`, binary in base64); other items, and a key that does not name
/// a task id, give nothing.
fn records(image: &Value) -> Option<(TaskId, Vec<Record>)> {
    let s = |k: &str| {
        image
            .get(k)
            .and_then(|v| v.get("S"))
            .and_then(Value::as_str)
    };
    let (task_id, _) = schema::parse_event_key(s("pk")?, s("sk")?)?;
    let task_id = TaskId::parse(task_id).ok()?;
    Some((task_id, batch::records_of_image(image)?))
}

/// The events an item's stream record carries, as the stream poller's tests collect them.
pub fn streamed(image: &Value) -> Vec<StreamedEvent> {
    let Some((task_id, records)) = records(image) else {
        return Vec::new();
    };
    records
        .into_iter()
        .map(|r| StreamedEvent {
            task_id: task_id.clone(),
            seq: r.seq,
            event_type: r.event_type,
        })
        .collect()
}

/// A stream record's new image as the committed events the relay takes, in order (none: not
/// an event item).
pub fn committed(image: &Value) -> Vec<CommittedEvent> {
    let Some((task_id, records)) = records(image) else {
        return Vec::new();
    };
    let expiring = image.get(schema::EXPIRES_ATTR).is_some();
    let trace = image
        .get(schema::TRACE_ATTR)
        .and_then(|v| v.get("S"))
        .and_then(Value::as_str)
        .map(str::to_string);
    records
        .into_iter()
        .map(|r| CommittedEvent {
            task_id: task_id.clone(),
            seq: r.seq,
            finished: r.finishes(),
            lifecycle: is_lifecycle(&r.event_type, r.gen.is_some()),
            event_type: r.event_type,
            pushed: r.push,
            expiring,
            // The work after the commit joins its trace (ADR 033).
            trace: trace.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_items_become_streamed_events_and_other_items_are_skipped() {
        let image = serde_json::json!({"pk": {"S": "T#abc.1"}, "sk": {"S": "E#00000000000000000007"}, "type": {"S": "AgentWorkRequested"}, "push": {"S": "{}"}});
        assert_eq!(
            streamed(&image),
            vec![StreamedEvent {
                task_id: TaskId::parse("abc.1").unwrap(),
                seq: 7,
                event_type: "AgentWorkRequested".into()
            }]
        );
        assert_eq!(committed(&image)[0].pushed.as_deref(), Some("{}"));
        let head = serde_json::json!({"pk": {"S": "T#abc"}, "sk": {"S": "HEAD"}});
        assert!(streamed(&head).is_empty());
        assert!(committed(&head).is_empty());
    }

    /// A commit's events in one item (ADR 036), as its stream record carries it.
    fn batch_image(records: &[(u64, &str, Option<&str>, Option<&str>)]) -> Value {
        let records: Vec<Record> = records
            .iter()
            .map(|(seq, t, sst, push)| Record {
                seq: *seq,
                event_type: t.to_string(),
                ver: "1".into(),
                payload: serde_json::value::RawValue::from_string("{}".into()).unwrap(),
                gen: sst.map(|_| 2),
                sst: sst.map(str::to_string),
                su: sst.map(|_| "{}".to_string()),
                push: push.map(str::to_string),
            })
            .collect();
        let last = records.last().unwrap().seq;
        let mut image = serde_json::Map::new();
        for (k, v) in batch::attributes(&records).unwrap() {
            let v = match v {
                aws_sdk_dynamodb::types::AttributeValue::S(s) => serde_json::json!({ "S": s }),
                aws_sdk_dynamodb::types::AttributeValue::N(n) => serde_json::json!({ "N": n }),
                aws_sdk_dynamodb::types::AttributeValue::B(b) => {
                    use base64::Engine;
                    serde_json::json!({ "B": base64::engine::general_purpose::STANDARD.encode(b.as_ref()) })
                }
                other => panic!("{other:?}"),
            };
            image.insert(k, v);
        }
        image.insert("pk".into(), serde_json::json!({"S": "T#t"}));
        image.insert(
            "sk".into(),
            serde_json::json!({ "S": schema::event_sk(last) }),
        );
        image.insert("tp".into(), serde_json::json!({"S": "00-trace"}));
        Value::Object(image)
    }

    #[test]
    fn a_batch_item_is_every_event_of_its_commit_in_order() {
        let image = batch_image(&[
            (4, "StatusChanged", Some("TASK_STATE_WORKING"), None),
            (
                5,
                "StatusChanged",
                Some("TASK_STATE_COMPLETED"),
                Some("{\"statusUpdate\":{}}"),
            ),
            (6, "AgentWorkRequested", None, None),
        ]);
        let events = committed(&image);
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [4, 5, 6]);
        assert!(!events[0].finished && events[1].finished && !events[2].finished);
        assert!(events[1].pushed.is_some() && events[0].pushed.is_none());
        assert!(events[2].turn().is_some());
        assert!(events
            .iter()
            .all(|e| e.trace.as_deref() == Some("00-trace")));
        assert_eq!(streamed(&image).len(), 3);
    }

    #[test]
    fn a_terminal_status_event_finishes_its_task_and_a_removal_is_no_event() {
        let event = |state: &str| {
            serde_json::json!({"pk": {"S": "T#t"}, "sk": {"S": "E#00000000000000000009"},
                "type": {"S": "StatusChanged"}, "sst": {"S": state}})
        };
        assert!(committed(&event("TASK_STATE_COMPLETED"))[0].finished);
        assert!(!committed(&event("TASK_STATE_WORKING"))[0].finished);
        // Items of a finished task carry their expiry: an archive writes the task again.
        assert!(!committed(&event("TASK_STATE_COMPLETED"))[0].expiring);
        let mut stamped = event("TASK_STATE_COMPLETED");
        stamped["expires"] = serde_json::json!({"N": "1767225600"});
        assert!(committed(&stamped)[0].expiring);
        // A TTL deletion's record (REMOVE) has no new image: nothing to relay.
        assert!(committed(&serde_json::json!({})).is_empty());
    }

    /// The stream event filters of a function in `template.yaml`, as JSON; a filter under
    /// `!If [PublishLifecycle, …, AWS::NoValue]` only when the stack publishes (`publishing`).
    fn filters(function: &str, publishing: bool) -> Vec<Value> {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
                .expect("template.yaml");
        let doc: serde_yaml::Value = serde_yaml::from_str(&text).expect("valid YAML");
        let filters = &doc["Resources"][function]["Properties"]["Events"]["TaskStream"]
            ["Properties"]["FilterCriteria"]["Filters"];
        filters
            .as_sequence()
            .unwrap_or_else(|| panic!("{function} has stream filters"))
            .iter()
            .filter_map(|f| match f {
                serde_yaml::Value::Tagged(t) if t.tag == "If" => {
                    let branches = t.value.as_sequence().expect("!If [condition, then, else]");
                    assert_eq!(branches[0].as_str(), Some("PublishLifecycle"));
                    publishing.then(|| branches[1].clone())
                }
                f => Some(f.clone()),
            })
            .map(|f| serde_json::from_str(f["Pattern"].as_str().expect("pattern")).expect("JSON"))
            .collect()
    }

    /// Lambda's event filtering, for the rules the template uses: exact strings, `exists`,
    /// `prefix`, nested objects.
    fn matches(pattern: &Value, value: Option<&Value>) -> bool {
        match pattern {
            Value::Object(fields) if fields.values().all(|v| v.is_array() || v.is_object()) => {
                fields.iter().all(|(k, p)| match p {
                    Value::Array(rules) => {
                        rules.iter().any(|r| rule(r, value.and_then(|v| v.get(k))))
                    }
                    _ => matches(p, value.and_then(|v| v.get(k))),
                })
            }
            _ => false,
        }
    }

    fn rule(rule: &Value, value: Option<&Value>) -> bool {
        match rule {
            Value::String(s) => value.and_then(Value::as_str) == Some(s.as_str()),
            Value::Object(r) => match (r.get("exists"), r.get("prefix")) {
                (Some(Value::Bool(e)), _) => value.is_some() == *e,
                (_, Some(Value::String(p))) => value
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with(p.as_str())),
                _ => panic!("a filter rule this test does not know: {rule}"),
            },
            _ => panic!("a filter rule this test does not know: {rule}"),
        }
    }

    fn passes(function: &str, image: &Value) -> bool {
        passes_when(function, image, false)
    }

    fn passes_when(function: &str, image: &Value, publishing: bool) -> bool {
        let record = serde_json::json!({"dynamodb": {"NewImage": image}});
        filters(function, publishing)
            .iter()
            .any(|p| matches(p, Some(&record)))
    }

    /// The relay function receives every record the relay acts on — a work request, a pushed
    /// update, a finishing event with no subscriber (its task's older items get their expiry) —
    /// and the archive function every event of an expiring task, and nothing else.
    #[test]
    fn the_templates_stream_filters_pass_what_the_relay_and_the_archive_act_on() {
        let event = |extra: Value| {
            let mut e = serde_json::json!({"pk": {"S": "T#t"}, "sk": {"S": "E#00000000000000000009"},
                "type": {"S": "StatusChanged"}, "sst": {"S": "TASK_STATE_WORKING"}});
            for (k, v) in extra.as_object().unwrap() {
                e[k] = v.clone();
            }
            e
        };
        let work = event(serde_json::json!({"type": {"S": "AgentWorkRequested"}}));
        let pushed = event(serde_json::json!({"push": {"S": "{}"}}));
        let idle = event(serde_json::json!({}));
        let head =
            serde_json::json!({"pk": {"S": "T#t"}, "sk": {"S": "HEAD"}, "expires": {"N": "1"}});
        for state in ["COMPLETED", "FAILED", "CANCELED", "REJECTED"] {
            let finishing = event(serde_json::json!({"sst": {"S": format!("TASK_STATE_{state}")}}));
            assert!(committed(&finishing)[0].finished);
            assert!(passes("RelayFunction", &finishing), "{state}");
            let batch = batch_image(&[
                (3, "StatusChanged", Some("TASK_STATE_WORKING"), None),
                (
                    4,
                    "StatusChanged",
                    Some(&format!("TASK_STATE_{state}")),
                    None,
                ),
            ]);
            assert!(committed(&batch)[1].finished);
            assert!(passes("RelayFunction", &batch), "a batch finishing {state}");
        }
        for acted in [&work, &pushed] {
            let c = &committed(acted)[0];
            assert!(c.turn().is_some() || c.pushed.is_some());
            assert!(passes("RelayFunction", acted), "{acted}");
        }
        let batch_work = batch_image(&[
            (2, "MessageAppended", None, None),
            (3, "AgentWorkRequested", None, None),
        ]);
        let batch_pushed =
            batch_image(&[(3, "StatusChanged", Some("TASK_STATE_WORKING"), Some("{}"))]);
        let batch_idle = batch_image(&[(3, "StatusChanged", Some("TASK_STATE_WORKING"), None)]);
        assert!(passes("RelayFunction", &batch_work));
        assert!(passes("RelayFunction", &batch_pushed));
        assert!(!passes("RelayFunction", &batch_idle));
        assert!(!passes("RelayFunction", &idle));
        assert!(!passes("RelayFunction", &head));
        // A stack that publishes each task's lifecycle (ADR 038) also relays what a bus is
        // told of; still not a head.
        assert!(committed(&batch_idle)[0].lifecycle);
        assert!(passes_when("RelayFunction", &batch_idle, true));
        assert!(!passes_when("RelayFunction", &head, true));
        assert!(!passes_when(
            "RelayFunction",
            &batch_image(&[(2, "MessageAppended", None, None)]),
            true
        ));

        let expiring = event(
            serde_json::json!({"sst": {"S": "TASK_STATE_COMPLETED"}, "expires": {"N": "1767225600"}}),
        );
        assert!(committed(&expiring)[0].expiring);
        assert!(passes("ArchiveFunction", &expiring));
        for other in [&work, &pushed, &idle, &head] {
            assert!(!passes("ArchiveFunction", other), "{other}");
        }
    }
}
