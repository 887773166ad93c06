//! Any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, Ollama, gateways) as a language
//! model: base URL + key.
//!
//! Timeouts; 429 and 5xx retried with exponential backoff (honouring `Retry-After`); other 4xx
//! are the request's fault and not retried.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use taskledger_domain::agent::llm::{
    ChatRole, LanguageModel, LlmError, ModelRequest, ModelResponse, ToolCall,
};
use taskledger_domain::extensions::usage::Usage;

#[derive(Debug, Clone)]
pub struct OpenAiSettings {
    /// e.g. `https://api.openai.com/v1` (the path `/chat/completions` is appended).
    pub base_url: String,
    pub api_key: Option<String>,
    /// Used when the task names no model.
    pub default_model: String,
    pub timeout: Duration,
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    pub initial_backoff: Duration,
}

impl OpenAiSettings {
    pub fn new(base_url: impl Into<String>, default_model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            default_model: default_model.into(),
            timeout: Duration::from_secs(60),
            max_attempts: 4,
            initial_backoff: Duration::from_millis(200),
        }
    }
}

pub struct OpenAiCompatible {
    http: reqwest::Client,
    settings: OpenAiSettings,
}

impl OpenAiCompatible {
    pub fn new(settings: OpenAiSettings) -> Result<Self, LlmError> {
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .build()
            .map_err(|e| LlmError::Rejected(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self { http, settings })
    }

    fn body(&self, r: &ModelRequest) -> Value {
        let messages: Vec<Value> = r
            .messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    ChatRole::System => "system",
                    ChatRole::User => "user",
                    ChatRole::Assistant => "assistant",
                    ChatRole::Tool => "tool",
                };
                let mut v = json!({"role": role, "content": m.content});
                if !m.tool_calls.is_empty() {
                    v["tool_calls"] = Value::Array(
                        m.tool_calls
                            .iter()
                            .map(|c| {
                                json!({"id": c.id, "type": "function",
                                       "function": {"name": c.name, "arguments": c.arguments.to_string()}})
                            })
                            .collect(),
                    );
                }
                if let Some(id) = &m.tool_call_id {
                    v["tool_call_id"] = json!(id);
                }
                v
            })
            .collect();
        let mut body = json!({
            "model": r.model.clone().unwrap_or_else(|| self.settings.default_model.clone()),
            "messages": messages,
        });
        if !r.tools.is_empty() {
            body["tools"] = Value::Array(
                r.tools
                    .iter()
                    .map(|t| {
                        json!({"type": "function", "function": {
                            "name": t.name, "description": t.description, "parameters": t.input_schema}})
                    })
                    .collect(),
            );
        }
        if let Some(e) = &r.reasoning_effort {
            body["reasoning_effort"] = json!(e);
        }
        body
    }
}

fn parse(v: &Value) -> Result<ModelResponse, LlmError> {
    let msg = v
        .pointer("/choices/0/message")
        .ok_or_else(|| LlmError::BadResponse("no choices[0].message".into()))?;
    let text = msg
        .get("content")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    let mut tool_calls = Vec::new();
    for c in msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = c
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or_else(|| LlmError::BadResponse("a tool call without a name".into()))?;
        let raw = c
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}");
        // Unparseable arguments reach the tool as a string, which its schema then refuses.
        let arguments =
            serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
        tool_calls.push(ToolCall {
            id: c
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or(name)
                .to_string(),
            name: name.to_string(),
            arguments,
        });
    }
    let n = |p: &str| v.pointer(p).and_then(Value::as_u64);
    let usage = v.get("usage").map(|_| {
        let reasoning = n("/usage/completion_tokens_details/reasoning_tokens").unwrap_or(0);
        let completion = n("/usage/completion_tokens").unwrap_or(0);
        Usage::of_response(
            n("/usage/prompt_tokens").unwrap_or(0),
            // OpenAI counts reasoning inside completion tokens; the usage extension does not.
            completion.saturating_sub(reasoning),
            reasoning,
            n("/usage/prompt_tokens_details/cached_tokens").unwrap_or(0),
            n("/usage/total_tokens"),
        )
    });
    Ok(ModelResponse {
        model: v.get("model").and_then(Value::as_str).map(str::to_string),
        text,
        tool_calls,
        usage,
    })
}

#[async_trait]
impl LanguageModel for OpenAiCompatible {
    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, LlmError> {
        let url = format!(
            "{}/chat/completions",
            self.settings.base_url.trim_end_matches('/')
        );
        let body = self.body(&request);
        let mut last = String::new();
        for attempt in 0..self.settings.max_attempts.max(1) {
            let mut req = self.http.post(&url).json(&body);
            if let Some(k) = &self.settings.api_key {
                req = req.bearer_auth(k);
            }
            // The provider (or a gateway in front of it) joins the turn's trace.
            if let Some(t) = request.trace.as_ref() {
                req = req.header("traceparent", t.traceparent());
                if let Some(state) = t.tracestate() {
                    req = req.header("tracestate", state);
                }
            }
            let wait = match req.send().await {
                Ok(resp) => {
                    let status = resp.status();
                    let retry_after = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let text = resp.text().await.unwrap_or_default();
                    if status.is_success() {
                        let v: Value = serde_json::from_str(&text)
                            .map_err(|e| LlmError::BadResponse(e.to_string()))?;
                        return parse(&v);
                    }
                    last = format!(
                        "HTTP {status}: {}",
                        text.chars().take(300).collect::<String>()
                    );
                    if status.as_u16() != 429 && !status.is_server_error() {
                        return Err(LlmError::Rejected(last));
                    }
                    retry_after
                }
                Err(e) if e.is_timeout() => {
                    last = "timed out".into();
                    None
                }
                Err(e) => {
                    last = e.to_string();
                    None
                }
            };
            if attempt + 1 < self.settings.max_attempts {
                let backoff = self.settings.initial_backoff * 2u32.pow(attempt);
                let jitter = (uuid::Uuid::new_v4().as_u128() % 100) as u32;
                tokio::time::sleep(wait.unwrap_or(backoff + backoff * jitter / 100)).await;
            }
        }
        if last == "timed out" {
            return Err(LlmError::Timeout);
        }
        Err(LlmError::Unavailable(last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use axum::extract::State;
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use axum::Json;
    use taskledger_domain::agent::llm::{ChatMessage, ToolSpec};

    #[derive(Default)]
    struct Mock {
        fail_first: usize,
        status: u16,
        calls: AtomicUsize,
        seen: Mutex<Vec<Value>>,
    }

    async fn handler(
        State(m): State<Arc<Mock>>,
        Json(body): Json<Value>,
    ) -> axum::response::Response {
        let n = m.calls.fetch_add(1, Ordering::SeqCst);
        m.seen.lock().unwrap().push(body);
        if n < m.fail_first {
            let code = StatusCode::from_u16(m.status).unwrap();
            return (code, [("retry-after", "0")], "busy").into_response();
        }
        Json(json!({
            "model": "gpt-test-2026",
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "create_plan", "arguments": "{\"steps\":[]}"}}
            ]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130,
                      "prompt_tokens_details": {"cached_tokens": 40},
                      "completion_tokens_details": {"reasoning_tokens": 10}}
        }))
        .into_response()
    }

    async fn serve(mock: Arc<Mock>) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(handler))
            .with_state(mock);
        tokio::spawn(async move {
            let _ = axum::serve(l, app).await;
        });
        format!("http://{addr}/v1")
    }

    fn request() -> ModelRequest {
        ModelRequest {
            model: None,
            reasoning_effort: Some("high".into()),
            messages: vec![ChatMessage::text(ChatRole::User, "plan it")],
            tools: vec![ToolSpec {
                name: "create_plan".into(),
                description: "d".into(),
                input_schema: json!({"type": "object"}),
            }],
            trace: None,
        }
    }

    fn provider(url: String) -> OpenAiCompatible {
        let mut s = OpenAiSettings::new(url, "default-model");
        s.api_key = Some("sk-test".into());
        s.initial_backoff = Duration::from_millis(5);
        OpenAiCompatible::new(s).unwrap()
    }

    #[tokio::test]
    async fn tool_calls_and_usage_are_read_and_the_request_is_shaped() {
        let mock = Arc::new(Mock::default());
        let r = provider(serve(mock.clone()).await)
            .complete(request())
            .await
            .unwrap();
        assert_eq!(r.tool_calls[0].name, "create_plan");
        assert_eq!(r.tool_calls[0].arguments, json!({"steps": []}));
        let u = r.usage.unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.reasoning_tokens,
                u.cached_input_tokens,
                u.total_tokens
            ),
            (100, 20, 10, 40, 130)
        );
        assert_eq!(r.model.as_deref(), Some("gpt-test-2026"));
        let sent = mock.seen.lock().unwrap()[0].clone();
        assert_eq!(sent["model"], "default-model");
        assert_eq!(sent["reasoning_effort"], "high");
        assert_eq!(sent["tools"][0]["function"]["name"], "create_plan");
    }

    #[tokio::test]
    async fn rate_limits_and_server_errors_are_retried() {
        let mock = Arc::new(Mock {
            fail_first: 2,
            status: 429,
            ..Default::default()
        });
        provider(serve(mock.clone()).await)
            .complete(request())
            .await
            .unwrap();
        assert_eq!(mock.calls.load(Ordering::SeqCst), 3);
        let mock = Arc::new(Mock {
            fail_first: 99,
            status: 503,
            ..Default::default()
        });
        let e = provider(serve(mock.clone()).await)
            .complete(request())
            .await
            .unwrap_err();
        assert!(matches!(e, LlmError::Unavailable(_)), "{e}");
        assert_eq!(mock.calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn a_client_error_is_not_retried() {
        let mock = Arc::new(Mock {
            fail_first: 99,
            status: 400,
            ..Default::default()
        });
        let e = provider(serve(mock.clone()).await)
            .complete(request())
            .await
            .unwrap_err();
        assert!(matches!(e, LlmError::Rejected(_)), "{e}");
        assert_eq!(mock.calls.load(Ordering::SeqCst), 1);
    }
}
