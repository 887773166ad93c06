//! The 0.3 JSON-RPC methods on the one JSON-RPC endpoint: each is a 1.0 operation with its
//! params translated (`request`) and its result written back in 0.3 shapes (`result`,
//! `stream_event`). `tasks/list` does not exist in 0.3 (MethodNotFound, as any unknown name).

use serde_json::{json, Value};
use taskledger_domain::push::MAX_PUSH_CONFIGS_PER_PRINCIPAL;

use super::objects::{self, event_out, push_config_in, push_config_out, send_result_out, task_out};
use crate::error::AppError;
use crate::operations::{Method, Outcome};

/// A 0.3 JSON-RPC method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method03 {
    Send,
    Stream,
    Get,
    Cancel,
    Resubscribe,
    SetPushConfig,
    GetPushConfig,
    ListPushConfigs,
    DeletePushConfig,
    ExtendedCard,
}

/// The 0.3 methods, by name, with the 1.0 operation each one is.
const METHODS: [(&str, Method03, Method); 10] = [
    ("message/send", Method03::Send, Method::SendMessage),
    (
        "message/stream",
        Method03::Stream,
        Method::SendStreamingMessage,
    ),
    ("tasks/get", Method03::Get, Method::GetTask),
    ("tasks/cancel", Method03::Cancel, Method::CancelTask),
    (
        "tasks/resubscribe",
        Method03::Resubscribe,
        Method::SubscribeToTask,
    ),
    (
        "tasks/pushNotificationConfig/set",
        Method03::SetPushConfig,
        Method::CreateTaskPushNotificationConfig,
    ),
    (
        "tasks/pushNotificationConfig/get",
        Method03::GetPushConfig,
        Method::GetTaskPushNotificationConfig,
    ),
    (
        "tasks/pushNotificationConfig/list",
        Method03::ListPushConfigs,
        Method::ListTaskPushNotificationConfigs,
    ),
    (
        "tasks/pushNotificationConfig/delete",
        Method03::DeletePushConfig,
        Method::DeleteTaskPushNotificationConfig,
    ),
    (
        "agent/getAuthenticatedExtendedCard",
        Method03::ExtendedCard,
        Method::GetExtendedAgentCard,
    ),
];

impl Method03 {
    /// The 0.3 method `name` is, if it is one.
    pub fn named(name: &str) -> Option<Self> {
        METHODS
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, m, _)| *m)
    }

    /// The 1.0 operation it runs as.
    pub fn operation(self) -> Method {
        METHODS
            .iter()
            .find(|(_, m, _)| *m == self)
            .map(|(_, _, op)| *op)
            .unwrap_or(Method::GetTask)
    }

    /// Whether it answers with a stream (its errors travel as an event of one).
    pub fn streams(self) -> bool {
        matches!(self, Self::Stream | Self::Resubscribe)
    }

    /// Whether a stream of this method ends at an interrupted state too (`message/stream`:
    /// the client must answer; `tasks/resubscribe` follows the task to its end).
    pub fn settles_at_interruption(self) -> bool {
        self == Self::Stream
    }
}

fn string_field(params: &Value, name: &str) -> Result<String, AppError> {
    match params.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) | None => Err(AppError::invalid_params(
            format!("params.{name}"),
            "is required",
        )),
        Some(_) => Err(AppError::invalid_params(
            format!("params.{name}"),
            "must be a string",
        )),
    }
}

/// The 1.0 request object a 0.3 call's `params` are.
pub fn request(method: Method03, params: &Value) -> Result<Value, AppError> {
    Ok(match method {
        Method03::Send | Method03::Stream => objects::send_params_in(params)?,
        Method03::Get => {
            let mut req = json!({"id": string_field(params, "id")?});
            // 0.3: absent or 0 is no limit.
            if let Some(n) = params
                .get("historyLength")
                .filter(|n| !n.is_null() && n.as_i64() != Some(0))
            {
                req["historyLength"] = n.clone();
            }
            req
        }
        Method03::Cancel => {
            let mut req = json!({"id": string_field(params, "id")?});
            if let Some(m) = params.get("metadata").filter(|m| !m.is_null()) {
                req["metadata"] = m.clone();
            }
            req
        }
        Method03::Resubscribe => json!({"id": string_field(params, "id")?}),
        Method03::SetPushConfig => {
            let task = string_field(params, "taskId")?;
            let config = params.get("pushNotificationConfig").ok_or_else(|| {
                AppError::invalid_params("params.pushNotificationConfig", "is required")
            })?;
            push_config_in(config, &task, "params.pushNotificationConfig")?
        }
        Method03::GetPushConfig => {
            let task = string_field(params, "id")?;
            // Without a config id, the one named after the task (a 0.3 set without an id).
            let config = params
                .get("pushNotificationConfigId")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map_or_else(|| task.clone(), str::to_string);
            json!({"taskId": task, "id": config})
        }
        Method03::ListPushConfigs => json!({
            "taskId": string_field(params, "id")?,
            "pageSize": MAX_PUSH_CONFIGS_PER_PRINCIPAL,
        }),
        Method03::DeletePushConfig => json!({
            "taskId": string_field(params, "id")?,
            "id": string_field(params, "pushNotificationConfigId")?,
        }),
        Method03::ExtendedCard => json!({}),
    })
}

/// The 0.3 `result` of a 1.0 outcome (a stream has none: its events are `stream_event`'s).
pub fn result(method: Method03, outcome: &Outcome) -> Result<Value, AppError> {
    if let Outcome::Encoded(bytes) = outcome {
        // Written by `TASK_ENCODING` already.
        return serde_json::from_slice(bytes).map_err(|e| {
            AppError::protocol(
                taskledger_domain::error::ErrorKind::Internal,
                format!("cannot read a kept answer: {e}"),
            )
        });
    }
    let v = outcome.to_value()?;
    Ok(match (method, outcome) {
        (_, Outcome::Sent(_)) => send_result_out(&v),
        (_, Outcome::Task(_)) => task_out(&v),
        (_, Outcome::PushConfig(_)) => push_config_out(&v),
        (_, Outcome::PushConfigs(_)) => Value::Array(
            v.get("configs")
                .and_then(Value::as_array)
                .map(|cs| cs.iter().map(push_config_out).collect())
                .unwrap_or_default(),
        ),
        // 0.3's delete answers `null`.
        (_, Outcome::Empty) => Value::Null,
        (_, Outcome::Card(card)) => super::card::pure(card),
        _ => v,
    })
}

/// How a 0.3 JSON-RPC binding writes a Task result, for the answers kept while nothing changes
/// (ADR 026): the 0.3 Task, so a kept answer is never sent in the other version's shape.
pub const TASK_ENCODING: crate::operations::TaskEncoding = crate::operations::TaskEncoding {
    id: 2,
    encode: |outcome| {
        let v = outcome.to_value()?;
        serde_json::to_vec(&task_out(&v)).map_err(|e| {
            AppError::protocol(
                taskledger_domain::error::ErrorKind::Internal,
                format!("cannot serialise the result: {e}"),
            )
        })
    },
};

/// One stream event (`StreamResponse` JSON) as the 0.3 event the method's stream sends.
pub fn stream_event(method: Method03, body: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return body.to_string();
    };
    let settles = method.settles_at_interruption();
    event_out(&v, |state| {
        matches!(
            state,
            "TASK_STATE_COMPLETED"
                | "TASK_STATE_CANCELED"
                | "TASK_STATE_FAILED"
                | "TASK_STATE_REJECTED"
        ) || (settles
            && matches!(
                state,
                "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED"
            ))
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_0_3_method_is_a_1_0_operation_and_others_are_not_0_3() {
        assert_eq!(
            Method03::named("message/send").map(Method03::operation),
            Some(Method::SendMessage)
        );
        assert_eq!(
            Method03::named("tasks/resubscribe").map(Method03::operation),
            Some(Method::SubscribeToTask)
        );
        assert_eq!(
            Method03::named("agent/getAuthenticatedExtendedCard").map(Method03::operation),
            Some(Method::GetExtendedAgentCard)
        );
        for not in [
            "SendMessage",
            "tasks/list",
            "tasks/subscribe",
            "message/Send",
            "",
        ] {
            assert_eq!(Method03::named(not), None, "{not}");
        }
    }

    #[test]
    fn params_become_the_1_0_request_objects() {
        let get = request(Method03::Get, &json!({"id": "t", "historyLength": 0})).unwrap();
        assert_eq!(get, json!({"id": "t"}), "0 is no limit in 0.3");
        let get = request(Method03::Get, &json!({"id": "t", "historyLength": 2})).unwrap();
        assert_eq!(get["historyLength"], 2);
        assert!(request(Method03::Get, &json!({})).is_err());
        assert!(request(Method03::Get, &json!({"id": 7})).is_err());
        assert_eq!(
            request(Method03::GetPushConfig, &json!({"id": "t"})).unwrap(),
            json!({"taskId": "t", "id": "t"})
        );
        assert_eq!(
            request(
                Method03::DeletePushConfig,
                &json!({"id": "t", "pushNotificationConfigId": "c"})
            )
            .unwrap(),
            json!({"taskId": "t", "id": "c"})
        );
        assert!(request(Method03::DeletePushConfig, &json!({"id": "t"})).is_err());
        let set = request(
            Method03::SetPushConfig,
            &json!({"taskId": "t", "pushNotificationConfig": {"id": "c", "url": "https://h"}}),
        )
        .unwrap();
        assert_eq!(set, json!({"taskId": "t", "id": "c", "url": "https://h"}));
    }

    #[test]
    fn a_delete_answers_null_and_a_list_a_bare_array() {
        assert_eq!(
            result(Method03::DeletePushConfig, &Outcome::Empty).unwrap(),
            Value::Null
        );
        let list = Outcome::PushConfigs(
            serde_json::from_value(
                json!({"configs": [{"taskId": "t", "id": "c", "url": "https://h"}], "nextPageToken": ""}),
            )
            .unwrap(),
        );
        assert_eq!(
            result(Method03::ListPushConfigs, &list).unwrap(),
            json!([{"taskId": "t", "pushNotificationConfig": {"id": "c", "url": "https://h"}}])
        );
    }

    #[test]
    fn a_send_stream_is_final_at_input_required_and_a_resubscription_is_not() {
        let asked = r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}"#;
        let sent: Value = serde_json::from_str(&stream_event(Method03::Stream, asked)).unwrap();
        assert_eq!(sent["final"], true);
        let followed: Value =
            serde_json::from_str(&stream_event(Method03::Resubscribe, asked)).unwrap();
        assert_eq!(followed["final"], false);
    }
}
