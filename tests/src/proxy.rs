//! A real HTTP server in front of the DynamoDB emulator that answers some requests with
//! DynamoDB's ThrottlingException and passes the others on: the next `n` requests
//! (`throttle_next`), or one in every `n` (`throttle_every`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

pub struct ThrottlingProxy {
    upstream: String,
    /// Requests still to be answered with ThrottlingException.
    next: AtomicU64,
    /// One request in this many is throttled (0: none).
    every: AtomicU64,
    requests: AtomicU64,
    throttled: AtomicU64,
    client: reqwest::Client,
    /// Where it listens: `http://127.0.0.1:port`.
    pub url: String,
}

const THROTTLED: &str = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#;

async fn handle(
    State(p): State<Arc<ThrottlingProxy>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let n = p.requests.fetch_add(1, Ordering::SeqCst) + 1;
    let every = p.every.load(Ordering::SeqCst);
    let next = p
        .next
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
            left.checked_sub(1)
        })
        .is_ok();
    if next || (every > 0 && n % every == 0) {
        p.throttled.fetch_add(1, Ordering::SeqCst);
        return (
            StatusCode::BAD_REQUEST,
            [("content-type", "application/x-amz-json-1.0")],
            THROTTLED,
        )
            .into_response();
    }
    let mut req = p.client.post(&p.upstream).body(body);
    for (k, v) in &headers {
        if k != "host" && k != "content-length" {
            req = req.header(k, v);
        }
    }
    match req.send().await {
        Ok(r) => {
            let status =
                StatusCode::from_u16(r.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            let ct = r
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/x-amz-json-1.0")
                .to_string();
            let bytes = r.bytes().await.unwrap_or_default();
            (status, [("content-type", ct)], bytes).into_response()
        }
        Err(_) => StatusCode::BAD_GATEWAY.into_response(),
    }
}

impl ThrottlingProxy {
    /// Starts a proxy to `upstream` (the emulator's URL) that throttles nothing yet.
    pub async fn start(upstream: &str) -> Arc<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let proxy = Arc::new(Self {
            upstream: upstream.to_string(),
            next: AtomicU64::new(0),
            every: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            client: reqwest::Client::new(),
            url: format!("http://{addr}"),
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(proxy.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        proxy
    }

    /// The next `n` requests are throttled.
    pub fn throttle_next(&self, n: u64) {
        self.next.store(n, Ordering::SeqCst);
    }

    /// One request in every `n` is throttled (0: none).
    pub fn throttle_every(&self, n: u64) {
        self.every.store(n, Ordering::SeqCst);
    }

    pub fn throttled(&self) -> u64 {
        self.throttled.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}
