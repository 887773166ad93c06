//! kagent's human-in-the-loop extension (`hitl/v1`, extensions.md §2.3) on the wire: the
//! pause payloads the task's `status.message` carries (`tool_approval_request`,
//! `ask_user_request`) and the resume payloads a client's message carries
//! (`tool_approval_response`, `ask_user_response`), read and checked here once. What a
//! decision does to the task is the tool-approval gate's rule (`task::approvals`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::DomainError;
use crate::wire::Message;

/// The extension's URI; a client activates it with `A2A-Extensions`.
pub const HITL_URI: &str = "https://kagent.dev/extensions/hitl/v1";

/// Most decisions one `tool_approval_response` may carry (a gate asks about at most as many
/// calls as one model step makes).
pub const MAX_APPROVALS: usize = 64;

/// Longest `rejection_reason`, in UTF-8 bytes.
pub const MAX_REJECTION_REASON_BYTES: usize = 2048;

/// Longest decision id (`approvals[].id`), in UTF-8 bytes.
pub const MAX_ID_BYTES: usize = 200;

/// Longest answer id or choice of an `ask_user_response`, in UTF-8 bytes.
pub const MAX_ANSWER_BYTES: usize = 4096;

/// The field path of the payload in an error (`message.metadata[URI]`).
fn path(rest: &str) -> String {
    format!("message.metadata[{HITL_URI}]{rest}")
}

/// One tool call waiting for approval, as the pause shows it: `id` is the token a decision
/// names; `call_id`, `name` and `args` are for display.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingTool {
    pub id: String,
    pub call_id: String,
    pub name: String,
    #[serde(default)]
    pub args: Value,
}

/// A child task's pause surfaced on its parent (`nested`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Nested {
    pub subagent_name: String,
    pub task_id: String,
    pub context_id: String,
    pub tools: Vec<PendingTool>,
}

/// The pause text for tool approvals (the short-form document's wording).
pub fn approval_text(names: &[&str]) -> String {
    if names.is_empty() {
        return "Human input is required before the agent can continue.".into();
    }
    format!("Approval is required for tool(s): {}", names.join(", "))
}

/// `metadata[URI]` of a pause for tool approvals.
pub fn tool_approval_request(tools: &[PendingTool], nested: Option<&Nested>) -> Value {
    let names: Vec<&str> = tools
        .iter()
        .chain(nested.iter().flat_map(|n| n.tools.iter()))
        .map(|t| t.name.as_str())
        .collect();
    let mut v = json!({
        "type": "tool_approval_request",
        "hint": approval_text(&names),
        "tools": tools,
    });
    if let Some(n) = nested {
        v["nested"] = json!(n);
    }
    v
}

/// `metadata[URI]` of a question to the user (`ask_participant` when HITL is active).
pub fn ask_user_request(id: &str, question: &str, choices: &[String]) -> Value {
    json!({
        "type": "ask_user_request",
        "id": id,
        "questions": [{"question": question, "choices": choices, "multiple": false}],
    })
}

/// One decision of a `tool_approval_response`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub id: String,
    pub approved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection_reason: Option<String>,
}

/// A resume payload, checked for shape (whether it fits the pending request is the task's
/// rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    ToolApproval(Vec<Approval>),
    /// The answers, one list of strings per question, in order.
    AskUser {
        id: String,
        answers: Vec<Vec<String>>,
    },
}

fn text(v: &Value, field: &str, max: usize) -> Result<String, DomainError> {
    match v.as_str() {
        Some(s) if !s.is_empty() && s.len() <= max => Ok(s.to_string()),
        _ => Err(DomainError::invalid(
            path(field),
            format!("must be a string of 1 to {max} bytes"),
        )),
    }
}

fn approvals(payload: &Value) -> Result<Vec<Approval>, DomainError> {
    let items = payload
        .get("approvals")
        .and_then(Value::as_array)
        .ok_or_else(|| DomainError::invalid(path(".approvals"), "must be a list of decisions"))?;
    if items.is_empty() || items.len() > MAX_APPROVALS {
        return Err(DomainError::invalid(
            path(".approvals"),
            format!("must hold 1 to {MAX_APPROVALS} decisions"),
        ));
    }
    let mut out: Vec<Approval> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = |f: &str| format!(".approvals[{i}]{f}");
        let id = text(&item["id"], &at(".id"), MAX_ID_BYTES)?;
        let approved = item["approved"]
            .as_bool()
            .ok_or_else(|| DomainError::invalid(path(&at(".approved")), "must be true or false"))?;
        let rejection_reason = match item.get("rejection_reason") {
            None | Some(Value::Null) => None,
            Some(_) if approved => {
                return Err(DomainError::invalid(
                    path(&at(".rejection_reason")),
                    "an approved call carries no rejection reason",
                ))
            }
            Some(r) => Some(text(
                r,
                &at(".rejection_reason"),
                MAX_REJECTION_REASON_BYTES,
            )?),
        };
        if out.iter().any(|a| a.id == id) {
            return Err(DomainError::invalid(
                path(&at(".id")),
                format!("{id:?} is decided twice"),
            ));
        }
        out.push(Approval {
            id,
            approved,
            rejection_reason,
        });
    }
    Ok(out)
}

fn answers(payload: &Value) -> Result<Vec<Vec<String>>, DomainError> {
    let items = payload
        .get("answers")
        .and_then(Value::as_array)
        .ok_or_else(|| DomainError::invalid(path(".answers"), "must be a list of answers"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let field = format!(".answers[{i}].answer");
            let list = a["answer"]
                .as_array()
                .ok_or_else(|| DomainError::invalid(path(&field), "must be a list of strings"))?;
            list.iter()
                .enumerate()
                .map(|(j, s)| text(s, &format!("{field}[{j}]"), MAX_ANSWER_BYTES))
                .collect()
        })
        .collect()
}

/// The resume payload `message` carries: `None` when it carries none under the URI.
pub fn response_of(message: &Message) -> Option<Result<Response, DomainError>> {
    let payload = message.metadata.as_ref()?.get(HITL_URI)?;
    Some((|| {
        if !message.extensions.iter().any(|e| e == HITL_URI) {
            return Err(DomainError::invalid(
                "message.extensions",
                format!("a hitl/v1 response declares {HITL_URI}"),
            ));
        }
        match payload.get("type").and_then(Value::as_str) {
            Some("tool_approval_response") => Ok(Response::ToolApproval(approvals(payload)?)),
            Some("ask_user_response") => Ok(Response::AskUser {
                id: text(&payload["id"], ".id", MAX_ANSWER_BYTES)?,
                answers: answers(payload)?,
            }),
            _ => Err(DomainError::invalid(
                path(".type"),
                "must be tool_approval_response or ask_user_response",
            )),
        }
    })())
}

#[cfg(test)]
#[path = "hitl_tests.rs"]
mod tests;
