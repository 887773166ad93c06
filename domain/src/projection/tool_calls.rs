//! The tool calls a task's model agent made, as its messages record them (kagent's
//! `function_call` and `function_response` data parts): each call's name, the MCP server it
//! went to (`NAME__tool`, ADR 034) or none for an intrinsic tool, and how it ended — for the
//! board's work view.

use serde_json::Value;

use crate::agent::llm::PART_TYPE_KEY;
use crate::agent::mcp::SEPARATOR;
use crate::task::TaskEvent;
use crate::time::Timestamp;
use crate::wire::{Message, PartContent};

/// How a tool call ended, as far as the messages say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallEnd {
    /// No result recorded yet (running, or waiting for an approval).
    Pending,
    Ok,
    /// The tool's (or the adapter's) error, as the model was told it.
    Error(String),
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallRecord {
    /// The event that recorded the call.
    pub seq: u64,
    pub at: Timestamp,
    /// The name the model called (`server__tool` for an MCP tool).
    pub name: String,
    /// The MCP server, for an MCP tool.
    pub server: Option<String>,
    pub end: CallEnd,
}

/// Errors shown are cut to this many characters (the whole result is in the message).
pub const MAX_SHOWN_ERROR_CHARS: usize = 200;

/// The tool calls in a task's events `(seq, event, recorded_at)`, oldest first.
pub fn tool_calls(events: &[(u64, TaskEvent, Timestamp)]) -> Vec<ToolCallRecord> {
    let mut out: Vec<(String, ToolCallRecord)> = Vec::new();
    for (seq, e, at) in events {
        let message = match e {
            TaskEvent::MessageAppended { message, .. } => Some(message),
            TaskEvent::StatusChanged { message, .. } => message.as_ref(),
            _ => None,
        };
        for (kind, data) in message.into_iter().flat_map(data_parts) {
            let id = data.get("id").and_then(Value::as_str).unwrap_or_default();
            match kind {
                "function_call" => {
                    let name = data.get("name").and_then(Value::as_str).unwrap_or_default();
                    out.push((
                        id.to_string(),
                        ToolCallRecord {
                            seq: *seq,
                            at: *at,
                            name: name.to_string(),
                            server: name.split_once(SEPARATOR).map(|(s, _)| s.to_string()),
                            end: CallEnd::Pending,
                        },
                    ));
                }
                "function_response" => {
                    let response = data.get("response");
                    let end = match response.and_then(|r| r.get("error")) {
                        Some(err) => CallEnd::Error(shown_error(err)),
                        None => CallEnd::Ok,
                    };
                    if let Some((_, call)) = out
                        .iter_mut()
                        .rev()
                        .find(|(i, c)| i == id && c.end == CallEnd::Pending)
                    {
                        call.end = end;
                    }
                }
                _ => {}
            }
        }
    }
    out.into_iter().map(|(_, c)| c).collect()
}

/// The data parts of `m` with their kagent part type.
fn data_parts(m: &Message) -> impl Iterator<Item = (&str, &Value)> {
    m.parts.iter().filter_map(|p| {
        let kind = p.metadata.as_ref()?.get(PART_TYPE_KEY)?.as_str()?;
        match &p.content {
            PartContent::Data(v) => Some((kind, v)),
            _ => None,
        }
    })
}

fn shown_error(err: &Value) -> String {
    let text = err.as_str().map_or_else(|| err.to_string(), str::to_string);
    match text.char_indices().nth(MAX_SHOWN_ERROR_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

#[cfg(test)]
#[path = "tool_calls_tests.rs"]
mod tests;
