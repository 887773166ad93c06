//! The A2A HTTP surface (one axum Router for Lambda and the local server): the agent card and
//! its keys (`card`), the JSON-RPC 2.0 binding (`jsonrpc`) and the HTTP+JSON binding (`rest`),
//! both on the operations layer and the shared request reading (`common`). Bodies are bounded before
//! parsing; every error is a binding error with an ErrorInfo; nothing a request sends can panic
//! the server.

mod card;
pub use card::card_at;
mod common;
pub use common::BODY_READ_TIMEOUT;
pub mod guard;
pub use guard::Proxies;
mod jsonrpc;
mod metrics;
pub use metrics::METRICS_PATH;
pub(crate) mod rest;
mod sse;

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::Request;
use axum::routing::{any, get, post};
use axum::Router;
use serde_json::Value;
use taskledger_domain::card::JSONRPC_PATH;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use tracing::info_span;

use crate::identity::Authenticator;
use crate::service::Service;

/// Largest request body accepted, checked before anything is parsed.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Header making task creation safe to retry.
pub use crate::request::IDEMPOTENCY_HEADER;
/// The protocol major version served, and the header (or query parameter) naming the
/// client's: the rule itself is `crate::request::check_version`, shared with gRPC.
pub use crate::request::{SUPPORTED_MAJOR, VERSION_HEADER};
pub use sse::{bound_streams, StreamBounds, DEFAULT_KEEP_ALIVE};
/// `max-age` of the agent card.
const CARD_MAX_AGE_SECS: u32 = 300;

#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Base URL for the card; when unset it is derived from the request's Host header.
    pub public_url: Option<String>,
    pub name: String,
    pub description: String,
    pub version: String,
    /// The push signing key set served at `/.well-known/jwks.json` (none: not served).
    pub jwks: Option<Value>,
    /// The task board's pages (`/`, `/board/…`; ADR 023), when served: by the local server and
    /// a container running it, not by Lambda (a build without the `board` feature has none).
    pub board: Option<BoardSettings>,
    /// Host names the server answers to besides loopback names and the public URL's host
    /// (`guard`): a server without credentials refuses any other `Host`; the card is signed
    /// only for these and the public URL.
    pub allowed_hosts: Vec<String>,
    /// Whose `X-Forwarded-Proto`/`X-Forwarded-Host` are believed.
    pub proxies: Proxies,
    /// The key that signs the public agent card (the push signing key; none: unsigned).
    pub card_signer: Option<Arc<dyn taskledger_domain::ports::CardSigner>>,
    /// Where the gRPC binding is served, for the card's `GRPC` interface (none: not served).
    pub grpc: Option<GrpcAddress>,
    /// Which revision of the error table the HTTP statuses follow.
    pub error_table: taskledger_domain::error::ErrorTable,
    /// A path prefix in front of every route (an API Gateway REST API stage, a custom domain's
    /// base path mapping), e.g. `/prod`: stripped before routing.
    pub path_prefix: Option<String>,
    /// How often an idle stream sends an SSE comment.
    pub stream_keep_alive: std::time::Duration,
    /// How long a request body may take to arrive (`common::BODY_READ_TIMEOUT`).
    pub body_read_timeout: std::time::Duration,
    /// The Prometheus `/metrics` endpoint (the local server; Lambda reports through its logs).
    pub metrics: Option<MetricsSettings>,
}

/// What `/metrics` reads besides the process's own metrics.
#[derive(Clone, Default)]
pub struct MetricsSettings {
    /// Counts tasks by state for the `taskledger_tasks` gauge (a store that can).
    pub tasks: Option<Arc<dyn taskledger_domain::ports::Housekeeping>>,
    /// The operator's credential for `/metrics` (a bearer token of its own): process-wide
    /// counts are no tenant's to read. On a server with credentials, `/metrics` answers only
    /// to it (none configured: it is refused); on one without, everyone may scrape.
    pub token: Option<String>,
}

impl std::fmt::Debug for MetricsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsSettings")
            .field("tasks", &self.tasks.is_some())
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .finish()
    }
}

/// What the task board needs besides the API's settings.
#[derive(Debug, Clone)]
pub struct BoardSettings {
    /// Origins (`https://cdn.example.com`) images on board pages may come from besides the
    /// board's own and `data:` (validated by the board's `ImageOrigins::parse`).
    pub image_origins: Vec<String>,
    /// The key board sessions are signed with (HMAC-SHA256; the local server keeps it in the
    /// data directory).
    pub session_key: Arc<[u8]>,
    /// How long a board session lasts at most (a JWT's own expiry ends it sooner).
    pub session_ttl: std::time::Duration,
    /// The live sessions (an allowlist: a page opens only for a session held here).
    pub sessions: Arc<dyn BoardSessions>,
    /// The embedded store's push outbox: a task page shows its owner the deliveries still in
    /// it (none on DynamoDB, whose deliveries wait in the SQS push queue).
    pub outbox: Option<TaskOutbox>,
}

/// The push outbox a task page reads its deliveries from.
#[derive(Clone)]
pub struct TaskOutbox(pub Arc<dyn taskledger_domain::ports::PushOutbox>);

impl std::fmt::Debug for TaskOutbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskOutbox")
    }
}

/// The board's live sessions, kept by the server: a session opens a page only while it is held
/// here (the local server keeps them in a file of its data directory, so a restart ends none;
/// its credential is checked again on use). A server that holds as many as it may refuses a
/// new one — it never forgets an old one to make room.
pub trait BoardSessions: Send + Sync + std::fmt::Debug {
    /// Holds `session`, or says why not (its principal, or the server, holds the most it may).
    fn start(&self, session: LiveSession) -> Result<(), String>;
    fn get(&self, sid: &str) -> Option<LiveSession>;
    /// Its credential was accepted again at `at` (Unix seconds).
    fn checked(&self, sid: &str, at: u64);
    /// Signed out, or its credential gone: it opens nothing more.
    fn end(&self, sid: &str);
}

/// A live board session as the server holds it: whose it is, when it ends, and the print of
/// the credential it started with (never the credential).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LiveSession {
    pub sid: String,
    pub tenant: String,
    pub subject: String,
    /// Unix seconds after which it is over.
    pub exp: u64,
    pub print: crate::identity::CredentialPrint,
    /// When its credential was last accepted (Unix seconds).
    #[serde(default)]
    pub checked: u64,
}

/// The `host:port` the card gives for the gRPC binding (A2A: no scheme).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrpcAddress {
    /// Exactly this `host:port`.
    Fixed(String),
    /// This port on the host of the card's base URL (the public URL, else the Host header).
    Port(u16),
}

pub struct AppState {
    pub service: Arc<Service>,
    pub auth: Arc<dyn Authenticator>,
    pub settings: HttpSettings,
    started: SystemTime,
}

impl AppState {
    pub fn new(
        service: Arc<Service>,
        auth: Arc<dyn Authenticator>,
        settings: HttpSettings,
    ) -> Arc<Self> {
        Arc::new(Self {
            service,
            auth,
            settings,
            started: SystemTime::now(),
        })
    }
}

/// The A2A endpoints (JSON-RPC, HTTP+JSON, the card, metrics) under every layer a request
/// passes through.
pub fn router(state: Arc<AppState>) -> Router {
    router_with(state, Router::new())
}

/// As `router`, with `pages` served beside the endpoints under the same layers (the local
/// server mounts the board here: this layer does not know it).
pub fn router_with(state: Arc<AppState>, pages: Router<Arc<AppState>>) -> Router {
    let prefix = state
        .settings
        .path_prefix
        .as_deref()
        .map(|p| format!("/{}", p.trim_matches('/')))
        .filter(|p| p.len() > 1);
    let challenge = state.auth.card_auth();
    let guarded = challenge == taskledger_domain::card::CardAuth::None;
    let guard_state = state.clone();
    let routes = routes(state, pages);
    // Without credentials, where a request comes from is all there is to check.
    let routes = if guarded {
        routes.layer(axum::middleware::from_fn(move |req: Request, next| {
            guard::guard(guard_state.clone(), req, next)
        }))
    } else {
        routes
    };
    let routes = match prefix {
        Some(p) => Router::new().nest(&p, routes),
        None => routes,
    };
    routes
        .layer(axum::middleware::from_fn(move |req: Request, next| {
            www_authenticate(challenge, req, next)
        }))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let request_id = req
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            // Each field by Display: a `&str` recorded as it is would be escaped character by
            // character (Debug) on every request, for a span most requests never log in.
            info_span!("http", method = %req.method(), path = %req.uri().path(), request_id = %request_id)
        }))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

/// A 401 says how to authenticate (RFC 6750 §3): `Bearer realm="a2a"`, with
/// `error="invalid_token"` when the request carried a token that was refused; a 429 says when
/// to come back (`Retry-After`).
async fn www_authenticate(
    auth: taskledger_domain::card::CardAuth,
    req: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use taskledger_domain::card::CardAuth;
    let presented = req
        .headers()
        .contains_key(axum::http::header::AUTHORIZATION);
    let mut response = next.run(req).await;
    if response.status() == axum::http::StatusCode::TOO_MANY_REQUESTS {
        // A token bucket refills one request within a second at any rate it allows.
        response.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("1"),
        );
    }
    if response.status() == axum::http::StatusCode::UNAUTHORIZED
        && matches!(auth, CardAuth::Bearer | CardAuth::Jwt)
    {
        let value = if presented {
            r#"Bearer realm="a2a", error="invalid_token""#
        } else {
            r#"Bearer realm="a2a""#
        };
        response.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static(value),
        );
    }
    response
}

fn routes(state: Arc<AppState>, pages: Router<Arc<AppState>>) -> Router {
    let jsonrpc_slash = format!("{JSONRPC_PATH}/");
    let router = Router::new()
        .route(taskledger_domain::card::CARD_PATH, get(card::card))
        .route(taskledger_domain::card::LEGACY_CARD_PATH, get(card::card))
        .route("/.well-known/jwks.json", get(card::jwks))
        .route(JSONRPC_PATH, post(jsonrpc::jsonrpc))
        .route(&jsonrpc_slash, post(jsonrpc::jsonrpc))
        .route("/", post(jsonrpc::jsonrpc))
        .route(rest::REST_PATH, any(rest::rest))
        .route(&format!("{}/{{*path}}", rest::REST_PATH), any(rest::rest));
    let router = if state.settings.metrics.is_some() {
        router.route(metrics::METRICS_PATH, get(metrics::metrics))
    } else {
        router
    };
    router.merge(pages).with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use tower::ServiceExt;

    fn app(prefix: Option<&str>) -> Router {
        let store = Arc::new(taskledger_infra::SqliteStore::in_memory());
        let service = Service::new(
            store.clone(),
            store,
            crate::agent::ScenarioAgent::new(Default::default()),
            taskledger_domain::cursor::CursorCodec::new(b"k".to_vec()),
            Default::default(),
        );
        let auth = Arc::new(crate::identity::TokenAuthenticator::new(Default::default()));
        router(AppState::new(
            service,
            auth,
            HttpSettings {
                public_url: None,
                name: "n".into(),
                description: "d".into(),
                version: "1".into(),
                jwks: None,
                grpc: None,
                error_table: Default::default(),
                path_prefix: prefix.map(str::to_string),
                stream_keep_alive: DEFAULT_KEEP_ALIVE,
                body_read_timeout: common::BODY_READ_TIMEOUT,
                card_signer: None,
                board: None,
                allowed_hosts: vec!["h.example.com".into()],
                proxies: Proxies::None,
                metrics: None,
            },
        ))
    }

    async fn call(app: Router, method: &str, uri: &str, headers: &[(&str, &str)]) -> u16 {
        let mut req = axum::http::Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let body = if method == "POST" {
            Body::from("{}")
        } else {
            Body::empty()
        };
        app.oneshot(req.body(body).unwrap())
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    #[tokio::test]
    async fn a_server_without_credentials_answers_only_its_own_hosts_and_pages() {
        let ok = [("a2a-version", "1.0"), ("content-type", "application/json")];
        let with = |extra: (&'static str, &'static str)| {
            let mut h = ok.to_vec();
            h.push(extra);
            h
        };
        // its own names, and loopback names on any port
        for host in [
            "h.example.com",
            "h.example.com:8443",
            "localhost:9",
            "127.0.0.1:8080",
            "[::1]:1",
        ] {
            assert_eq!(
                call(app(None), "GET", "/a2a/rest/tasks", &with(("host", host))).await,
                200,
                "{host}"
            );
        }
        // a DNS-rebinding page's host
        assert_eq!(
            call(
                app(None),
                "GET",
                "/a2a/rest/tasks",
                &with(("host", "evil.example:8080"))
            )
            .await,
            403
        );
        // a cross-site request, by Origin or by Sec-Fetch-Site, on any binding
        let cross = [
            ("host", "127.0.0.1:8080"),
            ("origin", "https://evil.example"),
        ];
        let mut h = ok.to_vec();
        h.extend(cross);
        assert_eq!(
            call(app(None), "POST", "/a2a/rest/message:send", &h).await,
            403
        );
        assert_eq!(call(app(None), "POST", "/a2a", &h).await, 403);
        let mut h = ok.to_vec();
        h.extend([("host", "127.0.0.1:8080"), ("sec-fetch-site", "cross-site")]);
        assert_eq!(call(app(None), "GET", "/a2a/rest/tasks", &h).await, 403);
        // its own origin is fine
        let mut h = ok.to_vec();
        h.extend([
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert_eq!(call(app(None), "GET", "/a2a/rest/tasks", &h).await, 200);
        // the card stays a public document
        assert_eq!(
            call(
                app(None),
                "GET",
                "/.well-known/agent-card.json",
                &[("host", "evil.example")]
            )
            .await,
            200
        );
    }

    #[tokio::test]
    async fn a_body_is_read_only_when_it_says_it_is_json() {
        let post = |ct: Option<&'static str>, uri: &'static str| async move {
            let mut req = axum::http::Request::post(uri)
                .header("host", "h.example.com")
                .header("a2a-version", "1.0");
            if let Some(ct) = ct {
                req = req.header("content-type", ct);
            }
            let body = r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}"#;
            let resp = app(None)
                .oneshot(req.body(Body::from(body)).unwrap())
                .await
                .unwrap();
            let status = resp.status().as_u16();
            let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
                .await
                .unwrap();
            (status, String::from_utf8_lossy(&bytes).to_string())
        };
        // HTTP+JSON: no Content-Type (what a cross-site no-cors fetch with a Blob sends) is 415
        let (status, body) = post(None, "/a2a/rest/message:send").await;
        assert_eq!(status, 415, "{body}");
        assert!(body.contains("no Content-Type"), "{body}");
        let (status, _) = post(Some("text/plain"), "/a2a/rest/message:send").await;
        assert_eq!(status, 415);
        // JSON-RPC: the same request is refused as a JSON-RPC error
        let (_, body) = post(None, "/a2a").await;
        assert!(
            body.contains("-32005") && body.contains("no Content-Type"),
            "{body}"
        );
        let (status, body) = post(Some("application/json"), "/a2a/rest/message:send").await;
        assert_eq!(status, 200, "{body}");
    }

    async fn get(app: Router, uri: &str) -> (u16, serde_json::Value) {
        let req = axum::http::Request::get(uri)
            .header("host", "h.example.com")
            .header("a2a-version", "1.0")
            .body(Body::empty())
            .unwrap();
        let resp = app.oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or_default())
    }

    #[tokio::test]
    async fn a_path_prefix_is_stripped_before_routing_and_kept_in_the_card() {
        let (status, card) = get(app(Some("/prod/")), "/prod/.well-known/agent-card.json").await;
        assert_eq!(status, 200);
        let urls: Vec<&str> = card["supportedInterfaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["url"].as_str().unwrap())
            .collect();
        assert_eq!(
            urls,
            // each binding for 1.0, then again for the 1.1 draft, then for 0.3
            [
                "http://h.example.com/prod/a2a",
                "http://h.example.com/prod/a2a/rest",
                "http://h.example.com/prod/a2a",
                "http://h.example.com/prod/a2a/rest",
                "http://h.example.com/prod/a2a",
                "http://h.example.com/prod/a2a/rest"
            ]
        );
        // The legacy path 0.3-era callers fetch, behind the same prefix: the same card.
        let (status, legacy) = get(app(Some("/prod/")), "/prod/.well-known/agent.json").await;
        assert_eq!(status, 200);
        assert_eq!(legacy, card);
        let (status, page) = get(app(Some("prod")), "/prod/a2a/rest/tasks").await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["tasks"], serde_json::json!([]));
        let (status, _) = get(app(Some("prod")), "/a2a/rest/tasks").await;
        assert_eq!(status, 404, "without the prefix nothing is routed");
        let (status, _) = get(app(None), "/a2a/rest/tasks").await;
        assert_eq!(status, 200);
    }
}
