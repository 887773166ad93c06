//! A real webhook receiver for push tests and the push bench: an HTTP server on 127.0.0.1 that
//! records every request, answers as scripted, and de-duplicates accepted deliveries by
//! delivery id (task, sequence, config) the way a careful subscriber would.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use serde_json::Value;

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: String,
    pub status: u16,
    pub at: Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    pub fn seq(&self) -> u64 {
        self.header("x-taskledger-event-sequence")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    /// The task the body reports on.
    pub fn task_id(&self) -> String {
        let v = self.json();
        let u = if v.get("statusUpdate").is_some() {
            &v["statusUpdate"]
        } else {
            &v["artifactUpdate"]
        };
        u["taskId"].as_str().unwrap_or_default().to_string()
    }
}

/// How the receiver answers.
#[derive(Debug, Clone, Copy)]
pub enum Script {
    /// 503 for the first `n` requests, then 200.
    FailFirst(usize),
    /// Always this status.
    Always(u16),
}

struct Inner {
    script: Script,
    seen: Vec<Received>,
    /// Accepted delivery ids (task, sequence, config): a repeat is answered 200 and not
    /// counted again.
    accepted: HashSet<String>,
    unique: Vec<Received>,
}

#[derive(Clone)]
pub struct Receiver {
    inner: Arc<Mutex<Inner>>,
    pub url: String,
    pub port: u16,
}

async fn hook(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> impl IntoResponse {
    let mut g = r.inner.lock().unwrap();
    let n = g.seen.len();
    let status = match g.script {
        Script::FailFirst(k) if n < k => 503,
        Script::FailFirst(_) => 200,
        Script::Always(s) => s,
    };
    let rec = Received {
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        status,
        at: Instant::now(),
    };
    let key = rec
        .header("x-taskledger-delivery-id")
        .map(str::to_string)
        .unwrap_or_else(|| format!("{}:{}", rec.task_id(), rec.seq()));
    if (200..300).contains(&status) && g.accepted.insert(key) {
        g.unique.push(rec.clone());
    }
    g.seen.push(rec);
    StatusCode::from_u16(status).unwrap_or(StatusCode::OK)
}

impl Receiver {
    pub async fn start(script: Script) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let r = Receiver {
            inner: Arc::new(Mutex::new(Inner {
                script,
                seen: Vec::new(),
                accepted: HashSet::new(),
                unique: Vec::new(),
            })),
            url: format!("http://127.0.0.1:{port}/hook"),
            port,
        };
        let app = Router::new()
            .route("/hook", post(hook))
            .with_state(r.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        r
    }

    pub fn set_script(&self, script: Script) {
        self.inner.lock().unwrap().script = script;
    }

    /// Every request, in arrival order.
    pub fn seen(&self) -> Vec<Received> {
        self.inner.lock().unwrap().seen.clone()
    }

    /// Accepted deliveries after de-duplication, in arrival order.
    pub fn unique(&self) -> Vec<Received> {
        self.inner.lock().unwrap().unique.clone()
    }

    /// Waits until `done` holds for the accepted deliveries, or panics after `limit`.
    pub async fn wait_for(&self, limit: Duration, done: impl Fn(&[Received]) -> bool) {
        let deadline = Instant::now() + limit;
        loop {
            let u = self.unique();
            if done(&u) {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "the receiver did not get what was expected; {} accepted, the last: {:?}",
                    u.len(),
                    u.iter()
                        .rev()
                        .take(5)
                        .map(|r| r.body.clone())
                        .collect::<Vec<_>>()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The state a status-update body reports, if it is one.
pub fn state_of(r: &Received) -> Option<String> {
    r.json()["statusUpdate"]["status"]["state"]
        .as_str()
        .map(str::to_string)
}

/// The server's published signing key (`/.well-known/jwks.json`, its first key) as the JWK and
/// as a P-256 verifying key.
pub async fn published_key(s: &crate::Server) -> (Value, p256::ecdsa::VerifyingKey) {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let jwks: Value = s
        .client
        .get(format!("{}/.well-known/jwks.json", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let jwk = jwks["keys"][0].clone();
    let mut sec1 = vec![4u8];
    sec1.extend(URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap());
    sec1.extend(URL_SAFE_NO_PAD.decode(jwk["y"].as_str().unwrap()).unwrap());
    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1).unwrap();
    (jwk, key)
}

/// Checks the detached JWS in `r`'s `X-Taskledger-Signature` over its body with `key`
/// (panics when missing or when it does not verify); returns the JWS protected header.
pub fn verify_signature(r: &Received, key: &p256::ecdsa::VerifyingKey) -> Value {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use p256::ecdsa::signature::Verifier;
    let jws = r.header("x-taskledger-signature").expect("signed");
    let (protected, sig) = jws.split_once("..").unwrap();
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(protected).unwrap()).unwrap();
    let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(r.body.as_bytes()));
    let sig = p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(sig).unwrap()).unwrap();
    key.verify(input.as_bytes(), &sig)
        .expect("the signature verifies with the published key");
    header
}
