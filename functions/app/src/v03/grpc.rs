//! The 0.3 gRPC service (`a2a.v1.A2AService`) in terms of the JSON-RPC translation: each RPC
//! is a 0.3 method, its request (ProtoJSON of the 0.3 proto, resources named
//! `tasks/{id}` and `tasks/{id}/pushNotificationConfigs/{config}`) read into that method's
//! params, and its answer written as the HTTP+JSON binding writes it (`proto_json::answer`).
//! Only the card differs: the 0.3 proto keeps security schemes as 1.0 does, in oneof wrappers.

use serde_json::{json, Value};

use super::jsonrpc::Method03;
use super::proto_json;
use crate::error::AppError;

/// The 0.3 RPCs, by name, with the 0.3 method each one is.
pub const RPCS: [(&str, Method03); 10] = [
    ("SendMessage", Method03::Send),
    ("SendStreamingMessage", Method03::Stream),
    ("GetTask", Method03::Get),
    ("CancelTask", Method03::Cancel),
    ("TaskSubscription", Method03::Resubscribe),
    ("CreateTaskPushNotificationConfig", Method03::SetPushConfig),
    ("GetTaskPushNotificationConfig", Method03::GetPushConfig),
    ("ListTaskPushNotificationConfig", Method03::ListPushConfigs),
    (
        "DeleteTaskPushNotificationConfig",
        Method03::DeletePushConfig,
    ),
    ("GetAgentCard", Method03::ExtendedCard),
];

/// The 0.3 method of RPC `name`.
pub fn method_of(name: &str) -> Option<Method03> {
    RPCS.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The task id of a `tasks/{id}` resource name.
fn task_of(name: &str, field: &str) -> Result<String, AppError> {
    match name.strip_prefix("tasks/") {
        Some(id) if !id.is_empty() && !id.contains('/') => Ok(id.to_string()),
        _ => Err(AppError::invalid_params(
            field,
            format!("{name:?} is not a task resource name (tasks/{{id}})"),
        )),
    }
}

/// The task and config ids of a `tasks/{id}/pushNotificationConfigs/{config}` name.
fn config_of(name: &str) -> Result<(String, String), AppError> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        ["tasks", t, "pushNotificationConfigs", c] if !t.is_empty() && !c.is_empty() => {
            Ok((t.to_string(), c.to_string()))
        }
        _ => Err(AppError::invalid_params(
            "name",
            format!("{name:?} is not a push config resource name (tasks/{{id}}/pushNotificationConfigs/{{configId}})"),
        )),
    }
}

/// The JSON-RPC 0.3 params of a 0.3 RPC's request (its ProtoJSON).
pub fn params(method: Method03, request: &Value) -> Result<Value, AppError> {
    Ok(match method {
        Method03::Send | Method03::Stream => proto_json::send_request_in(request)?,
        Method03::Get => {
            let mut p = json!({"id": task_of(text(request, "name"), "name")?});
            if let Some(n) = request
                .get("historyLength")
                .filter(|n| n.as_i64() != Some(0))
            {
                p["historyLength"] = n.clone();
            }
            p
        }
        Method03::Cancel | Method03::Resubscribe => {
            json!({"id": task_of(text(request, "name"), "name")?})
        }
        Method03::SetPushConfig => {
            let parent = text(request, "parent");
            // `parent` is `tasks/{id}` (the SDK), or the configs' collection.
            let parent = parent
                .strip_suffix("/pushNotificationConfigs")
                .unwrap_or(parent);
            json!({
                "taskId": task_of(parent, "parent")?,
                "pushNotificationConfig": proto_json::set_config_in(request)?,
            })
        }
        Method03::GetPushConfig | Method03::DeletePushConfig => {
            let (task, config) = config_of(text(request, "name"))?;
            json!({"id": task, "pushNotificationConfigId": config})
        }
        Method03::ListPushConfigs => {
            let parent = text(request, "parent");
            let parent = parent
                .strip_suffix("/pushNotificationConfigs")
                .unwrap_or(parent);
            json!({"id": task_of(parent, "parent")?})
        }
        Method03::ExtendedCard => json!({}),
    })
}

/// A 1.0 card (its ProtoJSON) as the 0.3 proto's `AgentCard`: the 0.3 projection, with the
/// security schemes and requirements in the proto's own (1.0's) forms.
pub fn card(card: &Value) -> Value {
    let mut out = super::card::projection(card);
    if let Some(o) = out.as_object_mut() {
        match card.get("securitySchemes") {
            Some(s) => o.insert("securitySchemes".into(), s.clone()),
            None => o.remove("securitySchemes"),
        };
        match card.get("securityRequirements") {
            Some(r) => o.insert("security".into(), r.clone()),
            None => o.remove("security"),
        };
        if let Some(Value::Array(skills)) = o.get_mut("skills") {
            for s in skills.iter_mut().filter_map(Value::as_object_mut) {
                s.remove("security");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_names_become_ids() {
        assert_eq!(
            params(
                Method03::Get,
                &json!({"name": "tasks/t-1", "historyLength": 0})
            )
            .unwrap(),
            json!({"id": "t-1"})
        );
        assert_eq!(
            params(
                Method03::DeletePushConfig,
                &json!({"name": "tasks/t/pushNotificationConfigs/c"})
            )
            .unwrap(),
            json!({"id": "t", "pushNotificationConfigId": "c"})
        );
        assert_eq!(
            params(Method03::SetPushConfig, &json!({"parent": "tasks/t", "config": {"pushNotificationConfig": {"url": "https://h"}}})).unwrap(),
            json!({"taskId": "t", "pushNotificationConfig": {"url": "https://h"}})
        );
        assert_eq!(
            params(
                Method03::ListPushConfigs,
                &json!({"parent": "tasks/t/pushNotificationConfigs"})
            )
            .unwrap(),
            json!({"id": "t"})
        );
        for bad in [
            json!({"name": "t-1"}),
            json!({"name": "tasks/"}),
            json!({"name": "tasks/a/b"}),
        ] {
            assert!(params(Method03::Get, &bad).is_err(), "{bad}");
        }
        assert!(params(Method03::GetPushConfig, &json!({"name": "tasks/t"})).is_err());
        assert_eq!(method_of("TaskSubscription"), Some(Method03::Resubscribe));
        assert_eq!(method_of("SubscribeToTask"), None);
    }
}
