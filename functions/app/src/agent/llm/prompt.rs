//! What the model reads: the system prompt, the task extension's view (name, goal, criteria,
//! plan, participants), the skills, and the history as chat messages (tool calls and results
//! become assistant and tool messages; the task envelope is left out, it is in the view).

use serde_json::{json, Value};
use taskledger_domain::agent::llm::{ChatMessage, ChatRole, ToolCall, PART_TYPE_KEY};
use taskledger_domain::extensions::harness::TaskExtensionData;
use taskledger_domain::task::TaskAggregate;
use taskledger_domain::wire::{Message, PartContent, Role};

use super::LlmAgent;

const SYSTEM_PROMPT: &str = "You are the agent working on an A2A task. Use the tools to plan, to \
complete plan steps, to spawn sub-tasks, and to ask participants when you need their input. \
When the work is done, answer with the final result as plain text.";

impl LlmAgent {
    pub(super) fn extension_view(data: &TaskExtensionData) -> String {
        let mut v = json!({"name": data.name, "goal": data.goal});
        if !data.acceptance_criteria.is_empty() {
            v["acceptance_criteria"] = json!(data.acceptance_criteria);
        }
        if let Some(plan) = &data.plan {
            v["plan"] = json!(plan);
        }
        if !data.participants.is_empty() {
            v["participants"] = json!(data.participants);
        }
        format!("The task:\n{v}")
    }

    /// History as chat messages; tool calls and results become assistant / tool messages.
    /// Skills: names and descriptions always, bodies of loaded skills in the system prompt.
    pub(super) fn chat(&self, state: &TaskAggregate, history: &[Message]) -> Vec<ChatMessage> {
        let mut out = vec![ChatMessage::text(ChatRole::System, SYSTEM_PROMPT)];
        if let Some(data) = state.head().and_then(|h| h.ext.as_ref()) {
            out.push(ChatMessage::text(
                ChatRole::System,
                Self::extension_view(data),
            ));
        }
        if !self.skills.skills.is_empty() {
            let list = self
                .skills
                .skills
                .iter()
                .map(|s| format!("- {}: {}", s.name, s.description))
                .collect::<Vec<_>>()
                .join("\n");
            out.push(ChatMessage::text(
                ChatRole::System,
                format!("Skills you can load:\n{list}"),
            ));
        }
        for name in state
            .head()
            .map(|h| h.loaded_skills.clone())
            .unwrap_or_default()
        {
            if let Some(skill) = self.skills.get(&name) {
                out.push(ChatMessage::text(
                    ChatRole::System,
                    format!("Skill {} (loaded):\n{}", skill.name, skill.body),
                ));
            }
        }
        for m in history {
            let mut pieces: Vec<String> = Vec::new();
            let mut calls = Vec::new();
            for p in &m.parts {
                let kind = p
                    .metadata
                    .as_ref()
                    .and_then(|md| md.get(PART_TYPE_KEY))
                    .and_then(Value::as_str);
                match (&p.content, kind) {
                    (PartContent::Data(d), Some("function_call")) => calls.push(ToolCall {
                        id: d["id"].as_str().unwrap_or_default().to_string(),
                        name: d["name"].as_str().unwrap_or_default().to_string(),
                        arguments: d["args"].clone(),
                    }),
                    (PartContent::Data(d), Some("function_response")) => out.push(ChatMessage {
                        role: ChatRole::Tool,
                        content: d["response"].to_string(),
                        tool_calls: vec![],
                        tool_call_id: d["id"].as_str().map(str::to_string),
                        message_id: None,
                    }),
                    (PartContent::Text(t), _) => pieces.push(t.clone()),
                    // The task envelope is in the extension view already.
                    (PartContent::Data(_), _)
                        if p.media_type.as_deref()
                            == Some(taskledger_domain::extensions::harness::MEDIA_TYPE) => {}
                    (PartContent::Data(d), _) => pieces.push(d.to_string()),
                    (PartContent::Url(u), _) => pieces.push(format!("[file at {u}]")),
                    (PartContent::Raw(b), _) => pieces.push(format!(
                        "[file {} of {} bytes]",
                        p.filename.as_deref().unwrap_or("unnamed"),
                        b.len()
                    )),
                }
            }
            pieces.retain(|t| !t.is_empty());
            let text = pieces.join("\n");
            let role = if m.role == Role::Agent {
                ChatRole::Assistant
            } else {
                ChatRole::User
            };
            if !text.is_empty() || !calls.is_empty() {
                out.push(ChatMessage {
                    role,
                    content: text,
                    tool_calls: calls,
                    tool_call_id: None,
                    message_id: Some(m.message_id.clone()),
                });
            }
        }
        out
    }
}
