//! Property tests of the request layer's decoding: any JSON as any method's request object,
//! any HTTP+JSON path and query, and any version or extension header value is typed or refused
//! with an A2A error — never a panic.

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::{Method, Operation};
use crate::http::rest::routes::{query_fields, route};
use crate::request::METHODS;
use crate::request::{check_version, requested_extensions};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-zA-Z0-9_./:%=&?-]{1,16}",
        "\\PC{0,24}",
        Just("TASK_STATE_COMPLETED".to_string()),
        Just("-1".to_string()),
        Just("99999999999999999999".to_string()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("id"),
        Just("message"),
        Just("messageId"),
        Just("role"),
        Just("parts"),
        Just("text"),
        Just("configuration"),
        Just("historyLength"),
        Just("history_length"),
        Just("pageSize"),
        Just("pageToken"),
        Just("status"),
        Just("contextId"),
        Just("taskId"),
        Just("task_id"),
        Just("url"),
        Just("authentication"),
        Just("scope"),
        Just("statusTimestampAfter"),
        Just("includeArtifacts"),
        Just("returnImmediately"),
        Just("taskPushNotificationConfig"),
        Just("tenant"),
        Just("metadata"),
        Just("other"),
    ]
    .prop_map(str::to_string)
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e12f64..1e12).prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn method() -> impl Strategy<Value = Method> {
    (0..METHODS.len()).prop_map(|i| METHODS[i].1)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_request_object_is_typed_or_refused(m in method(), v in json_value()) {
        let _ = Operation::decode(m, v, "params");
    }

    #[test]
    fn any_rest_path_and_query_is_routed_or_refused(
        verb in prop_oneof![Just("GET"), Just("POST"), Just("DELETE"), Just("PUT")],
        segments in prop::collection::vec(text(), 0..5),
        query in text(),
    ) {
        let path = format!("/{}", segments.join("/"));
        if let Ok(r) = route(verb, &path) {
            let _ = query_fields(r.method, Some(&query));
        }
        for m in [Method::ListTasks, Method::GetTask, Method::ListTaskPushNotificationConfigs] {
            let _ = query_fields(m, Some(&query));
        }
    }

    #[test]
    fn any_version_and_extension_header_is_read_or_refused(v in text(), e in text()) {
        let _ = check_version(Some(v));
        let listed = requested_extensions(&[e.as_str()]);
        prop_assert!(listed.iter().all(|u| !u.is_empty() && !u.contains(',')));
    }
}
