//! What a webhook registered over 0.3 receives: the Task, in 0.3 JSON (`kind: "task"`), as the
//! 0.3 specification shows it and 0.3 servers sent it — with the task's status after the
//! event, and the artifact when the event delivered one — instead of 1.0's `StreamResponse`.

use serde_json::{json, Value};

use super::objects::{artifact_out, status_out};

/// The 0.3 delivery of a pushed update: `update` is the 1.0 `StreamResponse` JSON every 1.0
/// subscriber receives; `status` the task's status after the event (1.0 ProtoJSON), for an
/// artifact update, which carries none of its own.
pub fn task_body(update: &str, status: &Value) -> Option<String> {
    let v: Value = serde_json::from_str(update).ok()?;
    let (event, artifact) = match (v.get("statusUpdate"), v.get("artifactUpdate")) {
        (Some(u), _) => (u, None),
        (None, Some(u)) => (u, u.get("artifact")),
        _ => return None,
    };
    let mut task = json!({
        "kind": "task",
        "id": event.get("taskId")?,
        "contextId": event.get("contextId")?,
        "status": status_out(event.get("status").unwrap_or(status)),
    });
    if let Some(a) = artifact {
        task["artifacts"] = json!([artifact_out(a)]);
    }
    if let Some(m) = event.get("metadata") {
        task["metadata"] = m.clone();
    }
    Some(task.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_0_3_subscriber_receives_the_task() {
        let status = json!({"state": "TASK_STATE_WORKING"});
        let done = r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_CANCELED"}}}"#;
        let body: Value = serde_json::from_str(&task_body(done, &status).unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"kind": "task", "id": "t", "contextId": "c", "status": {"state": "canceled"}})
        );
        let art = r#"{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}"#;
        let body: Value = serde_json::from_str(&task_body(art, &status).unwrap()).unwrap();
        assert_eq!(body["status"]["state"], "working");
        assert_eq!(
            body["artifacts"][0]["parts"][0],
            json!({"kind": "text", "text": "x"})
        );
        assert_eq!(task_body("{}", &status), None);
    }
}
