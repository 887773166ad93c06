//! An upstream A2A 0.3 agent's answers as 1.0 reads them (ADR 034): a 0.3 `Task`, `Message`,
//! `status-update` or `artifact-update` (a `kind` each) becomes the 1.0 `StreamResponse`
//! (`{"task"}`, `{"message"}`, `{"statusUpdate"}`, `{"artifactUpdate"}`); states from
//! `input-required` to `TASK_STATE_INPUT_REQUIRED`; parts through the request mapping
//! (`objects::part_in`). The upstream's timestamps are dropped (our events carry our own);
//! history is not carried (`task::upstream_batch` reads none). Every refusal names the field.

use serde_json::{json, Map, Value};

use super::objects::{message_in, part_in};
use crate::error::AppError;

/// A 0.3 state as 1.0 names it.
pub fn state_in(state: &str) -> Option<&'static str> {
    Some(match state {
        "submitted" => "TASK_STATE_SUBMITTED",
        "working" => "TASK_STATE_WORKING",
        "input-required" => "TASK_STATE_INPUT_REQUIRED",
        "auth-required" => "TASK_STATE_AUTH_REQUIRED",
        "completed" => "TASK_STATE_COMPLETED",
        "canceled" => "TASK_STATE_CANCELED",
        "failed" => "TASK_STATE_FAILED",
        "rejected" => "TASK_STATE_REJECTED",
        _ => return None,
    })
}

fn text<'a>(v: &'a Value, key: &str, field: &str) -> Result<&'a str, AppError> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| AppError::invalid_params(format!("{field}.{key}"), "must be a string"))
}

fn status_in(v: &Value, field: &str) -> Result<Value, AppError> {
    let state = text(v, "state", field)?;
    let state = state_in(state).ok_or_else(|| {
        AppError::invalid_params(
            format!("{field}.state"),
            format!("{state:?} is no 0.3 state"),
        )
    })?;
    let mut out = json!({ "state": state });
    if let Some(m) = v.get("message").filter(|m| !m.is_null()) {
        out["message"] = message_in(m, &format!("{field}.message"))?;
    }
    Ok(out)
}

fn artifact_in(v: &Value, field: &str) -> Result<Value, AppError> {
    let o = v
        .as_object()
        .ok_or_else(|| AppError::invalid_params(field, "must be an object"))?;
    let mut out = Map::new();
    for k in [
        "artifactId",
        "name",
        "description",
        "metadata",
        "extensions",
    ] {
        if let Some(x) = o.get(k).filter(|x| !x.is_null()) {
            out.insert(k.into(), x.clone());
        }
    }
    let parts = o
        .get("parts")
        .and_then(Value::as_array)
        .ok_or_else(|| AppError::invalid_params(format!("{field}.parts"), "must be an array"))?
        .iter()
        .enumerate()
        .map(|(i, p)| part_in(p, &format!("{field}.parts[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    out.insert("parts".into(), Value::Array(parts));
    Ok(Value::Object(out))
}

fn task_in(v: &Value, field: &str) -> Result<Value, AppError> {
    let mut out = json!({
        "id": text(v, "id", field)?,
        "contextId": v.get("contextId").and_then(Value::as_str).unwrap_or_default(),
        "status": status_in(v.get("status").unwrap_or(&Value::Null), &format!("{field}.status"))?,
    });
    if let Some(list) = v.get("artifacts").and_then(Value::as_array) {
        out["artifacts"] = list
            .iter()
            .enumerate()
            .map(|(i, a)| artifact_in(a, &format!("{field}.artifacts[{i}]")))
            .collect::<Result<Vec<_>, _>>()?
            .into();
    }
    Ok(out)
}

/// A 0.3 result or stream event as a 1.0 `StreamResponse`.
pub fn event_in(v: &Value) -> Result<Value, AppError> {
    let field = "result";
    match v.get("kind").and_then(Value::as_str) {
        Some("task") => Ok(json!({ "task": task_in(v, field)? })),
        Some("message") => Ok(json!({ "message": message_in(v, field)? })),
        Some("status-update") => Ok(json!({ "statusUpdate": {
            "taskId": text(v, "taskId", field)?,
            "contextId": v.get("contextId").and_then(Value::as_str).unwrap_or_default(),
            "status": status_in(v.get("status").unwrap_or(&Value::Null), "result.status")?,
        }})),
        Some("artifact-update") => Ok(json!({ "artifactUpdate": {
            "taskId": text(v, "taskId", field)?,
            "contextId": v.get("contextId").and_then(Value::as_str).unwrap_or_default(),
            "artifact": artifact_in(v.get("artifact").unwrap_or(&Value::Null), "result.artifact")?,
            "append": v.get("append").and_then(Value::as_bool).unwrap_or(false),
            "lastChunk": v.get("lastChunk").and_then(Value::as_bool).unwrap_or(false),
        }})),
        other => Err(AppError::invalid_params(
            "result.kind",
            format!("{other:?} is none of task, message, status-update, artifact-update"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_0_3_kind_reads_as_its_1_0_stream_response() {
        let task = event_in(&json!({"kind": "task", "id": "t", "contextId": "c",
            "status": {"state": "input-required", "timestamp": "2026-01-01T00:00:00+00:00",
                "message": {"kind": "message", "messageId": "m", "role": "agent",
                    "parts": [{"kind": "text", "text": "name?"}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "x"}]}]}))
        .unwrap();
        assert_eq!(task["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(task["task"]["status"]["message"]["role"], "ROLE_AGENT");
        assert!(task["task"]["status"].get("timestamp").is_none());
        assert_eq!(task["task"]["artifacts"][0]["parts"][0]["text"], "x");
        let chunk = event_in(
            &json!({"kind": "artifact-update", "taskId": "t", "contextId": "c",
            "append": true, "lastChunk": true,
            "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "y"}]}}),
        )
        .unwrap();
        assert_eq!(chunk["artifactUpdate"]["lastChunk"], true);
        let status = event_in(
            &json!({"kind": "status-update", "taskId": "t", "contextId": "c",
            "final": true, "status": {"state": "completed"}}),
        )
        .unwrap();
        assert_eq!(
            status["statusUpdate"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
        let reply = event_in(
            &json!({"kind": "message", "messageId": "r", "role": "agent",
            "parts": [{"kind": "text", "text": "hi"}]}),
        )
        .unwrap();
        assert_eq!(reply["message"]["messageId"], "r");
    }

    #[test]
    fn a_malformed_answer_is_refused_by_field() {
        let e = event_in(
            &json!({"kind": "status-update", "taskId": "t", "status": {"state": "dancing"}}),
        );
        assert!(e.unwrap_err().to_string().contains("result.status.state"));
        assert!(event_in(&json!({"kind": "nope"})).is_err());
        assert!(event_in(&json!({"kind": "task", "status": {"state": "working"}})).is_err());
    }
}
