//! The language-model port: one trait for OpenAI-compatible endpoints, Bedrock and the
//! scripted model, and the shapes of a model call (token usage: `extensions::usage`).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::extensions::usage::Usage;

/// Marks a data part as a tool call or a tool result.
pub const PART_TYPE_KEY: &str = "kagent.dev/a2a/part-type";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: ChatRole,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The A2A message this one was made from. Providers do not send it; the scripted model
    /// reads the conformance kit's `messageId` prefixes from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

impl ChatMessage {
    pub fn text(role: ChatRole, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: vec![],
            tool_call_id: None,
            message_id: None,
        }
    }
}

/// A tool the model may call: its name, what it does, and its JSON input schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The task's `model`, or the provider's default when unset.
    pub model: Option<String>,
    /// The task's `reasoning_effort` (`low`, `medium`, `high`).
    pub reasoning_effort: Option<String>,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    /// The trace of the model call (the provider's request carries it as `traceparent`).
    pub trace: Option<crate::trace::TraceContext>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelResponse {
    /// The model that answered (as the provider names it).
    pub model: Option<String>,
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    #[error("the model provider did not answer in time")]
    Timeout,
    #[error("the model provider kept refusing: {0}")]
    Unavailable(String),
    #[error("the model provider rejected the request: {0}")]
    Rejected(String),
    #[error("the model's answer could not be read: {0}")]
    BadResponse(String),
}

#[async_trait]
pub trait LanguageModel: Send + Sync {
    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, LlmError>;
}
