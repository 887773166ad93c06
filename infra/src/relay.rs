//! The DynamoDB stream as a feed: a record's new image (attribute-value JSON, as the Lambda
//! event and the local stream poller carry it) read as the committed event the relay takes —
//! the relay Lambda and the local server's poller hand it to the one relay in the app crate.

use serde_json::Value;
use taskledger_domain::agent::turns::StreamedEvent;
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::CommittedEvent;
use taskledger_domain::wire::TaskState;

use crate::dynamo::schema;
use crate::dynamo::store::PUSH_ATTR;

/// The update an event item pushes (its `push` attribute), if any.
pub fn pushed(image: &Value) -> Option<String> {
    image
        .get(PUSH_ATTR)
        .and_then(|v| v.get("S"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// A committed event item (`pk = T#<task>`, `sk = E#<seq>`) from a stream record's new image
/// (attribute-value JSON: `{"pk": {"S": "T#…"}, …}`); other items, and a key that does not name
/// a task id, give `None`.
pub fn streamed(image: &Value) -> Option<StreamedEvent> {
    let s = |k: &str| {
        image
            .get(k)
            .and_then(|v| v.get("S"))
            .and_then(|v| v.as_str())
    };
    let (task_id, seq) = schema::parse_event_key(s("pk")?, s("sk")?)?;
    Some(StreamedEvent {
        task_id: TaskId::parse(task_id).ok()?,
        seq,
        event_type: s("type")?.to_string(),
    })
}

/// A stream record's new image as the committed event the relay takes (`None`: not an event).
pub fn committed(image: &Value) -> Option<CommittedEvent> {
    let e = streamed(image)?;
    Some(CommittedEvent {
        task_id: e.task_id,
        seq: e.seq,
        event_type: e.event_type,
        pushed: pushed(image),
        finished: finished(image),
        expiring: image.get(schema::EXPIRES_ATTR).is_some(),
        trace: image
            .get(schema::TRACE_ATTR)
            .and_then(|v| v.get("S"))
            .and_then(|v| v.as_str())
            .map(str::to_string),
    })
}

/// Whether an event item's status update reports a terminal state (its `sst` attribute).
fn finished(image: &Value) -> bool {
    image
        .get(schema::STATUS_STATE_ATTR)
        .and_then(|v| v.get("S"))
        .and_then(|v| v.as_str())
        .and_then(TaskState::from_name)
        .is_some_and(TaskState::is_terminal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_items_become_streamed_events_and_other_items_are_skipped() {
        let image = serde_json::json!({"pk": {"S": "T#abc.1"}, "sk": {"S": "E#00000000000000000007"}, "type": {"S": "AgentWorkRequested"}, "push": {"S": "{}"}});
        assert_eq!(
            streamed(&image),
            Some(StreamedEvent {
                task_id: TaskId::parse("abc.1").unwrap(),
                seq: 7,
                event_type: "AgentWorkRequested".into()
            })
        );
        assert_eq!(pushed(&image).as_deref(), Some("{}"));
        let head = serde_json::json!({"pk": {"S": "T#abc"}, "sk": {"S": "HEAD"}});
        assert_eq!(streamed(&head), None);
        assert_eq!(pushed(&head), None);
    }

    #[test]
    fn a_terminal_status_event_finishes_its_task_and_a_removal_is_no_event() {
        let event = |state: &str| {
            serde_json::json!({"pk": {"S": "T#t"}, "sk": {"S": "E#00000000000000000009"},
                "type": {"S": "StatusChanged"}, "sst": {"S": state}})
        };
        assert!(committed(&event("TASK_STATE_COMPLETED")).unwrap().finished);
        assert!(!committed(&event("TASK_STATE_WORKING")).unwrap().finished);
        // Items of a finished task carry their expiry: an archive writes the task again.
        assert!(!committed(&event("TASK_STATE_COMPLETED")).unwrap().expiring);
        let mut stamped = event("TASK_STATE_COMPLETED");
        stamped["expires"] = serde_json::json!({"N": "1767225600"});
        assert!(committed(&stamped).unwrap().expiring);
        // A TTL deletion's record (REMOVE) has no new image: nothing to relay.
        assert_eq!(committed(&serde_json::json!({})), None);
    }

    /// The stream event filters of a function in `template.yaml`, as JSON.
    fn filters(function: &str) -> Vec<Value> {
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
        let record = serde_json::json!({"dynamodb": {"NewImage": image}});
        filters(function).iter().any(|p| matches(p, Some(&record)))
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
            assert!(committed(&finishing).unwrap().finished);
            assert!(passes("RelayFunction", &finishing), "{state}");
        }
        for acted in [&work, &pushed] {
            let c = committed(acted).unwrap();
            assert!(c.turn().is_some() || c.pushed.is_some());
            assert!(passes("RelayFunction", acted), "{acted}");
        }
        assert!(!passes("RelayFunction", &idle));
        assert!(!passes("RelayFunction", &head));

        let expiring = event(
            serde_json::json!({"sst": {"S": "TASK_STATE_COMPLETED"}, "expires": {"N": "1767225600"}}),
        );
        assert!(committed(&expiring).unwrap().expiring);
        assert!(passes("ArchiveFunction", &expiring));
        for other in [&work, &pushed, &idle, &head] {
            assert!(!passes("ArchiveFunction", other), "{other}");
        }
    }
}
