//! Replies of a mock OpenAI-compatible Chat Completions server, for tests that script the model.

use std::net::SocketAddr;

use serde_json::{json, Value};

/// One tool call of an assistant reply.
pub fn tool(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

/// A Chat Completions reply from model `mock-1`: `content`, the tool `calls`, and a usage of 15
/// tokens (10 prompt, 5 completion).
pub fn answer(content: Option<&str>, calls: Vec<Value>) -> Value {
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    json!({"model": "mock-1", "choices": [{"message": message}],
           "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

/// Serves `app` on a free loopback port in the background; its address.
pub async fn serve(app: axum::Router) -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = l.local_addr().expect("its address");
    tokio::spawn(async move {
        let _ = axum::serve(l, app).await;
    });
    addr
}
