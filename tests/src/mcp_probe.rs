//! A minimal MCP server of the tests' own (Streamable HTTP, JSON answers, no SSE stream): the
//! tools it is given, and each call's headers and params kept — what the official test server
//! cannot show (a tool's annotations, the credential and `_meta` a call carries).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use serde_json::{json, Value};

pub struct Probe {
    pub url: String,
    /// Each `tools/call`: the request's headers and its params.
    pub calls: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
    /// How many times the tools were listed.
    pub lists: Arc<AtomicUsize>,
}

/// A server offering `tools` (MCP `Tool` objects) at `/mcp`; every call answers "called NAME".
pub async fn probe(tools: Value) -> Probe {
    let calls: Arc<Mutex<Vec<(HeaderMap, Value)>>> = Arc::default();
    let lists: Arc<AtomicUsize> = Arc::default();
    let (kept, listed) = (calls.clone(), lists.clone());
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(
            move |headers: HeaderMap, axum::Json(req): axum::Json<Value>| {
                let (kept, tools, listed) = (kept.clone(), tools.clone(), listed.clone());
                async move {
                    let result = match req["method"].as_str().unwrap_or_default() {
                        "initialize" => json!({"protocolVersion": req["params"]["protocolVersion"],
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "probe", "version": "1"}}),
                        "tools/list" => {
                            listed.fetch_add(1, Ordering::SeqCst);
                            json!({"tools": tools})
                        }
                        "tools/call" => {
                            let name = req["params"]["name"].as_str().unwrap_or_default();
                            let text = format!("called {name}");
                            kept.lock().unwrap().push((headers, req["params"].clone()));
                            json!({"content": [{"type": "text", "text": text}]})
                        }
                        _ => return StatusCode::ACCEPTED.into_response(),
                    };
                    axum::Json(json!({"jsonrpc": "2.0", "id": req["id"], "result": result}))
                        .into_response()
                }
            },
        )
        .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
        .delete(|| async { StatusCode::METHOD_NOT_ALLOWED }),
    );
    Probe {
        url: format!("http://{}/mcp", crate::chat::serve(app).await),
        calls,
        lists,
    }
}
