//! Amazon Bedrock as a language model, through the Converse API (aws-sdk-bedrockruntime): one
//! request shape for every Bedrock model that supports tools.
//!
//! Throttling and transient errors are retried by the SDK (exponential backoff); what still fails
//! is "unavailable", validation errors "rejected".

use async_trait::async_trait;
use aws_sdk_bedrockruntime::error::ProvideErrorMetadata;
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ConversationRole, ConverseOutput, Message, SystemContentBlock, Tool,
    ToolConfiguration, ToolInputSchema, ToolResultBlock, ToolResultContentBlock, ToolResultStatus,
    ToolSpecification, ToolUseBlock,
};
use aws_sdk_bedrockruntime::Client;
use aws_smithy_types::{Document, Number};
use serde_json::Value;
use taskledger_domain::agent::llm::{
    ChatRole, LanguageModel, LlmError, ModelRequest, ModelResponse, ToolCall,
};
use taskledger_domain::extensions::usage::Usage;

pub struct Bedrock {
    client: Client,
    default_model: String,
}

impl Bedrock {
    pub fn new(client: Client, default_model: impl Into<String>) -> Self {
        Self {
            client,
            default_model: default_model.into(),
        }
    }

    /// A client from the environment; `endpoint` overrides the service URL (tests, gateways).
    pub async fn client(endpoint: Option<&str>) -> Client {
        let shared = aws_config::load_from_env().await;
        let mut b = aws_sdk_bedrockruntime::config::Builder::from(&shared);
        if let Some(e) = endpoint {
            b = b.endpoint_url(e);
        }
        Client::from_conf(b.build())
    }
}

pub fn to_document(v: &Value) -> Document {
    match v {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Number::PosInt(u),
            (None, Some(i)) => Number::NegInt(i),
            _ => Number::Float(n.as_f64().unwrap_or_default()),
        }),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(a) => Document::Array(a.iter().map(to_document).collect()),
        Value::Object(o) => {
            Document::Object(o.iter().map(|(k, v)| (k.clone(), to_document(v))).collect())
        }
    }
}

pub fn from_document(d: &Document) -> Value {
    match d {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => Value::from(*u),
        Document::Number(Number::NegInt(i)) => Value::from(*i),
        Document::Number(Number::Float(f)) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        Document::String(s) => Value::String(s.clone()),
        Document::Array(a) => Value::Array(a.iter().map(from_document).collect()),
        Document::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), from_document(v)))
                .collect(),
        ),
    }
}

fn build_err(e: impl std::fmt::Display) -> LlmError {
    LlmError::Rejected(format!("cannot build the Converse request: {e}"))
}

/// The task's reasoning effort as the model family takes it (`additionalModelRequestFields`), or
/// `None` where the family has no such parameter. OpenAI's open-weight models take
/// `reasoning_effort`; Amazon Nova 2 a `reasoningConfig`. Claude's extended thinking is not
/// switched on: with tool use its thinking blocks must be sent back on every later turn, and the
/// task history does not keep them.
pub fn effort_fields(model: &str, effort: &str) -> Option<Value> {
    if !matches!(effort, "low" | "medium" | "high") {
        return None;
    }
    if model.contains("openai.") {
        Some(serde_json::json!({ "reasoning_effort": effort }))
    } else if model.contains("nova-2") {
        Some(serde_json::json!({
            "reasoningConfig": { "type": "enabled", "maxReasoningEffort": effort }
        }))
    } else {
        None
    }
}

#[async_trait]
impl LanguageModel for Bedrock {
    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, LlmError> {
        let mut system = Vec::new();
        let mut messages: Vec<Message> = Vec::new();
        for m in &request.messages {
            let (role, blocks) = match m.role {
                ChatRole::System => {
                    system.push(SystemContentBlock::Text(m.content.clone()));
                    continue;
                }
                ChatRole::User => (
                    ConversationRole::User,
                    vec![ContentBlock::Text(m.content.clone())],
                ),
                ChatRole::Assistant => {
                    let mut blocks = Vec::new();
                    if !m.content.is_empty() {
                        blocks.push(ContentBlock::Text(m.content.clone()));
                    }
                    for c in &m.tool_calls {
                        blocks.push(ContentBlock::ToolUse(
                            ToolUseBlock::builder()
                                .tool_use_id(&c.id)
                                .name(&c.name)
                                .input(to_document(&c.arguments))
                                .build()
                                .map_err(build_err)?,
                        ));
                    }
                    (ConversationRole::Assistant, blocks)
                }
                ChatRole::Tool => (
                    ConversationRole::User,
                    vec![ContentBlock::ToolResult(
                        ToolResultBlock::builder()
                            .tool_use_id(m.tool_call_id.clone().unwrap_or_default())
                            .content(ToolResultContentBlock::Text(m.content.clone()))
                            .status(if m.content.contains("\"error\"") {
                                ToolResultStatus::Error
                            } else {
                                ToolResultStatus::Success
                            })
                            .build()
                            .map_err(build_err)?,
                    )],
                ),
            };
            if blocks.is_empty() {
                continue;
            }
            // Converse wants alternating roles: merge consecutive turns of one role.
            match messages.last_mut() {
                Some(last) if *last.role() == role => {
                    let mut content = last.content().to_vec();
                    content.extend(blocks);
                    *last = Message::builder()
                        .role(role)
                        .set_content(Some(content))
                        .build()
                        .map_err(build_err)?;
                }
                _ => messages.push(
                    Message::builder()
                        .role(role)
                        .set_content(Some(blocks))
                        .build()
                        .map_err(build_err)?,
                ),
            }
        }
        let model = request
            .model
            .clone()
            .unwrap_or_else(|| self.default_model.clone());
        let mut call = self
            .client
            .converse()
            .model_id(&model)
            .set_messages(Some(messages))
            .set_system(Some(system));
        if let Some(fields) = request
            .reasoning_effort
            .as_deref()
            .and_then(|e| effort_fields(&model, e))
        {
            call = call.additional_model_request_fields(to_document(&fields));
        }
        if !request.tools.is_empty() {
            let mut cfg = ToolConfiguration::builder();
            for t in &request.tools {
                cfg = cfg.tools(Tool::ToolSpec(
                    ToolSpecification::builder()
                        .name(&t.name)
                        .description(&t.description)
                        .input_schema(ToolInputSchema::Json(to_document(&t.input_schema)))
                        .build()
                        .map_err(build_err)?,
                ));
            }
            call = call.tool_config(cfg.build().map_err(build_err)?);
        }
        let out = call.send().await.map_err(|e| {
            let code = e.code().unwrap_or_default().to_string();
            let message = aws_sdk_bedrockruntime::error::DisplayErrorContext(&e).to_string();
            match code.as_str() {
                "ValidationException" | "AccessDeniedException" | "ResourceNotFoundException" => {
                    LlmError::Rejected(message)
                }
                "ModelTimeoutException" => LlmError::Timeout,
                _ => LlmError::Unavailable(message),
            }
        })?;
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        if let Some(ConverseOutput::Message(m)) = out.output() {
            for block in m.content() {
                match block {
                    ContentBlock::Text(t) => text.push_str(t),
                    ContentBlock::ToolUse(u) => tool_calls.push(ToolCall {
                        id: u.tool_use_id().to_string(),
                        name: u.name().to_string(),
                        arguments: from_document(u.input()),
                    }),
                    _ => {}
                }
            }
        }
        let usage = out.usage().map(|u| {
            Usage::of_response(
                u.input_tokens().max(0) as u64,
                u.output_tokens().max(0) as u64,
                0,
                u.cache_read_input_tokens().unwrap_or(0).max(0) as u64,
                Some(u.total_tokens().max(0) as u64),
            )
        });
        Ok(ModelResponse {
            model: Some(model),
            text: (!text.is_empty()).then_some(text),
            tool_calls,
            usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    use axum::extract::State;
    use axum::Json;
    use serde_json::json;
    use taskledger_domain::agent::llm::{ChatMessage, ToolSpec};

    /// Requests the mock received: path and JSON body.
    type Seen = Arc<Mutex<Vec<(String, Value)>>>;

    async fn converse(State(seen): State<Seen>, req: axum::extract::Request) -> Json<Value> {
        let path = req.uri().path().to_string();
        let body = axum::body::to_bytes(req.into_body(), 1 << 20)
            .await
            .unwrap();
        seen.lock()
            .unwrap()
            .push((path, serde_json::from_slice(&body).unwrap()));
        Json(json!({
            "output": {"message": {"role": "assistant", "content": [
                {"text": "planning"},
                {"toolUse": {"toolUseId": "tu-1", "name": "create_plan", "input": {"steps": [{"name": "a", "description": ""}], "n": -3}}}
            ]}},
            "stopReason": "tool_use",
            "usage": {"inputTokens": 12, "outputTokens": 4, "totalTokens": 16, "cacheReadInputTokens": 2},
            "metrics": {"latencyMs": 5}
        }))
    }

    #[test]
    fn documents_round_trip_json() {
        let v = json!({"a": [1, -2, 2.5, true, null, "s"], "b": {"c": "d"}});
        assert_eq!(from_document(&to_document(&v)), v);
    }

    #[tokio::test]
    async fn converse_requests_and_responses_are_mapped() {
        let seen: Seen = Arc::default();
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let app = axum::Router::new()
            .fallback(converse)
            .with_state(seen.clone());
        tokio::spawn(async move {
            let _ = axum::serve(l, app).await;
        });
        use aws_sdk_bedrockruntime::config::{BehaviorVersion, Credentials, Region};
        let conf = aws_sdk_bedrockruntime::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "test"))
            .endpoint_url(format!("http://{addr}"))
            .build();
        let model = Bedrock::new(Client::from_conf(conf), "anthropic.test-model");
        let r = model
            .complete(ModelRequest {
                model: None,
                reasoning_effort: None,
                messages: vec![
                    ChatMessage::text(ChatRole::System, "be brief"),
                    ChatMessage::text(ChatRole::User, "plan it"),
                ],
                tools: vec![ToolSpec {
                    name: "create_plan".into(),
                    description: "d".into(),
                    input_schema: json!({"type": "object"}),
                }],
                trace: None,
            })
            .await
            .unwrap();
        assert_eq!(r.text.as_deref(), Some("planning"));
        assert_eq!(r.tool_calls[0].id, "tu-1");
        assert_eq!(r.tool_calls[0].arguments["n"], -3);
        let u = r.usage.unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.cached_input_tokens,
                u.total_tokens
            ),
            (12, 4, 2, 16)
        );
        let (path, body) = seen.lock().unwrap()[0].clone();
        assert_eq!(path, "/model/anthropic.test-model/converse");
        assert_eq!(body["system"][0]["text"], "be brief");
        assert_eq!(body["messages"][0]["content"][0]["text"], "plan it");
        assert_eq!(
            body["toolConfig"]["tools"][0]["toolSpec"]["name"],
            "create_plan"
        );
        assert!(
            body.get("additionalModelRequestFields").is_none(),
            "no effort, no fields"
        );

        // The task's effort reaches a model family that takes one, in its own shape.
        for (model_id, effort, expected) in [
            (
                "openai.gpt-oss-120b-1:0",
                "high",
                Some(json!({"reasoning_effort": "high"})),
            ),
            (
                "us.amazon.nova-2-lite-v1:0",
                "low",
                Some(json!({"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "low"}})),
            ),
            ("anthropic.claude-sonnet-4-v1:0", "high", None),
        ] {
            model
                .complete(ModelRequest {
                    model: Some(model_id.into()),
                    reasoning_effort: Some(effort.into()),
                    messages: vec![ChatMessage::text(ChatRole::User, "think")],
                    tools: vec![],
                    trace: None,
                })
                .await
                .unwrap();
            let (path, body) = seen.lock().unwrap().last().unwrap().clone();
            assert_eq!(
                path,
                format!("/model/{}/converse", model_id.replace(':', "%3A"))
            );
            assert_eq!(
                body.get("additionalModelRequestFields").cloned(),
                expected,
                "{model_id}"
            );
        }
    }
}
