//! An A2A task as an MCP task (the Tasks extension, `io.modelcontextprotocol/tasks`,
//! SEP-2663): its state as MCP's five statuses, its status message, its question as an
//! elicitation the client answers with `tasks/update`, its outcome as a tool result. Pure.

use rmcp::model::{
    DetailedTask, InputRequest, InputRequests, JsonObject, Task as McpTask, TaskPayload, TaskStatus,
};
use serde_json::{json, Value};
use taskledger_domain::wire::{Message, PartContent, Task, TaskState};

/// How often a client is advised to poll `tasks/get`, in milliseconds.
pub const POLL_INTERVAL_MS: u64 = 1_000;
/// The metadata key an A2A task's creation time is under.
const CREATED_AT_KEY: &str = "kagent.dev/a2a/task-created-at";

/// MCP's status of an A2A state: a task at work is `working`, one waiting for a person is
/// `input_required`, and the ends are MCP's three.
pub fn status_of(state: TaskState) -> TaskStatus {
    match state {
        TaskState::InputRequired | TaskState::AuthRequired => TaskStatus::InputRequired,
        TaskState::Completed => TaskStatus::Completed,
        TaskState::Failed | TaskState::Rejected => TaskStatus::Failed,
        TaskState::Canceled => TaskStatus::Cancelled,
        _ => TaskStatus::Working,
    }
}

/// The text parts of a message, one line each.
pub fn text_of(m: &Message) -> String {
    m.parts
        .iter()
        .filter_map(|p| match &p.content {
            PartContent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The key of the question a task in `input_required` asks now: the time it started waiting,
/// so each question of a task's life has its own (an answer to an older one is ignored).
pub fn question_key(task: &Task) -> String {
    let at = task.status.timestamp.as_ref().map_or(0, |t| t.unix_nanos());
    format!("answer-{at}")
}

/// The task as `tasks/get` answers it, kept `ttl_ms` after it ends (`None`: forever).
pub fn detailed(task: &Task, ttl_ms: Option<u64>) -> DetailedTask {
    let message = task
        .status
        .message
        .as_ref()
        .map(text_of)
        .filter(|t| !t.is_empty());
    let payload = match status_of(task.status.state) {
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        TaskStatus::InputRequired => TaskPayload::InputRequired {
            input_requests: question(task, message.as_deref()),
        },
        TaskStatus::Completed => TaskPayload::Completed {
            result: outcome(task, message.as_deref()),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: object(json!({
                "code": -32603,
                "message": message.clone().unwrap_or_else(|| "the task failed".into()),
                "data": {"taskId": task.id, "state": task.status.state.as_str()},
            })),
        },
        _ => TaskPayload::Working,
    };
    DetailedTask::new(seed(task, ttl_ms, message), payload)
}

/// The task's fields every MCP task shape carries.
pub fn seed(task: &Task, ttl_ms: Option<u64>, message: Option<String>) -> McpTask {
    let updated = task
        .status
        .timestamp
        .as_ref()
        .map(|t| t.to_rfc3339_millis())
        .unwrap_or_default();
    let created = task
        .metadata
        .as_ref()
        .and_then(|m| m.get(CREATED_AT_KEY))
        .and_then(Value::as_str)
        .map_or_else(|| updated.clone(), str::to_string);
    let mut t = McpTask::new(
        task.id.clone(),
        status_of(task.status.state),
        created,
        updated,
    )
    .with_poll_interval_ms(POLL_INTERVAL_MS);
    if let Some(ms) = ttl_ms {
        t = t.with_ttl_ms(ms);
    }
    if let Some(m) = message {
        t = t.with_status_message(m);
    }
    t
}

/// What a waiting task asks: one form elicitation with a text answer.
fn question(task: &Task, message: Option<&str>) -> InputRequests {
    let request = json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message.unwrap_or("The agent needs your input to go on."),
            "requestedSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "title": "Your answer"}},
                "required": ["text"],
            },
        },
    });
    let mut out = InputRequests::new();
    if let Ok(r) = serde_json::from_value::<InputRequest>(request) {
        out.insert(question_key(task), r);
    }
    out
}

/// A finished task as a tool's result: its artifacts' (and status message's) text, and the
/// task's ids and artifacts as structured content.
fn outcome(task: &Task, message: Option<&str>) -> JsonObject {
    let mut texts: Vec<String> = task
        .artifacts
        .iter()
        .flatten()
        .flat_map(|a| a.parts.iter())
        .filter_map(|p| match &p.content {
            PartContent::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    if texts.is_empty() {
        texts.extend(message.map(str::to_string));
    }
    object(json!({
        "content": texts.iter().map(|t| json!({"type": "text", "text": t})).collect::<Vec<_>>(),
        "structuredContent": {
            "taskId": task.id,
            "contextId": task.context_id,
            "state": task.status.state.as_str(),
            "artifacts": task.artifacts.clone().unwrap_or_default(),
        },
        "isError": false,
    }))
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

/// The text of an answer to an elicitation (`{"action": "accept", "content": {"text": …}}`);
/// `None` for a declined or cancelled one, or one without text.
pub fn answer_text(response: &Value) -> Option<String> {
    if response.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    let content = response.get("content")?;
    content
        .get("text")
        .and_then(Value::as_str)
        .or_else(|| content.as_object()?.values().find_map(Value::as_str))
        .map(str::to_string)
        .filter(|t| !t.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(state: &str, message: Option<&str>) -> Task {
        let mut v = json!({"id": "t-1", "contextId": "c-1", "status": {"state": state,
            "timestamp": "2026-12-07T05:00:00.123Z"},
            "metadata": {CREATED_AT_KEY: "2026-12-07T04:59:59.000Z"},
            "artifacts": [{"artifactId": "a-1", "parts": [{"text": "done: 42"}]}]});
        if let Some(m) = message {
            v["status"]["message"] =
                json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": m}]});
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn each_a2a_state_is_one_of_mcps_five() {
        use TaskState::*;
        let cases = [
            (Submitted, TaskStatus::Working),
            (Working, TaskStatus::Working),
            (InputRequired, TaskStatus::InputRequired),
            (AuthRequired, TaskStatus::InputRequired),
            (Completed, TaskStatus::Completed),
            (Failed, TaskStatus::Failed),
            (Rejected, TaskStatus::Failed),
            (Canceled, TaskStatus::Cancelled),
        ];
        for (a2a, mcp) in cases {
            assert_eq!(status_of(a2a), mcp, "{a2a:?}");
        }
    }

    #[test]
    fn a_waiting_task_asks_its_question_as_an_elicitation_keyed_by_when_it_asked() {
        let t = task("TASK_STATE_INPUT_REQUIRED", Some("Which seat?"));
        let v = serde_json::to_value(detailed(&t, Some(60_000))).unwrap();
        assert_eq!(v["status"], "input_required");
        assert_eq!(v["statusMessage"], "Which seat?");
        assert_eq!(v["ttlMs"], 60_000);
        assert_eq!(v["pollIntervalMs"], POLL_INTERVAL_MS);
        assert_eq!(v["createdAt"], "2026-12-07T04:59:59.000Z");
        let key = question_key(&t);
        assert_eq!(key, "answer-1796619600123000000");
        let ask = &v["inputRequests"][&key];
        assert_eq!(ask["method"], "elicitation/create");
        assert_eq!(ask["params"]["message"], "Which seat?");
    }

    #[test]
    fn a_finished_task_is_a_tool_result_and_a_failed_one_an_error() {
        let v = serde_json::to_value(detailed(&task("TASK_STATE_COMPLETED", None), None)).unwrap();
        assert_eq!(v["status"], "completed");
        assert_eq!(v["ttlMs"], Value::Null, "kept forever");
        assert_eq!(v["result"]["content"][0]["text"], "done: 42");
        assert_eq!(v["result"]["structuredContent"]["taskId"], "t-1");
        let v = serde_json::to_value(detailed(&task("TASK_STATE_FAILED", Some("no seats")), None))
            .unwrap();
        assert_eq!(v["status"], "failed");
        assert_eq!(v["error"]["message"], "no seats");
        let v = serde_json::to_value(detailed(&task("TASK_STATE_CANCELED", None), None)).unwrap();
        assert_eq!(v["status"], "cancelled");
    }

    #[test]
    fn an_answer_is_the_text_of_an_accepted_form() {
        assert_eq!(
            answer_text(&json!({"action": "accept", "content": {"text": "12A"}})).as_deref(),
            Some("12A")
        );
        assert_eq!(answer_text(&json!({"action": "decline"})), None);
        assert_eq!(
            answer_text(&json!({"action": "accept", "content": {"text": " "}})),
            None
        );
    }
}
