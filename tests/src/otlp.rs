//! A small OTLP/HTTP receiver (JSON encoding): what an OpenTelemetry collector would be sent,
//! kept as spans a test can read — trace id, span id, parent, name, attributes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::routing::post;
use serde_json::Value;

/// One received span.
#[derive(Debug, Clone)]
pub struct Span {
    pub trace_id: String,
    pub span_id: String,
    pub parent: String,
    pub name: String,
    /// OTLP's span kind (2 server, 3 client; 0 when not said).
    pub kind: i64,
    pub attributes: HashMap<String, String>,
    /// The spans it links to (not parents): `(trace id, span id)`.
    pub links: Vec<(String, String)>,
}

#[derive(Clone, Default)]
pub struct Collector {
    spans: Arc<Mutex<Vec<Span>>>,
    pub url: String,
}

fn text(v: &Value) -> String {
    match v {
        Value::Object(o) => o
            .values()
            .next()
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .unwrap_or_default(),
        other => other.to_string(),
    }
}

impl Collector {
    /// Listens on a free loopback port; `url` is the base endpoint (`/v1/traces` is its path).
    pub async fn start() -> Self {
        let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
        let kept = spans.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            post(move |body: axum::body::Bytes| {
                let kept = kept.clone();
                async move {
                    let doc: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let mut got = Vec::new();
                    for rs in doc["resourceSpans"].as_array().into_iter().flatten() {
                        for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                            for s in ss["spans"].as_array().into_iter().flatten() {
                                let attributes = s["attributes"]
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .map(|a| {
                                        (
                                            a["key"].as_str().unwrap_or("").to_string(),
                                            text(&a["value"]),
                                        )
                                    })
                                    .collect();
                                got.push(Span {
                                    trace_id: s["traceId"].as_str().unwrap_or("").to_lowercase(),
                                    span_id: s["spanId"].as_str().unwrap_or("").to_lowercase(),
                                    parent: s["parentSpanId"].as_str().unwrap_or("").to_lowercase(),
                                    name: s["name"].as_str().unwrap_or("").to_string(),
                                    kind: s["kind"].as_i64().unwrap_or(0),
                                    attributes,
                                    links: s["links"]
                                        .as_array()
                                        .into_iter()
                                        .flatten()
                                        .map(|l| {
                                            (
                                                l["traceId"].as_str().unwrap_or("").to_lowercase(),
                                                l["spanId"].as_str().unwrap_or("").to_lowercase(),
                                            )
                                        })
                                        .collect(),
                                });
                            }
                        }
                    }
                    kept.lock().unwrap().extend(got);
                    axum::Json(serde_json::json!({}))
                }
            }),
        );
        let addr = crate::chat::serve(app).await;
        Self {
            spans,
            url: format!("http://{addr}"),
        }
    }

    /// The spans of `trace_id` once `done` holds for them (at most `limit`).
    pub async fn trace(
        &self,
        trace_id: &str,
        limit: Duration,
        done: impl Fn(&[Span]) -> bool,
    ) -> Vec<Span> {
        let until = Instant::now() + limit;
        loop {
            let spans: Vec<Span> = self
                .spans
                .lock()
                .unwrap()
                .iter()
                .filter(|s| s.trace_id == trace_id)
                .cloned()
                .collect();
            if done(&spans) || Instant::now() > until {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
